/*
 * diversity.c
 *	  Aggregates of a sensitive column over the equivalence classes of a
 *	  quasi-identifier: l_diversity (distinct l-diversity),
 *	  entropy_l_diversity, t_closeness (equal distance) and
 *	  t_closeness_ordered (ordered distance).
 *
 * They count (class, sensitive value) pairs in the frequency state of
 * freqstate.c: a pair's key takes its high half from the QID fingerprint and
 * its low half from the sensitive value's, so read in ascending order the
 * state yields each class as a run of one high half.  Partial states combine,
 * serialize and spill as k_anonymity's do.  Classes are told apart by 64 bits
 * (two of C classes share them with probability about C^2 / 2^65), sensitive
 * values by 64 more.
 *
 * t_closeness_ordered keys a pair by an order-preserving 64-bit encoding of
 * the sensitive value instead of its hash, so the table's distinct values,
 * sorted by their keys, are in the type's order and give each value its rank.
 * The ordered distance of a class costs O(v log m) for its v values against
 * the table's m, by prefix sums of the table's cumulative shares.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/lsyscache.h"

#include "aggcommon.h"
#include "diversity.h"
#include "fingerprint.h"
#include "freqengine.h"
#include "frequency.h"
#include "qidrisk.h"

PG_FUNCTION_INFO_V1(qidrisk_diversity_transfn);
PG_FUNCTION_INFO_V1(qidrisk_l_diversity_final);
PG_FUNCTION_INFO_V1(qidrisk_entropy_l_diversity_final);
PG_FUNCTION_INFO_V1(qidrisk_t_closeness_final);
PG_FUNCTION_INFO_V1(qidrisk_ordered_diversity_transfn);
PG_FUNCTION_INFO_V1(qidrisk_t_closeness_ordered_final);

/* How t_closeness_ordered encodes its sensitive value in 64 ordered bits */
typedef enum OrderedEncoding
{
	ENCODE_NONE,				/* hashed: the other aggregates */
	ENCODE_INT2,
	ENCODE_INT4,				/* and date */
	ENCODE_INT8,				/* and timestamp, timestamptz */
	ENCODE_FLOAT4,
	ENCODE_FLOAT8,
	ENCODE_NUMERIC				/* as float8 */
} OrderedEncoding;

/* How one call site hashes its QID (arguments 2...) and sensitive value (1) */
typedef struct DiversityHashers
{
	QidHasher  *qid;
	QidHasher  *sensitive;		/* NULL when encoded */
	OrderedEncoding encoding;
} DiversityHashers;

/* How t_closeness_ordered encodes a sensitive value of type (42804 if it cannot) */
static OrderedEncoding
OrderedEncodingOf(Oid type, const char *funcname)
{
	switch (getBaseType(type))
	{
		case INT2OID:
			return ENCODE_INT2;
		case INT4OID:
		case DATEOID:
			return ENCODE_INT4;
		case INT8OID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return ENCODE_INT8;
		case FLOAT4OID:
			return ENCODE_FLOAT4;
		case FLOAT8OID:
			return ENCODE_FLOAT8;
		case NUMERICOID:
			return ENCODE_NUMERIC;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("%s needs a numeric, date or timestamp sensitive value, not %s",
							funcname, format_type_be(type)),
					 errhint("Cast it to a number that orders its values (a rank), or use t_closeness for the equal distance.")));
	}
	return ENCODE_NONE;			/* keep the compiler quiet */
}

/* Build (once per call site) the QID's hasher and the sensitive value's */
static DiversityHashers *
GetHashers(FunctionCallInfo fcinfo, bool ordered)
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
	hashers = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(DiversityHashers));
	hashers->qid = qid;
	hashers->sensitive = NULL;
	hashers->encoding = ENCODE_NONE;
	if (ordered)
		hashers->encoding = OrderedEncodingOf(type, funcname);
	else
	{
		collation = QidArgumentCollation(fcinfo, 1, type);
		hashers->sensitive = QidHasherCreate(fcinfo->flinfo->fn_mcxt, 1, &type, &collation,
											 names, funcname);
	}
	fcinfo->flinfo->fn_extra = hashers;
	return hashers;
}

/*
 * A float8 as 64 bits whose unsigned order is float8's: -0 is 0 and every NaN
 * one value above Infinity, as PostgreSQL orders them
 */
static uint64
EncodeFloat8(double value)
{
	uint64		bits;

	if (isnan(value))
		value = get_float8_nan();
	else if (value == 0)
		value = 0;
	memcpy(&bits, &value, sizeof(bits));
	return (bits & UINT64CONST(0x8000000000000000)) ? ~bits : bits | UINT64CONST(0x8000000000000000);
}

