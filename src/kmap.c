/*
 * kmap.c
 *	  k-map: how many rows of a reidentification (population) table share each
 *	  quasi-identifier class of a released table.
 *
 * The release's classes are built in memory, keyed by the 128-bit QID
 * fingerprint of fingerprint.c, then the population is scanned once and each
 * of its rows that falls in a class adds 1 (or its weight) to it; the
 * population is never grouped.  Both scans run through SPI with the caller's
 * rights (privileges and row-level security hold on both tables) under one
 * snapshot.  The release's rows reach a DestReceiver without being copied;
 * the population is read by the aggregate qidrisk_kmap_probe, so that the
 * planner can split that scan over parallel workers.  A table Citus
 * distributes over shards is read grouped instead (the grouped scans below).
 *
 * Both sides are hashed by one plan built from the release's column types and
 * collations; the population's columns must be of the same types (or binary
 * coercible both ways, as text and varchar) under collations that decide
 * equality the same way, so equal values have equal fingerprints on both
 * sides.  NULL matches NULL, as in GROUP BY.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_collation.h"
#include "common/hashfn.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/params.h"
#include "parser/parse_coerce.h"
#include "port/pg_bitutils.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"
#include "utils/uuid.h"

#include "aggcommon.h"
#include "boundary.h"
#include "fingerprint.h"
#include "hashkey.h"
#include "qidkey.h"
#include "qidrisk.h"
#include "relreader.h"
#include "settings.h"

PG_FUNCTION_INFO_V1(qidrisk_kmap_count);
PG_FUNCTION_INFO_V1(qidrisk_kmap_row_counts);

/* As many QID columns as jsonb_build_object could take (a key and a value each) */
#define KMAP_MAX_COLUMNS (FUNC_MAX_ARGS / 2)

/* How often the scans check for cancellation */
#define KMAP_INTERRUPT_MASK 0xFFFF

/* One class of the release: its size, its population count and its values */
typedef struct KmapClass
{
	QidFingerprint key;
	char		status;
	int64		release_rows;
	double		population;		/* matching population rows, or their weights */
	NullableDatum *values;		/* the QID values of the class's first row */
	Datum		jsonb;			/* the class as jsonb, once built */
} KmapClass;

#define SH_PREFIX kmaphash
#define SH_ELEMENT_TYPE KmapClass
#define SH_KEY_TYPE QidFingerprint
#define SH_KEY key
/* buckets by a random key (private_data): chosen values cannot share one */
#define SH_HASH_KEY(tb, k) QidPlacementHash(&(k), (const QidPlacementKey *) (tb)->private_data)
#define SH_EQUAL(tb, a, b) ((a).lo == (b).lo && (a).hi == (b).hi)
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/*
 * How a QID column's value becomes a jsonb value, as to_jsonb (and so
 * jsonb_build_object) converts it: the common types directly, any other
 * through to_jsonb itself.
 */
typedef enum ValueJsonKind
{
	VALUE_JSON_TO_JSONB,		/* call to_jsonb */
	VALUE_JSON_STRING,			/* text, varchar: the string itself */
	VALUE_JSON_INT4,			/* int2, int4: as numeric */
	VALUE_JSON_INT8,
	VALUE_JSON_NUMERIC,			/* finite numeric as is; NaN, infinities via to_jsonb */
	VALUE_JSON_BOOL
} ValueJsonKind;

typedef struct ValueJson
{
	ValueJsonKind kind;
	FmgrInfo	to_jsonb;		/* to_jsonb for this column's type */
} ValueJson;

typedef struct KmapState
{
	const char *funcname;
	int			ncolumns;
	char	  **names;			/* the release's QID column names */
	Oid		   *types;			/* the release's column types */
	Oid		   *collations;
	int16	   *typlens;
	bool	   *typbyvals;
	QidHasher  *hasher;
	kmaphash_hash *classes;
	MemoryContext context;		/* the table, the values, the jsonb */
	Size		budget;
	double		memory;			/* bytes the classes occupy */
	int64		scanned;		/* rows seen by the current scan */
	JsonbValue *keys;			/* the column names, as jsonb strings */
	ValueJson  *json;			/* how each column becomes a jsonb value */
	MemoryContext scratch;		/* one class's jsonb under construction */
	Tuplestorestate *output;	/* kmap_row_counts writes its rows here */
	TupleDesc	output_desc;
	bool		keep_jsonb;		/* build each class's jsonb once and keep it */
	QidRelation *release;		/* the release, locked, its QID columns resolved */
	bool		fresh_snapshot; /* scans use a snapshot pushed after the locks */
	bool		release_grouped;	/* release rows come as (values..., count) */
	bool		weighted;		/* the grouped population scan sums a weight */
	bool		bad_weight;		/* a grouped class holds a bad weight */
} KmapState;

/* Population rows fingerprinted before their buckets are probed */
#define PROBE_BATCH 32

/*
 * The release's fingerprints laid out for the population scan: open
 * addressing with linear probing over 16-byte keys (no status byte: the
 * all-zero key marks an empty bucket), the matched sums in a parallel array
 * touched only on a hit, and a batch of fingerprints whose buckets are
 * prefetched while the previous ones are compared.  The population is
 * scanned by the aggregate qidrisk_kmap_probe, so PostgreSQL may split the
 * scan over parallel workers: every worker lays the same keys out the same
 * way, and partial states add their sums bucket by bucket.  A fingerprint's
 * first bucket comes from a placement key that kmap_count draws at random
 * and passes ahead of the fingerprints: placed by the fingerprint's own bits,
 * chosen values (an int8 column's fingerprint can be inverted) fell into one
 * run of buckets, and laying them out and probing them took quadratic time.
 */
typedef struct KmapProbe
{
	QidPlacementKey placement;	/* the keys argument's first 16 bytes */
	QidFingerprint *keys;		/* NULL in a deserialized state: sums only */
	double	   *sums;
	uint64		digest;			/* of the keys argument: states of other keys differ */
	const void *given;			/* the first row's keys argument, as passed */
	bytea	   *given_copy;		/* and a copy, to compare other rows' with */
	uint64		mask;
	double		bytes;
	int			nbatch;
	QidFingerprint batch[PROBE_BATCH];
	uint64		homes[PROBE_BATCH]; /* the batch's first buckets */
	double		weights[PROBE_BATCH];
} KmapProbe;

/* What a scan does with each row */
typedef void (*KmapRowFn) (KmapState *state, TupleTableSlot *slot);

typedef struct KmapReceiver
{
	DestReceiver pub;
	KmapState  *state;
	KmapRowFn	row;
} KmapReceiver;

static int64 ReleaseGroupRows(KmapState *state, TupleTableSlot *slot);
static bool KmapGrouped(Oid relid);
static char *ReleaseGroupedQuery(KmapState *state, const char *release_name,
								 const char *weight_name);
static void CountPopulationGrouped(KmapState *state, const char *population_name,
								   char **population_names, const char *weight_name,
								   bool filtered);

/* Stop with an error naming the setting that bounds the classes' memory */
static void
ReportKmapBudget(const char *funcname, int64 classes, double bytes, Size budget)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("%s: the release's classes exceed qidrisk.max_state_memory",
					funcname),
			 errdetail("The release has at least " INT64_FORMAT " classes, which would "
					   "take %.0f kB; the budget is %zu kB.",
					   classes, ceil(bytes / 1024.0), budget / 1024),
			 errhint("Raise qidrisk.max_state_memory (or work_mem when it is -1).")));
}

