/*
 * freqstate.c
 *	  The frequency state: a hash table from QID fingerprint to class size.
 *
 * Every frequency aggregate shares this state, so one scan and one table serve
 * singleton_count, class_count, k_anonymity and class_profile in one query.
 *
 * A small state is one hash table.  Past PARTITION_AFTER_CLASSES classes the
 * state splits into PARTITIONS tables by the fingerprint's top bits, and new
 * rows are first buffered per partition and inserted a buffer at a time: each
 * partition's table is small enough to stay in cache while its buffer drains,
 * which is what makes counting ten million classes cheap (the same idea as
 * radix-partitioned hash aggregation).  Counters (rows, singletons) include
 * buffered rows only after FreqStateSettle, which every reader calls.
 *
 * All tables together are bounded by qidrisk.max_state_memory.
 */
#include "postgres.h"

#include <math.h>

#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"

#include "qidrisk.h"

/* Fraction of a table's buckets in use before it doubles */
#define TABLE_FILLFACTOR 0.9

/* Fingerprints are already uniform hashes: use 32 of their bits directly */
#define SH_PREFIX freqhash
#define SH_FILLFACTOR TABLE_FILLFACTOR
#define SH_ELEMENT_TYPE FreqEntry
#define SH_KEY_TYPE QidFingerprint
#define SH_KEY key
#define SH_HASH_KEY(tb, k) ((uint32) ((k).lo >> 32))
#define SH_EQUAL(tb, a, b) ((a).lo == (b).lo && (a).hi == (b).hi)
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/* Partitioning: by the top PARTITION_BITS bits of the fingerprint's high half */
#define PARTITION_BITS 8
#define PARTITIONS (1 << PARTITION_BITS)
#define PartitionOf(fp) ((int) ((fp)->hi >> (64 - PARTITION_BITS)))

/* Split into partitions once a single table holds this many classes */
#define PARTITION_AFTER_CLASSES 65536

/* Rows buffered per partition before they are inserted into its table */
#define PENDING_PER_PARTITION 256

/* Bytes per serialized class: two fingerprint halves and a count */
#define SERIALIZED_CLASS_BYTES (3 * sizeof(int64))

/* Header: version byte, rows, singletons, k, number of classes */
#define SERIALIZED_HEADER_BYTES (1 + 3 * sizeof(int64) + sizeof(int32))

/* How often long loops check for cancellation */
#define INTERRUPT_CHECK_MASK 0xFFFF

struct FreqPartition
{
	freqhash_hash *table;
	int			npending;
	QidFingerprint pending[PENDING_PER_PARTITION];
};

/* Stop with an error naming the setting that bounds a state's memory */
static void
ReportBudgetExceeded(int64 classes, double bytes, Size budget)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("qidrisk frequency state exceeds qidrisk.max_state_memory"),
			 errdetail("The state holds " INT64_FORMAT " classes; its hash tables "
					   "would take %.0f kB, the budget is %zu kB.",
					   classes, ceil(bytes / 1024.0), budget / 1024),
			 errhint("Raise qidrisk.max_state_memory (or work_mem when it is -1), "
					 "or aggregate fewer rows per group.")));
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
	double		bytes = TableBytesFor(nclasses);

	if (state->memory + bytes > (double) state->budget)
		ReportBudgetExceeded(state->classes + (int64) nclasses,
							 state->memory + bytes, state->budget);
	table = freqhash_create(state->context, nclasses, NULL);
	state->memory += (double) table->size * sizeof(FreqEntry);
	return table;
}

