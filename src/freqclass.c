/*
 * freqclass.c
 *	  The base of the frequency engine: sorted class arrays and runs.
 *
 * A partition keeps its classes as one array sorted by fingerprint, 24 bytes
 * a class (CountedClass).  This file owns those arrays: growing them in
 * place within the state's budget (qidrisk.max_state_memory), the anonymous
 * mappings that hold large ones (and giving back their pages that hold no
 * class), the budget's errors, and sorting a buffer of
 * classes into the state's scratch array (SortBuffer).  It also owns the
 * reading side of everything sorted: the ascending encoding's decoder, and
 * the chunked readers (MergeSource) through which a merge reads an array, a
 * spilled run in a temporary file, or a received partition, in memory or
 * through a window onto a worker's file.  Every other engine file builds on
 * these; this one uses none of them.
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

#include "freqclass.h"
#include "settings.h"

/* Counted where each path runs; read by qidrisk_internal.state_events() */
FreqStateEvents qidrisk_freq_events;

/* Stop with an error naming the setting that bounds a state's memory */
void
ReportBudgetExceeded(FreqState *state, int64 classes, double bytes)
{
	const char *hint;

	if (!state->spill && qidrisk_spill && state->budget < MIN_SPILL_BUDGET)
		hint = "Raise qidrisk.max_state_memory (or work_mem when it is -1) to at least "
			"512 kB so that the state can spill to temporary files.";
	else if (!state->spill)
		hint = "Raise qidrisk.max_state_memory (or work_mem when it is -1), turn "
			"qidrisk.spill on, or aggregate fewer rows per group.";
	else if (state->windowed)
		hint = "Window aggregates do not spill: raise qidrisk.max_state_memory "
			"(or work_mem when it is -1), or aggregate fewer rows per frame.";
	else
		hint = "Raise qidrisk.max_state_memory (or work_mem when it is -1), "
			"or aggregate fewer rows per group.";
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("qidrisk frequency state exceeds qidrisk.max_state_memory"),
			 errdetail("The state holds " INT64_FORMAT " classes and would grow to "
					   "%.0f kB; the budget is %zu kB.",
					   classes, ceil(bytes / 1024.0), state->budget / 1024),
			 errhint("%s", hint)));
}

/* Most classes one array may hold: its bytes, rounded up to pages, stay far from wrapping */
#define MAX_CLASS_CAPACITY ((int64) (MaxAllocHugeSize / sizeof(CountedClass)))

/* Stop with an error for an array of more classes than can be addressed */
static void
ReportTooManyClasses(int64 nclasses)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("qidrisk frequency state too large"),
			 errdetail("An array of " INT64_FORMAT " classes was requested; one holds at most "
					   INT64_FORMAT ".", nclasses, MAX_CLASS_CAPACITY)));
}

/* The capacity GrowArray grows an array of capacity to for needed elements */
int64
GrownCapacity(int64 capacity, int64 needed)
{
	int64		new_capacity = Max(capacity, 64);

	if (needed <= capacity)
		return capacity;
	if (needed > MAX_CLASS_CAPACITY)
		ReportTooManyClasses(needed);
	while (new_capacity < needed)
		new_capacity *= 2;
	return new_capacity;
}

