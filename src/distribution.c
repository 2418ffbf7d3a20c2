/*
 * distribution.c
 *	  Aggregates over a value distribution: kl_uniform (Kullback-Leibler
 *	  distance to uniform) and the birthday-uniqueness aggregates (exact
 *	  k! e_k(p), Poissonized product, largest k above a target), from raw
 *	  rows (the frequency state's class sizes) or from (value, weight) rows.
 *
 * The weighted state keeps (fingerprint, weight) pairs; equal values are
 * summed when the state is read, so a census table of one row per value and
 * a table that repeats values give the same distribution.
 */
#include "postgres.h"

#include <math.h>

#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "aggcommon.h"
#include "birthday.h"
#include "fingerprint.h"
#include "freqengine.h"
#include "qidrisk.h"
#include "settings.h"

PG_FUNCTION_INFO_V1(qidrisk_weight_transfn);
PG_FUNCTION_INFO_V1(qidrisk_weight_param_transfn);
PG_FUNCTION_INFO_V1(qidrisk_weight_value_param_transfn);
PG_FUNCTION_INFO_V1(qidrisk_weight_combine);
PG_FUNCTION_INFO_V1(qidrisk_weight_serialize);
PG_FUNCTION_INFO_V1(qidrisk_weight_deserialize);
PG_FUNCTION_INFO_V1(qidrisk_kl_uniform_final);
PG_FUNCTION_INFO_V1(qidrisk_kl_uniform_weighted_final);
PG_FUNCTION_INFO_V1(qidrisk_birthday_exact_final);
PG_FUNCTION_INFO_V1(qidrisk_birthday_exact_weighted_final);
PG_FUNCTION_INFO_V1(qidrisk_birthday_poisson_final);
PG_FUNCTION_INFO_V1(qidrisk_birthday_poisson_weighted_final);
PG_FUNCTION_INFO_V1(qidrisk_birthday_max_k_final);
PG_FUNCTION_INFO_V1(qidrisk_birthday_max_k_weighted_final);

#define WEIGHT_STATE_FORMAT_VERSION 1
#define SERIALIZED_PAIR_BYTES (2 * sizeof(int64) + sizeof(double))
#define INTERRUPT_CHECK_MASK 0xFFFF

typedef struct WeightedValue
{
	QidFingerprint key;
	double		weight;
} WeightedValue;

/* Transition state of the weighted aggregates */
typedef struct WeightState
{
	MemoryContext context;
	WeightedValue *values;
	int64		nvalues;
	int64		capacity;
	bool		has_param;
	double		param;
	Size		budget;
} WeightState;

/* The class weights of a distribution, and their total */
typedef struct Distribution
{
	double	   *weights;
	int64		nclasses;
	double		total;
	bool		has_param;
	double		param;
} Distribution;

static WeightState *
WeightStateCreate(MemoryContext context, int64 capacity)
{
	WeightState *state = MemoryContextAllocZero(context, sizeof(WeightState));

	state->context = context;
	state->budget = QidStateMemoryBudget();
	state->capacity = Max(capacity, 64);
	state->values = MemoryContextAllocHuge(context, state->capacity * sizeof(WeightedValue));
	return state;
}

/* Make room for one more pair, within qidrisk.max_state_memory */
static void
WeightStateReserve(WeightState *state, int64 more)
{
	int64		capacity = state->capacity;

	if (state->nvalues + more <= capacity)
		return;
	while (capacity < state->nvalues + more)
		capacity *= 2;
	if ((double) capacity * sizeof(WeightedValue) > (double) state->budget)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("qidrisk weighted state exceeds qidrisk.max_state_memory"),
				 errdetail("The state holds " INT64_FORMAT " values; the budget is %zu kB.",
						   state->nvalues, state->budget / 1024),
				 errhint("Raise qidrisk.max_state_memory (or work_mem when it is -1).")));
	state->values = repalloc_huge(state->values, capacity * sizeof(WeightedValue));
	state->capacity = capacity;
}