/* The ordered key of a sensitive value; NULL is PG_UINT64_MAX, after every value */
static uint64
EncodeOrdered(OrderedEncoding encoding, Datum value, bool isnull)
{
	int64		v;
	uint64		key;

	if (isnull)
		return PG_UINT64_MAX;
	switch (encoding)
	{
		case ENCODE_INT2:
			v = DatumGetInt16(value);
			break;
		case ENCODE_INT4:
			v = DatumGetInt32(value);
			break;
		case ENCODE_INT8:
			v = DatumGetInt64(value);
			break;
		case ENCODE_FLOAT4:
			return EncodeFloat8((double) DatumGetFloat4(value));
		case ENCODE_FLOAT8:
			return EncodeFloat8(DatumGetFloat8(value));
		case ENCODE_NUMERIC:
			return EncodeFloat8(DatumGetFloat8(DirectFunctionCall1(numeric_float8, value)));
		default:
			elog(ERROR, "qidrisk: no ordered encoding");
			return 0;
	}
	key = (uint64) v ^ UINT64CONST(0x8000000000000000);
	/* room for NULL: the largest bigint shares the key of the one below */
	return key == PG_UINT64_MAX ? key - 1 : key;
}

/*
 * Transition: count the row's (class, sensitive value) pair, the value hashed
 * or, for t_closeness_ordered, encoded in order
 */
static Datum
DiversityTransition(FunctionCallInfo fcinfo, bool ordered)
{
	FreqState  *state = FreqStateForUpdate(fcinfo);
	DiversityHashers *hashers = GetHashers(fcinfo, ordered);
	QidFingerprint class_fp;
	QidFingerprint value_fp;
	QidFingerprint pair;

	QidFingerprintRow(hashers->qid, fcinfo, &class_fp);
	pair.hi = class_fp.hi;
	if (ordered)
	{
		/* NULL is one sensitive value, ranked after all others as in ORDER BY */
		pair.lo = EncodeOrdered(hashers->encoding, PG_GETARG_DATUM(1), PG_ARGISNULL(1));
	}
	else
	{
		/* NULL is one sensitive value, as in GROUP BY */
		QidFingerprintValues(hashers->sensitive, &fcinfo->args[1], &value_fp);
		pair.lo = value_fp.lo;
	}
	FreqStateAddRow(state, &pair);
	PG_RETURN_POINTER(state);
}

Datum
qidrisk_diversity_transfn(PG_FUNCTION_ARGS)
{
	return DiversityTransition(fcinfo, false);
}

Datum
qidrisk_ordered_diversity_transfn(PG_FUNCTION_ARGS)
{
	return DiversityTransition(fcinfo, true);
}

