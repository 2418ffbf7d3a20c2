/*
 * quantile.c
 *	  Exact k-anonymous 1-D generalization (Lodha & Thomas 2008, Section 4):
 *	  the quantile_cuts aggregate, the mapping of a value to its bucket (as a
 *	  number, a range or a label), and each bucket's median and mean.  Equal
 *	  values are never split across buckets.
 *
 * The transition state counts each distinct value in a hash table, so a
 * column with many ties (ages, birth dates) costs one probe per row and the
 * final function sorts only the distinct values.  The same state serves
 * optimal_cuts (clustering.c).
 */
#include "postgres.h"

#include <math.h>

#include "access/detoast.h"
#include "access/tupmacs.h"
#include "catalog/pg_type.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/date.h"
#include "utils/float.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/rangetypes.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "aggcommon.h"
#include "clustering.h"
#include "compat.h"
#include "hashkey.h"
#include "qidrisk.h"
#include "quantile.h"
#include "settings.h"

PG_FUNCTION_INFO_V1(qidrisk_value_count_transfn);
PG_FUNCTION_INFO_V1(qidrisk_value_count_cost_transfn);
PG_FUNCTION_INFO_V1(qidrisk_value_count_cuts_transfn);
PG_FUNCTION_INFO_V1(qidrisk_value_count_combine);
PG_FUNCTION_INFO_V1(qidrisk_value_count_serialize);
PG_FUNCTION_INFO_V1(qidrisk_value_count_deserialize);
PG_FUNCTION_INFO_V1(qidrisk_quantile_cuts_final);
PG_FUNCTION_INFO_V1(qidrisk_optimal_cuts_final);
PG_FUNCTION_INFO_V1(qidrisk_quantile_medians_final);
PG_FUNCTION_INFO_V1(qidrisk_quantile_means_final);
PG_FUNCTION_INFO_V1(qidrisk_quantile_bucket);
PG_FUNCTION_INFO_V1(qidrisk_quantile_bucket_range);
PG_FUNCTION_INFO_V1(qidrisk_quantile_bucket_label);

#define VALUE_STATE_FORMAT_VERSION 1
#define INTERRUPT_CHECK_MASK 0xFFFF

/* One distinct value in the hash table */
typedef struct ValueEntry
{
	Datum		value;
	int64		count;
	uint32		hash;
	char		status;
} ValueEntry;

#define SH_PREFIX valuehash
#define SH_ELEMENT_TYPE ValueEntry
#define SH_KEY_TYPE Datum
#define SH_KEY value
/* keyed placement (hashkey.c): chosen values cannot share a bucket */
#define SH_HASH_KEY(tb, key) QidValueHashOf(&((ValueType *) (tb)->private_data)->hash, key)
#define SH_EQUAL(tb, a, b) QidValueHashEqual(&((ValueType *) (tb)->private_data)->hash, a, b)
#define SH_STORE_HASH
#define SH_GET_HASH(tb, a) ((a)->hash)
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/* The parameter of the aggregate: k, or the cuts of the buckets */
typedef enum ValueParamKind
{
	VALUE_PARAM_NONE,
	VALUE_PARAM_K,
	VALUE_PARAM_CUTS
} ValueParamKind;

/* Transition state: the distinct values and their row counts */
typedef struct ValueCountState
{
	MemoryContext context;
	ValueType  *vt;
	valuehash_hash *table;
	int64		rows;			/* non-NULL rows counted */
	Size		value_bytes;	/* bytes of copied by-reference values */
	Size		budget;
	bool		has_k;
	double		k;
	int			cost;			/* optimal_cuts' cost, -1 when not given */
	ArrayType  *cuts;			/* quantile_medians' cuts, in context */
	Datum		last_cuts;		/* the argument last compared with cuts */
} ValueCountState;

/*
 * Describe a value type: refuse types without a default ordering or hashing;
 * values are placed by a hash keyed per state (floats by their bits, as the
 * transition functions make -0 and 0 one Datum and refuse NaN).
 */
ValueType *
ValueTypeGet(MemoryContext context, Oid type, Oid collation, const char *funcname)
{
	TypeCacheEntry *entry;
	ValueType  *vt;
	MemoryContext old;

	entry = lookup_type_cache(type, TYPECACHE_LT_OPR | TYPECACHE_EQ_OPR |
							  TYPECACHE_HASH_PROC);
	if (!OidIsValid(entry->lt_opr))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("%s needs an ordered type; type %s has no default btree ordering",
						funcname, format_type_be(type))));
	if (!OidIsValid(entry->hash_proc) || !OidIsValid(entry->eq_opr))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("%s needs a hashable type; type %s has no default hash support",
						funcname, format_type_be(type))));

	vt = MemoryContextAllocZero(context, sizeof(ValueType));
	vt->type = type;
	vt->collation = collation;
	get_typlenbyvalalign(type, &vt->typlen, &vt->typbyval, &vt->typalign);
	QidValueHashInit(&vt->hash, type, collation, true, context);
	old = MemoryContextSwitchTo(context);
	vt->sort.ssup_cxt = context;
	vt->sort.ssup_collation = collation;
	vt->sort.ssup_nulls_first = false;
	PrepareSortSupportFromOrderingOp(entry->lt_opr, &vt->sort);
	MemoryContextSwitchTo(old);
	return vt;
}