/* Add one (value, weight) row; arguments: value at valuearg, weight after it */
static Datum
WeightUpdate(FunctionCallInfo fcinfo, int valuearg, int paramarg)
{
	MemoryContext aggcontext = AggregateContext(fcinfo);
	WeightState *state;
	QidHasher  *hasher = (QidHasher *) fcinfo->flinfo->fn_extra;
	int			weightarg = valuearg + 1;
	double		weight;

	state = PG_ARGISNULL(0) ? WeightStateCreate(aggcontext, 0) :
		(WeightState *) PG_GETARG_POINTER(0);
	if (unlikely(hasher == NULL))
		hasher = QidHasherGet(fcinfo, valuearg, 1, AggregateName(fcinfo));
	if (paramarg > 0)
		RememberAggParameter(fcinfo, paramarg, &state->has_param, &state->param);

	if (PG_ARGISNULL(weightarg))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("weight must not be NULL")));
	weight = PG_GETARG_FLOAT8(weightarg);
	if (isnan(weight) || isinf(weight) || weight < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("weight must be a finite number at least 0, not %g", weight)));

	WeightStateReserve(state, 1);
	QidFingerprintRow(hasher, fcinfo, &state->values[state->nvalues].key);
	state->values[state->nvalues].weight = weight;
	state->nvalues++;
	PG_RETURN_POINTER(state);
}

/* (state, value, weight) */
Datum
qidrisk_weight_transfn(PG_FUNCTION_ARGS)
{
	return WeightUpdate(fcinfo, 1, 0);
}

/* (state, param, value, weight) */
Datum
qidrisk_weight_param_transfn(PG_FUNCTION_ARGS)
{
	return WeightUpdate(fcinfo, 2, 1);
}

/* (state, value, weight, param) */
Datum
qidrisk_weight_value_param_transfn(PG_FUNCTION_ARGS)
{
	return WeightUpdate(fcinfo, 1, 3);
}

/* Append from's pairs to into */
static void
WeightStateAppend(WeightState *into, WeightState *from)
{
	MergeAggParameter(&into->has_param, &into->param, from->has_param, from->param);
	WeightStateReserve(into, from->nvalues);
	memcpy(into->values + into->nvalues, from->values, from->nvalues * sizeof(WeightedValue));
	into->nvalues += from->nvalues;
}

Datum
qidrisk_weight_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext = AggregateContext(fcinfo);
	WeightState *into = PG_ARGISNULL(0) ? NULL : (WeightState *) PG_GETARG_POINTER(0);
	WeightState *from = PG_ARGISNULL(1) ? NULL : (WeightState *) PG_GETARG_POINTER(1);

	if (from == NULL)
	{
		if (into == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(into);
	}
	if (into == NULL)
		into = WeightStateCreate(aggcontext, from->nvalues);
	WeightStateAppend(into, from);
	PG_RETURN_POINTER(into);
}

/* Serialize: version, has_param, param, count, then (lo, hi, weight) pairs */
Datum
qidrisk_weight_serialize(PG_FUNCTION_ARGS)
{
	WeightState *state = (WeightState *) PG_GETARG_POINTER(0);
	StringInfoData buf;
	double		bytes = 1 + 1 + sizeof(double) + sizeof(int64) + VARHDRSZ +
		(double) state->nvalues * SERIALIZED_PAIR_BYTES;

	(void) AggregateContext(fcinfo);
	if (bytes > MaxAllocSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("qidrisk weighted state too large to serialize"),
				 errhint("Disable parallel aggregation (max_parallel_workers_per_gather = 0).")));
	pq_begintypsend(&buf);
	enlargeStringInfo(&buf, (int) bytes);
	pq_sendbyte(&buf, WEIGHT_STATE_FORMAT_VERSION);
	pq_sendbyte(&buf, state->has_param ? 1 : 0);
	pq_sendfloat8(&buf, state->param);
	pq_sendint64(&buf, state->nvalues);
	for (int64 i = 0; i < state->nvalues; i++)
	{
		if ((i & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		pq_sendint64(&buf, (int64) state->values[i].key.lo);
		pq_sendint64(&buf, (int64) state->values[i].key.hi);
		pq_sendfloat8(&buf, state->values[i].weight);
	}
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/* Raise the error for a serialized state that does not parse */
static void
CorruptWeightState(const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg("invalid qidrisk weighted state"),
			 errdetail("%s", detail)));
}

