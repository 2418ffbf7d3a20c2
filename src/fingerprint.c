/*
 * fingerprint.c
 *	  Reduce a row's quasi-identifier values to a 128-bit fingerprint.
 *
 * Each column is hashed twice by its type's own extended hash function (two
 * seeds), with the column's collation, so values equal under the type's
 * equality get equal fingerprints (1.0 = 1.00 for numeric, -0 = 0 for float8,
 * case-insensitive collations).  NULL hashes to a fixed value per seed, so it
 * behaves as one more value, as in GROUP BY.
 */
#include "postgres.h"

#include "catalog/pg_aggregate.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "nodes/execnodes.h"
#include "nodes/nodeFuncs.h"
#include "nodes/primnodes.h"
#include "utils/syscache.h"
#include "common/hashfn.h"
#include "datatype/timestamp.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"
#include "port/pg_bswap.h"

#include "aggcommon.h"
#include "fingerprint.h"
#include "qidrisk.h"

/* Seeds of the two independent 64-bit halves */
#define SEED_LO UINT64CONST(0x6a09e667f3bcc908)
#define SEED_HI UINT64CONST(0xbb67ae8584caa73b)

/* Stand-ins for NULL, one per half */
#define NULL_HASH_LO UINT64CONST(0x3c6ef372fe94f82b)
#define NULL_HASH_HI UINT64CONST(0xa54ff53a5f1d36f1)

/*
 * How a column is hashed.  The commonest types are hashed here, without the
 * function-call machinery (and, for text, a collation lookup per row): an
 * integer of 4 or 8 bytes enters the fingerprint as it is (the fold mixes
 * it, and distinct values stay distinct), and bytes equal under a
 * deterministic collation are hashed to both halves in one pass.  Some core
 * hash functions give up entropy that a 128-bit fingerprint needs:
 * int8-based types fold their 64 bits to 32, interval truncates its span,
 * numeric hashes NaN and both infinities to the seed, and arrays ignore their
 * dimensions.  For those, a hash of the whole value under the same equality
 * is used instead, or the missing part is folded in.
 */
typedef enum ColumnHashing
{
	HASH_VIA_FMGR,				/* the type's extended hash function */
	HASH_AS_INT4,				/* types hashed by hashint4extended: int4, date */
	HASH_AS_BYTES,				/* text-like types under a deterministic collation */
	HASH_AS_INT8,				/* int8, timestamp(tz), time, pg_lsn: all 64 bits */
	HASH_INTERVAL,				/* interval: its whole canonical span */
	HASH_NUMERIC,				/* numeric: NaN and the infinities told apart */
	HASH_ARRAY					/* arrays: shape (dimensions, lower bounds) included */
} ColumnHashing;

typedef struct QidColumn
{
	Oid			typid;
	Oid			collation;
	ColumnHashing hashing;
	FmgrInfo	hash_extended;
} QidColumn;

struct QidHasher
{
	int			firstarg;		/* index of the first QID argument */
	int			ncolumns;
	bool		all_int4;		/* every column is hashed as an int4 */
	QidColumn	columns[FLEXIBLE_ARRAY_MEMBER];
};

/* Fold one column's hash into a running, order-sensitive fingerprint half */
static inline uint64
FoldColumn(uint64 running, uint64 column_hash)
{
	return QidMix64((running * UINT64CONST(0x9e3779b97f4a7c15)) ^ column_hash);
}

/* Note whether every column is hashed as an int4 (QidFingerprintValues' short loop) */
static void
NoteAllInt4(QidHasher *hasher)
{
	hasher->all_int4 = true;
	for (int i = 0; i < hasher->ncolumns; i++)
		hasher->all_int4 &= (hasher->columns[i].hashing == HASH_AS_INT4);
}

/*
 * Find the collation of argument argno (1-based, argument 0 of a transition
 * function being its state) as written in the aggregate call, or of argument
 * argno (0-based) as written in a plain function call.
 */
