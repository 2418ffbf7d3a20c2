/*
 * frequency.c
 *	  SQL-callable frequency aggregates over a quasi-identifier:
 *	  singleton_count, class_count, k_anonymity, rows_below_k, class_profile.
 *
 * They share one transition state (freqstate.c), so PostgreSQL computes one
 * hash table when several of them aggregate the same columns in one query.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "funcapi.h"
#include "nodes/execnodes.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "aggcommon.h"
#include "compat.h"
#include "fingerprint.h"
#include "freqengine.h"
#include "frequency.h"
#include "handover.h"
#include "qidrisk.h"

/* Class sizes up to this are histogrammed in a dense array */
#define DENSE_HISTOGRAM_SIZES 4096

PG_FUNCTION_INFO_V1(qidrisk_freq_transfn);
PG_FUNCTION_INFO_V1(qidrisk_freq_invtransfn);
PG_FUNCTION_INFO_V1(qidrisk_freq_k_transfn);
PG_FUNCTION_INFO_V1(qidrisk_freq_k_invtransfn);
PG_FUNCTION_INFO_V1(qidrisk_freq_value_param_transfn);
PG_FUNCTION_INFO_V1(qidrisk_freq_combine);
PG_FUNCTION_INFO_V1(qidrisk_freq_serialize);
PG_FUNCTION_INFO_V1(qidrisk_freq_deserialize);
PG_FUNCTION_INFO_V1(qidrisk_singleton_count_final);
PG_FUNCTION_INFO_V1(qidrisk_class_count_final);
PG_FUNCTION_INFO_V1(qidrisk_k_anonymity_final);
PG_FUNCTION_INFO_V1(qidrisk_rows_below_k_final);
PG_FUNCTION_INFO_V1(qidrisk_class_profile_final);
PG_FUNCTION_INFO_V1(qidrisk_class_size_profile_transfn);
PG_FUNCTION_INFO_V1(qidrisk_class_size_profile_combine);
PG_FUNCTION_INFO_V1(qidrisk_class_size_profile_final);
PG_FUNCTION_INFO_V1(qidrisk_state_events);

/*
 * Fetch or create the frequency state in argument 0 of a transition
 * function (shared with the key aggregates of qidkey.c)
 */
FreqState *
FreqStateForUpdate(FunctionCallInfo fcinfo)
{
	MemoryContext aggcontext;
	int			caller;
	FreqState  *state;

	if (!PG_ARGISNULL(0))
		return (FreqState *) PG_GETARG_POINTER(0);

	caller = AggCheckCallContext(fcinfo, &aggcontext);
	if (caller == 0)
		AggregateContext(fcinfo);	/* raises the error */
	state = FreqStateCreate(aggcontext, 0);
	state->windowed = (caller == AGG_CONTEXT_WINDOW);
	/* a hashed aggregate keeps every group's state at once: no front tables there */
	state->one_of_many = fcinfo->context != NULL && IsA(fcinfo->context, AggState) &&
		((AggState *) fcinfo->context)->aggstrategy != AGG_PLAIN &&
		((AggState *) fcinfo->context)->aggstrategy != AGG_SORTED;
	/*
	 * a plain or sorted aggregate's own state may log rows (not a window's, a
	 * hashed group's, or a parallel plan's partial state, which is handed over
	 * as sorted classes: counting a log into them costs workers more than it
	 * saves)
	 */
	state->log_allowed = !state->windowed && !state->one_of_many &&
		fcinfo->context != NULL && IsA(fcinfo->context, AggState) &&
		((AggState *) fcinfo->context)->aggsplit == AGGSPLIT_SIMPLE;
	return state;
}

/* Where an aggregate's arguments sit in its transition function's call */
typedef enum ArgLayout
{
	QID_ONLY,					/* (state, qid...) */
	PARAM_THEN_QID,				/* (state, param, qid...) */
	VALUE_THEN_PARAM			/* (state, value, param) */
} ArgLayout;

