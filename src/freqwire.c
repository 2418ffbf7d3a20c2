/*
 * freqwire.c
 *	  The frequency state's wire format: serialize, deserialize, hand-over.
 *
 * A state received from a parallel worker keeps its serialized (ascending)
 * encoding and is merged straight from it; it is decoded into arrays only
 * when something must change it.  A parallel leader's own partial state is
 * not serialized at all but lent to the finalize in the same process, which
 * reads it in place (FreqStateLend), and a worker's large state reaches the
 * leader through a temporary file rather than the tuple queue
 * (FreqStateSendFile).
 *
 * This file owns the serialized encodings (fixed and ascending), lending a
 * leader's own state (FreqStateLend), and the hand-over files through which
 * workers send large states (FreqStateSendFile), with their removal.
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

#include "freqengine.h"
#include "freqstate.h"

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

/* Bytes the ascending encoding takes for a class */
static inline int
AscendingClassLength(uint64 gap, int64 count)
{
	int			gap_bytes = gap == 0 ? 0 : pg_leftmost_one_pos64(gap) / 8 + 1;

	return 1 + gap_bytes + sizeof(uint64) +
		(count > TAG_MAX_COUNT ? VarintLength((uint64) count) : 0);
}

/* Write a class in the ascending encoding; returns the byte after it */
static inline char *
WriteAscendingClassAt(char *out, uint64 gap, uint64 lo, int64 count)
{
	int			gap_bytes = gap == 0 ? 0 : pg_leftmost_one_pos64(gap) / 8 + 1;

	*out++ = (char) ((gap_bytes << 4) | (count > TAG_MAX_COUNT ? 0 : (int) count));
	gap = LittleEndian64(gap);
	memcpy(out, &gap, gap_bytes);
	out += gap_bytes;
	lo = LittleEndian64(lo);
	memcpy(out, &lo, sizeof(uint64));
	out += sizeof(uint64);
	if (count > TAG_MAX_COUNT)
		out = WriteVarint(out, (uint64) count);
	return out;
}

/*
 * Where an ascending encoding is being written or sized: into memory sized
 * up front, or through a buffer into a file (WriteAscendingArrays only)
 */
typedef struct AscendingWriter
{
	char	   *out;			/* next byte, or NULL when only sizing */
	double		bytes;			/* bytes written or needed so far */
	uint64		previous_hi;
	FreqCounts	seen;			/* what the sizing pass saw */
	uintptr_t	flush_at;		/* out past this goes to the file */
	char	   *buffer;			/* the file's buffer, where out starts */
	File		file;
	off_t		written;		/* bytes in the file so far */
	bool		by_partition;	/* gaps restart at each partition's lowest
								 * high half, and the next three are kept */
	int			partition;		/* the partition being written */
	off_t		offsets[PARTITIONS];	/* where each partition starts */
	FreqCounts	counts[PARTITIONS]; /* what each holds */
} AscendingWriter;

/* An AscendingWriter into memory, or sizing (flush_at never reached) */
#define MEMORY_WRITER \
	{.out = NULL, .bytes = 0, .previous_hi = 0, .flush_at = UINTPTR_MAX, \
	 .buffer = NULL, .file = -1, .written = 0, .by_partition = false, .partition = -1}

/* Write a file writer's buffer up to out to its file; returns the buffer */
static char *
FlushAscending(AscendingWriter *writer, char *out)
{
	int			n = (int) (out - writer->buffer);

	if (n > 0 && FileWrite(writer->file, writer->buffer, n, writer->written,
						   WAIT_EVENT_BUFFILE_WRITE) != n)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write qidrisk's temporary file of classes")));
	writer->written += n;
	return writer->buffer;
}

/*
 * A file writer begins the next partition (by_partition): its gaps count
 * from its lowest high half, and it starts where the writer is (out)
 */
static void
StartPartition(AscendingWriter *writer, const char *out)
{
	writer->partition++;
	writer->previous_hi = (uint64) writer->partition << (64 - PARTITION_BITS);
	writer->offsets[writer->partition] = writer->written + (out - writer->buffer);
}

/* Write (or size) one class of the ascending encoding */
static void
WriteAscendingClass(const QidFingerprint *key, int64 count, void *arg)
{
	AscendingWriter *writer = (AscendingWriter *) arg;
	uint64		gap;

	/* a file's classes: start each partition with its own gaps and place */
	while (writer->by_partition && writer->partition < PartitionOf(key))
		StartPartition(writer, writer->out);
	gap = key->hi - writer->previous_hi;
	writer->previous_hi = key->hi;
	CountClassInto(&writer->seen, count);
	if (writer->by_partition)
		CountClassInto(&writer->counts[writer->partition], count);
	if (writer->out == NULL)
	{
		writer->bytes += AscendingClassLength(gap, count);
		return;
	}
	writer->out = WriteAscendingClassAt(writer->out, gap, key->lo, count);
	if (unlikely((uintptr_t) writer->out >= writer->flush_at))
		writer->out = FlushAscending(writer, writer->out);
}

