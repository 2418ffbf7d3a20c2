/*
 * qidrisk.h
 *	  The types, constants and inline helpers the C files of qidrisk share.
 *
 * It includes no header of the project, and declares no function: each C
 * file's functions are declared in its own header (fingerprint.h for
 * fingerprint.c, ...; the frequency engine's in freqengine.h), so that the
 * headers a file includes say which files it uses (test/ops/layers.sh).
 */
#ifndef QIDRISK_H
#define QIDRISK_H

#include "postgres.h"

#include "access/tupdesc.h"
#include "catalog/pg_type_d.h"
#include "common/hashfn.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/sortsupport.h"

/*
 * The schema the install script creates for every internal object: no
 * installing role can create objects there, so SQL that qidrisk generates
 * calls only functions of this schema and of pg_catalog (docs/security.md)
 */
#define QIDRISK_INTERNAL "qidrisk_internal"

/* Format version written at the head of every serialized state */
#define QIDRISK_STATE_FORMAT_VERSION 3

/* qidrisk.kmap_population_scan: how the k-map functions read the population */
typedef enum KmapPopulationScan
{
	KMAP_SCAN_AUTO,				/* grouped for a distributed table, else probe */
	KMAP_SCAN_PROBE,			/* every row probed against the release's classes */
	KMAP_SCAN_GROUPED			/* counted per class where the rows are, then matched */
} KmapPopulationScan;

/* ---- fingerprint.c ---- */

/* A quasi-identifier value combination, reduced to 128 bits */
typedef struct QidFingerprint
{
	uint64		lo;
	uint64		hi;
} QidFingerprint;

/* Order fingerprints by high half, then low half */
static inline int
QidFingerprintCompare(const QidFingerprint *a, const QidFingerprint *b)
{
	if (a->hi != b->hi)
		return a->hi < b->hi ? -1 : 1;
	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return 0;
}

/* Per-call cache of how to hash each quasi-identifier argument */
typedef struct QidHasher QidHasher;

/* ---- hashkey.c ---- */

/* Mix 64 bits thoroughly (the finalizer of MurmurHash3) */
static inline uint64
QidMix64(uint64 h)
{
	h ^= h >> 33;
	h *= UINT64CONST(0xff51afd7ed558ccd);
	h ^= h >> 33;
	h *= UINT64CONST(0xc4ceb9fe1a85ec53);
	h ^= h >> 33;
	return h;
}

/* A random key for one hash table's bucket placement */
typedef struct QidPlacementKey
{
	uint64		k0;
	uint64		k1;
} QidPlacementKey;

/*
 * The bucket of a fingerprint under a placement key.  Both halves count (a
 * chosen uuid may repeat one half), and without the key the bucket of a
 * fingerprint cannot be known, so data cannot be chosen to share a bucket.
 */
static inline uint32
QidPlacementHash(const QidFingerprint *fp, const QidPlacementKey *key)
{
	return (uint32) QidMix64((fp->lo ^ key->k0) +
							 (fp->hi ^ key->k1) * UINT64CONST(0x9e3779b97f4a7c15));
}

/* A secret key under which the approximate aggregates sample classes */
typedef struct QidSampleKey
{
	uint64		k0;
	uint64		k1;
	uint64		k2;
} QidSampleKey;

/*
 * How a hash table places and compares the values of one type: by the bits
 * of the Datum where equal values have equal Datums, else by the type's hash
 * and equality under a collation.  The hash is keyed by a random key drawn
 * per table or per query, so values cannot be chosen to share a bucket.
 */
typedef struct QidValueHash
{
	Oid			collation;
	bool		bitwise;		/* equal values have equal Datums */
	bool		bytewise;		/* equal values have equal bytes (text under a
								 * deterministic collation, bytea), hashed as
								 * the type's extended hash would */
	bool		extended;		/* hash is the type's seeded extended hash */
	uint64		key;
	FmgrInfo	hash;
	FmgrInfo	equal;
} QidValueHash;

/* Whether a bytewise value can be read in place (not compressed or external) */
static inline bool
QidValueInPlace(Datum value)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(value);

	return !VARATT_IS_EXTERNAL(v) && !VARATT_IS_COMPRESSED(v);
}

/* The keyed 32-bit hash of a value */
static inline uint32
QidValueHashOf(QidValueHash *vh, Datum value)
{
	if (vh->bitwise)
		return (uint32) QidMix64((uint64) value ^ vh->key);
	/* what hashtextextended and hashvarlenaextended compute, without the call */
	if (vh->bytewise && QidValueInPlace(value))
		return (uint32) hash_bytes_extended((unsigned char *) VARDATA_ANY(DatumGetPointer(value)),
											VARSIZE_ANY_EXHDR(DatumGetPointer(value)), vh->key);
	if (vh->extended)
		return (uint32) DatumGetUInt64(FunctionCall2Coll(&vh->hash, vh->collation, value,
														 UInt64GetDatum(vh->key)));
	/* a type without an extended hash: only a mix of its 32-bit hash is keyed */
	return (uint32) QidMix64(DatumGetUInt32(FunctionCall1Coll(&vh->hash, vh->collation,
															  value)) ^ vh->key);
}

