/*
 * sketch.c
 *	  Approximate, bounded-memory, mergeable estimates of a quasi-identifier's
 *	  number of classes, singletons and class-size histogram: distinct
 *	  sampling (Gibbons, "Distinct sampling for highly-accurate answers to
 *	  distinct values queries and event reports", VLDB 2001).
 *
 * A class is kept when the high 64 bits of its fingerprint, permuted under
 * the statement's secret key (hashkey.c), fall below 2^(64 - level), i.e.
 * with probability 2^-level, decided by the class alone;
 * every row of a kept class is therefore counted, so a kept class's size is
 * exact.  When more than `capacity` classes are kept, the level rises by one
 * and the classes that no longer qualify are dropped.  The kept sample is
 * always "every class passing the final level", whatever the order of the
 * rows and however partial states were merged, so serial, parallel and
 * partitionwise plans give identical answers.
 *
 * Estimates multiply kept counts by 2^level; each is a binomial count divided
 * by its sampling rate p, so it is unbiased and its standard error is
 * sqrt(Y (1 - p)) / p for Y kept classes of the kind (0 at level 0, where
 * the answer is exact).
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/uuid.h"

#include "aggcommon.h"
#include "fingerprint.h"
#include "hashkey.h"
#include "qidkey.h"
#include "qidrisk.h"
#include "settings.h"
#include "sketch.h"

/* Format version of a serialized sketch */
#define SKETCH_FORMAT_VERSION 2

/* Serialized header: version, capacity, level, rows, kept classes */
#define SKETCH_HEADER_BYTES (1 + 4 + 1 + 8 + 8)

/* A kept class's size is written in one byte below this, else 1 + 8 bytes */
#define SKETCH_LONG_COUNT 255

/* Check for interrupts this often in loops over classes */
#define SKETCH_INTERRUPT_MASK 0xFFFF

/* The slots a table starts with */
#define SKETCH_INITIAL_SLOTS 64

/* One kept class; count 0 marks an empty slot */
typedef struct SketchEntry
{
	uint64		lo;
	uint64		hi;
	int64		count;
} SketchEntry;

struct QidSketch
{
	MemoryContext context;		/* where the slots live */
	int32		capacity;		/* most classes kept */
	int32		level;			/* classes kept with probability 2^-level */
	int64		rows;			/* rows seen, exact */
	int64		nkept;			/* classes kept */
	uint64		nslots;			/* a power of two */
	SketchEntry *slots;			/* open addressing, linear probing */
	QidSampleKey key;			/* the statement's: entries hold permuted
								 * fingerprints (QidSamplePermute) */
};

PG_FUNCTION_INFO_V1(qidrisk_sketch_transfn);
PG_FUNCTION_INFO_V1(qidrisk_sketch_default_transfn);
PG_FUNCTION_INFO_V1(qidrisk_sketch_key_transfn);
PG_FUNCTION_INFO_V1(qidrisk_sketch_key_default_transfn);
PG_FUNCTION_INFO_V1(qidrisk_sketch_combine);
PG_FUNCTION_INFO_V1(qidrisk_sketch_serialize);
PG_FUNCTION_INFO_V1(qidrisk_sketch_deserialize);
PG_FUNCTION_INFO_V1(qidrisk_sketch_profile_final);
PG_FUNCTION_INFO_V1(qidrisk_sketch_singletons_final);
PG_FUNCTION_INFO_V1(qidrisk_sketch_classes_final);
PG_FUNCTION_INFO_V1(approx_interval);

/* Whether a class whose fingerprint's high half is hi is kept at level */
static inline bool
Kept(uint64 hi, int level)
{
	return level == 0 || (hi >> (64 - level)) == 0;
}

/* Slots a table needs to keep capacity classes at most half full */
static uint64
SlotsFor(int64 capacity)
{
	uint64		slots = SKETCH_INITIAL_SLOTS;

	while (slots < (uint64) capacity * 2)
		slots *= 2;
	return slots;
}

