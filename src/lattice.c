/*
 * lattice.c
 *	  The generalization lattice's search and its entry: qid_lattice reads
 *	  its arguments and runs the steps (options, hierarchies, the table, the
 *	  lattice's arrays), classifies every node with Flash's predictive tagging
 *	  where the models are monotone (else evaluates every node), with
 *	  evaluate => 'best' skipping the nodes a lower bound of their loss rules
 *	  out, or searches a bounded number of nodes (the heuristic), and returns
 *	  a row per node.
 */
#include "postgres.h"

#include <math.h>

#include "lattice.h"

PG_FUNCTION_INFO_V1(qidrisk_qid_lattice);

/* Whether an evaluated node is anonymous */
static inline bool
Anonymous(const Lattice *lat, int64 node)
{
	int64		slot = NodeSlot(lat, node);

	return lat->suppressed[slot] <= lat->max_suppressed_rows && !lat->blocked[slot];
}

/* A node's loss under the chosen metric (only for evaluated nodes) */
static double
NodeLoss(const Lattice *lat, int64 node, Metric metric, int32 *levels)
{
	double		n = (double) lat->nrows;
	int64		slot = NodeSlot(lat, node);
	double		s = (double) lat->suppressed[slot];

	switch (metric)
	{
		case METRIC_HEIGHT:
			{
				int			h = 0;

				for (int i = 0; i < lat->ncolumns; i++)
					h += levels[i];
				return h;
			}
		case METRIC_PRECISION:
			{
				double		frac = 0;

				if (lat->nrows == 0)
					return 0;
				for (int i = 0; i < lat->ncolumns; i++)
					if (lat->columns[i].height > 0)
						frac += (double) levels[i] / lat->columns[i].height;
				return ((n - s) * frac + s * lat->ncolumns) / (n * lat->ncolumns);
			}
		case METRIC_DISCERNIBILITY:
			return lat->discernibility[slot];
		case METRIC_ENTROPY:
			return lat->entropy[slot];
		case METRIC_SUPPRESSED:
			return lat->nrows == 0 ? 0 : s / n;
		case METRIC_LOSS:
			return lat->loss[slot];
	}
	return 0;
}

/*
 * A lower bound of the loss of a node and of every node above it, from its
 * levels (and, for discernibility, its classes): what the metric charges
 * without suppression.  A suppressed row costs at least what generalization
 * would (a whole row's precision, rows in discernibility, its value's share
 * of all rows in entropy), and generalizing further only raises that part.
 */
static double
NodeBound(const Lattice *lat, Metric metric, const int32 *levels, double dm_all)
{
	double		n = (double) lat->nrows;
	double		bound = 0;

	switch (metric)
	{
		case METRIC_HEIGHT:
			for (int i = 0; i < lat->ncolumns; i++)
				bound += levels[i];
			break;
		case METRIC_PRECISION:
			if (lat->nrows == 0)
				break;
			for (int i = 0; i < lat->ncolumns; i++)
				if (lat->columns[i].height > 0)
					bound += (double) levels[i] / lat->columns[i].height;
			/* NodeLoss's expression with no row suppressed, rounded alike */
			bound = ((n - 0) * bound + 0 * lat->ncolumns) / (n * lat->ncolumns);
			break;
		case METRIC_DISCERNIBILITY:
			bound = dm_all;
			break;
		case METRIC_ENTROPY:
			for (int c = 0; c < lat->ncolumns; c++)
				bound += lat->columns[c].entropy[levels[c]];
			break;
		case METRIC_SUPPRESSED:
			break;
		case METRIC_LOSS:
			bound = LossBound(lat, levels);
			break;
	}
	return bound;
}

/*
 * Whether a bound rules out the best loss: it exceeds it by more than a
 * relative 1e-9 for rounding, so that ties, which the order of the best
 * decides, are still reached
 */
static inline bool
BeyondBest(double bound, double best_loss)
{
	return bound > best_loss + fabs(best_loss) * 1e-9;
}

/*
 * Mark a node and every node above it (up) or below it with value in mark,
 * through nodes not marked so yet; a node marked otherwise on the way
 * breaks monotonicity
 */
