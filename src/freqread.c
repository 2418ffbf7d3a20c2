/*
 * freqread.c
 *	  Reading a frequency state's figures: its counters and its class sizes.
 *
 * A reader first counts whatever the state holds back (FlushHeldRows); a
 * state with a row log and a single table is counted without moving either
 * (CountLogInPlace), a spilled or combined one by streaming its classes.
 * This file owns the counters' accessors (FreqStateCounts,
 * FreqStateClasses, FreqStateSizeHint, FreqStateSpilled) and visiting the
 * class sizes (FreqStateVisit) and the classes in ascending order
 * (FreqStateVisitAscending); the state itself is freqstate.c's.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "freqengine.h"
#include "freqstate.h"

/* The counters over the state, anything attached to it and its file runs */
void
FreqStateCounts(FreqState *state, FreqCounts *counts)
{
	if (state->log != NULL && CountLogInPlace(state, NULL, NULL, counts))
		return;
	/* held rows first: counting them may partition the state or spill it */
	FlushHeldRows(state);
	if (state->single == NULL)
	{
		DrainBuffers(state);
		/* a worker file's classes are counted (and checked) as they are read */
		if (state->attached != NULL || HasRuns(state) || state->encoded_file != NULL)
		{
			if (!state->streamed)
				StreamClasses(state, NULL, NULL);
			counts->rows = state->streamed_rows;
			counts->classes = state->streamed_classes;
			counts->singletons = state->streamed_singletons;
			return;
		}
	}
	FreqStateSettle(state);
	counts->rows = state->rows;
	counts->classes = state->classes;
	counts->singletons = state->singletons;
}

int64
FreqStateClasses(FreqState *state)
{
	FreqCounts	counts;

	FreqStateCounts(state, &counts);
	return counts.classes;
}

/*
 * About how many classes a state holds, without reading its file runs: a
 * spilled state answers just past the partitioning threshold.  For sizing
 * a state to merge it into.
 */
int64
FreqStateSizeHint(FreqState *state)
{
	/* a lent state is large, and counting it would merge its buffers */
	if (state->lent || FreqStateSpilled(state))
		return PARTITION_AFTER_CLASSES + 1;
	/* a worker file's classes would have to be read: its message's count */
	if (state->encoded_file != NULL)
		return state->classes;
	return FreqStateClasses(state);
}

typedef struct VisitContext
{
	FreqVisitor visitor;
	void	   *arg;
} VisitContext;

static void
VisitClass(const QidFingerprint *key pg_attribute_unused(), int64 count, void *arg)
{
	VisitContext *context = (VisitContext *) arg;

	context->visitor(count, context->arg);
}

/* Call visitor with the size of every class */
void
FreqStateVisit(FreqState *state, FreqVisitor visitor, void *arg)
{
	VisitContext context = {visitor, arg};

	ForEachClass(state, VisitClass, &context);
}

/* Whether the state (or a state attached to it) has spilled to temporary files */
bool
FreqStateSpilled(FreqState *state)
{
	FlushHeldRows(state);
	if (HasRuns(state))
		return true;
	for (FreqState *attached = state->attached; attached != NULL;
		 attached = attached->next_attached)
		if (HasRuns(attached))
			return true;
	return false;
}

/*
 * Call visit for every class in ascending order of fingerprint (grouping
 * aggregates such as l_diversity read runs of one high half): a partitioned
 * state streams in that order; a single table's classes are copied and sorted
 */
void
FreqStateVisitAscending(FreqState *state, FreqKeyVisitor visit, void *arg)
{
	CountedClass *sorted;
	int64		n;

	/* held rows first: counting them may partition the state */
	FlushHeldRows(state);
	if (state->single == NULL)
	{
		ForEachClass(state, visit, arg);
		return;
	}
	FreqStateSettle(state);
	sorted = TableClasses(state, &n);
	qsort(sorted, n, sizeof(CountedClass), CompareCountedClasses);
	for (int64 i = 0; i < n; i++)
	{
		if ((i & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		visit(&sorted[i].key, sorted[i].count, arg);
	}
	pfree(sorted);
}
