/*
 * relreader.c
 *	  The one way qidrisk's table-level functions read a relation.
 *
 * A relation is opened by OID and locked (AccessShareLock, held to the end of
 * the transaction) before its columns are resolved, so that no ALTER TABLE or
 * DROP can change them between the lookup and the scan.  Unknown columns get
 * a 42703 error that suggests the nearest existing name; missing SELECT
 * privilege a 42501 error that names the column.  The scan runs through SPI as
 * the caller (privileges and row-level security hold), and its values are
 * decoded with the executed query's tuple descriptor, which must show the
 * types resolved under the lock.
 *
 * The dictionary encoder shared by qid_search and qar_* turns each column's
 * values into dense integer codes through a column dictionary (valuedict.h,
 * which the lattice uses too): values equal under the type's default hash
 * equality and the column's collation share a code, NULL is one more code;
 * values are placed by a hash keyed per column and query (hashkey.c), so
 * that chosen values cannot make the tables degenerate.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/heap.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
#include "utils/varlena.h"

#include "hashkey.h"
#include "qidrisk.h"
#include "quantile.h"
#include "relreader.h"
#include "valuedict.h"
#include "settings.h"

PG_FUNCTION_INFO_V1(qidrisk_require_columns);

/* Rows fetched from the cursor at a time */
#define FETCH_BATCH 10000

/* ---- opening and resolving ---- */

/*
 * Whether the relation's pg_class row was written by a transaction that the
 * active snapshot does not see: a DDL (a rewrite, an added column) that
 * committed while this call waited for its lock.  Rows read with that
 * snapshot would be the old ones (or none, after a rewrite).
 */
static bool
ChangedAfterSnapshot(Oid relid)
{
	HeapTuple	tuple;
	TransactionId xmin;
	bool		changed = false;

	if (!ActiveSnapshotSet())
		return false;
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		return false;
	xmin = HeapTupleHeaderGetXmin(tuple->t_data);
	if (TransactionIdIsNormal(xmin) && !TransactionIdIsCurrentTransactionId(xmin))
		changed = XidInMVCCSnapshot(xmin, GetActiveSnapshot());
	ReleaseSysCache(tuple);
	return changed;
}

/*
 * Open and lock a relation that can be selected from, or raise 42P01 (it does
 * not exist, or was dropped meanwhile) or 42809.  what ("release", ...) may
 * be NULL.  The lock is kept until the end of the transaction.
 */
QidRelation *
QidRelationOpen(Oid relid, const char *what)
{
	Relation	rel = try_relation_open(relid, AccessShareLock);
	QidRelation *result;
	TupleDesc	desc;

	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("%s%srelation with OID %u does not exist",
						what ? what : "", what ? " " : "", relid)));
	result = palloc0(sizeof(QidRelation));
	result->relid = relid;
	result->changed = ChangedAfterSnapshot(relid);
	result->relkind = rel->rd_rel->relkind;
	result->relname = pstrdup(RelationGetRelationName(rel));
	result->qualified = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
												   result->relname);
	if (result->relkind != RELKIND_RELATION && result->relkind != RELKIND_VIEW &&
		result->relkind != RELKIND_MATVIEW && result->relkind != RELKIND_FOREIGN_TABLE &&
		result->relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("%s%s\"%s\" is not a table, view or materialized view",
						what ? what : "", what ? " " : "", result->relname)));
	desc = RelationGetDescr(rel);
	result->desc = CreateTupleDescCopy(desc);
	result->capacity = Max(desc->natts, 4);
	result->names = palloc(sizeof(char *) * result->capacity);
	result->attnums = palloc(sizeof(AttrNumber) * result->capacity);
	result->types = palloc(sizeof(Oid) * result->capacity);
	result->collations = palloc(sizeof(Oid) * result->capacity);
	/* the lock stays until the end of the transaction */
	relation_close(rel, NoLock);
	return result;
}