/* Refuse a capacity outside the supported range, naming the function */
void
QidSketchCheckCapacity(int64 capacity, const char *funcname)
{
	double		bytes;
	Size		budget = QidStateMemoryBudget();

	if (capacity < QIDRISK_SKETCH_MIN_CAPACITY || capacity > QIDRISK_SKETCH_MAX_CAPACITY)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("capacity of %s must be between %d and %d, not " INT64_FORMAT,
						funcname, QIDRISK_SKETCH_MIN_CAPACITY,
						QIDRISK_SKETCH_MAX_CAPACITY, capacity),
				 errdetail("The capacity is the number of classes the sample keeps; "
						   "the relative standard error is about 1/sqrt(capacity / 2).")));

	/* the largest the table can grow to, checked up front */
	bytes = (double) SlotsFor(capacity) * sizeof(SketchEntry);
	if (bytes > (double) budget)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s: a sample of capacity " INT64_FORMAT " exceeds qidrisk.max_state_memory",
						funcname, capacity),
				 errdetail("The sample may grow to %.0f kB; the budget is %zu kB.",
						   ceil(bytes / 1024.0), budget / 1024),
				 errhint("Lower the capacity, or raise qidrisk.max_state_memory "
						 "(or work_mem when it is -1).")));
}

/* Create an empty sketch in context */
QidSketch *
QidSketchCreate(MemoryContext context, int32 capacity)
{
	QidSketch  *sketch = MemoryContextAllocZero(context, sizeof(QidSketch));

	sketch->context = context;
	sketch->capacity = capacity;
	QidSampleKeyGet(&sketch->key);
	sketch->nslots = SKETCH_INITIAL_SLOTS;
	sketch->slots = MemoryContextAllocZero(context,
										   sketch->nslots * sizeof(SketchEntry));
	return sketch;
}

/* Put a class known to be absent into slots (no counters touched) */
static inline void
PlaceEntry(SketchEntry *slots, uint64 nslots, const SketchEntry *entry)
{
	uint64		mask = nslots - 1;
	uint64		i = entry->lo & mask;

	while (slots[i].count != 0)
		i = (i + 1) & mask;
	slots[i] = *entry;
}

/* Rebuild the table with nslots slots, keeping only classes kept at the level */
static void
Rebuild(QidSketch *sketch, uint64 nslots)
{
	SketchEntry *slots = MemoryContextAllocHuge(sketch->context,
												nslots * sizeof(SketchEntry));
	int64		nkept = 0;

	memset(slots, 0, nslots * sizeof(SketchEntry));
	for (uint64 i = 0; i < sketch->nslots; i++)
	{
		SketchEntry *entry = &sketch->slots[i];

		if (entry->count == 0 || !Kept(entry->hi, sketch->level))
			continue;
		PlaceEntry(slots, nslots, entry);
		nkept++;
	}
	pfree(sketch->slots);
	sketch->slots = slots;
	sketch->nslots = nslots;
	sketch->nkept = nkept;
}

/* Raise the level until at most capacity classes are kept */
static void
Subsample(QidSketch *sketch)
{
	while (sketch->nkept > sketch->capacity && sketch->level < 63)
	{
		int64		survivors = 0;

		sketch->level++;
		for (uint64 i = 0; i < sketch->nslots; i++)
			survivors += (sketch->slots[i].count != 0 &&
						  Kept(sketch->slots[i].hi, sketch->level));
		sketch->nkept = survivors;
	}
	Rebuild(sketch, sketch->nslots);
}