/*
 * Sort every partition's buffered rows in place, equal fingerprints summed,
 * so that serializing merges them with the array while it writes instead of
 * moving the whole array to merge them in first
 */
static void
SortBuffersInPlace(FreqState *state)
{
	for (int p = 0; p < PARTITIONS; p++)
	{
		FreqPartition *partition = &state->parts[p];
		CountedClass *run;
		int64		nrun;

		if (partition->nbuffered == 0)
			continue;
		nrun = SortAndSumBuffer(state, partition, &run);
		memcpy(partition->buffer, run, nrun * sizeof(CountedClass));
		partition->nbuffered = nrun;
	}
	state->buffers_sorted = true;
}

/*
 * Write (or size) every class of a partitioned state whose classes are all
 * in its arrays and its sorted buffers (SortBuffersInPlace): the same as
 * ForEachClass with WriteAscendingClass after DrainBuffers, in one tight
 * loop, which is what a parallel worker does with its state.  A file writer
 * leaves its last bytes in its buffer.
 */
static void
WriteAscendingArrays(FreqState *state, AscendingWriter *writer)
{
	for (int p = 0; p < PARTITIONS; p++)
	{
		const CountedClass *classes = state->parts[p].classes;
		const CountedClass *buffered = state->parts[p].buffer;
		int64		nclasses = state->parts[p].nclasses;
		int64		nbuffered = state->parts[p].nbuffered;
		int64		i = 0;
		int64		j = 0;
		uint64		previous_hi = writer->previous_hi;
		char	   *out = writer->out;
		double		bytes = 0;
		FreqCounts	before = writer->seen;

		if (writer->by_partition)
		{
			StartPartition(writer, out);
			previous_hi = writer->previous_hi;
		}

		while (i < nclasses || j < nbuffered)
		{
			CountedClass class;
			int			c = (j == nbuffered) ? -1 : (i == nclasses) ? 1 :
				QidFingerprintCompare(&classes[i].key, &buffered[j].key);
			uint64		gap;

			if (((i + j) & INTERRUPT_CHECK_MASK) == 0)
				CHECK_FOR_INTERRUPTS();
			class = (c <= 0) ? classes[i++] : buffered[j++];
			if (c == 0)
				class.count += buffered[j++].count;
			gap = class.key.hi - previous_hi;
			previous_hi = class.key.hi;
			CountClassInto(&writer->seen, class.count);
			if (out == NULL)
				bytes += AscendingClassLength(gap, class.count);
			else
			{
				out = WriteAscendingClassAt(out, gap, class.key.lo, class.count);
				if (unlikely((uintptr_t) out >= writer->flush_at))
					out = FlushAscending(writer, out);
			}
		}
		writer->bytes += bytes;
		writer->out = out;
		writer->previous_hi = previous_hi;
		if (writer->by_partition)
		{
			writer->counts[p].rows = writer->seen.rows - before.rows;
			writer->counts[p].classes = writer->seen.classes - before.classes;
			writer->counts[p].singletons = writer->seen.singletons - before.singletons;
		}
	}
}