/* Count (or, for an inverse transition, uncount) the row's QID combination */
static Datum
UpdateState(FunctionCallInfo fcinfo, ArgLayout layout, bool remove)
{
	FreqState  *state = FreqStateForUpdate(fcinfo);
	QidHasher  *hasher = (QidHasher *) fcinfo->flinfo->fn_extra;
	QidFingerprint fp;
	Datum		value;

	if (unlikely(hasher == NULL))
	{
		if (layout == QID_ONLY)
			hasher = QidHasherGet(fcinfo, 1, -1, AggregateName(fcinfo));
		else if (layout == PARAM_THEN_QID)
			hasher = QidHasherGet(fcinfo, 2, -1, AggregateName(fcinfo));
		else
			hasher = QidHasherGet(fcinfo, 1, 1, AggregateName(fcinfo));
	}
	if (layout != QID_ONLY && !remove)
		RememberAggParameter(fcinfo, layout == PARAM_THEN_QID ? 1 : 2,
							 &state->has_param, &state->param);
	if (!remove && QidScalarArgument(hasher, fcinfo, &value))
	{
		/* a one-column int4 or date QID: counted per value first */
		FreqStateAddValue(state, value);
		PG_RETURN_POINTER(state);
	}
	QidFingerprintRow(hasher, fcinfo, &fp);
	if (remove)
		FreqStateRemoveRow(state, &fp);
	else
		FreqStateAddRow(state, &fp);
	PG_RETURN_POINTER(state);
}

/* The counters of the state in argument 0 of a final function; zeros for none */
static void
FinalCounts(FunctionCallInfo fcinfo, FreqCounts *counts)
{
	memset(counts, 0, sizeof(*counts));
	if (!PG_ARGISNULL(0))
		FreqStateCounts((FreqState *) PG_GETARG_POINTER(0), counts);
}

/* Transition: count the row's QID combination */
Datum
qidrisk_freq_transfn(PG_FUNCTION_ARGS)
{
	return UpdateState(fcinfo, QID_ONLY, false);
}

/* Inverse transition for moving window frames: uncount the row */
Datum
qidrisk_freq_invtransfn(PG_FUNCTION_ARGS)
{
	return UpdateState(fcinfo, QID_ONLY, true);
}

/* Transition of aggregates (param, qid...) such as rows_below_k(k, ...) */
Datum
qidrisk_freq_k_transfn(PG_FUNCTION_ARGS)
{
	return UpdateState(fcinfo, PARAM_THEN_QID, false);
}

/* Transition of aggregates (value, param) such as kl_uniform(value, domain_size) */
Datum
qidrisk_freq_value_param_transfn(PG_FUNCTION_ARGS)
{
	return UpdateState(fcinfo, VALUE_THEN_PARAM, false);
}

/* Inverse transition of aggregates (param, qid...) */
Datum
qidrisk_freq_k_invtransfn(PG_FUNCTION_ARGS)
{
	return UpdateState(fcinfo, PARAM_THEN_QID, true);
}

/* Combine two partial states into a state owned by the aggregate context */
Datum
qidrisk_freq_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext = AggregateContext(fcinfo);
	FreqState  *into = PG_ARGISNULL(0) ? NULL : (FreqState *) PG_GETARG_POINTER(0);
	FreqState  *from = PG_ARGISNULL(1) ? NULL : (FreqState *) PG_GETARG_POINTER(1);
	bool		adoptable;

	if (from == NULL)
	{
		if (into == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(into);
	}

	/*
	 * A deserialized state lives in our own aggregate context and nobody else
	 * holds it, so it can be kept instead of copied; any other state belongs
	 * to the node that produced it and must be copied.
	 */
	adoptable = from->private_copy && from->context == aggcontext;
	if (into == NULL)
	{
		if (adoptable)
			PG_RETURN_POINTER(from);
		/* a lent state stays its partial node's: read it from a state of ours */
		into = FreqStateCreate(aggcontext, (Size) FreqStateSizeHint(from));
		/* which nobody else holds: freed, or its runs taken over, if swapped out */
		into->private_copy = true;
		if (!from->lent)
		{
			FreqStateMerge(into, from);
			PG_RETURN_POINTER(into);
		}
	}

	/* large partitioned states: attach now, merge while streaming at the end */
	if ((adoptable || from->lent) && into->single == NULL && from->single == NULL &&
		from->attached == NULL && FreqStateAttach(into, from))
		PG_RETURN_POINTER(into);

	/* otherwise merge the smaller state into the larger one */
	if (adoptable && into->attached == NULL &&
		FreqStateSizeHint(from) > FreqStateSizeHint(into))
	{
		FreqState  *smaller = into;

		into = from;
		from = smaller;
	}
	FreqStateMerge(into, from);
	if (from->private_copy && from->context == aggcontext)
		FreqStateFree(from);
	PG_RETURN_POINTER(into);
}