/* Whether two values are equal, by bits or by the type's equality */
static inline bool
QidValueHashEqual(QidValueHash *vh, Datum a, Datum b)
{
	if (vh->bitwise)
		return a == b;
	if (vh->bytewise && QidValueInPlace(a) && QidValueInPlace(b))
		return VARSIZE_ANY_EXHDR(DatumGetPointer(a)) == VARSIZE_ANY_EXHDR(DatumGetPointer(b)) &&
			memcmp(VARDATA_ANY(DatumGetPointer(a)), VARDATA_ANY(DatumGetPointer(b)),
				   VARSIZE_ANY_EXHDR(DatumGetPointer(a))) == 0;
	return DatumGetBool(FunctionCall2Coll(&vh->equal, vh->collation, a, b));
}

/* ---- freqstate.c ---- */

/* Hash-table entry: one equivalence class and its size */
typedef struct FreqEntry
{
	QidFingerprint key;
	int64		count;
	char		status;
} FreqEntry;

struct freqhash_hash;
typedef struct FreqPartition FreqPartition;
typedef struct MappedCopy MappedCopy;
typedef struct EncodedFile EncodedFile;

/*
 * Transition state shared by every frequency aggregate.  Read its counters
 * through the accessors: rows may still sit in partition buffers.
 */
/* Rows a small state holds back while their hash buckets are fetched */
#define FREQ_PENDING_ROWS 16

/* _key aggregates' keys held back to be remixed together (FreqStateAddKey) */
#define FREQ_KEY_BATCH 32

/* Values held back while their slots in the held table are fetched */
#define FREQ_HELD_RING 8

/* A class counted in the front table (freqstate.c): its fingerprint and rows */
typedef struct FreqFrontSlot
{
	QidFingerprint key;
	int64		count;			/* 0: a free slot */
} FreqFrontSlot;

/* The counters of a state, its attached states and buffered rows included */
typedef struct FreqCounts
{
	int64		rows;
	int64		classes;
	int64		singletons;
} FreqCounts;

typedef struct FreqState
{
	MemoryContext context;		/* where the hash tables live */
	struct freqhash_hash *single;	/* the one table of a small state */
	FreqPartition *parts;		/* the partitions of a large state */
	struct CountedClass *scratch;	/* where partition buffers are sorted */
	int64		scratch_capacity;
	int64	   *buckets;		/* the bucket sort's counters */
	int64		bucket_capacity;
	MemoryContextCallback release;	/* unmaps the partitions' arrays */
	struct FreqState *attached; /* combined in, not yet merged */
	struct FreqState *next_attached;	/* the next one in that list */
	double		attached_memory;	/* bytes the attached states occupy */
	bool		streamed;		/* the streamed_* counters are current */
	int64		streamed_rows;	/* counters over the state and its attachments */
	int64		streamed_classes;
	int64		streamed_singletons;
	char	   *encoded;		/* a received state's classes, not yet decoded */
	Size		encoded_bytes;
	MappedCopy *encoded_copy;	/* where encoded lies, if it is ours */
	EncodedFile *encoded_file;	/* or the worker's file its classes lie in */
	bool		unsettled;		/* rows wait in partition buffers */
	bool		windowed;		/* a window aggregate's: never partitioned */
	bool		one_of_many;	/* a group's in a hashed aggregate: no front table */
	bool		private_copy;	/* made by deserialization or a combine,
								 * owned by context, held by nobody else */
	bool		lent;			/* a view of a state this process lent
								 * (FreqStateLend): shares its arrays, which
								 * belong to the partial aggregate; only read */
	bool		buffers_sorted; /* each partition buffer is sorted and summed */
	bytea	   *sent;			/* the message naming the file FreqStateSendFile
								 * wrote it to, if it did */
	int64		rows;			/* rows counted so far */
	int64		classes;		/* distinct fingerprints */
	int64		singletons;		/* classes of size 1 */
	bool		has_param;		/* the aggregate has a constant parameter */
	double		param;			/* its value (rows_below_k's k, a domain size...) */
	Size		budget;			/* bytes the state may occupy */
	double		memory;			/* bytes the state occupies */
	bool		spill;			/* past the budget, write runs to temporary files */
	struct BufFile **adopted_files; /* run files taken over from other states */
	int			nadopted;
	int			adopted_capacity;
	uint64		held_multiplier;	/* odd and random: places held values */
	uint64	   *held;			/* a one-column int4 QID's values, counted
								 * before they are fingerprinted
								 * (FreqStateAddValue) */
	int			held_bits;		/* log2 of held's slots */
	int64		nheld;			/* distinct values in held */
	bool		held_off;		/* too many distinct values to hold */
	int			nring;			/* values in held_ring, not yet in held */
	int			ring_head;		/* the oldest of them, once the ring is full */
	uint32		held_ring[FREQ_HELD_RING];
	FreqFrontSlot *front;		/* the front table of recent classes, if in use */
	uint64		front_multiplier;	/* odd and random: places classes in it */
	int64		front_countdown;	/* rows until the front table is judged */
	int64		front_misses;	/* rows of this window it did not hold */
	bool		front_keys;		/* it holds _key aggregates' keys, remixed
								 * (QidKeyRemix) only as they leave it */
	QidFingerprint *keys;		/* FREQ_KEY_BATCH keys' room, once needed */
	int			nkeys;			/* keys in it, not yet remixed and counted */
	struct RowLog *log;			/* rows held as they came (freqlog.c), if any */
	bool		log_allowed;	/* a serial aggregate's own state: may log */
	bool		log_off;		/* its log was counted in: no other */
	int64		log_counted_rows;	/* the log's rows and the table's when */
	int64		log_counted_table_rows;	/* log_counts was taken (-1: never) */
	FreqCounts	log_counts;		/* the counts of the log and the table then */
	int			npending;		/* rows in pending, not yet in the table */
	int			pending_head;	/* the oldest of them, once pending is full */
	QidFingerprint pending[FREQ_PENDING_ROWS];
} FreqState;


