/*
 * aggcommon.c
 *	  Helpers every qidrisk aggregate shares: its name and memory context,
 *	  and the constant parameter some aggregates take (k, a domain size, a
 *	  target probability).
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "aggcommon.h"
#include "qidrisk.h"

/* Name of the aggregate being computed, for error messages */
const char *
AggregateName(FunctionCallInfo fcinfo)
{
	Aggref	   *aggref = AggGetAggref(fcinfo);

	if (aggref != NULL)
		return get_func_name(aggref->aggfnoid);
	return "qidrisk aggregate";
}

/* Return the aggregate memory context, refusing plain function calls */
MemoryContext
AggregateContext(FunctionCallInfo fcinfo)
{
	MemoryContext aggcontext;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("qidrisk transition functions can only be called by an aggregate")));
	return aggcontext;
}

/* The declared name of aggregate argument argno (1-based), or "parameter" */
static const char *
ParameterName(FunctionCallInfo fcinfo, int argno)
{
	Aggref	   *aggref = AggGetAggref(fcinfo);
	HeapTuple	tuple;
	const char *name = "parameter";

	if (aggref == NULL)
		return name;
	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(aggref->aggfnoid));
	if (HeapTupleIsValid(tuple))
	{
		Oid		   *types;
		char	  **names;
		char	   *modes;
		int			nargs = get_func_arg_info(tuple, &types, &names, &modes);

		if (names != NULL && argno <= nargs && names[argno - 1][0] != '\0')
			name = names[argno - 1];
		ReleaseSysCache(tuple);
	}
	return name;
}

/*
 * The last parameter read the slow way: a row whose call and argument carry
 * the same Datum as that row, into a state that already holds the value then
 * read, needs no type lookup (every state's first row takes the slow way).
 */
static FmgrInfo *last_param_flinfo = NULL;
static int	last_param_argno = -1;
static Datum last_param_datum = (Datum) 0;
static double last_param_value = 0;

/*
 * Read the constant parameter in argument argno, check that it is not NULL
 * and stays the same on every row, and remember it as a double.
 */
void
RememberAggParameter(FunctionCallInfo fcinfo, int argno,
					 bool *has_param, double *param)
{
	Oid			type;
	double		value;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be NULL", ParameterName(fcinfo, argno))));
	if (*has_param && fcinfo->flinfo == last_param_flinfo && argno == last_param_argno &&
		PG_GETARG_DATUM(argno) == last_param_datum && *param == last_param_value)
		return;
	type = get_fn_expr_argtype(fcinfo->flinfo, argno);
	switch (type)
	{
		case INT4OID:
			value = (double) PG_GETARG_INT32(argno);
			break;
		case INT8OID:
			value = (double) PG_GETARG_INT64(argno);
			break;
		case FLOAT8OID:
			value = PG_GETARG_FLOAT8(argno);
			if (isnan(value) || isinf(value))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("%s must be a finite number, not %g",
								ParameterName(fcinfo, argno), value)));
			break;
		default:
			elog(ERROR, "qidrisk: unexpected parameter type %u", type);
			value = 0;			/* keep the compiler quiet */
	}

	last_param_flinfo = fcinfo->flinfo;
	last_param_argno = argno;
	last_param_datum = PG_GETARG_DATUM(argno);
	last_param_value = value;
	if (!*has_param)
	{
		*has_param = true;
		*param = value;
	}
	else if (*param != value)
	{
		const char *name = ParameterName(fcinfo, argno);

		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be the same for every row of a group", name),
				 errdetail("Saw %s = %g and then %s = %g.", name, *param, name, value)));
	}
}

/* Combine two partial states' parameters, which must agree */
void
MergeAggParameter(bool *has_param, double *param, bool from_has_param, double from_param)
{
	if (!*has_param)
	{
		*has_param = from_has_param;
		*param = from_param;
	}
	else if (from_has_param && from_param != *param)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the constant argument of a qidrisk aggregate must be the same for every row of a group"),
				 errdetail("Partial aggregates saw %g and %g.", *param, from_param)));
}