/* Count count rows of the class with fingerprint (lo, hi), if it is kept */
static inline void
AddClass(QidSketch *sketch, uint64 lo, uint64 hi, int64 count)
{
	uint64		mask;
	uint64		i;

	if (!Kept(hi, sketch->level))
		return;
	mask = sketch->nslots - 1;
	i = lo & mask;
	for (;;)
	{
		SketchEntry *entry = &sketch->slots[i];

		if (entry->count == 0)
		{
			entry->lo = lo;
			entry->hi = hi;
			entry->count = count;
			sketch->nkept++;
			if (sketch->nkept > sketch->capacity)
				Subsample(sketch);
			else if ((uint64) sketch->nkept * 2 > sketch->nslots)
				Rebuild(sketch, sketch->nslots * 2);
			return;
		}
		if (entry->lo == lo && entry->hi == hi)
		{
			entry->count += count;
			return;
		}
		i = (i + 1) & mask;
	}
}

/* Count one row */
void
QidSketchAddRow(QidSketch *sketch, const QidFingerprint *fp)
{
	QidFingerprint permuted;

	/* sampled by a keyed permutation: chosen fingerprints cannot steer it */
	QidSamplePermute(&sketch->key, fp, &permuted);
	sketch->rows++;
	AddClass(sketch, permuted.lo, permuted.hi, 1);
}

/* Merge from into into; both must have the same capacity */
void
QidSketchMerge(QidSketch *into, const QidSketch *from)
{
	if (into->capacity != from->capacity)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("capacity must be the same for every row of a group"),
				 errdetail("Partial samples have capacities %d and %d.",
						   into->capacity, from->capacity)));
	if (memcmp(&into->key, &from->key, sizeof(QidSampleKey)) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot merge samples drawn under different keys"),
				 errdetail("Partial samples of an approximate aggregate merge only within one statement.")));
	into->rows += from->rows;
	if (from->level > into->level)
	{
		into->level = from->level;
		Rebuild(into, into->nslots);
	}
	for (uint64 i = 0; i < from->nslots; i++)
	{
		const SketchEntry *entry = &from->slots[i];

		if ((i & SKETCH_INTERRUPT_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		if (entry->count != 0)
			AddClass(into, entry->lo, entry->hi, entry->count);
	}
}

/* Read the capacity argument, which must be constant over a group */
static int32
CapacityArgument(FunctionCallInfo fcinfo, int argno, QidSketch *sketch)
{
	int32		capacity;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("capacity must not be NULL")));
	capacity = PG_GETARG_INT32(argno);
	if (sketch != NULL && sketch->capacity != capacity)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("capacity must be the same for every row of a group"),
				 errdetail("Saw capacity = %d and then capacity = %d.",
						   sketch->capacity, capacity)));
	return capacity;
}

/* The sketch in argument 0, created with capacity on the first row */
static QidSketch *
SketchForUpdate(FunctionCallInfo fcinfo, int32 capacity, const char *funcname)
{
	MemoryContext aggcontext;

	if (!PG_ARGISNULL(0))
		return (QidSketch *) PG_GETARG_POINTER(0);
	aggcontext = AggregateContext(fcinfo);
	QidSketchCheckCapacity(capacity, funcname);
	return QidSketchCreate(aggcontext, capacity);
}

/* Transition of approx_class_profile(capacity, qid...) */
Datum
qidrisk_sketch_transfn(PG_FUNCTION_ARGS)
{
	QidSketch  *sketch = PG_ARGISNULL(0) ? NULL : (QidSketch *) PG_GETARG_POINTER(0);
	QidHasher  *hasher = (QidHasher *) fcinfo->flinfo->fn_extra;
	int32		capacity = CapacityArgument(fcinfo, 1, sketch);
	QidFingerprint fp;

	if (unlikely(hasher == NULL))
		hasher = QidHasherGet(fcinfo, 2, -1, AggregateName(fcinfo));
	if (sketch == NULL)
		sketch = SketchForUpdate(fcinfo, capacity, AggregateName(fcinfo));
	QidFingerprintRow(hasher, fcinfo, &fp);
	QidSketchAddRow(sketch, &fp);
	PG_RETURN_POINTER(sketch);
}