Datum
qidrisk_weight_deserialize(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext = AggregateContext(fcinfo);
	bytea	   *bytes = PG_GETARG_BYTEA_PP(0);
	StringInfoData buf;
	WeightState *state;
	int			has_param;
	double		param;
	int64		nvalues;

	buf.data = VARDATA_ANY(bytes);
	buf.len = VARSIZE_ANY_EXHDR(bytes);
	buf.maxlen = buf.len;
	buf.cursor = 0;
	if (buf.len < (int) (2 + sizeof(double) + sizeof(int64)))
		CorruptWeightState("The state is shorter than its header.");
	if (pq_getmsgbyte(&buf) != WEIGHT_STATE_FORMAT_VERSION)
		CorruptWeightState("The state was written in an unknown format version.");
	has_param = pq_getmsgbyte(&buf);
	param = pq_getmsgfloat8(&buf);
	nvalues = pq_getmsgint64(&buf);
	if (has_param > 1 || isnan(param) || isinf(param) || nvalues < 0 ||
		(double) (buf.len - buf.cursor) != (double) nvalues * SERIALIZED_PAIR_BYTES)
		CorruptWeightState("The state's length does not match its header.");

	state = WeightStateCreate(aggcontext, nvalues);
	state->has_param = (has_param == 1);
	state->param = param;
	for (int64 i = 0; i < nvalues; i++)
	{
		WeightedValue *value = &state->values[i];

		if ((i & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		value->key.lo = (uint64) pq_getmsgint64(&buf);
		value->key.hi = (uint64) pq_getmsgint64(&buf);
		value->weight = pq_getmsgfloat8(&buf);
		if (isnan(value->weight) || isinf(value->weight) || value->weight < 0)
			CorruptWeightState("A weight of the state is not a finite number at least 0.");
	}
	state->nvalues = nvalues;
	pq_getmsgend(&buf);
	PG_RETURN_POINTER(state);
}

/* Order weighted values by fingerprint (a qsort comparator) */
static int
CompareWeightedValues(const void *a, const void *b)
{
	return QidFingerprintCompare(&((const WeightedValue *) a)->key,
								 &((const WeightedValue *) b)->key);
}

/* Sum the weights of equal values; values of weight 0 are not in the support */
static void
WeightedDistribution(WeightState *state, Distribution *dist)
{
	memset(dist, 0, sizeof(*dist));
	if (state == NULL)
		return;
	dist->has_param = state->has_param;
	dist->param = state->param;
	dist->weights = palloc_extended(Max(state->nvalues, 1) * sizeof(double), MCXT_ALLOC_HUGE);
	qsort(state->values, state->nvalues, sizeof(WeightedValue), CompareWeightedValues);
	for (int64 i = 0; i < state->nvalues; i++)
	{
		double		weight = state->values[i].weight;

		if ((i & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		if (i > 0 && CompareWeightedValues(&state->values[i], &state->values[i - 1]) == 0)
			dist->weights[dist->nclasses - 1] += weight;
		else
			dist->weights[dist->nclasses++] = weight;
		dist->total += weight;
	}
	/* drop classes of weight 0: they are outside the support */
	{
		int64		kept = 0;

		for (int64 i = 0; i < dist->nclasses; i++)
			if (dist->weights[i] > 0)
				dist->weights[kept++] = dist->weights[i];
		dist->nclasses = kept;
	}
}

typedef struct CollectContext
{
	Distribution *dist;
} CollectContext;

static void
CollectClass(int64 count, void *arg)
{
	Distribution *dist = ((CollectContext *) arg)->dist;

	dist->weights[dist->nclasses++] = (double) count;
	dist->total += (double) count;
}

/* The class sizes of a frequency state as a distribution */
static void
CountedDistribution(FreqState *state, Distribution *dist)
{
	CollectContext context = {dist};

	memset(dist, 0, sizeof(*dist));
	if (state == NULL)
		return;
	dist->has_param = state->has_param;
	dist->param = state->param;
	dist->weights = palloc_extended(Max(FreqStateClasses(state), 1) * sizeof(double),
									MCXT_ALLOC_HUGE);
	FreqStateVisit(state, CollectClass, &context);
}

/* Read the distribution of the state in argument 0 of a final function */
static void
FinalDistribution(FunctionCallInfo fcinfo, bool weighted, Distribution *dist)
{
	if (weighted)
		WeightedDistribution(PG_ARGISNULL(0) ? NULL : (WeightState *) PG_GETARG_POINTER(0), dist);
	else
		CountedDistribution(PG_ARGISNULL(0) ? NULL : (FreqState *) PG_GETARG_POINTER(0), dist);
	if (isinf(dist->total))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("the weights add up to more than a double precision number can hold"),
				 errhint("Scale the weights down.")));
}

/*
 * kappa = sum_i p_i ln(p_i M) over the observed values; unobserved values of
 * the domain contribute 0.  M defaults to the number of observed values.
 */
static Datum
KlUniform(FunctionCallInfo fcinfo, bool weighted)
{
	Distribution dist;
	double		domain;
	double		kappa = 0.0;

	FinalDistribution(fcinfo, weighted, &dist);
	if (dist.nclasses == 0 || dist.total <= 0)
		PG_RETURN_NULL();
	domain = dist.has_param ? dist.param : (double) dist.nclasses;
	if (domain < (double) dist.nclasses)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("domain_size %.0f is smaller than the %lld distinct values observed",
						domain, (long long) dist.nclasses),
				 errdetail("The domain must contain every observed value.")));
	for (int64 i = 0; i < dist.nclasses; i++)
	{
		double		p = dist.weights[i] / dist.total;

		kappa += p * log(p * domain);
	}
	/* rounding can leave a uniform distribution a hair below 0 */
	PG_RETURN_FLOAT8(Max(kappa, 0.0));
}

