/*
 * diversity.c
 *	  Aggregates of a sensitive column over the equivalence classes of a
 *	  quasi-identifier: l_diversity (distinct l-diversity),
 *	  entropy_l_diversity and t_closeness (equal distance).
 *
 * They count (class, sensitive value) pairs in the frequency state of
 * freqstate.c: a pair's key takes its high half from the QID fingerprint and
 * its low half from the sensitive value's, so read in ascending order the
 * state yields each class as a run of one high half.  Partial states combine,
 * serialize and spill as k_anonymity's do.  Classes are told apart by 64 bits
 * (two of C classes share them with probability about C^2 / 2^65), sensitive
 * values by 64 more.
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "utils/lsyscache.h"

#include "qidrisk.h"

PG_FUNCTION_INFO_V1(qidrisk_diversity_transfn);
PG_FUNCTION_INFO_V1(qidrisk_l_diversity_final);
PG_FUNCTION_INFO_V1(qidrisk_entropy_l_diversity_final);
PG_FUNCTION_INFO_V1(qidrisk_t_closeness_final);

/* How one call site hashes its QID (arguments 2...) and sensitive value (1) */
typedef struct DiversityHashers
{
	QidHasher  *qid;
	QidHasher  *sensitive;
} DiversityHashers;

/* Build (once per call site) the two hashers */
static DiversityHashers *
GetHashers(FunctionCallInfo fcinfo)
{
	DiversityHashers *hashers = (DiversityHashers *) fcinfo->flinfo->fn_extra;
	const char *funcname;
	const char *names[1] = {"sensitive"};
	QidHasher  *qid;
	Oid			type;
	Oid			collation;

	if (hashers != NULL)
		return hashers;
	funcname = AggregateName(fcinfo);
	/* checks the QID's types, a VARIADIC array and all-constant QIDs (42P10) */
	qid = QidHasherGet(fcinfo, 2, -1, funcname);
	type = get_fn_expr_argtype(fcinfo->flinfo, 1);
	if (!OidIsValid(type))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s could not determine the data type of its sensitive argument",
						funcname)));
	collation = QidArgumentCollation(fcinfo, 1, type);
	hashers = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(DiversityHashers));
	hashers->qid = qid;
	hashers->sensitive = QidHasherCreate(fcinfo->flinfo->fn_mcxt, 1, &type, &collation,
										 names, funcname);
	fcinfo->flinfo->fn_extra = hashers;
	return hashers;
}

/* Transition: count the row's (class, sensitive value) pair */
Datum
qidrisk_diversity_transfn(PG_FUNCTION_ARGS)
{
	FreqState  *state = FreqStateForUpdate(fcinfo);
	DiversityHashers *hashers = GetHashers(fcinfo);
	QidFingerprint class_fp;
	QidFingerprint value_fp;
	QidFingerprint pair;

	QidFingerprintRow(hashers->qid, fcinfo, &class_fp);
	/* NULL is one sensitive value, as in GROUP BY */
	QidFingerprintValues(hashers->sensitive, &fcinfo->args[1], &value_fp);
	pair.hi = class_fp.hi;
	pair.lo = value_fp.lo;
	FreqStateAddRow(state, &pair);
	PG_RETURN_POINTER(state);
}

/* One sensitive value's rows in the whole table */
typedef struct ValueShare
{
	uint64		value;
	int64		count;
	double		share;
} ValueShare;

/* What a walk over the classes gathers */
typedef struct ClassWalk
{
	/* the class being read */
	bool		open;
	uint64		hi;
	int64		rows;
	int64		values;			/* distinct sensitive values */
	double		sum_c_log_c;	/* sum of c ln c over its values' counts */
	double		sum_distance;	/* sum of |p - q| - q over its values */
	/* over the classes read */
	int64		classes;
	int64		min_values;
	double		min_entropy;
	double		max_distance;
	/* the table's distribution, for t-closeness (sorted by value) */
	ValueShare *shares;
	int64		nshares;
} ClassWalk;

