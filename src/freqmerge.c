/*
 * freqmerge.c
 *	  Merging sorted classes: the streaming k-way merge and its merge tree.
 *
 * Readers stream one k-way merge of the in-memory arrays, the attached
 * states' arrays and every file run, partition by partition, so the answers
 * are exactly those of an unbounded state.  A partition with more runs than
 * the merge's fan-in first merges runs into longer runs.  This file owns the
 * merge (MergeSources, a tree of MergeNodes), merging a sorted run into a
 * partition's array (MergeRun), draining a partition's buffer into it
 * (DrainPartition: sort, sum, merge), reducing and adopting runs, decoding a
 * received state's partitions into arrays (DecodePartitions), merging one
 * state's arrays into another's (MergePartitionsOf), and streaming one
 * partition of a state with its attached states and runs (StreamPartition).
 */
#include "postgres.h"

#include <math.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/xact.h"
#include "catalog/pg_tablespace_d.h"
#include "commands/tablespace.h"
#include "common/file_utils.h"
#include "common/int.h"
#include "common/pg_prng.h"
#include "lib/ilist.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "port/pg_bswap.h"
#include "storage/buffile.h"
#include "storage/fd.h"
#include "storage/fileset.h"
#include "utils/guc.h"
#include "utils/wait_event.h"

#include "freqmerge.h"

/*
 * A node of a merge tree: a leaf reads a source, an inner node merges its
 * two children into a chunk of its own.  Either way its classes not yet
 * taken are the window [at, end).
 */
typedef struct MergeNode
{
	MergeSource *source;		/* a leaf's source, or NULL */
	struct MergeNode *left;
	struct MergeNode *right;
	const CountedClass *at;
	const CountedClass *end;
	CountedClass *chunk;		/* an inner node's RUN_CHUNK_CLASSES classes */
} MergeNode;

/*
 * Merge two sorted windows into out, up to stop or the end of either, a
 * class present in both once with its sizes summed.  Fingerprints are
 * uniform, so which window is behind is random and the smaller class is
 * selected without a branch; equal high halves (the same class, almost
 * always) take the full comparison.  Each step advances out by one and each
 * window by at most one, so a count of steps bounds all three at once.
 */
static inline CountedClass *
MergeTwo(MergeNode *a_node, MergeNode *b_node, CountedClass *out, const CountedClass *stop)
{
	const CountedClass *a = a_node->at;
	const CountedClass *b = b_node->at;
	int64		steps = Min(Min(a_node->end - a, b_node->end - b), stop - out);

	while (steps-- > 0)
	{
		uint64		take_b;

		if (unlikely(a->key.hi == b->key.hi))
		{
			int			c = QidFingerprintCompare(&a->key, &b->key);

			*out = (c <= 0) ? *a : *b;
			if (c == 0)
				out->count += b->count;
			a += (c <= 0);
			b += (c >= 0);
			out++;
			continue;
		}
		take_b = -(uint64) (b->key.hi < a->key.hi);
		*out++ = *(const CountedClass *) (((uintptr_t) b & take_b) | ((uintptr_t) a & ~take_b));
		a += 1 + (int64) take_b;
		b -= (int64) take_b;
	}
	a_node->at = a;
	b_node->at = b;
	return out;
}

/* Make a node's window hold classes; false once it has none left */
static bool
PullClasses(MergeNode *node)
{
	CountedClass *out = node->chunk;
	const CountedClass *stop = node->chunk + RUN_CHUNK_CLASSES;

	if (node->at < node->end)
		return true;
	if (node->source != NULL)
	{
		if (node->source->left == 0)
			return false;
		RefillSource(node->source);
		node->at = node->source->at;
		node->end = node->source->end;
		return true;
	}
	while (out < stop)
	{
		bool		has_left = PullClasses(node->left);
		bool		has_right = PullClasses(node->right);
		MergeNode  *rest;
		int64		n;

		if (has_left && has_right)
		{
			out = MergeTwo(node->left, node->right, out, stop);
			continue;
		}
		if (!has_left && !has_right)
			break;
		/* one child is exhausted: the other's classes follow as they are */
		rest = has_left ? node->left : node->right;
		n = Min(rest->end - rest->at, stop - out);
		memcpy(out, rest->at, n * sizeof(CountedClass));
		rest->at += n;
		out += n;
	}
	node->at = node->chunk;
	node->end = out;
	return out > node->chunk;
}