/* The live user column of a name that is nearest to name, or NULL */
static const char *
NearestColumn(QidRelation *rel, const char *name)
{
	const char *best = NULL;
	int			best_distance = INT_MAX;
	int			len = strlen(name);

	for (int i = 0; i < rel->desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(rel->desc, i);
		const char *candidate = NameStr(att->attname);
		int			distance;

		if (att->attisdropped)
			continue;
		if (pg_strcasecmp(candidate, name) == 0)
			return candidate;
		distance = varstr_levenshtein(name, len, candidate, strlen(candidate), 1, 1, 1, true);
		if (distance < best_distance)
		{
			best_distance = distance;
			best = candidate;
		}
	}
	/* suggest only names that could be typos of the one given */
	if (best != NULL && best_distance <= Max(2, len / 3))
		return best;
	return NULL;
}

/*
 * Add a user column by name (case-sensitive, as stored) and return its
 * position among the chosen columns; raise 42703 if there is none.
 */
int
QidRelationColumn(QidRelation *rel, const char *name)
{
	for (int i = 0; i < rel->desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(rel->desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0)
		{
			int			k = rel->ncolumns;

			if (k == rel->capacity)
			{
				rel->capacity *= 2;
				rel->names = repalloc(rel->names, sizeof(char *) * rel->capacity);
				rel->attnums = repalloc(rel->attnums, sizeof(AttrNumber) * rel->capacity);
				rel->types = repalloc(rel->types, sizeof(Oid) * rel->capacity);
				rel->collations = repalloc(rel->collations, sizeof(Oid) * rel->capacity);
			}
			rel->names[k] = pstrdup(name);
			rel->attnums[k] = att->attnum;
			rel->types[k] = att->atttypid;
			rel->collations[k] = att->attcollation;
			rel->ncolumns++;
			return k;
		}
	}
	if (SystemAttributeByName(name) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist", name, rel->relname),
				 errdetail("System columns cannot be read as table columns here.")));
	{
		const char *nearest = NearestColumn(rel, name);

		if (nearest != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" of relation \"%s\" does not exist",
							name, rel->relname),
					 errdetail("Column names are case-sensitive and taken as written, without quotes."),
					 errhint("Did you mean \"%s\"?", nearest)));
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						name, rel->relname),
				 errdetail("Column names are case-sensitive and taken as written, without quotes.")));
	}
	return -1;					/* keep compiler quiet */
}

/* Add every live user column, in table order; raise 22023 if there is none */
void
QidRelationEveryColumn(QidRelation *rel, const char *funcname)
{
	for (int i = 0; i < rel->desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(rel->desc, i);

		if (!att->attisdropped)
			QidRelationColumn(rel, NameStr(att->attname));
	}
	if (rel->ncolumns == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: %s has no columns", funcname, rel->relname)));
}

/*
 * Raise 42501 naming the first chosen column the caller may not SELECT
 * (the table-wide privilege covers them all).  hint may be NULL.
 */
void
QidRelationCheckSelect(QidRelation *rel, const char *hint)
{
	Oid			userid = GetUserId();

	if (pg_class_aclcheck(rel->relid, userid, ACL_SELECT) == ACLCHECK_OK)
		return;
	for (int i = 0; i < rel->ncolumns; i++)
		if (pg_attribute_aclcheck(rel->relid, rel->attnums[i], userid, ACL_SELECT) != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied for column \"%s\" of relation \"%s\"",
							rel->names[i], rel->relname),
					 hint ? errhint("%s", hint) : 0));
}

/*
 * Check that the first chosen columns of the executed query (from column
 * first of desc on) have the types resolved under the lock.
 */
void
QidRelationCheckResult(QidRelation *rel, TupleDesc desc, int first, int count,
					   const char *funcname)
{
	if (desc == NULL || desc->natts < first + count)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s: the query over %s returned other columns than expected",
						funcname, rel->relname)));
	for (int i = 0; i < count; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, first + i);

		if (att->atttypid != rel->types[i])
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("%s: column \"%s\" of %s changed type while it was read",
							funcname, rel->names[i], rel->relname),
					 errdetail("It was resolved as %s and read as %s.",
							   format_type_be(rel->types[i]), format_type_be(att->atttypid)),
					 errhint("Run the call again.")));
	}
}