Datum
qidrisk_freq_serialize(PG_FUNCTION_ARGS)
{
	FreqState  *state = (FreqState *) PG_GETARG_POINTER(0);

	(void) AggregateContext(fcinfo);
	PG_RETURN_BYTEA_P(FreqStateHandOver(fcinfo, state));
}

Datum
qidrisk_freq_deserialize(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext = AggregateContext(fcinfo);

	PG_RETURN_POINTER(FreqStateDeserialize(aggcontext, PG_GETARG_BYTEA_PP(0)));
}

Datum
qidrisk_singleton_count_final(PG_FUNCTION_ARGS)
{
	FreqCounts	counts;

	FinalCounts(fcinfo, &counts);
	PG_RETURN_INT64(counts.singletons);
}

Datum
qidrisk_class_count_final(PG_FUNCTION_ARGS)
{
	FreqCounts	counts;

	FinalCounts(fcinfo, &counts);
	PG_RETURN_INT64(counts.classes);
}

/* Class-size statistics gathered in one pass over the classes */
typedef struct ClassSizeSummary
{
	int64		smallest;
	int64		largest;
	int64		below_k_rows;	/* rows in classes smaller than k */
	int64		k;
	bool		histogram;		/* also build the histogram */
	int64	   *dense;			/* dense[s] = classes of size s, s <= DENSE_HISTOGRAM_SIZES */
	int64	   *large;			/* sizes above the dense range, unsorted */
	int64		nlarge;
	int64		large_capacity;
} ClassSizeSummary;

/* Visitor: account for one class of size count */
static void
SummarizeClass(int64 count, void *arg)
{
	ClassSizeSummary *summary = (ClassSizeSummary *) arg;

	if (summary->smallest == 0 || count < summary->smallest)
		summary->smallest = count;
	if (count > summary->largest)
		summary->largest = count;
	if (count < summary->k)
		summary->below_k_rows += count;
	if (!summary->histogram)
		return;
	if (count <= DENSE_HISTOGRAM_SIZES)
	{
		summary->dense[count]++;
		return;
	}
	if (summary->nlarge == summary->large_capacity)
	{
		summary->large_capacity *= 2;
		summary->large = repalloc_huge(summary->large,
									   summary->large_capacity * sizeof(int64));
	}
	summary->large[summary->nlarge++] = count;
}

/* Summarize a state's classes; the histogram is built only on request */
static void
SummarizeClasses(FreqState *state, int64 k, bool histogram, ClassSizeSummary *summary)
{
	memset(summary, 0, sizeof(*summary));
	summary->k = k;
	summary->histogram = histogram;
	if (histogram)
	{
		summary->dense = palloc0((DENSE_HISTOGRAM_SIZES + 1) * sizeof(int64));
		summary->large_capacity = 64;
		summary->large = palloc(summary->large_capacity * sizeof(int64));
	}
	if (state != NULL)
		FreqStateVisit(state, SummarizeClass, summary);
}