/*
 * Merge sorted, duplicate-free sources (at most MERGE_FANIN) into one
 * ascending stream: count each fingerprint's class into counts (if not
 * NULL) and call visit (if not NULL) with its sizes summed over the sources.
 * The sources are the leaves of a balanced tree of two-way merges, so each
 * class passes about log2(nsources) cheap steps instead of being compared
 * with every source's current class.
 */
void
MergeSources(MergeSource *sources, int nsources, FreqCounts *counts,
			 ClassVisitor visit, void *arg)
{
	MergeNode  *nodes;
	MergeNode  *level[MERGE_FANIN];
	int			nlevel = nsources;
	int			nnodes = 0;
	uint64		emitted = 0;
	FreqCounts	seen = {0, 0, 0};

	if (nsources > MERGE_FANIN)
		elog(ERROR, "qidrisk: a merge of %d inputs, more than %d", nsources, MERGE_FANIN);
	if (nsources == 0)
		return;
	nodes = palloc0((2 * nsources - 1) * sizeof(MergeNode));
	for (int i = 0; i < nsources; i++)
	{
		MergeNode  *leaf = &nodes[nnodes++];

		leaf->source = &sources[i];
		leaf->at = sources[i].at;
		leaf->end = sources[i].end;
		level[i] = leaf;
	}
	while (nlevel > 1)
	{
		int			next = 0;

		for (int i = 0; i < nlevel; i += 2)
		{
			MergeNode  *inner;

			if (i + 1 == nlevel)
			{
				level[next++] = level[i];
				break;
			}
			inner = &nodes[nnodes++];
			inner->left = level[i];
			inner->right = level[i + 1];
			inner->chunk = palloc(RUN_CHUNK_CLASSES * sizeof(CountedClass));
			level[next++] = inner;
		}
		nlevel = next;
	}
	while (PullClasses(level[0]))
	{
		const CountedClass *class;

		for (class = level[0]->at; class < level[0]->end; class++)
		{
			CountClassInto(&seen, class->count);
			if (visit != NULL)
				visit(&class->key, class->count, arg);
		}
		emitted += level[0]->end - level[0]->at;
		level[0]->at = level[0]->end;
		if (emitted > INTERRUPT_CHECK_MASK)
		{
			CHECK_FOR_INTERRUPTS();
			emitted = 0;
		}
	}
	for (int i = 0; i < nnodes; i++)
		if (nodes[i].chunk != NULL)
			pfree(nodes[i].chunk);
	pfree(nodes);
	if (counts != NULL)
	{
		counts->rows += seen.rows;
		counts->classes += seen.classes;
		counts->singletons += seen.singletons;
	}
}

/*
 * How many inputs a merge of this state reads at once: each input holds a
 * chunk of RUN_CHUNK_CLASSES classes, and so does each two-way merge of the
 * tree above them (one fewer than the inputs), all of them together at most
 * 1/32 of the budget, between MIN_MERGE_FANIN and MERGE_FANIN inputs.  The
 * windows on workers' files share what that leaves (WindowBytes), beyond
 * it only at their smallest.
 */
int
MergeFanIn(const FreqState *state)
{
	Size		chunk = RUN_CHUNK_CLASSES * sizeof(CountedClass);

	return (int) Max(MIN_MERGE_FANIN, Min(MERGE_FANIN, state->budget / (32 * 2 * chunk)));
}

/*
 * Merge runs into one longer run until the partition has at most keep runs,
 * so that a streaming merge never reads more than MergeFanIn inputs.  The
 * new run goes to the end of this state's file for the partition.
 */
void
ReduceRuns(FreqState *state, FreqPartition *partition, int keep)
{
	keep = Max(keep, 1);
	while (partition->nruns > keep)
	{
		int			take = Min(MergeFanIn(state), partition->nruns - keep + 1);
		MergeSource *sources = palloc(take * sizeof(MergeSource));
		RunWriter  *writer = palloc(sizeof(RunWriter));

		elog(DEBUG1, "qidrisk: merging %d of %d runs of a partition into one", take,
			 partition->nruns);

		for (int i = 0; i < take; i++)
			OpenRunSource(&sources[i], &partition->runs[i]);
		BeginRun(writer, state, partition);
		MergeSources(sources, take, NULL, WriteRunClass, writer);
		for (int i = 0; i < take; i++)
			CloseSource(&sources[i]);
		/* drop the merged runs before listing the new one */
		memmove(partition->runs, partition->runs + take,
				(partition->nruns - take) * sizeof(SpillRun));
		partition->nruns -= take;
		EndRun(writer);
		pfree(writer);
		pfree(sources);
	}
}

/* Count a class of the run that the array holds already (of size old_count) */
static inline void
CountGrownClass(FreqCounts *added, int64 old_count, const CountedClass *class)
{
	added->singletons -= (old_count == 1);
	added->rows += class->count;
}