/* Raise 40001: rel changed after the snapshot this read must use */
static void
ChangedError(QidRelation *rel)
{
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not read \"%s\": it was altered by a transaction that committed after this statement's snapshot",
					rel->relname),
			 errhint("Run the statement again.")));
}

/*
 * Before the scans of a C function: when a relation changed after the
 * statement's snapshot (its DDL committed while we waited for the lock),
 * read with a new snapshot, taken after the lock (READ COMMITTED), or raise
 * 40001 (REPEATABLE READ and SERIALIZABLE keep one snapshot).  Returns
 * whether a snapshot was pushed; the caller pops it after opening its scans.
 */
bool
QidReadSnapshotPush(QidRelation *rel, QidRelation *other)
{
	QidRelation *changed = rel->changed ? rel : other != NULL && other->changed ? other : NULL;

	if (changed == NULL)
		return false;
	if (IsolationUsesXactSnapshot())
		ChangedError(changed);
	PushActiveSnapshot(GetTransactionSnapshot());
	return true;
}

/*
 * qidrisk_require_columns(rel, columns): lock rel, check that it has every
 * listed column (NULL: every column) and that the caller may read them; the
 * first step of every table-level function written in SQL.
 */
Datum
qidrisk_require_columns(PG_FUNCTION_ARGS)
{
	QidRelation *rel;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("a table is needed, not NULL")));
	rel = QidRelationOpen(PG_GETARG_OID(0), NULL);
	/* the caller's statements read with its snapshot, which must see the table as locked */
	if (rel->changed)
		ChangedError(rel);
	if (PG_ARGISNULL(1))
		QidRelationEveryColumn(rel, "qidrisk");
	else
	{
		ArrayType  *array = PG_GETARG_ARRAYTYPE_P(1);
		Datum	   *elems;
		bool	   *nulls;
		int			n;

		if (ARR_NDIM(array) > 1)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("column names must be a one-dimensional array")));
		deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
		for (int i = 0; i < n; i++)
		{
			if (nulls[i])
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_COLUMN),
						 errmsg("column names must not be NULL")));
			QidRelationColumn(rel, TextDatumGetCString(elems[i]));
		}
	}
	QidRelationCheckSelect(rel, NULL);
	PG_RETURN_VOID();
}

/* ---- reading rows as the executor produces them ---- */

/* A query's rows handed to a reader's functions, not copied into SPI's tables */
typedef struct RowReceiver
{
	DestReceiver pub;
	QidRelation *rel;
	int			first;			/* the relation's chosen columns in the result, from here */
	const QidRowReader *reader;
	void	   *arg;
	const char *funcname;
	ErrorContextCallback *outer_context;	/* the error context outside SPI */
} RowReceiver;

/* The executed query's columns: they must have the types resolved under the lock */
static void
RowReceiverStartup(DestReceiver *self, int operation, TupleDesc desc)
{
	RowReceiver *receiver = (RowReceiver *) self;
	ErrorContextCallback *spi_context = error_context_stack;

	(void) operation;
	error_context_stack = receiver->outer_context;
	QidRelationCheckResult(receiver->rel, desc, receiver->first, receiver->rel->ncolumns,
						   receiver->funcname);
	if (receiver->reader->startup != NULL)
		receiver->reader->startup(desc, receiver->arg);
	error_context_stack = spi_context;
}

/* One row; the reader's errors about the data show the caller's call, not the query */
static bool
RowReceiverReceive(TupleTableSlot *slot, DestReceiver *self)
{
	RowReceiver *receiver = (RowReceiver *) self;
	ErrorContextCallback *spi_context = error_context_stack;

	error_context_stack = receiver->outer_context;
	slot_getallattrs(slot);
	receiver->reader->row(slot->tts_values, slot->tts_isnull, receiver->arg);
	error_context_stack = spi_context;
	return true;
}