static void
MarkClosure(Lattice *lat, int64 node, bool up, uint8 *mark, uint8 value)
{
	int64	   *queue = lat->queue;
	int64		head = 0;
	int64		tail = 0;

	if (mark[node] == value)
		return;
	mark[node] = value;
	queue[tail++] = node;
	while (head < tail)
	{
		int64		n = queue[head++];

		if ((head & 0xFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < lat->ncolumns; i++)
		{
			int64		level = (n / lat->stride[i]) % (lat->columns[i].height + 1);
			int64		next;

			if (up ? level == lat->columns[i].height : level == 0)
				continue;
			next = up ? n + lat->stride[i] : n - lat->stride[i];
			if (mark[next] == value)
				continue;
			if (mark[next] != 0)
				elog(ERROR, "qid_lattice: monotonicity violated at node " INT64_FORMAT, next);
			mark[next] = value;
			queue[tail++] = next;
		}
	}
}

/* Tag a node and, by monotonicity, every node above (anonymous) or below it */
static inline void
TagClosure(Lattice *lat, int64 node, uint8 tag)
{
	MarkClosure(lat, node, tag == TAG_ANONYMOUS, lat->tag, tag);
}

/* Mark a node and every node above it pruned */
static inline void
PruneAbove(Lattice *lat, int64 node)
{
	MarkClosure(lat, node, true, lat->pruned, 1);
}

/* An evaluated node whose bound did not rule it out when it was evaluated */
typedef struct PruneCandidate
{
	int64		node;
	double		bound;
} PruneCandidate;

/*
 * Whether evaluate => 'best' skips a node: it is pruned, or the bound of
 * its levels alone rules it out (then it and the nodes above are pruned)
 */
static bool
Pruned(Lattice *lat, int64 node)
{
	if (lat->pruned == NULL)
		return false;
	if (lat->pruned[node])
		return true;
	/* from its levels alone, discernibility and the suppressed share have no bound */
	if (!lat->has_best || lat->metric == METRIC_DISCERNIBILITY || lat->metric == METRIC_SUPPRESSED)
		return false;
	NodeLevels(lat, node, lat->bound_levels);
	if (!BeyondBest(NodeBound(lat, lat->metric, lat->bound_levels, 0), lat->best_loss))
		return false;
	PruneAbove(lat, node);
	return true;
}

/*
 * evaluate => 'best', after a node is evaluated: a better best prunes above
 * the candidates its loss now rules out; the node prunes above itself when
 * its bound (with its classes) rules it out, else becomes a candidate
 */
static void
NoteEvaluated(Lattice *lat, int64 node)
{
	double		bound;

	NodeLevels(lat, node, lat->bound_levels);
	bound = NodeBound(lat, lat->metric, lat->bound_levels, lat->dm_all);
	if (Anonymous(lat, node))
	{
		double		loss = NodeLoss(lat, node, lat->metric, lat->bound_levels);

		if (!lat->has_best || loss < lat->best_loss)
		{
			int64		kept = 0;

			lat->has_best = true;
			lat->best_loss = loss;
			for (int64 c = 0; c < lat->ncandidates; c++)
			{
				if ((c & 0xFFFF) == 0)
					CHECK_FOR_INTERRUPTS();
				if (BeyondBest(lat->candidates[c].bound, loss))
					PruneAbove(lat, lat->candidates[c].node);
				else if (!lat->pruned[lat->candidates[c].node])
					lat->candidates[kept++] = lat->candidates[c];
			}
			lat->ncandidates = kept;
		}
	}
	if (lat->has_best && BeyondBest(bound, lat->best_loss))
	{
		PruneAbove(lat, node);
		return;
	}
	if (lat->ncandidates == lat->candidates_capacity)
	{
		/* each node is a candidate at most once */
		lat->candidates_capacity = Min(2 * lat->candidates_capacity, lat->nnodes);
		lat->candidates = repalloc_huge(lat->candidates, sizeof(PruneCandidate) * lat->candidates_capacity);
	}
	lat->candidates[lat->ncandidates].node = node;
	lat->candidates[lat->ncandidates++].bound = bound;
}

/* Evaluate a node and, with evaluate => 'best', note its bound and loss */
static void
EvaluateExact(Lattice *lat, int64 node)
{
	EvaluateNode(lat, node);
	if (lat->pruned != NULL)
		NoteEvaluated(lat, node);
}

/* Evaluate a node (if needed) and tag it and its closure */
static bool
CheckNode(Lattice *lat, int64 node)
{
	bool		anonymous;

	if (lat->tag[node] != TAG_UNKNOWN)
		return lat->tag[node] == TAG_ANONYMOUS;
	EvaluateExact(lat, node);
	anonymous = Anonymous(lat, node);
	TagClosure(lat, node, anonymous ? TAG_ANONYMOUS : TAG_NOT_ANONYMOUS);
	return anonymous;
}

/*
 * The column a Flash path climbs next from node n, -1 at its end: of the
 * columns whose successor is untagged, the one with the fewest distinct
 * values at its level (the first of those tied).  Flash orders successors by
 * a heuristic (Kohlmayer et al. 2012); this one checked about a third fewer
 * nodes that are not anonymous than taking the first column did, over 120
 * cases on UCI Adult, with the same tags.  A pruned successor is not climbed.
 */
static int
PathStep(Lattice *lat, int64 n)
{
	int			column = -1;
	int32		fewest = 0;

	for (int i = 0; i < lat->ncolumns; i++)
	{
		const LatColumn *col = &lat->columns[i];
		int64		level = (n / lat->stride[i]) % (col->height + 1);

		if (level < col->height && lat->tag[n + lat->stride[i]] == TAG_UNKNOWN &&
			(column < 0 || col->ndist[level] < fewest) && !Pruned(lat, n + lat->stride[i]))
		{
			column = i;
			fewest = col->ndist[level];
		}
	}
	return column;
}

/* Flash: nodes by height, a path up from each untagged node, binary search on it */
static void
ClassifyFlash(Lattice *lat, const int64 *order)
{
	int64	   *path = palloc(sizeof(int64) * (lat->nnodes + 1));

	for (int64 o = 0; o < lat->nnodes; o++)
	{
		int64		start = order[o];
		int64		len = 0;
		int64		low;
		int64		high;
		int64		n = start;

		if (lat->tag[start] != TAG_UNKNOWN || Pruned(lat, start))
			continue;
		/* the path: up through untagged nodes */
		for (;;)
		{
			int			column = PathStep(lat, n);

			path[len++] = n;
			if (column < 0)
				break;
			n += lat->stride[column];
		}
		low = 0;
		high = len - 1;
		while (low <= high)
		{
			int64		mid = (low + high) / 2;

			if (CheckNode(lat, path[mid]))
				high = mid - 1;
			else
				low = mid + 1;
		}
	}
	pfree(path);
}

/* Order nodes by height, then by index */
static int64 *
NodesByHeight(Lattice *lat)
{
	int			maxh = 0;
	int64	   *first;
	int64	   *order = palloc(sizeof(int64) * lat->nnodes);
	int32	   *height = palloc(sizeof(int32) * lat->nnodes);

	for (int i = 0; i < lat->ncolumns; i++)
		maxh += lat->columns[i].height;
	first = palloc0(sizeof(int64) * (maxh + 2));
	for (int64 n = 0; n < lat->nnodes; n++)
	{
		int32		h = 0;

		for (int i = 0; i < lat->ncolumns; i++)
			h += (int32) ((n / lat->stride[i]) % (lat->columns[i].height + 1));
		height[n] = h;
		first[h + 1]++;
	}
	for (int h = 1; h <= maxh + 1; h++)
		first[h] += first[h - 1];
	for (int64 n = 0; n < lat->nnodes; n++)
		order[first[height[n]]++] = n;
	pfree(height);
	pfree(first);
	return order;
}

/* Heuristic search: slots by loss, then height, then node (the exact search's order of the best) */
static int
SlotOrder(const Lattice *lat, int32 x, int32 y)
{
	if (lat->slot_loss[x] != lat->slot_loss[y])
		return lat->slot_loss[x] < lat->slot_loss[y] ? -1 : 1;
	if (lat->slot_height[x] != lat->slot_height[y])
		return lat->slot_height[x] < lat->slot_height[y] ? -1 : 1;
	if (lat->slot_node[x] != lat->slot_node[y])
		return lat->slot_node[x] < lat->slot_node[y] ? -1 : 1;
	return 0;
}

/* The heap keeps its greatest element first: the least slot in SlotOrder */
static int
CompareSlots(Datum a, Datum b, void *arg)
{
	return -SlotOrder((const Lattice *) arg, DatumGetInt32(a), DatumGetInt32(b));
}

/* Whether no node at or above a slot can beat the best found */
static bool
SlotPruned(const Lattice *lat, int32 slot, int32 best)
{
	return best >= 0 && BeyondBest(lat->slot_bound[slot], lat->slot_loss[best]);
}

/* Heuristic search: a node's slot, evaluating it first when new; -1 once the budget is spent */
static int32
SearchCheck(Lattice *lat, binaryheap *heap, int64 node, int32 *best)
{
	int64		slot = NodeSlot(lat, node);
	int32		height = 0;

	if (slot >= 0)
		return (int32) slot;
	if (lat->nevaluated >= lat->budget)
		return -1;
	EvaluateNode(lat, node);
	slot = lat->nevaluated - 1;
	NodeLevels(lat, node, lat->levels);
	for (int i = 0; i < lat->ncolumns; i++)
		height += lat->levels[i];
	lat->slot_height[slot] = height;
	lat->slot_loss[slot] = NodeLoss(lat, node, lat->metric, lat->levels);
	lat->slot_bound[slot] = NodeBound(lat, lat->metric, lat->levels, lat->dm_all);
	lat->expanded[slot] = false;
	if (Anonymous(lat, node) && (*best < 0 || SlotOrder(lat, (int32) slot, *best) < 0))
		*best = (int32) slot;
	binaryheap_add(heap, Int32GetDatum((int32) slot));
	return (int32) slot;
}

/*
 * Lightning's expansion: evaluate a slot's direct successors (one level up
 * in one column) and return the least of those neither expanded nor pruned,
 * or -1; *spent when the budget ran out first
 */
static int32
SearchExpand(Lattice *lat, binaryheap *heap, int32 slot, int32 *best, bool *spent)
{
	int64		node = lat->slot_node[slot];
	int32		next = -1;

	lat->expanded[slot] = true;
	for (int i = 0; i < lat->ncolumns; i++)
	{
		int64		level = (node / lat->stride[i]) % (lat->columns[i].height + 1);
		int32		s;

		if (level == lat->columns[i].height)
			continue;
		s = SearchCheck(lat, heap, node + lat->stride[i], best);
		if (s < 0)
		{
			*spent = true;
			return -1;
		}
		if (lat->expanded[s] || SlotPruned(lat, s, *best))
			continue;
		if (next < 0 || SlotOrder(lat, s, next) < 0)
			next = s;
	}
	return next;
}

/*
 * Heuristic search after ARX's Lightning (Prasser, Bild, Eicher, Spengler,
 * Kohlmayer, Kuhn, "Lightning: utility-driven anonymization of
 * high-dimensional data", Transactions on Data Privacy 9(2), 2016): best-first
 * from the bottom, the evaluated node of least loss expanded next; every
 * stepping-th step (the top's height) a greedy climb instead, always to the
 * least successor; a node whose bound cannot beat the best anonymous node
 * found is skipped.  Unlike Lightning, the first step is a climb too, so that a
 * wide lattice finds an anonymous node (and bounds to prune with) early in its
 * budget.  Stops when qidrisk.lattice_heuristic_nodes nodes are evaluated.
 * Returns the best slot (-1: none anonymous); *complete when the queue ran dry
 * first, which proves the best optimal: every node of loss at most the best's
 * has every node below it unpruned, so was evaluated.
 */
static int32
SearchHeuristic(Lattice *lat, bool *complete)
{
	binaryheap *heap = binaryheap_allocate((int) lat->budget, CompareSlots, lat);
	int32		best = -1;
	bool		spent = false;
	int64		stepping = 0;
	int64		step = 0;

	for (int i = 0; i < lat->ncolumns; i++)
		stepping += lat->columns[i].height;
	stepping = Max(stepping, 1);
	SearchCheck(lat, heap, 0, &best);
	while (!spent && !binaryheap_empty(heap))
	{
		int32		slot = DatumGetInt32(binaryheap_remove_first(heap));

		CHECK_FOR_INTERRUPTS();
		if (lat->expanded[slot] || SlotPruned(lat, slot, best))
			continue;
		if (step++ % stepping != 0)
			SearchExpand(lat, heap, slot, &best, &spent);
		else
		{
			while (slot >= 0 && !spent)
			{
				CHECK_FOR_INTERRUPTS();
				slot = SearchExpand(lat, heap, slot, &best, &spent);
			}
		}
	}
	*complete = !spent && binaryheap_empty(heap);
	binaryheap_free(heap);
	return best;
}

/*
 * Number the nodes as mixed-radix numbers of their levels (the last column
 * the fastest), refusing a lattice the search cannot take: past
 * LATTICE_MAX_NODES for the exact search, past int64 for any
 */
static void
NumberNodes(Lattice *lat)
{
	bool		overflow = false;

	lat->stride = palloc(sizeof(int64) * lat->ncolumns);
	lat->nnodes = 1;
	for (int i = lat->ncolumns - 1; i >= 0 && !overflow; i--)
	{
		lat->stride[i] = lat->nnodes;
		overflow = pg_mul_s64_overflow(lat->nnodes, lat->columns[i].height + 1, &lat->nnodes);
	}
	if (lat->search == SEARCH_EXACT && (overflow || lat->nnodes > LATTICE_MAX_NODES))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s: the lattice has more than %d nodes", lat->funcname, LATTICE_MAX_NODES),
				 errhint("Pass fewer columns or hierarchies with fewer levels, or search => 'heuristic' for a bounded search that returns the best node it finds.")));
	if (overflow)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s: the lattice has more nodes than a 64-bit node number can count", lat->funcname),
				 errdetail("The product of the columns' numbers of levels exceeds " INT64_FORMAT ".", PG_INT64_MAX),
				 errhint("Pass fewer columns or hierarchies with fewer levels.")));
}

