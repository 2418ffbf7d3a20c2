/*
 * freqstate.c
 *	  The frequency state: a hash table from QID fingerprint to class size.
 *
 * Every frequency aggregate shares this state, so one scan and one table serve
 * singleton_count, class_count, k_anonymity and class_profile in one query.
 *
 * A small state is one hash table.  Past PARTITION_AFTER_CLASSES classes the
 * state splits into PARTITIONS partitions by the fingerprint's top bits.  A
 * partition keeps its classes as one array sorted by fingerprint, 24 bytes a
 * class, and appends new rows to an unsorted buffer; a full buffer is sorted,
 * its equal fingerprints summed, and merged into the array in one linear pass
 * (a two-level log-structured merge).  Arrays grow in place, nothing is
 * rehashed, and combining two states is a merge of sorted arrays.  Counters
 * (rows, classes, singletons) include buffered rows only after
 * FreqStateSettle, which every reader calls.
 *
 * All tables together are bounded by qidrisk.max_state_memory.
 */
#include "postgres.h"

#include <math.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "port/pg_bswap.h"

#include "qidrisk.h"

/* Fraction of a table's buckets in use before it doubles */
#define TABLE_FILLFACTOR 0.9

/* Fingerprints are already uniform hashes: use 32 of their bits directly */
#define SH_PREFIX freqhash
#define SH_FILLFACTOR TABLE_FILLFACTOR
#define SH_ELEMENT_TYPE FreqEntry
#define SH_KEY_TYPE QidFingerprint
#define SH_KEY key
#define SH_HASH_KEY(tb, k) ((uint32) ((k).lo >> 32))
#define SH_EQUAL(tb, a, b) ((a).lo == (b).lo && (a).hi == (b).hi)
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/* Partitioning: by the top PARTITION_BITS bits of the fingerprint's high half */
#define PARTITION_BITS 2
#define PARTITIONS (1 << PARTITION_BITS)
#define PartitionOf(fp) ((int) ((fp)->hi >> (64 - PARTITION_BITS)))

/* Split into partitions once a single table holds this many classes */
#define PARTITION_AFTER_CLASSES 65536

/* A partition's buffer holds at least this many rows, and up to half its classes */
#define MIN_BUFFERED_PER_PARTITION 1024

/* Bytes per class in the fixed encoding: two fingerprint halves and a count */
#define SERIALIZED_CLASS_BYTES (3 * sizeof(int64))

/* Header: version, encoding, rows, singletons, has_param, param, number of classes */
#define SERIALIZED_HEADER_BYTES (2 + 2 * sizeof(int64) + 1 + sizeof(double) + sizeof(int64))

/*
 * How the classes follow the header.  A small state's classes come in hash
 * order, as three int64 each.  A partitioned state's classes come in
 * ascending fingerprint order, so each is written as the gap from the
 * previous high half (a varint), its low half and its size (a varint): about
 * 16 bytes instead of 24, which is what parallel workers send the leader.
 */
#define ENCODING_FIXED 0
#define ENCODING_ASCENDING 1

/* An unsigned LEB128 varint of 64 bits takes at most this many bytes */
#define MAX_VARINT_BYTES 10

/* How often long loops check for cancellation */
#define INTERRUPT_CHECK_MASK 0xFFFF

/* A class of a partition: its fingerprint and size */
typedef struct CountedClass
{
	QidFingerprint key;
	int64		count;
} CountedClass;

struct FreqPartition
{
	CountedClass *classes;		/* sorted by fingerprint, no duplicates */
	int64		nclasses;
	int64		capacity;
	CountedClass *buffer;		/* rows not yet merged, unsorted */
	int64		nbuffered;
	int64		buffer_capacity;
};


/* Stop with an error naming the setting that bounds a state's memory */
static void
ReportBudgetExceeded(int64 classes, double bytes, Size budget)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("qidrisk frequency state exceeds qidrisk.max_state_memory"),
			 errdetail("The state holds " INT64_FORMAT " classes and would grow to "
					   "%.0f kB; the budget is %zu kB.",
					   classes, ceil(bytes / 1024.0), budget / 1024),
			 errhint("Raise qidrisk.max_state_memory (or work_mem when it is -1), "
					 "or aggregate fewer rows per group.")));
}

/* Bytes a table built for nclasses classes occupies */
static double
TableBytesFor(Size nclasses)
{
	return (double) pg_nextpower2_64((uint64) (nclasses / TABLE_FILLFACTOR) + 1) *
		sizeof(FreqEntry);
}

/* Create a hash table for about nclasses classes, within the budget */
static freqhash_hash *
CreateTable(FreqState *state, Size nclasses)
{
	freqhash_hash *table;
	double		bytes = TableBytesFor(nclasses);

	if (state->memory + bytes > (double) state->budget)
		ReportBudgetExceeded(state->classes + (int64) nclasses,
							 state->memory + bytes, state->budget);
	table = freqhash_create(state->context, nclasses, NULL);
	state->memory += (double) table->size * sizeof(FreqEntry);
	return table;
}

