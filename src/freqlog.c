/*
 * freqlog.c
 *	  The row log: a large state's rows, held as they came while its classes
 *	  are mostly distinct, and counted bucket by bucket when read.
 *
 * Sorting and merging a row into a partition costs several passes over
 * memory; when nearly every row is a new class, holding the row (16 bytes,
 * less than the 24 a counted class takes) and counting all rows at the end is
 * cheaper.  Rows are held on ROW_LOG_SHELVES shelves by their top bits.
 * Counting copies one shelf at a time into buckets of about BUCKET_ROWS rows
 * by a keyed multiply-shift of the fingerprint's high half (so chosen values
 * cannot crowd one bucket), and counts each bucket in a hash table that fits
 * the cache, together with the classes the state counted before the log
 * began (its seeds).  Counted into a state's partitions, the buckets go by
 * the next bits instead, so that each bucket's classes, sorted, follow the
 * bucket before (RowLogIntoPartitions).  A distinct-count sketch
 * (HyperLogLog) of a sample of the classes tells the state when rows repeat,
 * so that it counts the log into its partitions and stops logging
 * (freqstate.c decides; this file owns the log, its sketch and the
 * counting).
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
#define BUCKET_ROWS 16384
#define MAX_BUCKET_BITS 16

/* An ordered bucket of more rows is crowded (one large class, or chosen fingerprints) */
#define CROWDED_BUCKET_ROWS (16 * BUCKET_ROWS)

/* A bucket's table doubles past this share of its slots in use (short probes) */
#define BUCKET_FILL 0.5