/* Grow an array of CountedClass to hold at least needed, within the budget */
CountedClass *
GrowArray(FreqState *state, CountedClass *array, int64 *capacity, int64 needed)
{
	int64		new_capacity = GrownCapacity(*capacity, needed);
	double		added;

	if (needed <= *capacity)
		return array;
	added = (double) (new_capacity - *capacity) * sizeof(CountedClass);
	if (state->memory + added > (double) state->budget)
		ReportBudgetExceeded(state, state->classes, state->memory + added);
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
Size
MappedBytes(int64 capacity)
{
	Size		page = (Size) sysconf(_SC_PAGESIZE);

	/* a count read from a message must not wrap the size around */
	if (capacity < 0 || capacity > MAX_CLASS_CAPACITY)
		ReportTooManyClasses(capacity);
	return ((Size) capacity * sizeof(CountedClass) + page - 1) / page * page;
}

/* Let a large mapping fault in 2 MB at a time where the kernel allows it */
static void
AdviseHugePages(void *mapping, Size bytes)
{
#ifdef MADV_HUGEPAGE
	if (bytes >= 4 * 1024 * 1024)
		(void) madvise(mapping, bytes, MADV_HUGEPAGE);
#endif
}

/* Stop with an error for a mapping the kernel refused */
static void
ReportMappingFailed(Size bytes)
{
	ereport(ERROR,
			(errcode(ERRCODE_OUT_OF_MEMORY),
			 errmsg("out of memory"),
			 errdetail("Failed on a request of size %zu in qidrisk's frequency state.",
					   bytes)));
}


/* Memory context reset callback (and ReleaseEncoded): unmap, once */
void
ReleaseMappedCopy(void *arg)
{
	MappedCopy *mapped = (MappedCopy *) arg;

	if (mapped->base != NULL)
		munmap(mapped->base, mapped->bytes);
	mapped->base = NULL;
}

/*
 * Map bytes of anonymous memory, released with context; with huge_pages, in
 * 2 MB pages where the kernel allows (for memory written once and kept: on a
 * virtual machine a huge page's first touch can cost more than the small
 * pages of a short-lived buffer)
 */
MappedCopy *
MapCopy(MemoryContext context, Size bytes, bool huge_pages)
{
	MappedCopy *mapped = MemoryContextAlloc(context, sizeof(MappedCopy));
	void	   *base = mmap(NULL, Max(bytes, 1), PROT_READ | PROT_WRITE,
							MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (base == MAP_FAILED)
	{
		pfree(mapped);
		ReportMappingFailed(bytes);
	}
	if (huge_pages)
		AdviseHugePages(base, bytes);
	mapped->base = base;
	mapped->bytes = Max(bytes, 1);
	mapped->release.func = ReleaseMappedCopy;
	mapped->release.arg = mapped;
	MemoryContextRegisterResetCallback(context, &mapped->release);
	return mapped;
}


/* Grow a mapping (of small pages) to bytes, keeping what it holds (mremap: no copy) */
void
RemapCopy(MappedCopy *mapped, Size bytes)
{
	void	   *base = mremap(mapped->base, mapped->bytes, bytes, MREMAP_MAYMOVE);

	if (base == MAP_FAILED)
		ReportMappingFailed(bytes);
	mapped->base = base;
	mapped->bytes = bytes;
}

/* Memory context reset callback (and ReleaseEncoded): close the file, once */
void
CloseEncodedFile(void *arg)
{
	EncodedFile *encoded = (EncodedFile *) arg;

	if (encoded->file > 0 && IsTransactionState())
		FileClose(encoded->file);
	encoded->file = 0;
}

/* Free a received state's copy of its encoded classes, or close its file */
void
ReleaseEncoded(FreqState *state)
{
	if (state->encoded_copy != NULL)
	{
		ReleaseMappedCopy(state->encoded_copy);
		state->memory -= (double) state->encoded_bytes;
	}
	if (state->encoded_file != NULL)
		CloseEncodedFile(state->encoded_file);
	state->encoded = NULL;
	state->encoded_bytes = 0;
	state->encoded_copy = NULL;
	state->encoded_file = NULL;
}

/* Bytes of a partition's mapping, the free classes before its array included */
Size
ArrayBytes(const FreqPartition *partition)
{
	return partition->classes ? MappedBytes(partition->capacity + partition->offset) : 0;
}

/* Grow (or create) a partition's class array to hold at least needed classes */
void
GrowClassArray(FreqState *state, FreqPartition *partition, int64 needed)
{
	int64		offset = partition->offset;
	int64		capacity = Max(partition->capacity + offset, 1024);
	Size		old_bytes = ArrayBytes(partition);
	Size		new_bytes;
	void	   *mapping;

	if (needed <= partition->capacity)
		return;
	/* doubling stays below INT64_MAX up to the largest array */
	if (needed > MAX_CLASS_CAPACITY - offset)
		ReportTooManyClasses(needed);
	while (capacity < needed + offset)
		capacity *= 2;
	capacity = Min(capacity, MAX_CLASS_CAPACITY);
	new_bytes = MappedBytes(capacity);
	/* a state that may spill grows only as far as it must near its budget */
	if (SpillAllowed(state) &&
		state->memory + (double) (new_bytes - old_bytes) > (double) state->budget)
		new_bytes = Max(MappedBytes(needed + offset), old_bytes);
	if (state->memory + (double) (new_bytes - old_bytes) > (double) state->budget)
		ReportBudgetExceeded(state, state->classes, state->memory + (double) (new_bytes - old_bytes));
	if (partition->classes == NULL)
		mapping = mmap(NULL, new_bytes, PROT_READ | PROT_WRITE,
					   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	else
		mapping = mremap(partition->classes - offset, old_bytes, new_bytes, MREMAP_MAYMOVE);
	if (mapping == MAP_FAILED)
		ReportMappingFailed(new_bytes);
	AdviseHugePages(mapping, new_bytes);
	partition->classes = (CountedClass *) mapping + offset;
	partition->capacity = (int64) (new_bytes / sizeof(CountedClass)) - offset;
	state->memory += (double) (new_bytes - old_bytes);
}

/* Give back the whole 2 MB blocks of [start, end) (huge pages are not split) */
static void
ReleaseBlocks(uintptr_t start, uintptr_t end)
{
	const uintptr_t block = 2 * 1024 * 1024;

	start = (start + block - 1) & ~(block - 1);
	end &= ~(block - 1);
#ifdef MADV_DONTNEED
	if (end > start)
		(void) madvise((void *) start, end - start, MADV_DONTNEED);
#endif
}

/*
 * Give the kernel back the pages of a partition's mapping that hold no
 * class: the free classes before the array (a merge from the back leaves
 * them) and the room after it (a merge from the front leaves it).  They were
 * written once; kept, they would stay resident while unused.  The mapping
 * and the state's accounting keep them; a page written again is a new, zero
 * page.
 */
void
ReleaseFreeClasses(FreqPartition *partition)
{
	uintptr_t	base = (uintptr_t) (partition->classes - partition->offset);

	ReleaseBlocks(base, (uintptr_t) partition->classes);
	ReleaseBlocks((uintptr_t) (partition->classes + partition->nclasses),
				  base + ArrayBytes(partition));
}

/* Unmap a partition's class array (its classes are gone or elsewhere) */
void
FreeClassArray(FreqState *state, FreqPartition *partition)
{
	Size		bytes = ArrayBytes(partition);

	if (partition->classes != NULL)
	{
		if (state != NULL)
			state->memory -= (double) bytes;
		munmap(partition->classes - partition->offset, bytes);
	}
	partition->classes = NULL;
	partition->capacity = 0;
	partition->offset = 0;
}

/*
 * Unmap every partition's class array and close the run files (memory
 * context reset callback).  During an abort the resource owner has already
 * closed (and removed) the files, so they are only forgotten then.
 */
void
ReleaseMappings(void *arg)
{
	FreqState  *state = (FreqState *) arg;
	bool		close_files = IsTransactionState();

	if (state->parts == NULL)
		return;
	for (int p = 0; p < PARTITIONS; p++)
	{
		FreqPartition *partition = &state->parts[p];

		FreeClassArray(NULL, partition);
		if (partition->file != NULL && close_files)
			BufFileClose(partition->file);
		partition->file = NULL;
		partition->nruns = 0;
	}
	for (int i = 0; i < state->nadopted; i++)
		if (close_files)
			BufFileClose(state->adopted_files[i]);
	state->nadopted = 0;
}

/* Raise the error for a temporary file that cannot be read back */
void
ReportRunReadError(void)
{
	ereport(ERROR,
			(errcode_for_file_access(),
			 errmsg("could not read qidrisk's temporary file of classes")));
}

static void DecodeClasses(const char **at, const char *end, uint64 *previous_hi,
						  CountedClass *classes, int64 n, DecodeCheck *check);

/*
 * Make a worker file's window hold the bytes of the next n classes (at most
 * MAX_ASCENDING_CLASS_BYTES each) or the rest of the partition
 */
static void
FillWindow(MergeSource *source, int64 n)
{
	size_t		have = source->bytes_end - source->bytes;
	int			got;
	int			wanted;

	if (have >= (size_t) n * MAX_ASCENDING_CLASS_BYTES || source->file_left == 0)
		return;
	memmove(source->window, source->bytes, have);
	wanted = (int) Min(source->window_bytes - have, source->file_left);
	got = FileRead(source->file, source->window + have, wanted, source->file_offset,
				   WAIT_EVENT_BUFFILE_READ);
	if (got != wanted)
		ReportRunReadError();
	source->file_offset += wanted;
	source->file_left -= wanted;
	source->bytes = source->window;
	source->bytes_end = source->window + have + wanted;
}

/* A partition read from a worker's file is complete: it must be all the message said */
static void
FinishCheck(const MergeSource *source)
{
	const DecodeCheck *check = &source->check;

	if (source->bytes != source->bytes_end || source->file_left != 0)
		FreqStateCorrupt("The state's length does not match its number of classes.");
	if (check->seen.classes != check->expected.classes ||
		check->seen.rows != check->expected.rows ||
		check->seen.singletons != check->expected.singletons)
		FreqStateCorrupt("The state's classes do not add up to its header.");
}

/* Read the next chunk of a file run or an encoded partition */
void
RefillSource(MergeSource *source)
{
	int64		n = Min(source->left, RUN_CHUNK_CLASSES);
	size_t		bytes = (size_t) n * sizeof(CountedClass);

	if (source->file > 0)
		FillWindow(source, n);
	if (source->bytes != NULL)
		DecodeClasses(&source->bytes, source->bytes_end, &source->previous_hi,
					  source->chunk, n, &source->check);
	else if (BufFileSeek(source->run->file, source->fileno, source->offset, SEEK_SET) != 0 ||
			 BufFileRead(source->run->file, source->chunk, bytes) != bytes)
		ReportRunReadError();
	else
		BufFileTell(source->run->file, &source->fileno, &source->offset);
	source->left -= n;
	source->at = source->chunk;
	source->end = source->chunk + n;
	if (source->left == 0 && source->file > 0)
		FinishCheck(source);
}

void
OpenArraySource(MergeSource *source, const CountedClass *classes, int64 n)
{
	memset(source, 0, sizeof(*source));
	source->at = classes;
	source->end = classes + n;
}

void
OpenRunSource(MergeSource *source, const SpillRun *run)
{
	memset(source, 0, sizeof(*source));
	source->run = run;
	source->fileno = run->fileno;
	source->offset = run->offset;
	source->left = run->nclasses;
	source->chunk = palloc(RUN_CHUNK_CLASSES * sizeof(CountedClass));
	if (source->left > 0)
		RefillSource(source);
}

/*
 * The window each of nfiles worker files is read through in a merge of
 * ninputs inputs: what 1/32 of the budget leaves after the merge's chunks
 * (see MergeFanIn), shared, between MIN_WINDOW_BYTES and
 * HANDOVER_WINDOW_BYTES
 */
int
WindowBytes(const FreqState *state, int ninputs, int nfiles)
{
	double		chunks = (double) (2 * ninputs - 1) * RUN_CHUNK_CLASSES *
		sizeof(CountedClass);
	double		share = (double) state->budget / 32 - chunks;

	if (nfiles <= 0)
		return MIN_WINDOW_BYTES;
	return (int) Max(MIN_WINDOW_BYTES, Min(HANDOVER_WINDOW_BYTES, share / nfiles));
}

/* How many of the partitions p of a state and its attached states lie in worker files */
int
FilesOfPartition(const FreqState *state, int p)
{
	int			nfiles = state->parts[p].in_file ? 1 : 0;

	for (const FreqState *attached = state->attached; attached != NULL;
		 attached = attached->next_attached)
		nfiles += attached->parts[p].in_file ? 1 : 0;
	return nfiles;
}

/*
 * Open partition p of a state: its array, or its encoded classes if not yet
 * decoded, in memory or in the state's worker file, read through a window
 * of window_bytes
 */
void
OpenPartitionSource(MergeSource *source, const FreqState *state, int p, int window_bytes)
{
	const FreqPartition *partition = &state->parts[p];

	if (partition->encoded == NULL && !partition->in_file)
	{
		OpenArraySource(source, partition->classes, partition->nclasses);
		return;
	}
	memset(source, 0, sizeof(*source));
	source->check.partition = -1;
	source->left = partition->nencoded;
	source->chunk = palloc(RUN_CHUNK_CLASSES * sizeof(CountedClass));
	if (partition->in_file)
	{
		source->file = FileOfEncoding(state);
		source->file_offset = partition->file_offset;
		source->file_left = partition->file_length;
		source->window = palloc(window_bytes);
		source->window_bytes = window_bytes;
		source->bytes = source->bytes_end = source->window;
		/* each partition's gaps count from its lowest high half */
		source->previous_hi = (uint64) p << (64 - PARTITION_BITS);
		source->check.partition = p;
		source->check.expected = partition->file_counts;
		if (source->left == 0)
			FinishCheck(source);
	}
	else
	{
		source->bytes = partition->encoded;
		source->bytes_end = partition->encoded_end;
		source->previous_hi = partition->encoded_base_hi;
	}
	if (source->left > 0)
		RefillSource(source);
}

/* Release a source's chunk and window */
void
CloseSource(MergeSource *source)
{
	if (source->chunk != NULL)
		pfree(source->chunk);
	if (source->window != NULL)
		pfree(source->window);
	source->chunk = NULL;
	source->window = NULL;
}

/* Raise the error for a serialized state that does not parse */
void
FreqStateCorrupt(const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg("invalid qidrisk frequency state"),
			 errdetail("%s", detail)));
}

/*
 * Decode n classes of an ascending stream: a message's, which
 * DeserializeAscending validated when it was received, or (check->partition
 * set) a worker file's, checked here as they are decoded
 */
static void
DecodeClasses(const char **at, const char *end, uint64 *previous_hi,
			  CountedClass *classes, int64 n, DecodeCheck *check)
{
	for (int64 i = 0; i < n; i++)
	{
		const CountedClass *class = &classes[i];

		if ((i & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		if (!ReadAscendingClass(at, end, previous_hi, &classes[i]))
			FreqStateCorrupt("The state's classes are truncated.");
		/* classes in memory were validated when received; a worker file's are now */
		if (check->partition < 0)
			continue;
		if (PartitionOf(&class->key) != check->partition ||
			(check->started && (class->key.hi < check->previous.hi ||
								(class->key.hi == check->previous.hi &&
								 class->key.lo <= check->previous.lo))))
			FreqStateCorrupt("The state's classes are not in ascending order.");
		if (class->count <= 0 || class->count > check->expected.rows - check->seen.rows)
			FreqStateCorrupt("A class of the state has an impossible size.");
		check->started = true;
		check->previous = class->key;
		CountClassInto(&check->seen, class->count);
	}
}

/* Order classes by fingerprint (qsort comparator) */
int
CompareCountedClasses(const void *a, const void *b)
{
	return QidFingerprintCompare(&((const CountedClass *) a)->key,
								 &((const CountedClass *) b)->key);
}

/* Bits of the buckets SortBuffer uses for n fingerprints (about four a bucket) */
static inline int
BucketBits(int64 n)
{
	return Max(1, pg_leftmost_one_pos64((uint64) Max(n / 4, 1)));
}

/* Bucket counts SortBuffer uses for n fingerprints */
int64
BucketsFor(int64 n)
{
	return INT64CONST(1) << BucketBits(n);
}

/* Make the bucket sort's counter array hold at least needed counters */
static void
EnsureBuckets(FreqState *state, int64 needed)
{
	double		added;

	if (needed <= state->bucket_capacity)
		return;
	added = (double) (needed - state->bucket_capacity) * sizeof(int64);
	if (state->memory + added > (double) state->budget)
		ReportBudgetExceeded(state, state->classes, state->memory + added);
	state->memory += added;
	state->buckets = state->buckets ?
		repalloc_huge(state->buckets, needed * sizeof(int64)) :
		MemoryContextAllocHuge(state->context, needed * sizeof(int64));
	state->bucket_capacity = needed;
}

/*
 * Sort n uniformly distributed fingerprints, whose high halves share their
 * top skip bits, into sorted (room for n), with starts (room for
 * BucketsFor(n) + 1 counters): scatter them into buckets by the bits below
 * those (about four per bucket), then insertion-sort the nearly sorted
 * result.  Linear time for hash values.  A partition's buffer shares the
 * partition bits (SortBuffer).
 */
void
SortClasses(const CountedClass *buffer, int64 n, int skip, CountedClass *sorted, int64 *starts)
{
	int			bits = BucketBits(n);
	int64		nbuckets = BucketsFor(n);

	memset(starts, 0, (nbuckets + 1) * sizeof(int64));

#define BucketOf(c) ((int64) (((c)->key.hi << skip) >> (64 - bits)))
	for (int64 i = 0; i < n; i++)
		starts[BucketOf(&buffer[i]) + 1]++;
	for (int64 b = 0; b < nbuckets; b++)
		starts[b + 1] += starts[b];
	for (int64 i = 0; i < n; i++)
		sorted[starts[BucketOf(&buffer[i])]++] = buffer[i];
#undef BucketOf

	/*
	 * Every bucket's values precede the next bucket's: sort within buckets
	 * (starts[b] is now where bucket b ends).  A bucket is insertion-sorted
	 * while that stays cheap; one that costs more moves than a few per value
	 * (crowded by chosen fingerprints) is sorted by qsort instead.
	 */
	for (int64 b = 0, begin = 0; b < nbuckets; begin = starts[b], b++)
	{
		int64		end = starts[b];
		int64		moves = 0;
		int64		allowed = 8 * (end - begin) + 64;

		if ((b & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		for (int64 i = begin + 1; i < end; i++)
		{
			CountedClass item = sorted[i];
			int64		k = i - 1;

			while (k >= begin && QidFingerprintCompare(&sorted[k].key, &item.key) > 0)
			{
				sorted[k + 1] = sorted[k];
				k--;
			}
			sorted[k + 1] = item;
			moves += i - 1 - k;
			if (unlikely(moves > allowed))
			{
				qsort(sorted + begin, end - begin, sizeof(CountedClass), CompareCountedClasses);
				break;
			}
		}
	}
}

/* Sort a partition's buffer into the state's scratch array, which stays in cache between calls */
CountedClass *
SortBuffer(FreqState *state, const CountedClass *buffer, int64 n)
{
	state->scratch = GrowArray(state, state->scratch, &state->scratch_capacity, n);
	EnsureBuckets(state, BucketsFor(n) + 1);
	SortClasses(buffer, n, PARTITION_BITS, state->scratch, state->buckets);
	return state->scratch;
}