Datum
qidrisk_kl_uniform_final(PG_FUNCTION_ARGS)
{
	return KlUniform(fcinfo, false);
}

Datum
qidrisk_kl_uniform_weighted_final(PG_FUNCTION_ARGS)
{
	return KlUniform(fcinfo, true);
}

/* Check the group size k of the birthday aggregates */
static int64
GroupSize(Distribution *dist)
{
	if (dist->param < 0 || dist->param != floor(dist->param))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("group_size must be a whole number at least 0, not %g", dist->param)));
	/* a bigint near 2^63 rounds up to 2^63 as a double: keep it in range */
	if (dist->param >= 9223372036854775808.0)
		return PG_INT64_MAX;
	return (int64) dist->param;
}

/* The scaled recurrence keeps mantissas within [2^-300, 2^300] ... */
#define SCALED_HIGH 0x1p300
#define SCALED_LOW 0x1p-300
/* ... and a level's exponent at most this far below the level beneath it */
#define SCALED_MAX_GAP 600

/*
 * Give level j the exponent e (scaling its mantissa to keep its value), then
 * restore the cached scales of j and the levels above it, raising any level
 * left more than SCALED_MAX_GAP below its predecessor
 */
static void
SetLevelExponent(double *g, double *scale, int64 *exponent, int64 j, int64 e,
				 int64 top)
{
	g[j] = ldexp(g[j], (int) (exponent[j] - e));
	exponent[j] = e;
	scale[j] = ldexp(1.0, (int) (exponent[j - 1] - e));
	for (int64 l = j + 1; l <= top; l++)
	{
		int64		raised = exponent[l - 1] - SCALED_MAX_GAP;

		if (exponent[l] >= raised)
		{
			scale[l] = ldexp(1.0, (int) (exponent[l - 1] - exponent[l]));
			break;
		}
		/* a higher exponent, so a smaller mantissa for the same value */
		g[l] = ldexp(g[l], (int) (exponent[l] - raised));
		exponent[l] = raised;
		scale[l] = ldexp(1.0, SCALED_MAX_GAP);
	}
}

