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

#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "nodes/primnodes.h"
#include "common/hashfn.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "qidrisk.h"

/* Seeds of the two independent 64-bit halves */
#define SEED_LO UINT64CONST(0x6a09e667f3bcc908)
#define SEED_HI UINT64CONST(0xbb67ae8584caa73b)

/* Stand-ins for NULL, one per half */
#define NULL_HASH_LO UINT64CONST(0x3c6ef372fe94f82b)
#define NULL_HASH_HI UINT64CONST(0xa54ff53a5f1d36f1)

/*
 * How a column is hashed.  Two common hash functions are called directly,
 * skipping the function-call machinery (and, for text, a collation lookup per
 * row); the result is the same as through fmgr because it is the same code.
 */
typedef enum ColumnHashing
{
	HASH_VIA_FMGR,				/* the type's extended hash function */
	HASH_AS_INT4,				/* hashint4extended: int4, date */
	HASH_AS_BYTES				/* hashtextextended under a deterministic collation */
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
	QidColumn	columns[FLEXIBLE_ARRAY_MEMBER];
};

/* Mix 64 bits thoroughly (the finalizer of MurmurHash3) */
static inline uint64
Mix64(uint64 h)
{
	h ^= h >> 33;
	h *= UINT64CONST(0xff51afd7ed558ccd);
	h ^= h >> 33;
	h *= UINT64CONST(0xc4ceb9fe1a85ec53);
	h ^= h >> 33;
	return h;
}

/* Fold one column's hash into a running, order-sensitive fingerprint half */
static inline uint64
FoldColumn(uint64 running, uint64 column_hash)
{
	return Mix64((running * UINT64CONST(0x9e3779b97f4a7c15)) ^ column_hash);
}

/*
 * Find the collation of argument argno (1-based, argument 0 of a transition
 * function being its state) as written in the aggregate call.
 */
static Oid
ArgumentCollation(FunctionCallInfo fcinfo, int argno, Oid typid)
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

	/* window aggregates expose only the call's common input collation */
	if (OidIsValid(PG_GET_COLLATION()))
		return PG_GET_COLLATION();
	return DEFAULT_COLLATION_OID;
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

	for (int i = 0; i < ncolumns; i++)
	{
		QidColumn  *column = &hasher->columns[i];
		int			argno = firstarg + i;
		TypeCacheEntry *typentry;

		column->typid = get_fn_expr_argtype(fcinfo->flinfo, argno);
		if (!OidIsValid(column->typid))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s could not determine the data type of argument %d",
							funcname, argno)));
		if (column->typid == UNKNOWNOID)
			ereport(ERROR,
					(errcode(ERRCODE_INDETERMINATE_DATATYPE),
					 errmsg("could not determine data type of argument %d of %s",
							argno, funcname),
					 errhint("Add an explicit cast, for example '...'::text.")));

		typentry = lookup_type_cache(column->typid,
									 TYPECACHE_HASH_EXTENDED_PROC_FINFO);
		if (!OidIsValid(typentry->hash_extended_proc_finfo.fn_oid))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("could not identify an extended hash function for type %s",
							format_type_be(column->typid)),
					 errdetail("Argument %d of %s must be of a type with a hash operator class.",
							   argno, funcname),
					 errhint("Cast the column to a hashable type such as text.")));
		fmgr_info_copy(&column->hash_extended, &typentry->hash_extended_proc_finfo,
					   fcinfo->flinfo->fn_mcxt);
		column->collation = ArgumentCollation(fcinfo, argno, column->typid);
		column->hashing = HASH_VIA_FMGR;
		if (typentry->hash_extended_proc == F_HASHINT4EXTENDED)
			column->hashing = HASH_AS_INT4;
		else if (typentry->hash_extended_proc == F_HASHTEXTEXTENDED &&
				 OidIsValid(column->collation) &&
				 get_collation_isdeterministic(column->collation))
			column->hashing = HASH_AS_BYTES;
	}

	fcinfo->flinfo->fn_extra = hasher;
	return hasher;
}

/* Compute the fingerprint of the current row's QID arguments */
void
QidFingerprintRow(QidHasher *hasher, FunctionCallInfo fcinfo, QidFingerprint *fp)
{
	uint64		lo = SEED_LO;
	uint64		hi = SEED_HI;

	for (int i = 0; i < hasher->ncolumns; i++)
	{
		QidColumn  *column = &hasher->columns[i];
		int			argno = hasher->firstarg + i;
		uint64		column_lo;
		uint64		column_hi;

		if (PG_ARGISNULL(argno))
		{
			column_lo = NULL_HASH_LO;
			column_hi = NULL_HASH_HI;
		}
		else if (column->hashing == HASH_AS_INT4)
		{
			uint32		value = (uint32) PG_GETARG_INT32(argno);

			column_lo = hash_bytes_uint32_extended(value, SEED_LO);
			column_hi = hash_bytes_uint32_extended(value, SEED_HI);
		}
		else if (column->hashing == HASH_AS_BYTES)
		{
			text	   *value = PG_GETARG_TEXT_PP(argno);
			const unsigned char *bytes = (const unsigned char *) VARDATA_ANY(value);
			int			length = VARSIZE_ANY_EXHDR(value);

			column_lo = hash_bytes_extended(bytes, length, SEED_LO);
			column_hi = hash_bytes_extended(bytes, length, SEED_HI);
		}
		else
		{
			Datum		value = PG_GETARG_DATUM(argno);

			column_lo = DatumGetUInt64(FunctionCall2Coll(&column->hash_extended,
														 column->collation, value,
														 UInt64GetDatum(SEED_LO)));
			column_hi = DatumGetUInt64(FunctionCall2Coll(&column->hash_extended,
														 column->collation, value,
														 UInt64GetDatum(SEED_HI)));
		}
		lo = FoldColumn(lo, column_lo);
		hi = FoldColumn(hi, column_hi);
	}
	fp->lo = lo;
	fp->hi = hi;
}
