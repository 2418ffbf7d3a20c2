/*
 * freqstate.c
 *	  The frequency state: a hash table from QID fingerprint to class size.
 *
 * Every frequency aggregate shares this state, so one scan and one table serve
 * singleton_count, class_count, k_anonymity and class_profile in one query.
 *
 * A small state is one hash table.  Past PARTITION_AFTER_CLASSES classes a
 * serial aggregate's state holds its next rows in a row log (freqlog.c) while
 * they are mostly new classes, counted only when read; any other state, or
 * one whose rows repeat, splits into PARTITIONS partitions by the
 * fingerprint's top bits.  A partition keeps its classes as one array sorted
 * by fingerprint, 24 bytes a class, and appends new rows to an unsorted
 * buffer; a full buffer is sorted,
 * its equal fingerprints summed, and merged into the array in one linear pass
 * (a two-level log-structured merge).  Arrays grow in place, nothing is
 * rehashed, and combining two states is a merge of sorted arrays.  Counters
 * (rows, classes, singletons) include buffered rows only after
 * FreqStateSettle, which every reader calls.
 *
 * A row's class is counted in a front table of recent classes first
 * (FreqStateAddRow): 4,096 classes, direct-mapped, so that a state of few
 * classes counts a row by one compare; the state gives it up while most rows
 * miss it, and a group's state in a hashed aggregate (one of many held at
 * once) never starts one.  A _key aggregate's key (any uuid) is counted there
 * as it came, and its bits spread (QidKeyRemix) only as it leaves; keys the
 * front table does not hold are spread FREQ_KEY_BATCH at a time, so that
 * their mixes overlap.  A one-column int4 or date QID is counted per value
 * in a small table instead (FreqStateAddValue), each value being
 * fingerprinted once when a reader needs the classes.
 *
 * This file owns the state in memory: its front table, hash table, partitions
 * and buffers, when to log rows and to count the log in, settling them
 * (FreqStateSettle), and visiting its classes.  Spilling is freqspill.c's,
 * merging (and draining a buffer) freqmerge.c's, the row log freqlog.c's, and
 * the wire format (serialize, deserialize, hand-over) freqwire.c's.
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

#include "aggcommon.h"
#include "fingerprint.h"
#include "freqengine.h"
#include "freqlog.h"
#include "freqstate.h"
#include "hashkey.h"
#include "settings.h"

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

/*
 * The front table (FreqStateAddRow): 2^FRONT_BITS slots, started after
 * FRONT_START_ROWS rows, judged every FRONT_WINDOW rows, tried again
 * FRONT_RETRY rows after it was given up
 */
#define FRONT_BITS 12
#define FRONT_SLOTS (1 << FRONT_BITS)
#define FRONT_START_ROWS 4096
#define FRONT_WINDOW 16384
#define FRONT_RETRY (1 << 20)