/* Transition of approx_singleton_count(qid...) and friends: default capacity */
Datum
qidrisk_sketch_default_transfn(PG_FUNCTION_ARGS)
{
	QidSketch  *sketch;
	QidHasher  *hasher = (QidHasher *) fcinfo->flinfo->fn_extra;
	QidFingerprint fp;

	if (unlikely(hasher == NULL))
		hasher = QidHasherGet(fcinfo, 1, -1, AggregateName(fcinfo));
	sketch = SketchForUpdate(fcinfo, QIDRISK_SKETCH_DEFAULT_CAPACITY,
							 "approximate qidrisk aggregate");
	QidFingerprintRow(hasher, fcinfo, &fp);
	QidSketchAddRow(sketch, &fp);
	PG_RETURN_POINTER(sketch);
}

/*
 * Transition of approx_class_profile_key(capacity, key): needs no call-site
 * information, so a distributed planner may call it anywhere.  NULL keys are
 * skipped.
 */
Datum
qidrisk_sketch_key_transfn(PG_FUNCTION_ARGS)
{
	QidSketch  *sketch = PG_ARGISNULL(0) ? NULL : (QidSketch *) PG_GETARG_POINTER(0);
	int32		capacity = CapacityArgument(fcinfo, 1, sketch);
	QidFingerprint fp;

	if (sketch == NULL)
	{
		QidCheckKeyNotConstant(fcinfo, 2);
		sketch = SketchForUpdate(fcinfo, capacity, "approx_class_profile_key");
	}
	if (PG_ARGISNULL(2))
		PG_RETURN_POINTER(sketch);
	QidKeyToFingerprint(PG_GETARG_UUID_P(2), &fp);
	QidSketchAddRow(sketch, &fp);
	PG_RETURN_POINTER(sketch);
}

/* Transition of approx_singleton_count_key(key) and friends */
Datum
qidrisk_sketch_key_default_transfn(PG_FUNCTION_ARGS)
{
	QidSketch  *sketch;
	QidFingerprint fp;

	if (PG_ARGISNULL(0))
		QidCheckKeyNotConstant(fcinfo, 1);
	sketch = SketchForUpdate(fcinfo, QIDRISK_SKETCH_DEFAULT_CAPACITY,
							 "approximate qidrisk aggregate");
	if (PG_ARGISNULL(1))
		PG_RETURN_POINTER(sketch);
	QidKeyToFingerprint(PG_GETARG_UUID_P(1), &fp);
	QidSketchAddRow(sketch, &fp);
	PG_RETURN_POINTER(sketch);
}

/* Copy a sketch into context */
static QidSketch *
CopySketch(MemoryContext context, const QidSketch *from)
{
	QidSketch  *copy = MemoryContextAlloc(context, sizeof(QidSketch));

	*copy = *from;
	copy->context = context;
	copy->slots = MemoryContextAllocHuge(context, from->nslots * sizeof(SketchEntry));
	memcpy(copy->slots, from->slots, from->nslots * sizeof(SketchEntry));
	return copy;
}

/* Combine two partial sketches into one owned by the aggregate context */
Datum
qidrisk_sketch_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext = AggregateContext(fcinfo);
	QidSketch  *into = PG_ARGISNULL(0) ? NULL : (QidSketch *) PG_GETARG_POINTER(0);
	QidSketch  *from = PG_ARGISNULL(1) ? NULL : (QidSketch *) PG_GETARG_POINTER(1);

	if (from == NULL)
	{
		if (into == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(into);
	}
	if (into == NULL)
		PG_RETURN_POINTER(CopySketch(aggcontext, from));
	QidSketchMerge(into, from);
	PG_RETURN_POINTER(into);
}

/*
 * Serialize: format version, capacity, level, rows, kept classes, then each
 * kept class as (fingerprint low, fingerprint high, size), the size in one
 * byte when below 255 and as 255 plus eight bytes otherwise.
 */