/* Order ValueShares by value (qsort comparator) */
static int
CompareShares(const void *a, const void *b)
{
	uint64		x = ((const ValueShare *) a)->value;
	uint64		y = ((const ValueShare *) b)->value;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/* Sort the collected shares and add up those of one value */
static void
CompactShares(ClassWalk *walk)
{
	int64		n = 0;

	qsort(walk->shares, walk->nshares, sizeof(ValueShare), CompareShares);
	for (int64 i = 0; i < walk->nshares; i++)
	{
		if (n > 0 && walk->shares[n - 1].value == walk->shares[i].value)
			walk->shares[n - 1].count += walk->shares[i].count;
		else
			walk->shares[n++] = walk->shares[i];
	}
	walk->nshares = n;
}

/* The table's distribution of the sensitive values, in a growing array */
typedef struct ShareCollector
{
	ClassWalk  *walk;
	int64		capacity;
	int64		rows;
} ShareCollector;

/* Visitor: add one pair's rows to its sensitive value's */
static void
CollectShare(const QidFingerprint *key, int64 count, void *arg)
{
	ShareCollector *collector = (ShareCollector *) arg;
	ClassWalk  *walk = collector->walk;

	if (walk->nshares == collector->capacity)
	{
		/* few distinct values, many pairs: compacting usually makes room */
		CompactShares(walk);
		if (walk->nshares > collector->capacity / 2)
		{
			collector->capacity *= 2;
			walk->shares = repalloc_huge(walk->shares, collector->capacity * sizeof(ValueShare));
		}
	}
	walk->shares[walk->nshares].value = key->lo;
	walk->shares[walk->nshares].count = count;
	walk->nshares++;
	collector->rows += count;
}

/* The share of value in the whole table (it is there: every pair's value is) */
static double
ShareOf(const ClassWalk *walk, uint64 value)
{
	int64		low = 0;
	int64		high = walk->nshares - 1;

	while (low <= high)
	{
		int64		mid = low + (high - low) / 2;

		if (walk->shares[mid].value == value)
			return walk->shares[mid].share;
		if (walk->shares[mid].value < value)
			low = mid + 1;
		else
			high = mid - 1;
	}
	elog(ERROR, "qidrisk: a sensitive value missing from the table's distribution");
	return 0;					/* keep the compiler quiet */
}

/* Close the class being read: fold its figures into the walk's */
static void
CloseClass(ClassWalk *walk)
{
	double		entropy;
	double		distance;

	if (!walk->open)
		return;
	/* H = ln n - (1/n) sum c ln c */
	entropy = log((double) walk->rows) - walk->sum_c_log_c / (double) walk->rows;
	if (entropy < 0)
		entropy = 0;
	/* half the L1 distance; values absent from the class contribute their share */
	distance = (walk->sum_distance + 1.0) / 2.0;
	if (distance < 0)
		distance = 0;
	if (walk->classes == 0 || walk->values < walk->min_values)
		walk->min_values = walk->values;
	if (walk->classes == 0 || entropy < walk->min_entropy)
		walk->min_entropy = entropy;
	if (walk->classes == 0 || distance > walk->max_distance)
		walk->max_distance = distance;
	walk->classes++;
	walk->open = false;
}

/* Visitor: one (class, sensitive value) pair, in ascending order */
static void
WalkPair(const QidFingerprint *key, int64 count, void *arg)
{
	ClassWalk  *walk = (ClassWalk *) arg;

	if (walk->open && key->hi != walk->hi)
	{
		if (key->hi < walk->hi)
			elog(ERROR, "qidrisk: the classes of a frequency state came out of order");
		CloseClass(walk);
	}
	if (!walk->open)
	{
		walk->open = true;
		walk->hi = key->hi;
		walk->rows = 0;
		walk->values = 0;
		walk->sum_c_log_c = 0;
		walk->sum_distance = 0;
	}
	walk->rows += count;
	walk->values++;
	walk->sum_c_log_c += (double) count * log((double) count);
}

/*
 * Visitor for t-closeness: a class's shares p = c / n need its size n, known
 * only at its end, so a class's counts are first gathered in a buffer
 */
typedef struct DistanceWalk
{
	ClassWalk  *walk;
	QidFingerprint *pairs;		/* the open class's values (lo) and counts (hi) */
	int64		npairs;
	int64		capacity;
} DistanceWalk;

/* Fold the buffered class into the walk */
static void
FlushDistanceClass(DistanceWalk *dw)
{
	ClassWalk  *walk = dw->walk;
	double		sum = 0;

	if (!walk->open)
		return;
	for (int64 i = 0; i < dw->npairs; i++)
	{
		double		q = ShareOf(walk, dw->pairs[i].lo);
		double		p = (double) dw->pairs[i].hi / (double) walk->rows;

		sum += fabs(p - q) - q;
	}
	walk->sum_distance = sum;
	CloseClass(walk);
	dw->npairs = 0;
}

/* Visitor: one pair, for t-closeness */
static void
WalkPairDistance(const QidFingerprint *key, int64 count, void *arg)
{
	DistanceWalk *dw = (DistanceWalk *) arg;
	ClassWalk  *walk = dw->walk;

	if (walk->open && key->hi != walk->hi)
	{
		if (key->hi < walk->hi)
			elog(ERROR, "qidrisk: the classes of a frequency state came out of order");
		FlushDistanceClass(dw);
	}
	if (dw->npairs == dw->capacity)
	{
		dw->capacity *= 2;
		dw->pairs = repalloc_huge(dw->pairs, dw->capacity * sizeof(QidFingerprint));
	}
	dw->pairs[dw->npairs].lo = key->lo;
	dw->pairs[dw->npairs].hi = (uint64) count;
	dw->npairs++;
	WalkPair(key, count, walk);
}

/* Walk the classes of the state in argument 0; false when it holds no row */
static bool
WalkClasses(FunctionCallInfo fcinfo, ClassWalk *walk, bool distances)
{
	FreqState  *state;
	FreqCounts	counts;

	memset(walk, 0, sizeof(*walk));
	if (PG_ARGISNULL(0))
		return false;
	state = (FreqState *) PG_GETARG_POINTER(0);
	FreqStateCounts(state, &counts);
	if (counts.rows == 0)
		return false;
	if (!distances)
	{
		FreqStateVisitAscending(state, WalkPair, walk);
		CloseClass(walk);
	}
	else
	{
		ShareCollector collector = {walk, 64, 0};
		DistanceWalk dw = {walk, NULL, 0, 64};

		/* first the table's distribution, then each class against it */
		walk->shares = palloc(collector.capacity * sizeof(ValueShare));
		FreqStateVisitAscending(state, CollectShare, &collector);
		CompactShares(walk);
		for (int64 i = 0; i < walk->nshares; i++)
			walk->shares[i].share = (double) walk->shares[i].count / (double) collector.rows;
		dw.pairs = palloc(dw.capacity * sizeof(QidFingerprint));
		FreqStateVisitAscending(state, WalkPairDistance, &dw);
		FlushDistanceClass(&dw);
		pfree(dw.pairs);
		pfree(walk->shares);
	}
	return true;
}

/* Distinct l-diversity: the fewest distinct sensitive values of a class */
Datum
qidrisk_l_diversity_final(PG_FUNCTION_ARGS)
{
	ClassWalk	walk;

	if (!WalkClasses(fcinfo, &walk, false))
		PG_RETURN_NULL();
	PG_RETURN_INT64(walk.min_values);
}

/* Entropy l-diversity: exp of the least entropy (natural log) of a class */
Datum
qidrisk_entropy_l_diversity_final(PG_FUNCTION_ARGS)
{
	ClassWalk	walk;

	if (!WalkClasses(fcinfo, &walk, false))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(exp(walk.min_entropy));
}

/* t-closeness, equal distance: the largest distance of a class to the table */
Datum
qidrisk_t_closeness_final(PG_FUNCTION_ARGS)
{
	ClassWalk	walk;

	if (!WalkClasses(fcinfo, &walk, true))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(walk.max_distance);
}
