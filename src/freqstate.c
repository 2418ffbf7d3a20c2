/*
 * freqstate.c
 *	  The frequency state: a hash table from QID fingerprint to class size.
 *
 * Every frequency aggregate shares this state, so one scan and one table serve
 * singleton_count, class_count, k_anonymity and class_profile in one query.
 *
 * A small state is one hash table.  Past PARTITION_AFTER_CLASSES classes the
 * state splits into PARTITIONS partitions by the fingerprint's top bits.  A
 * partition keeps its classes as one array sorted by fingerprint, 24 bytes a
 * class, and appends new rows to an unsorted buffer; a full buffer is sorted,
 * its equal fingerprints summed, and merged into the array in one linear pass
 * (a two-level log-structured merge).  Arrays grow in place, nothing is
 * rehashed, and combining two states is a merge of sorted arrays.  Counters
 * (rows, classes, singletons) include buffered rows only after
 * FreqStateSettle, which every reader calls.
 *
 * All tables together are bounded by qidrisk.max_state_memory.  When a
 * partitioned state (not a window aggregate's) would grow past it and
 * qidrisk.spill is on, it spills instead: the largest partition's sorted
 * array is written as a run to the partition's temporary file (a BufFile,
 * removed by the resource owner on error or cancel) and its memory freed.
 * Readers then stream one k-way merge of the in-memory arrays, the attached
 * states' arrays and every file run, partition by partition, so the answers
 * are exactly those of an unbounded state.  A partition with more runs than
 * the merge's fan-in first merges runs into longer runs.
 *
 * A state received from a parallel worker keeps its serialized (ascending)
 * encoding and is merged straight from it; it is decoded into arrays only
 * when something must change it.  A parallel leader's own partial state is
 * not serialized at all but lent to the finalize in the same process, which
 * reads it in place (FreqStateLend), and a worker's large state reaches the
 * leader through a temporary file rather than the tuple queue
 * (FreqStateSendFile).  A one-column int4 or date QID is counted per value
 * in a small table first (FreqStateAddValue), each value being fingerprinted
 * once when a reader needs the classes.
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

#include "qidrisk.h"

/* Fraction of a table's buckets in use before it doubles */
#define TABLE_FILLFACTOR 0.9

/*
 * Buckets by a keyed mix of the fingerprint: fingerprints are uniform for
 * ordinary data, but can be chosen to share any fixed 32 of their bits
 */
#define SH_PREFIX freqhash
#define SH_FILLFACTOR TABLE_FILLFACTOR
#define SH_ELEMENT_TYPE FreqEntry
#define SH_KEY_TYPE QidFingerprint
#define SH_KEY key
#define SH_HASH_KEY(tb, k) QidPlacementHash(&(k), (const QidPlacementKey *) (tb)->private_data)
#define SH_EQUAL(tb, a, b) ((a).lo == (b).lo && (a).hi == (b).hi)
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/* Held values (FreqStateAddValue): 2^MIN_HELD_BITS slots at first, 2^MAX_HELD_BITS at most */
#define MIN_HELD_BITS 10
#define MAX_HELD_BITS 17

/* Partitioning: by the top PARTITION_BITS bits of the fingerprint's high half */
#define PARTITION_BITS 2
#define PARTITIONS (1 << PARTITION_BITS)
#define PartitionOf(fp) ((int) ((fp)->hi >> (64 - PARTITION_BITS)))

/* Split into partitions once a single table holds this many classes */
#define PARTITION_AFTER_CLASSES 65536

/* A partition's buffer holds at least this many rows, and up to half its classes */
#define MIN_BUFFERED_PER_PARTITION 1024

/* Bytes per class in the fixed encoding: two fingerprint halves and a count */
#define SERIALIZED_CLASS_BYTES (3 * sizeof(int64))

/* Header: version, encoding, rows, singletons, has_param, param, number of classes */
#define SERIALIZED_HEADER_BYTES (2 + 2 * sizeof(int64) + 1 + sizeof(double) + sizeof(int64))

/*
 * How the classes follow the header.  A small state's classes come in hash
 * order, as three int64 each.  A partitioned state's classes come in
 * ascending fingerprint order, each as one tag byte, the gap from the
 * previous high half in as few little-endian bytes as it needs (their number
 * is the tag's high nibble), the low half in eight, and, for a class of more
 * than 15 rows, its size as a varint (the tag's low nibble is the size
 * otherwise, 0 for "follows").  About 15 bytes instead of 24 for what
 * parallel workers send the leader, and decoded with two unaligned loads.
 */
#define ENCODING_FIXED 0
#define ENCODING_ASCENDING 1

/*
 * A parallel leader's own partial state stays where it is: the message only
 * names it (FreqStateLend), by the leader's process id and a number drawn
 * for it, and the finalize in the same process takes it back.
 */
#define ENCODING_LENT 2
#define LENT_MESSAGE_BYTES (2 + sizeof(int32) + sizeof(uint64))

/*
 * A parallel worker's large state goes to the leader through a temporary
 * file instead of the tuple queue (FreqStateSendFile): the message names
 * the leader, the statement and the file, and holds the state's header; the
 * file holds its classes in the ascending encoding.
 */
#define ENCODING_FILE 3

/*
 * The files lie in a file set of the leader's process id and this number,
 * which the numbers PostgreSQL gives its own file sets (below INT_MAX) never
 * reach: pgsql_tmp/pgsql_tmpPID.4043309056.fileset in each temporary
 * tablespace, removed with the rest of pgsql_tmp after a crash
 */
#define HANDOVER_FILESET_NUMBER ((uint32) 0xF1000000)

/* States whose encoding can take this many bytes go through a file */
#define HANDOVER_FROM_BYTES (1024 * 1024)

/* A worker writes its file at most this many bytes at a time (HandoverWriteBytes) */
#define HANDOVER_WRITE_BYTES (256 * 1024)

/* A leader reads a file at most this many bytes at a time, for each partition it merges */
#define HANDOVER_WINDOW_BYTES (64 * 1024)

/* An unsigned LEB128 varint of 64 bits takes at most this many bytes */
#define MAX_VARINT_BYTES 10

/* Largest serialized state: a palloc'd bytea, with its header and a terminating zero */
#define MAX_MESSAGE_BYTES (MaxAllocSize - VARHDRSZ - 1)

/* Most bytes a class takes in the ascending encoding: tag, gap, low half, size */
#define MAX_ASCENDING_CLASS_BYTES (1 + 2 * sizeof(uint64) + MAX_VARINT_BYTES)

/* Fewest: the tag and the low half */
#define MIN_ASCENDING_CLASS_BYTES (1 + sizeof(uint64))

/* Largest class size the tag byte of the ascending encoding holds itself */
#define TAG_MAX_COUNT 15

#ifdef WORDS_BIGENDIAN
#define LittleEndian64(x) pg_bswap64(x)
#else
#define LittleEndian64(x) (x)
#endif

/* How often long loops check for cancellation */
#define INTERRUPT_CHECK_MASK 0xFFFF

/* Spilling needs room for the partitions' buffers and a few pages of arrays */
#define MIN_SPILL_BUDGET (512 * 1024)

/* Most inputs one streaming merge reads at once (arrays and file runs) */
#define MERGE_FANIN 64

/* Fewest inputs a merge reads at once, however small the budget */
#define MIN_MERGE_FANIN 4

/* Classes read from or written to a run file at a time */
#define RUN_CHUNK_CLASSES 128

/* Whether a state may spill: a window aggregate's state must stay one table */
#define SpillAllowed(state) ((state)->spill && !(state)->windowed)

/* Counted where each path runs; read by qidrisk_internal.state_events() */
FreqStateEvents qidrisk_freq_events;

/* A class of a partition: its fingerprint and size */
typedef struct CountedClass
{
	QidFingerprint key;
	int64		count;
} CountedClass;

/* Add a class of size count to counters */
static inline void
CountClassInto(FreqCounts *counts, int64 count)
{
	counts->rows += count;
	counts->classes++;
	counts->singletons += (count == 1);
}

/* A sorted, duplicate-free run of classes in a temporary file */
typedef struct SpillRun
{
	BufFile    *file;
	int			fileno;			/* where the run starts (BufFileTell) */
	off_t		offset;
	int64		nclasses;
} SpillRun;

struct FreqPartition
{
	CountedClass *classes;		/* sorted by fingerprint, no duplicates */
	int64		nclasses;
	int64		capacity;
	CountedClass *buffer;		/* rows not yet merged, unsorted */
	int64		nbuffered;
	int64		buffer_capacity;
	BufFile    *file;			/* this partition's runs, created on first spill */
	int			end_fileno;		/* where the next run starts */
	off_t		end_offset;
	SpillRun   *runs;			/* spilled runs: a class may recur in several, summed when read */
	int			nruns;
	int			runs_capacity;
	const char *encoded;		/* a received state's classes, not yet decoded */
	const char *encoded_end;	/* where the state's encoded classes end */
	int64		nencoded;
	uint64		encoded_base_hi;	/* the high half its first gap counts from */
	bool		in_file;		/* its classes lie in the state's worker file */
	off_t		file_offset;	/* where they start there */
	int64		file_length;	/* in bytes */
	FreqCounts	file_counts;	/* what they must add up to */
};

/* Whether a received state has partitions not yet decoded */
#define Undecoded(state) ((state)->encoded != NULL || (state)->encoded_file != NULL)

typedef void (*ClassVisitor) (const QidFingerprint *key, int64 count, void *arg);


/* Stop with an error naming the setting that bounds a state's memory */
static void
ReportBudgetExceeded(FreqState *state, int64 classes, double bytes)
{
	const char *hint;

	if (!state->spill && qidrisk_spill && state->budget < MIN_SPILL_BUDGET)
		hint = "Raise qidrisk.max_state_memory (or work_mem when it is -1) to at least "
			"512 kB so that the state can spill to temporary files.";
	else if (!state->spill)
		hint = "Raise qidrisk.max_state_memory (or work_mem when it is -1), turn "
			"qidrisk.spill on, or aggregate fewer rows per group.";
	else if (state->windowed)
		hint = "Window aggregates do not spill: raise qidrisk.max_state_memory "
			"(or work_mem when it is -1), or aggregate fewer rows per frame.";
	else
		hint = "Raise qidrisk.max_state_memory (or work_mem when it is -1), "
			"or aggregate fewer rows per group.";
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("qidrisk frequency state exceeds qidrisk.max_state_memory"),
			 errdetail("The state holds " INT64_FORMAT " classes and would grow to "
					   "%.0f kB; the budget is %zu kB.",
					   classes, ceil(bytes / 1024.0), state->budget / 1024),
			 errhint("%s", hint)));
}

/* Bytes a table built for nclasses classes occupies */
static double
TableBytesFor(Size nclasses)
{
	return (double) pg_nextpower2_64((uint64) (nclasses / TABLE_FILLFACTOR) + 1) *
		sizeof(FreqEntry);
}

/* Create a hash table for about nclasses classes, within the budget */
static freqhash_hash *
CreateTable(FreqState *state, Size nclasses)
{
	freqhash_hash *table;
	QidPlacementKey *key;
	double		bytes = TableBytesFor(nclasses);

	if (state->memory + bytes > (double) state->budget)
		ReportBudgetExceeded(state, state->classes + (int64) nclasses, state->memory + bytes);
	/* each table draws its own placement key, kept beside it */
	key = MemoryContextAlloc(state->context, sizeof(QidPlacementKey));
	*key = QidPlacementKeyCreate();
	table = freqhash_create(state->context, nclasses, key);
	state->memory += (double) table->size * sizeof(FreqEntry);
	return table;
}

/* Release a table and its share of the budget */
static void
DestroyTable(FreqState *state, freqhash_hash *table)
{
	state->memory -= (double) table->size * sizeof(FreqEntry);
	pfree(table->private_data);
	freqhash_destroy(table);
}

/*
 * Add count rows of class fp to table, keeping the counters and the budget.
 * A table grows at its fill threshold, and simplehash also grows one early
 * when probe sequences get long; the check after the insert catches that.
 */
static inline void
InsertIntoTable(FreqState *state, freqhash_hash *table,
				const QidFingerprint *fp, int64 count)
{
	FreqEntry  *entry;
	bool		found;
	uint64		size_before = table->size;

	if (unlikely(table->members + 1 >= table->grow_threshold))
	{
		double		next = state->memory + (double) table->size * sizeof(FreqEntry);

		/* a state that may spill partitions instead (AddClass) */
		if (next > (double) state->budget && !SpillAllowed(state))
			ReportBudgetExceeded(state, state->classes, next);
	}

	entry = freqhash_insert(table, *fp, &found);

	if (unlikely(table->size != size_before))
	{
		state->memory += (double) (table->size - size_before) * sizeof(FreqEntry);
		if (state->memory > (double) state->budget && !SpillAllowed(state))
			ReportBudgetExceeded(state, state->classes, state->memory);
	}

	if (!found)
	{
		entry->count = count;
		state->classes++;
		if (count == 1)
			state->singletons++;
	}
	else
	{
		if (entry->count == 1)
			state->singletons--;
		entry->count += count;
	}
	state->rows += count;
}

/* Most classes one array may hold: its bytes, rounded up to pages, stay far from wrapping */
#define MAX_CLASS_CAPACITY ((int64) (MaxAllocHugeSize / sizeof(CountedClass)))

/* Stop with an error for an array of more classes than can be addressed */
static void
ReportTooManyClasses(int64 nclasses)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("qidrisk frequency state too large"),
			 errdetail("An array of " INT64_FORMAT " classes was requested; one holds at most "
					   INT64_FORMAT ".", nclasses, MAX_CLASS_CAPACITY)));
}

/* The capacity GrowArray grows an array of capacity to for needed elements */
static int64
GrownCapacity(int64 capacity, int64 needed)
{
	int64		new_capacity = Max(capacity, 64);

	if (needed <= capacity)
		return capacity;
	if (needed > MAX_CLASS_CAPACITY)
		ReportTooManyClasses(needed);
	while (new_capacity < needed)
		new_capacity *= 2;
	return new_capacity;
}

/* Grow an array of CountedClass to hold at least needed, within the budget */
static CountedClass *
GrowArray(FreqState *state, CountedClass *array, int64 *capacity, int64 needed)
{
	int64		new_capacity = GrownCapacity(*capacity, needed);
	double		added;

	if (needed <= *capacity)
		return array;
	added = (double) (new_capacity - *capacity) * sizeof(CountedClass);
	if (state->memory + added > (double) state->budget)
		ReportBudgetExceeded(state, state->classes, state->memory + added);
	state->memory += added;
	*capacity = new_capacity;
	/* repalloc of a huge chunk remaps its pages instead of copying them */
	if (array == NULL)
		return MemoryContextAllocHuge(state->context, new_capacity * sizeof(CountedClass));
	return repalloc_huge(array, new_capacity * sizeof(CountedClass));
}

/*
 * A partition's class array lives in its own anonymous mapping, so it grows
 * with mremap: no copy, and pages only as they are first written.  The
 * state's memory context releases all mappings when it is reset (also on
 * error) through ReleaseMappings.
 */
static Size
MappedBytes(int64 capacity)
{
	Size		page = (Size) sysconf(_SC_PAGESIZE);

	/* a count read from a message must not wrap the size around */
	if (capacity < 0 || capacity > MAX_CLASS_CAPACITY)
		ReportTooManyClasses(capacity);
	return ((Size) capacity * sizeof(CountedClass) + page - 1) / page * page;
}

