/*
 * count_model.c
 *	  What counting classes costs per row outside PostgreSQL: a floor for
 *	  the frequency state.
 *
 * bench/count_model.sh pipes in the rows of one QID shape (integer columns,
 * tab-separated, as COPY writes them).  Each row's 128-bit fingerprint is
 * computed first, the way qidrisk folds int4 columns, and then the same
 * fingerprints are counted by four structures, each timed alone, in
 * interleaved rounds:
 *
 *   lsm    the frequency state's layout: four partitions by the top bits,
 *          each a sorted array of (fingerprint, count) and a buffer of a
 *          quarter of its classes; a full buffer is bucket-sorted, its equal
 *          fingerprints summed, and merged into the array from the back
 *   hash   one open-addressing table of 24-byte entries (fill at most 3/4),
 *          sixteen rows' slots prefetched before they are counted
 *   radix  every row's fingerprint scattered first into partitions of about
 *          32,768 rows, each then counted in a table that fits the cache:
 *          the fastest known way, which holds 16 bytes per row
 *   compact radix with bounded memory: rows scattered as they come, and
 *          whenever the rows held reach the classes counted, every partition
 *          is counted in a table that fits the cache (its classes and its
 *          new rows) and split so that the next count fits too
 *
 * It prints a line per structure: its name, the rows, the median nanoseconds
 * per row, the peak MB it held and that per class, and the classes and
 * singletons it found (all must agree, or it exits with 1).  A model: no
 * executor, no function calls, no other work for the cache; what it leaves
 * out only adds time.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct Fingerprint
{
	uint64_t	lo;
	uint64_t	hi;
} Fingerprint;

typedef struct Counted
{
	Fingerprint key;
	int64_t		count;
} Counted;

typedef struct Result
{
	double		seconds;
	double		peak_bytes;
	int64_t		classes;
	int64_t		singletons;
} Result;

#define MAX_COLUMNS 8
#define unlikely(x) __builtin_expect((x) != 0, 0)
#define ROUNDS_MAX 32
#define LSM_PARTITION_BITS 2
#define LSM_MIN_BUFFER 1024
#define HASH_BATCH 16
#define RADIX_ROWS_PER_PARTITION 32768

static double held_bytes;		/* bytes the timed structure holds now */
static double peak_bytes;		/* and at most, this round */

static void *
Allocate(size_t bytes)
{
	void	   *p = malloc(bytes > 0 ? bytes : 1);

	if (p == NULL)
	{
		fprintf(stderr, "count_model: out of memory\n");
		exit(2);
	}
	return p;
}

static void
Hold(double bytes)
{
	held_bytes += bytes;
	if (held_bytes > peak_bytes)
		peak_bytes = held_bytes;
}

static double
Now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

/* A 64-bit finalizer (the MurmurHash3 fmix64 constants) */
static inline uint64_t
Mix64(uint64_t h)
{
	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 33;
	h *= UINT64_C(0xc4ceb9fe1a85ec53);
	h ^= h >> 33;
	return h;
}

/* One column folded into a fingerprint half, as qidrisk folds int4 values */
static inline uint64_t
Fold(uint64_t running, uint64_t value)
{
	return Mix64((running * UINT64_C(0x9e3779b97f4a7c15)) ^ value);
}

static inline int
Compare(const Fingerprint *a, const Fingerprint *b)
{
	if (a->hi != b->hi)
		return a->hi < b->hi ? -1 : 1;
	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return 0;
}

/* ---- lsm ---- */

typedef struct LsmPartition
{
	Counted    *array;
	int64_t		nclasses;
	int64_t		capacity;
	Counted    *buffer;
	int64_t		nbuffered;
	int64_t		buffer_capacity;
} LsmPartition;

/* Sort n classes by fingerprint into out: buckets by the bits after skip, then insertion */
static void
BucketSort(const Counted *in, Counted *out, int64_t n, int skip, int64_t *bucket)
{
	int			bits = 1;
	int64_t		nbuckets;

	while (((int64_t) 1 << (bits + 1)) <= n / 4)
		bits++;
	nbuckets = (int64_t) 1 << bits;
	memset(bucket, 0, sizeof(int64_t) * (nbuckets + 1));
	for (int64_t i = 0; i < n; i++)
		bucket[((in[i].key.hi << skip) >> (64 - bits)) + 1]++;
	for (int64_t b = 0; b < nbuckets; b++)
		bucket[b + 1] += bucket[b];
	for (int64_t i = 0; i < n; i++)
		out[bucket[(in[i].key.hi << skip) >> (64 - bits)]++] = in[i];
	for (int64_t i = 1; i < n; i++)
	{
		Counted		item = out[i];
		int64_t		k = i - 1;

		while (k >= 0 && Compare(&out[k].key, &item.key) > 0)
		{
			out[k + 1] = out[k];
			k--;
		}
		out[k + 1] = item;
	}
}