bytea *
QidSketchSerialize(const QidSketch *sketch)
{
	StringInfoData buf;
	int64		written PG_USED_FOR_ASSERTS_ONLY = 0;

	pq_begintypsend(&buf);
	enlargeStringInfo(&buf, SKETCH_HEADER_BYTES + (int) sketch->nkept * 17);
	pq_sendbyte(&buf, SKETCH_FORMAT_VERSION);
	pq_sendint32(&buf, sketch->capacity);
	pq_sendbyte(&buf, sketch->level);
	pq_sendint64(&buf, sketch->rows);
	pq_sendint64(&buf, sketch->nkept);
	for (uint64 i = 0; i < sketch->nslots; i++)
	{
		const SketchEntry *entry = &sketch->slots[i];

		if (entry->count == 0)
			continue;
		pq_sendint64(&buf, (int64) entry->lo);
		pq_sendint64(&buf, (int64) entry->hi);
		if (entry->count < SKETCH_LONG_COUNT)
			pq_sendbyte(&buf, (uint8) entry->count);
		else
		{
			pq_sendbyte(&buf, SKETCH_LONG_COUNT);
			pq_sendint64(&buf, entry->count);
		}
		written++;
	}
	Assert(written == sketch->nkept);
	return pq_endtypsend(&buf);
}

/* Raise the error for a serialized sketch that does not parse */
static void
CorruptSketch(const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg("invalid qidrisk sample state"),
			 errdetail("%s", detail)));
}