/* Bytes the ascending encoding of a state's arrays and buffers takes at most */
static double
AscendingBound(const FreqState *state)
{
	double		classes = 0;

	for (int p = 0; p < PARTITIONS; p++)
		classes += (double) (state->parts[p].nclasses + state->parts[p].nbuffered);
	return classes * MAX_ASCENDING_CLASS_BYTES;
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

/* The header fields after a message's encoding: rows, singletons, parameter, classes */
static void
SendHeader(StringInfo buf, const FreqCounts *seen, const FreqState *state)
{
	pq_sendint64(buf, seen->rows);
	pq_sendint64(buf, seen->singletons);
	pq_sendbyte(buf, state->has_param ? 1 : 0);
	pq_sendfloat8(buf, state->param);
	pq_sendint64(buf, seen->classes);
}

/*
 * Serialize: format version, encoding, rows, singletons, parameter, class
 * count, then the classes in the encoding the state's layout allows.  A
 * spilled state streams its file runs into the message, which therefore
 * may hold more than the memory budget (up to MaxAllocSize).
 */
bytea *
FreqStateSerialize(FreqState *state)
{
	StringInfoData buf;
	AscendingWriter writer = MEMORY_WRITER;
	int			encoding;
	double		bytes;
	bool		arrays_only = false;
	bool		one_pass = false;
	int			counts_at;

	/* held rows first: counting them may partition the state */
	FlushHeldRows(state);
	if (state->single != NULL)
		FreqStateSettle(state);
	/* partitions are streamed in order and each is sorted: one ascending stream */
	encoding = state->single == NULL ? ENCODING_ASCENDING : ENCODING_FIXED;
	if (encoding == ENCODING_ASCENDING)
	{
		if (state->attached == NULL && !HasRuns(state) && !Undecoded(state))
			SortBuffersInPlace(state);
		/* sorting may have spilled */
		arrays_only = state->attached == NULL && !HasRuns(state) && !Undecoded(state);
		if (!arrays_only)
			DrainBuffers(state);
	}
	if (arrays_only)
	{
		/* room for the longest encoding of every class: then one pass writes it */
		double		bound = SERIALIZED_HEADER_BYTES + VARHDRSZ +
			AscendingBound(state);

		one_pass = bound < MAX_MESSAGE_BYTES;
		if (one_pass)
			writer.bytes = bound - (SERIALIZED_HEADER_BYTES + VARHDRSZ);
		else
			WriteAscendingArrays(state, &writer);
	}
	else if (encoding == ENCODING_ASCENDING)
		ForEachClass(state, WriteAscendingClass, &writer);
	else
	{
		writer.bytes = (double) state->classes * SERIALIZED_CLASS_BYTES;
		writer.seen.rows = state->rows;
		writer.seen.classes = state->classes;
		writer.seen.singletons = state->singletons;
	}
	bytes = SERIALIZED_HEADER_BYTES + VARHDRSZ + writer.bytes;
	if (bytes >= MAX_MESSAGE_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("qidrisk frequency state too large to serialize"),
				 errdetail("The state holds " INT64_FORMAT " classes, %.0f bytes serialized; "
						   "one message holds at most %zu bytes.",
						   writer.seen.classes, bytes, (Size) MAX_MESSAGE_BYTES),
				 errhint("Disable parallel aggregation (max_parallel_workers_per_gather = 0) "
						 "or aggregate fewer rows per group.")));

	/* as pq_begintypsend, but exactly the room needed (and its terminating zero) */
	buf.data = palloc((Size) bytes + 1);
	buf.maxlen = (int) bytes + 1;
	buf.len = VARHDRSZ;
	buf.cursor = 0;
	pq_sendbyte(&buf, QIDRISK_STATE_FORMAT_VERSION);
	pq_sendbyte(&buf, encoding);
	counts_at = buf.len;
	SendHeader(&buf, &writer.seen, state);
	if (encoding == ENCODING_ASCENDING)
	{
		/* the buffer was enlarged for every class by the sizing pass or the bound */
		writer.out = buf.data + buf.len;
		writer.previous_hi = 0;
		writer.seen.rows = writer.seen.classes = writer.seen.singletons = 0;
		if (arrays_only)
			WriteAscendingArrays(state, &writer);
		else
			ForEachClass(state, WriteAscendingClass, &writer);
		Assert(one_pass || writer.out - (buf.data + buf.len) == (ptrdiff_t) writer.bytes);
		buf.len += (int) (writer.out - (buf.data + buf.len));
		buf.data[buf.len] = '\0';
		if (one_pass)
		{
			/* the counters were only known once written: write the header again */
			int			end = buf.len;

			buf.len = counts_at;
			SendHeader(&buf, &writer.seen, state);
			buf.len = end;
			/* give back the room the longest encoding would have needed */
			buf.data = repalloc(buf.data, buf.len + 1);
			buf.maxlen = buf.len + 1;
		}
	}
	else
		ForEachClass(state, WriteFixedClass, &buf);
	return pq_endtypsend(&buf);
}

/*
 * The states this process has lent and not yet taken back.  Each entry lives
 * in the lent state's own memory context and leaves the list when that
 * context is reset, so the list never names freed memory.
 */
typedef struct LentState
{
	dlist_node	node;
	uint64		id;
	FreqState  *state;
	MemoryContextCallback forget;
} LentState;

static dlist_head lent_states = DLIST_STATIC_INIT(lent_states);
static uint64 next_lent_id = 0;

/* Memory context reset callback: the lent state is gone, forget it */
static void
ForgetLentState(void *arg)
{
	LentState  *entry = (LentState *) arg;

	if (entry->state != NULL)
		dlist_delete(&entry->node);
	entry->state = NULL;
}

/*
 * Lend a parallel leader's own partial state to the finalize aggregate of
 * the same process instead of serializing it: the message names the state,
 * which stays in its memory context, its buffers sorted so that the final
 * merge reads them as they are.  The caller guarantees that the message
 * goes nowhere but into FreqStateDeserialize in this process, while the
 * partial aggregate's context lives (see qidrisk_freq_serialize).  States
 * that are small, spilled or hold received states are serialized as usual.
 */
bytea *
FreqStateLend(FreqState *state)
{
	LentState  *entry;
	StringInfoData buf;

	FlushHeldRows(state);
	if (state->single != NULL || state->windowed || state->attached != NULL ||
		Undecoded(state) || HasRuns(state))
		return FreqStateSerialize(state);
	/* a state shared by several aggregates is lent once for each */
	if (!state->buffers_sorted)
		SortBuffersInPlace(state);
	/* sorting may have spilled */
	if (HasRuns(state))
		return FreqStateSerialize(state);

	/* ids start at a random point, so that no other process's message matches */
	if (next_lent_id == 0 && !pg_strong_random(&next_lent_id, sizeof(next_lent_id)))
		next_lent_id = ((uint64) MyProcPid << 32) ^ (uint64) MyStartTime;
	entry = MemoryContextAlloc(state->context, sizeof(LentState));
	entry->id = ++next_lent_id;
	entry->state = state;
	entry->forget.func = ForgetLentState;
	entry->forget.arg = entry;
	MemoryContextRegisterResetCallback(state->context, &entry->forget);
	dlist_push_tail(&lent_states, &entry->node);
	elog(DEBUG1, "qidrisk: the parallel leader keeps its own partial state");

	pq_begintypsend(&buf);
	pq_sendbyte(&buf, QIDRISK_STATE_FORMAT_VERSION);
	pq_sendbyte(&buf, ENCODING_LENT);
	pq_sendint32(&buf, MyProcPid);
	pq_sendint64(&buf, (int64) entry->id);
	return pq_endtypsend(&buf);
}