Datum
qidrisk_k_anonymity_final(PG_FUNCTION_ARGS)
{
	FreqState  *state = PG_ARGISNULL(0) ? NULL : (FreqState *) PG_GETARG_POINTER(0);
	ClassSizeSummary summary;
	FreqCounts	counts;

	FinalCounts(fcinfo, &counts);
	if (counts.rows == 0)
		PG_RETURN_NULL();
	SummarizeClasses(state, 0, false, &summary);
	PG_RETURN_INT64(summary.smallest);
}

Datum
qidrisk_rows_below_k_final(PG_FUNCTION_ARGS)
{
	FreqState  *state = PG_ARGISNULL(0) ? NULL : (FreqState *) PG_GETARG_POINTER(0);
	ClassSizeSummary summary;

	if (state == NULL)
		PG_RETURN_INT64(0);
	if (state->param < 1 || state->param > PG_INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be at least 1, not %.0f", state->param)));
	SummarizeClasses(state, (int64) state->param, false, &summary);
	PG_RETURN_INT64(summary.below_k_rows);
}

/* Order int64 values ascending */
static int
CompareInt64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return (x > y) - (x < y);
}

/* Build the histogram as two parallel bigint arrays, sizes ascending */
static void
HistogramArrays(ClassSizeSummary *summary, Datum *sizes_out, Datum *counts_out)
{
	int64		ndistinct = 0;
	Datum	   *sizes;
	Datum	   *counts;
	int			n = 0;

	for (int s = 1; s <= DENSE_HISTOGRAM_SIZES; s++)
		ndistinct += (summary->dense[s] > 0);
	ndistinct += summary->nlarge;	/* an upper bound */

	sizes = palloc(Max(ndistinct, 1) * sizeof(Datum));
	counts = palloc(Max(ndistinct, 1) * sizeof(Datum));
	for (int s = 1; s <= DENSE_HISTOGRAM_SIZES; s++)
	{
		if (summary->dense[s] == 0)
			continue;
		sizes[n] = Int64GetDatum((int64) s);
		counts[n] = Int64GetDatum(summary->dense[s]);
		n++;
	}

	qsort(summary->large, summary->nlarge, sizeof(int64), CompareInt64);
	for (int64 i = 0; i < summary->nlarge; i++)
	{
		if (i > 0 && summary->large[i] == summary->large[i - 1])
		{
			counts[n - 1] = Int64GetDatum(DatumGetInt64(counts[n - 1]) + 1);
			continue;
		}
		sizes[n] = Int64GetDatum(summary->large[i]);
		counts[n] = Int64GetDatum(1);
		n++;
	}

	*sizes_out = PointerGetDatum(construct_array(sizes, n, INT8OID, sizeof(int64),
												 FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	*counts_out = PointerGetDatum(construct_array(counts, n, INT8OID, sizeof(int64),
												  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

/*
 * A qid_profile (rows, classes, singletons, singleton_share, k_anonymity,
 * largest_class, class_sizes, class_counts) from its figures; smallest and
 * largest are read only when there are rows
 */
static Datum
ProfileDatum(FunctionCallInfo fcinfo, const FreqCounts *counts, int64 smallest,
			 int64 largest, Datum sizes, Datum class_counts)
{
	TupleDesc	tupdesc;
	Datum		values[8];
	bool		nulls[8] = {false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "a class profile must be of a composite type");
	tupdesc = BlessTupleDesc(tupdesc);

	values[0] = Int64GetDatum(counts->rows);
	values[1] = Int64GetDatum(counts->classes);
	values[2] = Int64GetDatum(counts->singletons);
	if (counts->rows > 0)
	{
		values[3] = Float8GetDatum((double) counts->singletons / (double) counts->rows);
		values[4] = Int64GetDatum(smallest);
		values[5] = Int64GetDatum(largest);
	}
	else
		nulls[3] = nulls[4] = nulls[5] = true;
	values[6] = sizes;
	values[7] = class_counts;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/* Final function of class_profile */
Datum
qidrisk_class_profile_final(PG_FUNCTION_ARGS)
{
	FreqState  *state = PG_ARGISNULL(0) ? NULL : (FreqState *) PG_GETARG_POINTER(0);
	ClassSizeSummary summary;
	FreqCounts	counts;
	Datum		sizes;
	Datum		class_counts;

	FinalCounts(fcinfo, &counts);
	SummarizeClasses(state, 0, true, &summary);
	HistogramArrays(&summary, &sizes, &class_counts);
	return ProfileDatum(fcinfo, &counts, summary.smallest, summary.largest, sizes, class_counts);
}

/* ---- class_size_profile: a profile from class sizes, in a bigint[] state ---- */

/*
 * The state of class_size_profile is a bigint[] of (size, classes) pairs,
 * sizes ascending, rather than internal: Citus splits an aggregate into a
 * partial aggregate per shard and a combine on the coordinator only when its
 * state has a real type (it ships the state as that type's text), and
 * parallel query passes it between processes as it is.  Under an aggregate
 * the transition function counts a known size in place; a size not seen
 * before copies the pairs, which stays cheap because n rows have fewer than
 * sqrt(2n) distinct class sizes.
 */

/* Raise 22P03: a state that is not a bigint[] of (size, classes) pairs, sizes ascending */
pg_noreturn static void
SizePairsInvalid(const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg("invalid class_size_profile state"),
			 errdetail("%s", detail),
			 errhint("The state is a bigint[] of (class size, classes) pairs, sizes ascending, "
					 "as class_size_profile's transition and combine functions build it.")));
}

/* The pairs of a state after checking its shape (not its order); *npairs gets their number */
static int64 *
SizePairs(ArrayType *state, int *npairs)
{
	if (ARR_ELEMTYPE(state) != INT8OID || ARR_HASNULL(state) || ARR_NDIM(state) > 1)
		SizePairsInvalid("The state must be a one-dimensional bigint[] without NULLs.");
	*npairs = ARR_NDIM(state) == 0 ? 0 : ARR_DIMS(state)[0] / 2;
	if (ARR_NDIM(state) == 1 && ARR_DIMS(state)[0] % 2 != 0)
		SizePairsInvalid("The state has an odd number of elements.");
	return (int64 *) ARR_DATA_PTR(state);
}

/* Check that the pairs' sizes ascend strictly from 1 and every count is at least 1 */
static void
SizePairsCheckOrder(const int64 *pairs, int npairs)
{
	for (int i = 0; i < npairs; i++)
		if (pairs[2 * i] < 1 || pairs[2 * i + 1] < 1 ||
			(i > 0 && pairs[2 * i] <= pairs[2 * i - 2]))
			SizePairsInvalid("The state's sizes must ascend strictly from 1, each with at least 1 class.");
}

/* The pairs of a state after checking it whole: its shape, its order, its counts */
static int64 *
SizePairsChecked(ArrayType *state, int *npairs)
{
	int64	   *pairs = SizePairs(state, npairs);

	SizePairsCheckOrder(pairs, *npairs);
	return pairs;
}

/* A state of npairs pairs, to be filled */
static ArrayType *
SizePairsArray(int64 npairs)
{
	Size		nbytes = ARR_OVERHEAD_NONULLS(1) + (Size) npairs * 2 * sizeof(int64);
	ArrayType  *result;

	if (npairs == 0)
		return construct_empty_array(INT8OID);
	if (npairs * 2 > (int64) MaxArraySize || nbytes > MaxAllocSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("class_size_profile: more than " INT64_FORMAT " distinct class sizes",
						(int64) Min(MaxArraySize, (MaxAllocSize - ARR_OVERHEAD_NONULLS(1)) / sizeof(int64)) / 2)));
	result = (ArrayType *) palloc(nbytes);
	SET_VARSIZE(result, nbytes);
	result->ndim = 1;
	result->dataoffset = 0;
	result->elemtype = INT8OID;
	ARR_DIMS(result)[0] = (int) (npairs * 2);
	ARR_LBOUND(result)[0] = 1;
	return result;
}

/* Raise 22003: a count past the bigint range */
pg_noreturn static void
SizeCountOverflow(const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("class_size_profile: the %s exceed the bigint range", what)));
}

/* What the transition function's fn_extra points to once it has checked an aggregate's first state */
static const char size_pairs_checked = 1;

/* Transition of class_size_profile(class_size bigint): count one class of that size */
Datum
qidrisk_class_size_profile_transfn(PG_FUNCTION_ARGS)
{
	ArrayType  *state;
	int64		size = PG_GETARG_INT64(1);
	int64	   *pairs;
	int			npairs;
	int			lo = 0;
	int			hi;
	ArrayType  *grown;
	int64	   *out;
	bool		inagg;

	if (size < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("class_size_profile: a class size must be at least 1, not " INT64_FORMAT,
						size),
				 errhint("Aggregate the sizes of non-empty classes, such as count(*) of a GROUP BY.")));
	/* only an aggregate's own state may change in place */
	inagg = AggCheckCallContext(fcinfo, NULL);
	if (inagg)
		state = PG_GETARG_ARRAYTYPE_P(0);
	else
		state = PG_GETARG_ARRAYTYPE_P_COPY(0);

	/*
	 * Check a state given directly; under an aggregate, only its first (the
	 * initial condition, the same for every group): the later ones are this
	 * function's own output, and checking each would cost O(pairs) a row.
	 */
	if (!inagg || fcinfo->flinfo->fn_extra == NULL)
	{
		pairs = SizePairsChecked(state, &npairs);
		fcinfo->flinfo->fn_extra = inagg ? (void *) &size_pairs_checked : NULL;
	}
	else
		pairs = SizePairs(state, &npairs);

	/* the first pair whose size is at least size */
	hi = npairs;
	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (pairs[2 * mid] < size)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < npairs && pairs[2 * lo] == size)
	{
		int64		classes;

		if (pg_add_s64_overflow(pairs[2 * lo + 1], 1, &classes))
			SizeCountOverflow("classes of one size");
		pairs[2 * lo + 1] = classes;
		PG_RETURN_ARRAYTYPE_P(state);
	}

	/* a size not seen before: the pairs with it inserted */
	grown = SizePairsArray((int64) npairs + 1);
	out = (int64 *) ARR_DATA_PTR(grown);
	memcpy(out, pairs, (Size) lo * 2 * sizeof(int64));
	out[2 * lo] = size;
	out[2 * lo + 1] = 1;
	memcpy(out + 2 * (lo + 1), pairs + 2 * lo, (Size) (npairs - lo) * 2 * sizeof(int64));
	PG_RETURN_ARRAYTYPE_P(grown);
}