/* Order OrderedItems by rank (qsort comparator) */
static int
CompareItems(const void *a, const void *b)
{
	int64		x = ((const OrderedItem *) a)->rank;
	int64		y = ((const OrderedItem *) b)->rank;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/* Put a class's items in ascending rank order (often they already are) */
void
OrderedItemsSort(OrderedItem *items, int64 n)
{
	for (int64 i = 1; i < n; i++)
		if (items[i].rank < items[i - 1].rank)
		{
			qsort(items, n, sizeof(OrderedItem), CompareItems);
			return;
		}
}

/* The table's counts by rank: their cumulative sums and the sums of those */
void
OrderedTableInit(OrderedTable *table, const int64 *count, int64 m)
{
	double		cum = 0;
	double		prefix = 0;

	table->m = m;
	table->cum = palloc_extended(sizeof(double) * Max(m, 1), MCXT_ALLOC_HUGE);
	table->prefix = palloc_extended(sizeof(double) * (m + 1), MCXT_ALLOC_HUGE);
	table->prefix[0] = 0;
	for (int64 i = 0; i < m; i++)
	{
		cum += (double) count[i];
		table->cum[i] = cum;
		prefix += cum;
		table->prefix[i + 1] = prefix;
	}
	table->rows = cum;
}

/*
 * Sum over i in [a, b) of |rows * N - cum[i] * size|, N the table's rows:
 * size * N times the sum of |P - Q_i| where the class's P = rows / size.  In
 * counts rather than shares, it is exact while the products stay below 2^53.
 */
static double
SegmentDistance(const OrderedTable *table, int64 a, int64 b, double rows, double size)
{
	double		c = rows * table->rows;
	int64		low = a;
	int64		high = b;
	double		below;
	double		above;

	/* the first i in [a, b) with cum[i] * size > c (cum ascends) */
	while (low < high)
	{
		int64		mid = low + (high - low) / 2;

		if (table->cum[mid] * size > c)
			high = mid;
		else
			low = mid + 1;
	}
	below = c * (double) (low - a) - size * (table->prefix[low] - table->prefix[a]);
	above = size * (table->prefix[b] - table->prefix[low]) - c * (double) (b - low);
	return Max(below, 0) + Max(above, 0);
}

/*
 * The ordered distance of a class (n items by ascending rank, size rows) to
 * the table: (1 / (m - 1)) sum_{i < m-1} |P_i - Q_i|, P and Q the cumulative
 * shares of the class and of the table; 0 when m = 1.  The class's P is
 * constant between its ranks, so each stretch costs one binary search.
 */
double
OrderedDistance(const OrderedTable *table, const OrderedItem *items, int64 n, int64 size)
{
	int64		end = table->m - 1;
	int64		at = 0;
	int64		rows = 0;
	double		total = 0;

	if (table->m <= 1)
		return 0;
	for (int64 j = 0; j < n && at < end; j++)
	{
		int64		rank = Min(items[j].rank, end);

		if (j > 0 && items[j].rank <= items[j - 1].rank)
			elog(ERROR, "qidrisk: the values of a class came out of order");
		if (rank > at)
			total += SegmentDistance(table, at, rank, (double) rows, (double) size);
		rows += items[j].count;
		at = rank;
	}
	if (at < end)
		total += SegmentDistance(table, at, end, (double) rows, (double) size);
	return total / ((double) size * table->rows * (double) end);
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
	double		ordered_distance;	/* or its ordered distance */
	/* over the classes read */
	int64		classes;
	int64		min_values;
	double		min_entropy;
	double		max_distance;
	/* the table's distribution, for t-closeness (sorted by value) */
	ValueShare *shares;
	int64		nshares;
	/* the ordered distance: the table's cumulative shares, a class's items */
	OrderedTable *ordered;
	OrderedItem *items;
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

/* The rank of value in the whole table (it is there: every pair's value is) */
static int64
RankOf(const ClassWalk *walk, uint64 value)
{
	int64		low = 0;
	int64		high = walk->nshares - 1;

	while (low <= high)
	{
		int64		mid = low + (high - low) / 2;

		if (walk->shares[mid].value == value)
			return mid;
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
	distance = walk->ordered != NULL ? walk->ordered_distance : (walk->sum_distance + 1.0) / 2.0;
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
	if (walk->ordered != NULL)
	{
		for (int64 i = 0; i < dw->npairs; i++)
		{
			walk->items[i].rank = RankOf(walk, dw->pairs[i].lo);
			walk->items[i].count = (int64) dw->pairs[i].hi;
		}
		/* keys ascend within a class, so ranks do: sorting is a check */
		OrderedItemsSort(walk->items, dw->npairs);
		walk->ordered_distance = OrderedDistance(walk->ordered, walk->items, dw->npairs,
												 walk->rows);
	}
	else
	{
		for (int64 i = 0; i < dw->npairs; i++)
		{
			double		q = walk->shares[RankOf(walk, dw->pairs[i].lo)].share;
			double		p = (double) dw->pairs[i].hi / (double) walk->rows;

			sum += fabs(p - q) - q;
		}
		walk->sum_distance = sum;
	}
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

/* What WalkClasses measures besides the l-diversity figures */
typedef enum WalkDistance
{
	WALK_NO_DISTANCE,
	WALK_EQUAL,
	WALK_ORDERED
} WalkDistance;

/* Walk the classes of the state in argument 0; false when it holds no row */
static bool
WalkClasses(FunctionCallInfo fcinfo, ClassWalk *walk, WalkDistance distances)
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
	if (distances == WALK_NO_DISTANCE)
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
		if (distances == WALK_ORDERED)
		{
			int64	   *count = palloc_extended(sizeof(int64) * walk->nshares, MCXT_ALLOC_HUGE);

			for (int64 i = 0; i < walk->nshares; i++)
				count[i] = walk->shares[i].count;
			walk->ordered = palloc(sizeof(OrderedTable));
			OrderedTableInit(walk->ordered, count, walk->nshares);
			pfree(count);
			/* a class holds at most the table's distinct values */
			walk->items = palloc_extended(sizeof(OrderedItem) * walk->nshares, MCXT_ALLOC_HUGE);
		}
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

	if (!WalkClasses(fcinfo, &walk, WALK_NO_DISTANCE))
		PG_RETURN_NULL();
	PG_RETURN_INT64(walk.min_values);
}

/* Entropy l-diversity: exp of the least entropy (natural log) of a class */
Datum
qidrisk_entropy_l_diversity_final(PG_FUNCTION_ARGS)
{
	ClassWalk	walk;

	if (!WalkClasses(fcinfo, &walk, WALK_NO_DISTANCE))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(exp(walk.min_entropy));
}

/* t-closeness, equal distance: the largest distance of a class to the table */
Datum
qidrisk_t_closeness_final(PG_FUNCTION_ARGS)
{
	ClassWalk	walk;

	if (!WalkClasses(fcinfo, &walk, WALK_EQUAL))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(walk.max_distance);
}

/* t-closeness, ordered distance: the largest ordered EMD of a class to the table */
Datum
qidrisk_t_closeness_ordered_final(PG_FUNCTION_ARGS)
{
	ClassWalk	walk;

	if (!WalkClasses(fcinfo, &walk, WALK_ORDERED))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(walk.max_distance);
}