/*
 * Take back a state lent by this process (FreqStateLend), once: as a view in
 * context, a copy of the state's struct sharing its arrays, so that each
 * aggregate it was lent to links it into its own list of attached states.
 * Views are only read (MergePartitionsOf, StreamClasses) and never freed.
 */
static FreqState *
ReclaimLentState(MemoryContext context, StringInfo buf)
{
	int32		pid;
	uint64		id;
	dlist_mutable_iter iter;

	if (buf->len != (int) LENT_MESSAGE_BYTES)
		FreqStateCorrupt("The lent state's message has the wrong length.");
	pid = pq_getmsgint(buf, sizeof(int32));
	id = (uint64) pq_getmsgint64(buf);
	if (pid != MyProcPid)
		FreqStateCorrupt("The state was lent by another process.");
	dlist_foreach_modify(iter, &lent_states)
	{
		LentState  *entry = dlist_container(LentState, node, iter.cur);
		FreqState  *view;

		if (entry->id != id)
			continue;
		view = MemoryContextAlloc(context, sizeof(FreqState));
		memcpy(view, entry->state, sizeof(FreqState));
		view->lent = true;
		view->private_copy = false;
		view->attached = NULL;
		view->next_attached = NULL;
		dlist_delete(&entry->node);
		entry->state = NULL;
		qidrisk_freq_events.lent++;
		return view;
	}
	FreqStateCorrupt("The lent state is no longer available.");
	return NULL;				/* keep the compiler quiet */
}

/*
 * Read an ascending stream of nclasses classes in a message.  One pass
 * validates it and finds where each partition starts.  A partitioned state
 * then keeps a copy of the encoded classes, which readers merge straight
 * from the encoding and anything else decodes first (DecodePartitions), if
 * the copy fits the budget; otherwise the partitions are decoded now.  A
 * state too small to be partitioned adds the classes.
 */