/* The sort's output and buckets, grown with the largest buffer */
typedef struct LsmScratch
{
	Counted    *sorted;
	int64_t	   *bucket;
	int64_t		capacity;
} LsmScratch;

/* Sort the buffer, sum equal fingerprints, merge into the array from the back */
static void
LsmDrain(LsmPartition *p, LsmScratch *sc)
{
	Counted    *scratch;
	int64_t		nrun = 0;
	int64_t		i,
				j,
				w,
				free_slots;

	if (p->nbuffered == 0)
		return;
	if (p->nbuffered > sc->capacity)
	{
		Hold((double) (p->nbuffered - sc->capacity) * (sizeof(Counted) + sizeof(int64_t) / 4));
		free(sc->sorted);
		free(sc->bucket);
		sc->capacity = p->nbuffered;
		sc->sorted = Allocate(sizeof(Counted) * sc->capacity);
		sc->bucket = Allocate(sizeof(int64_t) * (sc->capacity / 4 + 4));
	}
	scratch = sc->sorted;
	BucketSort(p->buffer, scratch, p->nbuffered, LSM_PARTITION_BITS, sc->bucket);
	for (int64_t x = 0; x < p->nbuffered; x++)
	{
		if (nrun > 0 && Compare(&scratch[nrun - 1].key, &scratch[x].key) == 0)
			scratch[nrun - 1].count += scratch[x].count;
		else
			scratch[nrun++] = scratch[x];
	}
	if (p->nclasses + nrun > p->capacity)
	{
		int64_t		grown = p->capacity > 0 ? p->capacity : 1024;

		while (grown < p->nclasses + nrun)
			grown *= 2;
		p->array = realloc(p->array, sizeof(Counted) * grown);
		if (p->array == NULL)
			exit(2);
		Hold((double) (grown - p->capacity) * sizeof(Counted));
		p->capacity = grown;
	}
	i = p->nclasses - 1;
	j = nrun - 1;
	w = p->nclasses + nrun - 1;
	while (j >= 0)
	{
		int			c = i >= 0 ? Compare(&p->array[i].key, &scratch[j].key) : -1;

		if (c > 0)
			p->array[w--] = p->array[i--];
		else if (c < 0)
			p->array[w--] = scratch[j--];
		else
		{
			p->array[w] = p->array[i--];
			p->array[w--].count += scratch[j--].count;
		}
	}
	/* matched classes leave free slots before the merged ones */
	free_slots = w - i;
	if (free_slots > 0)
		memmove(p->array + i + 1, p->array + w + 1,
				sizeof(Counted) * (p->nclasses + nrun - 1 - w));
	p->nclasses = p->nclasses + nrun - free_slots;
	p->nbuffered = 0;
	if (p->nclasses / 4 > p->buffer_capacity)
	{
		Hold((double) (p->nclasses / 4 - p->buffer_capacity) * sizeof(Counted));
		p->buffer_capacity = p->nclasses / 4;
		free(p->buffer);
		p->buffer = Allocate(sizeof(Counted) * p->buffer_capacity);
	}
}

static Result
CountLsm(const Fingerprint *fp, int64_t nrows)
{
	enum
	{
		NPART = 1 << LSM_PARTITION_BITS
	};
	LsmPartition part[NPART];
	LsmScratch	sc = {NULL, NULL, 0};
	Result		r = {0};
	double		start = Now();

	memset(part, 0, sizeof(part));
	for (int p = 0; p < NPART; p++)
	{
		part[p].buffer_capacity = LSM_MIN_BUFFER;
		part[p].buffer = Allocate(sizeof(Counted) * LSM_MIN_BUFFER);
		Hold((double) sizeof(Counted) * LSM_MIN_BUFFER);
	}
	for (int64_t x = 0; x < nrows; x++)
	{
		LsmPartition *p = &part[fp[x].hi >> (64 - LSM_PARTITION_BITS)];

		if (p->nbuffered == p->buffer_capacity)
			LsmDrain(p, &sc);
		p->buffer[p->nbuffered].key = fp[x];
		p->buffer[p->nbuffered++].count = 1;
	}
	for (int p = 0; p < NPART; p++)
	{
		LsmDrain(&part[p], &sc);
		r.classes += part[p].nclasses;
		for (int64_t c = 0; c < part[p].nclasses; c++)
			r.singletons += part[p].array[c].count == 1;
	}
	r.seconds = Now() - start;
	for (int p = 0; p < NPART; p++)
	{
		free(part[p].array);
		free(part[p].buffer);
	}
	free(sc.sorted);
	free(sc.bucket);
	return r;
}