/* Held values (FreqStateAddValue): 2^MIN_HELD_BITS slots at first, 2^MAX_HELD_BITS at most */
#define MIN_HELD_BITS 10
#define MAX_HELD_BITS 17


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
	qsort(classes, n, sizeof(CountedClass), CompareCountedClasses);
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
FreqState *
CreateState(MemoryContext context, Size nclasses, bool partitioned)
{
	FreqState  *state = MemoryContextAllocZero(context, sizeof(FreqState));

	state->context = context;
	state->budget = QidStateMemoryBudget();
	state->memory = sizeof(FreqState);
	state->held_multiplier = pg_prng_uint64(&pg_global_prng_state) | 1;
	state->front_countdown = FRONT_START_ROWS;
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

/*
 * The row log (freqlog.c): a serial plain or sorted aggregate's state that
 * may spill (one that may not makes the most of its budget as classes) past
 * PARTITION_AFTER_CLASSES classes holds its next rows as they come instead
 * of partitioning, while they stay mostly distinct (a row in LOG_REPEATS
 * new) and within the budget; a reader counts them with the table's classes
 * (CountLogInPlace), anything else counts them into the state (FlushLog).
 */
#define LOG_START_BYTES (sizeof(RowLog) + 65536.0 * sizeof(QidFingerprint))
#define LOG_REPEATS 1.25

static void FlushLog(FreqState *state);

static void
StartLog(FreqState *state)
{
	state->log = RowLogCreate(state->context);
	state->memory += (double) RowLogBytes(state->log);
	state->log_counted_table_rows = -1;
	qidrisk_freq_events.logs_started++;
}

/*
 * Log one row; a full log doubles, or is counted in when rows repeat or the
 * budget would have no room left to count it into arrays of classes
 */
static void
LogRow(FreqState *state, const QidFingerprint *fp)
{
	RowLog	   *log = state->log;
	RowLogShelf *shelf;
	double		added;
	double		as_classes;

	if (likely(RowLogAppend(log, fp)))
		return;
	shelf = RowLogShelfOf(log, fp);
	added = (double) (shelf->capacity * sizeof(QidFingerprint));
	as_classes = (double) (log->capacity + shelf->capacity + state->classes) * sizeof(CountedClass);
	if (state->memory + added + as_classes > (double) state->budget ||
		(double) log->sampled > LOG_REPEATS * RowLogDistinct(log))
	{
		FlushLog(state);
		AddClass(state, fp, 1);
		return;
	}
	RowLogGrow(log, shelf);
	state->memory += added;
	RowLogAppend(log, fp);
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
	{
		/* mostly new classes so far: the next rows go to a log instead */
		if (state->log == NULL && state->log_allowed && !state->log_off && SpillAllowed(state) &&
			state->memory + LOG_START_BYTES + (double) (state->classes + 65536) *
			sizeof(CountedClass) <= (double) state->budget)
			StartLog(state);
		else if (state->log == NULL)
			Partition(state);
		else if (state->memory > (double) state->budget)
			FlushLog(state);
	}
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
void
AddClass(FreqState *state, const QidFingerprint *fp, int64 count)
{
	if (state->log != NULL && count == 1)
		LogRow(state, fp);
	else if (state->single == NULL)
		BufferClass(state, fp, count);
	else if (count == 1)
		PendRow(state, fp);
	else
		AddToTable(state, fp, count);
}

/*
 * The front table: 2^FRONT_BITS slots, each one recent class and its rows,
 * direct-mapped.  A table of few classes counts a row there with one compare
 * and no probe; a row whose slot holds another class moves that class on to
 * the state.  A state judges it every FRONT_WINDOW rows, and gives it up for
 * FRONT_RETRY rows when it missed more often than it held.
 */

/* Slot of a class: multiply-shift by the state's random odd multiplier */
static inline FreqFrontSlot *
FrontSlot(const FreqState *state, const QidFingerprint *fp)
{
	return &state->front[((fp->lo ^ fp->hi) * state->front_multiplier) >> (64 - FRONT_BITS)];
}

/* Add count rows of a _key aggregate's key, its bits spread first */
static inline void
AddKeyClass(FreqState *state, const QidFingerprint *key, int64 count)
{
	QidFingerprint fp = *key;

	QidKeyRemix(&fp);
	AddClass(state, &fp, count);
}

/* Add a class leaving the front table to the state (a key is spread then) */
static inline void
AddFrontClass(FreqState *state, const FreqFrontSlot *slot)
{
	if (state->front_keys)
		AddKeyClass(state, &slot->key, slot->count);
	else
		AddClass(state, &slot->key, slot->count);
}

/* Move the front table's classes on to the state and free it; a new one may start wait rows later */
static void
FlushFront(FreqState *state, int64 wait)
{
	FreqFrontSlot *front = state->front;

	state->front_countdown = wait;
	if (front == NULL)
		return;
	/* taken out first: adding a class may partition the state, which flushes again */
	state->front = NULL;
	for (int i = 0; i < FRONT_SLOTS; i++)
		if (front[i].count > 0)
			AddFrontClass(state, &front[i]);
	state->memory -= (double) FRONT_SLOTS * sizeof(FreqFrontSlot);
	pfree(front);
}

/* Start the front table, keep it for another window, or give it up */
static void
JudgeFront(FreqState *state)
{
	double		bytes = (double) FRONT_SLOTS * sizeof(FreqFrontSlot);

	if (state->front != NULL)
	{
		if (state->front_misses > FRONT_WINDOW / 2)
		{
			FlushFront(state, FRONT_RETRY);
			qidrisk_freq_events.fronts_given_up++;
		}
		else
			state->front_countdown = FRONT_WINDOW;
	}
	else if (state->windowed || state->one_of_many)
		state->front_countdown = PG_INT64_MAX;
	else if (state->memory + bytes > (double) state->budget / 8)
		state->front_countdown = FRONT_RETRY;
	else
	{
		state->front = MemoryContextAllocZero(state->context, (Size) bytes);
		state->memory += bytes;
		state->front_multiplier = pg_prng_uint64(&pg_global_prng_state) | 1;
		state->front_countdown = FRONT_WINDOW;
		qidrisk_freq_events.fronts_started++;
	}
	state->front_misses = 0;
}

/*
 * Count one row of class fp in the front table, if the state keeps one;
 * false if it does not
 */
static inline bool
CountInFront(FreqState *state, const QidFingerprint *fp)
{
	FreqFrontSlot *slot;
	FreqFrontSlot evicted;

	if (unlikely(--state->front_countdown <= 0))
		JudgeFront(state);
	if (state->front == NULL)
		return false;
	slot = FrontSlot(state, fp);
	evicted = *slot;
	if (likely(evicted.key.lo == fp->lo && evicted.key.hi == fp->hi))
	{
		slot->count++;
		return true;
	}
	state->front_misses++;
	slot->key = *fp;
	slot->count = 1;
	if (evicted.count > 0)
		AddFrontClass(state, &evicted);
	return true;
}

/* Count one row of class fp */
void
FreqStateAddRow(FreqState *state, const QidFingerprint *fp)
{
	if (!CountInFront(state, fp))
		AddClass(state, fp, 1);
}

/* Remix and count the keys held back, all mixes first, so that they overlap */
static void
FlushKeys(FreqState *state)
{
	QidFingerprint keys[FREQ_KEY_BATCH];
	int			nkeys = state->nkeys;

	/* taken out first: a class added may partition the state, which flushes again */
	memcpy(keys, state->keys, nkeys * sizeof(QidFingerprint));
	state->nkeys = 0;
	for (int i = 0; i < nkeys; i++)
		QidKeyRemix(&keys[i]);
	for (int i = 0; i < nkeys; i++)
		AddClass(state, &keys[i], 1);
}

/* Count one row of a _key aggregate's key (any uuid), spread as the header says */
void
FreqStateAddKey(FreqState *state, const QidFingerprint *key)
{
	state->front_keys = true;
	if (CountInFront(state, key))
		return;
	/* a hashed aggregate's many states stay small: each key is spread alone */
	if (state->one_of_many)
	{
		AddKeyClass(state, key, 1);
		return;
	}
	if (unlikely(state->keys == NULL))
	{
		state->keys = MemoryContextAlloc(state->context, FREQ_KEY_BATCH * sizeof(QidFingerprint));
		state->memory += FREQ_KEY_BATCH * sizeof(QidFingerprint);
	}
	state->keys[state->nkeys++] = *key;
	if (state->nkeys == FREQ_KEY_BATCH)
		FlushKeys(state);
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

/* Count every row held back but the log's: the front table, keys, held values, then rows waiting for their buckets */
static void
FlushHeldBack(FreqState *state)
{
	if (state->front != NULL)
		FlushFront(state, FRONT_START_ROWS);
	if (state->nkeys > 0)
		FlushKeys(state);
	if (state->nring > 0)
		DrainHeldRing(state);
	if (state->nheld > 0)
		FlushHeld(state, false);
	if (state->npending > 0)
		FlushPending(state);
}

/* Count every row held back, the log's last */
void
FlushHeldRows(FreqState *state)
{
	FlushHeldBack(state);
	if (state->log != NULL)
		FlushLog(state);
}

/* Merge every partition's buffered rows into its array */
void
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
bool
HasRuns(const FreqState *state)
{
	if (state->parts == NULL)
		return false;
	for (int p = 0; p < PARTITIONS; p++)
		if (state->parts[p].nruns > 0)
			return true;
	return false;
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
void
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
		StreamPartition(state, p, narrays, &counts, visit, arg);
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
 * included: a partitioned state yields its classes in ascending order (its
 * log counted in first), a single table in no order.
 */
void
ForEachClass(FreqState *state, ClassVisitor visit, void *arg)
{
	uint64		visited = 0;
	FreqCounts	counts;

	if (state->log != NULL && CountLogInPlace(state, visit, arg, &counts))
		return;

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

/* The single table's classes, in no order (the seeds of a count of the log) */
CountedClass *
TableClasses(FreqState *state, int64 *nseeds)
{
	CountedClass *seeds = palloc_extended(sizeof(CountedClass) * Max(state->single->members, 1),
										  MCXT_ALLOC_HUGE);
	freqhash_iterator iterator;
	FreqEntry  *entry;

	*nseeds = 0;
	freqhash_start_iterate(state->single, &iterator);
	while ((entry = freqhash_iterate(state->single, &iterator)) != NULL)
	{
		seeds[*nseeds].key = entry->key;
		seeds[(*nseeds)++].count = entry->count;
	}
	return seeds;
}

/*
 * Count the log's rows into the state, and log no more: with the single
 * table's classes straight into sorted partitions when the budget has room
 * for all of them as classes, else class by class (AddClass)
 */
static void
FlushLog(FreqState *state)
{
	RowLog	   *log = state->log;
	Size		bytes = RowLogBytes(log);
	bool		done = false;

	state->log = NULL;
	state->log_off = true;
	qidrisk_freq_events.logs_flushed++;
	/* room for every row as a class */
	if (state->single != NULL &&
		state->memory - (double) state->single->size * sizeof(FreqEntry) + PartitionOverhead() +
		(double) (log->nrows + state->single->members) * sizeof(CountedClass) +
		PARTITIONS * (double) sysconf(_SC_PAGESIZE) <= (double) state->budget)
	{
		int64		nseeds;
		CountedClass *seeds = TableClasses(state, &nseeds);

		DestroyTable(state, state->single);
		state->single = NULL;
		Partition(state);
		state->rows = state->classes = state->singletons = 0;
		done = RowLogIntoPartitions(state, log, seeds, nseeds);
		if (!done)
		{
			/* a large class or chosen fingerprints crowd a bucket: class by class */
			qidrisk_freq_events.logs_crowded++;
			state->rows = state->classes = state->singletons = 0;
			for (int64 i = 0; i < nseeds; i++)
				BufferClass(state, &seeds[i].key, seeds[i].count);
		}
		else
			qidrisk_freq_events.logs_into_partitions++;
		pfree(seeds);
	}
	if (!done)
		RowLogCount(log, NULL, 0, MergeClass, state, NULL);
	RowLogFree(log);
	state->memory -= (double) bytes;
}

/*
 * Count the log with the single table's classes as its seeds, leaving both
 * as they are (the counts kept until either changes); false, the log counted
 * into the state, when the state has partitions or attached states
 */
bool
CountLogInPlace(FreqState *state, ClassVisitor visit, void *arg, FreqCounts *counts)
{
	CountedClass *seeds;
	int64		nseeds;

	FlushHeldBack(state);
	if (state->log == NULL)
		return false;
	if (state->single == NULL || state->attached != NULL)
	{
		FlushLog(state);
		return false;
	}
	if (visit == NULL && state->log_counted_rows == state->log->nrows &&
		state->log_counted_table_rows == state->rows)
	{
		*counts = state->log_counts;
		return true;
	}
	seeds = TableClasses(state, &nseeds);
	memset(counts, 0, sizeof(*counts));
	RowLogCount(state->log, seeds, nseeds, visit, arg, counts);
	pfree(seeds);
	state->log_counts = *counts;
	state->log_counted_rows = state->log->nrows;
	state->log_counted_table_rows = state->rows;
	qidrisk_freq_events.logs_counted++;
	return true;
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
	if (state->log != NULL)
	{
		RowLogFree(state->log);
		state->log = NULL;
	}
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