static void
DeserializeAscending(FreqState *state, StringInfo buf, int64 nclasses, int64 rows)
{
	const char *start = buf->data + buf->cursor;
	const char *end = buf->data + buf->len;
	const char *at = start;
	int64		sizes[PARTITIONS] = {0};
	const char *starts[PARTITIONS];
	uint64		bases[PARTITIONS] = {0};
	CountedClass class = {{0, 0}, 0};
	uint64		previous_hi = 0;
	FreqCounts	seen = {0, 0, 0};
	int			p = 0;

	starts[0] = start;
	for (int64 i = 0; i < nclasses; i++)
	{
		QidFingerprint previous = class.key;
		const char *before = at;

		if ((i & INTERRUPT_CHECK_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		if (!ReadAscendingClass(&at, end, &previous_hi, &class))
			FreqStateCorrupt("The state's classes are truncated.");
		if (class.key.hi < previous.hi ||
			(i > 0 && class.key.hi == previous.hi && class.key.lo <= previous.lo))
			FreqStateCorrupt("The state's classes are not in ascending order.");
		if (class.count <= 0 || class.count > rows - seen.rows)
			FreqStateCorrupt("A class of the state has an impossible size.");
		CountClassInto(&seen, class.count);
		/* ascending fingerprints fill partition 0, then 1, ... in order */
		while (p < PartitionOf(&class.key))
		{
			p++;
			starts[p] = before;
			bases[p] = previous.hi;
		}
		sizes[p]++;
	}
	if (at != end)
		FreqStateCorrupt("The state's length does not match its number of classes.");
	buf->cursor = buf->len;
	while (p < PARTITIONS - 1)
	{
		p++;
		starts[p] = end;
		bases[p] = class.key.hi;
	}

	if (state->single != NULL)
	{
		previous_hi = 0;
		at = start;
		for (int64 i = 0; i < nclasses; i++)
		{
			(void) ReadAscendingClass(&at, end, &previous_hi, &class);
			AddClass(state, &class.key, class.count);
		}
		return;
	}

	/* keep the encoding if it fits the budget (a copy of a message's), else decode it now */
	state->encoded_bytes = end - start;
	state->encoded = (char *) start;
	if (state->memory + (double) state->encoded_bytes <= (double) state->budget)
	{
		MappedCopy *mapped = MapCopy(state->context, state->encoded_bytes, true);

		memcpy(mapped->base, start, state->encoded_bytes);
		state->encoded = mapped->base;
		state->encoded_copy = mapped;
		state->memory += (double) state->encoded_bytes;
	}
	for (p = 0; p < PARTITIONS; p++)
	{
		state->parts[p].encoded = state->encoded + (starts[p] - start);
		state->parts[p].encoded_end = state->encoded + (end - start);
		state->parts[p].nencoded = sizes[p];
		state->parts[p].encoded_base_hi = bases[p];
	}
	state->rows = seen.rows;
	state->classes = seen.classes;
	state->singletons = seen.singletons;
	if (state->encoded_copy == NULL)
		DecodePartitions(state);
}

/* A temporary file holding a worker's classes, as a message names it */
typedef struct HandoverFile
{
	FileSet		fileset;
	char		name[64];
	off_t		length;
} HandoverFile;

/*
 * A file the leader has read, deleted when the memory context of the
 * aggregate that read it is reset (at the end of the query, on a rescan,
 * or when an error aborts the (sub)transaction): a state shared by several
 * aggregates is written once, and the finalize may read it for each of
 * them.  The subtransaction that read it is kept, so that the end of a
 * subtransaction deletes no file a (sub)transaction still running reads
 * (FreqStateRemoveHandoverFiles).
 */
typedef struct ReadFile
{
	dlist_node	node;
	HandoverFile handover;
	SubTransactionId subid;
	MemoryContextCallback delete;
} ReadFile;

/* The files read and not yet deleted */
static dlist_head read_files = DLIST_STATIC_INIT(read_files);

/* Memory context reset callback: delete a file read, also during an abort */
static void
DeleteReadFile(void *arg)
{
	ReadFile   *read = (ReadFile *) arg;

	dlist_delete(&read->node);
	(void) FileSetDelete(&read->handover.fileset, read->handover.name, false);
}

/* Have a file read deleted with context, unless it is already to be */
static void
DeleteWithContext(MemoryContext context, const HandoverFile *handover)
{
	dlist_iter	iter;
	ReadFile   *read;

	dlist_foreach(iter, &read_files)
	{
		read = dlist_container(ReadFile, node, iter.cur);
		if (strcmp(read->handover.name, handover->name) == 0)
			return;
	}
	read = MemoryContextAlloc(context, sizeof(ReadFile));
	read->handover = *handover;
	read->subid = GetCurrentSubTransactionId();
	read->delete.func = DeleteReadFile;
	read->delete.arg = read;
	MemoryContextRegisterResetCallback(context, &read->delete);
	dlist_push_tail(&read_files, &read->node);
}

/* The file set where parallel workers leave their states for leader_pid */
static void
HandoverFileSet(FileSet *fileset, int32 leader_pid)
{
	/* the worker's temporary tablespaces, as it would spill */
	FileSetInit(fileset);
	fileset->creator_pid = leader_pid;
	fileset->number = HANDOVER_FILESET_NUMBER;
}

/* The name of a worker's file: its process and a number it has not used */
static void
HandoverFileName(char *name, int32 sender_pid, uint32 sequence)
{
	snprintf(name, sizeof(((HandoverFile *) NULL)->name), "qidrisk.%d.%u",
			 sender_pid, sequence);
}

/* What a file message says about its file (FreqStateSendFile) */
typedef struct FileReference
{
	HandoverFile handover;
	off_t		offsets[PARTITIONS];	/* where each partition's classes start */
	FreqCounts	counts[PARTITIONS]; /* what each partition holds */
} FileReference;

/*
 * Read a file message's reference to its file: it must be for this process
 * and statement, in this process's file set, its partitions in order within
 * the file
 */
static void
ReadFileReference(StringInfo buf, FileReference *reference)
{
	HandoverFile *handover = &reference->handover;
	int32		leader_pid;
	int64		statement_start;
	int32		sender_pid;
	uint32		sequence;
	int			ntablespaces;

	if (buf->len - buf->cursor < (int) (4 * sizeof(int32) + 2 * sizeof(int64)))
		FreqStateCorrupt("The state's file reference is truncated.");
	leader_pid = pq_getmsgint(buf, sizeof(int32));
	statement_start = pq_getmsgint64(buf);
	sender_pid = pq_getmsgint(buf, sizeof(int32));
	sequence = (uint32) pq_getmsgint(buf, sizeof(int32));
	handover->length = (off_t) pq_getmsgint64(buf);
	ntablespaces = pq_getmsgint(buf, sizeof(int32));
	if (leader_pid != MyProcPid || statement_start != GetCurrentStatementStartTimestamp())
		FreqStateCorrupt("The state's file was left for another process or statement.");
	if (ntablespaces < 1 || ntablespaces > (int) lengthof(handover->fileset.tablespaces) ||
		buf->len - buf->cursor < ntablespaces * (int) sizeof(Oid) +
		PARTITIONS * 4 * (int) sizeof(int64) || handover->length < 0)
		FreqStateCorrupt("The state's file reference is invalid.");
	handover->fileset.creator_pid = MyProcPid;
	handover->fileset.number = HANDOVER_FILESET_NUMBER;
	handover->fileset.ntablespaces = ntablespaces;
	for (int i = 0; i < ntablespaces; i++)
		handover->fileset.tablespaces[i] = (Oid) pq_getmsgint(buf, sizeof(Oid));
	HandoverFileName(handover->name, sender_pid, sequence);
	for (int p = 0; p < PARTITIONS; p++)
	{
		FreqCounts *counts = &reference->counts[p];
		off_t		previous = p == 0 ? 0 : reference->offsets[p - 1];

		reference->offsets[p] = (off_t) pq_getmsgint64(buf);
		counts->classes = pq_getmsgint64(buf);
		counts->rows = pq_getmsgint64(buf);
		counts->singletons = pq_getmsgint64(buf);
		if ((p == 0 && reference->offsets[p] != 0) || reference->offsets[p] < previous ||
			reference->offsets[p] > handover->length || counts->classes < 0 ||
			counts->rows < counts->classes || counts->singletons < 0 ||
			counts->singletons > counts->classes)
			FreqStateCorrupt("The state's file reference is invalid.");
	}
	/* a partition's classes take at least MIN_ASCENDING_CLASS_BYTES each */
	for (int p = 0; p < PARTITIONS; p++)
	{
		off_t		end = p + 1 < PARTITIONS ? reference->offsets[p + 1] : handover->length;

		if (reference->counts[p].classes >
			(end - reference->offsets[p]) / (off_t) MIN_ASCENDING_CLASS_BYTES)
			FreqStateCorrupt("The state's file reference is invalid.");
	}
}

/*
 * Let a received state read its classes from the worker's file, partition
 * by partition, as it merges them: nothing is read now.  The file is closed
 * with the state and deleted when the aggregate's context is reset.
 */
static void
AttachWorkerFile(FreqState *state, const FileReference *reference, MemoryContext context)
{
	const HandoverFile *handover = &reference->handover;
	FreqCounts	total = {0, 0, 0};
	File		file;

	/* the partitions' counts are not negative (ReadFileReference), so none exceeds the sum */
	for (int p = 0; p < PARTITIONS; p++)
		if (pg_add_s64_overflow(total.rows, reference->counts[p].rows, &total.rows) ||
			pg_add_s64_overflow(total.classes, reference->counts[p].classes, &total.classes) ||
			pg_add_s64_overflow(total.singletons, reference->counts[p].singletons,
								&total.singletons))
			FreqStateCorrupt("The state's classes do not add up to its header.");
	if (total.rows != state->rows || total.classes != state->classes ||
		total.singletons != state->singletons)
		FreqStateCorrupt("The state's classes do not add up to its header.");
	file = FileSetOpen((FileSet *) &handover->fileset, handover->name, O_RDONLY | PG_BINARY);
	if (file <= 0)
		FreqStateCorrupt("The state's file is no longer available.");
	DeleteWithContext(context, handover);
	qidrisk_freq_events.files_received++;
	state->encoded_file = MemoryContextAlloc(state->context, sizeof(EncodedFile));
	state->encoded_file->file = file;
	state->encoded_file->close.func = CloseEncodedFile;
	state->encoded_file->close.arg = state->encoded_file;
	MemoryContextRegisterResetCallback(state->context, &state->encoded_file->close);
	if (FileSize(file) != handover->length)
		FreqStateCorrupt("The state's file does not have the length its message says.");
	Assert(state->single == NULL);
	for (int p = 0; p < PARTITIONS; p++)
	{
		FreqPartition *partition = &state->parts[p];

		partition->in_file = true;
		partition->file_offset = reference->offsets[p];
		partition->file_length = (p + 1 < PARTITIONS ? reference->offsets[p + 1] :
								  handover->length) - reference->offsets[p];
		partition->file_counts = reference->counts[p];
		partition->nencoded = reference->counts[p].classes;
	}
	state->streamed = false;
}

/*
 * Rebuild a state from FreqStateSerialize's or FreqStateSendFile's output,
 * validating everything.
 */
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
	FreqCounts	spilled;
	FileReference reference;

	buf.data = VARDATA_ANY(bytes);
	buf.len = VARSIZE_ANY_EXHDR(bytes);
	buf.maxlen = buf.len;
	buf.cursor = 0;

	if (buf.len < 2)
		FreqStateCorrupt("The state is shorter than its header.");
	version = pq_getmsgbyte(&buf);
	if (version != QIDRISK_STATE_FORMAT_VERSION)
		FreqStateCorrupt("The state was written in an unknown format version.");
	encoding = pq_getmsgbyte(&buf);
	if (encoding == ENCODING_LENT)
		return ReclaimLentState(context, &buf);
	if (encoding == ENCODING_FILE)
		ReadFileReference(&buf, &reference);
	else if (encoding != ENCODING_FIXED && encoding != ENCODING_ASCENDING)
		FreqStateCorrupt("The state's classes are in an unknown encoding.");
	if (buf.len - buf.cursor < (int) SERIALIZED_HEADER_BYTES - 2)
		FreqStateCorrupt("The state is shorter than its header.");
	rows = pq_getmsgint64(&buf);
	singletons = pq_getmsgint64(&buf);
	has_param = pq_getmsgbyte(&buf);
	param = pq_getmsgfloat8(&buf);
	nclasses = pq_getmsgint64(&buf);
	if (rows < 0 || singletons < 0 || has_param > 1 || isnan(param) || isinf(param) ||
		(has_param == 0 && param != 0) || nclasses < 0 || nclasses > rows ||
		singletons > nclasses)
		FreqStateCorrupt("The state's header holds impossible counts.");
	if (encoding == ENCODING_FIXED &&
		(double) (buf.len - buf.cursor) != (double) nclasses * SERIALIZED_CLASS_BYTES)
		FreqStateCorrupt("The state's length does not match its number of classes.");

	/*
	 * A worker's file holds a partitioned state, whose classes are read
	 * partition by partition: so is the state that reads them, whatever
	 * its class count would suggest (the worker decided by its own memory)
	 */
	state = CreateState(context, (Size) nclasses, encoding == ENCODING_FILE);
	state->private_copy = true;
	running_rows = 0;
	state->has_param = (has_param == 1);
	state->param = param;
	memset(&spilled, 0, sizeof(spilled));
	if (encoding == ENCODING_ASCENDING)
		DeserializeAscending(state, &buf, nclasses, rows);
	else if (encoding == ENCODING_FILE)
	{
		state->rows = rows;
		state->classes = nclasses;
		state->singletons = singletons;
		AttachWorkerFile(state, &reference, context);
	}
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
			FreqStateCorrupt("A class of the state has an impossible size.");
		running_rows += count;
		AddClass(state, &fp, count);
	}
	pq_getmsgend(&buf);
	FreqStateSettle(state);

	/*
	 * The in-memory counters leave out what went to run files (also runs
	 * split off while the classes were added): then count by streaming.
	 */
	if (HasRuns(state))
	{
		FreqStateCounts(state, &spilled);
		spilled.rows -= state->rows;
		spilled.classes -= state->classes;
		spilled.singletons -= state->singletons;
	}
	if (state->rows + spilled.rows != rows ||
		state->singletons + spilled.singletons != singletons ||
		state->classes + spilled.classes != nclasses)
		FreqStateCorrupt("The state's classes do not add up to its header.");
	return state;
}