/* ---- hash ---- */

typedef struct Table
{
	Counted    *slot;
	uint64_t	mask;
	int64_t		used;
} Table;

static void
TableInit(Table *t, uint64_t nslots)
{
	t->slot = calloc(nslots, sizeof(Counted));
	if (t->slot == NULL)
		exit(2);
	t->mask = nslots - 1;
	t->used = 0;
}

/* Count n rows of class key (count 0 marks an empty slot) */
static inline void
TableAdd(Table *t, const Fingerprint *key, int64_t n)
{
	uint64_t	h = key->lo & t->mask;

	for (;;)
	{
		Counted    *e = &t->slot[h];

		if (e->count == 0)
		{
			e->key = *key;
			e->count = n;
			t->used++;
			return;
		}
		if (e->key.lo == key->lo && e->key.hi == key->hi)
		{
			e->count += n;
			return;
		}
		h = (h + 1) & t->mask;
	}
}

static void
TableGrow(Table *t)
{
	Table		old = *t;

	TableInit(t, (old.mask + 1) * 2);
	Hold((double) (old.mask + 1) * 2 * sizeof(Counted));
	for (uint64_t h = 0; h <= old.mask; h++)
		if (old.slot[h].count > 0)
			TableAdd(t, &old.slot[h].key, old.slot[h].count);
	free(old.slot);
	held_bytes -= (double) (old.mask + 1) * sizeof(Counted);
}

static Result
CountHash(const Fingerprint *fp, int64_t nrows)
{
	Table		t;
	Result		r = {0};
	double		start = Now();

	TableInit(&t, 1024);
	Hold(1024.0 * sizeof(Counted));
	for (int64_t x = 0; x < nrows; x += HASH_BATCH)
	{
		int64_t		end = x + HASH_BATCH < nrows ? x + HASH_BATCH : nrows;

		while ((double) (t.used + HASH_BATCH) > 0.75 * (double) (t.mask + 1))
			TableGrow(&t);
		for (int64_t y = x; y < end; y++)
			__builtin_prefetch(&t.slot[fp[y].lo & t.mask], 1);
		for (int64_t y = x; y < end; y++)
			TableAdd(&t, &fp[y], 1);
	}
	r.classes = t.used;
	for (uint64_t h = 0; h <= t.mask; h++)
		r.singletons += t.slot[h].count == 1;
	r.seconds = Now() - start;
	free(t.slot);
	return r;
}

/* ---- radix ---- */

static Result
CountRadix(const Fingerprint *fp, int64_t nrows)
{
	int			bits = 0;
	int64_t		npart;
	int64_t    *start_of;
	int64_t    *next;
	Fingerprint *scattered;
	Table		t;
	Result		r = {0};
	double		start = Now();

	while (((int64_t) RADIX_ROWS_PER_PARTITION << bits) < nrows)
		bits++;
	npart = (int64_t) 1 << bits;
	start_of = calloc(npart + 1, sizeof(int64_t));
	next = Allocate(sizeof(int64_t) * npart);
	scattered = Allocate(sizeof(Fingerprint) * nrows);
	Hold((double) sizeof(Fingerprint) * nrows + 2.0 * sizeof(int64_t) * npart);
	/* one pass to size the partitions, one to scatter */
	for (int64_t x = 0; x < nrows; x++)
		start_of[(bits ? fp[x].hi >> (64 - bits) : 0) + 1]++;
	for (int64_t p = 0; p < npart; p++)
		start_of[p + 1] += start_of[p];
	memcpy(next, start_of, sizeof(int64_t) * npart);
	for (int64_t x = 0; x < nrows; x++)
		scattered[next[bits ? fp[x].hi >> (64 - bits) : 0]++] = fp[x];
	TableInit(&t, 4 * RADIX_ROWS_PER_PARTITION);
	Hold(4.0 * RADIX_ROWS_PER_PARTITION * sizeof(Counted));
	for (int64_t p = 0; p < npart; p++)
	{
		uint64_t	nslots = 1024;

		/* sized for the partition's rows up to twice the usual, grown past that */
		while (nslots < 2 * (uint64_t) (start_of[p + 1] - start_of[p]) &&
			   nslots < 4 * RADIX_ROWS_PER_PARTITION)
			nslots *= 2;
		if (nslots > t.mask + 1)
		{
			free(t.slot);
			Hold((double) (nslots - (t.mask + 1)) * sizeof(Counted));
			TableInit(&t, nslots);
		}
		nslots = t.mask + 1;
		t.used = 0;
		for (int64_t x = start_of[p]; x < start_of[p + 1]; x++)
		{
			if (unlikely((double) t.used >= 0.75 * (double) (t.mask + 1)))
				TableGrow(&t);
			TableAdd(&t, &scattered[x], 1);
		}
		nslots = t.mask + 1;
		r.classes += t.used;
		for (uint64_t h = 0; h < nslots; h++)
		{
			r.singletons += t.slot[h].count == 1;
			t.slot[h].count = 0;
		}
	}
	r.seconds = Now() - start;
	free(t.slot);
	free(scattered);
	free(next);
	free(start_of);
	return r;
}