/* Let a large mapping fault in 2 MB at a time where the kernel allows it */
static void
AdviseHugePages(void *mapping, Size bytes)
{
#ifdef MADV_HUGEPAGE
	if (bytes >= 4 * 1024 * 1024)
		(void) madvise(mapping, bytes, MADV_HUGEPAGE);
#endif
}

/* Stop with an error for a mapping the kernel refused */
static void
ReportMappingFailed(Size bytes)
{
	ereport(ERROR,
			(errcode(ERRCODE_OUT_OF_MEMORY),
			 errmsg("out of memory"),
			 errdetail("Failed on a request of size %zu in qidrisk's frequency state.",
					   bytes)));
}

/*
 * An anonymous mapping for a received state's copy of its encoded classes:
 * written once and then only read, so huge pages serve it, where small
 * pages would each cost a fault.  It is unmapped by ReleaseMappedCopy or,
 * at the latest (also on error), when its memory context is reset.
 */
struct MappedCopy
{
	char	   *base;
	Size		bytes;
	MemoryContextCallback release;
};

/* Memory context reset callback (and ReleaseEncoded): unmap, once */
static void
ReleaseMappedCopy(void *arg)
{
	MappedCopy *mapped = (MappedCopy *) arg;

	if (mapped->base != NULL)
		munmap(mapped->base, mapped->bytes);
	mapped->base = NULL;
}