static void
ReceiverNothing(DestReceiver *self)
{
	(void) self;
}

/* A receiver of a query's rows, run through SPI: receive and startup, nothing at its end */
void
QidReceiverInit(DestReceiver *receiver, bool (*receive) (TupleTableSlot *slot, DestReceiver *self),
				void (*startup) (DestReceiver *self, int operation, TupleDesc desc))
{
	receiver->receiveSlot = receive;
	receiver->rStartup = startup;
	receiver->rShutdown = ReceiverNothing;
	receiver->rDestroy = ReceiverNothing;
	receiver->mydest = DestNone;
}

/*
 * Run query (a SELECT over rel, its chosen columns from column first of the
 * result on) as the caller through SPI, which the caller has connected, and
 * hand each row to reader->row as the executor produces it.  When rel
 * changed after the statement's snapshot, the read takes a new one (see
 * QidReadSnapshotPush).
 */
void
QidReadRows(QidRelation *rel, const char *query, int first, const QidRowReader *reader,
			void *arg, const char *funcname)
{
	RowReceiver receiver;
	SPIPlanPtr	plan;
	SPIExecuteOptions options;
	bool		pushed;
	int			ret;

	memset(&receiver, 0, sizeof(receiver));
	QidReceiverInit(&receiver.pub, RowReceiverReceive, RowReceiverStartup);
	receiver.rel = rel;
	receiver.first = first;
	receiver.reader = reader;
	receiver.arg = arg;
	receiver.funcname = funcname;
	plan = SPI_prepare(query, 0, NULL);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s", query,
			 SPI_result_code_string(SPI_result));
	memset(&options, 0, sizeof(options));
	options.read_only = true;
	options.dest = &receiver.pub;
	receiver.outer_context = error_context_stack;
	pushed = QidReadSnapshotPush(rel, NULL);
	ret = SPI_execute_plan_extended(plan, &options);
	if (pushed)
		PopActiveSnapshot();
	/* a SELECT into a receiver other than SPI's reports SPI_OK_UTILITY */
	if (ret != SPI_OK_SELECT && ret != SPI_OK_UTILITY)
		elog(ERROR, "SPI_execute_plan_extended failed: %s", SPI_result_code_string(ret));
}

/* ---- the dictionary encoder ---- */

/* One column's dictionary and, when codes become ranks, its type's ordering */
typedef struct EncodeColumn
{
	QidValueDict dict;
	ValueType  *vt;
} EncodeColumn;

/* Stop with an error naming the memory setting; what needs bytes, hint says how to need less */
void
QidCheckMemory(double bytes, const char *funcname, const char *what, const char *hint)
{
	Size		budget = QidStateMemoryBudget();

	if (bytes > (double) budget)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s exceeds qidrisk.max_state_memory", funcname),
				 errdetail("%s need %.0f kB; the budget is %zu kB.",
						   what, bytes / 1024.0, budget / 1024),
				 errhint("Raise qidrisk.max_state_memory (or work_mem when it is -1), or %s.", hint)));
}

/* The same for the encoder's users (qid_search, qar_*) */
void
QidCheckSearchMemory(double bytes, const char *funcname, const char *what)
{
	QidCheckMemory(bytes, funcname, what, "pass fewer columns or a smaller max_size");
}

/* Prepare the hashing of one column of the executed query's result */
static void
EncodeColumnInit(EncodeColumn *column, Oid type, Oid collation, const char *name,
				 bool rank, const char *funcname)
{
	QidValueDictInit(&column->dict, type, collation, name, funcname, CurrentMemoryContext);
	if (rank)
		column->vt = ValueTypeGet(CurrentMemoryContext, getBaseType(type), collation, funcname);
}

