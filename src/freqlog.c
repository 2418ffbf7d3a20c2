/*
 * freqlog.c
 *	  The row log: a large state's rows, held as they came while its classes
 *	  are mostly distinct, and counted bucket by bucket when read.
 *
 * Sorting and merging a row into a partition costs several passes over
 * memory; when nearly every row is a new class, holding the row (16 bytes,
 * less than the 24 a counted class takes) and counting all rows at the end is
 * cheaper.  Counting puts the rows in place into buckets of a few thousand
 * classes by a keyed multiply-shift of the fingerprint's high half (so chosen
 * values cannot crowd one bucket), and counts each bucket in a hash table
 * that fits the cache, together with the classes the state counted before
 * the log began (its seeds).  A small distinct-count sketch (HyperLogLog) of
 * the rows tells the state when rows repeat, so that it counts the log into
 * its partitions and stops logging (freqstate.c decides; this file owns the
 * log, its sketch and the counting).
 */
#include "postgres.h"

#include <math.h>

#include "common/pg_prng.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "utils/memutils.h"

#include "freqengine.h"
#include "freqlog.h"

/* Rows a new log holds */
#define LOG_FIRST_ROWS 65536

/* Rows and seeds a bucket holds on average when counted, and most buckets */
#define BUCKET_ROWS 32768
#define MAX_BUCKET_BITS 16

/* An ordered bucket of more rows than this was crowded by chosen fingerprints */
#define CROWDED_BUCKET_ROWS (16 * BUCKET_ROWS)

/* A bucket's table doubles past this share of its slots in use (short probes) */
#define BUCKET_FILL 0.5

/* Create an empty log in context, with room for LOG_FIRST_ROWS rows */
RowLog *
RowLogCreate(MemoryContext context)
{
	RowLog	   *log = MemoryContextAllocZero(context, sizeof(RowLog));

	log->rows = MemoryContextAllocHuge(context, sizeof(QidFingerprint) * LOG_FIRST_ROWS);
	log->capacity = LOG_FIRST_ROWS;
	log->bucket_multiplier = pg_prng_uint64(&pg_global_prng_state) | 1;
	log->slot_multiplier = pg_prng_uint64(&pg_global_prng_state) | 1;
	return log;
}

/* Bytes the log occupies */
Size
RowLogBytes(const RowLog *log)
{
	return sizeof(RowLog) + sizeof(QidFingerprint) * log->capacity;
}

/* Double the log's room */
void
RowLogGrow(RowLog *log)
{
	log->capacity *= 2;
	log->rows = repalloc_huge(log->rows, sizeof(QidFingerprint) * log->capacity);
}

/* Estimated distinct fingerprints among the rows the sketch saw (HyperLogLog, small-range corrected) */
double
RowLogDistinct(const RowLog *rowlog)
{
	const double m = (double) (1 << ROW_LOG_REGISTER_BITS);
	double		sum = 0;
	int			zeros = 0;
	double		estimate;

	for (int i = 0; i < (1 << ROW_LOG_REGISTER_BITS); i++)
	{
		sum += ldexp(1.0, -rowlog->registers[i]);
		zeros += (rowlog->registers[i] == 0);
	}
	estimate = 0.7213 / (1.0 + 1.079 / m) * m * m / sum;
	if (estimate <= 2.5 * m && zeros > 0)
		estimate = m * log(m / zeros);
	return estimate;
}

/* Free the log */
void
RowLogFree(RowLog *log)
{
	pfree(log->rows);
	pfree(log);
}

/* A row's bucket: the high half's top bits when ordered, else a keyed multiply-shift */
static inline uint64
BucketOf(const RowLog *log, const QidFingerprint *fp, int bits)
{
	if (bits == 0)
		return 0;
	return (log->ordered ? fp->hi : fp->hi * log->bucket_multiplier) >> (64 - bits);
}