/* NaN has no place in an order of buckets: refuse it */
void
ValueCheckOrderable(ValueType *vt, Datum value, FunctionCallInfo fcinfo)
{
	bool		is_nan;

	if (vt->type == FLOAT8OID)
		is_nan = isnan(DatumGetFloat8(value));
	else if (vt->type == FLOAT4OID)
		is_nan = isnan(DatumGetFloat4(value));
	else if (vt->type == NUMERICOID)
		is_nan = numeric_is_nan(DatumGetNumeric(value));
	else
		return;
	/* the function's name is looked up only for the message */
	if (is_nan)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s cannot place NaN in a bucket",
						AggGetAggref(fcinfo) != NULL ? AggregateName(fcinfo) :
						get_func_name(fcinfo->flinfo->fn_oid)),
				 errhint("Filter NaN out, or turn it into NULL with NULLIF(value, 'NaN').")));
}

/* -0 and 0 are one value; give them one Datum */
static inline Datum
NormalizeValue(ValueType *vt, Datum value)
{
	if (vt->type == FLOAT8OID && DatumGetFloat8(value) == 0.0)
		return Float8GetDatum(0.0);
	if (vt->type == FLOAT4OID && DatumGetFloat4(value) == 0.0f)
		return Float4GetDatum(0.0f);
	return value;
}

static ValueCountState *
ValueCountStateCreate(MemoryContext context, ValueType *vt, uint32 size)
{
	ValueCountState *state = MemoryContextAllocZero(context, sizeof(ValueCountState));

	state->context = context;
	state->vt = vt;
	state->table = valuehash_create(context, Max(size, 256), vt);
	state->budget = QidStateMemoryBudget();
	state->cost = -1;
	return state;
}

/* Refuse to grow past qidrisk.max_state_memory */
static void
ValueCountCheckBudget(ValueCountState *state)
{
	double		bytes = (double) state->table->size * sizeof(ValueEntry) + state->value_bytes;

	if (bytes > (double) state->budget)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("qidrisk value state exceeds qidrisk.max_state_memory"),
				 errdetail("The state holds " UINT64_FORMAT " distinct values; the budget is %zu kB.",
						   (uint64) state->table->members, state->budget / 1024),
				 errhint("Raise qidrisk.max_state_memory (or work_mem when it is -1), or use quantile_cuts_approx.")));
}

/* Add count rows holding value */
static void
ValueCountAdd(ValueCountState *state, Datum value, int64 count)
{
	ValueEntry *entry;
	bool		found;
	uint64		size_before = state->table->size;

	entry = valuehash_insert(state->table, value, &found);
	if (found)
	{
		entry->count += count;
	}
	else
	{
		if (!state->vt->typbyval)
		{
			Size		bytes = datumGetSize(value, false, state->vt->typlen);

			entry->value = datumCopy(value, false, state->vt->typlen);
			state->value_bytes += bytes;
		}
		entry->count = count;
		if (state->table->size != size_before || !state->vt->typbyval)
			ValueCountCheckBudget(state);
	}
	state->rows += count;
}

/* Shared part of the transition functions: the state and the new value */
static ValueCountState *
ValueCountUpdate(FunctionCallInfo fcinfo)
{
	MemoryContext aggcontext = AggregateContext(fcinfo);
	ValueCountState *state;

	if (PG_ARGISNULL(0))
	{
		ValueType  *vt = ValueTypeGet(aggcontext,
									  get_fn_expr_argtype(fcinfo->flinfo, 1),
									  PG_GET_COLLATION(), AggregateName(fcinfo));

		state = ValueCountStateCreate(aggcontext, vt, 0);
	}
	else
		state = (ValueCountState *) PG_GETARG_POINTER(0);

	if (!PG_ARGISNULL(1))
	{
		Datum		value = NormalizeValue(state->vt, PG_GETARG_DATUM(1));
		MemoryContext old;

		ValueCheckOrderable(state->vt, value, fcinfo);
		old = MemoryContextSwitchTo(state->context);
		ValueCountAdd(state, value, 1);
		MemoryContextSwitchTo(old);
	}
	return state;
}

/* Remember k (argument 2), which must be a positive constant */
static void
ValueCountRememberK(ValueCountState *state, FunctionCallInfo fcinfo)
{
	RememberAggParameter(fcinfo, 2, &state->has_k, &state->k);
	if (state->k < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be at least 1, not %g", state->k)));
}

/* quantile_cuts(value, k) and optimal_cuts(value, k) */
Datum
qidrisk_value_count_transfn(PG_FUNCTION_ARGS)
{
	ValueCountState *state = ValueCountUpdate(fcinfo);

	ValueCountRememberK(state, fcinfo);
	PG_RETURN_POINTER(state);
}

/* optimal_cuts(value, k, cost) */
Datum
qidrisk_value_count_cost_transfn(PG_FUNCTION_ARGS)
{
	ValueCountState *state = ValueCountUpdate(fcinfo);
	int			cost;

	ValueCountRememberK(state, fcinfo);
	if (PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("cost must not be NULL")));
	cost = (int) ClusterCostFromName(text_to_cstring(PG_GETARG_TEXT_PP(3)));
	if (state->cost >= 0 && state->cost != cost)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cost must be the same for every row of a group")));
	state->cost = cost;
	PG_RETURN_POINTER(state);
}

/* Check a cuts array: one dimension, no NULLs, of the values' type */
static void
CheckCutsArray(ArrayType *cuts, Oid value_type)
{
	if (ARR_ELEMTYPE(cuts) != value_type)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("cuts must be an array of the value's type %s, not of %s",
						format_type_be(value_type), format_type_be(ARR_ELEMTYPE(cuts)))));
	if (ARR_NDIM(cuts) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("cuts must be a one-dimensional array")));
	if (array_contains_nulls(cuts))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("cuts must not contain NULL")));
}