/* Release a table and its share of the budget */
static void
DestroyTable(FreqState *state, freqhash_hash *table)
{
	state->memory -= (double) table->size * sizeof(FreqEntry);
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

		if (next > (double) state->budget)
			ReportBudgetExceeded(state->classes, next, state->budget);
	}

	entry = freqhash_insert(table, *fp, &found);

	if (unlikely(table->size != size_before))
	{
		state->memory += (double) (table->size - size_before) * sizeof(FreqEntry);
		if (state->memory > (double) state->budget)
			ReportBudgetExceeded(state->classes, state->memory, state->budget);
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

/* Insert a partition's buffered rows into its table */
static void
DrainPartition(FreqState *state, FreqPartition *partition)
{
	for (int i = 0; i < partition->npending; i++)
		InsertIntoTable(state, partition->table, &partition->pending[i], 1);
	partition->npending = 0;
}

/* Split the single table into partitions sized for about nclasses classes */
static void
Partition(FreqState *state, Size nclasses)
{
	freqhash_hash *single = state->single;
	Size		per_partition = Max(nclasses / PARTITIONS, 64);
	double		buffers = (double) PARTITIONS * sizeof(FreqPartition);

	if (state->memory + buffers > (double) state->budget)
		ReportBudgetExceeded(state->classes, state->memory + buffers, state->budget);
	state->parts = MemoryContextAllocHuge(state->context, PARTITIONS * sizeof(FreqPartition));
	state->memory += buffers;
	for (int p = 0; p < PARTITIONS; p++)
	{
		state->parts[p].table = CreateTable(state, per_partition);
		state->parts[p].npending = 0;
	}

	state->single = NULL;
	if (single != NULL)
	{
		freqhash_iterator iterator;
		FreqEntry  *entry;
		int64		rows = state->rows;
		int64		singletons = state->singletons;
		int64		classes = state->classes;

		/* moving entries leaves the counters as they were */
		freqhash_start_iterate(single, &iterator);
		while ((entry = freqhash_iterate(single, &iterator)) != NULL)
			InsertIntoTable(state, state->parts[PartitionOf(&entry->key)].table,
							&entry->key, entry->count);
		state->rows = rows;
		state->singletons = singletons;
		state->classes = classes;
		DestroyTable(state, single);
	}
}

/* Create an empty state in context, sized for about nclasses classes */
FreqState *
FreqStateCreate(MemoryContext context, Size nclasses)
{
	FreqState  *state = MemoryContextAllocZero(context, sizeof(FreqState));

	state->context = context;
	state->budget = QidStateMemoryBudget();
	state->memory = sizeof(FreqState);
	if (nclasses > PARTITION_AFTER_CLASSES)
		Partition(state, nclasses);
	else
		state->single = CreateTable(state, Max(nclasses, 64));
	return state;
}

/* Count one row of class fp */
void
FreqStateAddRow(FreqState *state, const QidFingerprint *fp)
{
	FreqPartition *partition;

	if (state->single != NULL)
	{
		InsertIntoTable(state, state->single, fp, 1);
		/* a window aggregate reads its state after every row: keep it settled */
		if (unlikely(state->classes > PARTITION_AFTER_CLASSES) && !state->windowed)
			Partition(state, (Size) state->classes * 2);
		return;
	}

	partition = &state->parts[PartitionOf(fp)];
	partition->pending[partition->npending++] = *fp;
	state->unsettled = true;
	if (partition->npending == PENDING_PER_PARTITION)
		DrainPartition(state, partition);
}

/* Add count rows of class fp directly into its table */
static void
AddClass(FreqState *state, const QidFingerprint *fp, int64 count)
{
	if (state->single != NULL)
	{
		InsertIntoTable(state, state->single, fp, count);
		if (unlikely(state->classes > PARTITION_AFTER_CLASSES) && !state->windowed)
			Partition(state, (Size) state->classes * 2);
	}
	else
		InsertIntoTable(state, state->parts[PartitionOf(fp)].table, fp, count);
}

/* Insert every buffered row, so the counters and tables are complete */
void
FreqStateSettle(FreqState *state)
{
	if (!state->unsettled)
		return;
	for (int p = 0; p < PARTITIONS; p++)
	{
		CHECK_FOR_INTERRUPTS();
		DrainPartition(state, &state->parts[p]);
	}
	state->unsettled = false;
}

/* The table holding class fp, or the single table */
static freqhash_hash *
TableOf(FreqState *state, const QidFingerprint *fp)
{
	return state->single ? state->single : state->parts[PartitionOf(fp)].table;
}

/* Take one row of class fp out again (inverse transition of a moving window) */
void
FreqStateRemoveRow(FreqState *state, const QidFingerprint *fp)
{
	freqhash_hash *table;
	FreqEntry  *entry;

	FreqStateSettle(state);
	table = TableOf(state, fp);
	entry = freqhash_lookup(table, *fp);
	if (entry == NULL)
		elog(ERROR, "qidrisk: removing a row that was never added");

	if (entry->count == 1)
	{
		state->singletons--;
		state->classes--;
		freqhash_delete_item(table, entry);
	}
	else
	{
		entry->count--;
		if (entry->count == 1)
			state->singletons++;
	}
	state->rows--;
}

/* Call visit for every class of a state, partition by partition */
typedef void (*EntryVisitor) (FreqEntry *entry, void *arg);

static void
ForEachEntry(FreqState *state, EntryVisitor visit, void *arg)
{
	int			ntables = state->single ? 1 : PARTITIONS;
	uint64		visited = 0;

	FreqStateSettle(state);
	for (int p = 0; p < ntables; p++)
	{
		freqhash_hash *table = state->single ? state->single : state->parts[p].table;
		freqhash_iterator iterator;
		FreqEntry  *entry;

		freqhash_start_iterate(table, &iterator);
		while ((entry = freqhash_iterate(table, &iterator)) != NULL)
		{
			if ((++visited & INTERRUPT_CHECK_MASK) == 0)
				CHECK_FOR_INTERRUPTS();
			visit(entry, arg);
		}
	}
}

static void
MergeEntry(FreqEntry *entry, void *arg)
{
	AddClass((FreqState *) arg, &entry->key, entry->count);
}

/* Add every class of from into into */
void
FreqStateMerge(FreqState *into, FreqState *from)
{
	FreqStateSettle(into);
	FreqStateSettle(from);

	if (into->k == 0)
		into->k = from->k;
	else if (from->k != 0 && from->k != into->k)
		elog(ERROR, "qidrisk: cannot merge states with different k");

	if (into->single != NULL && !into->windowed &&
		into->classes + from->classes > PARTITION_AFTER_CLASSES)
		Partition(into, (Size) (into->classes + from->classes));

	/* the source is read partition by partition, so targets stay in cache */
	ForEachEntry(from, MergeEntry, into);
}

/* Release a state's memory; the state must not be used afterwards */
void
FreqStateFree(FreqState *state)
{
	if (state->single != NULL)
		DestroyTable(state, state->single);
	else
	{
		for (int p = 0; p < PARTITIONS; p++)
			DestroyTable(state, state->parts[p].table);
		pfree(state->parts);
	}
	pfree(state);
}

int64
FreqStateRows(FreqState *state)
{
	FreqStateSettle(state);
	return state->rows;
}

int64
FreqStateSingletons(FreqState *state)
{
	FreqStateSettle(state);
	return state->singletons;
}

int64
FreqStateClasses(FreqState *state)
{
	FreqStateSettle(state);
	return state->classes;
}

typedef struct VisitContext
{
	FreqVisitor visitor;
	void	   *arg;
} VisitContext;

static void
VisitEntry(FreqEntry *entry, void *arg)
{
	VisitContext *context = (VisitContext *) arg;

	context->visitor(entry->count, context->arg);
}

/* Call visitor with the size of every class */
void
FreqStateVisit(FreqState *state, FreqVisitor visitor, void *arg)
{
	VisitContext context = {visitor, arg};

	ForEachEntry(state, VisitEntry, &context);
}

static void
SerializeEntry(FreqEntry *entry, void *arg)
{
	StringInfo	buf = (StringInfo) arg;

	pq_sendint64(buf, (int64) entry->key.lo);
	pq_sendint64(buf, (int64) entry->key.hi);
	pq_sendint64(buf, entry->count);
}

/*
 * Serialize: format version, rows, singletons, k, class count, then each
 * class as (fingerprint low, fingerprint high, size), partition by partition.
 */
bytea *
FreqStateSerialize(FreqState *state)
{
	StringInfoData buf;
	double		bytes;

	FreqStateSettle(state);
	bytes = SERIALIZED_HEADER_BYTES + VARHDRSZ +
		(double) state->classes * SERIALIZED_CLASS_BYTES;
	if (bytes > MaxAllocSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("qidrisk frequency state too large to serialize"),
				 errdetail("The state holds " INT64_FORMAT " classes; at most %zu fit in one message.",
						   state->classes,
						   (Size) ((MaxAllocSize - SERIALIZED_HEADER_BYTES - VARHDRSZ) /
								   SERIALIZED_CLASS_BYTES)),
				 errhint("Disable parallel aggregation (max_parallel_workers_per_gather = 0) "
						 "or aggregate fewer rows per group.")));

	pq_begintypsend(&buf);
	enlargeStringInfo(&buf, (int) bytes);
	pq_sendbyte(&buf, QIDRISK_STATE_FORMAT_VERSION);
	pq_sendint64(&buf, state->rows);
	pq_sendint64(&buf, state->singletons);
	pq_sendint32(&buf, state->k);
	pq_sendint64(&buf, state->classes);
	ForEachEntry(state, SerializeEntry, &buf);
	return pq_endtypsend(&buf);
}