/* Whether an anonymous evaluated node is minimal, as far as the search evaluated the nodes below it */
static Datum
HeuristicMinimal(const Lattice *lat, int64 node, const int32 *levels, bool *isnull)
{
	bool		known = true;

	*isnull = false;
	for (int i = 0; i < lat->ncolumns; i++)
	{
		if (levels[i] == 0)
			continue;
		if (NodeSlot(lat, node - lat->stride[i]) < 0)
			known = false;
		else if (Anonymous(lat, node - lat->stride[i]))
			return BoolGetDatum(false);
	}
	*isnull = !known;
	return BoolGetDatum(known);
}

/* The heuristic search's result: one row per evaluated node, in the order evaluated */
static void
HeuristicRows(Lattice *lat, ReturnSetInfo *rsinfo)
{
	bool		complete;
	int32		best = SearchHeuristic(lat, &complete);
	Datum	   *lv = palloc(sizeof(Datum) * lat->ncolumns);

	if (complete)
		ereport(NOTICE,
				(errmsg("%s: the heuristic search evaluated " INT64_FORMAT " of " INT64_FORMAT " nodes and its bounds rule out the others, so its best node is optimal",
						lat->funcname, lat->nevaluated, lat->nnodes)));
	else
		ereport(NOTICE,
				(errmsg("%s: the heuristic search stopped after evaluating " INT64_FORMAT " of " INT64_FORMAT " nodes; its best node is not proven optimal",
						lat->funcname, lat->nevaluated, lat->nnodes),
				 errhint("Raise qidrisk.lattice_heuristic_nodes to search further.")));
	for (int32 slot = 0; slot < lat->nevaluated; slot++)
	{
		Datum		values[14];
		bool		nulls[14] = {false};
		int64		node = lat->slot_node[slot];
		bool		anonymous = Anonymous(lat, node);

		if ((slot & 0x3FF) == 0)
			CHECK_FOR_INTERRUPTS();
		NodeLevels(lat, node, lat->levels);
		for (int i = 0; i < lat->ncolumns; i++)
			lv[i] = Int32GetDatum(lat->levels[i]);
		values[0] = PointerGetDatum(construct_array(lv, lat->ncolumns, INT4OID, 4, true, TYPALIGN_INT));
		values[1] = BoolGetDatum(anonymous);
		values[2] = anonymous ? HeuristicMinimal(lat, node, lat->levels, &nulls[2]) : BoolGetDatum(false);
		values[3] = BoolGetDatum(true);
		values[4] = Int64GetDatum(lat->suppressed[slot]);
		values[5] = Int64GetDatum(lat->classes[slot]);
		values[6] = Int32GetDatum(lat->slot_height[slot]);
		values[7] = Float8GetDatum(NodeLoss(lat, node, METRIC_PRECISION, lat->levels));
		values[8] = Float8GetDatum(lat->discernibility[slot]);
		values[9] = Float8GetDatum(lat->entropy[slot]);
		values[10] = Float8GetDatum(NodeLoss(lat, node, METRIC_SUPPRESSED, lat->levels));
		values[11] = Float8GetDatum(lat->slot_loss[slot]);
		values[12] = BoolGetDatum(slot == best);
		values[13] = Int64GetDatum(lat->nrows);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		pfree(DatumGetPointer(values[0]));
	}
}