/* Medians of unsorted cuts would mean nothing: refuse them once */
static void
CheckCutsAscending(ValueType *vt, ArrayType *cuts)
{
	Datum	   *elements;
	int			ncuts;

	deconstruct_array(cuts, vt->type, vt->typlen, vt->typbyval, vt->typalign,
					  &elements, NULL, &ncuts);
	for (int i = 1; i < ncuts; i++)
		if (ApplySortComparator(elements[i - 1], false, elements[i], false, &vt->sort) >= 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("cuts must be strictly ascending"),
					 errdetail("Element %d is not above element %d.", i + 1, i)));
}

/* quantile_medians(value, cuts) and quantile_means(value, cuts) */
Datum
qidrisk_value_count_cuts_transfn(PG_FUNCTION_ARGS)
{
	ValueCountState *state = ValueCountUpdate(fcinfo);
	Datum		cuts_datum;

	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("cuts must not be NULL")));
	cuts_datum = PG_GETARG_DATUM(2);
	if (state->cuts == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(state->context);

		state->cuts = DatumGetArrayTypePCopy(cuts_datum);
		MemoryContextSwitchTo(old);
		CheckCutsArray(state->cuts, state->vt->type);
		CheckCutsAscending(state->vt, state->cuts);
	}
	else if (cuts_datum != state->last_cuts ||
			 !get_fn_expr_arg_stable(fcinfo->flinfo, 2))
	{
		ArrayType  *cuts = PG_GETARG_ARRAYTYPE_P(2);

		/* a constant argument is checked once; anything else on every row */
		if (VARSIZE(cuts) != VARSIZE(state->cuts) ||
			memcmp(cuts, state->cuts, VARSIZE(cuts)) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("cuts must be the same for every row of a group")));
	}
	state->last_cuts = cuts_datum;
	PG_RETURN_POINTER(state);
}

