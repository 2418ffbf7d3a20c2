/*
 * checkhistory.c
 *	  qid_check: evaluate a publication policy with the caller's rights and,
 *	  when asked, record the run in qidrisk_internal.check_history; the
 *	  history's provenance trigger.
 *
 * The rules are evaluated by the PL/pgSQL function qidrisk_check_evaluate,
 * run through SPI as the caller, so privileges and row-level security hold as
 * for any other reader.  Nobody but the history table's owner (the bootstrap
 * superuser) may write the history: the row of a run is inserted here, with
 * every value filled in by this code (time, calling role, table, QID, policy,
 * results), under the owner's identity in a restricted security context, as
 * PostgreSQL does for the maintenance of a table (REFRESH MATERIALIZED VIEW,
 * VACUUM).  Nothing a role can attach to the table runs with the caller's
 * rights: only a superuser can attach anything to a table a superuser owns.
 *
 * The extension's owner may insert rows too, so that its pg_restore of a dump
 * keeps the history.  The table's trigger (qidrisk_check_history_provenance)
 * tells the two apart: a row inserted while RecordCheck runs its INSERT has
 * restored_by NULL; any other row names the role that inserted it (or keeps
 * the name a restored row carries).  So a row with restored_by NULL is always
 * the record of a real run in this database.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "commands/trigger.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "nodes/parsenodes.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "boundary.h"
#include "qidrisk.h"

PG_FUNCTION_INFO_V1(qidrisk_qid_check);
PG_FUNCTION_INFO_V1(qidrisk_qid_assert);
PG_FUNCTION_INFO_V1(qidrisk_check_history_provenance);

/* Whether the INSERT running now is RecordCheck's own */
static bool recording_check = false;

#define CHECK_COLUMNS 6