/* ---- compact: rows scattered as they come, partitions compacted in cache ---- */

#define COMPACT_TARGET 16384	/* classes and rows a partition holds after a compaction */
#define COMPACT_MIN_ROWS 65536
#define COMPACT_FILL 0.9
#define COMPACT_MAX_FAN_BITS 8

typedef struct Bin
{
	Counted    *classes;
	int64_t		nclasses;
	Fingerprint *rows;
	int64_t		nrows;
	int64_t		rows_cap;
} Bin;

static void
BinAppendRow(Bin *b, const Fingerprint *fp)
{
	if (b->nrows == b->rows_cap)
	{
		int64_t		grown = b->rows_cap > 0 ? b->rows_cap * 2 : 256;

		b->rows = realloc(b->rows, sizeof(Fingerprint) * grown);
		if (b->rows == NULL)
			exit(2);
		Hold((double) (grown - b->rows_cap) * sizeof(Fingerprint));
		b->rows_cap = grown;
	}
	b->rows[b->nrows++] = *fp;
}

/*
 * Count every bin's rows into its classes, in a table that fits the cache,
 * splitting the bins to 2^new_bits by the next bits of hi
 */
static Bin *
CompactBins(Bin *bins, int bits, int new_bits, Table *t)
{
	int64_t		n = (int64_t) 1 << bits;
	int			fan = 1 << (new_bits - bits);
	Bin		   *out = calloc((size_t) n * fan, sizeof(Bin));

	for (int64_t q = 0; q < n; q++)
	{
		Bin		   *b = &bins[q];
		uint64_t	nslots = 1024;
		int64_t		counted[1 << COMPACT_MAX_FAN_BITS] = {0};

		while ((double) nslots * COMPACT_FILL < (double) (b->nclasses + b->nrows))
			nslots *= 2;
		if (nslots > t->mask + 1)
		{
			free(t->slot);
			TableInit(t, nslots);
		}
		t->mask = nslots - 1;
		t->used = 0;
		for (int64_t c = 0; c < b->nclasses; c++)
			TableAdd(t, &b->classes[c].key, b->classes[c].count);
		for (int64_t x = 0; x < b->nrows; x += HASH_BATCH)
		{
			int64_t		end = x + HASH_BATCH < b->nrows ? x + HASH_BATCH : b->nrows;

			for (int64_t y = x; y < end; y++)
				__builtin_prefetch(&t->slot[b->rows[y].lo & t->mask], 1);
			for (int64_t y = x; y < end; y++)
				TableAdd(t, &b->rows[y], 1);
		}
		/* the new bins' classes, sized by a first pass */
		for (uint64_t h = 0; h < nslots; h++)
			if (t->slot[h].count > 0)
				counted[fan > 1 ? (t->slot[h].key.hi << bits) >> (64 - (new_bits - bits)) : 0]++;
		for (int f = 0; f < fan; f++)
		{
			out[q * fan + f].classes = Allocate(sizeof(Counted) * counted[f]);
			Hold((double) counted[f] * sizeof(Counted));
		}
		for (uint64_t h = 0; h < nslots; h++)
			if (t->slot[h].count > 0)
			{
				Bin		   *to = &out[q * fan + (fan > 1 ? (t->slot[h].key.hi << bits) >> (64 - (new_bits - bits)) : 0)];

				to->classes[to->nclasses++] = t->slot[h];
				t->slot[h].count = 0;
			}
		held_bytes -= (double) b->nclasses * sizeof(Counted) + (double) b->rows_cap * sizeof(Fingerprint);
		free(b->classes);
		free(b->rows);
	}
	free(bins);
	return out;
}