/* Release a table and its share of the budget */
static void
DestroyTable(FreqState *state, freqhash_hash *table)
{
	state->memory -= (double) table->size * sizeof(FreqEntry);
	freqhash_destroy(table);
}

/*
 * Add count rows of class fp to table, keeping the counters and the budget.
 * A table grows at its fill threshold, and simplehash also grows one early
 * when probe sequences get long; the check after the insert catches that.
 */
static inline void
InsertIntoTable(FreqState *state, freqhash_hash *table,
				const QidFingerprint *fp, int64 count)
{
	FreqEntry  *entry;
	bool		found;
	uint64		size_before = table->size;

	if (unlikely(table->members + 1 >= table->grow_threshold))
	{
		double		next = state->memory + (double) table->size * sizeof(FreqEntry);

		if (next > (double) state->budget)
			ReportBudgetExceeded(state->classes, next, state->budget);
	}

	entry = freqhash_insert(table, *fp, &found);

	if (unlikely(table->size != size_before))
	{
		state->memory += (double) (table->size - size_before) * sizeof(FreqEntry);
		if (state->memory > (double) state->budget)
			ReportBudgetExceeded(state->classes, state->memory, state->budget);
	}

	if (!found)
	{
		entry->count = count;
		state->classes++;
		if (count == 1)
			state->singletons++;
	}
	else
	{
		if (entry->count == 1)
			state->singletons--;
		entry->count += count;
	}
	state->rows += count;
}

/* Grow an array of CountedClass to hold at least needed, within the budget */
static CountedClass *
GrowArray(FreqState *state, CountedClass *array, int64 *capacity, int64 needed)
{
	int64		new_capacity = Max(*capacity, 64);
	double		added;

	if (needed <= *capacity)
		return array;
	while (new_capacity < needed)
		new_capacity *= 2;
	added = (double) (new_capacity - *capacity) * sizeof(CountedClass);
	if (state->memory + added > (double) state->budget)
		ReportBudgetExceeded(state->classes, state->memory + added, state->budget);
	state->memory += added;
	*capacity = new_capacity;
	/* repalloc of a huge chunk remaps its pages instead of copying them */
	if (array == NULL)
		return MemoryContextAllocHuge(state->context, new_capacity * sizeof(CountedClass));
	return repalloc_huge(array, new_capacity * sizeof(CountedClass));
}

/*
 * A partition's class array lives in its own anonymous mapping, so it grows
 * with mremap: no copy, and pages only as they are first written.  The
 * state's memory context releases all mappings when it is reset (also on
 * error) through ReleaseMappings.
 */
static Size
MappedBytes(int64 capacity)
{
	Size		page = (Size) sysconf(_SC_PAGESIZE);

	return ((Size) capacity * sizeof(CountedClass) + page - 1) / page * page;
}

/* Grow (or create) a partition's class array to hold at least needed classes */
static void
GrowClassArray(FreqState *state, FreqPartition *partition, int64 needed)
{
	int64		capacity = Max(partition->capacity, 1024);
	Size		old_bytes = partition->classes ? MappedBytes(partition->capacity) : 0;
	Size		new_bytes;
	void	   *mapping;

	if (needed <= partition->capacity)
		return;
	while (capacity < needed)
		capacity *= 2;
	new_bytes = MappedBytes(capacity);
	if (state->memory + (double) (new_bytes - old_bytes) > (double) state->budget)
		ReportBudgetExceeded(state->classes, state->memory + (double) (new_bytes - old_bytes),
							 state->budget);
	if (partition->classes == NULL)
		mapping = mmap(NULL, new_bytes, PROT_READ | PROT_WRITE,
					   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	else
		mapping = mremap(partition->classes, old_bytes, new_bytes, MREMAP_MAYMOVE);
	if (mapping == MAP_FAILED)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory"),
				 errdetail("Failed on a request of size %zu in qidrisk's frequency state.",
						   new_bytes)));
#ifdef MADV_HUGEPAGE
	/* large arrays fault in 2 MB at a time where the kernel allows it */
	if (new_bytes >= 4 * 1024 * 1024)
		(void) madvise(mapping, new_bytes, MADV_HUGEPAGE);
#endif
	partition->classes = mapping;
	partition->capacity = (int64) (new_bytes / sizeof(CountedClass));
	state->memory += (double) (new_bytes - old_bytes);
}

