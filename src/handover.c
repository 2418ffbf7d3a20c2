/*
 * handover.c
 *	  How a frequency state's serialization function hands a partial state to
 *	  the finalize aggregate of a parallel query, and how the finalize takes
 *	  it over.
 *
 * PostgreSQL sends every partial state through its Gather's 64 kB tuple
 * queue as one bytea, which the leader then copies.  For an ungrouped
 * partial aggregate two shortcuts apply: the leader's own state is lent to
 * its finalize in memory (FreqStateLend), and a worker's large state is left
 * in the query's shared memory area (FreqStateShare), where the leader reads
 * it in place.  The message then only names the state.  Everything else, and
 * every state a shortcut does not fit, is serialized as usual.
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/execParallel.h"
#include "lib/ilist.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "nodes/nodeFuncs.h"
#include "storage/proc.h"

#include "qidrisk.h"

/*
 * Whether a partial state may be lent instead of serialized: only that of
 * an ungrouped partial aggregate that a parallel leader runs beneath its
 * Gather (the query's shared memory area is installed exactly then), whose
 * one output row goes up through the Gather to the finalize aggregate in
 * this same process and is taken back there before the partial aggregate's
 * context is reset.  A worker's state must travel, and so must any other
 * caller's: Citus calls the serialization function from an aggregate of its
 * own, whose split is not a partial one, and a partial aggregate above a
 * Gather (which PostgreSQL does not plan) would not see the area.  Should a
 * lent state's message still reach another process or query, taking it back
 * fails with an error, never with a wrong answer.
 */
static bool
LeaderKeepsPartialState(FunctionCallInfo fcinfo)
{
	AggState   *aggstate;

	if (IsParallelWorker() || fcinfo->context == NULL || !IsA(fcinfo->context, AggState))
		return false;
	aggstate = (AggState *) fcinfo->context;
	return aggstate->ss.ps.state->es_query_dsa != NULL &&
		aggstate->aggsplit == AGGSPLIT_INITIAL_SERIAL &&
		aggstate->aggstrategy == AGG_PLAIN;
}

/*
 * The query's shared memory area, if the caller is the ungrouped partial
 * aggregate of a parallel worker: its one output row goes through the
 * Gather to the leader's finalize aggregate, which can read a state from the
 * area until that Gather is shut down, after its final functions.
 */
static dsa_area *
WorkerSharedArea(FunctionCallInfo fcinfo)
{
	AggState   *aggstate;

	if (!IsParallelWorker() || fcinfo->context == NULL || !IsA(fcinfo->context, AggState))
		return NULL;
	aggstate = (AggState *) fcinfo->context;
	if (aggstate->aggsplit != AGGSPLIT_INITIAL_SERIAL || aggstate->aggstrategy != AGG_PLAIN)
		return NULL;
	return aggstate->ss.ps.state->es_query_dsa;
}

/*
 * Whether slot holds a tuple with a bytea column equal to message.  Equal,
 * not the same: the finalize aggregate reads its first input tuple from a
 * copy.
 */
static bool
SlotCarriesMessage(TupleTableSlot *slot, bytea *message)
{
	TupleDesc	desc;

	if (slot == NULL || TTS_EMPTY(slot))
		return false;
	desc = slot->tts_tupleDescriptor;
	slot_getallattrs(slot);
	for (int i = 0; i < desc->natts; i++)
	{
		bytea	   *column;

		if (slot->tts_isnull[i] || TupleDescAttr(desc, i)->atttypid != BYTEAOID)
			continue;
		column = (bytea *) DatumGetPointer(slot->tts_values[i]);
		/* the message is short and plain: compressed or external columns are others */
		if (VARATT_IS_EXTENDED(column) && !VARATT_IS_SHORT(column))
			continue;
		if (VARSIZE_ANY_EXHDR(column) == VARSIZE_ANY_EXHDR(message) &&
			memcmp(VARDATA_ANY(column), VARDATA_ANY(message), VARSIZE_ANY_EXHDR(message)) == 0)
			return true;
	}
	return false;
}

typedef struct GatherSearch
{
	bytea	   *message;		/* the message naming the state */
	struct ParallelExecutorInfo **pei;	/* the parallel state of the Gather holding it */
} GatherSearch;

