/*
 * sample.c
 *	  quantile_cuts_approx: k-anonymous bucket cuts from a uniform sample of
 *	  s = (1/eps) ln(1/delta) values (Lodha & Thomas 2008, Section 4.1,
 *	  after Vitter's reservoir), in bounded memory.
 *
 * Each row draws a random 64-bit priority and the state keeps the s rows of
 * smallest priority (a max-heap).  That is a uniform sample without
 * replacement, and two states merge exactly: keep the s smallest of both.
 */
#include "postgres.h"

#include <math.h>

#include "common/pg_prng.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "aggcommon.h"
#include "qidrisk.h"
#include "quantile.h"
#include "settings.h"

PG_FUNCTION_INFO_V1(qidrisk_sample_transfn);
PG_FUNCTION_INFO_V1(qidrisk_sample_combine);
PG_FUNCTION_INFO_V1(qidrisk_sample_serialize);
PG_FUNCTION_INFO_V1(qidrisk_sample_deserialize);
PG_FUNCTION_INFO_V1(qidrisk_quantile_cuts_approx_final);
PG_FUNCTION_INFO_V1(qidrisk_quantile_sample_size);

#define SAMPLE_STATE_FORMAT_VERSION 1
#define DEFAULT_EPSILON 0.001
#define DEFAULT_DELTA 0.01
#define MAX_SAMPLE_SIZE (1 << 26)

typedef struct SampledValue
{
	uint64		priority;
	Datum		value;
} SampledValue;

typedef struct SampleState
{
	MemoryContext context;
	ValueType  *vt;
	SampledValue *heap;			/* max-heap on priority */
	int			size;
	int			capacity;		/* s */
	int64		rows;			/* non-NULL rows seen */
	Datum		minimum;		/* smallest value seen: the first cut */
	bool		has_k;
	double		k;
	pg_prng_state prng;
} SampleState;

/* s = ceil((1/eps) ln(1/delta)), the paper's sample size */
static int
SampleSize(double eps, double delta)
{
	double		size;

	if (isnan(eps) || eps <= 0.0 || eps >= 1.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("eps must lie strictly between 0 and 1, not %g", eps)));
	if (isnan(delta) || delta <= 0.0 || delta >= 1.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("delta must lie strictly between 0 and 1, not %g", delta)));
	size = ceil(log(1.0 / delta) / eps);
	/* the size may have hundreds of digits: say it in scientific notation */
	if (size > MAX_SAMPLE_SIZE)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("eps = %g and delta = %g need a sample of more than %d values",
						eps, delta, MAX_SAMPLE_SIZE),
				 errdetail("The sample size ceil(ln(1/delta) / eps) is %.3g.", size),
				 errhint("Raise eps or delta, or use the exact quantile_cuts.")));
	return (int) Max(size, 1.0);
}

Datum
qidrisk_quantile_sample_size(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(SampleSize(PG_GETARG_FLOAT8(0), PG_GETARG_FLOAT8(1)));
}

static SampleState *
SampleStateCreate(MemoryContext context, ValueType *vt, int capacity)
{
	SampleState *state = MemoryContextAllocZero(context, sizeof(SampleState));

	if ((double) capacity * sizeof(SampledValue) > (double) QidStateMemoryBudget())
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a sample of %d values exceeds qidrisk.max_state_memory", capacity)));
	state->context = context;
	state->vt = vt;
	state->capacity = capacity;
	state->heap = MemoryContextAllocHuge(context, (Size) capacity * sizeof(SampledValue));
	/* each process draws its own stream: the priorities stay independent */
	pg_prng_seed(&state->prng, pg_prng_uint64(&pg_global_prng_state));
	return state;
}

static void
SiftDown(SampledValue *heap, int size, int at)
{
	for (;;)
	{
		int			child = 2 * at + 1;
		SampledValue swap;

		if (child >= size)
			return;
		if (child + 1 < size && heap[child + 1].priority > heap[child].priority)
			child++;
		if (heap[at].priority >= heap[child].priority)
			return;
		swap = heap[at];
		heap[at] = heap[child];
		heap[child] = swap;
		at = child;
	}
}

static void
SiftUp(SampledValue *heap, int at)
{
	while (at > 0)
	{
		int			parent = (at - 1) / 2;
		SampledValue swap;

		if (heap[parent].priority >= heap[at].priority)
			return;
		swap = heap[at];
		heap[at] = heap[parent];
		heap[parent] = swap;
		at = parent;
	}
}