/* Combine of class_size_profile: the two states' pairs merged, counts of equal sizes added */
Datum
qidrisk_class_size_profile_combine(PG_FUNCTION_ARGS)
{
	ArrayType  *into = PG_GETARG_ARRAYTYPE_P(0);
	ArrayType  *from = PG_GETARG_ARRAYTYPE_P(1);
	int			ninto;
	int			nfrom;
	const int64 *a = SizePairsChecked(into, &ninto);
	const int64 *b = SizePairsChecked(from, &nfrom);
	int64		nmerged = 0;
	ArrayType  *merged;
	int64	   *out;
	int			i = 0;
	int			j = 0;

	if (nfrom == 0)
		PG_RETURN_ARRAYTYPE_P(into);

	/* count the distinct sizes, then merge into a state of that many pairs */
	while (i < ninto || j < nfrom)
	{
		if (j == nfrom || (i < ninto && a[2 * i] < b[2 * j]))
			i++;
		else if (i == ninto || b[2 * j] < a[2 * i])
			j++;
		else
			i++, j++;
		nmerged++;
	}
	merged = SizePairsArray(nmerged);
	out = (int64 *) ARR_DATA_PTR(merged);
	i = j = 0;
	while (i < ninto || j < nfrom)
	{
		if (j == nfrom || (i < ninto && a[2 * i] < b[2 * j]))
		{
			out[0] = a[2 * i];
			out[1] = a[2 * i + 1];
			i++;
		}
		else if (i == ninto || b[2 * j] < a[2 * i])
		{
			out[0] = b[2 * j];
			out[1] = b[2 * j + 1];
			j++;
		}
		else
		{
			out[0] = a[2 * i];
			if (pg_add_s64_overflow(a[2 * i + 1], b[2 * j + 1], &out[1]))
				SizeCountOverflow("classes of one size");
			i++, j++;
		}
		out += 2;
	}
	PG_RETURN_ARRAYTYPE_P(merged);
}