/* What this process's frequency states have done since it started (for tests) */
typedef struct FreqStateEvents
{
	int64		partitioned;	/* states moved from one hash table into partitions */
	int64		lent;			/* partial states lent and taken back in this process */
	int64		files_received; /* workers' states read from their hand-over files */
	int64		partitions_decoded; /* received partitions decoded into arrays */
	int64		partitions_to_runs; /* received partitions written straight to runs */
	int64		fronts_started;	/* front tables of recent classes started */
	int64		fronts_given_up;	/* ... and given up for missing too often */
	int64		merges_from_front;	/* runs merged into the free classes before an array */
	int64		logs_started;	/* row logs started (freqlog.c) */
	int64		logs_counted;	/* ... counted in place by a reader */
	int64		logs_flushed;	/* ... counted into their state's table or partitions */
	int64		logs_into_partitions;	/* ... counted into sorted partitions directly */
	int64		logs_crowded;	/* ... found crowding a sorted bucket, counted class by class */
	int64		lattice_packed_splits;	/* qid_lattice nodes split from packed codes */
} FreqStateEvents;

/* Iterate over the classes of a state */
typedef void (*FreqVisitor) (int64 count, void *arg);
typedef void (*FreqKeyVisitor) (const QidFingerprint *key, int64 count, void *arg);

/* ---- quantile.c ---- */

/* How quantile_* aggregates hash, compare and convert one value type */
typedef struct ValueType
{
	Oid			type;
	Oid			collation;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	QidValueHash hash;			/* places values in the state's hash table */
	SortSupportData sort;		/* the type's default ordering */
} ValueType;

/* A distinct value and how many rows hold it */
typedef struct ValueCount
{
	Datum		value;
	int64		count;
} ValueCount;

/* ---- clustering.c ---- */

typedef enum ClusterCost
{
	CLUSTER_SUM_OF_SQUARES,
	CLUSTER_K_MEDIAN,
	CLUSTER_K_CENTER
} ClusterCost;

/* ---- qidsearch.c ---- */

/* Whether type holds numbers that convert to float8 (means, weights) */
static inline bool
QidIsNumericType(Oid type)
{
	return type == INT2OID || type == INT4OID || type == INT8OID ||
		type == FLOAT4OID || type == FLOAT8OID || type == NUMERICOID;
}

/*
 * Candidate columns of a relation read once and dictionary-encoded: codes[c]
 * holds one dense code (0 .. ndistinct[c] - 1) per row; values equal under the
 * type's default hash equality and the column's collation share a code, and
 * NULL has a code of its own.
 */
typedef struct QidEncoded
{
	int64		nrows;			/* rows encoded */
	int64		dropped;		/* rows left out as incomplete */
	int			ncolumns;
	char	  **names;			/* the columns, in candidate order */
	int32	  **codes;			/* codes[column][row] */
	int32	   *ndistinct;		/* distinct values per column, NULL included */
	Size		memory;			/* bytes the codes occupy */
	char	  **keys;			/* with keys: each row's key as text, or NULL */
} QidEncoded;