Datum
qidrisk_value_count_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext = AggregateContext(fcinfo);
	ValueCountState *into = PG_ARGISNULL(0) ? NULL : (ValueCountState *) PG_GETARG_POINTER(0);
	ValueCountState *from = PG_ARGISNULL(1) ? NULL : (ValueCountState *) PG_GETARG_POINTER(1);
	MemoryContext old;
	valuehash_iterator iter;
	ValueEntry *entry;

	if (from == NULL)
		PG_RETURN_POINTER(into);
	if (into == NULL)
	{
		into = ValueCountStateCreate(aggcontext, from->vt, from->table->members);
		into->cost = from->cost;
	}
	MergeAggParameter(&into->has_k, &into->k, from->has_k, from->k);
	if (from->cost >= 0 && into->cost >= 0 && from->cost != into->cost)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cost must be the same for every row of a group")));
	if (into->cost < 0)
		into->cost = from->cost;

	old = MemoryContextSwitchTo(into->context);
	if (into->cuts == NULL && from->cuts != NULL)
		into->cuts = (ArrayType *) datumCopy(PointerGetDatum(from->cuts), false, -1);
	else if (from->cuts != NULL &&
			 (VARSIZE(into->cuts) != VARSIZE(from->cuts) ||
			  memcmp(into->cuts, from->cuts, VARSIZE(into->cuts)) != 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cuts must be the same for every row of a group")));
	valuehash_start_iterate(from->table, &iter);
	while ((entry = valuehash_iterate(from->table, &iter)) != NULL)
		ValueCountAdd(into, entry->value, entry->count);
	MemoryContextSwitchTo(old);
	PG_RETURN_POINTER(into);
}

/*
 * Serialized form: format version, type, collation, k, cost, the cuts array
 * (or none), then (value, count) pairs in datumSerialize's layout, which
 * another process of the same server reads back.
 */
Datum
qidrisk_value_count_serialize(PG_FUNCTION_ARGS)
{
	ValueCountState *state = (ValueCountState *) PG_GETARG_POINTER(0);
	ValueType  *vt = state->vt;
	StringInfoData buf;
	valuehash_iterator iter;
	ValueEntry *entry;

	AggregateContext(fcinfo);
	pq_begintypsend(&buf);
	pq_sendint32(&buf, VALUE_STATE_FORMAT_VERSION);
	pq_sendint32(&buf, vt->type);
	pq_sendint32(&buf, vt->collation);
	pq_sendbyte(&buf, state->has_k);
	pq_sendfloat8(&buf, state->k);
	pq_sendint32(&buf, state->cost);
	pq_sendbyte(&buf, state->cuts != NULL);
	if (state->cuts != NULL)
		pq_sendbytes(&buf, (char *) state->cuts, VARSIZE(state->cuts));
	pq_sendint64(&buf, state->table->members);
	valuehash_start_iterate(state->table, &iter);
	while ((entry = valuehash_iterate(state->table, &iter)) != NULL)
	{
		Size		space = datumEstimateSpace(entry->value, false, vt->typbyval, vt->typlen);
		char	   *target;

		enlargeStringInfo(&buf, space);
		target = buf.data + buf.len;
		datumSerialize(entry->value, false, vt->typbyval, vt->typlen, &target);
		buf.len += space;
		pq_sendint64(&buf, entry->count);
	}
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

Datum
qidrisk_value_count_deserialize(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext = AggregateContext(fcinfo);
	bytea	   *bytes = PG_GETARG_BYTEA_PP(0);
	StringInfoData buf;
	ValueCountState *state;
	ValueType  *vt;
	Oid			type;
	Oid			collation;
	int64		nvalues;
	MemoryContext old;

	buf.data = VARDATA_ANY(bytes);
	buf.len = VARSIZE_ANY_EXHDR(bytes);
	buf.maxlen = buf.len;
	buf.cursor = 0;
	if (pq_getmsgint(&buf, 4) != VALUE_STATE_FORMAT_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("unsupported qidrisk value state format")));
	type = pq_getmsgint(&buf, 4);
	collation = pq_getmsgint(&buf, 4);
	vt = ValueTypeGet(aggcontext, type, collation, "qidrisk value state");
	state = ValueCountStateCreate(aggcontext, vt, 0);
	state->has_k = pq_getmsgbyte(&buf);
	state->k = pq_getmsgfloat8(&buf);
	state->cost = (int) pq_getmsgint(&buf, 4);
	old = MemoryContextSwitchTo(aggcontext);
	if (pq_getmsgbyte(&buf))
	{
		const char *header = pq_getmsgbytes(&buf, VARHDRSZ);
		Size		size = VARSIZE(header);

		buf.cursor -= VARHDRSZ;
		state->cuts = palloc(size);
		memcpy(state->cuts, pq_getmsgbytes(&buf, size), size);
	}
	nvalues = pq_getmsgint64(&buf);
	for (int64 i = 0; i < nvalues; i++)
	{
		char	   *start = buf.data + buf.cursor;
		bool		isnull;
		Datum		value = datumRestore(&start, &isnull);

		buf.cursor = start - buf.data;
		ValueCountAdd(state, value, pq_getmsgint64(&buf));
		if ((i & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	MemoryContextSwitchTo(old);
	pq_getmsgend(&buf);
	PG_RETURN_POINTER(state);
}

static int
ValueCountCompare(const void *a, const void *b, void *arg)
{
	SortSupport ssup = (SortSupport) arg;

	return ApplySortComparator(((const ValueCount *) a)->value, false,
							   ((const ValueCount *) b)->value, false, ssup);
}

void
ValueCountSort(ValueType *vt, ValueCount *values, int64 nvalues)
{
	qsort_arg(values, nvalues, sizeof(ValueCount), ValueCountCompare, &vt->sort);
}

/* The state's distinct values in ascending order */
static ValueCount *
ValueCountSorted(ValueCountState *state, int64 *nvalues)
{
	ValueCount *values;
	valuehash_iterator iter;
	ValueEntry *entry;
	int64		n = 0;

	values = palloc_extended(Max(state->table->members, 1) * sizeof(ValueCount), MCXT_ALLOC_HUGE);
	valuehash_start_iterate(state->table, &iter);
	while ((entry = valuehash_iterate(state->table, &iter)) != NULL)
	{
		values[n].value = entry->value;
		values[n].count = entry->count;
		n++;
	}
	ValueCountSort(state->vt, values, n);
	*nvalues = n;
	return values;
}

/* Index of the first prefix position >= target in positions[lo..hi] */
static int64
LowerBound(const int64 *positions, int64 lo, int64 hi, int64 target)
{
	while (lo < hi)
	{
		int64		mid = lo + (hi - lo) / 2;

		if (positions[mid] < target)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Cut sorted distinct values into the largest number of buckets of at least
 * k rows that never split a value, balanced like the quantile transformation.
 *
 * groups[i] is the most buckets the rows from boundary i on can form (close a
 * bucket as soon as it holds k rows, fold a short remainder into the last:
 * the greedy count is the maximum, and it never grows as i moves right).
 * Boundary j then goes to the feasible position nearest to j n / q.  With
 * distinct values every position is feasible and the buckets hold
 * k + floor(r/q) or k + ceil(r/q) rows: Definition 9 exactly.
 *
 * Writes the index of each bucket's first value to starts; returns the
 * number of buckets, 0 when fewer than k rows.
 */
int64
BalancedCuts(const ValueCount *values, int64 nvalues, int64 k, int64 *starts)
{
	int64	   *positions = palloc_extended((nvalues + 1) * sizeof(int64), MCXT_ALLOC_HUGE);
	int64	   *groups = palloc_extended((nvalues + 1) * sizeof(int64), MCXT_ALLOC_HUGE);
	int64		rows;
	int64		nbuckets;
	int64		next;

	positions[0] = 0;
	for (int64 i = 0; i < nvalues; i++)
		positions[i + 1] = positions[i] + values[i].count;
	rows = positions[nvalues];

	next = nvalues;
	for (int64 i = nvalues; i >= 0; i--)
	{
		if (rows - positions[i] < k)
		{
			groups[i] = 0;
			continue;
		}
		/* next: the first boundary at least k rows after boundary i */
		while (next - 1 > i && positions[next - 1] - positions[i] >= k)
			next--;
		groups[i] = groups[next] == 0 ? 1 : 1 + groups[next];
		if ((i & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
	}

	nbuckets = groups[0];
	if (nbuckets > 0)
		starts[0] = 0;
	for (int64 j = 1; j < nbuckets; j++)
	{
		int64		lo = LowerBound(positions, starts[j - 1] + 1, nvalues,
									positions[starts[j - 1]] + k);
		int64		hi = lo;
		int64		step;
		int64		ideal = (int64) ((int128) j * rows / nbuckets);
		int64		best;

		/* hi: the last boundary that leaves room for the other buckets */
		for (step = 1; hi + step <= nvalues && groups[hi + step] >= nbuckets - j; step *= 2)
			hi += step;
		for (; step > 0; step /= 2)
			if (hi + step <= nvalues && groups[hi + step] >= nbuckets - j)
				hi += step;

		best = LowerBound(positions, lo, hi, ideal);
		if (best > lo && ideal - positions[best - 1] <= positions[best] - ideal)
			best--;
		starts[j] = best;
		if ((j & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	pfree(positions);
	pfree(groups);
	return nbuckets;
}

/* The cuts: each bucket's smallest value, as an array of the value type */
ArrayType *
CutsArray(ValueType *vt, const ValueCount *values, const int64 *starts, int64 nbuckets)
{
	Datum	   *elements = palloc_extended(Max(nbuckets, 1) * sizeof(Datum), MCXT_ALLOC_HUGE);

	if ((Size) nbuckets > MaxArraySize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%lld buckets do not fit in an array", (long long) nbuckets)));
	for (int64 j = 0; j < nbuckets; j++)
		elements[j] = values[starts[j]].value;
	return construct_array(elements, (int) nbuckets, vt->type, vt->typlen,
						   vt->typbyval, vt->typalign);
}

/* Refuse k larger than the rows: no bucket could hold k of them */
static void
CheckEnoughRows(ValueCountState *state, FunctionCallInfo fcinfo)
{
	if (state->k > (double) state->rows)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: k = %.0f exceeds the " INT64_FORMAT " non-NULL rows aggregated",
						AggregateName(fcinfo), state->k, state->rows)));
}

Datum
qidrisk_quantile_cuts_final(PG_FUNCTION_ARGS)
{
	ValueCountState *state;
	ValueCount *values;
	int64		nvalues;
	int64	   *starts;
	int64		nbuckets;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	state = (ValueCountState *) PG_GETARG_POINTER(0);
	if (state->rows == 0)
		PG_RETURN_NULL();
	CheckEnoughRows(state, fcinfo);
	values = ValueCountSorted(state, &nvalues);
	starts = palloc_extended(Max(nvalues, 1) * sizeof(int64), MCXT_ALLOC_HUGE);
	nbuckets = BalancedCuts(values, nvalues, (int64) state->k, starts);
	PG_RETURN_ARRAYTYPE_P(CutsArray(state->vt, values, starts, nbuckets));
}

/* A value of a numeric or date/time type as a double, for costs and means */
double
ValueToDouble(ValueType *vt, Datum value, const char *funcname)
{
	switch (vt->type)
	{
		case INT2OID:
			return DatumGetInt16(value);
		case INT4OID:
			return DatumGetInt32(value);
		case INT8OID:
			return (double) DatumGetInt64(value);
		case FLOAT4OID:
			return DatumGetFloat4(value);
		case FLOAT8OID:
			return DatumGetFloat8(value);
		case NUMERICOID:
			return DatumGetFloat8(DirectFunctionCall1(numeric_float8, value));
		case DATEOID:
			if (DATE_NOT_FINITE(DatumGetDateADT(value)))
				break;
			return DatumGetDateADT(value);
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			if (TIMESTAMP_NOT_FINITE(DatumGetTimestamp(value)))
				break;
			/* seconds keep squared distances within a double's range */
			return (double) DatumGetTimestamp(value) / USECS_PER_SEC;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("%s needs a numeric, date or timestamp value, not %s",
							funcname, format_type_be(vt->type))));
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("%s cannot measure distances to an infinite date or timestamp", funcname)));
	return 0;					/* keep the compiler quiet */
}

Datum
qidrisk_optimal_cuts_final(PG_FUNCTION_ARGS)
{
	ValueCountState *state;
	ValueCount *values;
	double	   *numbers;
	int64	   *counts;
	int64		nvalues;
	int64	   *starts;
	int64		nbuckets;
	double		total_cost;
	const char *funcname = AggregateName(fcinfo);

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	state = (ValueCountState *) PG_GETARG_POINTER(0);
	if (state->rows == 0)
		PG_RETURN_NULL();
	CheckEnoughRows(state, fcinfo);
	values = ValueCountSorted(state, &nvalues);
	numbers = palloc_extended(nvalues * sizeof(double), MCXT_ALLOC_HUGE);
	counts = palloc_extended(nvalues * sizeof(int64), MCXT_ALLOC_HUGE);
	for (int64 i = 0; i < nvalues; i++)
	{
		numbers[i] = ValueToDouble(state->vt, values[i].value, funcname);
		counts[i] = values[i].count;
	}
	starts = palloc_extended(nvalues * sizeof(int64), MCXT_ALLOC_HUGE);
	nbuckets = OptimalCuts(numbers, counts, nvalues, (int64) state->k,
						   state->cost < 0 ? CLUSTER_SUM_OF_SQUARES : (ClusterCost) state->cost,
						   starts, &total_cost);
	PG_RETURN_ARRAYTYPE_P(CutsArray(state->vt, values, starts, nbuckets));
}

/* Number of cuts <= value: 0 below the first cut, as width_bucket does */
static int
BucketOf(ValueType *vt, Datum value, const Datum *cuts, int ncuts)
{
	int			lo = 0;
	int			hi = ncuts;

	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (ApplySortComparator(cuts[mid], false, value, false, &vt->sort) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Per-call cache of a bucket-mapping function */
typedef struct MappingCache
{
	ValueType  *vt;
	struct varatt_external stored;	/* the TOAST pointer of the cuts read */
	ArrayType  *detoasted;		/* those cuts, detoasted once */
	ArrayType  *checked;		/* a copy of the last inline cuts found valid */
	int32	   *lookup;			/* integer or date cuts: bucket of first + i */
	int32		lookup_first;
	int32		lookup_size;
} MappingCache;

/* Largest value range of integer or date cuts given a direct lookup table */
#define MAX_LOOKUP_SIZE (1 << 20)

/*
 * Integer and date cuts over a modest range of values get a table from
 * value to bucket, so stored cuts map a row in one read.
 */
static void
BuildLookup(MappingCache *cache, MemoryContext context)
{
	ArrayType  *cuts = cache->detoasted;
	const int32 *keys = (const int32 *) ARR_DATA_PTR(cuts);
	int			n = ArrayGetNItems(ARR_NDIM(cuts), ARR_DIMS(cuts));
	int64		span;
	int			bucket = 0;

	cache->lookup = NULL;
	if ((cache->vt->type != INT4OID && cache->vt->type != DATEOID) || n == 0)
		return;
	span = (int64) keys[n - 1] - keys[0] + 1;
	if (span > MAX_LOOKUP_SIZE)
		return;
	cache->lookup = MemoryContextAlloc(context, span * sizeof(int32));
	cache->lookup_first = keys[0];
	cache->lookup_size = (int32) span;
	for (int64 i = 0; i < span; i++)
	{
		while (bucket < n && (int64) keys[bucket] <= keys[0] + i)
			bucket++;
		cache->lookup[i] = bucket;
	}
}

/*
 * The value type and the cuts of a mapping call.  Cuts read from a table
 * arrive as a TOAST pointer on every row; a stored value never changes, so
 * the pointer identifies it and it is detoasted once per query.
 */
static ArrayType *
MappingCuts(FunctionCallInfo fcinfo, const char *funcname, ValueType **vt_out)
{
	MappingCache *cache = (MappingCache *) fcinfo->flinfo->fn_extra;
	struct varlena *raw = (struct varlena *) PG_GETARG_POINTER(1);
	ArrayType  *cuts;
	Oid			type;

	/* an expression's argument types do not change between calls */
	if (cache == NULL)
	{
		type = get_fn_expr_argtype(fcinfo->flinfo, 0);
		cache = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(MappingCache));
		cache->vt = ValueTypeGet(fcinfo->flinfo->fn_mcxt, type, PG_GET_COLLATION(), funcname);
		fcinfo->flinfo->fn_extra = cache;
	}
	type = cache->vt->type;
	*vt_out = cache->vt;

	if (VARATT_IS_EXTERNAL_ONDISK(raw))
	{
		struct varatt_external pointer;

		VARATT_EXTERNAL_GET_POINTER(pointer, raw);
		if (cache->detoasted == NULL ||
			pointer.va_valueid != cache->stored.va_valueid ||
			pointer.va_toastrelid != cache->stored.va_toastrelid)
		{
			MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);

			if (cache->detoasted != NULL)
				pfree(cache->detoasted);
			if (cache->lookup != NULL)
				pfree(cache->lookup);
			cache->detoasted = DatumGetArrayTypePCopy(PointerGetDatum(raw));
			MemoryContextSwitchTo(old);
			cache->stored = pointer;
			CheckCutsArray(cache->detoasted, type);
			CheckCutsAscending(cache->vt, cache->detoasted);
			BuildLookup(cache, fcinfo->flinfo->fn_mcxt);
		}
		return cache->detoasted;
	}
	cuts = DatumGetArrayTypeP(PointerGetDatum(raw));
	/* the same cuts on every row are checked once, not once per row */
	if (cache->checked == NULL || VARSIZE(cache->checked) != VARSIZE(cuts) ||
		memcmp(cache->checked, cuts, VARSIZE(cuts)) != 0)
	{
		CheckCutsArray(cuts, type);
		CheckCutsAscending(cache->vt, cuts);
		if (cache->checked != NULL)
			pfree(cache->checked);
		cache->checked = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, VARSIZE(cuts));
		memcpy(cache->checked, cuts, VARSIZE(cuts));
	}
	return cuts;
}

/* How many of the n ascending keys are <= key, without branches */
#define DEFINE_UPPER_BOUND(name, ctype) \
static inline int \
name(const ctype *keys, int n, ctype key) \
{ \
	const ctype *base = keys; \
\
	if (n == 0) \
		return 0; \
	while (n > 1) \
	{ \
		int			half = n / 2; \
\
		base = (base[half] <= key) ? base + half : base; \
		n -= half; \
	} \
	return (int) (base - keys) + (*base <= key); \
}

DEFINE_UPPER_BOUND(UpperBoundInt16, int16)
DEFINE_UPPER_BOUND(UpperBoundInt32, int32)
DEFINE_UPPER_BOUND(UpperBoundInt64, int64)
DEFINE_UPPER_BOUND(UpperBoundFloat8, float8)

/*
 * The bucket of a value.  Fixed-length cuts are searched in place, so a
 * large cuts array costs O(log q) per row and no copy; integer, date,
 * timestamp and float8 cuts compare as machine numbers.
 */
static int
MapValue(FunctionCallInfo fcinfo, ValueType *vt, ArrayType *cuts, Datum value,
		 Datum **elements, int *ncuts)
{
	int			n = ArrayGetNItems(ARR_NDIM(cuts), ARR_DIMS(cuts));

	ValueCheckOrderable(vt, value, fcinfo);
	if (vt->typlen > 0 && elements == NULL)
	{
		char	   *data = ARR_DATA_PTR(cuts);
		int			stride = att_align_nominal(vt->typlen, vt->typalign);
		int			lo = 0;
		int			hi = n;

		switch (vt->type)
		{
			case INT2OID:
				return UpperBoundInt16((const int16 *) data, n, DatumGetInt16(value));
			case INT4OID:
			case DATEOID:
				return UpperBoundInt32((const int32 *) data, n, DatumGetInt32(value));
			case INT8OID:
			case TIMESTAMPOID:
			case TIMESTAMPTZOID:
				return UpperBoundInt64((const int64 *) data, n, DatumGetInt64(value));
			case FLOAT8OID:
				/* NaN is refused, and -0 = 0 compares equal as a number */
				return UpperBoundFloat8((const float8 *) data, n, DatumGetFloat8(value));
			default:
				break;
		}
		while (lo < hi)
		{
			int			mid = lo + (hi - lo) / 2;
			Datum		cut = fetch_att(data + (Size) mid * stride, vt->typbyval, vt->typlen);

			if (ApplySortComparator(cut, false, value, false, &vt->sort) <= 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		return lo;
	}
	else
	{
		Datum	   *all;
		int			bucket;

		deconstruct_array(cuts, vt->type, vt->typlen, vt->typbyval, vt->typalign,
						  &all, NULL, &n);
		bucket = BucketOf(vt, value, all, n);
		if (elements != NULL)
		{
			*elements = all;
			*ncuts = n;
		}
		return bucket;
	}
}

Datum
qidrisk_quantile_bucket(PG_FUNCTION_ARGS)
{
	ValueType  *vt;
	ArrayType  *cuts = MappingCuts(fcinfo, "quantile_bucket", &vt);
	MappingCache *cache = (MappingCache *) fcinfo->flinfo->fn_extra;

	if (cache->lookup != NULL && cuts == cache->detoasted)
	{
		int64		offset = (int64) DatumGetInt32(PG_GETARG_DATUM(0)) - cache->lookup_first;

		if (offset < 0)
			PG_RETURN_INT32(0);
		if (offset >= cache->lookup_size)
			PG_RETURN_INT32(cache->lookup[cache->lookup_size - 1]);
		PG_RETURN_INT32(cache->lookup[offset]);
	}

	PG_RETURN_INT32(MapValue(fcinfo, vt, cuts, PG_GETARG_DATUM(0), NULL, NULL));
}

/* The bucket as a range [cut_j, cut_{j+1}), unbounded past the first or last cut */
Datum
qidrisk_quantile_bucket_range(PG_FUNCTION_ARGS)
{
	ValueType  *vt;
	ArrayType  *cuts = MappingCuts(fcinfo, "quantile_bucket_range", &vt);
	TypeCacheEntry *range_type;
	Datum	   *elements;
	int			ncuts;
	int			bucket;
	RangeBound	lower;
	RangeBound	upper;

	bucket = MapValue(fcinfo, vt, cuts, PG_GETARG_DATUM(0), &elements, &ncuts);
	range_type = lookup_type_cache(get_fn_expr_rettype(fcinfo->flinfo), TYPECACHE_RANGE_INFO);
	if (range_type->rngelemtype == NULL || range_type->rngelemtype->type_id != vt->type)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("quantile_bucket_range: no range type over %s", format_type_be(vt->type))));
	lower.infinite = (bucket == 0);
	lower.val = lower.infinite ? (Datum) 0 : elements[bucket - 1];
	lower.inclusive = !lower.infinite;
	lower.lower = true;
	upper.infinite = (bucket == ncuts);
	upper.val = upper.infinite ? (Datum) 0 : elements[bucket];
	upper.inclusive = false;
	upper.lower = false;
	PG_RETURN_RANGE_P(QidMakeRange(range_type, &lower, &upper, false));
}

/* The bucket as text: "[a,b)", "(,a)" below the first cut, "[a,)" past the last */
Datum
qidrisk_quantile_bucket_label(PG_FUNCTION_ARGS)
{
	ValueType  *vt;
	ArrayType  *cuts = MappingCuts(fcinfo, "quantile_bucket_label", &vt);
	Datum	   *elements;
	int			ncuts;
	int			bucket;
	Oid			output;
	bool		varlena;
	StringInfoData label;

	bucket = MapValue(fcinfo, vt, cuts, PG_GETARG_DATUM(0), &elements, &ncuts);
	getTypeOutputInfo(vt->type, &output, &varlena);
	initStringInfo(&label);
	appendStringInfoChar(&label, bucket == 0 ? '(' : '[');
	if (bucket > 0)
		appendStringInfoString(&label, OidOutputFunctionCall(output, elements[bucket - 1]));
	appendStringInfoChar(&label, ',');
	if (bucket < ncuts)
		appendStringInfoString(&label, OidOutputFunctionCall(output, elements[bucket]));
	appendStringInfoChar(&label, ')');
	PG_RETURN_TEXT_P(cstring_to_text_with_len(label.data, label.len));
}

/* Walk the sorted values bucket by bucket; visit(bucket, first, end) */
typedef void (*BucketVisitor) (int bucket, const ValueCount *values, int64 first,
							   int64 end, void *arg);

static int
VisitBuckets(ValueCountState *state, const ValueCount *values, int64 nvalues,
			 BucketVisitor visit, void *arg)
{
	ArrayType  *cuts = state->cuts;
	ValueType  *vt = state->vt;
	Datum	   *elements;
	int			ncuts;
	int64		first = 0;

	deconstruct_array(cuts, vt->type, vt->typlen, vt->typbyval, vt->typalign,
					  &elements, NULL, &ncuts);
	for (int bucket = 0; bucket <= ncuts; bucket++)
	{
		int64		end = first;

		/* bucket b holds the values below elements[b], the next bucket's cut */
		while (end < nvalues &&
			   (bucket == ncuts ||
				ApplySortComparator(values[end].value, false, elements[bucket], false,
									&vt->sort) < 0))
			end++;
		visit(bucket, values, first, end, arg);
		first = end;
	}
	return ncuts;
}

typedef struct MedianCollector
{
	Datum	   *medians;
	bool	   *nulls;
} MedianCollector;

/* The lower median of a bucket (percentile_disc(0.5)): its ceil(size/2)-th row */
static void
CollectMedian(int bucket, const ValueCount *values, int64 first, int64 end, void *arg)
{
	MedianCollector *collector = (MedianCollector *) arg;
	int64		size = 0;
	int64		seen = 0;

	if (bucket == 0)
		return;					/* rows below the first cut: reported nowhere */
	for (int64 i = first; i < end; i++)
		size += values[i].count;
	collector->nulls[bucket - 1] = (size == 0);
	for (int64 i = first; i < end; i++)
	{
		seen += values[i].count;
		if (2 * seen >= size)
		{
			collector->medians[bucket - 1] = values[i].value;
			break;
		}
	}
}

/* Refuse rows below the first cut: the cuts came from other data */
static void
CheckNoRowsBelowFirstCut(ValueCountState *state, const ValueCount *values, int64 nvalues,
						 FunctionCallInfo fcinfo)
{
	Datum	   *elements;
	int			ncuts;

	deconstruct_array(state->cuts, state->vt->type, state->vt->typlen, state->vt->typbyval,
					  state->vt->typalign, &elements, NULL, &ncuts);
	if (ncuts == 0 || (nvalues > 0 &&
					   ApplySortComparator(values[0].value, false, elements[0], false,
										   &state->vt->sort) < 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: some values lie below the first cut", AggregateName(fcinfo)),
				 errhint("Use cuts computed from the same rows, whose first cut is their minimum.")));
}

Datum
qidrisk_quantile_medians_final(PG_FUNCTION_ARGS)
{
	ValueCountState *state;
	ValueCount *values;
	int64		nvalues;
	int			ncuts;
	MedianCollector collector;
	int			dims[1];
	int			lbs[1] = {1};

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	state = (ValueCountState *) PG_GETARG_POINTER(0);
	if (state->rows == 0)
		PG_RETURN_NULL();
	values = ValueCountSorted(state, &nvalues);
	CheckNoRowsBelowFirstCut(state, values, nvalues, fcinfo);
	ncuts = ArrayGetNItems(ARR_NDIM(state->cuts), ARR_DIMS(state->cuts));
	collector.medians = palloc0(sizeof(Datum) * ncuts);
	collector.nulls = palloc0(sizeof(bool) * ncuts);
	VisitBuckets(state, values, nvalues, CollectMedian, &collector);
	dims[0] = ncuts;
	PG_RETURN_ARRAYTYPE_P(construct_md_array(collector.medians, collector.nulls, 1, dims, lbs,
											 state->vt->type, state->vt->typlen,
											 state->vt->typbyval, state->vt->typalign));
}

typedef struct MeanCollector
{
	ValueType  *vt;
	Datum	   *means;
	bool	   *nulls;
} MeanCollector;

/* The mean of a bucket, summed in long double */
static void
CollectMean(int bucket, const ValueCount *values, int64 first, int64 end, void *arg)
{
	MeanCollector *collector = (MeanCollector *) arg;
	long double sum = 0;
	int64		size = 0;

	if (bucket == 0)
		return;
	for (int64 i = first; i < end; i++)
	{
		sum += (long double) ValueToDouble(collector->vt, values[i].value, "quantile_means") *
			values[i].count;
		size += values[i].count;
	}
	collector->nulls[bucket - 1] = (size == 0);
	collector->means[bucket - 1] = Float8GetDatum(size == 0 ? 0.0 : (double) (sum / size));
}

Datum
qidrisk_quantile_means_final(PG_FUNCTION_ARGS)
{
	ValueCountState *state;
	ValueCount *values;
	int64		nvalues;
	int			ncuts;
	MeanCollector collector;
	int			dims[1];
	int			lbs[1] = {1};

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	state = (ValueCountState *) PG_GETARG_POINTER(0);
	if (state->rows == 0)
		PG_RETURN_NULL();
	if (!QidIsNumericType(state->vt->type))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("quantile_means needs a numeric type, not %s",
						format_type_be(state->vt->type)),
				 errhint("Use quantile_medians, whose representatives are values of the column.")));
	values = ValueCountSorted(state, &nvalues);
	CheckNoRowsBelowFirstCut(state, values, nvalues, fcinfo);
	ncuts = ArrayGetNItems(ARR_NDIM(state->cuts), ARR_DIMS(state->cuts));
	collector.vt = state->vt;
	collector.means = palloc0(sizeof(Datum) * ncuts);
	collector.nulls = palloc0(sizeof(bool) * ncuts);
	VisitBuckets(state, values, nvalues, CollectMean, &collector);
	dims[0] = ncuts;
	PG_RETURN_ARRAYTYPE_P(construct_md_array(collector.means, collector.nulls, 1, dims, lbs,
											 FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL,
											 TYPALIGN_DOUBLE));
}