/* Insert the history row of a run as the history table's owner */
static void
RecordCheck(Oid rel, Datum qid, Datum policy, Datum results, bool passed)
{
	Oid			history = get_relname_relid("check_history",
											get_namespace_oid(QIDRISK_INTERNAL, false));
	HeapTuple	classtup;
	Oid			owner;
	Oid			caller;
	int			sec_context;
	int			nestlevel;
	char	   *relnsp;
	char	   *relname;
	const char *query;
	Oid			types[7] = {TIMESTAMPTZOID, NAMEOID, TEXTOID, TEXTARRAYOID, JSONBOID, JSONBOID, BOOLOID};
	Datum		values[7];
	int			rc;

	if (!OidIsValid(history))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation \"" QIDRISK_INTERNAL ".check_history\" does not exist")));
	classtup = SearchSysCache1(RELOID, ObjectIdGetDatum(history));
	if (!HeapTupleIsValid(classtup))
		elog(ERROR, "cache lookup failed for relation %u", history);
	owner = ((Form_pg_class) GETSTRUCT(classtup))->relowner;
	ReleaseSysCache(classtup);

	/* the checked table, always schema-qualified (it was locked by the evaluation) */
	relnsp = get_namespace_name(get_rel_namespace(rel));
	relname = get_rel_name(rel);
	if (relnsp == NULL || relname == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", rel)));

	GetUserIdAndSecContext(&caller, &sec_context);
	values[0] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	values[1] = DirectFunctionCall1(namein, CStringGetDatum(GetUserNameFromId(caller, false)));
	values[2] = CStringGetTextDatum(quote_qualified_identifier(relnsp, relname));
	values[3] = qid;
	values[4] = policy;
	values[5] = results;
	values[6] = BoolGetDatum(passed);
	query = "INSERT INTO " QIDRISK_INTERNAL ".check_history "
		"(checked_at, checked_by, relation, qid, policy, results, passed) "
		"VALUES ($1, $2, $3, $4, $5, $6, $7)";

	/* as the owner, with nothing of the caller's session able to interfere */
	nestlevel = NewGUCNestLevel();
	SetUserIdAndSecContext(owner, sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	recording_check = true;
	PG_TRY();
	{
		rc = SPI_execute_with_args(query, 7, types, values, NULL, false, 0);
	}
	PG_FINALLY();
	{
		recording_check = false;
	}
	PG_END_TRY();
	if (rc != SPI_OK_INSERT || SPI_processed != 1)
		elog(ERROR, "qid_check: recording the run returned %s", SPI_result_code_string(rc));
	AtEOXact_GUC(false, nestlevel);
	SetUserIdAndSecContext(caller, sec_context);
}

/*
 * qid_check(rel, qid, policy, record_history): one row per rule of the policy
 * (rule, setting, measured, threshold, passed); record_history => true also
 * appends the run to the check history.
 */
static Datum
QidCheck(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			argtypes[3] = {REGCLASSOID, TEXTARRAYOID, JSONBOID};
	Datum		args[3];
	char		argnulls[3];
	bool		record;
	bool		with_note;
	bool		passed = true;
	StringInfoData results;
	int			rc;

	for (int i = 0; i < 3; i++)
	{
		args[i] = PG_ARGISNULL(i) ? (Datum) 0 : PG_GETARG_DATUM(i);
		argnulls[i] = PG_ARGISNULL(i) ? 'n' : ' ';
	}

	InitMaterializedSRF(fcinfo, 0);
	/* qid_check has 0.1.0's five columns; qidrisk_check_run adds the note */
	with_note = rsinfo->setDesc->natts == CHECK_COLUMNS;
	if (rsinfo->setDesc->natts != CHECK_COLUMNS && rsinfo->setDesc->natts != CHECK_COLUMNS - 1)
		elog(ERROR, "qid_check: unexpected %d result columns", rsinfo->setDesc->natts);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "qid_check: SPI_connect failed");

	if (PG_ARGISNULL(3))
	{
		/* a NULL table, QID or policy is reported first, as by the evaluation */
		rc = SPI_execute_with_args("SELECT " QIDRISK_INTERNAL ".qidrisk_check_validate($1, $2, $3)",
								   3, argtypes, args, argnulls, false, 0);
		if (rc != SPI_OK_SELECT)
			elog(ERROR, "qid_check: validation returned %s", SPI_result_code_string(rc));
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("record_history must not be NULL")));
	}
	record = PG_GETARG_BOOL(3);

	/* the evaluation, as the caller; the last column is the row's entry in results */
	rc = SPI_execute_with_args(psprintf("SELECT e.rule, e.setting, e.measured, e.threshold, e.passed, e.note, "
										"pg_catalog.jsonb_build_object('rule', e.rule, 'setting', e.setting, "
										"'measured', e.measured, 'threshold', e.threshold, 'passed', e.passed) "
										"OPERATOR(pg_catalog.||) CASE WHEN e.note IS NULL THEN '{}'::pg_catalog.jsonb "
										"ELSE pg_catalog.jsonb_build_object('note', e.note) END "
										"FROM " QIDRISK_INTERNAL ".qidrisk_check_evaluate($1, $2, $3) AS e"),
							   3, argtypes, args, argnulls, false, 0);
	if (rc != SPI_OK_SELECT || SPI_tuptable->tupdesc->natts != CHECK_COLUMNS + 1)
		elog(ERROR, "qid_check: the evaluation returned %s", SPI_result_code_string(rc));

	initStringInfo(&results);
	appendStringInfoChar(&results, '[');
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[row];
		Datum		values[CHECK_COLUMNS + 1];
		bool		nulls[CHECK_COLUMNS + 1];

		CHECK_FOR_INTERRUPTS();
		heap_deform_tuple(tuple, SPI_tuptable->tupdesc, values, nulls);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		if (!with_note && !nulls[5])
			ereport(WARNING,
					(errmsg("policy rule %s could not be measured: %s",
							TextDatumGetCString(values[0]), TextDatumGetCString(values[5])),
					 errdetail("The rule is reported as failed, with measured NULL.")));
		/* a rule whose result is NULL has not failed, as before */
		if (!nulls[4] && !DatumGetBool(values[4]))
			passed = false;
		if (record)
		{
			if (row > 0)
				appendStringInfoString(&results, ", ");
			appendStringInfoString(&results,
								   DatumGetCString(DirectFunctionCall1(jsonb_out, values[CHECK_COLUMNS])));
		}
	}
	appendStringInfoChar(&results, ']');

	if (record)
		RecordCheck(DatumGetObjectId(args[0]), args[1], args[2],
					DirectFunctionCall1(jsonb_in, CStringGetDatum(results.data)), passed);
	SPI_finish();
	return (Datum) 0;
}

/* qid_check under a boundary: a mistake in the table, QID or policy shows the call alone */
Datum
qidrisk_qid_check(PG_FUNCTION_ARGS)
{
	return QidCallBounded(QidCheck, fcinfo);
}

/*
 * CALL qid_assert(rel, qid, policy, record_history): silent when every rule
 * of the policy holds, else SQLSTATE QR001 naming the failed rules.  With
 * record_history => true the history row is committed before the error, so a
 * failing night stays on record; that needs a CALL allowed to commit, which a
 * procedure in C can see before it evaluates anything.
 */
