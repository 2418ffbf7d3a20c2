/*
 * handover.c
 *	  How a frequency state's serialization function hands a partial state to
 *	  the finalize aggregate of a parallel query, and how the finalize takes
 *	  it over.
 *
 * PostgreSQL sends every partial state through its Gather's 64 kB tuple
 * queue as one bytea, which the leader then copies.  For an ungrouped
 * partial aggregate two shortcuts apply: the leader's own state is lent to
 * its finalize in memory (FreqStateLend), and a worker's large state goes
 * to the leader through a temporary file (FreqStateSendFile).  The message
 * then only names the state.  Everything else, and every state a shortcut
 * does not fit, is serialized as usual.
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "storage/proc.h"

#include "freqengine.h"
#include "handover.h"
#include "qidrisk.h"

/*
 * Whether the caller is the ungrouped partial aggregate (the initial,
 * serializing split of a plain aggregation) of a parallel query; its one
 * output row goes up through the Gather to the finalize aggregate in the
 * leader.  Citus calls the serialization function from an aggregate of its
 * own, whose split is not a partial one.
 */
static bool
UngroupedPartialAggregate(FunctionCallInfo fcinfo)
{
	AggState   *aggstate;

	if (fcinfo->context == NULL || !IsA(fcinfo->context, AggState))
		return false;
	aggstate = (AggState *) fcinfo->context;
	return aggstate->aggsplit == AGGSPLIT_INITIAL_SERIAL &&
		aggstate->aggstrategy == AGG_PLAIN;
}

/*
 * Whether a partial state may be lent instead of serialized: only that of
 * an ungrouped partial aggregate that a parallel leader runs beneath its
 * Gather (the query's shared memory area is installed exactly then), whose
 * one output row goes up through the Gather to the finalize aggregate in
 * this same process and is taken back there before the partial aggregate's
 * context is reset.  A partial aggregate above a Gather (which PostgreSQL
 * does not plan) would not see the area.  Should a lent state's message
 * still reach another process or query, taking it back fails with an error,
 * never with a wrong answer.
 */
static bool
LeaderKeepsPartialState(FunctionCallInfo fcinfo)
{
	return !IsParallelWorker() && UngroupedPartialAggregate(fcinfo) &&
		((AggState *) fcinfo->context)->ss.ps.state->es_query_dsa != NULL;
}

/* The serialization function's message for state: lent, in a file or serialized */
bytea *
FreqStateHandOver(FunctionCallInfo fcinfo, FreqState *state)
{
	if (LeaderKeepsPartialState(fcinfo))
		return FreqStateLend(state);
	if (IsParallelWorker() && UngroupedPartialAggregate(fcinfo) &&
		MyProc->lockGroupLeader != NULL)
	{
		bytea	   *message = FreqStateSendFile(state, MyProc->lockGroupLeader->pid,
												GetCurrentStatementStartTimestamp());

		if (message != NULL)
			return message;
	}
	return FreqStateSerialize(state);
}

/*
 * Whether a parallel plan has started since the last transaction end, so
 * that workers may have left files: true at first, as the library may be
 * loaded by such a plan after it started
 */
static bool parallel_plan_started = true;

static ExecutorStart_hook_type prev_ExecutorStart = NULL;

/* ExecutorStart hook: note a parallel plan, before it launches workers */
static void
NoteParallelPlan(QueryDesc *queryDesc, int eflags)
{
	if (queryDesc->plannedstmt->parallelModeNeeded)
		parallel_plan_started = true;
	if (prev_ExecutorStart)
		prev_ExecutorStart(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
}

/*
 * Whether this process may have files that parallel workers left it: it has
 * led workers, and started a parallel plan since the last transaction end
 * (so that other transactions pay no directory lookups)
 */
static bool
MayHaveHandoverFiles(void)
{
	return parallel_plan_started && MyProc != NULL && MyProc->lockGroupLeader == MyProc;
}

/*
 * Transaction callback: at its end, a process that has led parallel
 * workers deletes what they left for it
 */
static void
AtTransactionEnd(XactEvent event, void *arg pg_attribute_unused())
{
	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PREPARE)
		return;
	if (MayHaveHandoverFiles())
		FreqStateRemoveHandoverFiles(InvalidSubTransactionId);
	parallel_plan_started = false;
}

/*
 * Subtransaction callback: a rolled-back subtransaction's parallel queries
 * (their workers have exited) leave nothing behind, so that a loop of
 * failing exception blocks does not pile files up.  While a parallel query
 * of an enclosing level runs, its workers' files cannot be told apart and
 * stay to the end of the transaction.
 */
static void
AtSubTransactionEnd(SubXactEvent event, SubTransactionId subid,
					SubTransactionId parent pg_attribute_unused(),
					void *arg pg_attribute_unused())
{
	if (event == SUBXACT_EVENT_ABORT_SUB && MayHaveHandoverFiles() &&
		!ParallelContextActive())
		FreqStateRemoveHandoverFiles(subid);
}

/* Have a parallel leader delete the hand-over files at the end of (sub)transactions */
void
QidHandoverRegisterCallbacks(void)
{
	prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = NoteParallelPlan;
	RegisterXactCallback(AtTransactionEnd, NULL);
	RegisterSubXactCallback(AtSubTransactionEnd, NULL);
}