/* Map bytes of anonymous memory, released with context */
static MappedCopy *
MapCopy(MemoryContext context, Size bytes)
{
	MappedCopy *mapped = MemoryContextAlloc(context, sizeof(MappedCopy));
	void	   *base = mmap(NULL, Max(bytes, 1), PROT_READ | PROT_WRITE,
							MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (base == MAP_FAILED)
	{
		pfree(mapped);
		ReportMappingFailed(bytes);
	}
	AdviseHugePages(base, bytes);
	mapped->base = base;
	mapped->bytes = Max(bytes, 1);
	mapped->release.func = ReleaseMappedCopy;
	mapped->release.arg = mapped;
	MemoryContextRegisterResetCallback(context, &mapped->release);
	return mapped;
}

/*
 * A worker's file that a received state's classes are read from, closed by
 * ReleaseEncoded or, at the latest, when the state's memory context is
 * reset.  During an abort the resource owner has closed it already.
 */
struct EncodedFile
{
	File		file;
	MemoryContextCallback close;
};

#define FileOfEncoding(state) ((state)->encoded_file->file)

/* Memory context reset callback (and ReleaseEncoded): close the file, once */
static void
CloseEncodedFile(void *arg)
{
	EncodedFile *encoded = (EncodedFile *) arg;

	if (encoded->file > 0 && IsTransactionState())
		FileClose(encoded->file);
	encoded->file = 0;
}

/* Free a received state's copy of its encoded classes, or close its file */
static void
ReleaseEncoded(FreqState *state)
{
	if (state->encoded_copy != NULL)
	{
		ReleaseMappedCopy(state->encoded_copy);
		state->memory -= (double) state->encoded_bytes;
	}
	if (state->encoded_file != NULL)
		CloseEncodedFile(state->encoded_file);
	state->encoded = NULL;
	state->encoded_bytes = 0;
	state->encoded_copy = NULL;
	state->encoded_file = NULL;
}

/* Grow (or create) a partition's class array to hold at least needed classes */
static void
GrowClassArray(FreqState *state, FreqPartition *partition, int64 needed)
{
	int64		capacity = Max(partition->capacity, 1024);
	Size		old_bytes = partition->classes ? MappedBytes(partition->capacity) : 0;
	Size		new_bytes;
	void	   *mapping;

	if (needed <= partition->capacity)
		return;
	/* doubling stays below INT64_MAX up to the largest array */
	if (needed > MAX_CLASS_CAPACITY)
		ReportTooManyClasses(needed);
	while (capacity < needed)
		capacity *= 2;
	capacity = Min(capacity, MAX_CLASS_CAPACITY);
	new_bytes = MappedBytes(capacity);
	/* a state that may spill grows only as far as it must near its budget */
	if (SpillAllowed(state) &&
		state->memory + (double) (new_bytes - old_bytes) > (double) state->budget)
		new_bytes = Max(MappedBytes(needed), old_bytes);
	if (state->memory + (double) (new_bytes - old_bytes) > (double) state->budget)
		ReportBudgetExceeded(state, state->classes, state->memory + (double) (new_bytes - old_bytes));
	if (partition->classes == NULL)
		mapping = mmap(NULL, new_bytes, PROT_READ | PROT_WRITE,
					   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	else
		mapping = mremap(partition->classes, old_bytes, new_bytes, MREMAP_MAYMOVE);
	if (mapping == MAP_FAILED)
		ReportMappingFailed(new_bytes);
	AdviseHugePages(mapping, new_bytes);
	partition->classes = mapping;
	partition->capacity = (int64) (new_bytes / sizeof(CountedClass));
	state->memory += (double) (new_bytes - old_bytes);
}

/*
 * Unmap every partition's class array and close the run files (memory
 * context reset callback).  During an abort the resource owner has already
 * closed (and removed) the files, so they are only forgotten then.
 */
static void
ReleaseMappings(void *arg)
{
	FreqState  *state = (FreqState *) arg;
	bool		close_files = IsTransactionState();

	if (state->parts == NULL)
		return;
	for (int p = 0; p < PARTITIONS; p++)
	{
		FreqPartition *partition = &state->parts[p];

		if (partition->classes != NULL)
			munmap(partition->classes, MappedBytes(partition->capacity));
		partition->classes = NULL;
		partition->capacity = 0;
		if (partition->file != NULL && close_files)
			BufFileClose(partition->file);
		partition->file = NULL;
		partition->nruns = 0;
	}
	for (int i = 0; i < state->nadopted; i++)
		if (close_files)
			BufFileClose(state->adopted_files[i]);
	state->nadopted = 0;
}

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
static void
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

/* Raise the error for a temporary file that cannot be read back */
static void
ReportRunReadError(void)
{
	ereport(ERROR,
			(errcode_for_file_access(),
			 errmsg("could not read qidrisk's temporary file of classes")));
}

/* A run being written at the end of a partition's file, RUN_CHUNK_CLASSES at a time */
typedef struct RunWriter
{
	FreqState  *state;
	FreqPartition *partition;
	SpillRun	run;
	CountedClass chunk[RUN_CHUNK_CLASSES];
	int			nchunk;
} RunWriter;

static void
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
static void
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
static void
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
static void
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
	munmap(partition->classes, MappedBytes(partition->capacity));
	state->memory -= (double) MappedBytes(partition->capacity);
	partition->classes = NULL;
	partition->capacity = 0;
	partition->nclasses = 0;
}

/* Bytes a partition's array must grow by to hold needed classes */
static double
ArrayGrowth(const FreqPartition *partition, int64 needed)
{
	if (needed <= partition->capacity)
		return 0;
	return (double) MappedBytes(needed) -
		(partition->classes ? (double) MappedBytes(partition->capacity) : 0);
}

/*
 * Before partition (if any) grows by up to nrun classes and the state by
 * extra bytes: spill the largest arrays until that fits the budget.  If
 * nothing is left to spill, the growth itself reports the budget.
 */
static void
SpillUntilFits(FreqState *state, const FreqPartition *partition, int64 nrun, double extra)
{
	if (!SpillAllowed(state) || state->parts == NULL)
		return;
	for (;;)
	{
		double		growth = partition ? ArrayGrowth(partition, partition->nclasses + nrun) : 0;
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

/*
 * What the classes of a partition read from a worker's file must be: in
 * the partition, strictly ascending, of positive sizes, as many and as
 * large as the message says.  They are checked as they are decoded, not in
 * a pass of their own.
 */
typedef struct DecodeCheck
{
	int			partition;		/* the partition, or -1: not checked */
	bool		started;
	QidFingerprint previous;	/* the last class decoded */
	FreqCounts	seen;
	FreqCounts	expected;
} DecodeCheck;

/*
 * One input of a streaming merge: a sorted array, or a file run or an
 * encoded partition (in memory, or in a worker's file through a window),
 * either read in chunks
 */
typedef struct MergeSource
{
	const CountedClass *at;		/* the current class */
	const CountedClass *end;
	const SpillRun *run;		/* a file run, or NULL */
	int			fileno;			/* where the run's next chunk starts */
	off_t		offset;
	const char *bytes;			/* an encoded partition's next class, or NULL */
	const char *bytes_end;
	uint64		previous_hi;	/* the high half its gap counts from */
	int64		left;			/* classes of the run not yet read */
	CountedClass *chunk;
	File		file;			/* a worker's file, or 0 */
	off_t		file_offset;	/* its next bytes to read */
	int64		file_left;		/* its bytes of the partition not yet read */
	char	   *window;			/* where they are read to */
	int			window_bytes;	/* its size */
	DecodeCheck check;
} MergeSource;

static void DecodeClasses(const char **at, const char *end, uint64 *previous_hi,
						  CountedClass *classes, int64 n, DecodeCheck *check);
static void DecodePartitions(FreqState *state);

/*
 * Make a worker file's window hold the bytes of the next n classes (at most
 * MAX_ASCENDING_CLASS_BYTES each) or the rest of the partition
 */
static void
FillWindow(MergeSource *source, int64 n)
{
	size_t		have = source->bytes_end - source->bytes;
	int			got;
	int			wanted;

	if (have >= (size_t) n * MAX_ASCENDING_CLASS_BYTES || source->file_left == 0)
		return;
	memmove(source->window, source->bytes, have);
	wanted = (int) Min(source->window_bytes - have, source->file_left);
	got = FileRead(source->file, source->window + have, wanted, source->file_offset,
				   WAIT_EVENT_BUFFILE_READ);
	if (got != wanted)
		ReportRunReadError();
	source->file_offset += wanted;
	source->file_left -= wanted;
	source->bytes = source->window;
	source->bytes_end = source->window + have + wanted;
}

/* A partition read from a worker's file is complete: it must be all the message said */
static void
FinishCheck(const MergeSource *source)
{
	const DecodeCheck *check = &source->check;

	if (source->bytes != source->bytes_end || source->file_left != 0)
		FreqStateCorrupt("The state's length does not match its number of classes.");
	if (check->seen.classes != check->expected.classes ||
		check->seen.rows != check->expected.rows ||
		check->seen.singletons != check->expected.singletons)
		FreqStateCorrupt("The state's classes do not add up to its header.");
}

/* Read the next chunk of a file run or an encoded partition */
static void
RefillSource(MergeSource *source)
{
	int64		n = Min(source->left, RUN_CHUNK_CLASSES);
	size_t		bytes = (size_t) n * sizeof(CountedClass);

	if (source->file > 0)
		FillWindow(source, n);
	if (source->bytes != NULL)
		DecodeClasses(&source->bytes, source->bytes_end, &source->previous_hi,
					  source->chunk, n, &source->check);
	else if (BufFileSeek(source->run->file, source->fileno, source->offset, SEEK_SET) != 0 ||
			 BufFileRead(source->run->file, source->chunk, bytes) != bytes)
		ReportRunReadError();
	else
		BufFileTell(source->run->file, &source->fileno, &source->offset);
	source->left -= n;
	source->at = source->chunk;
	source->end = source->chunk + n;
	if (source->left == 0 && source->file > 0)
		FinishCheck(source);
}

static void
OpenArraySource(MergeSource *source, const CountedClass *classes, int64 n)
{
	memset(source, 0, sizeof(*source));
	source->at = classes;
	source->end = classes + n;
}

static void
OpenRunSource(MergeSource *source, const SpillRun *run)
{
	memset(source, 0, sizeof(*source));
	source->run = run;
	source->fileno = run->fileno;
	source->offset = run->offset;
	source->left = run->nclasses;
	source->chunk = palloc(RUN_CHUNK_CLASSES * sizeof(CountedClass));
	if (source->left > 0)
		RefillSource(source);
}

/* Smallest window: room for the longest encoding of a chunk's classes (FillWindow) */
#define MIN_WINDOW_BYTES (RUN_CHUNK_CLASSES * MAX_ASCENDING_CLASS_BYTES)

/*
 * The window each of nfiles worker files is read through in a merge of
 * ninputs inputs: what 1/32 of the budget leaves after the merge's chunks
 * (see MergeFanIn), shared, between MIN_WINDOW_BYTES and
 * HANDOVER_WINDOW_BYTES
 */
static int
WindowBytes(const FreqState *state, int ninputs, int nfiles)
{
	double		chunks = (double) (2 * ninputs - 1) * RUN_CHUNK_CLASSES *
		sizeof(CountedClass);
	double		share = (double) state->budget / 32 - chunks;

	if (nfiles <= 0)
		return MIN_WINDOW_BYTES;
	return (int) Max(MIN_WINDOW_BYTES, Min(HANDOVER_WINDOW_BYTES, share / nfiles));
}

/* How many of the partitions p of a state and its attached states lie in worker files */
static int
FilesOfPartition(const FreqState *state, int p)
{
	int			nfiles = state->parts[p].in_file ? 1 : 0;

	for (const FreqState *attached = state->attached; attached != NULL;
		 attached = attached->next_attached)
		nfiles += attached->parts[p].in_file ? 1 : 0;
	return nfiles;
}

/*
 * Open partition p of a state: its array, or its encoded classes if not yet
 * decoded, in memory or in the state's worker file, read through a window
 * of window_bytes
 */
static void
OpenPartitionSource(MergeSource *source, const FreqState *state, int p, int window_bytes)
{
	const FreqPartition *partition = &state->parts[p];

	if (partition->encoded == NULL && !partition->in_file)
	{
		OpenArraySource(source, partition->classes, partition->nclasses);
		return;
	}
	memset(source, 0, sizeof(*source));
	source->check.partition = -1;
	source->left = partition->nencoded;
	source->chunk = palloc(RUN_CHUNK_CLASSES * sizeof(CountedClass));
	if (partition->in_file)
	{
		source->file = FileOfEncoding(state);
		source->file_offset = partition->file_offset;
		source->file_left = partition->file_length;
		source->window = palloc(window_bytes);
		source->window_bytes = window_bytes;
		source->bytes = source->bytes_end = source->window;
		/* each partition's gaps count from its lowest high half */
		source->previous_hi = (uint64) p << (64 - PARTITION_BITS);
		source->check.partition = p;
		source->check.expected = partition->file_counts;
		if (source->left == 0)
			FinishCheck(source);
	}
	else
	{
		source->bytes = partition->encoded;
		source->bytes_end = partition->encoded_end;
		source->previous_hi = partition->encoded_base_hi;
	}
	if (source->left > 0)
		RefillSource(source);
}

/* Release a source's chunk and window */
static void
CloseSource(MergeSource *source)
{
	if (source->chunk != NULL)
		pfree(source->chunk);
	if (source->window != NULL)
		pfree(source->window);
	source->chunk = NULL;
	source->window = NULL;
}

/*
 * A node of a merge tree: a leaf reads a source, an inner node merges its
 * two children into a chunk of its own.  Either way its classes not yet
 * taken are the window [at, end).
 */
typedef struct MergeNode
{
	MergeSource *source;		/* a leaf's source, or NULL */
	struct MergeNode *left;
	struct MergeNode *right;
	const CountedClass *at;
	const CountedClass *end;
	CountedClass *chunk;		/* an inner node's RUN_CHUNK_CLASSES classes */
} MergeNode;

/*
 * Merge two sorted windows into out, up to stop or the end of either, a
 * class present in both once with its sizes summed.  Fingerprints are
 * uniform, so which window is behind is random and the smaller class is
 * selected without a branch; equal high halves (the same class, almost
 * always) take the full comparison.  Each step advances out by one and each
 * window by at most one, so a count of steps bounds all three at once.
 */
static inline CountedClass *
MergeTwo(MergeNode *a_node, MergeNode *b_node, CountedClass *out, const CountedClass *stop)
{
	const CountedClass *a = a_node->at;
	const CountedClass *b = b_node->at;
	int64		steps = Min(Min(a_node->end - a, b_node->end - b), stop - out);

	while (steps-- > 0)
	{
		uint64		take_b;

		if (unlikely(a->key.hi == b->key.hi))
		{
			int			c = QidFingerprintCompare(&a->key, &b->key);

			*out = (c <= 0) ? *a : *b;
			if (c == 0)
				out->count += b->count;
			a += (c <= 0);
			b += (c >= 0);
			out++;
			continue;
		}
		take_b = -(uint64) (b->key.hi < a->key.hi);
		*out++ = *(const CountedClass *) (((uintptr_t) b & take_b) | ((uintptr_t) a & ~take_b));
		a += 1 + (int64) take_b;
		b -= (int64) take_b;
	}
	a_node->at = a;
	b_node->at = b;
	return out;
}

/* Make a node's window hold classes; false once it has none left */
static bool
PullClasses(MergeNode *node)
{
	CountedClass *out = node->chunk;
	const CountedClass *stop = node->chunk + RUN_CHUNK_CLASSES;

	if (node->at < node->end)
		return true;
	if (node->source != NULL)
	{
		if (node->source->left == 0)
			return false;
		RefillSource(node->source);
		node->at = node->source->at;
		node->end = node->source->end;
		return true;
	}
	while (out < stop)
	{
		bool		has_left = PullClasses(node->left);
		bool		has_right = PullClasses(node->right);
		MergeNode  *rest;
		int64		n;

		if (has_left && has_right)
		{
			out = MergeTwo(node->left, node->right, out, stop);
			continue;
		}
		if (!has_left && !has_right)
			break;
		/* one child is exhausted: the other's classes follow as they are */
		rest = has_left ? node->left : node->right;
		n = Min(rest->end - rest->at, stop - out);
		memcpy(out, rest->at, n * sizeof(CountedClass));
		rest->at += n;
		out += n;
	}
	node->at = node->chunk;
	node->end = out;
	return out > node->chunk;
}

/*
 * Merge sorted, duplicate-free sources (at most MERGE_FANIN) into one
 * ascending stream: count each fingerprint's class into counts (if not
 * NULL) and call visit (if not NULL) with its sizes summed over the sources.
 * The sources are the leaves of a balanced tree of two-way merges, so each
 * class passes about log2(nsources) cheap steps instead of being compared
 * with every source's current class.
 */
static void
MergeSources(MergeSource *sources, int nsources, FreqCounts *counts,
			 ClassVisitor visit, void *arg)
{
	MergeNode  *nodes;
	MergeNode  *level[MERGE_FANIN];
	int			nlevel = nsources;
	int			nnodes = 0;
	uint64		emitted = 0;
	FreqCounts	seen = {0, 0, 0};

	if (nsources > MERGE_FANIN)
		elog(ERROR, "qidrisk: a merge of %d inputs, more than %d", nsources, MERGE_FANIN);
	if (nsources == 0)
		return;
	nodes = palloc0((2 * nsources - 1) * sizeof(MergeNode));
	for (int i = 0; i < nsources; i++)
	{
		MergeNode  *leaf = &nodes[nnodes++];

		leaf->source = &sources[i];
		leaf->at = sources[i].at;
		leaf->end = sources[i].end;
		level[i] = leaf;
	}
	while (nlevel > 1)
	{
		int			next = 0;

		for (int i = 0; i < nlevel; i += 2)
		{
			MergeNode  *inner;

			if (i + 1 == nlevel)
			{
				level[next++] = level[i];
				break;
			}
			inner = &nodes[nnodes++];
			inner->left = level[i];
			inner->right = level[i + 1];
			inner->chunk = palloc(RUN_CHUNK_CLASSES * sizeof(CountedClass));
			level[next++] = inner;
		}
		nlevel = next;
	}
	while (PullClasses(level[0]))
	{
		const CountedClass *class;

		for (class = level[0]->at; class < level[0]->end; class++)
		{
			CountClassInto(&seen, class->count);
			if (visit != NULL)
				visit(&class->key, class->count, arg);
		}
		emitted += level[0]->end - level[0]->at;
		level[0]->at = level[0]->end;
		if (emitted > INTERRUPT_CHECK_MASK)
		{
			CHECK_FOR_INTERRUPTS();
			emitted = 0;
		}
	}
	for (int i = 0; i < nnodes; i++)
		if (nodes[i].chunk != NULL)
			pfree(nodes[i].chunk);
	pfree(nodes);
	if (counts != NULL)
	{
		counts->rows += seen.rows;
		counts->classes += seen.classes;
		counts->singletons += seen.singletons;
	}
}

/*
 * How many inputs a merge of this state reads at once: each input holds a
 * chunk of RUN_CHUNK_CLASSES classes, and so does each two-way merge of the
 * tree above them (one fewer than the inputs), all of them together at most
 * 1/32 of the budget, between MIN_MERGE_FANIN and MERGE_FANIN inputs.  The
 * windows on workers' files share what that leaves (WindowBytes), beyond
 * it only at their smallest.
 */
static int
MergeFanIn(const FreqState *state)
{
	Size		chunk = RUN_CHUNK_CLASSES * sizeof(CountedClass);

	return (int) Max(MIN_MERGE_FANIN, Min(MERGE_FANIN, state->budget / (32 * 2 * chunk)));
}

/*
 * Merge runs into one longer run until the partition has at most keep runs,
 * so that a streaming merge never reads more than MergeFanIn inputs.  The
 * new run goes to the end of this state's file for the partition.
 */
static void
ReduceRuns(FreqState *state, FreqPartition *partition, int keep)
{
	keep = Max(keep, 1);
	while (partition->nruns > keep)
	{
		int			take = Min(MergeFanIn(state), partition->nruns - keep + 1);
		MergeSource *sources = palloc(take * sizeof(MergeSource));
		RunWriter  *writer = palloc(sizeof(RunWriter));

		elog(DEBUG1, "qidrisk: merging %d of %d runs of a partition into one", take,
			 partition->nruns);

		for (int i = 0; i < take; i++)
			OpenRunSource(&sources[i], &partition->runs[i]);
		BeginRun(writer, state, partition);
		MergeSources(sources, take, NULL, WriteRunClass, writer);
		for (int i = 0; i < take; i++)
			CloseSource(&sources[i]);
		/* drop the merged runs before listing the new one */
		memmove(partition->runs, partition->runs + take,
				(partition->nruns - take) * sizeof(SpillRun));
		partition->nruns -= take;
		EndRun(writer);
		pfree(writer);
		pfree(sources);
	}
}

/*
 * Merge a sorted, duplicate-free run of classes into a partition's array,
 * updating the counters.  A read-only pass finds the merged length; the
 * array grows (in place where the allocator can) and the merge then runs
 * from the back, so no second array is ever built.
 */
static void
MergeRun(FreqState *state, FreqPartition *partition, const CountedClass *run, int64 nrun)
{
	CountedClass *classes;
	int64		n = partition->nclasses;
	int64		shared = 0;
	int64		i;
	int64		j;
	int64		w;

	if (nrun == 0)
		return;
	state->streamed = false;
	for (i = 0, j = 0; i < n && j < nrun;)
	{
		int			c = QidFingerprintCompare(&partition->classes[i].key, &run[j].key);

		shared += (c == 0);
		i += (c <= 0);
		j += (c >= 0);
	}

	GrowClassArray(state, partition, n + nrun - shared);
	classes = partition->classes;
	i = n - 1;
	j = nrun - 1;
	w = n + nrun - shared - 1;
	while (j >= 0)
	{
		int			c = (i >= 0) ? QidFingerprintCompare(&classes[i].key, &run[j].key) : -1;

		if ((w & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		if (c > 0)
			classes[w--] = classes[i--];
		else if (c < 0)
		{
			/* a new class */
			classes[w--] = run[j];
			state->classes++;
			state->singletons += (run[j].count == 1);
			state->rows += run[j].count;
			j--;
		}
		else
		{
			/* a class seen before grows */
			state->singletons -= (classes[i].count == 1);
			state->rows += run[j].count;
			classes[w] = classes[i--];
			classes[w--].count += run[j--].count;
		}
	}
	partition->nclasses = n + nrun - shared;
}

static int	CompareClasses(const void *a, const void *b);

/* Bucket counts SortBuffer uses for n fingerprints */
static inline int64
BucketsFor(int64 n)
{
	return INT64CONST(1) << Max(1, pg_leftmost_one_pos64((uint64) Max(n / 4, 1)));
}

/* Make the bucket sort's counter array hold at least needed counters */
static void
EnsureBuckets(FreqState *state, int64 needed)
{
	double		added;

	if (needed <= state->bucket_capacity)
		return;
	added = (double) (needed - state->bucket_capacity) * sizeof(int64);
	if (state->memory + added > (double) state->budget)
		ReportBudgetExceeded(state, state->classes, state->memory + added);
	state->memory += added;
	state->buckets = state->buckets ?
		repalloc_huge(state->buckets, needed * sizeof(int64)) :
		MemoryContextAllocHuge(state->context, needed * sizeof(int64));
	state->bucket_capacity = needed;
}

/*
 * Sort a buffer of uniformly distributed fingerprints into the state's
 * scratch array: scatter them into buckets by the bits below the partition
 * bits (about four per bucket), then insertion-sort the nearly sorted result.
 * Linear time for hash values; the scratch stays in cache between calls.
 */
static CountedClass *
SortBuffer(FreqState *state, const CountedClass *buffer, int64 n)
{
	int			bits = Max(1, pg_leftmost_one_pos64((uint64) Max(n / 4, 1)));
	int64		nbuckets = BucketsFor(n);
	CountedClass *sorted;
	int64	   *starts;

	state->scratch = GrowArray(state, state->scratch, &state->scratch_capacity, n);
	sorted = state->scratch;
	EnsureBuckets(state, nbuckets + 1);
	starts = state->buckets;
	memset(starts, 0, (nbuckets + 1) * sizeof(int64));

#define BucketOf(c) ((int64) (((c)->key.hi << PARTITION_BITS) >> (64 - bits)))
	for (int64 i = 0; i < n; i++)
		starts[BucketOf(&buffer[i]) + 1]++;
	for (int64 b = 0; b < nbuckets; b++)
		starts[b + 1] += starts[b];
	for (int64 i = 0; i < n; i++)
		sorted[starts[BucketOf(&buffer[i])]++] = buffer[i];
#undef BucketOf

	/*
	 * Every bucket's values precede the next bucket's: sort within buckets
	 * (starts[b] is now where bucket b ends).  A bucket is insertion-sorted
	 * while that stays cheap; one that costs more moves than a few per value
	 * (crowded by chosen fingerprints) is sorted by qsort instead.
	 */
	for (int64 b = 0, begin = 0; b < nbuckets; begin = starts[b], b++)
	{
		int64		end = starts[b];
		int64		moves = 0;
		int64		allowed = 8 * (end - begin) + 64;

		if ((b & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		for (int64 i = begin + 1; i < end; i++)
		{
			CountedClass item = sorted[i];
			int64		k = i - 1;

			while (k >= begin && QidFingerprintCompare(&sorted[k].key, &item.key) > 0)
			{
				sorted[k + 1] = sorted[k];
				k--;
			}
			sorted[k + 1] = item;
			moves += i - 1 - k;
			if (unlikely(moves > allowed))
			{
				qsort(sorted + begin, end - begin, sizeof(CountedClass), CompareClasses);
				break;
			}
		}
	}
	return sorted;
}

/*
 * Sort a partition's buffer into the scratch array and sum equal
 * fingerprints there; returns how many classes the run holds
 */
static int64
SortAndSumBuffer(FreqState *state, FreqPartition *partition, CountedClass **run)
{
	CountedClass *sorted;
	int64		nrun = 0;

	/* the sort's scratch may have to grow first */
	SpillUntilFits(state, NULL, 0,
				   (double) (GrownCapacity(state->scratch_capacity, partition->nbuffered) -
							 state->scratch_capacity) * sizeof(CountedClass) +
				   (double) Max(BucketsFor(partition->nbuffered) + 1 - state->bucket_capacity, 0) *
				   sizeof(int64));
	sorted = SortBuffer(state, partition->buffer, partition->nbuffered);

	for (int64 i = 0; i < partition->nbuffered; i++)
	{
		if (nrun > 0 && QidFingerprintCompare(&sorted[nrun - 1].key, &sorted[i].key) == 0)
			sorted[nrun - 1].count += sorted[i].count;
		else
			sorted[nrun++] = sorted[i];
	}
	*run = sorted;
	return nrun;
}

/* Sort a partition's buffer, sum equal fingerprints, and merge it in */
static void
DrainPartition(FreqState *state, FreqPartition *partition)
{
	CountedClass *sorted;
	int64		nrun = 0;
	int64		wanted;

	if (partition->nbuffered == 0)
		return;
	DecodePartitions(state);
	nrun = SortAndSumBuffer(state, partition, &sorted);
	SpillUntilFits(state, partition, nrun, 0);
	MergeRun(state, partition, sorted, nrun);
	partition->nbuffered = 0;

	/* let the (now empty) buffer grow with the partition, so merges stay rare */
	wanted = Max(MIN_BUFFERED_PER_PARTITION, partition->nclasses / 4);
	if (SpillAllowed(state) && wanted > partition->buffer_capacity)
	{
		/*
		 * A state that may spill keeps its buffers and the sort's scratch to a
		 * quarter of the budget, grown only when that fits without spilling,
		 * so that the arrays (the runs to be) get the rest.
		 */
		int64		cap = state->budget / (4 * (PARTITIONS + 1) * sizeof(CountedClass));
		double		added;

		wanted = Min(wanted, Max(cap, MIN_BUFFERED_PER_PARTITION));
		/* GrowArray rounds the capacity up by doubling */
		wanted = GrownCapacity(0, wanted);
		added = (double) (wanted - partition->buffer_capacity) * sizeof(CountedClass) +
			(double) (GrownCapacity(state->scratch_capacity, wanted) -
					  state->scratch_capacity) * sizeof(CountedClass) +
			(double) Max(BucketsFor(wanted) + 1 - state->bucket_capacity, 0) * sizeof(int64);
		if (state->memory + added > (double) state->budget)
			wanted = partition->buffer_capacity;
	}
	if (wanted > partition->buffer_capacity)
	{
		state->memory -= (double) partition->buffer_capacity * sizeof(CountedClass);
		pfree(partition->buffer);
		partition->buffer = NULL;
		partition->buffer_capacity = 0;
		partition->buffer = GrowArray(state, NULL, &partition->buffer_capacity, wanted);
	}
}

/* Queue count rows of class fp in its partition's buffer */
static inline void
BufferClass(FreqState *state, const QidFingerprint *fp, int64 count)
{
	FreqPartition *partition = &state->parts[PartitionOf(fp)];

	if (unlikely(partition->nbuffered == partition->buffer_capacity))
		DrainPartition(state, partition);
	partition->buffer[partition->nbuffered].key = *fp;
	partition->buffer[partition->nbuffered].count = count;
	partition->nbuffered++;
	state->unsettled = true;
	state->buffers_sorted = false;
}

/* Order classes by fingerprint (qsort comparator) */
static int
CompareClasses(const void *a, const void *b)
{
	return QidFingerprintCompare(&((const CountedClass *) a)->key,
								 &((const CountedClass *) b)->key);
}

/*
 * Write a single table's classes as one sorted run per partition, sorting
 * them inside the table's own memory (a 24-byte class fits where a 32-byte
 * entry was), and destroy the table: partitioning a table that fills the
 * budget then needs no second copy of its classes.
 */
static void
SpillTable(FreqState *state, freqhash_hash *table)
{
	CountedClass *classes = (CountedClass *) table->data;
	RunWriter  *writer = palloc(sizeof(RunWriter));
	int64		n = 0;
	int64		start = 0;

	for (uint64 i = 0; i < table->size; i++)
	{
		CountedClass class;

		if (table->data[i].status != freqhash_SH_IN_USE)
			continue;
		class.key = table->data[i].key;
		class.count = table->data[i].count;
		classes[n++] = class;
	}
	CHECK_FOR_INTERRUPTS();
	qsort(classes, n, sizeof(CountedClass), CompareClasses);
	for (int p = 0; p < PARTITIONS; p++)
	{
		int64		stop = start;

		while (stop < n && PartitionOf(&classes[stop].key) == p)
			stop++;
		BeginRun(writer, state, &state->parts[p]);
		WriteRunClasses(writer, classes + start, stop - start);
		EndRun(writer);
		start = stop;
	}
	pfree(writer);
	DestroyTable(state, table);
	state->rows = state->classes = state->singletons = 0;
}

/* Bytes a partitioned state needs before its arrays hold anything */
static double
PartitionOverhead(void)
{
	return (double) PARTITIONS * sizeof(FreqPartition) +
		(double) (PARTITIONS + 1) * MIN_BUFFERED_PER_PARTITION * sizeof(CountedClass) +
		(double) (BucketsFor(MIN_BUFFERED_PER_PARTITION) + 1) * sizeof(int64);
}

/* Move a single-table state into partitions */
static void
Partition(FreqState *state)
{
	freqhash_hash *single = state->single;
	double		bytes = (double) PARTITIONS * sizeof(FreqPartition);

	/* a state about to spill writes a large table out instead of buffering it */
	bool		spill_table = single != NULL && SpillAllowed(state) &&
		state->memory + PartitionOverhead() +
		(double) state->classes * sizeof(CountedClass) > (double) state->budget;

	if (state->memory + bytes > (double) state->budget && !spill_table)
		ReportBudgetExceeded(state, state->classes, state->memory + bytes);
	state->parts = MemoryContextAllocZero(state->context, PARTITIONS * sizeof(FreqPartition));
	state->memory += bytes;
	qidrisk_freq_events.partitioned++;
	state->release.func = ReleaseMappings;
	state->release.arg = state;
	MemoryContextRegisterResetCallback(state->context, &state->release);
	if (spill_table)
	{
		SpillTable(state, single);
		single = NULL;
	}
	for (int p = 0; p < PARTITIONS; p++)
		state->parts[p].buffer = GrowArray(state, NULL, &state->parts[p].buffer_capacity,
										   MIN_BUFFERED_PER_PARTITION);

	state->single = NULL;
	if (single != NULL)
	{
		freqhash_iterator iterator;
		FreqEntry  *entry;

		/* the classes are counted again as they merge in */
		state->rows = state->classes = state->singletons = 0;
		freqhash_start_iterate(single, &iterator);
		while ((entry = freqhash_iterate(single, &iterator)) != NULL)
			BufferClass(state, &entry->key, entry->count);
		DestroyTable(state, single);
	}
}

/*
 * Create an empty state in context, sized for about nclasses classes, or
 * partitioned from the start
 */
static FreqState *
CreateState(MemoryContext context, Size nclasses, bool partitioned)
{
	FreqState  *state = MemoryContextAllocZero(context, sizeof(FreqState));

	state->context = context;
	state->budget = QidStateMemoryBudget();
	state->memory = sizeof(FreqState);
	state->held_multiplier = pg_prng_uint64(&pg_global_prng_state) | 1;
	state->spill = qidrisk_spill && state->budget >= MIN_SPILL_BUDGET;
	if (partitioned || nclasses > PARTITION_AFTER_CLASSES ||
		(state->spill && TableBytesFor(Max(nclasses, 64)) > state->budget / 2))
		Partition(state);
	else
		state->single = CreateTable(state, Max(nclasses, 64));
	return state;
}

/* Create an empty state in context, sized for about nclasses classes */
FreqState *
FreqStateCreate(MemoryContext context, Size nclasses)
{
	return CreateState(context, nclasses, false);
}

/* Add count rows of class fp to the single table, which may partition or spill */
static void
AddToTable(FreqState *state, const QidFingerprint *fp, int64 count)
{
	/* a state that may spill partitions before its table takes half the budget */
	if (unlikely(state->single->members + 1 >= state->single->grow_threshold) &&
		SpillAllowed(state) &&
		state->memory + (double) state->single->size * sizeof(FreqEntry) >
		(double) state->budget / 2)
	{
		Partition(state);
		BufferClass(state, fp, count);
		return;
	}
	InsertIntoTable(state, state->single, fp, count);
	/* a window aggregate reads its state after every row: keep it one table */
	if (unlikely(state->classes > PARTITION_AFTER_CLASSES ||
				 state->memory > (double) state->budget) && !state->windowed)
		Partition(state);
}

/* Insert the rows held back for their buckets (every reader does, through DrainBuffers) */
static void
FlushPending(FreqState *state)
{
	QidFingerprint pending[FREQ_PENDING_ROWS];
	int			npending = state->npending;

	/* taken out first: an insert may partition the state, which drains again */
	memcpy(pending, state->pending, npending * sizeof(QidFingerprint));
	state->npending = 0;
	state->pending_head = 0;
	for (int i = 0; i < npending; i++)
	{
		if (state->single != NULL)
			AddToTable(state, &pending[i], 1);
		else
			BufferClass(state, &pending[i], 1);
	}
}

/*
 * Hold one row back while its first hash bucket is fetched, and insert the
 * row held longest: rows of a table larger than the cache then wait for
 * memory side by side instead of one after the other.
 */
static inline void
PendRow(FreqState *state, const QidFingerprint *fp)
{
	freqhash_hash *table = state->single;
	QidFingerprint oldest;

#if defined(__GNUC__) || defined(__clang__)
	{
		uint32		bucket = QidPlacementHash(fp, (const QidPlacementKey *) table->private_data) &
			table->sizemask;

		/* and the next: a probe goes on there when the first is taken */
		__builtin_prefetch(&table->data[bucket]);
		__builtin_prefetch(&table->data[(bucket + 1) & table->sizemask]);
	}
#endif
	if (state->npending < FREQ_PENDING_ROWS)
	{
		state->pending[state->npending++] = *fp;
		return;
	}
	oldest = state->pending[state->pending_head];
	state->pending[state->pending_head] = *fp;
	state->pending_head = (state->pending_head + 1) % FREQ_PENDING_ROWS;
	AddToTable(state, &oldest, 1);
	/* the table became partitions: the rows still held go to their buffers */
	if (state->single == NULL)
		FlushPending(state);
}

/* Add count rows of class fp */
static inline void
AddClass(FreqState *state, const QidFingerprint *fp, int64 count)
{
	if (state->single == NULL)
		BufferClass(state, fp, count);
	else if (count == 1)
		PendRow(state, fp);
	else
		AddToTable(state, fp, count);
}

/* Count one row of class fp */
void
FreqStateAddRow(FreqState *state, const QidFingerprint *fp)
{
	AddClass(state, fp, 1);
}

/*
 * A held value's slot: the count of rows in the high 32 bits, the int4 value
 * in the low 32; 0 marks a free slot.  Eight bytes, so the table of a column
 * with tens of thousands of values stays in cache.
 */
#define HeldCount(slot) ((uint32) ((slot) >> 32))
#define HeldInt(slot) ((uint32) (slot))
#define HELD_ONE (UINT64CONST(1) << 32)

/*
 * Slot of a value among 2^bits: multiply-shift hashing by the state's random
 * odd multiplier, so chosen values cannot be made to crowd one run of slots
 */
static inline uint64
HeldSlot(const FreqState *state, uint32 value, int bits)
{
	return ((uint64) value * state->held_multiplier) >> (64 - bits);
}

/* Start an empty table of held values of 2^bits slots */
static void
AllocateHeld(FreqState *state, int bits)
{
	state->held = MemoryContextAllocZero(state->context, sizeof(uint64) << bits);
	state->memory += (double) (sizeof(uint64) << bits);
	state->held_bits = bits;
	state->nheld = 0;
}

/*
 * Count the held values' rows as classes of their fingerprints and free the
 * table; with stop, count every later value the usual way
 */
static void
FlushHeld(FreqState *state, bool stop)
{
	uint64	   *held = state->held;
	uint64		slots = UINT64CONST(1) << state->held_bits;

	if (held == NULL || (state->nheld == 0 && !stop))
		return;
	/* taken out first: adding a class may partition the state, which flushes again */
	state->held = NULL;
	for (uint64 i = 0; i < slots; i++)
	{
		QidFingerprint fp;

		if ((i & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		if (held[i] == 0)
			continue;
		QidFingerprintScalar(Int32GetDatum((int32) HeldInt(held[i])), &fp);
		AddClass(state, &fp, HeldCount(held[i]));
	}
	/* its memory goes back to the classes; a later row starts a new table */
	state->memory -= (double) (sizeof(uint64) * slots);
	pfree(held);
	state->held_off = stop;
	state->held_bits = 0;
	state->nheld = 0;
}

/* Double the held values' table, or stop holding values if it may not grow */
static void
GrowHeld(FreqState *state)
{
	uint64	   *old = state->held;
	int			old_bits = state->held_bits;
	uint64		mask;

	if (old_bits >= MAX_HELD_BITS ||
		state->memory + (double) (sizeof(uint64) << old_bits) > (double) state->budget / 4)
	{
		FlushHeld(state, true);
		return;
	}
	/* the old table stays until its values have moved */
	state->held = NULL;
	AllocateHeld(state, old_bits + 1);
	mask = (UINT64CONST(1) << state->held_bits) - 1;
	for (uint64 i = 0; i < (UINT64CONST(1) << old_bits); i++)
	{
		uint64		slot;

		if (old[i] == 0)
			continue;
		for (slot = HeldSlot(state, HeldInt(old[i]), state->held_bits);
			 state->held[slot] != 0; slot = (slot + 1) & mask)
			;
		state->held[slot] = old[i];
		state->nheld++;
	}
	state->memory -= (double) (sizeof(uint64) << old_bits);
	pfree(old);
}

/* Count a row of value key in the held table (or the usual way, see FreqStateAddValue) */
static void
CountHeldValue(FreqState *state, uint32 key)
{
	uint64		mask;
	uint64		slot;

	if (unlikely(state->held == NULL))
	{
		if (state->held_off || state->windowed ||
			state->memory + (double) (sizeof(uint64) << MIN_HELD_BITS) >
			(double) state->budget / 4)
		{
			QidFingerprint fp;

			QidFingerprintScalar(Int32GetDatum((int32) key), &fp);
			AddClass(state, &fp, 1);
			return;
		}
		AllocateHeld(state, MIN_HELD_BITS);
	}
	mask = (UINT64CONST(1) << state->held_bits) - 1;
	for (slot = HeldSlot(state, key, state->held_bits);; slot = (slot + 1) & mask)
	{
		uint64		held = state->held[slot];

		if (held == 0)
			break;
		if (HeldInt(held) == key)
		{
			/* a count about to overflow 32 bits: count what is held first */
			if (unlikely(HeldCount(held) == PG_UINT32_MAX))
			{
				FlushHeld(state, false);
				CountHeldValue(state, key);
				return;
			}
			state->held[slot] = held + HELD_ONE;
			return;
		}
	}
	/* a new value: keep the table at most three quarters full */
	if (unlikely(state->nheld + 1 > (int64) (mask + 1) / 4 * 3))
	{
		GrowHeld(state);
		CountHeldValue(state, key);
		return;
	}
	state->held[slot] = HELD_ONE | key;
	state->nheld++;
}

/* Count the values waiting in the ring (FreqStateAddValue) */
static void
DrainHeldRing(FreqState *state)
{
	uint32		ring[FREQ_HELD_RING];
	int			n = state->nring;

	/* taken out first, as FlushPending does */
	memcpy(ring, state->held_ring, n * sizeof(uint32));
	state->nring = 0;
	state->ring_head = 0;
	for (int i = 0; i < n; i++)
		CountHeldValue(state, ring[i]);
}

/*
 * Count a row of a one-column QID of int4 or date (QidScalarArgument gave
 * value).  Rows are counted per value in a small table and fingerprinted once
 * per value when a reader needs them: such columns repeat values, and a
 * value costs less to count than a fingerprint.  Past three quarters of
 * 2^MAX_HELD_BITS values (98,304), or a quarter of the budget, rows are
 * counted the usual way.  As PendRow does, each value waits in a ring of
 * FREQ_HELD_RING while its slot is fetched.
 */
void
FreqStateAddValue(FreqState *state, Datum value)
{
	uint32		key = (uint32) DatumGetInt32(value);
	uint32		oldest;

	if (unlikely(state->held == NULL))
	{
		if (state->nring > 0)
			DrainHeldRing(state);
		CountHeldValue(state, key);
		return;
	}
#if defined(__GNUC__) || defined(__clang__)
	__builtin_prefetch(&state->held[HeldSlot(state, key, state->held_bits)]);
#endif
	if (state->nring < FREQ_HELD_RING)
	{
		state->held_ring[state->nring++] = key;
		return;
	}
	oldest = state->held_ring[state->ring_head];
	state->held_ring[state->ring_head] = key;
	state->ring_head = (state->ring_head + 1) % FREQ_HELD_RING;
	CountHeldValue(state, oldest);
}

/* Count every row held back: held values, then rows waiting for their buckets */
static void
FlushHeldRows(FreqState *state)
{
	if (state->nring > 0)
		DrainHeldRing(state);
	if (state->nheld > 0)
		FlushHeld(state, false);
	if (state->npending > 0)
		FlushPending(state);
}

/* Merge every partition's buffered rows into its array */
static void
DrainBuffers(FreqState *state)
{
	FlushHeldRows(state);
	if (!state->unsettled)
		return;
	for (int p = 0; p < PARTITIONS; p++)
	{
		CHECK_FOR_INTERRUPTS();
		DrainPartition(state, &state->parts[p]);
	}
	state->unsettled = false;
}

/* Whether any partition of the state has runs in temporary files */
static bool
HasRuns(const FreqState *state)
{
	if (state->parts == NULL)
		return false;
	for (int p = 0; p < PARTITIONS; p++)
		if (state->parts[p].nruns > 0)
			return true;
	return false;
}

/* Whether the state (or a state attached to it) has spilled to temporary files */
bool
FreqStateSpilled(FreqState *state)
{
	FlushHeldRows(state);
	if (HasRuns(state))
		return true;
	for (FreqState *attached = state->attached; attached != NULL;
		 attached = attached->next_attached)
		if (HasRuns(attached))
			return true;
	return false;
}

/* Keep a file taken over from another state, to close it with ours */
static void
AdoptFile(FreqState *state, BufFile *file)
{
	if (file == NULL)
		return;
	if (state->nadopted == state->adopted_capacity)
	{
		int			capacity = Max(8, state->adopted_capacity * 2);

		state->adopted_files = state->adopted_files ?
			repalloc(state->adopted_files, capacity * sizeof(BufFile *)) :
			MemoryContextAlloc(state->context, capacity * sizeof(BufFile *));
		state->adopted_capacity = capacity;
	}
	state->adopted_files[state->nadopted++] = file;
}

/*
 * Take over the runs and run files of from, a state in the same memory
 * context that is about to be freed: nothing is copied.
 */
static void
AdoptRuns(FreqState *into, FreqState *from)
{
	for (int p = 0; p < PARTITIONS; p++)
	{
		FreqPartition *partition = &from->parts[p];

		for (int i = 0; i < partition->nruns; i++)
			AppendRun(into, &into->parts[p], &partition->runs[i]);
		partition->nruns = 0;
		AdoptFile(into, partition->file);
		partition->file = NULL;
	}
	for (int i = 0; i < from->nadopted; i++)
		AdoptFile(into, from->adopted_files[i]);
	from->nadopted = 0;
}

/* Copy the runs of another state's partition into new runs of ours */
static void
CopyRuns(FreqState *into, FreqPartition *partition, const FreqPartition *from)
{
	RunWriter  *writer = palloc(sizeof(RunWriter));

	for (int i = 0; i < from->nruns; i++)
	{
		MergeSource source;

		OpenRunSource(&source, &from->runs[i]);
		BeginRun(writer, into, partition);
		MergeSources(&source, 1, NULL, WriteRunClass, writer);
		CloseSource(&source);
		EndRun(writer);
	}
	pfree(writer);
}

/* Merge a sorted run into a partition's array, spilling first if it would not fit */
static void
MergeIntoPartition(FreqState *state, FreqPartition *partition,
				   const CountedClass *run, int64 nrun)
{
	DecodePartitions(state);
	SpillUntilFits(state, partition, nrun, 0);
	MergeRun(state, partition, run, nrun);
}

/*
 * Merge the arrays of a partitioned state (decoded, its buffers drained or
 * sorted) into another's, partition by partition, without changing it: a
 * lent state may be read by other aggregates still.
 */
static void
MergePartitionsOf(FreqState *into, const FreqState *from)
{
	if (Undecoded(from) || (from->unsettled && !from->buffers_sorted))
		elog(ERROR, "qidrisk: merging a frequency state whose classes are not sorted");
	for (int p = 0; p < PARTITIONS; p++)
	{
		const FreqPartition *partition = &from->parts[p];

		CHECK_FOR_INTERRUPTS();
		MergeIntoPartition(into, &into->parts[p], partition->classes, partition->nclasses);
		if (from->unsettled && partition->nbuffered > 0)
			MergeIntoPartition(into, &into->parts[p], partition->buffer, partition->nbuffered);
	}
}

/*
 * Combining partitioned states that are ours to keep (deserialized ones)
 * only attaches them; the final function then reads all of them in one
 * streaming merge, and no merged copy of the classes is ever written.  Any
 * other use merges them in first.
 */
bool
FreqStateAttach(FreqState *into, FreqState *from)
{
	Assert(into->single == NULL && from->single == NULL && from->attached == NULL);

	/* the attached states count against the budget too; past it, merge */
	if (into->memory + into->attached_memory + from->memory > (double) into->budget)
		return false;
	into->attached_memory += from->memory;
	MergeAggParameter(&into->has_param, &into->param, from->has_param, from->param);
	from->next_attached = into->attached;
	into->attached = from;
	into->streamed = false;
	return true;
}

/* Merge the attached states' classes into the state's own arrays and runs */
static void
MaterializeAttached(FreqState *state)
{
	while (state->attached != NULL)
	{
		FreqState  *attached = state->attached;
		double		attached_memory = attached->memory;

		DecodePartitions(attached);
		MergePartitionsOf(state, attached);
		if (!attached->lent)
			AdoptRuns(state, attached);
		state->attached = attached->next_attached;
		state->attached_memory -= attached_memory;
		attached->next_attached = NULL;
		FreqStateFree(attached);
	}
	state->streamed = false;
}

/*
 * Read the classes of a partitioned state, its attached states and all
 * their file runs as one ascending stream, partition by partition, by a
 * k-way merge of at most MergeFanIn inputs; count the merged classes and
 * call visit (if any) with each.  Nothing is modified but the run lists
 * (runs are merged into longer ones when there are too many).
 */
static void
StreamClasses(FreqState *state, ClassVisitor visit, void *arg)
{
	FreqCounts	counts = {0, 0, 0};
	int			narrays = 1;

	DrainBuffers(state);
	/* a lent state's sorted buffers are read as arrays of their own */
	for (FreqState *source = state->attached; source != NULL; source = source->next_attached)
	{
		if (source->unsettled && !source->buffers_sorted)
			elog(ERROR, "qidrisk: streaming an attached frequency state whose buffers are not sorted");
		narrays += source->unsettled ? 2 : 1;
	}
	if (narrays >= MergeFanIn(state))
	{
		/* too many to stream: merge them in for good */
		MaterializeAttached(state);
		narrays = 1;
	}
	/* received states are private copies in our context: their runs become ours */
	for (FreqState *source = state->attached; source != NULL; source = source->next_attached)
		if (!source->lent)
			AdoptRuns(state, source);

	for (int p = 0; p < PARTITIONS; p++)
	{
		FreqPartition *partition = &state->parts[p];
		MergeSource *sources;
		int			nsources = 0;
		int			window_bytes;

		CHECK_FOR_INTERRUPTS();
		ReduceRuns(state, partition, MergeFanIn(state) - narrays);
		window_bytes = WindowBytes(state, narrays + partition->nruns,
								   FilesOfPartition(state, p));
		sources = palloc((narrays + partition->nruns) * sizeof(MergeSource));
		OpenPartitionSource(&sources[nsources++], state, p, window_bytes);
		for (FreqState *source = state->attached; source != NULL;
			 source = source->next_attached)
		{
			OpenPartitionSource(&sources[nsources++], source, p, window_bytes);
			if (source->unsettled)
				OpenArraySource(&sources[nsources++], source->parts[p].buffer,
								source->parts[p].nbuffered);
		}
		for (int i = 0; i < partition->nruns; i++)
			OpenRunSource(&sources[nsources++], &partition->runs[i]);
		MergeSources(sources, nsources, &counts, visit, arg);
		for (int i = 0; i < nsources; i++)
			CloseSource(&sources[i]);
		pfree(sources);
	}
	state->streamed_rows = counts.rows;
	state->streamed_classes = counts.classes;
	state->streamed_singletons = counts.singletons;
	state->streamed = true;
}

/* Merge every buffered row and attached state, so the in-memory counters are complete */
void
FreqStateSettle(FreqState *state)
{
	DrainBuffers(state);
	if (state->attached != NULL)
		MaterializeAttached(state);
}

/* Account for one row of a class of size count leaving it */
static void
UncountRow(FreqState *state, int64 count)
{
	if (count == 1)
	{
		state->singletons--;
		state->classes--;
	}
	else if (count == 2)
		state->singletons++;
	state->rows--;
}

/* Take one row of class fp out again (inverse transition of a moving window) */
void
FreqStateRemoveRow(FreqState *state, const QidFingerprint *fp)
{
	FreqPartition *partition;
	int64		low = 0;
	int64		high;

	FreqStateSettle(state);
	DecodePartitions(state);
	if (state->single != NULL)
	{
		FreqEntry  *entry = freqhash_lookup(state->single, *fp);

		if (entry == NULL)
			elog(ERROR, "qidrisk: removing a row that was never added");
		UncountRow(state, entry->count);
		if (--entry->count == 0)
			freqhash_delete_item(state->single, entry);
		return;
	}
	/* only window aggregates remove rows, and their states never spill */
	if (HasRuns(state))
		elog(ERROR, "qidrisk: removing a row from a spilled state");

	/* binary search of the partition's sorted array */
	partition = &state->parts[PartitionOf(fp)];
	high = partition->nclasses - 1;
	while (low <= high)
	{
		int64		mid = low + (high - low) / 2;
		CountedClass *class = &partition->classes[mid];
		int			c = QidFingerprintCompare(&class->key, fp);

		if (c == 0)
		{
			UncountRow(state, class->count);
			if (--class->count == 0)
			{
				memmove(class, class + 1,
						(partition->nclasses - mid - 1) * sizeof(CountedClass));
				partition->nclasses--;
			}
			return;
		}
		if (c < 0)
			low = mid + 1;
		else
			high = mid - 1;
	}
	elog(ERROR, "qidrisk: removing a row that was never added");
}

/*
 * Call visit for every class of a state, attached states and file runs
 * included: a partitioned state yields its classes in ascending order.
 */
static void
ForEachClass(FreqState *state, ClassVisitor visit, void *arg)
{
	uint64		visited = 0;

	/* held rows first: counting them may partition the state */
	FlushHeldRows(state);
	if (state->single != NULL)
	{
		freqhash_iterator iterator;
		FreqEntry  *entry;

		FreqStateSettle(state);
		freqhash_start_iterate(state->single, &iterator);
		while ((entry = freqhash_iterate(state->single, &iterator)) != NULL)
		{
			if ((++visited & INTERRUPT_CHECK_MASK) == 0)
				CHECK_FOR_INTERRUPTS();
			visit(&entry->key, entry->count, arg);
		}
		return;
	}
	DrainBuffers(state);
	if (state->attached != NULL || HasRuns(state) || Undecoded(state))
	{
		StreamClasses(state, visit, arg);
		return;
	}
	for (int p = 0; p < PARTITIONS; p++)
	{
		FreqPartition *partition = &state->parts[p];

		for (int64 i = 0; i < partition->nclasses; i++)
		{
			if ((i & INTERRUPT_CHECK_MASK) == 0)
				CHECK_FOR_INTERRUPTS();
			visit(&partition->classes[i].key, partition->classes[i].count, arg);
		}
	}
}

static void
MergeClass(const QidFingerprint *key, int64 count, void *arg)
{
	AddClass((FreqState *) arg, key, count);
}

/* Add every class of from into into */
void
FreqStateMerge(FreqState *into, FreqState *from)
{
	FreqStateSettle(into);
	/* a lent state is only read: its sorted buffers are merged as they are */
	if (!from->lent)
		FreqStateSettle(from);
	DecodePartitions(from);

	MergeAggParameter(&into->has_param, &into->param, from->has_param, from->param);

	if (into->single != NULL && !into->windowed &&
		(into->classes + from->classes > PARTITION_AFTER_CLASSES || HasRuns(from) ||
		 from->lent))
		Partition(into);

	if (into->single == NULL && from->single == NULL)
	{
		/* both partitioned: merge the sorted arrays, partition by partition */
		MergePartitionsOf(into, from);
		/* and the runs: taken over from a private copy, copied from anything else */
		if (from->private_copy && from->context == into->context)
			AdoptRuns(into, from);
		else
			for (int p = 0; p < PARTITIONS; p++)
				CopyRuns(into, &into->parts[p], &from->parts[p]);
		into->streamed = false;
		return;
	}
	/* ForEachClass would drain a lent state's shared buffers */
	if (from->lent)
		elog(ERROR, "qidrisk: a lent frequency state cannot be merged into a small state");
	ForEachClass(from, MergeClass, into);
}

/* Release a state's memory and files; the state must not be used afterwards */
void
FreqStateFree(FreqState *state)
{
	/* a lent state's memory is its partial node's, freed with that node's context */
	if (state->lent)
		return;
	while (state->attached != NULL)
	{
		FreqState  *attached = state->attached;

		state->attached = attached->next_attached;
		FreqStateFree(attached);
	}
	ReleaseEncoded(state);
	if (state->held != NULL)
	{
		state->memory -= (double) (sizeof(uint64) << state->held_bits);
		pfree(state->held);
		state->held = NULL;
		state->nheld = 0;
	}
	if (state->single != NULL)
		DestroyTable(state, state->single);
	else if (state->parts != NULL)
	{
		ReleaseMappings(state);
		for (int p = 0; p < PARTITIONS; p++)
			pfree(state->parts[p].buffer);
		pfree(state->parts);
		state->parts = NULL;
	}
	/* the struct itself stays: the context's reset callback still points to it */
	state->single = NULL;
}

/* The counters over the state, anything attached to it and its file runs */
void
FreqStateCounts(FreqState *state, FreqCounts *counts)
{
	/* held rows first: counting them may partition the state or spill it */
	FlushHeldRows(state);
	if (state->single == NULL)
	{
		DrainBuffers(state);
		/* a worker file's classes are counted (and checked) as they are read */
		if (state->attached != NULL || HasRuns(state) || state->encoded_file != NULL)
		{
			if (!state->streamed)
				StreamClasses(state, NULL, NULL);
			counts->rows = state->streamed_rows;
			counts->classes = state->streamed_classes;
			counts->singletons = state->streamed_singletons;
			return;
		}
	}
	FreqStateSettle(state);
	counts->rows = state->rows;
	counts->classes = state->classes;
	counts->singletons = state->singletons;
}

int64
FreqStateClasses(FreqState *state)
{
	FreqCounts	counts;

	FreqStateCounts(state, &counts);
	return counts.classes;
}

/*
 * About how many classes a state holds, without reading its file runs: a
 * spilled state answers just past the partitioning threshold.  For sizing
 * a state to merge it into.
 */
int64
FreqStateSizeHint(FreqState *state)
{
	/* a lent state is large, and counting it would merge its buffers */
	if (state->lent || FreqStateSpilled(state))
		return PARTITION_AFTER_CLASSES + 1;
	/* a worker file's classes would have to be read: its message's count */
	if (state->encoded_file != NULL)
		return state->classes;
	return FreqStateClasses(state);
}

typedef struct VisitContext
{
	FreqVisitor visitor;
	void	   *arg;
} VisitContext;

static void
VisitClass(const QidFingerprint *key pg_attribute_unused(), int64 count, void *arg)
{
	VisitContext *context = (VisitContext *) arg;

	context->visitor(count, context->arg);
}

/* Call visitor with the size of every class */
void
FreqStateVisit(FreqState *state, FreqVisitor visitor, void *arg)
{
	VisitContext context = {visitor, arg};

	ForEachClass(state, VisitClass, &context);
}

/*
 * Call visit for every class in ascending order of fingerprint (grouping
 * aggregates such as l_diversity read runs of one high half): a partitioned
 * state streams in that order; a single table's classes are copied and sorted
 */
void
FreqStateVisitAscending(FreqState *state, FreqKeyVisitor visit, void *arg)
{
	freqhash_iterator iterator;
	FreqEntry  *entry;
	CountedClass *sorted;
	int64		n = 0;

	/* held rows first: counting them may partition the state */
	FlushHeldRows(state);
	if (state->single == NULL)
	{
		ForEachClass(state, visit, arg);
		return;
	}
	FreqStateSettle(state);
	sorted = palloc_extended(Max(state->classes, 1) * sizeof(CountedClass), MCXT_ALLOC_HUGE);
	freqhash_start_iterate(state->single, &iterator);
	while ((entry = freqhash_iterate(state->single, &iterator)) != NULL)
	{
		if (n >= state->classes)
			elog(ERROR, "qidrisk: a frequency table holds more classes than it counted");
		sorted[n].key = entry->key;
		sorted[n].count = entry->count;
		n++;
	}
	qsort(sorted, n, sizeof(CountedClass), CompareClasses);
	for (int64 i = 0; i < n; i++)
	{
		if ((i & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		visit(&sorted[i].key, sorted[i].count, arg);
	}
	pfree(sorted);
}

/* Bytes of value as an unsigned LEB128 varint */
static inline int
VarintLength(uint64 value)
{
	int			length = 1;

	while (value >= 0x80)
	{
		value >>= 7;
		length++;
	}
	return length;
}

/* Write value as an unsigned LEB128 varint; returns the byte after it */
static inline char *
WriteVarint(char *out, uint64 value)
{
	while (value >= 0x80)
	{
		*out++ = (char) ((value & 0x7F) | 0x80);
		value >>= 7;
	}
	*out++ = (char) value;
	return out;
}

/* Read an unsigned LEB128 varint, refusing truncated and over-long ones */
static inline bool
ReadVarint(const char **in, const char *end, uint64 *value)
{
	const unsigned char *at = (const unsigned char *) *in;
	uint64		result = 0;

	for (int shift = 0; shift < 64; shift += 7)
	{
		uint64		byte;

		if ((const char *) at >= end)
			return false;
		byte = *at++;
		/* the tenth byte may carry only the top bit of 64 */
		if (shift == 63 && byte > 1)
			return false;
		result |= (byte & 0x7F) << shift;
		if ((byte & 0x80) == 0)
		{
			*in = (const char *) at;
			*value = result;
			return true;
		}
	}
	return false;
}

/* Bytes the ascending encoding takes for a class */
static inline int
AscendingClassLength(uint64 gap, int64 count)
{
	int			gap_bytes = gap == 0 ? 0 : pg_leftmost_one_pos64(gap) / 8 + 1;

	return 1 + gap_bytes + sizeof(uint64) +
		(count > TAG_MAX_COUNT ? VarintLength((uint64) count) : 0);
}

/* Write a class in the ascending encoding; returns the byte after it */
static inline char *
WriteAscendingClassAt(char *out, uint64 gap, uint64 lo, int64 count)
{
	int			gap_bytes = gap == 0 ? 0 : pg_leftmost_one_pos64(gap) / 8 + 1;

	*out++ = (char) ((gap_bytes << 4) | (count > TAG_MAX_COUNT ? 0 : (int) count));
	gap = LittleEndian64(gap);
	memcpy(out, &gap, gap_bytes);
	out += gap_bytes;
	lo = LittleEndian64(lo);
	memcpy(out, &lo, sizeof(uint64));
	out += sizeof(uint64);
	if (count > TAG_MAX_COUNT)
		out = WriteVarint(out, (uint64) count);
	return out;
}

/*
 * Where an ascending encoding is being written or sized: into memory sized
 * up front, or through a buffer into a file (WriteAscendingArrays only)
 */
typedef struct AscendingWriter
{
	char	   *out;			/* next byte, or NULL when only sizing */
	double		bytes;			/* bytes written or needed so far */
	uint64		previous_hi;
	FreqCounts	seen;			/* what the sizing pass saw */
	uintptr_t	flush_at;		/* out past this goes to the file */
	char	   *buffer;			/* the file's buffer, where out starts */
	File		file;
	off_t		written;		/* bytes in the file so far */
	bool		by_partition;	/* gaps restart at each partition's lowest
								 * high half, and the next three are kept */
	int			partition;		/* the partition being written */
	off_t		offsets[PARTITIONS];	/* where each partition starts */
	FreqCounts	counts[PARTITIONS]; /* what each holds */
} AscendingWriter;

/* An AscendingWriter into memory, or sizing (flush_at never reached) */
#define MEMORY_WRITER \
	{.out = NULL, .bytes = 0, .previous_hi = 0, .flush_at = UINTPTR_MAX, \
	 .buffer = NULL, .file = -1, .written = 0, .by_partition = false, .partition = -1}

/* Write a file writer's buffer up to out to its file; returns the buffer */
static char *
FlushAscending(AscendingWriter *writer, char *out)
{
	int			n = (int) (out - writer->buffer);

	if (n > 0 && FileWrite(writer->file, writer->buffer, n, writer->written,
						   WAIT_EVENT_BUFFILE_WRITE) != n)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write qidrisk's temporary file of classes")));
	writer->written += n;
	return writer->buffer;
}

/*
 * A file writer begins the next partition (by_partition): its gaps count
 * from its lowest high half, and it starts where the writer is (out)
 */
static void
StartPartition(AscendingWriter *writer, const char *out)
{
	writer->partition++;
	writer->previous_hi = (uint64) writer->partition << (64 - PARTITION_BITS);
	writer->offsets[writer->partition] = writer->written + (out - writer->buffer);
}

/* Write (or size) one class of the ascending encoding */
static void
WriteAscendingClass(const QidFingerprint *key, int64 count, void *arg)
{
	AscendingWriter *writer = (AscendingWriter *) arg;
	uint64		gap;

	/* a file's classes: start each partition with its own gaps and place */
	while (writer->by_partition && writer->partition < PartitionOf(key))
		StartPartition(writer, writer->out);
	gap = key->hi - writer->previous_hi;
	writer->previous_hi = key->hi;
	CountClassInto(&writer->seen, count);
	if (writer->by_partition)
		CountClassInto(&writer->counts[writer->partition], count);
	if (writer->out == NULL)
	{
		writer->bytes += AscendingClassLength(gap, count);
		return;
	}
	writer->out = WriteAscendingClassAt(writer->out, gap, key->lo, count);
	if (unlikely((uintptr_t) writer->out >= writer->flush_at))
		writer->out = FlushAscending(writer, writer->out);
}

/*
 * Sort every partition's buffered rows in place, equal fingerprints summed,
 * so that serializing merges them with the array while it writes instead of
 * moving the whole array to merge them in first
 */
static void
SortBuffersInPlace(FreqState *state)
{
	for (int p = 0; p < PARTITIONS; p++)
	{
		FreqPartition *partition = &state->parts[p];
		CountedClass *run;
		int64		nrun;

		if (partition->nbuffered == 0)
			continue;
		nrun = SortAndSumBuffer(state, partition, &run);
		memcpy(partition->buffer, run, nrun * sizeof(CountedClass));
		partition->nbuffered = nrun;
	}
	state->buffers_sorted = true;
}

/*
 * Write (or size) every class of a partitioned state whose classes are all
 * in its arrays and its sorted buffers (SortBuffersInPlace): the same as
 * ForEachClass with WriteAscendingClass after DrainBuffers, in one tight
 * loop, which is what a parallel worker does with its state.  A file writer
 * leaves its last bytes in its buffer.
 */
static void
WriteAscendingArrays(FreqState *state, AscendingWriter *writer)
{
	for (int p = 0; p < PARTITIONS; p++)
	{
		const CountedClass *classes = state->parts[p].classes;
		const CountedClass *buffered = state->parts[p].buffer;
		int64		nclasses = state->parts[p].nclasses;
		int64		nbuffered = state->parts[p].nbuffered;
		int64		i = 0;
		int64		j = 0;
		uint64		previous_hi = writer->previous_hi;
		char	   *out = writer->out;
		double		bytes = 0;
		FreqCounts	before = writer->seen;

		if (writer->by_partition)
		{
			StartPartition(writer, out);
			previous_hi = writer->previous_hi;
		}

		while (i < nclasses || j < nbuffered)
		{
			CountedClass class;
			int			c = (j == nbuffered) ? -1 : (i == nclasses) ? 1 :
				QidFingerprintCompare(&classes[i].key, &buffered[j].key);
			uint64		gap;

			if (((i + j) & INTERRUPT_CHECK_MASK) == 0)
				CHECK_FOR_INTERRUPTS();
			class = (c <= 0) ? classes[i++] : buffered[j++];
			if (c == 0)
				class.count += buffered[j++].count;
			gap = class.key.hi - previous_hi;
			previous_hi = class.key.hi;
			CountClassInto(&writer->seen, class.count);
			if (out == NULL)
				bytes += AscendingClassLength(gap, class.count);
			else
			{
				out = WriteAscendingClassAt(out, gap, class.key.lo, class.count);
				if (unlikely((uintptr_t) out >= writer->flush_at))
					out = FlushAscending(writer, out);
			}
		}
		writer->bytes += bytes;
		writer->out = out;
		writer->previous_hi = previous_hi;
		if (writer->by_partition)
		{
			writer->counts[p].rows = writer->seen.rows - before.rows;
			writer->counts[p].classes = writer->seen.classes - before.classes;
			writer->counts[p].singletons = writer->seen.singletons - before.singletons;
		}
	}
}

/* Bytes the ascending encoding of a state's arrays and buffers takes at most */
static double
AscendingBound(const FreqState *state)
{
	double		classes = 0;

	for (int p = 0; p < PARTITIONS; p++)
		classes += (double) (state->parts[p].nclasses + state->parts[p].nbuffered);
	return classes * MAX_ASCENDING_CLASS_BYTES;
}

/* Write one class of the fixed encoding into a buffer sized up front */
static void
WriteFixedClass(const QidFingerprint *key, int64 count, void *arg)
{
	StringInfo	buf = (StringInfo) arg;

	pq_writeint64(buf, (int64) key->lo);
	pq_writeint64(buf, (int64) key->hi);
	pq_writeint64(buf, count);
}

/* The header fields after a message's encoding: rows, singletons, parameter, classes */
static void
SendHeader(StringInfo buf, const FreqCounts *seen, const FreqState *state)
{
	pq_sendint64(buf, seen->rows);
	pq_sendint64(buf, seen->singletons);
	pq_sendbyte(buf, state->has_param ? 1 : 0);
	pq_sendfloat8(buf, state->param);
	pq_sendint64(buf, seen->classes);
}

/*
 * Serialize: format version, encoding, rows, singletons, parameter, class
 * count, then the classes in the encoding the state's layout allows.  A
 * spilled state streams its file runs into the message, which therefore
 * may hold more than the memory budget (up to MaxAllocSize).
 */
bytea *
FreqStateSerialize(FreqState *state)
{
	StringInfoData buf;
	AscendingWriter writer = MEMORY_WRITER;
	int			encoding;
	double		bytes;
	bool		arrays_only = false;
	bool		one_pass = false;
	int			counts_at;

	/* held rows first: counting them may partition the state */
	FlushHeldRows(state);
	if (state->single != NULL)
		FreqStateSettle(state);
	/* partitions are streamed in order and each is sorted: one ascending stream */
	encoding = state->single == NULL ? ENCODING_ASCENDING : ENCODING_FIXED;
	if (encoding == ENCODING_ASCENDING)
	{
		if (state->attached == NULL && !HasRuns(state) && !Undecoded(state))
			SortBuffersInPlace(state);
		/* sorting may have spilled */
		arrays_only = state->attached == NULL && !HasRuns(state) && !Undecoded(state);
		if (!arrays_only)
			DrainBuffers(state);
	}
	if (arrays_only)
	{
		/* room for the longest encoding of every class: then one pass writes it */
		double		bound = SERIALIZED_HEADER_BYTES + VARHDRSZ +
			AscendingBound(state);

		one_pass = bound < MAX_MESSAGE_BYTES;
		if (one_pass)
			writer.bytes = bound - (SERIALIZED_HEADER_BYTES + VARHDRSZ);
		else
			WriteAscendingArrays(state, &writer);
	}
	else if (encoding == ENCODING_ASCENDING)
		ForEachClass(state, WriteAscendingClass, &writer);
	else
	{
		writer.bytes = (double) state->classes * SERIALIZED_CLASS_BYTES;
		writer.seen.rows = state->rows;
		writer.seen.classes = state->classes;
		writer.seen.singletons = state->singletons;
	}
	bytes = SERIALIZED_HEADER_BYTES + VARHDRSZ + writer.bytes;
	if (bytes >= MAX_MESSAGE_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("qidrisk frequency state too large to serialize"),
				 errdetail("The state holds " INT64_FORMAT " classes, %.0f bytes serialized; "
						   "one message holds at most %zu bytes.",
						   writer.seen.classes, bytes, (Size) MAX_MESSAGE_BYTES),
				 errhint("Disable parallel aggregation (max_parallel_workers_per_gather = 0) "
						 "or aggregate fewer rows per group.")));

	/* as pq_begintypsend, but exactly the room needed (and its terminating zero) */
	buf.data = palloc((Size) bytes + 1);
	buf.maxlen = (int) bytes + 1;
	buf.len = VARHDRSZ;
	buf.cursor = 0;
	pq_sendbyte(&buf, QIDRISK_STATE_FORMAT_VERSION);
	pq_sendbyte(&buf, encoding);
	counts_at = buf.len;
	SendHeader(&buf, &writer.seen, state);
	if (encoding == ENCODING_ASCENDING)
	{
		/* the buffer was enlarged for every class by the sizing pass or the bound */
		writer.out = buf.data + buf.len;
		writer.previous_hi = 0;
		writer.seen.rows = writer.seen.classes = writer.seen.singletons = 0;
		if (arrays_only)
			WriteAscendingArrays(state, &writer);
		else
			ForEachClass(state, WriteAscendingClass, &writer);
		Assert(one_pass || writer.out - (buf.data + buf.len) == (ptrdiff_t) writer.bytes);
		buf.len += (int) (writer.out - (buf.data + buf.len));
		buf.data[buf.len] = '\0';
		if (one_pass)
		{
			/* the counters were only known once written: write the header again */
			int			end = buf.len;

			buf.len = counts_at;
			SendHeader(&buf, &writer.seen, state);
			buf.len = end;
			/* give back the room the longest encoding would have needed */
			buf.data = repalloc(buf.data, buf.len + 1);
			buf.maxlen = buf.len + 1;
		}
	}
	else
		ForEachClass(state, WriteFixedClass, &buf);
	return pq_endtypsend(&buf);
}

/* Raise the error for a serialized state that does not parse */
void
FreqStateCorrupt(const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg("invalid qidrisk frequency state"),
			 errdetail("%s", detail)));
}

/*
 * The states this process has lent and not yet taken back.  Each entry lives
 * in the lent state's own memory context and leaves the list when that
 * context is reset, so the list never names freed memory.
 */
typedef struct LentState
{
	dlist_node	node;
	uint64		id;
	FreqState  *state;
	MemoryContextCallback forget;
} LentState;

static dlist_head lent_states = DLIST_STATIC_INIT(lent_states);
static uint64 next_lent_id = 0;

/* Memory context reset callback: the lent state is gone, forget it */
static void
ForgetLentState(void *arg)
{
	LentState  *entry = (LentState *) arg;

	if (entry->state != NULL)
		dlist_delete(&entry->node);
	entry->state = NULL;
}

/*
 * Lend a parallel leader's own partial state to the finalize aggregate of
 * the same process instead of serializing it: the message names the state,
 * which stays in its memory context, its buffers sorted so that the final
 * merge reads them as they are.  The caller guarantees that the message
 * goes nowhere but into FreqStateDeserialize in this process, while the
 * partial aggregate's context lives (see qidrisk_freq_serialize).  States
 * that are small, spilled or hold received states are serialized as usual.
 */
bytea *
FreqStateLend(FreqState *state)
{
	LentState  *entry;
	StringInfoData buf;

	FlushHeldRows(state);
	if (state->single != NULL || state->windowed || state->attached != NULL ||
		Undecoded(state) || HasRuns(state))
		return FreqStateSerialize(state);
	/* a state shared by several aggregates is lent once for each */
	if (!state->buffers_sorted)
		SortBuffersInPlace(state);
	/* sorting may have spilled */
	if (HasRuns(state))
		return FreqStateSerialize(state);

	/* ids start at a random point, so that no other process's message matches */
	if (next_lent_id == 0 && !pg_strong_random(&next_lent_id, sizeof(next_lent_id)))
		next_lent_id = ((uint64) MyProcPid << 32) ^ (uint64) MyStartTime;
	entry = MemoryContextAlloc(state->context, sizeof(LentState));
	entry->id = ++next_lent_id;
	entry->state = state;
	entry->forget.func = ForgetLentState;
	entry->forget.arg = entry;
	MemoryContextRegisterResetCallback(state->context, &entry->forget);
	dlist_push_tail(&lent_states, &entry->node);
	elog(DEBUG1, "qidrisk: the parallel leader keeps its own partial state");

	pq_begintypsend(&buf);
	pq_sendbyte(&buf, QIDRISK_STATE_FORMAT_VERSION);
	pq_sendbyte(&buf, ENCODING_LENT);
	pq_sendint32(&buf, MyProcPid);
	pq_sendint64(&buf, (int64) entry->id);
	return pq_endtypsend(&buf);
}

/*
 * Take back a state lent by this process (FreqStateLend), once: as a view in
 * context, a copy of the state's struct sharing its arrays, so that each
 * aggregate it was lent to links it into its own list of attached states.
 * Views are only read (MergePartitionsOf, StreamClasses) and never freed.
 */
static FreqState *
ReclaimLentState(MemoryContext context, StringInfo buf)
{
	int32		pid;
	uint64		id;
	dlist_mutable_iter iter;

	if (buf->len != (int) LENT_MESSAGE_BYTES)
		FreqStateCorrupt("The lent state's message has the wrong length.");
	pid = pq_getmsgint(buf, sizeof(int32));
	id = (uint64) pq_getmsgint64(buf);
	if (pid != MyProcPid)
		FreqStateCorrupt("The state was lent by another process.");
	dlist_foreach_modify(iter, &lent_states)
	{
		LentState  *entry = dlist_container(LentState, node, iter.cur);
		FreqState  *view;

		if (entry->id != id)
			continue;
		view = MemoryContextAlloc(context, sizeof(FreqState));
		memcpy(view, entry->state, sizeof(FreqState));
		view->lent = true;
		view->private_copy = false;
		view->attached = NULL;
		view->next_attached = NULL;
		dlist_delete(&entry->node);
		entry->state = NULL;
		qidrisk_freq_events.lent++;
		return view;
	}
	FreqStateCorrupt("The lent state is no longer available.");
	return NULL;				/* keep the compiler quiet */
}

/* Decode the next class of an ascending stream; false if the stream is truncated */
static inline bool
ReadAscendingClass(const char **at, const char *end, uint64 *previous_hi,
				   CountedClass *class)
{
	const char *in = *at;
	int			tag;
	int			gap_bytes;
	uint64		gap;
	uint64		lo;
	uint64		count;

	if (in >= end)
		return false;
	tag = (unsigned char) *in++;
	gap_bytes = tag >> 4;
	if (gap_bytes > (int) sizeof(uint64) || end - in < gap_bytes + (ptrdiff_t) sizeof(uint64))
		return false;
	/* the low half follows the gap, so eight bytes can be read at once */
	memcpy(&gap, in, sizeof(uint64));
	gap = LittleEndian64(gap);
	if (gap_bytes < (int) sizeof(uint64))
		gap &= (UINT64CONST(1) << (8 * gap_bytes)) - 1;
	in += gap_bytes;
	memcpy(&lo, in, sizeof(uint64));
	in += sizeof(uint64);
	count = tag & TAG_MAX_COUNT;
	if (count == 0 && !ReadVarint(&in, end, &count))
		return false;
	class->key.hi = *previous_hi + gap;
	class->key.lo = LittleEndian64(lo);
	class->count = (int64) count;
	*previous_hi = class->key.hi;
	*at = in;
	return true;
}

/*
 * Decode n classes of an ascending stream: a message's, which
 * DeserializeAscending validated when it was received, or (check->partition
 * set) a worker file's, checked here as they are decoded
 */
static void
DecodeClasses(const char **at, const char *end, uint64 *previous_hi,
			  CountedClass *classes, int64 n, DecodeCheck *check)
{
	for (int64 i = 0; i < n; i++)
	{
		const CountedClass *class = &classes[i];

		if ((i & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		if (!ReadAscendingClass(at, end, previous_hi, &classes[i]))
			FreqStateCorrupt("The state's classes are truncated.");
		/* classes in memory were validated when received; a worker file's are now */
		if (check->partition < 0)
			continue;
		if (PartitionOf(&class->key) != check->partition ||
			(check->started && (class->key.hi < check->previous.hi ||
								(class->key.hi == check->previous.hi &&
								 class->key.lo <= check->previous.lo))))
			FreqStateCorrupt("The state's classes are not in ascending order.");
		if (class->count <= 0 || class->count > check->expected.rows - check->seen.rows)
			FreqStateCorrupt("A class of the state has an impossible size.");
		check->started = true;
		check->previous = class->key;
		CountClassInto(&check->seen, class->count);
	}
}

/*
 * Decode a received state's encoded partitions into sorted arrays, or
 * straight into runs where an array would not fit the budget, and drop the
 * encoded copy (or close the worker file).  The in-memory counters then
 * cover the arrays only.
 */
static void
DecodePartitions(FreqState *state)
{
	FreqCounts	in_memory = {0, 0, 0};

	if (!Undecoded(state))
		return;
	for (int p = 0; p < PARTITIONS; p++)
	{
		FreqPartition *partition = &state->parts[p];
		MergeSource source;
		RunWriter  *writer = NULL;

		CHECK_FOR_INTERRUPTS();
		OpenPartitionSource(&source, state, p, WindowBytes(state, 1, 1));
		if (partition->nencoded > 0 && SpillAllowed(state) &&
			state->memory + (double) MappedBytes(partition->nencoded) > (double) state->budget)
		{
			/* a partition too large for the budget goes straight to a run */
			elog(DEBUG1, "qidrisk: writing a received partition of " INT64_FORMAT
				 " classes to a temporary file", partition->nencoded);
			writer = palloc(sizeof(RunWriter));
			BeginRun(writer, state, partition);
			qidrisk_freq_events.partitions_to_runs++;
		}
		else if (partition->nencoded > 0)
		{
			GrowClassArray(state, partition, partition->nencoded);
			qidrisk_freq_events.partitions_decoded++;
		}
		for (;;)
		{
			int64		n = source.end - source.at;

			if (writer != NULL)
				WriteRunClasses(writer, source.at, n);
			else if (n > 0)
			{
				memcpy(partition->classes + partition->nclasses, source.at,
					   n * sizeof(CountedClass));
				partition->nclasses += n;
				for (int64 i = 0; i < n; i++)
					CountClassInto(&in_memory, source.at[i].count);
			}
			if (source.left == 0)
				break;
			RefillSource(&source);
		}
		CloseSource(&source);
		if (writer != NULL)
		{
			EndRun(writer);
			pfree(writer);
		}
		partition->encoded = NULL;
		partition->in_file = false;
	}
	state->rows = in_memory.rows;
	state->classes = in_memory.classes;
	state->singletons = in_memory.singletons;
	ReleaseEncoded(state);
	state->streamed = false;
}

/*
 * Read an ascending stream of nclasses classes in a message.  One pass
 * validates it and finds where each partition starts.  A partitioned state
 * then keeps a copy of the encoded classes, which readers merge straight
 * from the encoding and anything else decodes first (DecodePartitions), if
 * the copy fits the budget; otherwise the partitions are decoded now.  A
 * state too small to be partitioned adds the classes.
 */
static void
DeserializeAscending(FreqState *state, StringInfo buf, int64 nclasses, int64 rows)
{
	const char *start = buf->data + buf->cursor;
	const char *end = buf->data + buf->len;
	const char *at = start;
	int64		sizes[PARTITIONS] = {0};
	const char *starts[PARTITIONS];
	uint64		bases[PARTITIONS] = {0};
	CountedClass class = {{0, 0}, 0};
	uint64		previous_hi = 0;
	FreqCounts	seen = {0, 0, 0};
	int			p = 0;

	starts[0] = start;
	for (int64 i = 0; i < nclasses; i++)
	{
		QidFingerprint previous = class.key;
		const char *before = at;

		if ((i & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		if (!ReadAscendingClass(&at, end, &previous_hi, &class))
			FreqStateCorrupt("The state's classes are truncated.");
		if (class.key.hi < previous.hi ||
			(i > 0 && class.key.hi == previous.hi && class.key.lo <= previous.lo))
			FreqStateCorrupt("The state's classes are not in ascending order.");
		if (class.count <= 0 || class.count > rows - seen.rows)
			FreqStateCorrupt("A class of the state has an impossible size.");
		CountClassInto(&seen, class.count);
		/* ascending fingerprints fill partition 0, then 1, ... in order */
		while (p < PartitionOf(&class.key))
		{
			p++;
			starts[p] = before;
			bases[p] = previous.hi;
		}
		sizes[p]++;
	}
	if (at != end)
		FreqStateCorrupt("The state's length does not match its number of classes.");
	buf->cursor = buf->len;
	while (p < PARTITIONS - 1)
	{
		p++;
		starts[p] = end;
		bases[p] = class.key.hi;
	}

	if (state->single != NULL)
	{
		previous_hi = 0;
		at = start;
		for (int64 i = 0; i < nclasses; i++)
		{
			(void) ReadAscendingClass(&at, end, &previous_hi, &class);
			AddClass(state, &class.key, class.count);
		}
		return;
	}

	/* keep the encoding if it fits the budget (a copy of a message's), else decode it now */
	state->encoded_bytes = end - start;
	state->encoded = (char *) start;
	if (state->memory + (double) state->encoded_bytes <= (double) state->budget)
	{
		MappedCopy *mapped = MapCopy(state->context, state->encoded_bytes);

		memcpy(mapped->base, start, state->encoded_bytes);
		state->encoded = mapped->base;
		state->encoded_copy = mapped;
		state->memory += (double) state->encoded_bytes;
	}
	for (p = 0; p < PARTITIONS; p++)
	{
		state->parts[p].encoded = state->encoded + (starts[p] - start);
		state->parts[p].encoded_end = state->encoded + (end - start);
		state->parts[p].nencoded = sizes[p];
		state->parts[p].encoded_base_hi = bases[p];
	}
	state->rows = seen.rows;
	state->classes = seen.classes;
	state->singletons = seen.singletons;
	if (state->encoded_copy == NULL)
		DecodePartitions(state);
}

/* A temporary file holding a worker's classes, as a message names it */
typedef struct HandoverFile
{
	FileSet		fileset;
	char		name[64];
	off_t		length;
} HandoverFile;

/*
 * A file the leader has read, deleted when the memory context of the
 * aggregate that read it is reset (at the end of the query, on a rescan,
 * or when an error aborts the (sub)transaction): a state shared by several
 * aggregates is written once, and the finalize may read it for each of
 * them.  The subtransaction that read it is kept, so that the end of a
 * subtransaction deletes no file a (sub)transaction still running reads
 * (FreqStateRemoveHandoverFiles).
 */
typedef struct ReadFile
{
	dlist_node	node;
	HandoverFile handover;
	SubTransactionId subid;
	MemoryContextCallback delete;
} ReadFile;

/* The files read and not yet deleted */
static dlist_head read_files = DLIST_STATIC_INIT(read_files);

/* Memory context reset callback: delete a file read, also during an abort */
static void
DeleteReadFile(void *arg)
{
	ReadFile   *read = (ReadFile *) arg;

	dlist_delete(&read->node);
	(void) FileSetDelete(&read->handover.fileset, read->handover.name, false);
}

/* Have a file read deleted with context, unless it is already to be */
static void
DeleteWithContext(MemoryContext context, const HandoverFile *handover)
{
	dlist_iter	iter;
	ReadFile   *read;

	dlist_foreach(iter, &read_files)
	{
		read = dlist_container(ReadFile, node, iter.cur);
		if (strcmp(read->handover.name, handover->name) == 0)
			return;
	}
	read = MemoryContextAlloc(context, sizeof(ReadFile));
	read->handover = *handover;
	read->subid = GetCurrentSubTransactionId();
	read->delete.func = DeleteReadFile;
	read->delete.arg = read;
	MemoryContextRegisterResetCallback(context, &read->delete);
	dlist_push_tail(&read_files, &read->node);
}

/* The file set where parallel workers leave their states for leader_pid */
static void
HandoverFileSet(FileSet *fileset, int32 leader_pid)
{
	/* the worker's temporary tablespaces, as it would spill */
	FileSetInit(fileset);
	fileset->creator_pid = leader_pid;
	fileset->number = HANDOVER_FILESET_NUMBER;
}

/* The name of a worker's file: its process and a number it has not used */
static void
HandoverFileName(char *name, int32 sender_pid, uint32 sequence)
{
	snprintf(name, sizeof(((HandoverFile *) NULL)->name), "qidrisk.%d.%u",
			 sender_pid, sequence);
}

/* What a file message says about its file (FreqStateSendFile) */
typedef struct FileReference
{
	HandoverFile handover;
	off_t		offsets[PARTITIONS];	/* where each partition's classes start */
	FreqCounts	counts[PARTITIONS]; /* what each partition holds */
} FileReference;

/*
 * Read a file message's reference to its file: it must be for this process
 * and statement, in this process's file set, its partitions in order within
 * the file
 */
static void
ReadFileReference(StringInfo buf, FileReference *reference)
{
	HandoverFile *handover = &reference->handover;
	int32		leader_pid;
	int64		statement_start;
	int32		sender_pid;
	uint32		sequence;
	int			ntablespaces;

	if (buf->len - buf->cursor < (int) (4 * sizeof(int32) + 2 * sizeof(int64)))
		FreqStateCorrupt("The state's file reference is truncated.");
	leader_pid = pq_getmsgint(buf, sizeof(int32));
	statement_start = pq_getmsgint64(buf);
	sender_pid = pq_getmsgint(buf, sizeof(int32));
	sequence = (uint32) pq_getmsgint(buf, sizeof(int32));
	handover->length = (off_t) pq_getmsgint64(buf);
	ntablespaces = pq_getmsgint(buf, sizeof(int32));
	if (leader_pid != MyProcPid || statement_start != GetCurrentStatementStartTimestamp())
		FreqStateCorrupt("The state's file was left for another process or statement.");
	if (ntablespaces < 1 || ntablespaces > (int) lengthof(handover->fileset.tablespaces) ||
		buf->len - buf->cursor < ntablespaces * (int) sizeof(Oid) +
		PARTITIONS * 4 * (int) sizeof(int64) || handover->length < 0)
		FreqStateCorrupt("The state's file reference is invalid.");
	handover->fileset.creator_pid = MyProcPid;
	handover->fileset.number = HANDOVER_FILESET_NUMBER;
	handover->fileset.ntablespaces = ntablespaces;
	for (int i = 0; i < ntablespaces; i++)
		handover->fileset.tablespaces[i] = (Oid) pq_getmsgint(buf, sizeof(Oid));
	HandoverFileName(handover->name, sender_pid, sequence);
	for (int p = 0; p < PARTITIONS; p++)
	{
		FreqCounts *counts = &reference->counts[p];
		off_t		previous = p == 0 ? 0 : reference->offsets[p - 1];

		reference->offsets[p] = (off_t) pq_getmsgint64(buf);
		counts->classes = pq_getmsgint64(buf);
		counts->rows = pq_getmsgint64(buf);
		counts->singletons = pq_getmsgint64(buf);
		if ((p == 0 && reference->offsets[p] != 0) || reference->offsets[p] < previous ||
			reference->offsets[p] > handover->length || counts->classes < 0 ||
			counts->rows < counts->classes || counts->singletons < 0 ||
			counts->singletons > counts->classes)
			FreqStateCorrupt("The state's file reference is invalid.");
	}
	/* a partition's classes take at least MIN_ASCENDING_CLASS_BYTES each */
	for (int p = 0; p < PARTITIONS; p++)
	{
		off_t		end = p + 1 < PARTITIONS ? reference->offsets[p + 1] : handover->length;

		if (reference->counts[p].classes >
			(end - reference->offsets[p]) / (off_t) MIN_ASCENDING_CLASS_BYTES)
			FreqStateCorrupt("The state's file reference is invalid.");
	}
}

/*
 * Let a received state read its classes from the worker's file, partition
 * by partition, as it merges them: nothing is read now.  The file is closed
 * with the state and deleted when the aggregate's context is reset.
 */
static void
AttachWorkerFile(FreqState *state, const FileReference *reference, MemoryContext context)
{
	const HandoverFile *handover = &reference->handover;
	FreqCounts	total = {0, 0, 0};
	File		file;

	/* the partitions' counts are not negative (ReadFileReference), so none exceeds the sum */
	for (int p = 0; p < PARTITIONS; p++)
		if (pg_add_s64_overflow(total.rows, reference->counts[p].rows, &total.rows) ||
			pg_add_s64_overflow(total.classes, reference->counts[p].classes, &total.classes) ||
			pg_add_s64_overflow(total.singletons, reference->counts[p].singletons,
								&total.singletons))
			FreqStateCorrupt("The state's classes do not add up to its header.");
	if (total.rows != state->rows || total.classes != state->classes ||
		total.singletons != state->singletons)
		FreqStateCorrupt("The state's classes do not add up to its header.");
	file = FileSetOpen((FileSet *) &handover->fileset, handover->name, O_RDONLY | PG_BINARY);
	if (file <= 0)
		FreqStateCorrupt("The state's file is no longer available.");
	DeleteWithContext(context, handover);
	qidrisk_freq_events.files_received++;
	state->encoded_file = MemoryContextAlloc(state->context, sizeof(EncodedFile));
	state->encoded_file->file = file;
	state->encoded_file->close.func = CloseEncodedFile;
	state->encoded_file->close.arg = state->encoded_file;
	MemoryContextRegisterResetCallback(state->context, &state->encoded_file->close);
	if (FileSize(file) != handover->length)
		FreqStateCorrupt("The state's file does not have the length its message says.");
	Assert(state->single == NULL);
	for (int p = 0; p < PARTITIONS; p++)
	{
		FreqPartition *partition = &state->parts[p];

		partition->in_file = true;
		partition->file_offset = reference->offsets[p];
		partition->file_length = (p + 1 < PARTITIONS ? reference->offsets[p + 1] :
								  handover->length) - reference->offsets[p];
		partition->file_counts = reference->counts[p];
		partition->nencoded = reference->counts[p].classes;
	}
	state->streamed = false;
}

/*
 * Rebuild a state from FreqStateSerialize's or FreqStateSendFile's output,
 * validating everything.
 */
FreqState *
FreqStateDeserialize(MemoryContext context, bytea *bytes)
{
	StringInfoData buf;
	FreqState  *state;
	int64		rows;
	int64		singletons;
	int64		nclasses;
	int			has_param;
	double		param;
	int64		running_rows;
	int			version;
	int			encoding;
	FreqCounts	spilled;
	FileReference reference;

	buf.data = VARDATA_ANY(bytes);
	buf.len = VARSIZE_ANY_EXHDR(bytes);
	buf.maxlen = buf.len;
	buf.cursor = 0;

	if (buf.len < 2)
		FreqStateCorrupt("The state is shorter than its header.");
	version = pq_getmsgbyte(&buf);
	if (version != QIDRISK_STATE_FORMAT_VERSION)
		FreqStateCorrupt("The state was written in an unknown format version.");
	encoding = pq_getmsgbyte(&buf);
	if (encoding == ENCODING_LENT)
		return ReclaimLentState(context, &buf);
	if (encoding == ENCODING_FILE)
		ReadFileReference(&buf, &reference);
	else if (encoding != ENCODING_FIXED && encoding != ENCODING_ASCENDING)
		FreqStateCorrupt("The state's classes are in an unknown encoding.");
	if (buf.len - buf.cursor < (int) SERIALIZED_HEADER_BYTES - 2)
		FreqStateCorrupt("The state is shorter than its header.");
	rows = pq_getmsgint64(&buf);
	singletons = pq_getmsgint64(&buf);
	has_param = pq_getmsgbyte(&buf);
	param = pq_getmsgfloat8(&buf);
	nclasses = pq_getmsgint64(&buf);
	if (rows < 0 || singletons < 0 || has_param > 1 || isnan(param) || isinf(param) ||
		(has_param == 0 && param != 0) || nclasses < 0 || nclasses > rows ||
		singletons > nclasses)
		FreqStateCorrupt("The state's header holds impossible counts.");
	if (encoding == ENCODING_FIXED &&
		(double) (buf.len - buf.cursor) != (double) nclasses * SERIALIZED_CLASS_BYTES)
		FreqStateCorrupt("The state's length does not match its number of classes.");

	/*
	 * A worker's file holds a partitioned state, whose classes are read
	 * partition by partition: so is the state that reads them, whatever
	 * its class count would suggest (the worker decided by its own memory)
	 */
	state = CreateState(context, (Size) nclasses, encoding == ENCODING_FILE);
	state->private_copy = true;
	running_rows = 0;
	state->has_param = (has_param == 1);
	state->param = param;
	memset(&spilled, 0, sizeof(spilled));
	if (encoding == ENCODING_ASCENDING)
		DeserializeAscending(state, &buf, nclasses, rows);
	else if (encoding == ENCODING_FILE)
	{
		state->rows = rows;
		state->classes = nclasses;
		state->singletons = singletons;
		AttachWorkerFile(state, &reference, context);
	}
	for (int64 i = 0; encoding == ENCODING_FIXED && i < nclasses; i++)
	{
		QidFingerprint fp;
		int64		count;

		if ((i & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		fp.lo = (uint64) pq_getmsgint64(&buf);
		fp.hi = (uint64) pq_getmsgint64(&buf);
		count = pq_getmsgint64(&buf);
		if (count <= 0 || count > rows - running_rows)
			FreqStateCorrupt("A class of the state has an impossible size.");
		running_rows += count;
		AddClass(state, &fp, count);
	}
	pq_getmsgend(&buf);
	FreqStateSettle(state);

	/*
	 * The in-memory counters leave out what went to run files (also runs
	 * split off while the classes were added): then count by streaming.
	 */
	if (HasRuns(state))
	{
		FreqStateCounts(state, &spilled);
		spilled.rows -= state->rows;
		spilled.classes -= state->classes;
		spilled.singletons -= state->singletons;
	}
	if (state->rows + spilled.rows != rows ||
		state->singletons + spilled.singletons != singletons ||
		state->classes + spilled.classes != nclasses)
		FreqStateCorrupt("The state's classes do not add up to its header.");
	return state;
}

/*
 * Send a parallel worker's state to its leader through a temporary file
 * instead of the tuple queue: the classes in the ascending encoding go to a
 * new file of the leader's file set (HandoverFileSet), written through a
 * buffer, and the message names the file, says where each partition starts
 * and what it holds, and holds the header.  The leader reads nothing in
 * advance: its merges read each partition from the file through a window
 * as they need it (AttachWorkerFile), and it deletes the file at the end
 * of the query; a file a failed statement left is deleted when its
 * subtransaction is rolled back or at the end of the leader's transaction
 * (FreqStateRemoveHandoverFiles).  A state shared by several aggregates is
 * written once, and the same message returned for each.  The classes cross
 * once as file writes and reads, which cost far less than writing and then
 * mapping the same bytes as shared memory, a small page at a time.  A
 * spilled state streams its runs into the file, which is bounded by no
 * budget or message size.  Returns NULL for a state that is not
 * partitioned, whose encoding could take less than HANDOVER_FROM_BYTES, or
 * when temp_file_limit is set: that is serialized as usual.  The caller
 * guarantees that the message goes to the leader's finalize aggregate in
 * this statement (see FreqStateHandOver).
 */
bytea *
FreqStateSendFile(FreqState *state, int32 leader_pid, int64 statement_start)
{
	static uint32 sequence = 0;
	HandoverFile handover;
	AscendingWriter writer = MEMORY_WRITER;
	StringInfoData buf;
	bool		arrays_only;
	Size		write_bytes;

	/* a state shared by several aggregates is written once */
	if (state->sent != NULL)
		return (bytea *) pg_detoast_datum_copy((struct varlena *) state->sent);

	/*
	 * Under temp_file_limit the file would have to fit beside the temporary
	 * files this process already has open (its spilled runs, other nodes'
	 * files), which fd.c does not tell: past the limit the write would fail
	 * where the tuple queue does not
	 */
	if (temp_file_limit >= 0)
		return NULL;
	FlushHeldRows(state);
	if (state->single != NULL || state->windowed)
		return NULL;
	if (state->attached == NULL && !HasRuns(state) && !Undecoded(state) &&
		!state->buffers_sorted)
		SortBuffersInPlace(state);
	/* sorting may have spilled */
	arrays_only = state->attached == NULL && !HasRuns(state) && !Undecoded(state);
	if (arrays_only)
	{
		if (AscendingBound(state) < HANDOVER_FROM_BYTES)
			return NULL;
	}
	else
		DrainBuffers(state);

	if (sequence == 0)
		sequence = (uint32) pg_prng_uint64(&pg_global_prng_state) | 1;
	sequence++;
	HandoverFileSet(&handover.fileset, leader_pid);
	HandoverFileName(handover.name, MyProcPid, sequence);
	writer.file = FileSetCreate(&handover.fileset, handover.name);
	/* like a merge's buffers, within 1/32 of the budget */
	write_bytes = Max(MIN_WINDOW_BYTES, Min(HANDOVER_WRITE_BYTES, state->budget / 32));
	writer.buffer = palloc(write_bytes + MAX_ASCENDING_CLASS_BYTES);
	writer.out = writer.buffer;
	writer.flush_at = (uintptr_t) (writer.buffer + write_bytes);
	writer.by_partition = true;
	if (arrays_only)
		WriteAscendingArrays(state, &writer);
	else
		ForEachClass(state, WriteAscendingClass, &writer);
	/* partitions past the last class are empty, at the end */
	while (writer.partition < PARTITIONS - 1)
		StartPartition(&writer, writer.out);
	(void) FlushAscending(&writer, writer.out);
	FileClose(writer.file);
	pfree(writer.buffer);
	elog(DEBUG1, "qidrisk: a parallel worker hands over its partial state in a temporary file");

	pq_begintypsend(&buf);
	pq_sendbyte(&buf, QIDRISK_STATE_FORMAT_VERSION);
	pq_sendbyte(&buf, ENCODING_FILE);
	pq_sendint32(&buf, leader_pid);
	pq_sendint64(&buf, statement_start);
	pq_sendint32(&buf, MyProcPid);
	pq_sendint32(&buf, (int32) sequence);
	pq_sendint64(&buf, (int64) writer.written);
	pq_sendint32(&buf, handover.fileset.ntablespaces);
	for (int i = 0; i < handover.fileset.ntablespaces; i++)
		pq_sendint32(&buf, (int32) handover.fileset.tablespaces[i]);
	for (int p = 0; p < PARTITIONS; p++)
	{
		pq_sendint64(&buf, (int64) writer.offsets[p]);
		pq_sendint64(&buf, writer.counts[p].classes);
		pq_sendint64(&buf, writer.counts[p].rows);
		pq_sendint64(&buf, writer.counts[p].singletons);
	}
	SendHeader(&buf, &writer.seen, state);
	state->sent = (bytea *) MemoryContextAlloc(state->context, buf.len);
	SET_VARSIZE(buf.data, buf.len);
	memcpy(state->sent, buf.data, buf.len);
	return pq_endtypsend(&buf);
}

/* The directory of this process's hand-over file set in a tablespace (as FileSetPath) */
static void
HandoverDirectory(char *path, Oid tablespace)
{
	char		tempdir[MAXPGPATH];

	TempTablespacePath(tempdir, tablespace);
	snprintf(path, MAXPGPATH, "%s/%s%lu.%u.fileset", tempdir, PG_TEMP_FILE_PREFIX,
			 (unsigned long) MyProcPid, HANDOVER_FILESET_NUMBER);
}

/* Whether a (sub)transaction older than aborted, which goes on, has read the file name */
static bool
ReadBefore(const char *name, SubTransactionId aborted)
{
	dlist_iter	iter;

	dlist_foreach(iter, &read_files)
	{
		ReadFile   *read = dlist_container(ReadFile, node, iter.cur);

		if (read->subid < aborted && strcmp(read->handover.name, name) == 0)
			return true;
	}
	return false;
}

/*
 * Delete the files of a hand-over directory but those that (sub)transactions
 * older than aborted have read, and the directory if it is then empty
 */
static void
SweepHandoverDirectory(const char *path, SubTransactionId aborted)
{
	struct stat st;
	DIR		   *dir;
	struct dirent *de;
	bool		kept = false;

	if (stat(path, &st) != 0)
		return;
	dir = AllocateDir(path);
	while ((de = ReadDirExtended(dir, path, LOG)) != NULL)
	{
		char		file[MAXPGPATH];

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (ReadBefore(de->d_name, aborted))
		{
			kept = true;
			continue;
		}
		snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
		(void) PathNameDeleteTemporaryFile(file, false);
	}
	FreeDir(dir);
	if (!kept && rmdir(path) != 0 && errno != ENOENT && errno != ENOTEMPTY)
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not remove directory \"%s\": %m", path)));
}

/*
 * Delete what parallel workers left for this process and it did not read or
 * has read (a statement that failed, or that succeeded in a transaction
 * now ending), with the directories: at the end of every transaction of a
 * process that has led parallel workers (aborted: InvalidSubTransactionId),
 * and when one of its subtransactions is rolled back, while none of its
 * parallel queries runs (aborted: that subtransaction; files that older
 * subtransactions read stay).  In every tablespace: the workers placed
 * their files by the temp_tablespaces of their query, which may have
 * changed since and cannot be looked up during an abort; a stat of one
 * directory for each tablespace.
 */
void
FreqStateRemoveHandoverFiles(SubTransactionId aborted)
{
	char		path[MAXPGPATH];
	DIR		   *dir;
	struct dirent *de;

	HandoverDirectory(path, DEFAULTTABLESPACE_OID);
	SweepHandoverDirectory(path, aborted);
	dir = AllocateDir("pg_tblspc");
	while ((de = ReadDirExtended(dir, "pg_tblspc", LOG)) != NULL)
	{
		if (strspn(de->d_name, "0123456789") != strlen(de->d_name))
			continue;
		HandoverDirectory(path, atooid(de->d_name));
		SweepHandoverDirectory(path, aborted);
	}
	FreeDir(dir);
}
