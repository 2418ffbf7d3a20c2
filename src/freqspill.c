/*
 * freqspill.c
 *	  Spilling a frequency state: runs in temporary files, and their budget.
 *
 * All tables together are bounded by qidrisk.max_state_memory.  When a
 * partitioned state (not a window aggregate's) would grow past it and
 * qidrisk.spill is on, it spills instead: the largest partition's sorted
 * array is written as a run to the partition's temporary file (a BufFile,
 * removed by the resource owner on error or cancel) and its memory freed.
 * This file writes runs (RunWriter) and decides what must spill
 * (SpillUntilFits); reading runs back is freqclass.c's, merging them
 * freqmerge.c's.
 */
#include "postgres.h"

#include <math.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/xact.h"
#include "catalog/pg_tablespace_d.h"
#include "commands/tablespace.h"
#include "common/file_utils.h"
#include "common/int.h"
#include "common/pg_prng.h"
#include "lib/ilist.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "port/pg_bswap.h"
#include "storage/buffile.h"
#include "storage/fd.h"
#include "storage/fileset.h"
#include "utils/guc.h"
#include "utils/wait_event.h"

#include "freqspill.h"

/* The partition's temporary file, created (in the state's context) on first use */
static BufFile *
PartitionFile(FreqState *state, FreqPartition *partition)
{
	if (partition->file == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(state->context);

		PrepareTempTablespaces();
		partition->file = BufFileCreateTemp(false);
		partition->end_fileno = 0;
		partition->end_offset = 0;
		MemoryContextSwitchTo(old);
	}
	return partition->file;
}

/* Add a run to a partition's list */
void
AppendRun(FreqState *state, FreqPartition *partition, const SpillRun *run)
{
	if (partition->nruns == partition->runs_capacity)
	{
		int			capacity = Max(8, partition->runs_capacity * 2);

		partition->runs = partition->runs ?
			repalloc(partition->runs, capacity * sizeof(SpillRun)) :
			MemoryContextAlloc(state->context, capacity * sizeof(SpillRun));
		partition->runs_capacity = capacity;
	}
	partition->runs[partition->nruns++] = *run;
	state->streamed = false;
}

void
BeginRun(RunWriter *writer, FreqState *state, FreqPartition *partition)
{
	writer->state = state;
	writer->partition = partition;
	writer->run.file = PartitionFile(state, partition);
	writer->run.fileno = partition->end_fileno;
	writer->run.offset = partition->end_offset;
	writer->run.nclasses = 0;
	writer->nchunk = 0;
}

/* Append classes to the end of the run's file (other runs may have read it meanwhile) */
void
WriteRunClasses(RunWriter *writer, const CountedClass *classes, int64 n)
{
	FreqPartition *partition = writer->partition;

	if (n == 0)
		return;
	if (BufFileSeek(writer->run.file, partition->end_fileno, partition->end_offset,
					SEEK_SET) != 0)
		ReportRunReadError();
	BufFileWrite(writer->run.file, (void *) classes, (size_t) n * sizeof(CountedClass));
	BufFileTell(writer->run.file, &partition->end_fileno, &partition->end_offset);
	writer->run.nclasses += n;
}

/* ClassVisitor: add one class to a run being written */
void
WriteRunClass(const QidFingerprint *key, int64 count, void *arg)
{
	RunWriter  *writer = (RunWriter *) arg;

	writer->chunk[writer->nchunk].key = *key;
	writer->chunk[writer->nchunk].count = count;
	if (++writer->nchunk == RUN_CHUNK_CLASSES)
	{
		WriteRunClasses(writer, writer->chunk, writer->nchunk);
		writer->nchunk = 0;
	}
}

/* Finish a run and list it in its partition */
void
EndRun(RunWriter *writer)
{
	WriteRunClasses(writer, writer->chunk, writer->nchunk);
	writer->nchunk = 0;
	if (writer->run.nclasses > 0)
		AppendRun(writer->state, writer->partition, &writer->run);
}

/*
 * Write a partition's sorted array as a run and free it.  The state's
 * counters cover its in-memory classes only, so the array's share leaves them.
 */
static void
SpillPartition(FreqState *state, FreqPartition *partition)
{
	RunWriter  *writer = palloc(sizeof(RunWriter));
	int64		rows = 0;
	int64		singletons = 0;

	for (int64 i = 0; i < partition->nclasses; i++)
	{
		rows += partition->classes[i].count;
		singletons += (partition->classes[i].count == 1);
	}
	elog(DEBUG1, "qidrisk: spilling a partition of " INT64_FORMAT " classes to a temporary file",
		 partition->nclasses);
	BeginRun(writer, state, partition);
	WriteRunClasses(writer, partition->classes, partition->nclasses);
	EndRun(writer);
	pfree(writer);

	state->rows -= rows;
	state->classes -= partition->nclasses;
	state->singletons -= singletons;
	FreeClassArray(state, partition);
	partition->nclasses = 0;
}

/*
 * Bytes a partition's array must grow by to take a run of nrun classes in
 * (none when the free classes before it hold the run: MergeRun)
 */
static double
ArrayGrowth(const FreqPartition *partition, int64 nrun)
{
	int64		needed = partition->nclasses + nrun;

	if (partition->offset >= nrun || needed <= partition->capacity)
		return 0;
	return (double) MappedBytes(needed + partition->offset) - (double) ArrayBytes(partition);
}

/*
 * Before partition (if any) grows by up to nrun classes and the state by
 * extra bytes: spill the largest arrays until that fits the budget.  If
 * nothing is left to spill, the growth itself reports the budget.
 */
void
SpillUntilFits(FreqState *state, const FreqPartition *partition, int64 nrun, double extra)
{
	if (!SpillAllowed(state) || state->parts == NULL)
		return;
	for (;;)
	{
		double		growth = partition ? ArrayGrowth(partition, nrun) : 0;
		FreqPartition *largest = NULL;

		if (state->memory + extra + growth <= (double) state->budget)
			return;
		for (int p = 0; p < PARTITIONS; p++)
		{
			FreqPartition *candidate = &state->parts[p];

			if (candidate->classes != NULL &&
				(largest == NULL || candidate->capacity > largest->capacity))
				largest = candidate;
		}
		if (largest == NULL)
			return;
		CHECK_FOR_INTERRUPTS();
		SpillPartition(state, largest);
	}
}