/*
 * A stripped partition: only the classes of two rows or more, their row
 * numbers listed class after class; class i ends before rows[ends[i]].
 * A row not listed is unique on the subset.
 */
typedef struct QidPartition
{
	int64		nclasses;		/* classes of two rows or more */
	int64		nrows;			/* rows in those classes */
	int32	   *rows;
	int32	   *ends;
} QidPartition;

/* A subset of the encoded columns as the lattice walk reports it */
typedef struct QidSubset
{
	const int  *columns;		/* candidate positions, ascending */
	int			size;
	const QidPartition *partition;	/* empty for an identifier; NULL when
									 * not asked for (need_partitions) */
	int64		singletons;		/* rows unique on the subset */
	int64		classes;		/* distinct combinations (H) */
	bool		identifier;		/* every row unique (and at least one row) */
	bool		minimal_identifier; /* and no smaller subset of it is one */
} QidSubset;

typedef void (*QidSubsetVisitor) (const QidSubset *subset, void *arg);

/* ---- relreader.c ---- */

/*
 * A relation opened and locked (AccessShareLock, to the end of the
 * transaction) by a table-level function, and the columns it reads, resolved
 * under that lock.
 */
typedef struct QidRelation
{
	Oid			relid;
	char		relkind;
	bool		changed;		/* altered after the active snapshot was taken */
	char	   *relname;		/* for messages */
	char	   *qualified;		/* quoted schema.name, for queries */
	TupleDesc	desc;			/* a copy of the relation's descriptor */
	int			ncolumns;		/* the chosen columns */
	int			capacity;
	char	  **names;
	AttrNumber *attnums;
	Oid		   *types;
	Oid		   *collations;
} QidRelation;

/* How QidEncodeRelation reads a relation */
typedef struct QidEncodeOptions
{
	bool		drop_incomplete;	/* leave out rows with a NULL or '' value */
	bool		rank;			/* codes are ranks in the type's order, NULL last */
	bool		keys;			/* keep each row's key as text, rows in key order */
	const char *key;			/* the key column, or NULL for ctid */
	int64		max_rows;		/* most rows read, 0 for the default */
	/* if set, called with the rows read so far when they pass max_rows */
	void		(*too_many_rows) (int64 rows, void *arg);
	void	   *too_many_rows_arg;
} QidEncodeOptions;

/* ---- gpd.c ---- */

#include "access/htup.h"
#include "access/tupdesc.h"

/* How a Generalised Pareto distribution was fitted */
typedef enum GpdMethod
{
	GPD_METHOD_AUTO,			/* mle, falling back to pwm, mom, boundary */
	GPD_METHOD_MLE,
	GPD_METHOD_PWM,
	GPD_METHOD_MOM,
	GPD_METHOD_BOUNDARY			/* xi = -1, beta = max: the likelihood's
								 * supremum when no fit with xi > -1 exists */
} GpdMethod;

/* A fitted GPD of threshold excesses */
typedef struct GpdFit
{
	double		xi;				/* shape */
	double		beta;			/* scale */
	double		loglik;			/* log-likelihood at (xi, beta) */
	GpdMethod	method;
} GpdFit;

/* A QaR dataset risk and what lies behind it */
typedef struct QarRisk
{
	double		risk;			/* T(p, alpha) */
	double		u;				/* threshold: empirical 1 - pi_u quantile */
	int64		n_p;			/* thetas (subsets) */
	int			n_u;			/* thetas strictly above u */
	int64		rows;			/* L, the clamping's row count; 0 if none */
	GpdFit		fit;
} QarRisk;

/* ---- sketch.c ---- */

/* Classes a distinct sample keeps: default, smallest and largest capacity */
#define QIDRISK_SKETCH_DEFAULT_CAPACITY 32768
#define QIDRISK_SKETCH_MIN_CAPACITY 64
#define QIDRISK_SKETCH_MAX_CAPACITY (1 << 24)

/* A distinct sample of a quasi-identifier's classes (Gibbons 2001) */
typedef struct QidSketch QidSketch;

/* ---- qidkey.c ---- */

struct pg_uuid_t;

/*
 * diversity.c: t-closeness with the ordered distance (Li, Li and
 * Venkatasubramanian 2007), shared by t_closeness_ordered and qid_lattice.
 * The table's m sensitive values are ranked 0 .. m-1; a class's values are
 * items (rank, rows) in ascending rank order.
 */
typedef struct OrderedItem
{
	int64		rank;
	int64		count;
} OrderedItem;

typedef struct OrderedTable
{
	int64		m;				/* distinct sensitive values of the table */
	double		rows;			/* the table's rows */
	double	   *cum;			/* cum[i]: rows of ranks 0 .. i */
	double	   *prefix;			/* prefix[i] = cum[0] + ... + cum[i-1] */
} OrderedTable;

#endif							/* QIDRISK_H */