/* Final function of class_size_profile: the qid_profile of the classes counted */
Datum
qidrisk_class_size_profile_final(PG_FUNCTION_ARGS)
{
	ArrayType  *state = PG_GETARG_ARRAYTYPE_P(0);
	int			npairs;
	const int64 *pairs = SizePairsChecked(state, &npairs);
	FreqCounts	counts = {0};
	Datum	   *sizes;
	Datum	   *class_counts;

	sizes = palloc(Max(npairs, 1) * sizeof(Datum));
	class_counts = palloc(Max(npairs, 1) * sizeof(Datum));
	for (int i = 0; i < npairs; i++)
	{
		int64		size = pairs[2 * i];
		int64		classes = pairs[2 * i + 1];
		int64		rows;

		if (pg_mul_s64_overflow(size, classes, &rows) ||
			pg_add_s64_overflow(counts.rows, rows, &counts.rows))
			SizeCountOverflow("rows of the classes");
		if (pg_add_s64_overflow(counts.classes, classes, &counts.classes))
			SizeCountOverflow("classes");
		if (size == 1)
			counts.singletons = classes;
		sizes[i] = Int64GetDatum(size);
		class_counts[i] = Int64GetDatum(classes);
	}
	return ProfileDatum(fcinfo, &counts, npairs > 0 ? pairs[0] : 0,
						npairs > 0 ? pairs[2 * (npairs - 1)] : 0,
						PointerGetDatum(construct_array(sizes, npairs, INT8OID, sizeof(int64),
														FLOAT8PASSBYVAL, TYPALIGN_DOUBLE)),
						PointerGetDatum(construct_array(class_counts, npairs, INT8OID,
														sizeof(int64), FLOAT8PASSBYVAL,
														TYPALIGN_DOUBLE)));
}