/* Create an empty log in context, with room for LOG_FIRST_ROWS rows */
RowLog *
RowLogCreate(MemoryContext context)
{
	RowLog	   *log = MemoryContextAllocZero(context, sizeof(RowLog));

	for (int s = 0; s < ROW_LOG_SHELVES; s++)
	{
		log->shelves[s].capacity = LOG_FIRST_ROWS / ROW_LOG_SHELVES;
		log->shelves[s].mapping = MapCopy(context, sizeof(QidFingerprint) *
										  log->shelves[s].capacity, false);
		log->shelves[s].rows = (QidFingerprint *) log->shelves[s].mapping->base;
	}
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

/* Double a shelf's room */
void
RowLogGrow(RowLog *log, RowLogShelf *shelf)
{
	log->capacity += shelf->capacity;
	shelf->capacity *= 2;
	RemapCopy(shelf->mapping, sizeof(QidFingerprint) * shelf->capacity);
	shelf->rows = (QidFingerprint *) shelf->mapping->base;
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
	for (int s = 0; s < ROW_LOG_SHELVES; s++)
		ReleaseMappedCopy(log->shelves[s].mapping);
	pfree(log);
}

/*
 * A row's bucket within its shelf: the high half's bits after the shelf's
 * when ordered, else a keyed multiply-shift
 */
static inline uint64
BucketOf(const RowLog *log, const QidFingerprint *fp, int bits)
{
	if (bits == 0)
		return 0;
	return (log->ordered ? fp->hi << ROW_LOG_SHELF_BITS : fp->hi * log->bucket_multiplier) >>
		(64 - bits);
}

/* Count a shelf's rows per bucket: start[b + 1] for bucket b */
static void
CountPerBucket(const RowLog *log, const RowLogShelf *shelf, int bits, int64 *start)
{
	memset(start, 0, sizeof(int64) * (((int64) 1 << bits) + 1));
	for (int64 x = 0; x < shelf->nrows; x++)
		start[BucketOf(log, &shelf->rows[x], bits) + 1]++;
}

/*
 * Put a shelf's rows in bucket order: a copy into *spare replaces them, and
 * the shelf's old mapping becomes the spare for the next shelf (16 bytes a
 * row more while the log is counted, one shelf's worth, whose pages are
 * written once); start[b] is where bucket b begins, start[nbuckets] the end.
 * With counted, start[b + 1] holds bucket b's rows already (Crowded).
 */
static void
BucketRows(const RowLog *log, RowLogShelf *shelf, int bits, int64 *start, bool counted,
		   MappedCopy **spare)
{
	int64		nbuckets = (int64) 1 << bits;
	int64	   *next = palloc(sizeof(int64) * nbuckets);
	Size		bytes = sizeof(QidFingerprint) * shelf->capacity;
	MappedCopy *mapping = *spare;
	QidFingerprint *out;

	if (mapping == NULL)
		mapping = MapCopy(GetMemoryChunkContext(shelf->mapping), bytes, false);
	else if (mapping->bytes < bytes)
		RemapCopy(mapping, bytes);
	out = (QidFingerprint *) mapping->base;
	if (!counted)
		CountPerBucket(log, shelf, bits, start);
	for (int64 b = 0; b < nbuckets; b++)
		start[b + 1] += start[b];
	memcpy(next, start, sizeof(int64) * nbuckets);
	for (int64 x = 0; x < shelf->nrows; x++)
	{
		if ((x & 0xFFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		out[next[BucketOf(log, &shelf->rows[x], bits)]++] = shelf->rows[x];
	}
	pfree(next);
	*spare = shelf->mapping;
	shelf->mapping = mapping;
	shelf->rows = out;
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

static void AddRows(BucketTable *t, const QidFingerprint *rows, const int64 *counts,
					Size stride, int64 n);

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
	/* the doubled table holds them below its limit: no growing again */
	for (int64 i = 0; i < old.used; i++)
		AddRows(t, &old.slot[old.filled[i]].key, &old.slot[old.filled[i]].count,
				sizeof(CountedClass), 1);
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

/* Bits of the buckets n rows and seeds of a shelf are counted in */
static int
ShelfBucketBits(int64 n)
{
	int			bits = 0;

	while ((n >> bits) > BUCKET_ROWS && bits < MAX_BUCKET_BITS)
		bits++;
	return bits;
}

/*
 * Whether a large class or chosen fingerprints crowd an ordered bucket of
 * some shelf, counting each shelf's rows per bucket into start[sh] (for
 * BucketRows)
 */
static bool
Crowded(const RowLog *log, const int *bits, int64 **start)
{
	for (int sh = 0; sh < ROW_LOG_SHELVES; sh++)
	{
		CountPerBucket(log, &log->shelves[sh], bits[sh], start[sh]);
		for (int64 b = 1; b <= ((int64) 1 << bits[sh]); b++)
			if (start[sh][b] > CROWDED_BUCKET_ROWS)
				return true;
	}
	return false;
}

/*
 * Count the log's rows with the seeds (classes counted before the log, each
 * once), shelf by shelf and bucket by bucket, and hand each bucket's table
 * to done.  False, nothing counted, when ordered buckets are crowded.
 */
static bool
CountBuckets(RowLog *log, const CountedClass *seeds, int64 nseeds, BucketDone done, void *arg)
{
	int64		shelf_start[ROW_LOG_SHELVES + 1] = {0};
	int64		most = 0;
	int			most_bits;
	int			bits[ROW_LOG_SHELVES];
	int64	   *start[ROW_LOG_SHELVES];
	int64	   *seed_start;
	CountedClass *shelved = palloc(sizeof(CountedClass) * Max(nseeds, 1));
	CountedClass *bucketed = palloc(sizeof(CountedClass) * Max(nseeds, 1));
	BucketTable t = {0};
	MappedCopy *spare = NULL;
	bool		crowded;

	/* the seeds, few, by shelf */
	for (int64 i = 0; i < nseeds; i++)
		shelf_start[(seeds[i].key.hi >> (64 - ROW_LOG_SHELF_BITS)) + 1]++;
	for (int sh = 0; sh < ROW_LOG_SHELVES; sh++)
	{
		most = Max(most, log->shelves[sh].nrows + shelf_start[sh + 1]);
		bits[sh] = ShelfBucketBits(log->shelves[sh].nrows + shelf_start[sh + 1]);
		start[sh] = palloc(sizeof(int64) * (((int64) 1 << bits[sh]) + 1));
		shelf_start[sh + 1] += shelf_start[sh];
	}
	{
		int64		next[ROW_LOG_SHELVES];

		memcpy(next, shelf_start, sizeof(next));
		for (int64 i = 0; i < nseeds; i++)
			shelved[next[seeds[i].key.hi >> (64 - ROW_LOG_SHELF_BITS)]++] = seeds[i];
	}
	most_bits = ShelfBucketBits(most);
	seed_start = palloc(sizeof(int64) * (((int64) 1 << most_bits) + 1));
	/* ordered buckets are counted up front, once: BucketRows takes their counts */
	crowded = log->ordered && Crowded(log, bits, start);

	/* twice the slots an average bucket fills */
	t.multiplier = log->slot_multiplier;
	t.bits = 10;
	while (((int64) 1 << t.bits) < 2 * (most >> most_bits))
		t.bits++;
	t.limit = (int64) (BUCKET_FILL * (double) ((uint64) 1 << t.bits));
	t.slot = palloc0(sizeof(CountedClass) << t.bits);
	t.filled = palloc(sizeof(uint32) * (t.limit + 1));
	for (int sh = 0; sh < ROW_LOG_SHELVES && !crowded; sh++)
	{
		RowLogShelf *shelf = &log->shelves[sh];
		int64		first = shelf_start[sh];
		int64		nshelved = shelf_start[sh + 1] - first;
		int64		nbuckets = (int64) 1 << bits[sh];
		int64	   *starts = start[sh];

		BucketRows(log, shelf, bits[sh], starts, log->ordered, &spare);
		/* the shelf's seeds in bucket order */
		memset(seed_start, 0, sizeof(int64) * (nbuckets + 1));
		for (int64 i = first; i < first + nshelved; i++)
			seed_start[BucketOf(log, &shelved[i].key, bits[sh]) + 1]++;
		for (int64 b = 0; b < nbuckets; b++)
			seed_start[b + 1] += seed_start[b];
		for (int64 i = first; i < first + nshelved; i++)
			bucketed[first + seed_start[BucketOf(log, &shelved[i].key, bits[sh])]++] = shelved[i];
		/* seed_start[b] is now where bucket b ends */
		for (int64 b = 0; b < nbuckets; b++)
		{
			int64		seeds_begin = b == 0 ? 0 : seed_start[b - 1];

			CHECK_FOR_INTERRUPTS();
			AddRows(&t, &bucketed[first + seeds_begin].key, &bucketed[first + seeds_begin].count,
					sizeof(CountedClass), seed_start[b] - seeds_begin);
			AddRows(&t, &shelf->rows[starts[b]], NULL, sizeof(QidFingerprint),
					starts[b + 1] - starts[b]);
			done(&t, ROW_LOG_SHELF_BITS + bits[sh], arg);
		}
	}
	if (spare != NULL)
		ReleaseMappedCopy(spare);
	pfree(t.slot);
	pfree(t.filled);
	pfree(shelved);
	pfree(bucketed);
	for (int sh = 0; sh < ROW_LOG_SHELVES; sh++)
		pfree(start[sh]);
	pfree(seed_start);
	return !crowded;
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
	CountBuckets(log, seeds, nseeds, VisitBucketClasses, &v);
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
 * False, nothing counted, when one class or chosen fingerprints crowd a bucket.
 */
bool
RowLogIntoPartitions(FreqState *state, RowLog *log, const CountedClass *seeds, int64 nseeds)
{
	AppendBucket a = {state, NULL, NULL, NULL, 0};
	int64		most[PARTITIONS] = {0};
	bool		done;

	/* each array sized once, for its rows and seeds all distinct: no doubling past the budget */
	for (int sh = 0; sh < ROW_LOG_SHELVES; sh++)
		most[sh >> (ROW_LOG_SHELF_BITS - PARTITION_BITS)] += log->shelves[sh].nrows;
	for (int64 i = 0; i < nseeds; i++)
		most[PartitionOf(&seeds[i].key)]++;
	for (int p = 0; p < PARTITIONS; p++)
		GrowClassArray(state, &state->parts[p], most[p]);
	log->ordered = true;
	done = CountBuckets(log, seeds, nseeds, AppendSorted, &a);
	if (a.run != NULL)
	{
		pfree(a.run);
		pfree(a.sorted);
		pfree(a.starts);
	}
	return done;
}