/*
 * Bring level j's mantissa near 1, its exponent at most SCALED_MAX_GAP below
 * level j - 1's
 */
static void
Renormalize(double *g, double *scale, int64 *exponent, int64 j, int64 top)
{
	int64		e = exponent[j];

	if (g[j] != 0.0)
		e += ilogb(g[j]);
	if (e < exponent[j - 1] - SCALED_MAX_GAP)
		e = exponent[j - 1] - SCALED_MAX_GAP;
	SetLevelExponent(g, scale, exponent, j, e, top);
}

/*
 * f_j = j! e_j(p_1..p_m), j = 0..kmax, after adding each value in turn:
 * f_j <- f_j + j p f_{j-1}.  Each f_j is the probability that j draws are
 * distinct and all among the values added so far, so it lies in [0, 1] and
 * never decreases; the function returns ln f_j (-Infinity for 0).
 *
 * A level is born small (j! p_1 ... p_j) and may grow by hundreds of orders
 * of magnitude as values are added; in plain doubles a level born below
 * 2^-1022 would underflow and lose the contributions that build up the result
 * (k = 1800 draws from 10,000 equally likely values gave 6.4e-76 instead of
 * 1.1e-75).  So a young level is kept as a mantissa G_j and an exponent E_j,
 * with S_j = 2^(E_{j-1} - E_j) cached: G_j <- G_j + j p S_j G_{j-1}, and a
 * mantissa leaving [2^-300, 2^300] is renormalized.  Since f_{j-1} >= f_j,
 * E_{j-1} - E_j >= -600 when both mantissas are in range; it is kept at most
 * 600 (a level further below its predecessor is raised to that gap, the
 * mantissa shrinking: its value is then below 2^-300 of the next term it
 * receives), so every term stays below 2^900 j.
 *
 * Levels 1..plain have grown to at least 2^PLAIN_LOWEST_EXPONENT with
 * exponent 0: their mantissa is their value, which only grows up to 1, so
 * they are updated as plain doubles, without scale or checks.  Lower levels
 * grow first, so they form a prefix; multiplying by S_j = 1 is exact, so
 * both updates give the same bits.
 */
#define PLAIN_LOWEST_EXPONENT (-1000)