/*
 * qidrisk_internal.state_events(): what this process's frequency states have
 * done since it started, so that tests can show which path a query took
 */
Datum
qidrisk_state_events(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[14];
	bool		nulls[14] = {false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE ||
		tupdesc->natts > (int) lengthof(values))
		elog(ERROR, "state_events must return a composite type of at most %d columns",
			 (int) lengthof(values));
	tupdesc = BlessTupleDesc(tupdesc);
	values[0] = Int64GetDatum(qidrisk_freq_events.partitioned);
	values[1] = Int64GetDatum(qidrisk_freq_events.lent);
	values[2] = Int64GetDatum(qidrisk_freq_events.files_received);
	values[3] = Int64GetDatum(qidrisk_freq_events.partitions_decoded);
	values[4] = Int64GetDatum(qidrisk_freq_events.partitions_to_runs);
	/* the last nine came in 1.1.0; a 1.0.0 catalog has five columns */
	values[5] = Int64GetDatum(qidrisk_freq_events.fronts_started);
	values[6] = Int64GetDatum(qidrisk_freq_events.fronts_given_up);
	values[7] = Int64GetDatum(qidrisk_freq_events.merges_from_front);
	values[8] = Int64GetDatum(qidrisk_freq_events.lattice_packed_splits);
	values[9] = Int64GetDatum(qidrisk_freq_events.logs_started);
	values[10] = Int64GetDatum(qidrisk_freq_events.logs_counted);
	values[11] = Int64GetDatum(qidrisk_freq_events.logs_flushed);
	values[12] = Int64GetDatum(qidrisk_freq_events.logs_into_partitions);
	values[13] = Int64GetDatum(qidrisk_freq_events.logs_crowded);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