static Result
CountCompact(const Fingerprint *fp, int64_t nrows)
{
	int			bits = 0;
	Bin		   *bins = calloc(1, sizeof(Bin));
	int64_t		classes = 0;
	int64_t		pending = 0;
	Table		t;
	Result		r = {0};
	double		start = Now();

	TableInit(&t, 1024);
	for (int64_t x = 0; x <= nrows; x++)
	{
		if (x == nrows || (pending >= COMPACT_MIN_ROWS && pending >= classes))
		{
			int			new_bits = bits;

			while (new_bits < bits + COMPACT_MAX_FAN_BITS &&
				   (classes + pending) >> new_bits > COMPACT_TARGET)
				new_bits++;
			bins = CompactBins(bins, bits, new_bits, &t);
			bits = new_bits;
			classes = 0;
			for (int64_t q = 0; q < ((int64_t) 1 << bits); q++)
				classes += bins[q].nclasses;
			pending = 0;
			if (x == nrows)
				break;
		}
		BinAppendRow(&bins[bits ? fp[x].hi >> (64 - bits) : 0], &fp[x]);
		pending++;
	}
	r.classes = classes;
	for (int64_t q = 0; q < ((int64_t) 1 << bits); q++)
		for (int64_t c = 0; c < bins[q].nclasses; c++)
			r.singletons += bins[q].classes[c].count == 1;
	r.seconds = Now() - start;
	for (int64_t q = 0; q < ((int64_t) 1 << bits); q++)
		free(bins[q].classes);
	free(bins);
	free(t.slot);
	return r;
}

/* ---- driver ---- */

static int64_t
ReadRows(Fingerprint **out)
{
	int64_t		n = 0,
				cap = 1 << 20;
	Fingerprint *fp = Allocate(sizeof(Fingerprint) * cap);
	char		line[1024];

	while (fgets(line, sizeof(line), stdin) != NULL)
	{
		uint64_t	lo = UINT64_C(0x6a09e667f3bcc908);
		uint64_t	hi = UINT64_C(0xbb67ae8584caa73b);
		char	   *s = line;
		int			ncol = 0;

		while (*s != '\n' && *s != '\0' && ncol < MAX_COLUMNS)
		{
			char	   *end;
			uint64_t	v = (uint32_t) (int32_t) strtol(s, &end, 10);

			if (end == s)
			{
				fprintf(stderr, "count_model: not an integer column: %s", line);
				exit(2);
			}
			lo = Fold(lo, v);
			hi = Fold(hi, v);
			ncol++;
			s = *end == '\t' ? end + 1 : end;
		}
		if (n == cap)
		{
			cap *= 2;
			fp = realloc(fp, sizeof(Fingerprint) * cap);
			if (fp == NULL)
				exit(2);
		}
		fp[n].lo = lo;
		fp[n].hi = hi;
		n++;
	}
	*out = fp;
	return n;
}

static int
CompareDouble(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

int
main(int argc, char **argv)
{
	static const char *const names[] = {"lsm", "hash", "radix", "compact"};
	Result		(*const count[]) (const Fingerprint *, int64_t) = {CountLsm, CountHash, CountRadix, CountCompact};
	int			rounds = argc > 1 ? atoi(argv[1]) : 5;
	double		ns[4][ROUNDS_MAX];
	Result		last[4];
	Fingerprint *fp;
	int64_t		nrows = ReadRows(&fp);

	if (rounds < 1 || rounds > ROUNDS_MAX || nrows == 0)
	{
		fprintf(stderr, "usage: count_model [ROUNDS 1-%d] < rows (at least one)\n", ROUNDS_MAX);
		return 2;
	}
	/* a warm-up round, then the timed ones, the structures in turn */
	for (int round = -1; round < rounds; round++)
		for (int s = 0; s < 4; s++)
		{
			held_bytes = peak_bytes = 0;
			last[s] = count[s] (fp, nrows);
			last[s].peak_bytes = peak_bytes;
			if (round >= 0)
				ns[s][round] = last[s].seconds * 1e9 / (double) nrows;
		}
	for (int s = 0; s < 4; s++)
	{
		qsort(ns[s], rounds, sizeof(double), CompareDouble);
		printf("%s\t%lld\t%.1f\t%.1f\t%.1f\t%lld\t%lld\n", names[s], (long long) nrows,
			   ns[s][rounds / 2], last[s].peak_bytes / 1048576.0,
			   last[s].peak_bytes / (double) last[s].classes,
			   (long long) last[s].classes, (long long) last[s].singletons);
		if (last[s].classes != last[0].classes || last[s].singletons != last[0].singletons)
		{
			fprintf(stderr, "count_model: %s found %lld classes, %lld singletons; lsm %lld, %lld\n",
					names[s], (long long) last[s].classes, (long long) last[s].singletons,
					(long long) last[0].classes, (long long) last[0].singletons);
			return 1;
		}
	}
	return 0;
}