/* The same, for the release's class table */
static void
KmapBudgetExceeded(KmapState *state, double bytes)
{
	ReportKmapBudget(state->funcname, (int64) state->classes->members, bytes, state->budget);
}

/* Read a text[] argument into C strings; NULL elements and empty arrays are errors */
static char **
TextArrayToNames(ArrayType *array, const char *what, int *count)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	char	  **names;

	if (ARR_NDIM(array) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s must be a one-dimensional array", what)));
	deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must name at least one column", what)));
	if (n > KMAP_MAX_COLUMNS)
		ereport(ERROR,
				(errcode(ERRCODE_TOO_MANY_COLUMNS),
				 errmsg("%s names %d columns; at most %d are supported",
						what, n, KMAP_MAX_COLUMNS)));
	names = palloc(sizeof(char *) * n);
	for (int i = 0; i < n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not contain NULL", what)));
		names[i] = TextDatumGetCString(elems[i]);
		for (int j = 0; j < i; j++)
			if (strcmp(names[i], names[j]) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("column \"%s\" appears twice in %s", names[i], what)));
	}
	*count = n;
	return names;
}

/*
 * Check that a population column can be matched with the release column:
 * same base type (or binary coercible both ways) and a collation that decides
 * equality the same way.
 */
static void
CheckComparable(const char *release_name, Oid release_type, Oid release_collation,
				const char *population_name, Oid population_type,
				Oid population_collation)
{
	Oid			rbase = getBaseType(release_type);
	Oid			pbase = getBaseType(population_type);

	if (rbase != pbase &&
		!(IsBinaryCoercible(rbase, pbase) && IsBinaryCoercible(pbase, rbase)))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of the population is of type %s, but release column \"%s\" is of type %s",
						population_name, format_type_be(population_type),
						release_name, format_type_be(release_type)),
				 errdetail("Values are matched under their type's equality, so both sides need one type."),
				 errhint("Cast one side in a view, for example SELECT %s::%s AS %s ....",
						 quote_identifier(population_name), format_type_be(release_type),
						 quote_identifier(population_name))));
	if (release_collation != population_collation &&
		OidIsValid(release_collation) && OidIsValid(population_collation) &&
		(!get_collation_isdeterministic(release_collation) ||
		 !get_collation_isdeterministic(population_collation)))
		ereport(ERROR,
				(errcode(ERRCODE_COLLATION_MISMATCH),
				 errmsg("release column \"%s\" and population column \"%s\" have collations that compare differently",
						release_name, population_name),
				 errdetail("Collations \"%s\" and \"%s\" differ and one is non-deterministic.",
						   get_collation_name(release_collation),
						   get_collation_name(population_collation)),
				 errhint("Give both sides one collation with COLLATE in a view.")));
}

/* Whether two lists of n column names are the same list */
static bool
SameColumns(char **a, char **b, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return true;
}

/* Append the quoted column list to a query */
static void
AppendColumns(StringInfo query, char **names, int n)
{
	for (int i = 0; i < n; i++)
	{
		if (i > 0)
			appendStringInfoString(query, ", ");
		appendStringInfoString(query, quote_identifier(names[i]));
	}
}

/* Check that the scan returns the QID columns as they were resolved */
static void
KmapStartup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	KmapState  *state = ((KmapReceiver *) self)->state;

	(void) operation;
	QidRelationCheckResult(state->release, typeinfo, 0, state->ncolumns, state->funcname);
}

/* Hand one row of a scan to the scan's row function */
static bool
KmapReceiveSlot(TupleTableSlot *slot, DestReceiver *self)
{
	KmapReceiver *receiver = (KmapReceiver *) self;

	if ((++receiver->state->scanned & KMAP_INTERRUPT_MASK) == 0)
		CHECK_FOR_INTERRUPTS();
	receiver->row(receiver->state, slot);
	return true;
}

/*
 * Run one query as the caller, under the outer snapshot, feeding rows to fn;
 * startup checks the result's shape, params (or NULL) are the query's $n
 */
static void
KmapScanWith(KmapState *state, const char *query, KmapRowFn fn,
			 void (*startup) (DestReceiver *self, int operation, TupleDesc typeinfo),
			 ParamListInfo params)
{
	KmapReceiver receiver;
	SPIExecuteOptions options;
	int			rc;

	QidReceiverInit(&receiver.pub, KmapReceiveSlot, startup);
	receiver.state = state;
	receiver.row = fn;

	memset(&options, 0, sizeof(options));
	options.read_only = true;
	options.dest = &receiver.pub;
	options.params = params;
	state->scanned = 0;
	rc = SPI_execute_extended(query, &options);
	/* a SELECT into a receiver of type DestNone reports SPI_OK_UTILITY */
	if (rc != SPI_OK_SELECT && rc != SPI_OK_UTILITY)
		elog(ERROR, "%s: SPI_execute_extended returned %s", state->funcname,
			 SPI_result_code_string(rc));
}

static void
KmapScan(KmapState *state, const char *query, KmapRowFn fn)
{
	KmapScanWith(state, query, fn, KmapStartup, NULL);
}

/* Read the QID columns of a slot and fingerprint them */
static inline void
SlotFingerprint(KmapState *state, TupleTableSlot *slot, NullableDatum *values,
				QidFingerprint *fp)
{
	slot_getsomeattrs(slot, state->ncolumns);
	for (int i = 0; i < state->ncolumns; i++)
	{
		values[i].value = slot->tts_values[i];
		values[i].isnull = slot->tts_isnull[i];
	}
	QidFingerprintValues(state->hasher, values, fp);
}

/* Copy a new class's values into the state's context, within the budget */
static NullableDatum *
CopyClassValues(KmapState *state, const NullableDatum *values)
{
	NullableDatum *copy;
	MemoryContext old;
	double		bytes = sizeof(NullableDatum) * state->ncolumns;

	for (int i = 0; i < state->ncolumns; i++)
		if (!values[i].isnull && !state->typbyvals[i])
			bytes += datumGetSize(values[i].value, false, state->typlens[i]);
	if (state->memory + bytes > (double) state->budget)
		KmapBudgetExceeded(state, state->memory + bytes);
	state->memory += bytes;

	/* the scan's memory goes away with it; the classes live on */
	old = MemoryContextSwitchTo(state->context);
	copy = palloc(sizeof(NullableDatum) * state->ncolumns);
	for (int i = 0; i < state->ncolumns; i++)
	{
		copy[i].isnull = values[i].isnull;
		copy[i].value = values[i].isnull ? (Datum) 0 :
			datumCopy(values[i].value, state->typbyvals[i], state->typlens[i]);
	}
	MemoryContextSwitchTo(old);
	return copy;
}

/* The release class of a row, created if new */
static KmapClass *
ReleaseClass(KmapState *state, TupleTableSlot *slot)
{
	NullableDatum values[KMAP_MAX_COLUMNS];
	QidFingerprint fp;
	KmapClass  *entry;
	bool		found;
	uint64		size_before = state->classes->size;

	SlotFingerprint(state, slot, values, &fp);

	/* the table doubles at its fill threshold: check the budget first */
	if (unlikely(state->classes->members + 1 >= state->classes->grow_threshold))
	{
		double		next = state->memory + (double) size_before * sizeof(KmapClass);

		if (next > (double) state->budget)
			KmapBudgetExceeded(state, next);
	}
	entry = kmaphash_insert(state->classes, fp, &found);
	if (unlikely(state->classes->size != size_before))
	{
		state->memory += (double) (state->classes->size - size_before) * sizeof(KmapClass);
		if (state->memory > (double) state->budget)
			KmapBudgetExceeded(state, state->memory);
	}
	if (!found)
	{
		entry->release_rows = 0;
		entry->population = 0;
		entry->jsonb = (Datum) 0;
		entry->values = NULL;
		entry->values = CopyClassValues(state, values);
	}
	return entry;
}