/* Keep the smallest value seen, so that no row falls below the first cut */
static void
SampleTrackMinimum(SampleState *state, Datum value, int64 rows_before)
{
	ValueType  *vt = state->vt;

	if (rows_before > 0 &&
		ApplySortComparator(value, false, state->minimum, false, &vt->sort) >= 0)
		return;
	if (!vt->typbyval)
	{
		if (rows_before > 0)
			pfree(DatumGetPointer(state->minimum));
		value = datumCopy(value, false, vt->typlen);
	}
	state->minimum = value;
}

/* Offer a value with its priority; the state keeps the s smallest */
static void
SampleOffer(SampleState *state, uint64 priority, Datum value)
{
	ValueType  *vt = state->vt;

	if (state->size < state->capacity)
	{
		state->heap[state->size].priority = priority;
		state->heap[state->size].value = vt->typbyval ? value :
			datumCopy(value, false, vt->typlen);
		SiftUp(state->heap, state->size);
		state->size++;
	}
	else if (priority < state->heap[0].priority)
	{
		if (!vt->typbyval)
		{
			pfree(DatumGetPointer(state->heap[0].value));
			value = datumCopy(value, false, vt->typlen);
		}
		state->heap[0].priority = priority;
		state->heap[0].value = value;
		SiftDown(state->heap, state->size, 0);
	}
}

/* quantile_cuts_approx(value, k [, eps, delta]) */
Datum
qidrisk_sample_transfn(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext = AggregateContext(fcinfo);
	SampleState *state;

	if (PG_ARGISNULL(0))
	{
		ValueType  *vt = ValueTypeGet(aggcontext, get_fn_expr_argtype(fcinfo->flinfo, 1),
									  PG_GET_COLLATION(), AggregateName(fcinfo));
		double		eps = DEFAULT_EPSILON;
		double		delta = DEFAULT_DELTA;

		if (PG_NARGS() > 3)
		{
			if (PG_ARGISNULL(3) || PG_ARGISNULL(4))
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("eps and delta must not be NULL")));
			eps = PG_GETARG_FLOAT8(3);
			delta = PG_GETARG_FLOAT8(4);
		}
		state = SampleStateCreate(aggcontext, vt, SampleSize(eps, delta));
	}
	else
		state = (SampleState *) PG_GETARG_POINTER(0);

	RememberAggParameter(fcinfo, 2, &state->has_k, &state->k);
	if (state->k < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be at least 1, not %g", state->k)));
	if (!PG_ARGISNULL(1))
	{
		Datum		value = PG_GETARG_DATUM(1);
		uint64		priority = pg_prng_uint64(&state->prng);

		MemoryContext old = MemoryContextSwitchTo(state->context);

		ValueCheckOrderable(state->vt, value, fcinfo);
		SampleTrackMinimum(state, value, state->rows);
		state->rows++;
		if (state->size < state->capacity || priority < state->heap[0].priority)
			SampleOffer(state, priority, value);
		MemoryContextSwitchTo(old);
	}
	PG_RETURN_POINTER(state);
}

Datum
qidrisk_sample_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext = AggregateContext(fcinfo);
	SampleState *into = PG_ARGISNULL(0) ? NULL : (SampleState *) PG_GETARG_POINTER(0);
	SampleState *from = PG_ARGISNULL(1) ? NULL : (SampleState *) PG_GETARG_POINTER(1);
	MemoryContext old;

	if (from == NULL)
		PG_RETURN_POINTER(into);
	if (into == NULL)
		into = SampleStateCreate(aggcontext, from->vt, from->capacity);
	if (into->capacity != from->capacity)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("eps and delta must be the same for every row of a group")));
	MergeAggParameter(&into->has_k, &into->k, from->has_k, from->k);
	old = MemoryContextSwitchTo(into->context);
	for (int i = 0; i < from->size; i++)
		SampleOffer(into, from->heap[i].priority, from->heap[i].value);
	if (from->rows > 0)
		SampleTrackMinimum(into, from->minimum, into->rows);
	MemoryContextSwitchTo(old);
	into->rows += from->rows;
	PG_RETURN_POINTER(into);
}