Oid
QidArgumentCollation(FunctionCallInfo fcinfo, int argno, Oid typid)
{
	Aggref	   *aggref = AggGetAggref(fcinfo);

	if (!type_is_collatable(typid))
		return InvalidOid;

	if (aggref != NULL)
	{
		TargetEntry *tle = list_nth_node(TargetEntry, aggref->args, argno - 1);
		Oid			collation = exprCollation((Node *) tle->expr);

		if (OidIsValid(collation))
			return collation;
	}
	else if (AggCheckCallContext(fcinfo, NULL) == 0 &&
			 fcinfo->flinfo->fn_expr != NULL &&
			 IsA(fcinfo->flinfo->fn_expr, FuncExpr))
	{
		/* a plain function call such as qid_key(): argno counts from 0 */
		List	   *args = ((FuncExpr *) fcinfo->flinfo->fn_expr)->args;
		Oid			collation = InvalidOid;

		if (argno < list_length(args))
			collation = exprCollation((Node *) list_nth(args, argno));
		if (OidIsValid(collation))
			return collation;
	}

	/* window aggregates expose only the call's common input collation */
	if (OidIsValid(PG_GET_COLLATION()))
		return PG_GET_COLLATION();
	return DEFAULT_COLLATION_OID;
}

/*
 * Choose how to hash one column of type typid under collation; "where" names
 * the column in errors ("Argument 2", "Column \"zip\"").
 */
static void
QidColumnInit(QidColumn *column, Oid typid, Oid collation, MemoryContext context,
			  const char *where, const char *funcname)
{
	TypeCacheEntry *typentry;

	column->typid = typid;
	typentry = lookup_type_cache(typid, TYPECACHE_HASH_EXTENDED_PROC_FINFO);
	if (!OidIsValid(typentry->hash_extended_proc_finfo.fn_oid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("could not identify an extended hash function for type %s",
						format_type_be(typid)),
				 errdetail("%s of %s must be of a type with a hash operator class.",
						   where, funcname),
				 errhint("Cast the column to a hashable type such as text.")));
	fmgr_info_copy(&column->hash_extended, &typentry->hash_extended_proc_finfo,
				   context);
	column->collation = collation;
	column->hashing = HASH_VIA_FMGR;
	switch (typentry->hash_extended_proc)
	{
		case F_HASHINT4EXTENDED:
			/* equality of these types is equality of one int4 Datum */
			if (typentry->typlen == sizeof(int32) && typentry->typbyval)
				column->hashing = HASH_AS_INT4;
			break;
		case F_HASHTEXTEXTENDED:
			if (OidIsValid(column->collation) &&
				get_collation_isdeterministic(column->collation))
				column->hashing = HASH_AS_BYTES;
			break;
		case F_HASHINT8EXTENDED:
		case F_TIMESTAMP_HASH_EXTENDED:
		case F_TIME_HASH_EXTENDED:
		case F_PG_LSN_HASH_EXTENDED:
			/* equality of these types is equality of one int64 */
			if (typentry->typlen == sizeof(int64))
				column->hashing = HASH_AS_INT8;
			break;
		case F_INTERVAL_HASH_EXTENDED:
			column->hashing = HASH_INTERVAL;
			break;
		case F_HASH_NUMERIC_EXTENDED:
			column->hashing = HASH_NUMERIC;
			break;
		case F_HASH_ARRAY_EXTENDED:
			column->hashing = HASH_ARRAY;
			break;
	}
}

/*
 * Build a hashing plan for ncolumns values of the given types and collations
 * (InvalidOid for a non-collatable type), as a column of a table is hashed.
 */
QidHasher *
QidHasherCreate(MemoryContext context, int ncolumns, const Oid *types,
				const Oid *collations, const char *const *names,
				const char *funcname)
{
	QidHasher  *hasher = MemoryContextAllocZero(context,
											   offsetof(QidHasher, columns) +
											   sizeof(QidColumn) * ncolumns);

	hasher->firstarg = 0;
	hasher->ncolumns = ncolumns;
	for (int i = 0; i < ncolumns; i++)
	{
		char	   *where = psprintf("Column \"%s\"", names[i]);

		QidColumnInit(&hasher->columns[i], types[i],
					  type_is_collatable(types[i]) ? collations[i] : InvalidOid,
					  context, where, funcname);
		pfree(where);
	}
	NoteAllInt4(hasher);
	return hasher;
}