/* Count one release row into its class */
static void
ReleaseRow(KmapState *state, TupleTableSlot *slot)
{
	KmapClass  *entry = ReleaseClass(state, slot);

	entry->release_rows += state->release_grouped ? ReleaseGroupRows(state, slot) : 1;
}

/* Keep the all-zero fingerprint free to mark empty buckets (both sides alike) */
static inline void
ProbeKey(QidFingerprint *fp)
{
	if (unlikely(fp->lo == 0 && fp->hi == 0))
		fp->hi = 1;
}

/* The first bucket fp may occupy */
static inline uint64
ProbeHome(const KmapProbe *probe, const QidFingerprint *fp)
{
	return QidPlacementHash(fp, &probe->placement) & probe->mask;
}

/* Find the bucket of fp from its first one: its own, or the empty one where it would go */
static inline uint64
ProbeBucket(const KmapProbe *probe, const QidFingerprint *fp, uint64 i)
{
	while ((probe->keys[i].lo | probe->keys[i].hi) != 0 &&
		   (probe->keys[i].lo != fp->lo || probe->keys[i].hi != fp->hi))
		i = (i + 1) & probe->mask;
	return i;
}

/* Allocate the buckets of a probe table of size buckets, within the budget */
static KmapProbe *
ProbeAllocate(MemoryContext context, uint64 size, bool with_keys, int64 classes)
{
	KmapProbe  *probe = MemoryContextAllocZero(context, sizeof(KmapProbe));
	Size		budget = QidStateMemoryBudget();

	probe->bytes = (double) size * ((with_keys ? sizeof(QidFingerprint) : 0) + sizeof(double));
	if (probe->bytes > (double) budget)
		ReportKmapBudget("kmap_count", classes, probe->bytes, budget);
	probe->mask = size - 1;
	if (with_keys)
		probe->keys = MemoryContextAllocExtended(context, size * sizeof(QidFingerprint),
												 MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	probe->sums = MemoryContextAllocExtended(context, size * sizeof(double),
											 MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	return probe;
}

/*
 * Lay out a probe table from a keys argument's bytes (unaligned): the
 * placement key, then the release's fingerprints
 */
static KmapProbe *
ProbeCreate(MemoryContext context, const char *bytes, Size length)
{
	int64		nkeys;
	uint64		size;
	KmapProbe  *probe;

	if (length < sizeof(QidPlacementKey) || length % sizeof(QidFingerprint) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("qidrisk_kmap_probe: keys must be a 16-byte placement key and whole 16-byte fingerprints")));
	nkeys = (int64) (length / sizeof(QidFingerprint)) - 1;
	size = pg_nextpower2_64(Max((uint64) nkeys * 3 / 2 + 1, 64));
	probe = ProbeAllocate(context, size, true, nkeys);
	memcpy(&probe->placement, bytes, sizeof(QidPlacementKey));
	bytes += sizeof(QidPlacementKey);
	for (int64 k = 0; k < nkeys; k++)
	{
		QidFingerprint fp;

		if ((k & KMAP_INTERRUPT_MASK) == 0)
			CHECK_FOR_INTERRUPTS();

		memcpy(&fp, bytes + k * sizeof(QidFingerprint), sizeof(QidFingerprint));
		ProbeKey(&fp);
		probe->keys[ProbeBucket(probe, &fp, ProbeHome(probe, &fp))] = fp;
	}
	return probe;
}

/* Add the batched population rows to the classes they match */
static void
ProbeFlush(KmapProbe *probe)
{
	for (int j = 0; j < probe->nbatch; j++)
	{
		uint64		i = ProbeBucket(probe, &probe->batch[j], probe->homes[j]);

		if ((probe->keys[i].lo | probe->keys[i].hi) != 0)
			probe->sums[i] += probe->weights[j];
	}
	probe->nbatch = 0;
}

/* Probe a state's pending rows, if it has any */
static KmapProbe *
ProbeSettled(KmapProbe *probe)
{
	if (probe->keys != NULL)
		ProbeFlush(probe);
	return probe;
}

/* A digest of a keys argument, so that combined states can be checked to match */
static uint64
ProbeDigest(bytea *keys)
{
	return hash_bytes_extended((const unsigned char *) VARDATA_ANY(keys),
							   VARSIZE_ANY_EXHDR(keys), UINT64CONST(0x716964726973));
}

/* Raise 22023 unless this row's keys are the first row's */
static void
ProbeCheckKeys(KmapProbe *probe, FunctionCallInfo fcinfo)
{
	bytea	   *keys = PG_ARGISNULL(1) ? NULL : PG_GETARG_BYTEA_PP(1);

	if (keys == NULL ||
		VARSIZE_ANY_EXHDR(keys) != VARSIZE_ANY_EXHDR(probe->given_copy) ||
		memcmp(VARDATA_ANY(keys), VARDATA_ANY(probe->given_copy), VARSIZE_ANY_EXHDR(keys)) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("qidrisk_kmap_probe: keys must be the same in every row"),
				 errdetail("The keys are the fingerprints of the release's classes; kmap_count passes them once for the whole scan."),
				 errhint("qidrisk_kmap_probe is internal to kmap_count; call kmap_count instead.")));
}

/* Raise 22023: two partial states were laid out for different keys */
static void
ProbeMismatch(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("qidrisk_kmap_probe: partial states of different keys cannot be combined"),
			 errhint("qidrisk_kmap_probe is internal to kmap_count; call kmap_count instead.")));
}

PG_FUNCTION_INFO_V1(qidrisk_kmap_probe_transfn);
PG_FUNCTION_INFO_V1(qidrisk_kmap_probe_combine);
PG_FUNCTION_INFO_V1(qidrisk_kmap_probe_serialize);
PG_FUNCTION_INFO_V1(qidrisk_kmap_probe_deserialize);
PG_FUNCTION_INFO_V1(qidrisk_kmap_probe_final);

/*
 * qidrisk_kmap_probe(keys bytea, weight float8, VARIADIC qid): add each row's
 * weight to the release class (one of keys) its QID falls in.
 */
Datum
qidrisk_kmap_probe_transfn(PG_FUNCTION_ARGS)
{
	KmapProbe  *probe;
	QidHasher  *hasher;
	QidFingerprint *fp;
	double		weight;

	if (PG_ARGISNULL(0))
	{
		MemoryContext aggcontext = AggregateContext(fcinfo);
		bytea	   *keys;

		if (PG_ARGISNULL(1))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("qidrisk_kmap_probe: keys must not be NULL")));
		keys = PG_GETARG_BYTEA_PP(1);
		probe = ProbeCreate(aggcontext, VARDATA_ANY(keys), VARSIZE_ANY_EXHDR(keys));
		probe->digest = ProbeDigest(keys);
		probe->given = DatumGetPointer(PG_GETARG_DATUM(1));
		probe->given_copy = MemoryContextAllocExtended(aggcontext, VARSIZE_ANY(keys),
													   MCXT_ALLOC_HUGE);
		memcpy(probe->given_copy, keys, VARSIZE_ANY(keys));
	}
	else
	{
		probe = (KmapProbe *) PG_GETARG_POINTER(0);
		/* the same Datum row after row is the usual case, and cheap to check */
		if (PG_ARGISNULL(1) || DatumGetPointer(PG_GETARG_DATUM(1)) != probe->given)
			ProbeCheckKeys(probe, fcinfo);
	}

	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("kmap_count: population weight must not be NULL")));
	weight = PG_GETARG_FLOAT8(2);
	if (!(weight >= 0.0) || isinf(weight))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("kmap_count: population weight must be a finite number at least 0, not %g",
						weight)));

	hasher = QidHasherGet(fcinfo, 3, -1, "kmap_count");
	fp = &probe->batch[probe->nbatch];
	QidFingerprintRow(hasher, fcinfo, fp);
	ProbeKey(fp);
	probe->homes[probe->nbatch] = ProbeHome(probe, fp);
