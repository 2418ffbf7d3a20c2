/*
 * freqclass.h
 *	  The base of the frequency engine: sorted class arrays and runs.
 *
 * Private to the engine's files (freqclass.c, freqspill.c, freqmerge.c,
 * freqstate.c, freqwire.c); everything else uses the frequency state through
 * qidrisk.h.  It holds the 24-byte class, a partition's arrays, buffers and
 * runs, the engine's limits and encodings, the reader of the ascending
 * encoding, and the chunked readers (MergeSource) every merge reads through.
 */
#ifndef FREQCLASS_H
#define FREQCLASS_H

#include "storage/buffile.h"
#include "storage/fd.h"
#include "port/pg_bswap.h"
#include "utils/memutils.h"

#include "compat.h"
#include "qidrisk.h"

/*
 * The engine's files call each other's helpers: hidden from the dynamic
 * symbol table, so that no other library loaded into the server can stand
 * in for one of them (they were static when the engine was one file)
 */
#ifdef __GNUC__
#define FREQ_PRIVATE __attribute__((visibility("hidden")))
#else
#define FREQ_PRIVATE
#endif

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
 * ascending fingerprint order, each as one tag byte, the gap from the
 * previous high half in as few little-endian bytes as it needs (their number
 * is the tag's high nibble), the low half in eight, and, for a class of more
 * than 15 rows, its size as a varint (the tag's low nibble is the size
 * otherwise, 0 for "follows").  About 15 bytes instead of 24 for what
 * parallel workers send the leader, and decoded with two unaligned loads.
 */
#define ENCODING_FIXED 0
#define ENCODING_ASCENDING 1

/*
 * A parallel leader's own partial state stays where it is: the message only
 * names it (FreqStateLend), by the leader's process id and a number drawn
 * for it, and the finalize in the same process takes it back.
 */
#define ENCODING_LENT 2
#define LENT_MESSAGE_BYTES (2 + sizeof(int32) + sizeof(uint64))

/*
 * A parallel worker's large state goes to the leader through a temporary
 * file instead of the tuple queue (FreqStateSendFile): the message names
 * the leader, the statement and the file, and holds the state's header; the
 * file holds its classes in the ascending encoding.
 */
#define ENCODING_FILE 3

/*
 * The files lie in a file set of the leader's process id and this number,
 * which the numbers PostgreSQL gives its own file sets (below INT_MAX) never
 * reach: pgsql_tmp/pgsql_tmpPID.4043309056.fileset in each temporary
 * tablespace, removed with the rest of pgsql_tmp after a crash
 */
#define HANDOVER_FILESET_NUMBER ((uint32) 0xF1000000)

/* States whose encoding can take this many bytes go through a file */
#define HANDOVER_FROM_BYTES (1024 * 1024)

/* A worker writes its file at most this many bytes at a time (HandoverWriteBytes) */
#define HANDOVER_WRITE_BYTES (256 * 1024)

/* A leader reads a file at most this many bytes at a time, for each partition it merges */
#define HANDOVER_WINDOW_BYTES (64 * 1024)

/* An unsigned LEB128 varint of 64 bits takes at most this many bytes */
#define MAX_VARINT_BYTES 10

/* Largest serialized state: a palloc'd bytea, with its header and a terminating zero */
#define MAX_MESSAGE_BYTES (MaxAllocSize - VARHDRSZ - 1)

/* Most bytes a class takes in the ascending encoding: tag, gap, low half, size */
#define MAX_ASCENDING_CLASS_BYTES (1 + 2 * sizeof(uint64) + MAX_VARINT_BYTES)

/* Fewest: the tag and the low half */
#define MIN_ASCENDING_CLASS_BYTES (1 + sizeof(uint64))

/* Largest class size the tag byte of the ascending encoding holds itself */
#define TAG_MAX_COUNT 15

#ifdef WORDS_BIGENDIAN
#define LittleEndian64(x) pg_bswap64(x)
#else
#define LittleEndian64(x) (x)
#endif

/* How often long loops check for cancellation */
#define INTERRUPT_CHECK_MASK 0xFFFF

/* Spilling needs room for the partitions' buffers and a few pages of arrays */
#define MIN_SPILL_BUDGET (512 * 1024)

/* Most inputs one streaming merge reads at once (arrays and file runs) */
#define MERGE_FANIN 64

/* Fewest inputs a merge reads at once, however small the budget */
#define MIN_MERGE_FANIN 4

/* Classes read from or written to a run file at a time */
#define RUN_CHUNK_CLASSES 128

/* Whether a state may spill: a window aggregate's state must stay one table */
#define SpillAllowed(state) ((state)->spill && !(state)->windowed)

/* A class of a partition: its fingerprint and size */
typedef struct CountedClass
{
	QidFingerprint key;
	int64		count;
} CountedClass;

/* Add a class of size count to counters */
static inline void
CountClassInto(FreqCounts *counts, int64 count)
{
	counts->rows += count;
	counts->classes++;
	counts->singletons += (count == 1);
}

/* A sorted, duplicate-free run of classes in a temporary file */
typedef struct SpillRun
{
	BufFile    *file;
	int			fileno;			/* where the run starts (BufFileTell) */
	off_t		offset;
	int64		nclasses;
} SpillRun;

struct FreqPartition
{
	CountedClass *classes;		/* sorted by fingerprint, no duplicates */
	int64		nclasses;
	int64		capacity;		/* classes the array can hold from classes on */
	int64		offset;			/* free classes before classes in its mapping,
								 * left by a merge from the back (MergeRun) */
	CountedClass *buffer;		/* rows not yet merged, unsorted */
	int64		nbuffered;
	int64		buffer_capacity;
	BufFile    *file;			/* this partition's runs, created on first spill */
	int			end_fileno;		/* where the next run starts */
	off_t		end_offset;
	SpillRun   *runs;			/* spilled runs: a class may recur in several, summed when read */
	int			nruns;
	int			runs_capacity;
	const char *encoded;		/* a received state's classes, not yet decoded */
	const char *encoded_end;	/* where the state's encoded classes end */
	int64		nencoded;
	uint64		encoded_base_hi;	/* the high half its first gap counts from */
	bool		in_file;		/* its classes lie in the state's worker file */
	off_t		file_offset;	/* where they start there */
	int64		file_length;	/* in bytes */
	FreqCounts	file_counts;	/* what they must add up to */
};

/* Whether a received state has partitions not yet decoded */
#define Undecoded(state) ((state)->encoded != NULL || (state)->encoded_file != NULL)

typedef void (*ClassVisitor) (const QidFingerprint *key, int64 count, void *arg);

/*
 * An anonymous mapping: a received state's copy of its encoded classes
 * (written once and then only read, so huge pages serve it, where small
 * pages would each cost a fault) or a shelf of the row log (small pages,
 * grown by RemapCopy).  It is unmapped by ReleaseMappedCopy or, at the
 * latest (also on error), when its memory context is reset.
 */
struct MappedCopy
{
	char	   *base;
	Size		bytes;
	MemoryContextCallback release;
};

/*
 * A worker's file that a received state's classes are read from, closed by
 * ReleaseEncoded or, at the latest, when the state's memory context is
 * reset.  During an abort the resource owner has closed it already.
 */
struct EncodedFile
{
	File		file;
	MemoryContextCallback close;
};

#define FileOfEncoding(state) ((state)->encoded_file->file)

/*
 * What the classes of a partition read from a worker's file must be: in
 * the partition, strictly ascending, of positive sizes, as many and as
 * large as the message says.  They are checked as they are decoded, not in
 * a pass of their own.
 */
typedef struct DecodeCheck
{
	int			partition;		/* the partition, or -1: not checked */
	bool		started;
	QidFingerprint previous;	/* the last class decoded */
	FreqCounts	seen;
	FreqCounts	expected;
} DecodeCheck;

/*
 * One input of a streaming merge: a sorted array, or a file run or an
 * encoded partition (in memory, or in a worker's file through a window),
 * either read in chunks
 */
typedef struct MergeSource
{
	const CountedClass *at;		/* the current class */
	const CountedClass *end;
	const SpillRun *run;		/* a file run, or NULL */
	int			fileno;			/* where the run's next chunk starts */
	off_t		offset;
	const char *bytes;			/* an encoded partition's next class, or NULL */
	const char *bytes_end;
	uint64		previous_hi;	/* the high half its gap counts from */
	int64		left;			/* classes of the run not yet read */
	CountedClass *chunk;
	File		file;			/* a worker's file, or 0 */
	off_t		file_offset;	/* its next bytes to read */
	int64		file_left;		/* its bytes of the partition not yet read */
	char	   *window;			/* where they are read to */
	int			window_bytes;	/* its size */
	DecodeCheck check;
} MergeSource;

/* Smallest window: room for the longest encoding of a chunk's classes (FillWindow) */
#define MIN_WINDOW_BYTES (RUN_CHUNK_CLASSES * MAX_ASCENDING_CLASS_BYTES)


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

/* Decode the next class of an ascending stream; false if the stream is truncated */
static inline bool
ReadAscendingClass(const char **at, const char *end, uint64 *previous_hi,
				   CountedClass *class)
{
	const char *in = *at;
	int			tag;
	int			gap_bytes;
	uint64		gap;
	uint64		lo;
	uint64		count;

	if (in >= end)
		return false;
	tag = (unsigned char) *in++;
	gap_bytes = tag >> 4;
	if (gap_bytes > (int) sizeof(uint64) || end - in < gap_bytes + (ptrdiff_t) sizeof(uint64))
		return false;
	/* the low half follows the gap, so eight bytes can be read at once */
	memcpy(&gap, in, sizeof(uint64));
	gap = LittleEndian64(gap);
	if (gap_bytes < (int) sizeof(uint64))
		gap &= (UINT64CONST(1) << (8 * gap_bytes)) - 1;
	in += gap_bytes;
	memcpy(&lo, in, sizeof(uint64));
	in += sizeof(uint64);
	count = tag & TAG_MAX_COUNT;
	if (count == 0 && !ReadVarint(&in, end, &count))
		return false;
	class->key.hi = *previous_hi + gap;
	class->key.lo = LittleEndian64(lo);
	class->count = (int64) count;
	*previous_hi = class->key.hi;
	*at = in;
	return true;
}

/* ---- freqclass.c: arrays, mappings, readers ---- */

/* Also in freqengine.h, which the layers below freqstate.c do not include */
extern FreqStateEvents qidrisk_freq_events;
pg_noreturn extern void FreqStateCorrupt(const char *detail);

extern void ReportBudgetExceeded(FreqState *state, int64 classes, double bytes) FREQ_PRIVATE;
extern int64 GrownCapacity(int64 capacity, int64 needed) FREQ_PRIVATE;
extern CountedClass *GrowArray(FreqState *state, CountedClass *array, int64 *capacity, int64 needed) FREQ_PRIVATE;
extern Size MappedBytes(int64 capacity) FREQ_PRIVATE;
extern MappedCopy *MapCopy(MemoryContext context, Size bytes, bool huge_pages) FREQ_PRIVATE;
extern void RemapCopy(MappedCopy *mapped, Size bytes) FREQ_PRIVATE;
extern void ReleaseMappedCopy(void *arg) FREQ_PRIVATE;
extern void CloseEncodedFile(void *arg) FREQ_PRIVATE;
extern void ReleaseEncoded(FreqState *state) FREQ_PRIVATE;
extern void ReleaseFreeClasses(FreqPartition *partition) FREQ_PRIVATE;
extern void GrowClassArray(FreqState *state, FreqPartition *partition, int64 needed) FREQ_PRIVATE;
extern void FreeClassArray(FreqState *state, FreqPartition *partition) FREQ_PRIVATE;
extern Size ArrayBytes(const FreqPartition *partition) FREQ_PRIVATE;
extern void ReleaseMappings(void *arg) FREQ_PRIVATE;
extern void ReportRunReadError(void) FREQ_PRIVATE;
extern void RefillSource(MergeSource *source) FREQ_PRIVATE;
extern void OpenArraySource(MergeSource *source, const CountedClass *classes, int64 n) FREQ_PRIVATE;
extern void OpenRunSource(MergeSource *source, const SpillRun *run) FREQ_PRIVATE;
extern int WindowBytes(const FreqState *state, int ninputs, int nfiles) FREQ_PRIVATE;
extern int FilesOfPartition(const FreqState *state, int p) FREQ_PRIVATE;
extern void OpenPartitionSource(MergeSource *source, const FreqState *state, int p, int window_bytes) FREQ_PRIVATE;
extern void CloseSource(MergeSource *source) FREQ_PRIVATE;
extern int	CompareCountedClasses(const void *a, const void *b) FREQ_PRIVATE;
extern int64 BucketsFor(int64 n) FREQ_PRIVATE;
extern void SortClasses(const CountedClass *buffer, int64 n, int skip, CountedClass *sorted,
						int64 *starts) FREQ_PRIVATE;
extern CountedClass *SortBuffer(FreqState *state, const CountedClass *buffer, int64 n) FREQ_PRIVATE;

#endif							/* FREQCLASS_H */