/* Look through casts and relabelings that keep an expression constant */
static Node *
StripCasts(Node *node)
{
	for (;;)
	{
		if (node == NULL)
			return NULL;
		if (IsA(node, RelabelType))
			node = (Node *) ((RelabelType *) node)->arg;
		else if (IsA(node, CoerceViaIO))
			node = (Node *) ((CoerceViaIO *) node)->arg;
		else if (IsA(node, ArrayCoerceExpr))
			node = (Node *) ((ArrayCoerceExpr *) node)->arg;
		else if (IsA(node, CollateExpr))
			node = (Node *) ((CollateExpr *) node)->arg;
		else if (IsA(node, FuncExpr) &&
				 (((FuncExpr *) node)->funcformat == COERCE_IMPLICIT_CAST ||
				  ((FuncExpr *) node)->funcformat == COERCE_EXPLICIT_CAST) &&
				 ((FuncExpr *) node)->args != NIL)
			node = (Node *) linitial(((FuncExpr *) node)->args);
		else
			return node;
	}
}

/* The expressions of an Aggref's arguments, without their TargetEntry wrappers */
static List *
ArgumentExpressions(List *targetlist)
{
	List	   *exprs = NIL;
	ListCell   *lc;

	foreach(lc, targetlist)
		exprs = lappend(exprs, ((TargetEntry *) lfirst(lc))->expr);
	return exprs;
}

/* Whether the arguments firstarg .. firstarg + ncolumns - 1 of args are all constants */
static bool
AllConstant(List *args, int firstarg, int ncolumns, bool skip_null)
{
	if (firstarg - 1 + ncolumns > list_length(args))
		return false;
	for (int i = 0; i < ncolumns; i++)
	{
		Node	   *arg = StripCasts((Node *) list_nth(args, firstarg - 1 + i));

		/* not a constant: a real column or expression (a Param may vary) */
		if (arg == NULL || !IsA(arg, Const))
			return false;
		/* a NULL key is skipped by the key aggregates, not counted */
		if (skip_null && ((Const *) arg)->constisnull)
			return false;
	}
	return true;
}

/*
 * Whether the window aggregate being called has constant QID arguments only.
 * Its transition function sees no WindowFunc, so look at the node's window
 * functions with this transition function and this many arguments: when
 * every one of them has constants only, so has this one.
 */
static bool
WindowArgumentsAllConstant(FunctionCallInfo fcinfo, int firstarg, int ncolumns,
						   bool skip_null)
{
	WindowAggState *winstate = (WindowAggState *) fcinfo->context;
	ListCell   *lc;
	int			candidates = 0;

	if (winstate == NULL || !IsA(winstate, WindowAggState))
		return false;
	foreach(lc, winstate->funcs)
	{
		WindowFuncExprState *wfstate = (WindowFuncExprState *) lfirst(lc);
		WindowFunc *wfunc = wfstate->wfunc;
		HeapTuple	tuple;
		Oid			transfn;

		if (!wfunc->winagg || list_length(wfunc->args) != PG_NARGS() - 1)
			continue;
		tuple = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(wfunc->winfnoid));
		if (!HeapTupleIsValid(tuple))
			continue;
		transfn = ((Form_pg_aggregate) GETSTRUCT(tuple))->aggtransfn;
		ReleaseSysCache(tuple);
		if (transfn != fcinfo->flinfo->fn_oid)
			continue;
		if (!AllConstant(wfunc->args, firstarg, ncolumns, skip_null))
			return false;
		candidates++;
	}
	return candidates > 0;
}

/*
 * Refuse an aggregate whose every quasi-identifier argument is a constant:
 * all rows then fall into one class, and a column name written as a string
 * ('age' instead of age) would pass for a perfectly safe table.  A call
 * without its expression (a distributed planner's) is not checked.
 */
static void
CheckNotAllConstant(FunctionCallInfo fcinfo, int firstarg, int ncolumns,
					bool skip_null, const char *funcname)
{
	Aggref	   *aggref = AggGetAggref(fcinfo);
	bool		constant;

	if (aggref != NULL)
		constant = AllConstant(aggref->args == NIL ? NIL :
							   (List *) ArgumentExpressions(aggref->args),
							   firstarg, ncolumns, skip_null);
	else if (AggCheckCallContext(fcinfo, NULL) == AGG_CONTEXT_WINDOW)
		constant = WindowArgumentsAllConstant(fcinfo, firstarg, ncolumns, skip_null);
	else
		constant = false;
	if (!constant)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
			 errmsg("%s needs columns as its quasi-identifier, not constants",
					funcname),
			 errdetail("Every quasi-identifier argument is a constant, so every row would fall into one class."),
			 skip_null ?
			 errhint("Pass qid_key() of the columns themselves, as in qid_key(age, sex), not of their names as strings.") :
			 errhint("Pass the columns themselves (age, sex), not their names as strings or an array.")));
}