/* Rebuild a sketch from QidSketchSerialize's output, validating everything */
QidSketch *
QidSketchDeserialize(MemoryContext context, bytea *bytes)
{
	StringInfoData buf;
	QidSketch  *sketch;
	int64		capacity;
	int			level;
	int64		rows;
	int64		nkept;
	int64		kept_rows = 0;

	buf.data = VARDATA_ANY(bytes);
	buf.len = VARSIZE_ANY_EXHDR(bytes);
	buf.maxlen = buf.len;
	buf.cursor = 0;

	if (buf.len < SKETCH_HEADER_BYTES)
		CorruptSketch("The state is shorter than its header.");
	if (pq_getmsgbyte(&buf) != SKETCH_FORMAT_VERSION)
		CorruptSketch("The state was written in an unknown format version.");
	capacity = (int32) pq_getmsgint(&buf, 4);
	level = pq_getmsgbyte(&buf);
	rows = pq_getmsgint64(&buf);
	nkept = pq_getmsgint64(&buf);
	if (capacity < QIDRISK_SKETCH_MIN_CAPACITY || capacity > QIDRISK_SKETCH_MAX_CAPACITY ||
		level > 63 || rows < 0 || nkept < 0 || nkept > capacity || nkept > rows)
		CorruptSketch("The state's header holds impossible counts.");
	if ((int64) (buf.len - buf.cursor) < nkept * 17)
		CorruptSketch("The state is shorter than its number of classes.");

	sketch = QidSketchCreate(context, (int32) capacity);
	sketch->level = level;
	sketch->rows = rows;
	if (SlotsFor(nkept) > sketch->nslots)
		Rebuild(sketch, SlotsFor(nkept));
	for (int64 i = 0; i < nkept; i++)
	{
		uint64		lo;
		uint64		hi;
		int64		count;
		int64		before = sketch->nkept;

		if ((i & SKETCH_INTERRUPT_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		lo = (uint64) pq_getmsgint64(&buf);
		hi = (uint64) pq_getmsgint64(&buf);
		count = pq_getmsgbyte(&buf);
		if (count == SKETCH_LONG_COUNT)
		{
			count = pq_getmsgint64(&buf);
			if (count < SKETCH_LONG_COUNT)
				CorruptSketch("A class size is written in the long form although it is short.");
		}
		if (count <= 0 || count > rows - kept_rows)
			CorruptSketch("A class of the state has an impossible size.");
		if (!Kept(hi, level))
			CorruptSketch("A class of the state does not belong to its sample level.");
		kept_rows += count;
		AddClass(sketch, lo, hi, count);
		if (sketch->nkept != before + 1 || sketch->level != level)
			CorruptSketch("The state holds a class twice.");
	}
	pq_getmsgend(&buf);
	return sketch;
}

Datum
qidrisk_sketch_serialize(PG_FUNCTION_ARGS)
{
	(void) AggregateContext(fcinfo);
	PG_RETURN_BYTEA_P(QidSketchSerialize((QidSketch *) PG_GETARG_POINTER(0)));
}

Datum
qidrisk_sketch_deserialize(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext = AggregateContext(fcinfo);

	PG_RETURN_POINTER(QidSketchDeserialize(aggcontext, PG_GETARG_BYTEA_PP(0)));
}

/* The estimate and standard error of a kind of class of which kept are kept */
static void
Estimate(const QidSketch *sketch, int64 kept, double *estimate, double *se)
{
	double		rate = ldexp(1.0, -sketch->level);

	*estimate = (double) kept / rate;
	*se = sqrt((double) kept * (1.0 - rate)) / rate;
}

/* Kept classes, and kept classes of size 1 */
static void
KeptCounts(const QidSketch *sketch, int64 *classes, int64 *singletons)
{
	*classes = 0;
	*singletons = 0;
	if (sketch == NULL)
		return;
	*classes = sketch->nkept;
	for (uint64 i = 0; i < sketch->nslots; i++)
		*singletons += (sketch->slots[i].count == 1);
}

/* The estimate of kept singleton classes, or of all kept classes, in argument 0 */
static double
FinalEstimate(FunctionCallInfo fcinfo, bool singletons_only)
{
	QidSketch  *sketch = PG_ARGISNULL(0) ? NULL : (QidSketch *) PG_GETARG_POINTER(0);
	int64		classes;
	int64		singletons;
	double		estimate = 0;
	double		se;

	KeptCounts(sketch, &classes, &singletons);
	if (sketch != NULL)
		Estimate(sketch, singletons_only ? singletons : classes, &estimate, &se);
	return estimate;
}

Datum
qidrisk_sketch_singletons_final(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT8(FinalEstimate(fcinfo, true));
}

Datum
qidrisk_sketch_classes_final(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT8(FinalEstimate(fcinfo, false));
}

/* Order int64 values ascending */
static int
CompareCounts(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return (x > y) - (x < y);
}

/*
 * Final function of approx_class_profile: (rows, classes, classes_se,
 * singletons, singletons_se, singleton_share, sampling_rate,
 * sampled_classes, class_sizes, class_counts, class_counts_se).
 */
Datum
qidrisk_sketch_profile_final(PG_FUNCTION_ARGS)
{
	QidSketch  *sketch = PG_ARGISNULL(0) ? NULL : (QidSketch *) PG_GETARG_POINTER(0);
	QidSketch	empty = {0};
	TupleDesc	tupdesc;
	Datum		values[11];
	bool		nulls[11] = {false};
	int64	   *sizes;
	int64		nsizes = 0;
	Datum	   *size_datums;
	Datum	   *count_datums;
	Datum	   *se_datums;
	int			nbins = 0;
	int64		kept_singletons = 0;
	double		estimate;
	double		se;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "approx_class_profile must return a composite type");
	tupdesc = BlessTupleDesc(tupdesc);
	if (sketch == NULL)
		sketch = &empty;

	/* the kept classes' sizes, sorted, give the histogram */
	sizes = palloc(Max(sketch->nkept, 1) * sizeof(int64));
	for (uint64 i = 0; i < sketch->nslots; i++)
		if (sketch->slots[i].count != 0)
			sizes[nsizes++] = sketch->slots[i].count;
	qsort(sizes, nsizes, sizeof(int64), CompareCounts);
	size_datums = palloc(Max(nsizes, 1) * sizeof(Datum));
	count_datums = palloc(Max(nsizes, 1) * sizeof(Datum));
	se_datums = palloc(Max(nsizes, 1) * sizeof(Datum));
	for (int64 i = 0; i < nsizes;)
	{
		int64		j = i;

		while (j < nsizes && sizes[j] == sizes[i])
			j++;
		if (sizes[i] == 1)
			kept_singletons = j - i;
		Estimate(sketch, j - i, &estimate, &se);
		size_datums[nbins] = Int64GetDatum(sizes[i]);
		count_datums[nbins] = Float8GetDatum(estimate);
		se_datums[nbins] = Float8GetDatum(se);
		nbins++;
		i = j;
	}

	values[0] = Int64GetDatum(sketch->rows);
	Estimate(sketch, sketch->nkept, &estimate, &se);
	values[1] = Float8GetDatum(estimate);
	values[2] = Float8GetDatum(se);
	Estimate(sketch, kept_singletons, &estimate, &se);
	values[3] = Float8GetDatum(estimate);
	values[4] = Float8GetDatum(se);
	if (sketch->rows > 0)
		values[5] = Float8GetDatum(estimate / (double) sketch->rows);
	else
		nulls[5] = true;
	values[6] = Float8GetDatum(ldexp(1.0, -sketch->level));
	values[7] = Int64GetDatum(sketch->nkept);
	values[8] = PointerGetDatum(construct_array(size_datums, nbins, INT8OID, sizeof(int64),
												FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	values[9] = PointerGetDatum(construct_array(count_datums, nbins, FLOAT8OID, sizeof(float8),
												FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	values[10] = PointerGetDatum(construct_array(se_datums, nbins, FLOAT8OID, sizeof(float8),
												 FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/* The z with P(|Z| <= z) = confidence for a standard normal Z, by bisection */
static double
NormalQuantile(double confidence)
{
	double		low = 0.0;
	double		high = 40.0;

	for (int i = 0; i < 200; i++)
	{
		double		mid = (low + high) / 2;

		/* P(|Z| <= z) = erf(z / sqrt 2) */
		if (erf(mid / M_SQRT2) < confidence)
			low = mid;
		else
			high = mid;
	}
	return (low + high) / 2;
}

/*
 * approx_interval(estimate, standard_error, sampling_rate, confidence):
 * a confidence interval for a count estimated from a sample.  Normal
 * approximation estimate +- z * se, but never below the kept classes
 * themselves (estimate * rate, which certainly exist); with none kept the
 * upper end is the exact Poisson bound -ln(1 - confidence) / rate.
 */
Datum
approx_interval(PG_FUNCTION_ARGS)
{
	double		estimate = PG_GETARG_FLOAT8(0);
	double		se = PG_GETARG_FLOAT8(1);
	double		rate = PG_GETARG_FLOAT8(2);
	double		confidence = PG_GETARG_FLOAT8(3);
	double		z;
	double		low;
	double		high;
	TupleDesc	tupdesc;
	Datum		values[2];
	bool		nulls[2] = {false, false};

	if (isnan(estimate) || isinf(estimate) || estimate < 0 ||
		isnan(se) || isinf(se) || se < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("estimate and standard_error must be finite and not negative")));
	if (isnan(rate) || !(rate > 0 && rate <= 1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("sampling_rate must be in (0, 1], not %g", rate)));
	if (isnan(confidence) || !(confidence > 0 && confidence < 1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("confidence must be between 0 and 1 (exclusive), not %g",
						confidence)));
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "approx_interval must return a composite type");
	tupdesc = BlessTupleDesc(tupdesc);

	z = NormalQuantile(confidence);
	low = Max(estimate - z * se, estimate * rate);
	high = estimate + z * se;
	if (rate < 1 && estimate == 0)
		high = -log(1 - confidence) / rate;
	values[0] = Float8GetDatum(low);
	values[1] = Float8GetDatum(high);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