#ifdef __GNUC__
	__builtin_prefetch(&probe->keys[probe->homes[probe->nbatch]]);
#endif
	probe->weights[probe->nbatch] = weight;
	if (++probe->nbatch == PROBE_BATCH)
		ProbeFlush(probe);
	PG_RETURN_POINTER(probe);
}

/* Add two partial states' sums (laid out alike), into the aggregate context */
Datum
qidrisk_kmap_probe_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext = AggregateContext(fcinfo);
	KmapProbe  *into = PG_ARGISNULL(0) ? NULL : ProbeSettled((KmapProbe *) PG_GETARG_POINTER(0));
	KmapProbe  *from = PG_ARGISNULL(1) ? NULL : ProbeSettled((KmapProbe *) PG_GETARG_POINTER(1));

	if (from == NULL)
	{
		if (into == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(into);
	}
	if (into == NULL)
	{
		into = ProbeAllocate(aggcontext, from->mask + 1, false, 0);
		into->digest = from->digest;
		memcpy(into->sums, from->sums, (from->mask + 1) * sizeof(double));
		PG_RETURN_POINTER(into);
	}
	if (into->mask != from->mask || into->digest != from->digest)
		ProbeMismatch();
	for (uint64 i = 0; i <= into->mask; i++)
		into->sums[i] += from->sums[i];
	PG_RETURN_POINTER(into);
}

/* The sums as bytes: a format version and the keys' digest, then one float8 per bucket */
static bytea *
ProbeSums(KmapProbe *probe, bool with_version)
{
	Size		length = (probe->mask + 1) * sizeof(double) +
		(with_version ? 1 + sizeof(uint64) : 0);
	bytea	   *result = palloc(VARHDRSZ + length);
	char	   *out = VARDATA(result);

	SET_VARSIZE(result, VARHDRSZ + length);
	if (with_version)
	{
		*out++ = QIDRISK_STATE_FORMAT_VERSION;
		memcpy(out, &probe->digest, sizeof(uint64));
		out += sizeof(uint64);
	}
	memcpy(out, probe->sums, (probe->mask + 1) * sizeof(double));
	return result;
}

Datum
qidrisk_kmap_probe_serialize(PG_FUNCTION_ARGS)
{
	(void) AggregateContext(fcinfo);
	PG_RETURN_BYTEA_P(ProbeSums(ProbeSettled((KmapProbe *) PG_GETARG_POINTER(0)), true));
}

Datum
qidrisk_kmap_probe_deserialize(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext = AggregateContext(fcinfo);
	bytea	   *bytes = PG_GETARG_BYTEA_PP(0);
	const char *in = VARDATA_ANY(bytes);
	Size		length = VARSIZE_ANY_EXHDR(bytes);
	Size		header = 1 + sizeof(uint64);
	uint64		size = length > header ? (length - header) / sizeof(double) : 0;
	KmapProbe  *probe;

	if (length < header + sizeof(double) || in[0] != QIDRISK_STATE_FORMAT_VERSION ||
		(length - header) % sizeof(double) != 0 || (size & (size - 1)) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("invalid qidrisk k-map probe state")));
	probe = ProbeAllocate(aggcontext, size, false, 0);
	memcpy(&probe->digest, in + 1, sizeof(uint64));
	memcpy(probe->sums, in + header, size * sizeof(double));
	PG_RETURN_POINTER(probe);
}

/* The final sums, one float8 per bucket of the layout of the keys */
Datum
qidrisk_kmap_probe_final(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	PG_RETURN_BYTEA_P(ProbeSums(ProbeSettled((KmapProbe *) PG_GETARG_POINTER(0)), false));
}

/*
 * Count the population into the release's classes: hand the classes'
 * fingerprints to qidrisk_kmap_probe over the population, lay them out the
 * same way here, and read each class's sum from its bucket.
 */
