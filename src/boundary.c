/*
 * boundary.c
 *	  The boundary between a user's call and qidrisk's insides: an error
 *	  caused by the user's input shows the user's call, not the internal
 *	  functions and generated SQL it went through.
 *
 * A documented function that runs SQL or PL/pgSQL of qidrisk's own (through
 * SPI, or a body in qidrisk_internal) runs it under a boundary: an error
 * context callback that, for an error of a user-input class, adds a marker
 * line below the context lines of qidrisk's insides and above the caller's
 * (its procedure, its pg_cron job's statement).  The boundary catches the
 * error, drops the context down to its marker (and the generated query the
 * error points into) and throws the error again, otherwise unchanged.  Errors
 * of other classes (internal errors, resource limits, cancellation) keep their
 * whole context, which is what a bug report needs.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_proc.h"
#include "utils/elog.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "boundary.h"
#include "compat.h"
#include "qidrisk.h"

PG_FUNCTION_INFO_V1(qidrisk_call_internal);

typedef struct QidBoundary
{
	ErrorContextCallback callback;
	volatile bool marked;		/* the callback has added the marker */
	char		mark[64];		/* this boundary's marker line */
} QidBoundary;

/* Tells the markers of nested boundaries apart */
static uint64 boundary_count = 0;

/*
 * Whether an error is the caller's input at fault, by SQLSTATE: data
 * exceptions (22), undefined or duplicate objects, privileges and the like
 * (42; a syntax error there is in SQL qidrisk generated, so a bug), a schema
 * that does not exist (3F), an unsupported feature (0A000) and a missing
 * prerequisite such as statistics (55000)
 */
static bool
UserInputError(int sqlerrcode)
{
	int			category = ERRCODE_TO_CATEGORY(sqlerrcode);

	if (category == ERRCODE_DATA_EXCEPTION || category == ERRCODE_INVALID_SCHEMA_NAME)
		return true;
	if (category == ERRCODE_SYNTAX_ERROR_OR_ACCESS_RULE_VIOLATION)
		return sqlerrcode != ERRCODE_SYNTAX_ERROR;
	return sqlerrcode == ERRCODE_FEATURE_NOT_SUPPORTED ||
		sqlerrcode == ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE;
}

/* Mark where qidrisk's context lines end, for errors of the user's input only */
static void
BoundaryCallback(void *arg)
{
	QidBoundary *boundary = (QidBoundary *) arg;

	if (!UserInputError(geterrcode()))
		return;
	errcontext("%s", boundary->mark);
	boundary->marked = true;
}

/* The context lines after the marker line, or NULL if the marker is absent */
static const char *
AfterMark(const char *context, const char *mark)
{
	size_t		len = strlen(mark);

	for (const char *p = strstr(context, mark); p != NULL; p = strstr(p + 1, mark))
	{
		/* a whole line only */
		if ((p == context || p[-1] == '\n') && (p[len] == '\n' || p[len] == '\0'))
			return p[len] == '\n' ? p + len + 1 : p + len;
	}
	return NULL;
}

/* In PG_CATCH: drop the context inside the boundary and throw the error again */
pg_noreturn static void
BoundaryRethrow(QidBoundary *boundary, MemoryContext cxt)
{
	ErrorData  *edata;
	const char *outer;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	FlushErrorState();
	outer = edata->context ? AfterMark(edata->context, boundary->mark) : NULL;
	if (outer != NULL)
	{
		edata->context = *outer ? pstrdup(outer) : NULL;
		/* the generated statement the error points into */
		edata->internalquery = NULL;
		edata->internalpos = 0;
	}
	ReThrowError(edata);
}

/*
 * Call body(fcinfo) under a boundary: an error of the user's input it raises
 * shows no context from inside it.
 */
Datum
QidCallBounded(PGFunction body, FunctionCallInfo fcinfo)
{
	MemoryContext cxt = CurrentMemoryContext;
	QidBoundary boundary;
	Datum		result;

	boundary.marked = false;
	snprintf(boundary.mark, sizeof(boundary.mark),
			 "(end of qidrisk's internal context " UINT64_FORMAT ")", ++boundary_count);
	PG_TRY();
	{
		boundary.callback.callback = BoundaryCallback;
		boundary.callback.arg = &boundary;
		boundary.callback.previous = error_context_stack;
		error_context_stack = &boundary.callback;
		result = body(fcinfo);
		error_context_stack = boundary.callback.previous;
	}
	PG_CATCH();
	{
		/*
		 * PG_CATCH has already restored error_context_stack.  Other errors go
		 * on untouched (nothing copied: it may be out of memory); geterrcode
		 * reads the error, still on the error stack.
		 */
		if (!boundary.marked || !UserInputError(geterrcode()))
			PG_RE_THROW();
		BoundaryRethrow(&boundary, cxt);
	}
	PG_END_TRY();
	return result;
}

/*
 * The function of qidrisk_internal with the name and argument types of the
 * documented function fn: its body
 */
static Oid
InternalBody(Oid fn)
{
	HeapTuple	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
	Form_pg_proc proc;
	Oid			body;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for function %u", fn);
	proc = (Form_pg_proc) GETSTRUCT(tuple);
	body = GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid,
						   NameGetDatum(&proc->proname),
						   PointerGetDatum(&proc->proargtypes),
						   ObjectIdGetDatum(get_namespace_oid(QIDRISK_INTERNAL, false)));
	if (!OidIsValid(body))
		elog(ERROR, "%s has no body in schema " QIDRISK_INTERNAL,
			 format_procedure(fn));
	ReleaseSysCache(tuple);
	return body;
}

/* Call the body with the documented function's arguments, result set and collation */
static Datum
CallBody(PG_FUNCTION_ARGS)
{
	FmgrInfo   *body = (FmgrInfo *) fcinfo->flinfo->fn_extra;
	LOCAL_FCINFO(inner, FUNC_MAX_ARGS);
	Datum		result;

	if (body == NULL)
	{
		body = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(FmgrInfo));
		fmgr_info_cxt(InternalBody(fcinfo->flinfo->fn_oid), body, fcinfo->flinfo->fn_mcxt);
		/* the call's expression resolves a polymorphic body's types */
		body->fn_expr = fcinfo->flinfo->fn_expr;
		fcinfo->flinfo->fn_extra = body;
	}
	InitFunctionCallInfoData(*inner, body, fcinfo->nargs, fcinfo->fncollation,
							 fcinfo->context, fcinfo->resultinfo);
	memcpy(inner->args, fcinfo->args, sizeof(NullableDatum) * fcinfo->nargs);
	result = FunctionCallInvoke(inner);
	fcinfo->isnull = inner->isnull;
	return result;
}

/*
 * The documented name of a function written in SQL or PL/pgSQL: it calls
 * the body of the same name and arguments in qidrisk_internal under a
 * boundary, so that a mistake in the call shows the call alone.  A set
 * returned by the body goes straight to the caller's ReturnSetInfo.
 */
Datum
qidrisk_call_internal(PG_FUNCTION_ARGS)
{
	return QidCallBounded(CallBody, fcinfo);
}