/* Raise the error for a serialized state that does not parse */
static void
CorruptState(const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg("invalid qidrisk frequency state"),
			 errdetail("%s", detail)));
}

/* Rebuild a state from FreqStateSerialize's output, validating everything */
FreqState *
FreqStateDeserialize(MemoryContext context, bytea *bytes)
{
	StringInfoData buf;
	FreqState  *state;
	int64		rows;
	int64		singletons;
	int64		nclasses;
	int32		k;
	int			version;

	buf.data = VARDATA_ANY(bytes);
	buf.len = VARSIZE_ANY_EXHDR(bytes);
	buf.maxlen = buf.len;
	buf.cursor = 0;

	if (buf.len < (int) SERIALIZED_HEADER_BYTES)
		CorruptState("The state is shorter than its header.");
	version = pq_getmsgbyte(&buf);
	if (version != QIDRISK_STATE_FORMAT_VERSION)
		CorruptState("The state was written in an unknown format version.");
	rows = pq_getmsgint64(&buf);
	singletons = pq_getmsgint64(&buf);
	k = pq_getmsgint(&buf, 4);
	nclasses = pq_getmsgint64(&buf);
	if (rows < 0 || singletons < 0 || k < 0 || nclasses < 0 || nclasses > rows ||
		singletons > nclasses)
		CorruptState("The state's header holds impossible counts.");
	if ((double) (buf.len - buf.cursor) != (double) nclasses * SERIALIZED_CLASS_BYTES)
		CorruptState("The state's length does not match its number of classes.");

	state = FreqStateCreate(context, (Size) nclasses);
	state->private_copy = true;
	state->k = k;
	for (int64 i = 0; i < nclasses; i++)
	{
		QidFingerprint fp;
		int64		count;

		if ((i & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		fp.lo = (uint64) pq_getmsgint64(&buf);
		fp.hi = (uint64) pq_getmsgint64(&buf);
		count = pq_getmsgint64(&buf);
		if (count <= 0 || count > rows - state->rows)
			CorruptState("A class of the state has an impossible size.");
		AddClass(state, &fp, count);
	}
	pq_getmsgend(&buf);

	if (state->rows != rows || state->singletons != singletons ||
		state->classes != nclasses)
		CorruptState("The state's classes do not add up to its header.");
	return state;
}