static void
ProbePopulation(KmapState *state, const char *population_name, char **population_names,
				const char *weight_name)
{
	int64		nkeys = (int64) state->classes->members;
	Size		keys_length;
	QidPlacementKey placement = QidPlacementKeyCreate();
	bytea	   *keys;
	char	   *out;
	KmapProbe  *probe;
	kmaphash_iterator it;
	KmapClass  *entry;
	StringInfoData query;
	Oid			argtypes[1] = {BYTEAOID};
	Datum		args[1];
	int			rc;

	/* the keys go to the scan as one bytea parameter, which holds at most 1 GB */
	if (nkeys >= (int64) ((MaxAllocSize - VARHDRSZ) / sizeof(QidFingerprint)))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s: the release has " INT64_FORMAT " classes; at most " INT64_FORMAT " are supported",
						state->funcname, nkeys,
						(int64) ((MaxAllocSize - VARHDRSZ) / sizeof(QidFingerprint)) - 1),
				 errhint("Compare a coarser release, or the release in parts (WHERE on a QID column in a view).")));
	keys_length = (nkeys + 1) * sizeof(QidFingerprint);
	state->memory += keys_length;
	if (state->memory > (double) state->budget)
		KmapBudgetExceeded(state, state->memory);
	keys = MemoryContextAllocExtended(state->context, VARHDRSZ + keys_length, MCXT_ALLOC_HUGE);
	SET_VARSIZE(keys, VARHDRSZ + keys_length);
	out = VARDATA(keys);
	memcpy(out, &placement, sizeof(QidPlacementKey));
	out += sizeof(QidPlacementKey);
	kmaphash_start_iterate(state->classes, &it);
	while ((entry = kmaphash_iterate(state->classes, &it)) != NULL)
	{
		memcpy(out, &entry->key, sizeof(QidFingerprint));
		out += sizeof(QidFingerprint);
	}
	probe = ProbeCreate(state->context, VARDATA(keys), keys_length);
	if (state->memory + probe->bytes > (double) state->budget)
		KmapBudgetExceeded(state, state->memory + probe->bytes);

	initStringInfo(&query);
	appendStringInfoString(&query, "SELECT " QIDRISK_INTERNAL ".qidrisk_kmap_probe($1, ");
	if (weight_name != NULL)
		appendStringInfo(&query, "%s::pg_catalog.float8, ", quote_identifier(weight_name));
	else
		appendStringInfoString(&query, "1::pg_catalog.float8, ");
	AppendColumns(&query, population_names, state->ncolumns);
	appendStringInfo(&query, ") FROM %s", population_name);
	args[0] = PointerGetDatum(keys);
	rc = SPI_execute_with_args(query.data, 1, argtypes, args, NULL, true, 0);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "kmap_count: the population scan returned %s", SPI_result_code_string(rc));
	{
		bool		isnull;
		Datum		sums = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		/* no population rows: every class counts 0 */
		if (!isnull)
		{
			bytea	   *b = DatumGetByteaPP(sums);

			if (VARSIZE_ANY_EXHDR(b) != (probe->mask + 1) * sizeof(double))
				elog(ERROR, "kmap_count: the population scan returned a sum table of another size");
			memcpy(probe->sums, VARDATA_ANY(b), (probe->mask + 1) * sizeof(double));
		}
	}
	kmaphash_start_iterate(state->classes, &it);
	while ((entry = kmaphash_iterate(state->classes, &it)) != NULL)
	{
		QidFingerprint fp = entry->key;

		if ((++state->scanned & KMAP_INTERRUPT_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		ProbeKey(&fp);
		entry->population = probe->sums[ProbeBucket(probe, &fp, ProbeHome(probe, &fp))];
	}
	SPI_freetuptable(SPI_tuptable);
	pfree(probe->keys);
	pfree(probe->sums);
	pfree(probe);
	pfree(keys);
	state->memory -= keys_length;
}

/* ---- The grouped scans: counted where the rows are (Citus) ---- */

/*
 * A distributed planner cannot split qidrisk_kmap_probe (its state is
 * internal), so over a table distributed by Citus it would gather every
 * population row to the coordinator with the release's keys as a constant in
 * each.  A grouped scan instead counts the population per fingerprint with a
 * GROUP BY of qid_key, which Citus runs on the shards: each shard sends one
 * row per class it holds (a 16-byte key and its sums), the coordinator adds
 * the shards' rows per key, and the counts are matched here with the
 * release's classes.  A distributed release is likewise read grouped by its
 * QID columns; a table that is both the release and the population
 * (weighted_risk) is read once, grouped by its QID columns with the
 * population's figures beside the release's count.  qid_key hashes the
 * population's columns exactly as the probe does, so both scans give the
 * same counts.
 */

/*
 * Whether the table or view relid is read grouped: as qidrisk.kmap_population_scan
 * says, or (auto) when it is a Citus table distributed over shards or a view
 * reading one.  Needs SPI.
 */
static bool
KmapGrouped(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];
	bool		isnull;
	bool		grouped;
	int			rc;

	if (qidrisk_kmap_population_scan != KMAP_SCAN_AUTO)
		return qidrisk_kmap_population_scan == KMAP_SCAN_GROUPED;
	if (!OidIsValid(get_extension_oid("citus", true)))
		return false;
	/* the relation, and every relation the rules of the views among them read */
	args[0] = ObjectIdGetDatum(relid);
	rc = SPI_execute_with_args("WITH RECURSIVE r(oid) AS (SELECT $1 UNION "
							   "SELECT d.refobjid FROM r "
							   "JOIN pg_catalog.pg_rewrite w ON w.ev_class OPERATOR(pg_catalog.=) r.oid "
							   "JOIN pg_catalog.pg_depend d "
							   "ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_rewrite'::pg_catalog.regclass "
							   "AND d.objid OPERATOR(pg_catalog.=) w.oid "
							   "AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass) "
							   "SELECT EXISTS (SELECT FROM r JOIN pg_catalog.pg_dist_partition p "
							   "ON p.logicalrelid::pg_catalog.oid OPERATOR(pg_catalog.=) r.oid "
							   "WHERE p.partmethod OPERATOR(pg_catalog.<>) 'n')",
							   1, argtypes, args, NULL, true, 1);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "kmap_count: reading Citus's table metadata returned %s",
			 SPI_result_code_string(rc));
	grouped = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
										 &isnull));
	SPI_freetuptable(SPI_tuptable);
	return !isnull && grouped;
}

/* Append whether a weight is good: a finite number at least 0 (NULL for NULL) */
static void
AppendWeightGood(StringInfo query, const char *weight_name)
{
	const char *w = quote_identifier(weight_name);

	appendStringInfo(query, "(%s::pg_catalog.float8 OPERATOR(pg_catalog.>=) 0::pg_catalog.float8 "
					 "AND %s::pg_catalog.float8 OPERATOR(pg_catalog.<) 'Infinity'::pg_catalog.float8)",
					 w, w);
}

/*
 * Append a class's figures to a grouped query's select list: its row count,
 * and with a weight the weight's sum and whether all its weights are good
 * (a bad one is looked up again once the scan is over)
 */
static void
AppendGroupFigures(StringInfo query, const char *weight_name)
{
	appendStringInfoString(query, ", pg_catalog.count(*)");
	if (weight_name != NULL)
	{
		appendStringInfo(query, ", pg_catalog.sum(%s::pg_catalog.float8), pg_catalog.bool_and(",
						 quote_identifier(weight_name));
		AppendWeightGood(query, weight_name);
		appendStringInfoString(query, " IS TRUE)");
	}
}

/*
 * The release read as one row per class: its QID columns and its row count,
 * then (weight_name given) the weight's figures, for a table read as release
 * and population at once
 */
static char *
ReleaseGroupedQuery(KmapState *state, const char *release_name, const char *weight_name)
{
	StringInfoData query;

	initStringInfo(&query);
	appendStringInfoString(&query, "SELECT ");
	AppendColumns(&query, state->names, state->ncolumns);
	AppendGroupFigures(&query, weight_name);
	appendStringInfo(&query, " FROM %s GROUP BY ", release_name);
	for (int i = 0; i < state->ncolumns; i++)
		appendStringInfo(&query, "%s%d", i > 0 ? ", " : "", i + 1);
	return query.data;
}

/* The row count of a grouped release row (the column after the QID) */
static int64
ReleaseGroupRows(KmapState *state, TupleTableSlot *slot)
{
	slot_getsomeattrs(slot, state->ncolumns + 1);
	if (TupleDescAttr(slot->tts_tupleDescriptor, state->ncolumns)->atttypid != INT8OID ||
		slot->tts_isnull[state->ncolumns])
		elog(ERROR, "%s: the grouped release scan returned no row count", state->funcname);
	return DatumGetInt64(slot->tts_values[state->ncolumns]);
}

/*
 * Check that a grouped scan returns a class's figures (AppendGroupFigures)
 * from column first on, and nothing after them
 */
static void
CheckGroupFigures(KmapState *state, TupleDesc typeinfo, int first)
{
	static const Oid plain[] = {INT8OID};
	static const Oid weighted[] = {INT8OID, FLOAT8OID, BOOLOID};
	const Oid  *expected = state->weighted ? weighted : plain;
	int			nfigures = state->weighted ? lengthof(weighted) : lengthof(plain);

	if (typeinfo->natts != first + nfigures)
		elog(ERROR, "%s: the grouped scan returned %d columns, not %d",
			 state->funcname, typeinfo->natts, first + nfigures);
	for (int i = 0; i < nfigures; i++)
		if (TupleDescAttr(typeinfo, first + i)->atttypid != expected[i])
			elog(ERROR, "%s: column %d of the grouped scan is of type %s",
				 state->funcname, first + i + 1,
				 format_type_be(TupleDescAttr(typeinfo, first + i)->atttypid));
}

/* Check that the grouped population scan returns a key and its figures */
static void
PopulationGroupStartup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	KmapState  *state = ((KmapReceiver *) self)->state;

	(void) operation;
	if (typeinfo->natts < 1 || TupleDescAttr(typeinfo, 0)->atttypid != UUIDOID)
		elog(ERROR, "%s: the grouped population scan returned no key", state->funcname);
	CheckGroupFigures(state, typeinfo, 1);
}

/*
 * The population count (rows, or the weight's sum) of a grouped row whose
 * figures start at column first.  Every class's weights are checked, matched
 * or not, as the probe checks every row's; a class with a bad one is noted,
 * and the scan's caller reports it (ReportBadWeight).
 */