/*
 * Send a parallel worker's state to its leader through a temporary file
 * instead of the tuple queue: the classes in the ascending encoding go to a
 * new file of the leader's file set (HandoverFileSet), written through a
 * buffer, and the message names the file, says where each partition starts
 * and what it holds, and holds the header.  The leader reads nothing in
 * advance: its merges read each partition from the file through a window
 * as they need it (AttachWorkerFile), and it deletes the file at the end
 * of the query; a file a failed statement left is deleted when its
 * subtransaction is rolled back or at the end of the leader's transaction
 * (FreqStateRemoveHandoverFiles).  A state shared by several aggregates is
 * written once, and the same message returned for each.  The classes cross
 * once as file writes and reads, which cost far less than writing and then
 * mapping the same bytes as shared memory, a small page at a time.  A
 * spilled state streams its runs into the file, which is bounded by no
 * budget or message size.  Returns NULL for a state that is not
 * partitioned, whose encoding could take less than HANDOVER_FROM_BYTES, or
 * when temp_file_limit is set: that is serialized as usual.  The caller
 * guarantees that the message goes to the leader's finalize aggregate in
 * this statement (see FreqStateHandOver).
 */
bytea *
FreqStateSendFile(FreqState *state, int32 leader_pid, int64 statement_start)
{
	static uint32 sequence = 0;
	HandoverFile handover;
	AscendingWriter writer = MEMORY_WRITER;
	StringInfoData buf;
	bool		arrays_only;
	Size		write_bytes;

	/* a state shared by several aggregates is written once */
	if (state->sent != NULL)
		return (bytea *) pg_detoast_datum_copy((struct varlena *) state->sent);

	/*
	 * Under temp_file_limit the file would have to fit beside the temporary
	 * files this process already has open (its spilled runs, other nodes'
	 * files), which fd.c does not tell: past the limit the write would fail
	 * where the tuple queue does not
	 */
	if (temp_file_limit >= 0)
		return NULL;
	FlushHeldRows(state);
	if (state->single != NULL || state->windowed)
		return NULL;
	if (state->attached == NULL && !HasRuns(state) && !Undecoded(state) &&
		!state->buffers_sorted)
		SortBuffersInPlace(state);
	/* sorting may have spilled */
	arrays_only = state->attached == NULL && !HasRuns(state) && !Undecoded(state);
	if (arrays_only)
	{
		if (AscendingBound(state) < HANDOVER_FROM_BYTES)
			return NULL;
	}
	else
		DrainBuffers(state);

	if (sequence == 0)
		sequence = (uint32) pg_prng_uint64(&pg_global_prng_state) | 1;
	sequence++;
	HandoverFileSet(&handover.fileset, leader_pid);
	HandoverFileName(handover.name, MyProcPid, sequence);
	writer.file = FileSetCreate(&handover.fileset, handover.name);
	/* like a merge's buffers, within 1/32 of the budget */
	write_bytes = Max(MIN_WINDOW_BYTES, Min(HANDOVER_WRITE_BYTES, state->budget / 32));
	writer.buffer = palloc(write_bytes + MAX_ASCENDING_CLASS_BYTES);
	writer.out = writer.buffer;
	writer.flush_at = (uintptr_t) (writer.buffer + write_bytes);
	writer.by_partition = true;
	if (arrays_only)
		WriteAscendingArrays(state, &writer);
	else
		ForEachClass(state, WriteAscendingClass, &writer);
	/* partitions past the last class are empty, at the end */
	while (writer.partition < PARTITIONS - 1)
		StartPartition(&writer, writer.out);
	(void) FlushAscending(&writer, writer.out);
	FileClose(writer.file);
	pfree(writer.buffer);
	elog(DEBUG1, "qidrisk: a parallel worker hands over its partial state in a temporary file");

	pq_begintypsend(&buf);
	pq_sendbyte(&buf, QIDRISK_STATE_FORMAT_VERSION);
	pq_sendbyte(&buf, ENCODING_FILE);
	pq_sendint32(&buf, leader_pid);
	pq_sendint64(&buf, statement_start);
	pq_sendint32(&buf, MyProcPid);
	pq_sendint32(&buf, (int32) sequence);
	pq_sendint64(&buf, (int64) writer.written);
	pq_sendint32(&buf, handover.fileset.ntablespaces);
	for (int i = 0; i < handover.fileset.ntablespaces; i++)
		pq_sendint32(&buf, (int32) handover.fileset.tablespaces[i]);
	for (int p = 0; p < PARTITIONS; p++)
	{
		pq_sendint64(&buf, (int64) writer.offsets[p]);
		pq_sendint64(&buf, writer.counts[p].classes);
		pq_sendint64(&buf, writer.counts[p].rows);
		pq_sendint64(&buf, writer.counts[p].singletons);
	}
	SendHeader(&buf, &writer.seen, state);
	state->sent = (bytea *) MemoryContextAlloc(state->context, buf.len);
	SET_VARSIZE(buf.data, buf.len);
	memcpy(state->sent, buf.data, buf.len);
	return pq_endtypsend(&buf);
}