static Datum
QidAssert(PG_FUNCTION_ARGS)
{
	bool		atomic = !(fcinfo->context && IsA(fcinfo->context, CallContext)) ||
		((CallContext *) fcinfo->context)->atomic;
	bool		record = !PG_ARGISNULL(3) && PG_GETARG_BOOL(3);
	Oid			argtypes[4] = {REGCLASSOID, TEXTARRAYOID, JSONBOID, BOOLOID};
	Datum		args[4];
	char		argnulls[4];
	char	   *message = NULL;
	char	   *detail = NULL;
	int			rc;

	/* the call's memory outlives a commit of a non-atomic CALL, as PL/pgSQL's does */
	MemoryContext callcxt = CurrentMemoryContext;

	if (record && (atomic || IsSubTransaction()))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_TERMINATION),
				 errmsg("qid_assert cannot commit the history row %s",
						IsSubTransaction() ? "inside a subtransaction (a block with an EXCEPTION clause, or a savepoint)" :
						IsTransactionBlock() ? "inside a transaction block" :
						"from a function or another context that cannot commit"),
				 errdetail("With record_history => true it commits the row of the run before it raises QR001, "
						   "so that a failing run stays on record."),
				 errhint("CALL it at top level outside BEGIN ... COMMIT, or inside the transaction use "
						 "SELECT * FROM qid_check(..., record_history => true), whose row commits with the transaction.")));

	for (int i = 0; i < 4; i++)
	{
		args[i] = PG_ARGISNULL(i) ? (Datum) 0 : PG_GETARG_DATUM(i);
		argnulls[i] = PG_ARGISNULL(i) ? 'n' : ' ';
	}
	if (SPI_connect_ext(atomic ? 0 : SPI_OPT_NONATOMIC) != SPI_OK_CONNECT)
		elog(ERROR, "qid_assert: SPI_connect failed");
	rc = SPI_execute_with_args("SELECT r.message, r.detail FROM " QIDRISK_INTERNAL
							   ".qidrisk_check_report($1, $2, $3, $4) AS r",
							   4, argtypes, args, argnulls, false, 0);
	if (rc != SPI_OK_SELECT || SPI_tuptable->tupdesc->natts != 2)
		elog(ERROR, "qid_assert: the check returned %s", SPI_result_code_string(rc));
	if (SPI_processed > 0)
	{
		/* copied out of SPI's memory, which the commit and SPI_finish release */
		message = MemoryContextStrdup(callcxt, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
		detail = MemoryContextStrdup(callcxt, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2));
	}
	if (record)
		SPI_commit();
	SPI_finish();

	if (message != NULL)
		ereport(ERROR,
				(errcode(MAKE_SQLSTATE('Q', 'R', '0', '0', '1')),
				 errmsg_internal("%s", message),
				 errdetail_internal("%s", detail),
				 errhint("qid_check() with the same arguments lists every rule.")));
	PG_RETURN_VOID();
}

/*
 * Trigger BEFORE INSERT OR UPDATE FOR EACH ROW on the history: restored_by is
 * NULL for the row RecordCheck inserts, else the role that inserts the row,
 * unless the row already names one (a restored row keeps its restorer).
 */
Datum
qidrisk_check_history_provenance(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	TupleDesc	desc;
	HeapTuple	tuple;
	int			attnum;
	Datum		value = (Datum) 0;
	bool		isnull = true;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) || TRIGGER_FIRED_BY_DELETE(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("qidrisk_check_history_provenance must be a BEFORE INSERT OR UPDATE row trigger")));
	desc = RelationGetDescr(trigdata->tg_relation);
	tuple = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ? trigdata->tg_newtuple : trigdata->tg_trigtuple;
	attnum = SPI_fnumber(desc, "restored_by");
	if (attnum <= 0 || TupleDescAttr(desc, attnum - 1)->atttypid != NAMEOID)
		elog(ERROR, "qidrisk_check_history_provenance: the table has no restored_by name column");
	if (!recording_check)
	{
		value = heap_getattr(tuple, attnum, desc, &isnull);
		if (isnull)
		{
			value = DirectFunctionCall1(namein, CStringGetDatum(GetUserNameFromId(GetUserId(), false)));
			isnull = false;
		}
	}
	return PointerGetDatum(heap_modify_tuple_by_cols(tuple, desc, 1, &attnum, &value, &isnull));
}

/* qid_assert under a boundary: a mistake in the table, QID or policy shows the call alone */
Datum
qidrisk_qid_assert(PG_FUNCTION_ARGS)
{
	return QidCallBounded(QidAssert, fcinfo);
}