/*
 * Refuse a key aggregate (singleton_count_key and the like) whose key
 * argument argno is a constant, such as qid_key('age', 'sex') folded by the
 * planner; called when a group's state is created
 */
void
QidCheckKeyNotConstant(FunctionCallInfo fcinfo, int argno)
{
	if (AggCheckCallContext(fcinfo, NULL) != 0)
		CheckNotAllConstant(fcinfo, argno, 1, true, AggregateName(fcinfo));
}

/*
 * Return the hashing plan for this call site, building it on first use.
 * The QID is ncolumns arguments from firstarg on; -1 means all the rest.
 */
QidHasher *
QidHasherGet(FunctionCallInfo fcinfo, int firstarg, int ncolumns,
			 const char *funcname)
{
	QidHasher  *hasher = (QidHasher *) fcinfo->flinfo->fn_extra;
	int			shown_offset;

	if (hasher != NULL)
		return hasher;

	if (get_fn_expr_variadic(fcinfo->flinfo))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s does not accept a VARIADIC array", funcname),
				 errdetail("Each quasi-identifier column must be its own argument."),
				 errhint("Write %s(col1, col2, ...) instead of %s(VARIADIC ARRAY[...]).",
						 funcname, funcname)));

	if (ncolumns < 0)
		ncolumns = PG_NARGS() - firstarg;
	if (ncolumns < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s needs at least one quasi-identifier column", funcname)));

	hasher = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt,
									offsetof(QidHasher, columns) +
									sizeof(QidColumn) * ncolumns);
	hasher->firstarg = firstarg;
	hasher->ncolumns = ncolumns;

	/* an aggregate's transition state is argument 0; a plain function's is not */
	shown_offset = AggCheckCallContext(fcinfo, NULL) ? 0 : 1;

	for (int i = 0; i < ncolumns; i++)
	{
		int			argno = firstarg + i;
		int			shown = argno + shown_offset;	/* counted from 1 */
		Oid			typid = get_fn_expr_argtype(fcinfo->flinfo, argno);
		char		where[64];

		if (!OidIsValid(typid))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s could not determine the data type of argument %d",
							funcname, shown)));
		if (typid == UNKNOWNOID)
			ereport(ERROR,
					(errcode(ERRCODE_INDETERMINATE_DATATYPE),
					 errmsg("could not determine data type of argument %d of %s",
							shown, funcname),
					 errhint("Add an explicit cast, for example '...'::text.")));
		snprintf(where, sizeof(where), "Argument %d", shown);
		QidColumnInit(&hasher->columns[i], typid,
					  QidArgumentCollation(fcinfo, argno, typid),
					  fcinfo->flinfo->fn_mcxt, where, funcname);
	}
	NoteAllInt4(hasher);

	/*
	 * Once per call site, after the type checks (the plan is cached from here
	 * on), for aggregates over a VARIADIC "any" QID: a value aggregate such
	 * as kl_uniform may well be asked about one constant value.
	 */
	if (AggCheckCallContext(fcinfo, NULL) != 0 &&
		get_func_variadictype(fcinfo->flinfo->fn_oid) == ANYOID)
		CheckNotAllConstant(fcinfo, firstarg, ncolumns, false, funcname);

	/*
	 * A window call exposes only one collation for all arguments.  That is
	 * right when at most one column is collatable, or when the collation is
	 * deterministic (then it only decides equality bytewise, as any would);
	 * otherwise the columns' own collations would be lost.
	 */
	if (AggCheckCallContext(fcinfo, NULL) == AGG_CONTEXT_WINDOW)
	{
		int			collatable = 0;

		for (int i = 0; i < ncolumns; i++)
			collatable += type_is_collatable(hasher->columns[i].typid);
		if (collatable > 1 &&
			(!OidIsValid(PG_GET_COLLATION()) ||
			 !get_collation_isdeterministic(PG_GET_COLLATION())))
			ereport(ERROR,
					(errcode(ERRCODE_INDETERMINATE_COLLATION),
					 errmsg("%s as a window function cannot keep the collations of several text columns apart",
							funcname),
					 errhint("Use it as a plain aggregate, or give the columns one deterministic collation with COLLATE.")));
	}

	fcinfo->flinfo->fn_extra = hasher;
	return hasher;
}