/* The directory of this process's hand-over file set in a tablespace (as FileSetPath) */
static void
HandoverDirectory(char *path, Oid tablespace)
{
	char		tempdir[MAXPGPATH];

	TempTablespacePath(tempdir, tablespace);
	snprintf(path, MAXPGPATH, "%s/%s%lu.%u.fileset", tempdir, PG_TEMP_FILE_PREFIX,
			 (unsigned long) MyProcPid, HANDOVER_FILESET_NUMBER);
}

/* Whether a (sub)transaction older than aborted, which goes on, has read the file name */
static bool
ReadBefore(const char *name, SubTransactionId aborted)
{
	dlist_iter	iter;

	dlist_foreach(iter, &read_files)
	{
		ReadFile   *read = dlist_container(ReadFile, node, iter.cur);

		if (read->subid < aborted && strcmp(read->handover.name, name) == 0)
			return true;
	}
	return false;
}

/*
 * Delete the files of a hand-over directory but those that (sub)transactions
 * older than aborted have read, and the directory if it is then empty
 */
static void
SweepHandoverDirectory(const char *path, SubTransactionId aborted)
{
	struct stat st;
	DIR		   *dir;
	struct dirent *de;
	bool		kept = false;

	if (stat(path, &st) != 0)
		return;
	dir = AllocateDir(path);
	while ((de = ReadDirExtended(dir, path, LOG)) != NULL)
	{
		char		file[MAXPGPATH];

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (ReadBefore(de->d_name, aborted))
		{
			kept = true;
			continue;
		}
		snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
		(void) PathNameDeleteTemporaryFile(file, false);
	}
	FreeDir(dir);
	if (!kept && rmdir(path) != 0 && errno != ENOENT && errno != ENOTEMPTY)
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not remove directory \"%s\": %m", path)));
}

/*
 * Delete what parallel workers left for this process and it did not read or
 * has read (a statement that failed, or that succeeded in a transaction
 * now ending), with the directories: at the end of every transaction of a
 * process that has led parallel workers (aborted: InvalidSubTransactionId),
 * and when one of its subtransactions is rolled back, while none of its
 * parallel queries runs (aborted: that subtransaction; files that older
 * subtransactions read stay).  In every tablespace: the workers placed
 * their files by the temp_tablespaces of their query, which may have
 * changed since and cannot be looked up during an abort; a stat of one
 * directory for each tablespace.
 */
void
FreqStateRemoveHandoverFiles(SubTransactionId aborted)
{
	char		path[MAXPGPATH];
	DIR		   *dir;
	struct dirent *de;

	HandoverDirectory(path, DEFAULTTABLESPACE_OID);
	SweepHandoverDirectory(path, aborted);
	dir = AllocateDir("pg_tblspc");
	while ((de = ReadDirExtended(dir, "pg_tblspc", LOG)) != NULL)
	{
		if (strspn(de->d_name, "0123456789") != strlen(de->d_name))
			continue;
		HandoverDirectory(path, atooid(de->d_name));
		SweepHandoverDirectory(path, aborted);
	}
	FreeDir(dir);
}