/* Renumber a column's codes by the type's ordering, NULL ranked last */
static void
RankCodes(EncodeColumn *column, int32 *codes, int64 nrows)
{
	QidValueDict *dict = &column->dict;
	int32		n = dict->ndistinct;
	int32	   *rank = palloc(sizeof(int32) * Max(n, 1));
	Datum	   *values = palloc(sizeof(Datum) * Max(n, 1));
	ValueCount *order = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(ValueCount) * Max(n, 1));
	int32		nvalues = 0;

	/* the values but NULL, each with its code (in count) */
	QidValueDictValues(dict, values);
	for (int32 c = 0; c < n; c++)
		if (c != dict->null_code)
		{
			order[nvalues].value = values[c];
			order[nvalues++].count = c;
		}
	ValueCountSort(column->vt, order, nvalues);
	for (int32 k = 0; k < nvalues; k++)
		rank[order[k].count] = k;
	if (dict->null_code >= 0)
		rank[dict->null_code] = nvalues;
	for (int64 r = 0; r < nrows; r++)
	{
		codes[r] = rank[codes[r]];
		if ((r & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	pfree(rank);
}

/*
 * The query that reads the chosen columns: "SELECT t.c1, t.c2, ...
 * [, incomplete] [, key] FROM rel AS t [ORDER BY key]", with quoted names and
 * schema-qualified operators and types.
 */
static char *
EncodeQuery(QidRelation *rel, const QidEncodeOptions *options)
{
	StringInfoData query;
	const char *key = NULL;

	initStringInfo(&query);
	appendStringInfoString(&query, "SELECT ");
	for (int i = 0; i < rel->ncolumns; i++)
		appendStringInfo(&query, "%sqidrisk_t.%s", i > 0 ? ", " : "",
						 quote_identifier(rel->names[i]));
	if (options->drop_incomplete)
	{
		/* a NULL, or an empty string of a string type, makes a row incomplete */
		appendStringInfoString(&query, ", (");
		for (int i = 0; i < rel->ncolumns; i++)
		{
			const char *q = quote_identifier(rel->names[i]);
			char		category;
			bool		preferred;

			get_type_category_preferred(getBaseType(rel->types[i]), &category, &preferred);
			appendStringInfo(&query, "%sqidrisk_t.%s IS NULL", i > 0 ? " OR " : "", q);
			if (category == TYPCATEGORY_STRING)
				appendStringInfo(&query,
								 " OR qidrisk_t.%s::pg_catalog.text OPERATOR(pg_catalog.=) ''::pg_catalog.text",
								 q);
		}
		appendStringInfoString(&query, ")");
	}
	if (options->keys)
	{
		key = options->key ? quote_identifier(options->key) : "ctid";
		appendStringInfo(&query, ", qidrisk_t.%s::pg_catalog.text", key);
	}
	appendStringInfo(&query, " FROM %s AS qidrisk_t", rel->qualified);
	/* order by the key column itself, not by its text output */
	if (key != NULL)
		appendStringInfo(&query, " ORDER BY qidrisk_t.%s", key);
	return query.data;
}

/* What QidEncodeRelation's steps share while it reads */
typedef struct EncodeReader
{
	QidRelation *rel;
	const QidEncodeOptions *options;
	const char *funcname;
	MemoryContext caller;		/* where the result lives */
	MemoryContext work;			/* the dictionaries, while encoding */
	MemoryContext batch;		/* one fetched batch's deformed values */
	QidEncoded *enc;
	EncodeColumn *columns;
	int			key_column;		/* the key's column in a row, or -1 */
	int64		capacity;		/* rows the code arrays can hold */
	int64		batch_start;	/* rows encoded before this batch */
	int			in_batch;		/* rows read in this batch */
	int64		max_rows;
	double		key_bytes;		/* the keys' text, for the budget */
} EncodeReader;

/* The result's names and arrays, and the working memory, in the caller's context */
static void
EncodeReaderInit(EncodeReader *reader, QidRelation *rel, const QidEncodeOptions *options,
				 const char *funcname)
{
	int			ncolumns = rel->ncolumns;
	int			extra = 0;
	QidEncoded *enc;

	memset(reader, 0, sizeof(EncodeReader));
	reader->rel = rel;
	reader->options = options;
	reader->funcname = funcname;
	reader->caller = CurrentMemoryContext;
	reader->key_column = -1;
	reader->max_rows = options->max_rows > 0 ? options->max_rows : PG_INT32_MAX - 2;

	enc = palloc0(sizeof(QidEncoded));
	enc->ncolumns = ncolumns;
	enc->names = palloc(sizeof(char *) * Max(ncolumns, 1));
	enc->codes = palloc0(sizeof(int32 *) * Max(ncolumns, 1));
	enc->ndistinct = palloc0(sizeof(int32) * Max(ncolumns, 1));
	for (int i = 0; i < ncolumns; i++)
		enc->names[i] = pstrdup(rel->names[i]);
	reader->enc = enc;

	/* dictionaries live only while encoding */
	reader->work = AllocSetContextCreate(reader->caller, "qidrisk encoding",
										 ALLOCSET_DEFAULT_SIZES);
	reader->batch = AllocSetContextCreate(reader->work, "qidrisk encoding batch",
										  ALLOCSET_DEFAULT_SIZES);
	reader->columns = MemoryContextAllocZero(reader->work,
											 sizeof(EncodeColumn) * Max(ncolumns, 1));
	if (options->drop_incomplete)
		extra++;
	if (options->keys)
		reader->key_column = ncolumns + extra++;
}

/* Each column's encoder and dictionary, for the types the executed query has */
static void
EncodeColumnsInit(TupleDesc desc, void *arg)
{
	EncodeReader *reader = (EncodeReader *) arg;
	MemoryContext old;

	old = MemoryContextSwitchTo(reader->work);
	for (int i = 0; i < reader->rel->ncolumns; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		EncodeColumnInit(&reader->columns[i], att->atttypid, att->attcollation,
						 reader->rel->names[i], reader->options->rank, reader->funcname);
	}
	MemoryContextSwitchTo(old);
}

/*
 * The row limit, checked per batch of FETCH_BATCH rows read: the rows
 * encoded before the batch and all the batch's rows (a limit passed is
 * reported with that count, dropped rows included, as rows read)
 */
static void
EncodeCheckRows(EncodeReader *reader)
{
	const QidEncodeOptions *options = reader->options;
	int64		needed = reader->batch_start + reader->in_batch;

	if (needed > reader->max_rows)
	{
		/* the caller may say why it limits the rows */
		if (options->too_many_rows != NULL)
			options->too_many_rows(needed, options->too_many_rows_arg);
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s handles at most " INT64_FORMAT " rows",
						reader->funcname, reader->max_rows)));
	}
}