/* Second multiplier of HashBytes' high half, so the halves differ in more than the seed */
#define BYTES_HI_MULTIPLIER UINT64CONST(0xc2b2ae3d27d4eb4f)

/* Four bytes at p, little-endian */
static inline uint64
ReadLittle32(const char *p)
{
	uint32		v;

	memcpy(&v, p, sizeof(v));
#ifdef WORDS_BIGENDIAN
	v = pg_bswap32(v);
#endif
	return v;
}

/*
 * The next word of bytes: eight bytes, or (for the last 1 to 7) a value that,
 * the count being known, tells them apart, read without building it in
 * memory byte by byte (a load of a word just written piecewise stalls)
 */
static inline uint64
ReadWord(const char *at, int left)
{
	if (left >= (int) sizeof(uint64))
		return ReadLittle32(at) | (ReadLittle32(at + 4) << 32);
	if (left >= 4)
		return ReadLittle32(at) | (ReadLittle32(at + left - 4) << 32);
	return (uint64) (unsigned char) at[0] |
		((uint64) (unsigned char) at[left / 2] << 8) |
		((uint64) (unsigned char) at[left - 1] << 16);
}

/*
 * Hash bytes to both fingerprint halves in one pass of eight bytes at a
 * time, each half its own chain of QidMix64 over the words (the high half's
 * words multiplied first); the length enters first, so trailing zero bytes
 * count.  Not cryptographic, like the core hash functions it replaces.
 */
static inline void
HashBytes(const void *bytes, int length, uint64 seed_lo, uint64 seed_hi,
		  uint64 *lo, uint64 *hi)
{
	const char *at = (const char *) bytes;
	uint64		a = seed_lo ^ ((uint64) length * UINT64CONST(0x9e3779b97f4a7c15));
	uint64		b = seed_hi ^ ((uint64) length * BYTES_HI_MULTIPLIER);
	int			left = length;

	while (left > 0)
	{
		uint64		word = ReadWord(at, left);

		a = QidMix64(a ^ word);
		b = QidMix64(b ^ (word * BYTES_HI_MULTIPLIER));
		at += sizeof(uint64);
		left -= (int) sizeof(uint64);
	}
	*lo = a;
	*hi = b;
}

/*
 * An interval's canonical span, as interval_cmp_value computes it, written as
 * whole days and a non-negative remainder so that equal spans are equal pairs.
 */
static void
IntervalSpan(const Interval *interval, int64 span[2])
{
	int64		dayfraction = interval->time % USECS_PER_DAY;
	int64		days = interval->time / USECS_PER_DAY;

	days += interval->month * INT64CONST(30);
	days += interval->day;
	if (dayfraction < 0)
	{
		days--;
		dayfraction += USECS_PER_DAY;
	}
	span[0] = days;
	span[1] = dayfraction;
}