/* The per-node arrays: every node for the exact search, nslots evaluated nodes for the heuristic */
static void
AllocateNodeArrays(Lattice *lat, MemoryContext work, int64 nslots)
{
	if (lat->search == SEARCH_EXACT)
	{
		lat->tag = palloc0(lat->nnodes);
		lat->queue = MemoryContextAllocHuge(work, sizeof(int64) * lat->nnodes);
		if (lat->evaluate == EVALUATE_BEST)
		{
			lat->pruned = MemoryContextAllocExtended(work, sizeof(uint8) * lat->nnodes,
													 MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
			lat->candidates_capacity = Min(lat->nnodes, 64);
			lat->candidates = palloc(sizeof(PruneCandidate) * lat->candidates_capacity);
			lat->bound_levels = palloc(sizeof(int32) * Max(lat->ncolumns, 1));
		}
	}
	else
	{
		lat->slots = nodeslot_create(work, (uint32) nslots, NULL);
		lat->slot_node = MemoryContextAllocHuge(work, sizeof(int64) * nslots);
		lat->slot_loss = MemoryContextAllocHuge(work, sizeof(double) * nslots);
		lat->slot_bound = MemoryContextAllocHuge(work, sizeof(double) * nslots);
		lat->slot_height = MemoryContextAllocHuge(work, sizeof(int32) * nslots);
		lat->expanded = MemoryContextAllocHuge(work, sizeof(bool) * nslots);
	}
	lat->evaluated = MemoryContextAllocExtended(work, sizeof(bool) * nslots, MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	lat->suppressed = MemoryContextAllocHuge(work, sizeof(int64) * nslots);
	lat->blocked = MemoryContextAllocExtended(work, sizeof(bool) * nslots, MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	lat->classes = MemoryContextAllocHuge(work, sizeof(int64) * nslots);
	lat->discernibility = MemoryContextAllocHuge(work, sizeof(double) * nslots);
	lat->entropy = MemoryContextAllocHuge(work, sizeof(double) * nslots);
	if (lat->metric == METRIC_LOSS)
		lat->loss = MemoryContextAllocHuge(work, sizeof(double) * nslots);
	lat->snap_of = MemoryContextAllocHuge(work, sizeof(int32) * nslots);
	for (int64 n = 0; n < nslots; n++)
		lat->snap_of[n] = -1;
}

/*
 * Load the hierarchies and encode the table through SPI, with the caller's
 * rights; what is read lives in work
 */
static void
ReadLattice(Lattice *lat, Oid relid, Jsonb *hierarchies, const char *sensitive, MemoryContext work)
{
	int			ret;

	if ((ret = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(ret));
	/* what we read outlives SPI_finish */
	MemoryContextSwitchTo(work);
	for (int i = 0; i < lat->ncolumns; i++)
	{
		JsonbValue *spec = JsonbGet(&hierarchies->root, lat->columns[i].name);

		if (spec != NULL && spec->type != jbvNull)
			LoadHierarchy(&lat->columns[i], relid, spec, QIDRISK_INTERNAL, lat->funcname);
	}
	/* the heights are known: refuse a lattice too large before reading the table */
	NumberNodes(lat);
	EncodeLattice(lat, sensitive);
	if (lat->pop_name != NULL)
		ReadPopulation(lat);
	SPI_finish();
	MemoryContextSwitchTo(work);
	PrepareLevels(lat);
	if (lat->has_delta)
		CheckPopulationContains(lat);
}

/*
 * The per-node arrays, the evaluation buffers and the snapshot cache,
 * within the memory budget; whether the models are monotone
 */
static void
AllocateLattice(Lattice *lat, MemoryContext work, double max_suppressed)
{
	int			nelems = lat->ncolumns;
	int32		max_distinct = 1;
	double		bytes;
	int64		nslots;

	/* the lattice */
	lat->max_suppressed_rows = (int64) floor(max_suppressed * (double) lat->nrows);
	lat->log2rows = log2((double) lat->nrows);
	/* the per-node arrays: every node, or the heuristic search's budget */
	nslots = lat->nnodes;
	if (lat->search == SEARCH_HEURISTIC)
		nslots = lat->budget = Min(lat->nnodes, (int64) qidrisk_lattice_heuristic_nodes);
	for (int i = 0; i < nelems; i++)
		for (int j = 0; j <= lat->columns[i].height; j++)
			max_distinct = Max(max_distinct, lat->columns[i].ndist[j]);
	max_distinct = Max(max_distinct, lat->nsens);
	bytes = (double) lat->nrows * sizeof(int32) * (nelems + 1) * 8 +
		(double) nslots * (lat->search == SEARCH_HEURISTIC ? HEURISTIC_SLOT_BYTES :
						   sizeof(int64) * 5 + sizeof(double) * 2 + 2 + sizeof(int32) +
						   (lat->evaluate == EVALUATE_BEST ? sizeof(uint8) + sizeof(PruneCandidate) : 0)) +
		3.0 * max_distinct * sizeof(int32) +
		(double) lat->nsens * (sizeof(double) * 3 + sizeof(OrderedItem));
	if (lat->has_average_risk || lat->has_pu)
		bytes += (double) Max(lat->nrows, 1) * (lat->has_pu ? 4 : 2) * sizeof(int64);
	CheckLatticeMemory(bytes, lat->funcname, "The encoded columns, the evaluation buffers and the lattice");
	lat->base_bytes = (Size) bytes;
	AllocateNodeArrays(lat, work, nslots);
	{
		Size		rows = Max(lat->nrows, 1);

		lat->perm = MemoryContextAllocHuge(work, sizeof(int32) * rows);
		lat->perm2 = MemoryContextAllocHuge(work, sizeof(int32) * rows);
		lat->ends = MemoryContextAllocHuge(work, sizeof(int32) * rows);
		lat->ends2 = MemoryContextAllocHuge(work, sizeof(int32) * rows);
		lat->key = MemoryContextAllocHuge(work, sizeof(int32) * rows);
		lat->keys = palloc(sizeof(int32 *) * Max(nelems, 1));
		lat->split = palloc(sizeof(int) * Max(nelems, 1));
		lat->maps = palloc(sizeof(int32 *) * Max(nelems, 1));
		for (int i = 0; i < nelems; i++)
			lat->keys[i] = MemoryContextAllocHuge(work, sizeof(int32) * rows);
		lat->group_class = MemoryContextAllocHuge(work, sizeof(int32) * rows);
		lat->touched = MemoryContextAllocHuge(work, sizeof(int32) * Max(max_distinct, 1));
		lat->counts = MemoryContextAllocExtended(work, sizeof(int32) * max_distinct, MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
		lat->starts = MemoryContextAllocHuge(work, sizeof(int32) * max_distinct);
		if (lat->ordered)
			lat->items = MemoryContextAllocHuge(work, sizeof(OrderedItem) * Max(lat->nsens, 1));
	}
	lat->levels = palloc(sizeof(int32) * nelems);
	lat->rowbuf = palloc(sizeof(int32) * Max(nelems, 1));
	if (lat->metric == METRIC_LOSS)
		PrepareLossBound(lat);
	lat->cache_context = AllocSetContextCreate(work, "qid_lattice snapshots", ALLOCSET_DEFAULT_SIZES);
	lat->cache_capacity = 64;
	lat->cache = palloc(sizeof(NodeItems *) * lat->cache_capacity);
	{
		Size		budget = QidStateMemoryBudget();

		Size		beside = sizeof(int32) * Min(LATTICE_DENSE_KEYS, Max(4 * lat->nrows, 1024)) +
			(3 * sizeof(int32) + sizeof(uint64)) * (Size) Max(lat->nrows, 1);

		lat->cache_budget = budget > lat->base_bytes ? (budget - lat->base_bytes) / 2 : 0;
		/* the packed codes take the other half, beside the direct table and the bottom */
		lat->code_budget = lat->cache_budget > beside ? lat->cache_budget - beside : 0;
	}

	/*
	 * monotone unless suppression meets a model that merging classes can
	 * break; population uniqueness's estimates need not fall as classes merge
	 */
	lat->monotone = !lat->has_pu && (lat->max_suppressed_rows == 0 ||
									 ((lat->l == 1 || lat->l_model == L_DISTINCT) && !lat->has_t &&
									  !lat->has_beta && !lat->has_average_risk && !lat->has_delta));
	if (lat->pop_tuples != NULL)
	{
		/* the population's classes at a node take at most what its distinct rows take */
		CheckLatticeMemory(bytes + 2.0 * lat->pop_tuples->capacity *
						   (sizeof(int32) * lat->ncolumns + sizeof(int64) + sizeof(TupleEntry) * 2),
						   lat->funcname, "The encoded columns, the lattice and the population's distinct rows");
		lat->pop_classes = TupleIndexCreate(lat->ncolumns, lat->pop_tuples->ntuples, lat->funcname);
	}
	if (lat->has_average_risk || lat->has_pu)
		lat->kept_classes = MemoryContextAllocHuge(work, sizeof(int64) * 2 * Max(lat->nrows, 1));
	if (lat->has_pu)
	{
		/* ARX's population: the table's rows over the sampling fraction, rounded */
		lat->pu_population = Max(floor((double) lat->nrows / lat->pu_fraction + 0.5), 1.0);
		lat->pu_sizes = MemoryContextAllocHuge(work, sizeof(int64) * Max(lat->nrows, 1));
		lat->pu_counts = MemoryContextAllocHuge(work, sizeof(int64) * Max(lat->nrows, 1));
	}

	/* k-map's class size, at most the rows (ARX's bound) */
	if (lat->kmap_k > 0)
		lat->k = Max(lat->k, Min(lat->kmap_k, Max(lat->nrows, 1)));
}

/* Classify every node (Flash where the models are monotone); the best node, -1 without one */
static int64
ClassifyExact(Lattice *lat)
{
	int64	   *order;
	int64		best = -1;
	double		best_loss = 0;

	order = NodesByHeight(lat);
	if (lat->monotone)
		ClassifyFlash(lat, order);
	for (int64 o = 0; o < lat->nnodes; o++)
	{
		int64		n = order[o];

		if (lat->evaluated[n] || Pruned(lat, n))
			continue;
		if (!lat->monotone || lat->evaluate == EVALUATE_ALL ||
			(lat->evaluate != EVALUATE_TAGGED && lat->tag[n] == TAG_ANONYMOUS))
		{
			EvaluateExact(lat, n);
			if (!lat->monotone)
				lat->tag[n] = Anonymous(lat, n) ? TAG_ANONYMOUS : TAG_NOT_ANONYMOUS;
			else if ((lat->tag[n] == TAG_ANONYMOUS) != Anonymous(lat, n))
				elog(ERROR, "qid_lattice: node " INT64_FORMAT " was tagged wrongly", n);
		}
	}

	/* the best node: least loss, then least height, then first */
	if (lat->evaluate != EVALUATE_TAGGED || !lat->monotone)
	{
		for (int64 o = 0; o < lat->nnodes; o++)
		{
			int64		n = order[o];
			double		loss;

			/* with evaluate => 'best' an anonymous node may go unevaluated */
			if (lat->tag[n] != TAG_ANONYMOUS || !lat->evaluated[n])
				continue;
			NodeLevels(lat, n, lat->levels);
			loss = NodeLoss(lat, n, lat->metric, lat->levels);
			if (best < 0 || loss < best_loss)
			{
				best = n;
				best_loss = loss;
			}
		}
	}
	return best;
}

/* One row per node of the exact search */
static void
ExactRows(Lattice *lat, ReturnSetInfo *rsinfo, int64 best)
{
	int			nelems = lat->ncolumns;

	for (int64 n = 0; n < lat->nnodes; n++)
	{
		Datum		values[14];
		bool		nulls[14] = {false};
		Datum	   *lv = palloc(sizeof(Datum) * nelems);
		bool		anonymous = lat->tag[n] == TAG_ANONYMOUS;
		bool		minimal = anonymous;
		bool		below_unknown = false;
		int			height = 0;

		if ((n & 0x3FF) == 0)
			CHECK_FOR_INTERRUPTS();
		NodeLevels(lat, n, lat->levels);
		for (int i = 0; i < nelems; i++)
		{
			lv[i] = Int32GetDatum(lat->levels[i]);
			height += lat->levels[i];
			if (lat->levels[i] == 0)
				continue;
			if (lat->tag[n - lat->stride[i]] == TAG_ANONYMOUS)
				minimal = false;
			else if (lat->tag[n - lat->stride[i]] == TAG_UNKNOWN)
				below_unknown = true;
		}
		values[0] = PointerGetDatum(construct_array(lv, nelems, INT4OID, 4, true, TYPALIGN_INT));
		/* evaluate => 'best' leaves pruned nodes unclassified */
		values[1] = BoolGetDatum(anonymous);
		nulls[1] = lat->tag[n] == TAG_UNKNOWN;
		values[2] = BoolGetDatum(minimal);
		nulls[2] = nulls[1] || (minimal && below_unknown);
		values[3] = BoolGetDatum(lat->evaluated[n]);
		values[6] = Int32GetDatum(height);
		if (lat->evaluated[n])
		{
			values[4] = Int64GetDatum(lat->suppressed[n]);
			values[5] = Int64GetDatum(lat->classes[n]);
			values[7] = Float8GetDatum(NodeLoss(lat, n, METRIC_PRECISION, lat->levels));
			values[8] = Float8GetDatum(lat->discernibility[n]);
			values[9] = Float8GetDatum(lat->entropy[n]);
			values[10] = Float8GetDatum(NodeLoss(lat, n, METRIC_SUPPRESSED, lat->levels));
			values[11] = Float8GetDatum(NodeLoss(lat, n, lat->metric, lat->levels));
		}
		else
		{
			for (int i = 4; i <= 11; i++)
				nulls[i] = i != 6;
		}
		if (lat->evaluate == EVALUATE_TAGGED && lat->monotone)
			nulls[12] = true;
		else
			values[12] = BoolGetDatum(n == best);
		values[13] = Int64GetDatum(lat->nrows);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		pfree(DatumGetPointer(values[0]));
		pfree(lv);
	}
}

/*
 * qid_lattice(rel, qid, hierarchies, k, max_suppressed, sensitive, l, l_model,
 * c, t, t_distance, metric, evaluate, search, gs_factor, weights, privacy):
 * one row per node of the lattice, or per node the heuristic search evaluated.
 */
static Datum
QidLattice(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext work;
	MemoryContext old;
	Oid			relid = PG_GETARG_OID(0);
	Lattice    *lat;
	char	   *sensitive = NULL;
	double		max_suppressed;

	InitMaterializedSRF(fcinfo, 0);
	work = AllocSetContextCreate(CurrentMemoryContext, "qid_lattice", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(work);
	lattice_hash_seed = pg_prng_uint64(&pg_global_prng_state);
	lat = palloc0(sizeof(Lattice));
	lat->funcname = "qid_lattice";
	ParseModels(lat, fcinfo, &max_suppressed, &sensitive);
	ResolveColumns(lat, relid, PG_GETARG_ARRAYTYPE_P(1), sensitive);
	ParseLossOptions(lat, fcinfo);
	CheckHierarchyKeys(lat, PG_GETARG_JSONB_P(2));
	ReadLattice(lat, relid, PG_GETARG_JSONB_P(2), sensitive, work);
	AllocateLattice(lat, work, max_suppressed);
	if (lat->search == SEARCH_HEURISTIC)
		HeuristicRows(lat, rsinfo);
	else
		ExactRows(lat, rsinfo, ClassifyExact(lat));
	MemoryContextSwitchTo(old);
	MemoryContextDelete(work);
	return (Datum) 0;
}

/* qid_lattice under a boundary: an error of the input shows the call, not the hierarchies' reads */
Datum
qidrisk_qid_lattice(PG_FUNCTION_ARGS)
{
	return QidCallBounded(QidLattice, fcinfo);
}