/* Room for one more row: the code (and key) arrays grown, for the batch's rows at least */
static void
EncodeReserve(EncodeReader *reader)
{
	const QidEncodeOptions *options = reader->options;
	QidEncoded *enc = reader->enc;
	int64		needed = reader->batch_start + FETCH_BATCH;
	int64		newcap;

	if (enc->nrows < reader->capacity)
		return;

	newcap = Max(reader->capacity * 2, needed);
	newcap = Max(newcap, 1024);
	newcap = Min(newcap, reader->max_rows);
	QidCheckSearchMemory((double) newcap * (sizeof(int32) * enc->ncolumns +
											(options->keys ? sizeof(char *) : 0)) +
						 reader->key_bytes, reader->funcname, "The encoded columns");
	for (int i = 0; i < enc->ncolumns; i++)
	{
		if (enc->codes[i] == NULL)
			enc->codes[i] = MemoryContextAllocHuge(reader->caller, newcap * sizeof(int32));
		else
			enc->codes[i] = repalloc_huge(enc->codes[i], newcap * sizeof(int32));
	}
	if (options->keys)
		enc->keys = enc->keys == NULL ?
			MemoryContextAllocHuge(reader->caller, newcap * sizeof(char *)) :
			repalloc_huge(enc->keys, newcap * sizeof(char *));
	reader->capacity = newcap;
}

static void EncodeCheckMemory(EncodeReader *reader);