/* Hash one non-NULL column value under both seeds */
static void
HashColumn(QidColumn *column, Datum value, uint64 *lo, uint64 *hi)
{
	switch (column->hashing)
	{
		case HASH_AS_INT4:
			/* FoldColumn mixes it; distinct values stay distinct */
			*lo = *hi = (uint64) (uint32) DatumGetInt32(value);
			return;
		case HASH_AS_BYTES:
			{
				text	   *t = DatumGetTextPP(value);

				HashBytes(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), SEED_LO, SEED_HI, lo, hi);
				return;
			}
		case HASH_AS_INT8:
			/* told apart from the same number as an int4, and from NULL */
			*lo = (uint64) DatumGetInt64(value) ^ SEED_HI;
			*hi = (uint64) DatumGetInt64(value) ^ SEED_LO;
			return;
		case HASH_INTERVAL:
			{
				int64		span[2];

				IntervalSpan(DatumGetIntervalP(value), span);
				HashBytes(span, sizeof(span), SEED_LO, SEED_HI, lo, hi);
				return;
			}
		case HASH_NUMERIC:
			{
				Numeric		n = DatumGetNumeric(value);

				if (numeric_is_nan(n) || numeric_is_inf(n))
				{
					/* "NaN", "Infinity" or "-Infinity": one constant each */
					char	   *text = DatumGetCString(DirectFunctionCall1(numeric_out, value));

					HashBytes(text, strlen(text), SEED_LO ^ NULL_HASH_HI,
							  SEED_HI ^ NULL_HASH_LO, lo, hi);
					return;
				}
				break;
			}
		case HASH_ARRAY:
			{
				ArrayType  *array = DatumGetArrayTypeP(value);
				int			ndim = ARR_NDIM(array);
				int32		shape[1 + 2 * MAXDIM];
				uint64		shape_lo;
				uint64		shape_hi;

				/* equal arrays have equal dimensions and lower bounds */
				shape[0] = ndim;
				for (int d = 0; d < ndim; d++)
				{
					shape[1 + d] = ARR_DIMS(array)[d];
					shape[1 + ndim + d] = ARR_LBOUND(array)[d];
				}
				HashBytes(shape, sizeof(int32) * (1 + 2 * ndim), SEED_LO, SEED_HI,
						  &shape_lo, &shape_hi);
				*lo = FoldColumn(DatumGetUInt64(FunctionCall2Coll(&column->hash_extended,
																  column->collation, value,
																  UInt64GetDatum(SEED_LO))),
								 shape_lo);
				*hi = FoldColumn(DatumGetUInt64(FunctionCall2Coll(&column->hash_extended,
																  column->collation, value,
																  UInt64GetDatum(SEED_HI))),
								 shape_hi);
				return;
			}
		case HASH_VIA_FMGR:
			break;
	}
	*lo = DatumGetUInt64(FunctionCall2Coll(&column->hash_extended, column->collation,
										   value, UInt64GetDatum(SEED_LO)));
	*hi = DatumGetUInt64(FunctionCall2Coll(&column->hash_extended, column->collation,
										   value, UInt64GetDatum(SEED_HI)));
}

/* Compute the fingerprint of ncolumns values (NULL hashing to a constant) */
void
QidFingerprintValues(QidHasher *hasher, const NullableDatum *values,
					 QidFingerprint *fp)
{
	uint64		lo = SEED_LO;
	uint64		hi = SEED_HI;

	if (hasher->all_int4)
	{
		/* HashColumn's HASH_AS_INT4 case, without its dispatch per column */
		for (int i = 0; i < hasher->ncolumns; i++)
		{
			uint64		v = (uint64) (uint32) DatumGetInt32(values[i].value);

			lo = FoldColumn(lo, values[i].isnull ? NULL_HASH_LO : v);
			hi = FoldColumn(hi, values[i].isnull ? NULL_HASH_HI : v);
		}
		fp->lo = lo;
		fp->hi = hi;
		return;
	}
	for (int i = 0; i < hasher->ncolumns; i++)
	{
		uint64		column_lo;
		uint64		column_hi;

		if (values[i].isnull)
		{
			column_lo = NULL_HASH_LO;
			column_hi = NULL_HASH_HI;
		}
		else
			HashColumn(&hasher->columns[i], values[i].value, &column_lo, &column_hi);
		lo = FoldColumn(lo, column_lo);
		hi = FoldColumn(hi, column_hi);
	}
	fp->lo = lo;
	fp->hi = hi;
}

/*
 * Whether the current row's QID is one int4 or date value, not NULL (then
 * set value): such a value's fingerprint is QidFingerprintScalar's
 */
bool
QidScalarArgument(const QidHasher *hasher, FunctionCallInfo fcinfo, Datum *value)
{
	if (hasher->ncolumns != 1 || hasher->columns[0].hashing != HASH_AS_INT4 ||
		fcinfo->args[hasher->firstarg].isnull)
		return false;
	*value = fcinfo->args[hasher->firstarg].value;
	return true;
}

/* The fingerprint of a one-column QID's int4 or date value (QidScalarArgument) */
void
QidFingerprintScalar(Datum value, QidFingerprint *fp)
{
	QidColumn	column = {0};
	uint64		column_lo;
	uint64		column_hi;

	column.hashing = HASH_AS_INT4;
	HashColumn(&column, value, &column_lo, &column_hi);
	fp->lo = FoldColumn(SEED_LO, column_lo);
	fp->hi = FoldColumn(SEED_HI, column_hi);
}

/* Compute the fingerprint of the current row's QID arguments */
void
QidFingerprintRow(QidHasher *hasher, FunctionCallInfo fcinfo, QidFingerprint *fp)
{
	QidFingerprintValues(hasher, &fcinfo->args[hasher->firstarg], fp);
}