/* Put the rows in bucket order into out; start[b] is where bucket b begins, start[nbuckets] the end */
static void
BucketRows(const RowLog *log, int bits, int64 *start, QidFingerprint *out)
{
	int64		nbuckets = (int64) 1 << bits;
	int64	   *next = palloc(sizeof(int64) * nbuckets);

	memset(start, 0, sizeof(int64) * (nbuckets + 1));
	for (int64 x = 0; x < log->nrows; x++)
		start[BucketOf(log, &log->rows[x], bits) + 1]++;
	for (int64 b = 0; b < nbuckets; b++)
		start[b + 1] += start[b];
	memcpy(next, start, sizeof(int64) * nbuckets);
	for (int64 x = 0; x < log->nrows; x++)
	{
		if ((x & 0xFFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		out[next[BucketOf(log, &log->rows[x], bits)]++] = log->rows[x];
	}
	pfree(next);
}

/* A bucket's table of classes: slots by a keyed multiply-shift of the low half */
typedef struct BucketTable
{
	CountedClass *slot;			/* count 0: free */
	int			bits;
	int64		used;
	int64		limit;			/* classes it holds before it doubles */
	uint32	   *filled;			/* the slots in use, in the order filled */
	uint64		multiplier;
} BucketTable;

static inline void
TableAdd(BucketTable *t, const QidFingerprint *key, int64 count)
{
	uint64		mask = ((uint64) 1 << t->bits) - 1;
	uint64		h = (key->lo * t->multiplier) >> (64 - t->bits);

	for (;;)
	{
		CountedClass *e = &t->slot[h];

		if (e->count == 0)
		{
			e->key = *key;
			e->count = count;
			t->filled[t->used++] = (uint32) h;
			return;
		}
		if (e->key.lo == key->lo && e->key.hi == key->hi)
		{
			e->count += count;
			return;
		}
		h = (h + 1) & mask;
	}
}

/* Double the table, keeping its classes (AddRows, past BUCKET_FILL) */
static pg_noinline void
TableGrow(BucketTable *t)
{
	BucketTable old = *t;

	t->bits++;
	t->limit = (int64) (BUCKET_FILL * (double) ((uint64) 1 << t->bits));
	t->used = 0;
	t->slot = palloc0(sizeof(CountedClass) << t->bits);
	t->filled = palloc(sizeof(uint32) * (t->limit + 1));
	for (int64 i = 0; i < old.used; i++)
		TableAdd(t, &old.slot[old.filled[i]].key, old.slot[old.filled[i]].count);
	pfree(old.slot);
	pfree(old.filled);
}

/* Count n rows of one class each (n seeds when counts is not NULL) into the table */
static void
AddRows(BucketTable *t, const QidFingerprint *rows, const int64 *counts, Size stride, int64 n)
{
	CountedClass *slot = t->slot;
	uint64		mask = ((uint64) 1 << t->bits) - 1;
	int			shift = 64 - t->bits;
	int64		used = t->used;

	for (int64 x = 0; x < n; x++)
	{
		const QidFingerprint *key = (const QidFingerprint *) ((const char *) rows + x * stride);
		int64		count = counts ? *(const int64 *) ((const char *) counts + x * stride) : 1;
		uint64		h;

		if (unlikely(used >= t->limit))
		{
			t->used = used;
			TableGrow(t);
			slot = t->slot;
			mask = ((uint64) 1 << t->bits) - 1;
			shift = 64 - t->bits;
		}
		h = (key->lo * t->multiplier) >> shift;
		for (;;)
		{
			CountedClass *e = &slot[h];

			if (e->count == 0)
			{
				e->key = *key;
				e->count = count;
				t->filled[used++] = (uint32) h;
				break;
			}
			if (e->key.lo == key->lo && e->key.hi == key->hi)
			{
				e->count += count;
				break;
			}
			h = (h + 1) & mask;
		}
	}
	t->used = used;
}

/* Visit the table's classes (if visit), add them up in counts (if not NULL), and empty it */
static void
EmitClasses(BucketTable *t, ClassVisitor visit, void *arg, FreqCounts *counts)
{
	int64		classes = 0;
	int64		singletons = 0;
	int64		rows = 0;

	for (int64 i = 0; i < t->used; i++)
	{
		CountedClass *e = &t->slot[t->filled[i]];
		int64		count = e->count;

		if (visit != NULL)
			visit(&e->key, count, arg);
		classes++;
		singletons += (count == 1);
		rows += count;
		e->count = 0;
	}
	t->used = 0;
	if (counts != NULL)
	{
		counts->classes += classes;
		counts->singletons += singletons;
		counts->rows += rows;
	}
}

/* What to do with a bucket's classes, counted in t (which it must empty) */
typedef void (*BucketDone) (BucketTable *t, int bits, void *arg);

/*
 * Count the log's rows with the seeds (classes counted before the log, each
 * once) bucket by bucket, at least 2^min_bits buckets, and hand each bucket's
 * table to done.  The rows are put in bucket order in a copy (16 bytes a
 * row, for the count only).  False, nothing counted, when ordered buckets
 * are crowded (chosen fingerprints).
 */
static bool
CountBuckets(RowLog *log, const CountedClass *seeds, int64 nseeds, int min_bits,
			 BucketDone done, void *arg)
{
	QidFingerprint *rows = NULL;
	int			bits = min_bits;
	int64		nbuckets;
	int64	   *start;
	int64	   *seed_start;
	int64	   *seed_next;
	CountedClass *bucketed_seeds;
	BucketTable t = {0};

	while (((log->nrows + nseeds) >> bits) > BUCKET_ROWS && bits < MAX_BUCKET_BITS)
		bits++;
	nbuckets = (int64) 1 << bits;
	start = palloc(sizeof(int64) * (nbuckets + 1));
	rows = palloc_extended(sizeof(QidFingerprint) * Max(log->nrows, 1), MCXT_ALLOC_HUGE);
	BucketRows(log, bits, start, rows);
	if (log->ordered)
	{
		for (int64 b = 0; b < nbuckets; b++)
			if (start[b + 1] - start[b] > CROWDED_BUCKET_ROWS)
			{
				pfree(rows);
				pfree(start);
				return false;
			}
	}

	/* the seeds, few, in bucket order beside them */
	seed_start = palloc0(sizeof(int64) * (nbuckets + 1));
	seed_next = palloc(sizeof(int64) * nbuckets);
	bucketed_seeds = palloc(sizeof(CountedClass) * Max(nseeds, 1));
	for (int64 s = 0; s < nseeds; s++)
		seed_start[BucketOf(log, &seeds[s].key, bits) + 1]++;
	for (int64 b = 0; b < nbuckets; b++)
		seed_start[b + 1] += seed_start[b];
	memcpy(seed_next, seed_start, sizeof(int64) * nbuckets);
	for (int64 s = 0; s < nseeds; s++)
		bucketed_seeds[seed_next[BucketOf(log, &seeds[s].key, bits)]++] = seeds[s];
	pfree(seed_next);

	t.multiplier = log->slot_multiplier;
	/* twice the slots an average bucket fills */
	t.bits = 10;
	while (((int64) 1 << t.bits) < 2 * ((log->nrows + nseeds) >> bits))
		t.bits++;
	t.limit = (int64) (BUCKET_FILL * (double) ((uint64) 1 << t.bits));
	t.slot = palloc0(sizeof(CountedClass) << t.bits);
	t.filled = palloc(sizeof(uint32) * (t.limit + 1));
	for (int64 b = 0; b < nbuckets; b++)
	{
		CHECK_FOR_INTERRUPTS();
		AddRows(&t, &bucketed_seeds[seed_start[b]].key, &bucketed_seeds[seed_start[b]].count,
				sizeof(CountedClass), seed_start[b + 1] - seed_start[b]);
		AddRows(&t, &rows[start[b]], NULL, sizeof(QidFingerprint), start[b + 1] - start[b]);
		done(&t, bits, arg);
	}
	pfree(t.slot);
	pfree(t.filled);
	pfree(rows);
	pfree(bucketed_seeds);
	pfree(seed_start);
	pfree(start);
	return true;
}

typedef struct VisitBucket
{
	ClassVisitor visit;
	void	   *arg;
	FreqCounts *counts;
} VisitBucket;

static void
VisitBucketClasses(BucketTable *t, int bits pg_attribute_unused(), void *arg)
{
	VisitBucket *v = (VisitBucket *) arg;

	EmitClasses(t, v->visit, v->arg, v->counts);
}

/*
 * Count the log's rows with the seeds, bucket by bucket: visit every class
 * (if visit is not NULL) and add them up in counts (if not NULL), in no order
 */
void
RowLogCount(RowLog *log, const CountedClass *seeds, int64 nseeds,
			ClassVisitor visit, void *arg, FreqCounts *counts)
{
	VisitBucket v = {visit, arg, counts};

	log->ordered = false;
	CountBuckets(log, seeds, nseeds, 0, VisitBucketClasses, &v);
}

typedef struct AppendBucket
{
	FreqState  *state;
	CountedClass *run;			/* a bucket's classes, before they are sorted */
	CountedClass *sorted;		/* and after */
	int64	   *starts;			/* the sort's buckets */
	int64		capacity;
} AppendBucket;

/* Sort a bucket's classes and append them to their partition's array */
static void
AppendSorted(BucketTable *t, int bits, void *arg)
{
	AppendBucket *a = (AppendBucket *) arg;
	FreqState  *state = a->state;
	CountedClass *sorted;
	FreqPartition *partition;
	int64		n = t->used;

	if (n == 0)
		return;
	if (n > a->capacity)
	{
		a->capacity = Max(n, 2 * a->capacity);
		if (a->run != NULL)
		{
			pfree(a->run);
			pfree(a->sorted);
			pfree(a->starts);
		}
		a->run = palloc_extended(sizeof(CountedClass) * a->capacity, MCXT_ALLOC_HUGE);
		a->sorted = palloc_extended(sizeof(CountedClass) * a->capacity, MCXT_ALLOC_HUGE);
		a->starts = palloc_extended(sizeof(int64) * (BucketsFor(a->capacity) + 1), MCXT_ALLOC_HUGE);
	}
	for (int64 i = 0; i < n; i++)
		a->run[i] = t->slot[t->filled[i]];
	EmitClasses(t, NULL, NULL, NULL);
	sorted = a->sorted;
	SortClasses(a->run, n, bits, sorted, a->starts);
	partition = &state->parts[PartitionOf(&sorted[0].key)];
	GrowClassArray(state, partition, partition->nclasses + n);
	memcpy(partition->classes + partition->nclasses, sorted, sizeof(CountedClass) * n);
	partition->nclasses += n;
	for (int64 i = 0; i < n; i++)
	{
		state->rows += sorted[i].count;
		state->classes++;
		state->singletons += (sorted[i].count == 1);
	}
}

/*
 * Count the log's rows with the seeds into a state's empty partitions:
 * buckets by the top bits of the fingerprint, each bucket's classes sorted
 * and appended to its partition's array, so the arrays come out sorted.
 * False, nothing counted, when chosen fingerprints crowd one bucket.
 */
bool
RowLogIntoPartitions(FreqState *state, RowLog *log, const CountedClass *seeds, int64 nseeds)
{
	AppendBucket a = {state, NULL, NULL, NULL, 0};
	bool		done;

	log->ordered = true;
	done = CountBuckets(log, seeds, nseeds, PARTITION_BITS, AppendSorted, &a);
	if (a.run != NULL)
	{
		pfree(a.run);
		pfree(a.sorted);
		pfree(a.starts);
	}
	return done;
}