/*
 * Merge from the back: the array grows by nrun, the merge fills it from its
 * end, and the classes below the smallest of the run move up by the number
 * of classes both held; those free classes at the bottom become the offset.
 */
static void
MergeFromBack(FreqState *state, FreqPartition *partition, const CountedClass *run,
			  int64 nrun, FreqCounts *added)
{
	int64		n = partition->nclasses;
	CountedClass *classes;
	int64		i = n - 1;
	int64		j = nrun - 1;
	int64		w = n + nrun - 1;
	int64		shared;

	GrowClassArray(state, partition, n + nrun);
	classes = partition->classes;
	while (j >= 0)
	{
		int			c = (i >= 0) ? QidFingerprintCompare(&classes[i].key, &run[j].key) : -1;

		if ((w & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		if (c > 0)
			classes[w--] = classes[i--];
		else if (c < 0)
		{
			CountClassInto(added, run[j].count);
			classes[w--] = run[j--];
		}
		else
		{
			CountGrownClass(added, classes[i].count, &run[j]);
			classes[w] = classes[i--];
			classes[w--].count += run[j--].count;
		}
	}
	/* w - i classes were in both: the untouched bottom closes up to the rest */
	shared = w - i;
	if (shared > 0)
		memmove(classes + shared, classes, (i + 1) * sizeof(CountedClass));
	partition->classes += shared;
	partition->offset += shared;
	partition->capacity -= shared;
	partition->nclasses = n + nrun - shared;
}

/*
 * Merge from the front, into the free classes before the array: with at
 * least nrun of them, a class is never written over before it is read.
 */
static void
MergeFromFront(FreqPartition *partition, const CountedClass *run, int64 nrun,
			   FreqCounts *added)
{
	const CountedClass *old = partition->classes;
	CountedClass *base = partition->classes - partition->offset;
	int64		n = partition->nclasses;
	int64		i = 0;
	int64		j = 0;
	int64		w = 0;

	Assert(partition->offset >= nrun);
	while (j < nrun)
	{
		int			c = (i < n) ? QidFingerprintCompare(&old[i].key, &run[j].key) : 1;

		if ((w & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		if (c < 0)
			base[w++] = old[i++];
		else if (c > 0)
		{
			CountClassInto(added, run[j].count);
			base[w++] = run[j++];
		}
		else
		{
			CountGrownClass(added, old[i].count, &run[j]);
			base[w] = old[i++];
			base[w++].count += run[j++].count;
		}
	}
	/* the classes above the largest of the run close up to the rest */
	memmove(base + w, old + i, (n - i) * sizeof(CountedClass));
	partition->capacity += partition->offset;
	partition->offset = 0;
	partition->classes = base;
	partition->nclasses = w + n - i;
}

/*
 * Merge a sorted, duplicate-free run of classes into a partition's array,
 * updating the counters, in one pass and without a second array: from the
 * front when the free classes before the array (left by earlier merges) hold
 * the run, from the back otherwise.
 */
void
MergeRun(FreqState *state, FreqPartition *partition, const CountedClass *run, int64 nrun)
{
	FreqCounts	added = {0, 0, 0};

	if (nrun == 0)
		return;
	state->streamed = false;
	if (partition->offset >= nrun)
	{
		MergeFromFront(partition, run, nrun, &added);
		qidrisk_freq_events.merges_from_front++;
	}
	else
		MergeFromBack(state, partition, run, nrun, &added);
	state->classes += added.classes;
	state->singletons += added.singletons;
	state->rows += added.rows;
	ReleaseFreeClasses(partition);
}

/* Keep a file taken over from another state, to close it with ours */
static void
AdoptFile(FreqState *state, BufFile *file)
{
	if (file == NULL)
		return;
	if (state->nadopted == state->adopted_capacity)
	{
		int			capacity = Max(8, state->adopted_capacity * 2);

		state->adopted_files = state->adopted_files ?
			repalloc(state->adopted_files, capacity * sizeof(BufFile *)) :
			MemoryContextAlloc(state->context, capacity * sizeof(BufFile *));
		state->adopted_capacity = capacity;
	}
	state->adopted_files[state->nadopted++] = file;
}

/*
 * Take over the runs and run files of from, a state in the same memory
 * context that is about to be freed: nothing is copied.
 */
void
AdoptRuns(FreqState *into, FreqState *from)
{
	for (int p = 0; p < PARTITIONS; p++)
	{
		FreqPartition *partition = &from->parts[p];

		for (int i = 0; i < partition->nruns; i++)
			AppendRun(into, &into->parts[p], &partition->runs[i]);
		partition->nruns = 0;
		AdoptFile(into, partition->file);
		partition->file = NULL;
	}
	for (int i = 0; i < from->nadopted; i++)
		AdoptFile(into, from->adopted_files[i]);
	from->nadopted = 0;
}

/* Copy the runs of another state's partition into new runs of ours */
void
CopyRuns(FreqState *into, FreqPartition *partition, const FreqPartition *from)
{
	RunWriter  *writer = palloc(sizeof(RunWriter));

	for (int i = 0; i < from->nruns; i++)
	{
		MergeSource source;

		OpenRunSource(&source, &from->runs[i]);
		BeginRun(writer, into, partition);
		MergeSources(&source, 1, NULL, WriteRunClass, writer);
		CloseSource(&source);
		EndRun(writer);
	}
	pfree(writer);
}

/*
 * Sort a partition's buffer into the scratch array and sum equal
 * fingerprints there; returns how many classes the run holds
 */
int64
SortAndSumBuffer(FreqState *state, FreqPartition *partition, CountedClass **run)
{
	CountedClass *sorted;
	int64		nrun = 0;

	/* the sort's scratch may have to grow first */
	SpillUntilFits(state, NULL, 0,
				   (double) (GrownCapacity(state->scratch_capacity, partition->nbuffered) -
							 state->scratch_capacity) * sizeof(CountedClass) +
				   (double) Max(BucketsFor(partition->nbuffered) + 1 - state->bucket_capacity, 0) *
				   sizeof(int64));
	sorted = SortBuffer(state, partition->buffer, partition->nbuffered);

	for (int64 i = 0; i < partition->nbuffered; i++)
	{
		if (nrun > 0 && QidFingerprintCompare(&sorted[nrun - 1].key, &sorted[i].key) == 0)
			sorted[nrun - 1].count += sorted[i].count;
		else
			sorted[nrun++] = sorted[i];
	}
	*run = sorted;
	return nrun;
}

/* Sort a partition's buffer, sum equal fingerprints, and merge it in */
void
DrainPartition(FreqState *state, FreqPartition *partition)
{
	CountedClass *sorted;
	int64		nrun = 0;
	int64		wanted;

	if (partition->nbuffered == 0)
		return;
	DecodePartitions(state);
	nrun = SortAndSumBuffer(state, partition, &sorted);
	SpillUntilFits(state, partition, nrun, 0);
	MergeRun(state, partition, sorted, nrun);
	partition->nbuffered = 0;

	/* let the (now empty) buffer grow with the partition, so merges stay rare */
	wanted = Max(MIN_BUFFERED_PER_PARTITION, partition->nclasses / 4);
	if (SpillAllowed(state) && wanted > partition->buffer_capacity)
	{
		/*
		 * A state that may spill keeps its buffers and the sort's scratch to a
		 * quarter of the budget, grown only when that fits without spilling,
		 * so that the arrays (the runs to be) get the rest.
		 */
		int64		cap = state->budget / (4 * (PARTITIONS + 1) * sizeof(CountedClass));
		double		added;

		wanted = Min(wanted, Max(cap, MIN_BUFFERED_PER_PARTITION));
		/* GrowArray rounds the capacity up by doubling */
		wanted = GrownCapacity(0, wanted);
		added = (double) (wanted - partition->buffer_capacity) * sizeof(CountedClass) +
			(double) (GrownCapacity(state->scratch_capacity, wanted) -
					  state->scratch_capacity) * sizeof(CountedClass) +
			(double) Max(BucketsFor(wanted) + 1 - state->bucket_capacity, 0) * sizeof(int64);
		if (state->memory + added > (double) state->budget)
			wanted = partition->buffer_capacity;
	}
	if (wanted > partition->buffer_capacity)
	{
		state->memory -= (double) partition->buffer_capacity * sizeof(CountedClass);
		pfree(partition->buffer);
		partition->buffer = NULL;
		partition->buffer_capacity = 0;
		partition->buffer = GrowArray(state, NULL, &partition->buffer_capacity, wanted);
	}
}

/*
 * Decode a received state's encoded partitions into sorted arrays, or
 * straight into runs where an array would not fit the budget, and drop the
 * encoded copy (or close the worker file).  The in-memory counters then
 * cover the arrays only.
 */
void
DecodePartitions(FreqState *state)
{
	FreqCounts	in_memory = {0, 0, 0};

	if (!Undecoded(state))
		return;
	for (int p = 0; p < PARTITIONS; p++)
	{
		FreqPartition *partition = &state->parts[p];
		MergeSource source;
		RunWriter  *writer = NULL;

		CHECK_FOR_INTERRUPTS();
		OpenPartitionSource(&source, state, p, WindowBytes(state, 1, 1));
		if (partition->nencoded > 0 && SpillAllowed(state) &&
			state->memory + (double) MappedBytes(partition->nencoded) > (double) state->budget)
		{
			/* a partition too large for the budget goes straight to a run */
			elog(DEBUG1, "qidrisk: writing a received partition of " INT64_FORMAT
				 " classes to a temporary file", partition->nencoded);
			writer = palloc(sizeof(RunWriter));
			BeginRun(writer, state, partition);
			qidrisk_freq_events.partitions_to_runs++;
		}
		else if (partition->nencoded > 0)
		{
			GrowClassArray(state, partition, partition->nencoded);
			qidrisk_freq_events.partitions_decoded++;
		}
		for (;;)
		{
			int64		n = source.end - source.at;

			if (writer != NULL)
				WriteRunClasses(writer, source.at, n);
			else if (n > 0)
			{
				memcpy(partition->classes + partition->nclasses, source.at,
					   n * sizeof(CountedClass));
				partition->nclasses += n;
				for (int64 i = 0; i < n; i++)
					CountClassInto(&in_memory, source.at[i].count);
			}
			if (source.left == 0)
				break;
			RefillSource(&source);
		}
		CloseSource(&source);
		if (writer != NULL)
		{
			EndRun(writer);
			pfree(writer);
		}
		partition->encoded = NULL;
		partition->in_file = false;
	}
	state->rows = in_memory.rows;
	state->classes = in_memory.classes;
	state->singletons = in_memory.singletons;
	ReleaseEncoded(state);
	state->streamed = false;
}

/* Merge a sorted run into a partition's array, spilling first if it would not fit */
static void
MergeIntoPartition(FreqState *state, FreqPartition *partition,
				   const CountedClass *run, int64 nrun)
{
	DecodePartitions(state);
	SpillUntilFits(state, partition, nrun, 0);
	MergeRun(state, partition, run, nrun);
}

/*
 * Merge the arrays of a partitioned state (decoded, its buffers drained or
 * sorted) into another's, partition by partition, without changing it: a
 * lent state may be read by other aggregates still.
 */
void
MergePartitionsOf(FreqState *into, const FreqState *from)
{
	if (Undecoded(from) || (from->unsettled && !from->buffers_sorted))
		elog(ERROR, "qidrisk: merging a frequency state whose classes are not sorted");
	for (int p = 0; p < PARTITIONS; p++)
	{
		const FreqPartition *partition = &from->parts[p];

		CHECK_FOR_INTERRUPTS();
		MergeIntoPartition(into, &into->parts[p], partition->classes, partition->nclasses);
		if (from->unsettled && partition->nbuffered > 0)
			MergeIntoPartition(into, &into->parts[p], partition->buffer, partition->nbuffered);
	}
}

/*
 * Stream partition p of a state through one k-way merge: its array, the
 * attached states' arrays and sorted buffers (narrays inputs with its own
 * array) and its file runs, merged into fewer runs first when there are more
 * than the fan-in allows.  Counts the merged classes into counts and calls
 * visit (if any) with each (StreamClasses' step).
 */
void
StreamPartition(FreqState *state, int p, int narrays, FreqCounts *counts,
				ClassVisitor visit, void *arg)
{
	FreqPartition *partition = &state->parts[p];
	MergeSource *sources;
	int			nsources = 0;
	int			window_bytes;

	CHECK_FOR_INTERRUPTS();
	ReduceRuns(state, partition, MergeFanIn(state) - narrays);
	window_bytes = WindowBytes(state, narrays + partition->nruns,
							   FilesOfPartition(state, p));
	sources = palloc((narrays + partition->nruns) * sizeof(MergeSource));
	OpenPartitionSource(&sources[nsources++], state, p, window_bytes);
	for (FreqState *source = state->attached; source != NULL;
		 source = source->next_attached)
	{
		OpenPartitionSource(&sources[nsources++], source, p, window_bytes);
		if (source->unsettled)
			OpenArraySource(&sources[nsources++], source->parts[p].buffer,
							source->parts[p].nbuffered);
	}
	for (int i = 0; i < partition->nruns; i++)
		OpenRunSource(&sources[nsources++], &partition->runs[i]);
	MergeSources(sources, nsources, counts, visit, arg);
	for (int i = 0; i < nsources; i++)
		CloseSource(&sources[i]);
	pfree(sources);
}