/* Encode one row as the executor produces it (or count it dropped) */
static void
EncodeRow(Datum *values, bool *nulls, void *arg)
{
	EncodeReader *reader = (EncodeReader *) arg;
	QidEncoded *enc = reader->enc;
	int			ncolumns = enc->ncolumns;
	MemoryContext old;
	bool		isnew;

	/* a batch ends: its rows within the limit, its detoasted copies freed */
	if (reader->in_batch == FETCH_BATCH)
	{
		CHECK_FOR_INTERRUPTS();
		EncodeCheckRows(reader);
		MemoryContextReset(reader->batch);
		EncodeCheckMemory(reader);
		reader->batch_start = enc->nrows;
		reader->in_batch = 0;
	}
	reader->in_batch++;
	if (reader->options->drop_incomplete &&
		!nulls[ncolumns] && DatumGetBool(values[ncolumns]))
	{
		enc->dropped++;
		return;
	}
	/* past the limit: the batch's end reports it */
	if (enc->nrows == reader->max_rows)
		return;
	EncodeReserve(reader);
	old = MemoryContextSwitchTo(reader->batch);
	for (int i = 0; i < ncolumns; i++)
		enc->codes[i][enc->nrows] = QidValueDictCode(&reader->columns[i].dict, values[i], nulls[i],
													 reader->work, &isnew);
	MemoryContextSwitchTo(old);
	if (reader->key_column >= 0)
	{
		char	   *key = NULL;

		if (!nulls[reader->key_column])
		{
			old = MemoryContextSwitchTo(reader->caller);
			key = TextDatumGetCString(values[reader->key_column]);
			MemoryContextSwitchTo(old);
			reader->key_bytes += strlen(key) + 1;
		}
		enc->keys[enc->nrows] = key;
	}
	enc->nrows++;
}

/* The code arrays, the keys and the dictionaries count against the budget */
static void
EncodeCheckMemory(EncodeReader *reader)
{
	int			ncolumns = reader->enc->ncolumns;
	double		bytes = (double) reader->capacity * sizeof(int32) * ncolumns + reader->key_bytes;

	for (int i = 0; i < ncolumns; i++)
		bytes += (double) reader->columns[i].dict.table->size * sizeof(QidValueDictEntry) +
			reader->columns[i].dict.bytes;
	QidCheckSearchMemory(bytes, reader->funcname, "The encoded columns and their dictionaries");
}

/*
 * Read the chosen columns of a locked relation once and dictionary-encode
 * them.  The columns must be distinct.  With drop_incomplete, rows with a
 * NULL (or, for string types, empty) value in any column are left out and
 * counted in dropped; with rank, codes are dense ranks in the type's order
 * (NULL last); with keys, each row's key (options->key, or ctid) is kept as
 * text and rows come in key order.  The result and its codes live in the
 * current memory context.
 */
QidEncoded *
QidEncodeRelation(QidRelation *rel, const QidEncodeOptions *options, const char *funcname)
{
	static const QidRowReader encoder = {EncodeColumnsInit, EncodeRow};
	EncodeReader reader;
	QidEncoded *enc;
	int			ret;

	EncodeReaderInit(&reader, rel, options, funcname);
	enc = reader.enc;
	if ((ret = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(ret));
	QidReadRows(rel, EncodeQuery(rel, options), 0, &encoder, &reader, funcname);
	SPI_finish();
	EncodeCheckRows(&reader);
	EncodeCheckMemory(&reader);

	for (int i = 0; i < rel->ncolumns; i++)
	{
		enc->ndistinct[i] = reader.columns[i].dict.ndistinct;
		if (enc->codes[i] == NULL)
			enc->codes[i] = palloc(sizeof(int32));
		else if (options->rank)
			RankCodes(&reader.columns[i], enc->codes[i], enc->nrows);
	}
	enc->memory = (Size) reader.capacity * sizeof(int32) * rel->ncolumns;
	MemoryContextDelete(reader.work);
	return enc;
}
