/*
 * utility.c
 *	  generalization_utility: what a generalization costs, so that analysts
 *	  can compare them (Lodha & Thomas 2008): rows modified, the squared error
 *	  normalised by the one-bucket error (Error/MinError, Section 5), and the
 *	  rank difference of Definition 8.
 *
 * Ranks are midranks: a value's rank is the number of original values below
 * it plus half of (the number equal to it plus one), so ties and values that
 * are not among the originals (a bucket mean) have a rank too, and with
 * distinct values Definition 8 holds exactly.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "aggcommon.h"
#include "qidrisk.h"
#include "settings.h"

PG_FUNCTION_INFO_V1(qidrisk_utility_transfn);
PG_FUNCTION_INFO_V1(qidrisk_utility_final);

typedef struct UtilityPair
{
	double		original;
	double		generalized;
} UtilityPair;

typedef struct UtilityState
{
	MemoryContext context;
	UtilityPair *pairs;			/* rows with both values */
	int64		npairs;
	int64		capacity;
	int64		suppressed;		/* rows whose generalized value is NULL */
	Size		budget;
} UtilityState;

static void
CheckFinite(double value, const char *name)
{
	if (isnan(value) || isinf(value))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("generalization_utility: %s must be finite, not %g", name, value)));
}

Datum
qidrisk_utility_transfn(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext = AggregateContext(fcinfo);
	UtilityState *state;

	if (PG_ARGISNULL(0))
	{
		state = MemoryContextAllocZero(aggcontext, sizeof(UtilityState));
		state->context = aggcontext;
		state->capacity = 1024;
		state->budget = QidStateMemoryBudget();
		state->pairs = MemoryContextAllocHuge(aggcontext, state->capacity * sizeof(UtilityPair));
	}
	else
		state = (UtilityState *) PG_GETARG_POINTER(0);

	/* a row without an original value has nothing to lose */
	if (PG_ARGISNULL(1))
		PG_RETURN_POINTER(state);
	if (PG_ARGISNULL(2))
	{
		state->suppressed++;
		PG_RETURN_POINTER(state);
	}
	if (state->npairs == state->capacity)
	{
		if ((double) state->capacity * 2 * sizeof(UtilityPair) > (double) state->budget)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("generalization_utility state exceeds qidrisk.max_state_memory"),
					 errhint("Raise qidrisk.max_state_memory (or work_mem when it is -1).")));
		state->capacity *= 2;
		state->pairs = repalloc_huge(state->pairs, state->capacity * sizeof(UtilityPair));
	}
	state->pairs[state->npairs].original = PG_GETARG_FLOAT8(1);
	state->pairs[state->npairs].generalized = PG_GETARG_FLOAT8(2);
	CheckFinite(state->pairs[state->npairs].original, "original");
	CheckFinite(state->pairs[state->npairs].generalized, "generalized");
	state->npairs++;
	PG_RETURN_POINTER(state);
}

static int
CompareDoubles(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return (x > y) - (x < y);
}

/* Midrank of value among sorted[0..n) */
static double
Midrank(const double *sorted, int64 n, double value)
{
	int64		lo = 0;
	int64		hi = n;
	int64		below;

	while (lo < hi)
	{
		int64		mid = lo + (hi - lo) / 2;

		if (sorted[mid] < value)
			lo = mid + 1;
		else
			hi = mid;
	}
	below = lo;
	hi = n;
	while (lo < hi)
	{
		int64		mid = lo + (hi - lo) / 2;

		if (sorted[mid] <= value)
			lo = mid + 1;
		else
			hi = mid;
	}
	return below + (double) (lo - below + 1) / 2.0;
}

Datum
qidrisk_utility_final(PG_FUNCTION_ARGS)
{
	UtilityState *state;
	TupleDesc	tupdesc;
	Datum		values[6];
	bool		nulls[6] = {false};
	double	   *sorted;
	int64		modified = 0;
	double		mean = 0.0;
	double		min_error = 0.0;
	long double error = 0.0;
	long double rank_difference = 0.0;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	state = (UtilityState *) PG_GETARG_POINTER(0);
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "generalization_utility must return a composite type");
	tupdesc = BlessTupleDesc(tupdesc);

	sorted = palloc_extended(Max(state->npairs, 1) * sizeof(double), MCXT_ALLOC_HUGE);
	for (int64 i = 0; i < state->npairs; i++)
	{
		UtilityPair *pair = &state->pairs[i];
		double		delta = pair->original - mean;

		sorted[i] = pair->original;
		/* Welford: the one-bucket error without cancellation */
		mean += delta / (i + 1);
		min_error += delta * (pair->original - mean);
		error += (long double) (pair->generalized - pair->original) *
			(pair->generalized - pair->original);
		if (pair->generalized != pair->original)
			modified++;
	}
	qsort(sorted, state->npairs, sizeof(double), CompareDoubles);
	for (int64 i = 0; i < state->npairs; i++)
	{
		UtilityPair *pair = &state->pairs[i];

		rank_difference += fabs(Midrank(sorted, state->npairs, pair->generalized) -
								Midrank(sorted, state->npairs, pair->original));
		if ((i & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
	}

	values[0] = Int64GetDatum(state->npairs + state->suppressed);
	values[1] = Int64GetDatum(modified + state->suppressed);
	values[2] = Float8GetDatum((double) error);
	values[3] = Float8GetDatum(min_error);
	if (min_error > 0.0)
		values[4] = Float8GetDatum((double) error / min_error);
	else
		nulls[4] = true;
	values[5] = Float8GetDatum((double) rank_difference);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