Datum
qidrisk_sample_serialize(PG_FUNCTION_ARGS)
{
	SampleState *state = (SampleState *) PG_GETARG_POINTER(0);
	ValueType  *vt = state->vt;
	StringInfoData buf;

	AggregateContext(fcinfo);
	pq_begintypsend(&buf);
	pq_sendint32(&buf, SAMPLE_STATE_FORMAT_VERSION);
	pq_sendint32(&buf, vt->type);
	pq_sendint32(&buf, vt->collation);
	pq_sendbyte(&buf, state->has_k);
	pq_sendfloat8(&buf, state->k);
	pq_sendint32(&buf, state->capacity);
	pq_sendint64(&buf, state->rows);
	pq_sendint32(&buf, state->size);
	/* the minimum first (when rows > 0), then the (priority, value) pairs */
	for (int i = -1; i < state->size; i++)
	{
		Datum		value = i < 0 ? state->minimum : state->heap[i].value;
		Size		space;
		char	   *target;

		if (i < 0 && state->rows == 0)
			continue;
		if (i >= 0)
			pq_sendint64(&buf, state->heap[i].priority);
		space = datumEstimateSpace(value, false, vt->typbyval, vt->typlen);
		enlargeStringInfo(&buf, space);
		target = buf.data + buf.len;
		datumSerialize(value, false, vt->typbyval, vt->typlen, &target);
		buf.len += space;
	}
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

Datum
qidrisk_sample_deserialize(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext = AggregateContext(fcinfo);
	bytea	   *bytes = PG_GETARG_BYTEA_PP(0);
	StringInfoData buf;
	SampleState *state;
	ValueType  *vt;
	Oid			type;
	Oid			collation;
	bool		has_k;
	double		k;
	int			capacity;
	int64		rows;
	int			size;
	MemoryContext old;

	buf.data = VARDATA_ANY(bytes);
	buf.len = VARSIZE_ANY_EXHDR(bytes);
	buf.maxlen = buf.len;
	buf.cursor = 0;
	if (pq_getmsgint(&buf, 4) != SAMPLE_STATE_FORMAT_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("unsupported qidrisk sample state format")));
	type = pq_getmsgint(&buf, 4);
	collation = pq_getmsgint(&buf, 4);
	has_k = pq_getmsgbyte(&buf);
	k = pq_getmsgfloat8(&buf);
	capacity = pq_getmsgint(&buf, 4);
	rows = pq_getmsgint64(&buf);
	size = pq_getmsgint(&buf, 4);
	if (capacity < 1 || capacity > MAX_SAMPLE_SIZE || size < 0 || size > capacity)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("corrupt qidrisk sample state")));
	vt = ValueTypeGet(aggcontext, type, collation, "qidrisk sample state");
	state = SampleStateCreate(aggcontext, vt, capacity);
	state->has_k = has_k;
	state->k = k;
	old = MemoryContextSwitchTo(aggcontext);
	for (int i = -1; i < size; i++)
	{
		uint64		priority = 0;
		char	   *start;
		bool		isnull;
		Datum		value;

		if (i < 0 && rows == 0)
			continue;
		if (i >= 0)
			priority = pq_getmsgint64(&buf);
		start = buf.data + buf.cursor;
		value = datumRestore(&start, &isnull);
		buf.cursor = start - buf.data;
		if (i < 0)
			SampleTrackMinimum(state, value, 0);
		else
			SampleOffer(state, priority, value);
	}
	state->rows = rows;
	MemoryContextSwitchTo(old);
	pq_getmsgend(&buf);
	PG_RETURN_POINTER(state);
}

/*
 * Cut the sample as quantile_cuts cuts the rows, with k scaled to the
 * sample: each sampled value stands for rows/s rows.  When the sample holds
 * every row, the result is quantile_cuts' exactly.
 */
Datum
qidrisk_quantile_cuts_approx_final(PG_FUNCTION_ARGS)
{
	SampleState *state;
	ValueCount *values;
	int64		nvalues = 0;
	int64	   *starts;
	int64		nbuckets;
	double		sample_k;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	state = (SampleState *) PG_GETARG_POINTER(0);
	if (state->rows == 0)
		PG_RETURN_NULL();
	if (state->k > (double) state->rows)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: k = %.0f exceeds the " INT64_FORMAT " non-NULL rows aggregated",
						AggregateName(fcinfo), state->k, state->rows)));

	values = palloc(sizeof(ValueCount) * state->size);
	for (int i = 0; i < state->size; i++)
	{
		values[i].value = state->heap[i].value;
		values[i].count = 1;
	}
	ValueCountSort(state->vt, values, state->size);
	/* fold equal sampled values into one entry with their count */
	for (int i = 0; i < state->size; i++)
	{
		if (nvalues > 0 &&
			ApplySortComparator(values[nvalues - 1].value, false, values[i].value, false,
								&state->vt->sort) == 0)
			values[nvalues - 1].count++;
		else
			values[nvalues++] = values[i];
	}
	sample_k = ceil(state->k * state->size / (double) state->rows);
	starts = palloc(sizeof(int64) * Max(nvalues, 1));
	nbuckets = BalancedCuts(values, nvalues, (int64) Max(sample_k, 1.0), starts);
	/* the first bucket reaches down to the smallest row, sampled or not */
	if (nbuckets > 0)
		values[starts[0]].value = state->minimum;
	PG_RETURN_ARRAYTYPE_P(CutsArray(state->vt, values, starts, nbuckets));
}