static double *
LogDistinctDrawProbabilities(Distribution *dist, int64 kmax)
{
	double	   *g = palloc_extended((kmax + 1) * sizeof(double), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	double	   *scale = palloc_extended((kmax + 1) * sizeof(double), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	int64	   *exponent = palloc_extended((kmax + 1) * sizeof(int64), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	int64		top = 0;
	int64		plain = 0;

	g[0] = 1.0;
	scale[0] = 1.0;
	for (int64 i = 0; i < dist->nclasses; i++)
	{
		double		p = dist->weights[i] / dist->total;
		int64		j;

		CHECK_FOR_INTERRUPTS();
		if (i + 1 <= kmax)
		{
			/* a new level, born at its predecessor's exponent */
			top = i + 1;
			exponent[top] = exponent[top - 1];
			scale[top] = 1.0;
		}
		for (j = top; j > plain; j--)
		{
			double		v = g[j] + (double) j * p * g[j - 1] * scale[j];

			g[j] = v;
			if (unlikely(!(v <= SCALED_HIGH && v >= SCALED_LOW)) &&
				(v > SCALED_HIGH || exponent[j] > exponent[j - 1] - SCALED_MAX_GAP))
				Renormalize(g, scale, exponent, j, top);
		}
		for (; j >= 1; j--)
			g[j] += (double) j * p * g[j - 1];

		while (plain < top && g[plain + 1] != 0.0 &&
			   exponent[plain + 1] + ilogb(g[plain + 1]) >= PLAIN_LOWEST_EXPONENT)
		{
			plain++;
			SetLevelExponent(g, scale, exponent, plain, 0, top);
		}
	}
	for (int64 j = 0; j <= kmax; j++)
		g[j] = log(g[j]) + (double) exponent[j] * M_LN2;
	pfree(scale);
	pfree(exponent);
	return g;
}

/* birthday_uniqueness_exact(k, value [, weight]): k! e_k(p) */
static Datum
BirthdayExact(FunctionCallInfo fcinfo, bool weighted)
{
	Distribution dist;
	int64		k;
	double	   *logf;

	FinalDistribution(fcinfo, weighted, &dist);
	if (dist.nclasses == 0 || dist.total <= 0)
		PG_RETURN_NULL();
	k = GroupSize(&dist);
	if (k <= 1)
		PG_RETURN_FLOAT8(1.0);
	if (k > dist.nclasses)
		PG_RETURN_FLOAT8(0.0);
	logf = LogDistinctDrawProbabilities(&dist, k);
	PG_RETURN_FLOAT8(Min(exp(logf[k]), 1.0));
}

Datum
qidrisk_birthday_exact_final(PG_FUNCTION_ARGS)
{
	return BirthdayExact(fcinfo, false);
}

Datum
qidrisk_birthday_exact_weighted_final(PG_FUNCTION_ARGS)
{
	return BirthdayExact(fcinfo, true);
}

/* birthday_uniqueness_poisson(k, value [, weight]): prod_i e^{-k p_i} (1 + k p_i) */
static Datum
BirthdayPoisson(FunctionCallInfo fcinfo, bool weighted)
{
	Distribution dist;
	double		k;
	double		log_probability = 0.0;

	FinalDistribution(fcinfo, weighted, &dist);
	if (dist.nclasses == 0 || dist.total <= 0)
		PG_RETURN_NULL();
	(void) GroupSize(&dist);
	k = dist.param;
	for (int64 i = 0; i < dist.nclasses; i++)
	{
		/* the share first: k times a weight of 1e300 would overflow */
		double		kp = k * (dist.weights[i] / dist.total);

		log_probability += BirthdayLog1pMinusX(kp);
	}
	PG_RETURN_FLOAT8(exp(log_probability));
}

Datum
qidrisk_birthday_poisson_final(PG_FUNCTION_ARGS)
{
	return BirthdayPoisson(fcinfo, false);
}

Datum
qidrisk_birthday_poisson_weighted_final(PG_FUNCTION_ARGS)
{
	return BirthdayPoisson(fcinfo, true);
}

/*
 * birthday_max_group_size_exact(target, value [, weight]): the largest k with
 * k! e_k(p) >= target.  The uniform distribution over the same support
 * maximises the probability, so its answer bounds the search.
 */
static Datum
BirthdayMaxK(FunctionCallInfo fcinfo, bool weighted)
{
	Distribution dist;
	int64		kmax;
	double	   *logf;
	double		log_target;
	int64		k;

	FinalDistribution(fcinfo, weighted, &dist);
	if (dist.nclasses == 0 || dist.total <= 0)
		PG_RETURN_NULL();
	BirthdayCheckTarget(dist.param);
	kmax = BirthdayLargestK(dist.param, (double) dist.nclasses, 0.0);
	logf = LogDistinctDrawProbabilities(&dist, kmax);
	log_target = log(dist.param);
	k = kmax;
	/* f_k >= target in logs: f_k may lie below the smallest double */
	while (k > 1 && logf[k] < log_target)
		k--;
	PG_RETURN_INT64(k);
}

Datum
qidrisk_birthday_max_k_final(PG_FUNCTION_ARGS)
{
	return BirthdayMaxK(fcinfo, false);
}

Datum
qidrisk_birthday_max_k_weighted_final(PG_FUNCTION_ARGS)
{
	return BirthdayMaxK(fcinfo, true);
}