static double
GroupPopulation(KmapState *state, TupleTableSlot *slot, int first)
{
	Datum	   *values = slot->tts_values + first;
	bool	   *nulls = slot->tts_isnull + first;

	slot_getallattrs(slot);
	if (nulls[0])
		elog(ERROR, "%s: the grouped scan returned a NULL count", state->funcname);
	if (!state->weighted)
		return (double) DatumGetInt64(values[0]);
	if (nulls[2] || !DatumGetBool(values[2]))
	{
		state->bad_weight = true;
		return 0;
	}
	if (nulls[1])
		elog(ERROR, "%s: the grouped scan returned a NULL weight sum", state->funcname);
	return DatumGetFloat8(values[1]);
}

/*
 * After a grouped scan that met a bad weight, raise the probe's error for
 * one: read one bad weight of the relation, under the same snapshot
 */
static void
ReportBadWeight(KmapState *state, const char *relation_name, const char *weight_name)
{
	StringInfoData query;
	bool		isnull;
	double		weight;
	int			rc;

	if (!state->bad_weight)
		return;
	initStringInfo(&query);
	appendStringInfo(&query, "SELECT %s::pg_catalog.float8 FROM %s WHERE ",
					 quote_identifier(weight_name), relation_name);
	AppendWeightGood(&query, weight_name);
	appendStringInfoString(&query, " IS NOT TRUE LIMIT 1");
	rc = SPI_execute(query.data, true, 1);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "%s: the bad population weight the grouped scan met was not found again",
			 state->funcname);
	weight = DatumGetFloat8(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
										  &isnull));
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("kmap_count: population weight must not be NULL")));
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("kmap_count: population weight must be a finite number at least 0, not %g",
					weight)));
}

/* Add one population class (its key and figures) to the release's class it matches */
static void
PopulationGroupRow(KmapState *state, TupleTableSlot *slot)
{
	QidFingerprint fp;
	KmapClass  *entry;
	double		population = GroupPopulation(state, slot, 1);

	if (slot->tts_isnull[0])
		elog(ERROR, "%s: the grouped population scan returned a NULL key", state->funcname);
	QidKeyToFingerprint(DatumGetUUIDP(slot->tts_values[0]), &fp);
	entry = kmaphash_lookup(state->classes, fp);
	if (entry != NULL)
		entry->population += population;
}

/* Check that the grouped scan of a table read as both sides returns its QID and figures */
static void
SelfGroupStartup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	KmapState  *state = ((KmapReceiver *) self)->state;

	KmapStartup(self, operation, typeinfo);
	CheckGroupFigures(state, typeinfo, state->ncolumns);
}

/*
 * One class of a table read as both release and population: its rows make
 * the release class, its figures the population count
 */
static void
SelfGroupRow(KmapState *state, TupleTableSlot *slot)
{
	KmapClass  *entry = ReleaseClass(state, slot);

	entry->release_rows += ReleaseGroupRows(state, slot);
	entry->population += GroupPopulation(state, slot, state->ncolumns);
}

/*
 * The key filter: the release's fingerprints as a bitmap of 8 to 16 bits a
 * class, two bits set per class at keyed positions (a random key per call),
 * sent once with each shard query so that the shards group only the rows
 * that may match a release class: every matching row passes, and at most
 * about 5% of the others (chosen data can raise that share, never lose a
 * match).  The
 * grouped rows are matched by their whole fingerprint, so the counts stay
 * exact.  Layout: a format version, the two 64-bit halves of the key, the
 * bitmap (a power of two of bytes).  Not used for a release of more than
 * KMAP_FILTER_MAX_CLASSES classes (a 64 kB filter), nor when the release is
 * the population itself.
 */
#define KMAP_FILTER_MAX_CLASSES 65536
#define KMAP_FILTER_HEADER (1 + 2 * sizeof(uint64))

/* The two bits of a fingerprint in a filter of mask + 1 bits */
static inline void
KeyFilterBits(const QidFingerprint *fp, uint64 k0, uint64 k1, uint64 mask,
			  uint64 *bit1, uint64 *bit2)
{
	*bit1 = QidMix64(fp->lo ^ k0) & mask;
	*bit2 = QidMix64(fp->hi ^ k1) & mask;
}

/* Build the key filter of the release's classes */
static bytea *
KeyFilterBuild(KmapState *state)
{
	uint64		bits = pg_nextpower2_64(Max((uint64) state->classes->members * 8, 512));
	Size		length = KMAP_FILTER_HEADER + bits / 8;
	bytea	   *filter = palloc0(VARHDRSZ + length);
	unsigned char *out = (unsigned char *) VARDATA(filter);
	unsigned char *bitmap = out + KMAP_FILTER_HEADER;
	QidPlacementKey key = QidPlacementKeyCreate();
	kmaphash_iterator it;
	KmapClass  *entry;

	SET_VARSIZE(filter, VARHDRSZ + length);
	out[0] = QIDRISK_STATE_FORMAT_VERSION;
	memcpy(out + 1, &key.k0, sizeof(uint64));
	memcpy(out + 1 + sizeof(uint64), &key.k1, sizeof(uint64));
	kmaphash_start_iterate(state->classes, &it);
	while ((entry = kmaphash_iterate(state->classes, &it)) != NULL)
	{
		uint64		bit1;
		uint64		bit2;

		KeyFilterBits(&entry->key, key.k0, key.k1, bits - 1, &bit1, &bit2);
		bitmap[bit1 / 8] |= 1 << (bit1 % 8);
		bitmap[bit2 / 8] |= 1 << (bit2 % 8);
	}
	return filter;
}

PG_FUNCTION_INFO_V1(qidrisk_kmap_key_filter);

/*
 * qidrisk_kmap_key_filter(filter bytea, key uuid): whether key may be one of
 * the fingerprints the filter was built from (false: certainly not).
 */
Datum
qidrisk_kmap_key_filter(PG_FUNCTION_ARGS)
{
	bytea	   *filter = PG_GETARG_BYTEA_PP(0);
	const unsigned char *in = (const unsigned char *) VARDATA_ANY(filter);
	Size		length = VARSIZE_ANY_EXHDR(filter);
	Size		bytes = length > KMAP_FILTER_HEADER ? length - KMAP_FILTER_HEADER : 0;
	uint64		k0;
	uint64		k1;
	uint64		bit1;
	uint64		bit2;
	QidFingerprint fp;

	if (bytes < 8 || (bytes & (bytes - 1)) != 0 || in[0] != QIDRISK_STATE_FORMAT_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("invalid qidrisk k-map key filter"),
				 errhint("qidrisk_kmap_key_filter is internal to kmap_count; call kmap_count instead.")));
	memcpy(&k0, in + 1, sizeof(uint64));
	memcpy(&k1, in + 1 + sizeof(uint64), sizeof(uint64));
	QidKeyToFingerprint(PG_GETARG_UUID_P(1), &fp);
	KeyFilterBits(&fp, k0, k1, bytes * 8 - 1, &bit1, &bit2);
	in += KMAP_FILTER_HEADER;
	PG_RETURN_BOOL((in[bit1 / 8] & (1 << (bit1 % 8))) != 0 &&
				   (in[bit2 / 8] & (1 << (bit2 % 8))) != 0);
}

/*
 * Count the population into the release's classes from one row per
 * population class: SELECT qid_key(qid...), count(*) [, the weight's sum,
 * whether its weights are all good] FROM population [WHERE the key passes the
 * filter] GROUP BY 1, run as the caller.
 */