/* Unmap every partition's class array (memory context reset callback) */
static void
ReleaseMappings(void *arg)
{
	FreqState  *state = (FreqState *) arg;

	if (state->parts == NULL)
		return;
	for (int p = 0; p < PARTITIONS; p++)
	{
		FreqPartition *partition = &state->parts[p];

		if (partition->classes != NULL)
			munmap(partition->classes, MappedBytes(partition->capacity));
		partition->classes = NULL;
		partition->capacity = 0;
	}
}

/*
 * Merge a sorted, duplicate-free run of classes into a partition's array,
 * updating the counters.  A read-only pass finds the merged length; the
 * array grows (in place where the allocator can) and the merge then runs
 * from the back, so no second array is ever built.
 */
static void
MergeRun(FreqState *state, FreqPartition *partition, const CountedClass *run, int64 nrun)
{
	CountedClass *classes;
	int64		n = partition->nclasses;
	int64		shared = 0;
	int64		i;
	int64		j;
	int64		w;

	if (nrun == 0)
		return;
	for (i = 0, j = 0; i < n && j < nrun;)
	{
		int			c = QidFingerprintCompare(&partition->classes[i].key, &run[j].key);

		shared += (c == 0);
		i += (c <= 0);
		j += (c >= 0);
	}

	GrowClassArray(state, partition, n + nrun - shared);
	classes = partition->classes;
	i = n - 1;
	j = nrun - 1;
	w = n + nrun - shared - 1;
	while (j >= 0)
	{
		int			c = (i >= 0) ? QidFingerprintCompare(&classes[i].key, &run[j].key) : -1;

		if ((w & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		if (c > 0)
			classes[w--] = classes[i--];
		else if (c < 0)
		{
			/* a new class */
			classes[w--] = run[j];
			state->classes++;
			state->singletons += (run[j].count == 1);
			state->rows += run[j].count;
			j--;
		}
		else
		{
			/* a class seen before grows */
			state->singletons -= (classes[i].count == 1);
			state->rows += run[j].count;
			classes[w] = classes[i--];
			classes[w--].count += run[j--].count;
		}
	}
	partition->nclasses = n + nrun - shared;
}

/*
 * Sort a buffer of uniformly distributed fingerprints into the state's
 * scratch array: scatter them into buckets by the bits below the partition
 * bits (about four per bucket), then insertion-sort the nearly sorted result.
 * Linear time for hash values; the scratch stays in cache between calls.
 */
static CountedClass *
SortBuffer(FreqState *state, const CountedClass *buffer, int64 n)
{
	int			bits = Max(1, pg_leftmost_one_pos64((uint64) Max(n / 4, 1)));
	int64		nbuckets = INT64CONST(1) << bits;
	CountedClass *sorted;
	int64	   *starts;

	state->scratch = GrowArray(state, state->scratch, &state->scratch_capacity, n);
	sorted = state->scratch;
	if (nbuckets + 1 > state->bucket_capacity)
	{
		double		added = (double) (nbuckets + 1 - state->bucket_capacity) * sizeof(int64);

		if (state->memory + added > (double) state->budget)
			ReportBudgetExceeded(state->classes, state->memory + added, state->budget);
		state->memory += added;
		state->buckets = state->buckets ?
			repalloc_huge(state->buckets, (nbuckets + 1) * sizeof(int64)) :
			MemoryContextAllocHuge(state->context, (nbuckets + 1) * sizeof(int64));
		state->bucket_capacity = nbuckets + 1;
	}
	starts = state->buckets;
	memset(starts, 0, (nbuckets + 1) * sizeof(int64));

#define BucketOf(c) ((int64) (((c)->key.hi << PARTITION_BITS) >> (64 - bits)))
	for (int64 i = 0; i < n; i++)
		starts[BucketOf(&buffer[i]) + 1]++;
	for (int64 b = 0; b < nbuckets; b++)
		starts[b + 1] += starts[b];
	for (int64 i = 0; i < n; i++)
		sorted[starts[BucketOf(&buffer[i])]++] = buffer[i];
#undef BucketOf

	/* every bucket's values precede the next bucket's: sort within buckets */
	for (int64 i = 1; i < n; i++)
	{
		CountedClass item = sorted[i];
		int64		k = i - 1;

		if ((i & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		while (k >= 0 && QidFingerprintCompare(&sorted[k].key, &item.key) > 0)
		{
			sorted[k + 1] = sorted[k];
			k--;
		}
		sorted[k + 1] = item;
	}
	return sorted;
}

/* Sort a partition's buffer, sum equal fingerprints, and merge it in */
static void
DrainPartition(FreqState *state, FreqPartition *partition)
{
	CountedClass *sorted;
	int64		nrun = 0;
	int64		wanted;

	if (partition->nbuffered == 0)
		return;
	sorted = SortBuffer(state, partition->buffer, partition->nbuffered);
	for (int64 i = 0; i < partition->nbuffered; i++)
	{
		if (nrun > 0 && QidFingerprintCompare(&sorted[nrun - 1].key, &sorted[i].key) == 0)
			sorted[nrun - 1].count += sorted[i].count;
		else
			sorted[nrun++] = sorted[i];
	}
	MergeRun(state, partition, sorted, nrun);
	partition->nbuffered = 0;

	/* let the (now empty) buffer grow with the partition, so merges stay rare */
	wanted = Max(MIN_BUFFERED_PER_PARTITION, partition->nclasses / 4);
	if (wanted > partition->buffer_capacity)
	{
		state->memory -= (double) partition->buffer_capacity * sizeof(CountedClass);
		pfree(partition->buffer);
		partition->buffer = NULL;
		partition->buffer_capacity = 0;
		partition->buffer = GrowArray(state, NULL, &partition->buffer_capacity, wanted);
	}
}

/* Queue count rows of class fp in its partition's buffer */
static inline void
BufferClass(FreqState *state, const QidFingerprint *fp, int64 count)
{
	FreqPartition *partition = &state->parts[PartitionOf(fp)];

	if (unlikely(partition->nbuffered == partition->buffer_capacity))
		DrainPartition(state, partition);
	partition->buffer[partition->nbuffered].key = *fp;
	partition->buffer[partition->nbuffered].count = count;
	partition->nbuffered++;
	state->unsettled = true;
}

/* Move a single-table state into partitions */
static void
Partition(FreqState *state)
{
	freqhash_hash *single = state->single;
	double		bytes = (double) PARTITIONS * sizeof(FreqPartition);

	if (state->memory + bytes > (double) state->budget)
		ReportBudgetExceeded(state->classes, state->memory + bytes, state->budget);
	state->parts = MemoryContextAllocZero(state->context, PARTITIONS * sizeof(FreqPartition));
	state->memory += bytes;
	state->release.func = ReleaseMappings;
	state->release.arg = state;
	MemoryContextRegisterResetCallback(state->context, &state->release);
	for (int p = 0; p < PARTITIONS; p++)
		state->parts[p].buffer = GrowArray(state, NULL, &state->parts[p].buffer_capacity,
										   MIN_BUFFERED_PER_PARTITION);

	state->single = NULL;
	if (single != NULL)
	{
		freqhash_iterator iterator;
		FreqEntry  *entry;

		/* the classes are counted again as they merge in */
		state->rows = state->classes = state->singletons = 0;
		freqhash_start_iterate(single, &iterator);
		while ((entry = freqhash_iterate(single, &iterator)) != NULL)
			BufferClass(state, &entry->key, entry->count);
		DestroyTable(state, single);
	}
}

/* Create an empty state in context, sized for about nclasses classes */
FreqState *
FreqStateCreate(MemoryContext context, Size nclasses)
{
	FreqState  *state = MemoryContextAllocZero(context, sizeof(FreqState));

	state->context = context;
	state->budget = QidStateMemoryBudget();
	state->memory = sizeof(FreqState);
	if (nclasses > PARTITION_AFTER_CLASSES)
		Partition(state);
	else
		state->single = CreateTable(state, Max(nclasses, 64));
	return state;
}

/* Add count rows of class fp */
static inline void
AddClass(FreqState *state, const QidFingerprint *fp, int64 count)
{
	if (state->single == NULL)
	{
		BufferClass(state, fp, count);
		return;
	}
	InsertIntoTable(state, state->single, fp, count);
	/* a window aggregate reads its state after every row: keep it one table */
	if (unlikely(state->classes > PARTITION_AFTER_CLASSES) && !state->windowed)
		Partition(state);
}

/* Count one row of class fp */
void
FreqStateAddRow(FreqState *state, const QidFingerprint *fp)
{
	AddClass(state, fp, 1);
}

/* Merge every partition's buffered rows into its array */
static void
DrainBuffers(FreqState *state)
{
	if (!state->unsettled)
		return;
	for (int p = 0; p < PARTITIONS; p++)
	{
		CHECK_FOR_INTERRUPTS();
		DrainPartition(state, &state->parts[p]);
	}
	state->unsettled = false;
}

/*
 * Combining partitioned states that are ours to keep (deserialized ones)
 * only attaches them; the final function then reads all of them in one
 * streaming merge, and no merged copy of the classes is ever written.  Any
 * other use merges them in first.
 */
bool
FreqStateAttach(FreqState *into, FreqState *from)
{
	Assert(into->single == NULL && from->single == NULL && from->attached == NULL);

	/* the attached states count against the budget too; past it, merge */
	if (into->memory + into->attached_memory + from->memory > (double) into->budget)
		return false;
	into->attached_memory += from->memory;
	MergeAggParameter(&into->has_param, &into->param, from->has_param, from->param);
	from->next_attached = into->attached;
	into->attached = from;
	into->streamed = false;
	return true;
}

/* Merge the attached states' classes into the state's own arrays */
static void
MaterializeAttached(FreqState *state)
{
	while (state->attached != NULL)
	{
		FreqState  *attached = state->attached;

		for (int p = 0; p < PARTITIONS; p++)
		{
			CHECK_FOR_INTERRUPTS();
			MergeRun(state, &state->parts[p], attached->parts[p].classes,
					 attached->parts[p].nclasses);
		}
		state->attached = attached->next_attached;
		state->attached_memory -= attached->memory;
		attached->next_attached = NULL;
		FreqStateFree(attached);
	}
	state->streamed = false;
}

/*
 * Read the classes of a state and its attached states as one, partition by
 * partition, by a k-way merge of their sorted arrays; count the merged
 * classes and call visitor (if any) with each merged class size.
 */
static void
StreamAttached(FreqState *state, FreqVisitor visitor, void *arg)
{
	FreqState  *sources[64];
	int			nsources = 0;
	int64		rows = 0;
	int64		classes = 0;
	int64		singletons = 0;

	DrainBuffers(state);
	sources[nsources++] = state;
	for (FreqState *source = state->attached; source != NULL; source = source->next_attached)
	{
		if (nsources == lengthof(sources))
		{
			/* too many to stream: merge them in for good */
			FreqStateSettle(state);
			if (visitor != NULL)
				FreqStateVisit(state, visitor, arg);
			return;
		}
		sources[nsources++] = source;
	}

	for (int p = 0; p < PARTITIONS; p++)
	{
		int64		heads[64] = {0};

		CHECK_FOR_INTERRUPTS();
		for (;;)
		{
			const QidFingerprint *smallest = NULL;
			int64		count = 0;

			if ((classes & INTERRUPT_CHECK_MASK) == 0)
				CHECK_FOR_INTERRUPTS();
			for (int i = 0; i < nsources; i++)
			{
				FreqPartition *partition = &sources[i]->parts[p];

				if (heads[i] < partition->nclasses &&
					(smallest == NULL ||
					 QidFingerprintCompare(&partition->classes[heads[i]].key, smallest) < 0))
					smallest = &partition->classes[heads[i]].key;
			}
			if (smallest == NULL)
				break;
			for (int i = 0; i < nsources; i++)
			{
				FreqPartition *partition = &sources[i]->parts[p];

				if (heads[i] < partition->nclasses &&
					QidFingerprintCompare(&partition->classes[heads[i]].key, smallest) == 0)
					count += partition->classes[heads[i]++].count;
			}
			rows += count;
			classes++;
			singletons += (count == 1);
			if (visitor != NULL)
				visitor(count, arg);
		}
	}
	state->streamed_rows = rows;
	state->streamed_classes = classes;
	state->streamed_singletons = singletons;
	state->streamed = true;
}

/* Merge every buffered row, so the counters and arrays are complete */
void
FreqStateSettle(FreqState *state)
{
	DrainBuffers(state);
	if (state->attached != NULL)
		MaterializeAttached(state);
}

/* Account for one row of a class of size count leaving it */
static void
UncountRow(FreqState *state, int64 count)
{
	if (count == 1)
	{
		state->singletons--;
		state->classes--;
	}
	else if (count == 2)
		state->singletons++;
	state->rows--;
}

/* Take one row of class fp out again (inverse transition of a moving window) */
void
FreqStateRemoveRow(FreqState *state, const QidFingerprint *fp)
{
	FreqPartition *partition;
	int64		low = 0;
	int64		high;

	FreqStateSettle(state);
	if (state->single != NULL)
	{
		FreqEntry  *entry = freqhash_lookup(state->single, *fp);

		if (entry == NULL)
			elog(ERROR, "qidrisk: removing a row that was never added");
		UncountRow(state, entry->count);
		if (--entry->count == 0)
			freqhash_delete_item(state->single, entry);
		return;
	}

	/* binary search of the partition's sorted array */
	partition = &state->parts[PartitionOf(fp)];
	high = partition->nclasses - 1;
	while (low <= high)
	{
		int64		mid = low + (high - low) / 2;
		CountedClass *class = &partition->classes[mid];
		int			c = QidFingerprintCompare(&class->key, fp);

		if (c == 0)
		{
			UncountRow(state, class->count);
			if (--class->count == 0)
			{
				memmove(class, class + 1,
						(partition->nclasses - mid - 1) * sizeof(CountedClass));
				partition->nclasses--;
			}
			return;
		}
		if (c < 0)
			low = mid + 1;
		else
			high = mid - 1;
	}
	elog(ERROR, "qidrisk: removing a row that was never added");
}

/* Call visit for every class of a settled state, partition by partition */
typedef void (*ClassVisitor) (const QidFingerprint *key, int64 count, void *arg);

static void
ForEachClass(FreqState *state, ClassVisitor visit, void *arg)
{
	uint64		visited = 0;

	FreqStateSettle(state);
	if (state->single != NULL)
	{
		freqhash_iterator iterator;
		FreqEntry  *entry;

		freqhash_start_iterate(state->single, &iterator);
		while ((entry = freqhash_iterate(state->single, &iterator)) != NULL)
		{
			if ((++visited & INTERRUPT_CHECK_MASK) == 0)
				CHECK_FOR_INTERRUPTS();
			visit(&entry->key, entry->count, arg);
		}
		return;
	}
	for (int p = 0; p < PARTITIONS; p++)
	{
		FreqPartition *partition = &state->parts[p];

		for (int64 i = 0; i < partition->nclasses; i++)
		{
			if ((i & INTERRUPT_CHECK_MASK) == 0)
				CHECK_FOR_INTERRUPTS();
			visit(&partition->classes[i].key, partition->classes[i].count, arg);
		}
	}
}

static void
MergeClass(const QidFingerprint *key, int64 count, void *arg)
{
	AddClass((FreqState *) arg, key, count);
}

/* Add every class of from into into */
void
FreqStateMerge(FreqState *into, FreqState *from)
{
	FreqStateSettle(into);
	FreqStateSettle(from);

	MergeAggParameter(&into->has_param, &into->param, from->has_param, from->param);

	if (into->single != NULL && !into->windowed &&
		into->classes + from->classes > PARTITION_AFTER_CLASSES)
		Partition(into);

	if (into->single == NULL && from->single == NULL)
	{
		/* both partitioned: merge the sorted arrays, partition by partition */
		for (int p = 0; p < PARTITIONS; p++)
		{
			CHECK_FOR_INTERRUPTS();
			MergeRun(into, &into->parts[p], from->parts[p].classes,
					 from->parts[p].nclasses);
		}
		return;
	}
	ForEachClass(from, MergeClass, into);
}

/* Release a state's memory; the state must not be used afterwards */
void
FreqStateFree(FreqState *state)
{
	while (state->attached != NULL)
	{
		FreqState  *attached = state->attached;

		state->attached = attached->next_attached;
		FreqStateFree(attached);
	}
	if (state->single != NULL)
		DestroyTable(state, state->single);
	else
	{
		ReleaseMappings(state);
		for (int p = 0; p < PARTITIONS; p++)
			pfree(state->parts[p].buffer);
		pfree(state->parts);
		state->parts = NULL;
	}
	/* the struct itself stays: the context's reset callback still points to it */
	state->single = NULL;
}

/* The counters over the state and anything attached to it */
void
FreqStateCounts(FreqState *state, FreqCounts *counts)
{
	if (state->attached != NULL && !state->streamed)
		StreamAttached(state, NULL, NULL);
	if (state->attached != NULL)
	{
		counts->rows = state->streamed_rows;
		counts->classes = state->streamed_classes;
		counts->singletons = state->streamed_singletons;
		return;
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

	if (state->attached != NULL)
	{
		StreamAttached(state, visitor, arg);
		return;
	}
	ForEachClass(state, VisitClass, &context);
}

/* Bytes of value as an unsigned LEB128 varint */
static inline int
VarintLength(uint64 value)
{
	int			length = 1;

	while (value >= 0x80)
	{
		value >>= 7;
		length++;
	}
	return length;
}

/* Write value as an unsigned LEB128 varint; returns the byte after it */
static inline char *
WriteVarint(char *out, uint64 value)
{
	while (value >= 0x80)
	{
		*out++ = (char) ((value & 0x7F) | 0x80);
		value >>= 7;
	}
	*out++ = (char) value;
	return out;
}

/* Read an unsigned LEB128 varint, refusing truncated and over-long ones */
static inline bool
ReadVarint(const char **in, const char *end, uint64 *value)
{
	const unsigned char *at = (const unsigned char *) *in;
	uint64		result = 0;

	for (int shift = 0; shift < 64; shift += 7)
	{
		uint64		byte;

		if ((const char *) at >= end)
			return false;
		byte = *at++;
		/* the tenth byte may carry only the top bit of 64 */
		if (shift == 63 && byte > 1)
			return false;
		result |= (byte & 0x7F) << shift;
		if ((byte & 0x80) == 0)
		{
			*in = (const char *) at;
			*value = result;
			return true;
		}
	}
	return false;
}

/* Where an ascending encoding is being written or sized */
typedef struct AscendingWriter
{
	char	   *out;			/* next byte, or NULL when only sizing */
	double		bytes;			/* bytes written or needed so far */
	uint64		previous_hi;
} AscendingWriter;

/* Write (or size) one class of the ascending encoding */
static void
WriteAscendingClass(const QidFingerprint *key, int64 count, void *arg)
{
	AscendingWriter *writer = (AscendingWriter *) arg;
	uint64		gap = key->hi - writer->previous_hi;
	uint64		lo;

	writer->previous_hi = key->hi;
	if (writer->out == NULL)
	{
		writer->bytes += VarintLength(gap) + sizeof(uint64) + VarintLength((uint64) count);
		return;
	}
	writer->out = WriteVarint(writer->out, gap);
	lo = pg_hton64(key->lo);
	memcpy(writer->out, &lo, sizeof(uint64));
	writer->out += sizeof(uint64);
	writer->out = WriteVarint(writer->out, (uint64) count);
}

/* Write one class of the fixed encoding into a buffer sized up front */
static void
WriteFixedClass(const QidFingerprint *key, int64 count, void *arg)
{
	StringInfo	buf = (StringInfo) arg;

	pq_writeint64(buf, (int64) key->lo);
	pq_writeint64(buf, (int64) key->hi);
	pq_writeint64(buf, count);
}

/*
 * Serialize: format version, encoding, rows, singletons, parameter, class
 * count, then the classes in the encoding the state's layout allows.
 */
bytea *
FreqStateSerialize(FreqState *state)
{
	StringInfoData buf;
	AscendingWriter writer = {NULL, 0, 0};
	int			encoding;
	double		bytes;

	FreqStateSettle(state);
	/* partitions are visited in order and each is sorted: one ascending stream */
	encoding = state->single == NULL ? ENCODING_ASCENDING : ENCODING_FIXED;
	if (encoding == ENCODING_ASCENDING)
		ForEachClass(state, WriteAscendingClass, &writer);
	else
		writer.bytes = (double) state->classes * SERIALIZED_CLASS_BYTES;
	bytes = SERIALIZED_HEADER_BYTES + VARHDRSZ + writer.bytes;
	if (bytes > MaxAllocSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("qidrisk frequency state too large to serialize"),
				 errdetail("The state holds " INT64_FORMAT " classes, %.0f bytes serialized; "
						   "one message holds at most %zu bytes.",
						   state->classes, bytes, (Size) MaxAllocSize),
				 errhint("Disable parallel aggregation (max_parallel_workers_per_gather = 0) "
						 "or aggregate fewer rows per group.")));

	pq_begintypsend(&buf);
	enlargeStringInfo(&buf, (int) bytes);
	pq_sendbyte(&buf, QIDRISK_STATE_FORMAT_VERSION);
	pq_sendbyte(&buf, encoding);
	pq_sendint64(&buf, state->rows);
	pq_sendint64(&buf, state->singletons);
	pq_sendbyte(&buf, state->has_param ? 1 : 0);
	pq_sendfloat8(&buf, state->param);
	pq_sendint64(&buf, state->classes);
	if (encoding == ENCODING_ASCENDING)
	{
		/* the buffer was enlarged for every class by the sizing pass */
		writer.out = buf.data + buf.len;
		writer.previous_hi = 0;
		ForEachClass(state, WriteAscendingClass, &writer);
		Assert(writer.out - (buf.data + buf.len) == (ptrdiff_t) writer.bytes);
		buf.len += (int) (writer.out - (buf.data + buf.len));
		buf.data[buf.len] = '\0';
	}
	else
		ForEachClass(state, WriteFixedClass, &buf);
	return pq_endtypsend(&buf);
}

/* Raise the error for a serialized state that does not parse */
static void
CorruptState(const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg("invalid qidrisk frequency state"),
			 errdetail("%s", detail)));
}

/* Decode the next class of an ascending stream, validating it against previous */
static inline void
ReadAscendingClass(const char **at, const char *end, CountedClass *class,
				   const CountedClass *previous, bool first, int64 rows_left)
{
	uint64		gap;
	uint64		lo;
	uint64		count;

	if (!ReadVarint(at, end, &gap) || end - *at < (ptrdiff_t) sizeof(uint64))
		CorruptState("The state's classes are truncated.");
	memcpy(&lo, *at, sizeof(uint64));
	class->key.lo = pg_ntoh64(lo);
	*at += sizeof(uint64);
	if (!ReadVarint(at, end, &count))
		CorruptState("The state's classes are truncated.");
	if (gap > PG_UINT64_MAX - previous->key.hi)
		CorruptState("The state's classes are not in ascending order.");
	class->key.hi = previous->key.hi + gap;
	if (!first && gap == 0 && class->key.lo <= previous->key.lo)
		CorruptState("The state's classes are not in ascending order.");
	if (count == 0 || count > (uint64) rows_left)
		CorruptState("A class of the state has an impossible size.");
	class->count = (int64) count;
}

/*
 * Read an ascending stream of nclasses classes: a first pass validates it
 * and sizes the partitions, a second writes each partition's sorted array
 * directly (or, for a state too small to be partitioned, adds the classes).
 */
static void
DeserializeAscending(FreqState *state, StringInfo buf, int64 nclasses, int64 rows)
{
	const char *start = buf->data + buf->cursor;
	const char *end = buf->data + buf->len;
	const char *at = start;
	int64		sizes[PARTITIONS] = {0};
	CountedClass class = {{0, 0}, 0};
	int64		running_rows = 0;

	for (int64 i = 0; i < nclasses; i++)
	{
		CountedClass previous = class;

		if ((i & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		ReadAscendingClass(&at, end, &class, &previous, i == 0, rows - running_rows);
		running_rows += class.count;
		sizes[PartitionOf(&class.key)]++;
	}
	if (at != end)
		CorruptState("The state's length does not match its number of classes.");

	at = start;
	class.key.lo = class.key.hi = 0;
	if (state->single != NULL)
	{
		for (int64 i = 0; i < nclasses; i++)
		{
			CountedClass previous = class;

			ReadAscendingClass(&at, end, &class, &previous, i == 0, PG_INT64_MAX);
			AddClass(state, &class.key, class.count);
		}
	}
	else
	{
		/* ascending fingerprints fill partition 0, then 1, ... in order */
		for (int p = 0; p < PARTITIONS; p++)
		{
			FreqPartition *partition = &state->parts[p];

			CHECK_FOR_INTERRUPTS();
			if (sizes[p] == 0)
				continue;
			GrowClassArray(state, partition, sizes[p]);
			for (int64 i = 0; i < sizes[p]; i++)
			{
				CountedClass previous = class;

				ReadAscendingClass(&at, end, &partition->classes[i], &previous,
								   p == 0 && i == 0, PG_INT64_MAX);
				class = partition->classes[i];
				state->singletons += (class.count == 1);
			}
			partition->nclasses = sizes[p];
		}
		state->classes = nclasses;
		state->rows = running_rows;
	}
	buf->cursor = buf->len;
}

/* Rebuild a state from FreqStateSerialize's output, validating everything */
FreqState *
FreqStateDeserialize(MemoryContext context, bytea *bytes)
{
	StringInfoData buf;
	FreqState  *state;
	int64		rows;
	int64		singletons;
	int64		nclasses;
	int			has_param;
	double		param;
	int64		running_rows;
	int			version;
	int			encoding;

	buf.data = VARDATA_ANY(bytes);
	buf.len = VARSIZE_ANY_EXHDR(bytes);
	buf.maxlen = buf.len;
	buf.cursor = 0;

	if (buf.len < (int) SERIALIZED_HEADER_BYTES)
		CorruptState("The state is shorter than its header.");
	version = pq_getmsgbyte(&buf);
	if (version != QIDRISK_STATE_FORMAT_VERSION)
		CorruptState("The state was written in an unknown format version.");
	encoding = pq_getmsgbyte(&buf);
	if (encoding != ENCODING_FIXED && encoding != ENCODING_ASCENDING)
		CorruptState("The state's classes are in an unknown encoding.");
	rows = pq_getmsgint64(&buf);
	singletons = pq_getmsgint64(&buf);
	has_param = pq_getmsgbyte(&buf);
	param = pq_getmsgfloat8(&buf);
	nclasses = pq_getmsgint64(&buf);
	if (rows < 0 || singletons < 0 || has_param > 1 || isnan(param) || isinf(param) ||
		(has_param == 0 && param != 0) || nclasses < 0 || nclasses > rows ||
		singletons > nclasses)
		CorruptState("The state's header holds impossible counts.");
	if (encoding == ENCODING_FIXED &&
		(double) (buf.len - buf.cursor) != (double) nclasses * SERIALIZED_CLASS_BYTES)
		CorruptState("The state's length does not match its number of classes.");

	state = FreqStateCreate(context, (Size) nclasses);
	state->private_copy = true;
	running_rows = 0;
	state->has_param = (has_param == 1);
	state->param = param;
	if (encoding == ENCODING_ASCENDING)
		DeserializeAscending(state, &buf, nclasses, rows);
	for (int64 i = 0; encoding == ENCODING_FIXED && i < nclasses; i++)
	{
		QidFingerprint fp;
		int64		count;

		if ((i & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		fp.lo = (uint64) pq_getmsgint64(&buf);
		fp.hi = (uint64) pq_getmsgint64(&buf);
		count = pq_getmsgint64(&buf);
		if (count <= 0 || count > rows - running_rows)
			CorruptState("A class of the state has an impossible size.");
		running_rows += count;
		AddClass(state, &fp, count);
	}
	pq_getmsgend(&buf);
	FreqStateSettle(state);

	if (state->rows != rows || state->singletons != singletons ||
		state->classes != nclasses)
		CorruptState("The state's classes do not add up to its header.");
	return state;
}