/* planstate_tree_walker callback: find the Gather whose current tuple carries the message */
static bool
FindDeliveringGather(PlanState *planstate, void *arg)
{
	GatherSearch *search = (GatherSearch *) arg;

	if (planstate == NULL)
		return false;
	if (IsA(planstate, GatherState))
	{
		GatherState *gather = (GatherState *) planstate;

		if (gather->pei != NULL && SlotCarriesMessage(gather->funnel_slot, search->message))
		{
			search->pei = &gather->pei;
			return true;
		}
	}
	else if (IsA(planstate, GatherMergeState))
	{
		GatherMergeState *gather = (GatherMergeState *) planstate;

		for (int i = 1; gather->pei != NULL && gather->gm_slots != NULL && i <= gather->nreaders; i++)
			if (SlotCarriesMessage(gather->gm_slots[i], search->message))
			{
				search->pei = &gather->pei;
				return true;
			}
	}
	return planstate_tree_walker(planstate, FindDeliveringGather, arg);
}

/*
 * A chunk of a Gather's shared memory that a finalize aggregate reads a
 * worker's state from, to be freed when the aggregate's context is reset
 */
typedef struct SharedChunk
{
	dlist_node	node;
	struct ParallelExecutorInfo **pei;	/* the Gather's, NULL once it is shut down */
	dsa_area   *area;
	dsa_pointer chunk;
	MemoryContextCallback release;
} SharedChunk;

/* The chunks in use, so that a chunk read by several aggregates is freed once */
static dlist_head shared_chunks = DLIST_STATIC_INIT(shared_chunks);

/*
 * Memory context reset callback: free the chunk if its Gather still holds
 * the area, as when the plan is rescanned (a new scan's workers leave new
 * chunks).  Once the Gather is shut down, at the end of the query, the area
 * is gone and took the chunk with it; during an abort nothing may be touched.
 */
static void
ReleaseSharedChunk(void *arg)
{
	SharedChunk *use = (SharedChunk *) arg;

	dlist_delete(&use->node);
	if (IsTransactionState() && *use->pei != NULL && (*use->pei)->area == use->area)
		dsa_free(use->area, use->chunk);
}

/*
 * The serialized state a worker left in shared memory (FreqStateShare).  The
 * message must name this process and statement, and the area is that of the
 * Gather below this finalize aggregate whose current tuple carries the
 * message: proof that the message came from this query's workers, so that
 * its address is one of this area's.  The chunk is freed with the
 * aggregate's context (ReleaseSharedChunk).
 */
static bytea *
SharedState(FunctionCallInfo fcinfo, MemoryContext aggcontext, bytea *message,
			const FreqSharedMessage *shared)
{
	GatherSearch search = {message, NULL};
	dsa_area   *area;
	bytea	   *state;
	dlist_iter	iter;
	SharedChunk *use;

	if (shared->leader_pid == MyProcPid &&
		shared->statement_start == GetCurrentStatementStartTimestamp() &&
		DsaPointerIsValid(shared->chunk) &&
		fcinfo->context != NULL && IsA(fcinfo->context, AggState))
		(void) planstate_tree_walker((PlanState *) fcinfo->context, FindDeliveringGather, &search);
	if (search.pei == NULL)
		FreqStateCorrupt("The state lies in shared memory that this aggregate cannot reach.");
	area = (*search.pei)->area;
	state = (bytea *) dsa_get_address(area, shared->chunk);
	if (shared->length < VARHDRSZ || VARSIZE(state) != shared->length)
		FreqStateCorrupt("The state in shared memory does not have the length its message says.");

	dlist_foreach(iter, &shared_chunks)
	{
		use = dlist_container(SharedChunk, node, iter.cur);
		if (use->area == area && use->chunk == shared->chunk)
			return state;
	}
	use = MemoryContextAlloc(aggcontext, sizeof(SharedChunk));
	use->pei = search.pei;
	use->area = area;
	use->chunk = shared->chunk;
	use->release.func = ReleaseSharedChunk;
	use->release.arg = use;
	MemoryContextRegisterResetCallback(aggcontext, &use->release);
	dlist_push_tail(&shared_chunks, &use->node);
	return state;
}

/* The serialization function's message for state: lent, shared or serialized */
bytea *
FreqStateHandOver(FunctionCallInfo fcinfo, FreqState *state)
{
	dsa_area   *area;

	if (LeaderKeepsPartialState(fcinfo))
		return FreqStateLend(state);
	area = WorkerSharedArea(fcinfo);
	if (area != NULL && MyProc->lockGroupLeader != NULL)
		return FreqStateShare(state, area, MyProc->lockGroupLeader->pid,
							  GetCurrentStatementStartTimestamp());
	return FreqStateSerialize(state);
}

/* The state a serialization function's message hands over (FreqStateHandOver) */
FreqState *
FreqStateTakeOver(FunctionCallInfo fcinfo, MemoryContext aggcontext, bytea *message)
{
	FreqSharedMessage shared;

	if (FreqStateSharedMessage(message, &shared))
		return FreqStateDeserializeShared(aggcontext,
										  SharedState(fcinfo, aggcontext, message, &shared));
	return FreqStateDeserialize(aggcontext, message);
}