static void
CountPopulationGrouped(KmapState *state, const char *population_name,
					   char **population_names, const char *weight_name, bool filtered)
{
	StringInfoData query;
	ParamListInfo params = NULL;
	bytea	   *filter = filtered ? KeyFilterBuild(state) : NULL;

	initStringInfo(&query);
	appendStringInfoString(&query, "SELECT " QIDRISK_INTERNAL ".qid_key(");
	AppendColumns(&query, population_names, state->ncolumns);
	appendStringInfoString(&query, ")");
	state->weighted = weight_name != NULL;
	AppendGroupFigures(&query, weight_name);
	appendStringInfo(&query, " FROM %s", population_name);
	if (filter != NULL)
	{
		appendStringInfoString(&query, " WHERE " QIDRISK_INTERNAL ".qidrisk_kmap_key_filter($1, "
							   QIDRISK_INTERNAL ".qid_key(");
		AppendColumns(&query, population_names, state->ncolumns);
		appendStringInfoString(&query, "))");
		/* a row whose weight is bad passes, so that its error is raised */
		if (state->weighted)
		{
			appendStringInfoString(&query, " OR ");
			AppendWeightGood(&query, weight_name);
			appendStringInfoString(&query, " IS NOT TRUE");
		}
		params = makeParamList(1);
		params->numParams = 1;
		params->params[0].value = PointerGetDatum(filter);
		params->params[0].isnull = false;
		params->params[0].pflags = PARAM_FLAG_CONST;
		params->params[0].ptype = BYTEAOID;
	}
	appendStringInfoString(&query, " GROUP BY 1");

	KmapScanWith(state, query.data, PopulationGroupRow, PopulationGroupStartup, params);
	ReportBadWeight(state, population_name, weight_name);
	if (filter != NULL)
		pfree(filter);
}

/* ---- end of the grouped scans ---- */

/* Choose how column i's values become jsonb values */
static void
ValueJsonInit(KmapState *state, int i)
{
	ValueJson  *vj = &state->json[i];
	Oid			type = state->types[i];

	switch (getBaseType(type))
	{
		case TEXTOID:
		case VARCHAROID:
			vj->kind = VALUE_JSON_STRING;
			break;
		case INT2OID:
		case INT4OID:
			vj->kind = VALUE_JSON_INT4;
			break;
		case INT8OID:
			vj->kind = VALUE_JSON_INT8;
			break;
		case NUMERICOID:
			vj->kind = VALUE_JSON_NUMERIC;
			break;
		case BOOLOID:
			vj->kind = VALUE_JSON_BOOL;
			break;
		default:
			vj->kind = VALUE_JSON_TO_JSONB;
			break;
	}
	/* to_jsonb reads its argument's type from the call expression */
	fmgr_info(F_TO_JSONB, &vj->to_jsonb);
	vj->to_jsonb.fn_expr = (Node *)
		makeFuncExpr(F_TO_JSONB, JSONBOID,
					 list_make1(makeNullConst(type, -1, state->collations[i])),
					 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
}

/* Convert one non-NULL value as to_jsonb would, into v */
static void
ValueToJsonb(ValueJson *vj, Datum value, JsonbValue *v)
{
	switch (vj->kind)
	{
		case VALUE_JSON_STRING:
			{
				text	   *t = DatumGetTextPP(value);

				v->type = jbvString;
				v->val.string.len = VARSIZE_ANY_EXHDR(t);
				v->val.string.val = VARDATA_ANY(t);
				return;
			}
		case VALUE_JSON_INT4:
			v->type = jbvNumeric;
			v->val.numeric = DatumGetNumeric(DirectFunctionCall1(int4_numeric, value));
			return;
		case VALUE_JSON_INT8:
			v->type = jbvNumeric;
			v->val.numeric = DatumGetNumeric(DirectFunctionCall1(int8_numeric, value));
			return;
		case VALUE_JSON_NUMERIC:
			{
				Numeric		n = DatumGetNumeric(value);

				if (numeric_is_nan(n) || numeric_is_inf(n))
					break;		/* to_jsonb writes these as strings */
				v->type = jbvNumeric;
				v->val.numeric = n;
				return;
			}
		case VALUE_JSON_BOOL:
			v->type = jbvBool;
			v->val.boolean = DatumGetBool(value);
			return;
		case VALUE_JSON_TO_JSONB:
			break;
	}
	{
		Jsonb	   *jb = DatumGetJsonbP(FunctionCall1(&vj->to_jsonb, value));

		if (JB_ROOT_IS_SCALAR(jb))
			JsonbExtractScalar(&jb->root, v);
		else
		{
			v->type = jbvBinary;
			v->val.binary.data = &jb->root;
			v->val.binary.len = VARSIZE(jb) - VARHDRSZ;
		}
	}
}

/*
 * The class as jsonb, equal to jsonb_build_object('col1', col1, ...) of its
 * values.  Built in the scratch context, which the caller resets; with
 * keep_jsonb a copy stays with the class.
 */
static Datum
ClassJsonb(KmapState *state, KmapClass *entry)
{
	MemoryContext old;
	JsonbParseState *parse = NULL;
	JsonbValue *object;
	Jsonb	   *result;

	if (entry->jsonb != (Datum) 0)
		return entry->jsonb;

	old = MemoryContextSwitchTo(state->scratch);
	pushJsonbValue(&parse, WJB_BEGIN_OBJECT, NULL);
	for (int i = 0; i < state->ncolumns; i++)
	{
		JsonbValue	v;

		pushJsonbValue(&parse, WJB_KEY, &state->keys[i]);
		if (entry->values[i].isnull)
			v.type = jbvNull;
		else
			ValueToJsonb(&state->json[i], entry->values[i].value, &v);
		pushJsonbValue(&parse, WJB_VALUE, &v);
	}
	object = pushJsonbValue(&parse, WJB_END_OBJECT, NULL);
	result = JsonbValueToJsonb(object);
	MemoryContextSwitchTo(old);
	if (state->keep_jsonb)
	{
		Size		size = VARSIZE(result);

		state->memory += size;
		if (state->memory > (double) state->budget)
			KmapBudgetExceeded(state, state->memory);
		entry->jsonb = PointerGetDatum(MemoryContextAlloc(state->context, size));
		memcpy(DatumGetPointer(entry->jsonb), result, size);
		MemoryContextReset(state->scratch);
		return entry->jsonb;
	}
	return JsonbPGetDatum(result);
}

/* Emit one release row with its class's figures (kmap_row_counts) */
static void
OutputRow(KmapState *state, TupleTableSlot *slot)
{
	NullableDatum values[KMAP_MAX_COLUMNS];
	QidFingerprint fp;
	KmapClass  *entry;
	Datum		out[4];
	bool		nulls[4] = {false, false, false, false};
	int			rowcol = state->ncolumns;

	SlotFingerprint(state, slot, values, &fp);
	slot_getsomeattrs(slot, rowcol + 1);
	entry = kmaphash_lookup(state->classes, fp);
	if (entry == NULL)
		elog(ERROR, "%s: a release row was not seen by the first scan", state->funcname);
	out[0] = slot->tts_values[rowcol];
	out[1] = ClassJsonb(state, entry);
	out[2] = Int64GetDatum(entry->release_rows);
	out[3] = Float8GetDatum(entry->population);
	tuplestore_putvalues(state->output, state->output_desc, out, nulls);
}

/*
 * Check the arguments, build the release's classes and scan the population.
 * Leaves SPI connected; the caller emits its rows and calls SPI_finish.
 */
static KmapState *
KmapBuild(FunctionCallInfo fcinfo, const char *funcname, char **release_name)
{
	KmapState  *state;
	QidRelation *release;
	QidRelation *population;
	char	  **population_names;
	char	   *weight_name = NULL;
	int			npopulation;
	StringInfoData query;

	for (int i = 0; i < 3; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s: %s must not be NULL", funcname,
							i == 0 ? "release" : i == 1 ? "population" : "qid")));

	state = palloc0(sizeof(KmapState));
	state->funcname = funcname;
	/* both relations are locked before their columns are resolved */
	release = QidRelationOpen(PG_GETARG_OID(0), "release");
	population = QidRelationOpen(PG_GETARG_OID(1), "population");
	*release_name = release->qualified;
	state->release = release;
	state->names = TextArrayToNames(PG_GETARG_ARRAYTYPE_P(2), "qid", &state->ncolumns);
	if (!PG_ARGISNULL(4))
	{
		population_names = TextArrayToNames(PG_GETARG_ARRAYTYPE_P(4), "population_qid",
											&npopulation);
		if (npopulation != state->ncolumns)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("population_qid must name one column per qid column (%d), not %d",
							state->ncolumns, npopulation)));
	}
	else
		population_names = state->names;
	if (!PG_ARGISNULL(3))
		weight_name = text_to_cstring(PG_GETARG_TEXT_PP(3));

	state->types = palloc(sizeof(Oid) * state->ncolumns);
	state->collations = palloc(sizeof(Oid) * state->ncolumns);
	state->typlens = palloc(sizeof(int16) * state->ncolumns);
	state->typbyvals = palloc(sizeof(bool) * state->ncolumns);
	state->keys = palloc(sizeof(JsonbValue) * state->ncolumns);
	state->json = palloc(sizeof(ValueJson) * state->ncolumns);
	for (int i = 0; i < state->ncolumns; i++)
	{
		int			k;

		QidRelationColumn(release, state->names[i]);
		k = QidRelationColumn(population, population_names[i]);
		state->types[i] = release->types[i];
		state->collations[i] = release->collations[i];
		CheckComparable(state->names[i], state->types[i], state->collations[i],
						population_names[i], population->types[k], population->collations[k]);
		get_typlenbyval(state->types[i], &state->typlens[i], &state->typbyvals[i]);
		state->keys[i].type = jbvString;
		state->keys[i].val.string.val = state->names[i];
		state->keys[i].val.string.len = strlen(state->names[i]);
		ValueJsonInit(state, i);
	}
	if (weight_name != NULL)
	{
		Oid			wtype = population->types[QidRelationColumn(population, weight_name)];

		if (!QidIsNumericType(getBaseType(wtype)))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("population weight column \"%s\" must be numeric, not %s",
							weight_name, format_type_be(wtype))));
	}

	QidRelationCheckSelect(release, NULL);
	QidRelationCheckSelect(population, NULL);

	state->hasher = QidHasherCreate(CurrentMemoryContext, state->ncolumns, state->types,
									state->collations, (const char *const *) state->names,
									funcname);
	state->context = AllocSetContextCreate(CurrentMemoryContext, "qidrisk kmap classes",
										   ALLOCSET_DEFAULT_SIZES);
	state->scratch = AllocSetContextCreate(CurrentMemoryContext, "qidrisk kmap jsonb",
										   ALLOCSET_DEFAULT_SIZES);
	state->budget = QidStateMemoryBudget();
	{
		QidPlacementKey *key = MemoryContextAlloc(state->context, sizeof(QidPlacementKey));

		*key = QidPlacementKeyCreate();
		state->classes = kmaphash_create(state->context, 256, key);
	}
	state->memory = (double) state->classes->size * sizeof(KmapClass);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "%s: SPI_connect failed", funcname);

	/* both scans (and kmap_row_counts's second) see the tables as locked */
	state->fresh_snapshot = QidReadSnapshotPush(release, population);

	/* the release's classes (counted where its rows are, when distributed) */
	state->release_grouped = KmapGrouped(release->relid);
	if (state->release_grouped && population->relid == release->relid &&
		SameColumns(state->names, population_names, state->ncolumns))
	{
		/* the release is the population (weighted_risk): one grouped read gives both */
		state->weighted = weight_name != NULL;
		KmapScanWith(state, ReleaseGroupedQuery(state, *release_name, weight_name),
					 SelfGroupRow, SelfGroupStartup, NULL);
		ReportBadWeight(state, *release_name, weight_name);
		return state;
	}
	if (state->release_grouped)
		KmapScan(state, ReleaseGroupedQuery(state, *release_name, NULL), ReleaseRow);
	else
	{
		initStringInfo(&query);
		appendStringInfoString(&query, "SELECT ");
		AppendColumns(&query, state->names, state->ncolumns);
		appendStringInfo(&query, " FROM %s", *release_name);
		KmapScan(state, query.data, ReleaseRow);
	}

	/* one pass over the population */
	if (KmapGrouped(population->relid))
		CountPopulationGrouped(state, population->qualified, population_names, weight_name,
							   population->relid != release->relid &&
							   state->classes->members <= KMAP_FILTER_MAX_CLASSES);
	else
		ProbePopulation(state, population->qualified, population_names, weight_name);
	return state;
}

