/*
 * freqstate.c
 *	  The frequency state: a hash table from QID fingerprint to class size.
 *
 * Every frequency aggregate shares this state, so one scan and one table serve
 * singleton_count, class_count, k_anonymity and class_profile in one query.
 * The table is bounded by qidrisk.max_state_memory.
 */
#include "postgres.h"

#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"

#include "qidrisk.h"

/* Fingerprints are already uniform hashes: use 32 of their bits directly */
#define SH_PREFIX freqhash
#define SH_ELEMENT_TYPE FreqEntry
#define SH_KEY_TYPE QidFingerprint
#define SH_KEY key
#define SH_HASH_KEY(tb, k) ((uint32) ((k).lo >> 32))
#define SH_EQUAL(tb, a, b) ((a).lo == (b).lo && (a).hi == (b).hi)
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/* Bytes per serialized class: two fingerprint halves and a count */
#define SERIALIZED_CLASS_BYTES (3 * sizeof(int64))

/* Header: version byte, rows, singletons, k, number of classes */
#define SERIALIZED_HEADER_BYTES (1 + 3 * sizeof(int64) + sizeof(int32))

/* How often long loops check for cancellation */
#define INTERRUPT_CHECK_MASK 0xFFFF

/* Stop with an error naming the setting that bounds a state's memory */
static void
ReportBudgetExceeded(int64 classes, double bytes, Size budget)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("qidrisk frequency state exceeds qidrisk.max_state_memory"),
			 errdetail("The state holds " INT64_FORMAT " classes; its hash table "
					   "would take %.0f kB, the budget is %zu kB.",
					   classes, bytes / 1024.0, budget / 1024),
			 errhint("Raise qidrisk.max_state_memory (or work_mem when it is -1), "
					 "or aggregate fewer rows per group.")));
}

/* Refuse to grow the table past the budget at its regular growth point */
static inline void
EnsureRoomForOneMore(FreqState *state)
{
	freqhash_hash *table = state->classes;
	double		next_bytes;

	if (likely(table->members + 1 < table->grow_threshold))
		return;

	next_bytes = (double) table->size * 2 * sizeof(FreqEntry);
	if (next_bytes > (double) state->budget)
		ReportBudgetExceeded((int64) table->members, next_bytes, state->budget);
}

/*
 * simplehash also grows early when probe sequences get long; catch such a
 * growth past the budget right after it.
 */
static inline void
CheckBudgetAfterInsert(FreqState *state)
{
	freqhash_hash *table = state->classes;
	double		bytes = (double) table->size * sizeof(FreqEntry);

	if (unlikely(bytes > (double) state->budget))
		ReportBudgetExceeded((int64) table->members, bytes, state->budget);
}

/* Create an empty state in context */
FreqState *
FreqStateCreate(MemoryContext context, Size initial_classes)
{
	FreqState  *state = MemoryContextAllocZero(context, sizeof(FreqState));
	double		initial_bytes;

	state->context = context;
	state->budget = QidStateMemoryBudget();
	initial_classes = Max(initial_classes, 64);
	initial_bytes = (double) pg_nextpower2_64((uint64) (initial_classes / 0.9) + 1) *
		sizeof(FreqEntry);
	if (initial_bytes > (double) state->budget)
		ReportBudgetExceeded((int64) initial_classes, initial_bytes, state->budget);
	state->classes = freqhash_create(context, initial_classes, NULL);
	return state;
}

/* Add count rows of the class with fingerprint fp */
void
FreqStateAdd(FreqState *state, const QidFingerprint *fp, int64 count)
{
	FreqEntry  *entry;
	bool		found;

	EnsureRoomForOneMore(state);
	entry = freqhash_insert(state->classes, *fp, &found);
	CheckBudgetAfterInsert(state);
	if (!found)
	{
		entry->count = count;
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

/* Take one row of class fp out again (inverse transition of a moving window) */
void
FreqStateRemove(FreqState *state, const QidFingerprint *fp)
{
	FreqEntry  *entry = freqhash_lookup(state->classes, *fp);

	if (entry == NULL)
		elog(ERROR, "qidrisk: removing a row that was never added");

	if (entry->count == 1)
	{
		state->singletons--;
		freqhash_delete_item(state->classes, entry);
	}
	else
	{
		entry->count--;
		if (entry->count == 1)
			state->singletons++;
	}
	state->rows--;
}

/* Add every class of from into into */
void
FreqStateMerge(FreqState *into, const FreqState *from)
{
	freqhash_iterator iterator;
	FreqEntry  *entry;
	uint64		visited = 0;

	if (into->k == 0)
		into->k = from->k;
	else if (from->k != 0 && from->k != into->k)
		elog(ERROR, "qidrisk: cannot merge states with different k");

	freqhash_start_iterate(from->classes, &iterator);
	while ((entry = freqhash_iterate(from->classes, &iterator)) != NULL)
	{
		if ((++visited & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		FreqStateAdd(into, &entry->key, entry->count);
	}
}

/* Number of distinct QID combinations */
int64
FreqStateClasses(const FreqState *state)
{
	return (int64) state->classes->members;
}

/* Call visitor with the size of every class */
void
FreqStateVisit(const FreqState *state, FreqVisitor visitor, void *arg)
{
	freqhash_iterator iterator;
	FreqEntry  *entry;
	uint64		visited = 0;

	freqhash_start_iterate(state->classes, &iterator);
	while ((entry = freqhash_iterate(state->classes, &iterator)) != NULL)
	{
		if ((++visited & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		visitor(entry->count, arg);
	}
}

/*
 * Serialize: format version, rows, singletons, k, class count, then each
 * class as (fingerprint low, fingerprint high, size).
 */
bytea *
FreqStateSerialize(const FreqState *state)
{
	StringInfoData buf;
	freqhash_iterator iterator;
	FreqEntry  *entry;
	double		bytes;
	uint64		visited = 0;

	bytes = SERIALIZED_HEADER_BYTES + VARHDRSZ +
		(double) state->classes->members * SERIALIZED_CLASS_BYTES;
	if (bytes > MaxAllocSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("qidrisk frequency state too large to serialize"),
				 errdetail("The state holds " INT64_FORMAT " classes; at most %zu fit in one message.",
						   (int64) state->classes->members,
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
	pq_sendint64(&buf, (int64) state->classes->members);

	freqhash_start_iterate(state->classes, &iterator);
	while ((entry = freqhash_iterate(state->classes, &iterator)) != NULL)
	{
		if ((++visited & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		pq_sendint64(&buf, (int64) entry->key.lo);
		pq_sendint64(&buf, (int64) entry->key.hi);
		pq_sendint64(&buf, entry->count);
	}
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
	if (rows < 0 || singletons < 0 || k < 0 || nclasses < 0 || nclasses > rows)
		CorruptState("The state's header holds impossible counts.");
	if ((double) (buf.len - buf.cursor) != (double) nclasses * SERIALIZED_CLASS_BYTES)
		CorruptState("The state's length does not match its number of classes.");

	state = FreqStateCreate(context, (Size) nclasses);
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
		if (count <= 0)
			CorruptState("A class of the state has a size below one.");
		FreqStateAdd(state, &fp, count);
	}
	pq_getmsgend(&buf);

	if (state->rows != rows || state->singletons != singletons ||
		FreqStateClasses(state) != nclasses)
		CorruptState("The state's classes do not add up to its header.");
	return state;
}