/*
 * kmap_count(release, population, qid, population_weight_column, population_qid):
 * one row per class of the release with its size and its population count.
 */
static Datum
KmapCount(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	KmapState  *state;
	char	   *release_name;
	kmaphash_iterator it;
	KmapClass  *entry;
	int64		emitted = 0;

	InitMaterializedSRF(fcinfo, 0);
	state = KmapBuild(fcinfo, "kmap_count", &release_name);

	kmaphash_start_iterate(state->classes, &it);
	while ((entry = kmaphash_iterate(state->classes, &it)) != NULL)
	{
		Datum		out[3];
		bool		nulls[3] = {false, false, false};

		if ((++emitted & KMAP_INTERRUPT_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		out[0] = ClassJsonb(state, entry);
		out[1] = Int64GetDatum(entry->release_rows);
		out[2] = Float8GetDatum(entry->population);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, nulls);
		MemoryContextReset(state->scratch);
	}
	if (state->fresh_snapshot)
		PopActiveSnapshot();
	SPI_finish();
	return (Datum) 0;
}

/* kmap_count under a boundary: an error of the input shows the call, not the scans */
Datum
qidrisk_kmap_count(PG_FUNCTION_ARGS)
{
	return QidCallBounded(KmapCount, fcinfo);
}

/*
 * kmap_row_counts(...): every row of the release (as jsonb) with its class
 * and the class's figures, matched by fingerprint rather than by jsonb.
 */
static Datum
KmapRowCounts(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	KmapState  *state;
	char	   *release_name;
	StringInfoData query;

	InitMaterializedSRF(fcinfo, 0);
	state = KmapBuild(fcinfo, "kmap_row_counts", &release_name);
	state->output = rsinfo->setResult;
	state->output_desc = rsinfo->setDesc;
	state->keep_jsonb = true;	/* every row of a class shows the same jsonb */

	initStringInfo(&query);
	appendStringInfoString(&query, "SELECT ");
	for (int i = 0; i < state->ncolumns; i++)
		appendStringInfo(&query, "r.%s, ", quote_identifier(state->names[i]));
	appendStringInfo(&query, "pg_catalog.to_jsonb(r) FROM %s AS r", release_name);
	KmapScan(state, query.data, OutputRow);
	if (state->fresh_snapshot)
		PopActiveSnapshot();
	SPI_finish();
	return (Datum) 0;
}

/* kmap_row_counts under a boundary: an error of the input shows the call, not the scans */
Datum
qidrisk_kmap_row_counts(PG_FUNCTION_ARGS)
{
	return QidCallBounded(KmapRowCounts, fcinfo);
}
