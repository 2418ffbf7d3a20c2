/*
 * lattice.h
 *	  The full-domain generalization lattice (qid_lattice): classification
 *	  of every node for k-anonymity with a suppression limit, l-diversity
 *	  (distinct, entropy, recursive (c,l)), t-closeness (equal or ordered
 *	  distance) and the privacy argument's models, with utility measures
 *	  per node.  This header holds the types its files share and is private
 *	  to them; a file uses only those below it:
 *
 *	  lattice.c         the entry, its steps, Flash and the heuristic search
 *	  latticenode.c     one node's classes, the models per class, utility
 *	  latticepop.c      a population table (k_map against it, delta_presence)
 *	  latticeread.c     the table read once and encoded, each level's codes
 *	  latticehier.c     hierarchies: layouts, reading, checks
 *	  latticeoptions.c  the arguments and the privacy object
 *
 * Each quasi-identifier column has a hierarchy: the value's levels 1..H
 * (ARX's layout), read through hierarchy_levels() or interval_hierarchy().
 * A node picks one level per column.  The relation is read once through SPI
 * with the caller's rights; each column is dictionary-encoded (level-0 codes,
 * values equal under the type's equality share one), and the hierarchy maps
 * each level-0 code to a code per level.
 *
 * A node is evaluated by partition refinement of "items": groups of rows
 * equal in every column at some lower node (and in the sensitive value).
 * The items of a node are refined by each column's code at the node's level
 * and then by the sensitive value, so a node's classes come from any
 * evaluated node below it (a roll-up) in time linear in that node's items;
 * the rows themselves are the items of the bottom.  Snapshots of evaluated
 * nodes are kept in a cache bounded in bytes; when every column's level-0
 * code fits in one 64-bit word together, a snapshot carries its items' codes
 * packed, so a roll-up reads them in item order rather than each item's row.
 *
 * Generalization is monotone for the models when suppression cannot break it
 * (k-anonymity and distinct l-diversity with any suppression limit; entropy
 * and recursive l-diversity and t-closeness without suppression): then an
 * anonymous node makes every node above it anonymous and a non-anonymous one
 * every node below it non-anonymous.  The lattice is classified with Flash's
 * predictive tagging (Kohlmayer et al., "Flash: efficient, stable and optimal
 * k-anonymity", 2012): nodes in order of height, from each untagged node a
 * path upwards through untagged nodes, binary search on the path, tagging
 * the closures of every node checked.  Otherwise every node is evaluated.
 *
 * The privacy argument's models: k-map estimated is k'-anonymity, monotone
 * always; beta-likeness bounds each class's shares and average risk the
 * kept classes per kept row, both monotone without suppression (a union of
 * classes averages their shares and raises the average size); population
 * uniqueness's estimates can rise as classes merge, so with it every node is
 * evaluated; k-map against a population table is monotone always (a union
 * of classes holds their population rows), delta-presence without
 * suppression (a union averages their shares).
 */

#ifndef LATTICE_H
#define LATTICE_H

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "common/int.h"
#include "common/pg_prng.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/binaryheap.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "catalog/namespace.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/regproc.h"
#include "utils/sortsupport.h"
#include "utils/typcache.h"
#include "utils/varlena.h"
#include "boundary.h"
#include "compat.h"
#include "diversity.h"
#include "hashkey.h"
#include "popunique.h"
#include "qidrisk.h"
#include "relreader.h"
#include "valuedict.h"
#include "settings.h"

/*
 * The lattice's files call each other's helpers: hidden from the dynamic
 * symbol table (they were static when the lattice was one file)
 */
#ifdef __GNUC__
#define LAT_PRIVATE __attribute__((visibility("hidden")))
#else
#define LAT_PRIVATE
#endif

/* Rows fetched from a cursor at a time; rows read between memory checks */
#define LATTICE_FETCH_BATCH 10000

/* Most class keys grouped through a direct table rather than a hash table */
#define LATTICE_DENSE_KEYS (1 << 18)
#define LATTICE_TABLE_START (1 << 16)	/* GroupKeys's hash table sized for at most these */

/* Fewest bytes of the rows' codes for snapshots to carry them packed */
#define LATTICE_PACK_MIN_BYTES (4 << 20)

/* Most nodes a lattice may have for the exact search */
#define LATTICE_MAX_NODES 10000000

/* Bytes of one evaluated node in the heuristic search: figures, slot arrays, heap, hash */
#define HEURISTIC_SLOT_BYTES (sizeof(int64) * 4 + sizeof(double) * 4 + sizeof(int32) * 2 + 2 + \
							  sizeof(Datum) + 2 * sizeof(NodeSlotEntry))

/* Tolerance of the entropy l-diversity test, relative to ln l */
#define ENTROPY_TOLERANCE 1e-9

typedef enum LModel
{
	L_DISTINCT,
	L_ENTROPY,
	L_RECURSIVE
} LModel;

typedef enum Metric
{
	METRIC_HEIGHT,
	METRIC_PRECISION,
	METRIC_DISCERNIBILITY,
	METRIC_ENTROPY,
	METRIC_SUPPRESSED,
	METRIC_LOSS
} Metric;

typedef enum Evaluate
{
	EVALUATE_TAGGED,
	EVALUATE_ANONYMOUS,
	EVALUATE_ALL,
	EVALUATE_BEST
} Evaluate;

typedef enum Search
{
	SEARCH_EXACT,
	SEARCH_HEURISTIC
} Search;

/* Tags of a node */
#define TAG_UNKNOWN 0
#define TAG_ANONYMOUS 1
#define TAG_NOT_ANONYMOUS 2

/* A text of known length, a key of the label tables */
typedef struct TextKey
{
	const char *data;
	int32		len;
} TextKey;

typedef struct LabelEntry
{
	TextKey		key;
	int32		code;
	uint32		hash;
	char		status;
} LabelEntry;

extern LAT_PRIVATE uint64 lattice_hash_seed;

#define SH_PREFIX labelhash
#define SH_ELEMENT_TYPE LabelEntry
#define SH_KEY_TYPE TextKey
#define SH_KEY key
#define SH_HASH_KEY(tb, k) ((uint32) hash_bytes_extended((const unsigned char *) (k).data, (k).len, lattice_hash_seed))
#define SH_EQUAL(tb, a, b) ((a).len == (b).len && memcmp((a).data, (b).data, (a).len) == 0)
#define SH_STORE_HASH
#define SH_GET_HASH(tb, a) ((a)->hash)
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/* Distinct tuples of codes, counted: a population's rows and its classes */
typedef struct TupleIndex TupleIndex;

typedef struct TupleEntry
{
	uint32		tuple;			/* its place in TupleIndex.codes */
	uint32		hash;
	char		status;
} TupleEntry;

static inline uint32 TupleHash(const TupleIndex *index, uint32 tuple);
static inline bool TupleEqual(const TupleIndex *index, uint32 a, uint32 b);

#define SH_PREFIX codetuple
#define SH_ELEMENT_TYPE TupleEntry
#define SH_KEY_TYPE uint32
#define SH_KEY tuple
#define SH_HASH_KEY(tb, key) TupleHash((const TupleIndex *) (tb)->private_data, key)
#define SH_EQUAL(tb, a, b) TupleEqual((const TupleIndex *) (tb)->private_data, a, b)
#define SH_STORE_HASH
#define SH_GET_HASH(tb, a) ((a)->hash)
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

struct TupleIndex
{
	int			width;			/* codes per tuple */
	uint32		ntuples;
	uint32		capacity;		/* tuples codes holds, one more for a probe */
	int32	   *codes;			/* tuple t at codes[t * width] */
	int64	   *count;			/* its rows */
	const char *funcname;
	codetuple_hash *table;
};

/* Tuples are placed by a hash keyed per call, so chosen values cannot crowd them */
static inline uint32
TupleHash(const TupleIndex *index, uint32 tuple)
{
	return (uint32) hash_bytes_extended((const unsigned char *) (index->codes + (Size) tuple * index->width),
										sizeof(int32) * index->width, lattice_hash_seed);
}

static inline bool
TupleEqual(const TupleIndex *index, uint32 a, uint32 b)
{
	return memcmp(index->codes + (Size) a * index->width, index->codes + (Size) b * index->width,
				  sizeof(int32) * index->width) == 0;
}

/* Heuristic search: an evaluated node's slot in the per-node arrays */
typedef struct NodeSlotEntry
{
	int64		node;
	int32		slot;
	char		status;
} NodeSlotEntry;

#define SH_PREFIX nodeslot
#define SH_ELEMENT_TYPE NodeSlotEntry
#define SH_KEY_TYPE int64
#define SH_KEY node
#define SH_HASH_KEY(tb, key) murmurhash32((uint32) (key) ^ murmurhash32((uint32) ((uint64) (key) >> 32)))
#define SH_EQUAL(tb, a, b) ((a) == (b))
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/* One quasi-identifier column, its hierarchy and its codes */
typedef struct LatColumn
{
	char	   *name;
	int			height;			/* the top level H (0 without a hierarchy) */
	QidValueDict dict;			/* level-0 codes of the values */
	int32		ncodes0;		/* capacity of hrow_of_code */
	int32	   *hrow_of_code;	/* per level-0 code: its hierarchy row */
	/* the hierarchy, levels 1..height */
	int32		hrows;
	char	  **hvalue;			/* per hierarchy row: the value (NULL for NULL) */
	int32		hnull_row;		/* the row of NULL, -1 */
	labelhash_hash *hlookup;	/* value text -> hierarchy row */
	int32	  **hcode;			/* hcode[j][row]: label code at level j */
	int32	   *nlabels;		/* nlabels[j]: labels at level j */
	char	 ***labels;			/* labels[j][code] */
	/* after encoding */
	int32	  **map;			/* map[j][code0]: code at level j (map[0] NULL) */
	int32	   *ndist;			/* ndist[j]: codes at level j */
	double	  **log2count;		/* log2count[j][code]: log2 of its rows */
	/* the loss metric */
	int64		domain;			/* the hierarchy's rows (its level-0 values) */
	int32	  **covered;		/* covered[j][code]: the domain's values it covers */
	int64	   *covered_total;	/* covered_total[j]: summed over the rows */
	double	   *entropy;		/* entropy[j]: the column's non-uniform entropy at level j */
} LatColumn;

/* The items of an evaluated node: groups of rows, classes contiguous */
typedef struct NodeItems
{
	int64		node;
	int32		nitems;
	int32		nclasses;
	int32	   *rep;			/* an item's representative row */
	int32	   *count;			/* its rows */
	int32	   *class_end;		/* a class's end in the items */
	Size		bytes;
	uint64		used;			/* LRU stamp */
	/* last: bytes counts the members above it; its array is charged to the code budget */
	uint64	   *code;			/* an item's level-0 codes packed (Lattice.pack_shift), or NULL */
} NodeItems;

typedef struct Lattice
{
	const char *funcname;
	QidRelation *rel;			/* the table, its columns resolved (the sensitive one last) */
	int			ncolumns;
	LatColumn  *columns;
	int64		nrows;
	/* privacy models */
	int64		k;
	int64		max_suppressed_rows;
	bool		has_sensitive;
	int32	   *sens;			/* per row: the sensitive value's rank */
	int32		nsens;
	double	   *sens_share;		/* its share of all rows */
	int			l;
	LModel		l_model;
	double		c;
	bool		has_t;
	double		t;
	int64		kmap_k;			/* k-map estimated: the class size it needs (0 without) */
	bool		has_average_risk;	/* a ceiling on the average prosecutor risk */
	double		average_risk;
	int64	   *kept_classes;	/* (size, first item) per kept class, for it and population uniqueness */
	bool		has_pu;			/* a ceiling on the population uniques' share */
	double		pu_max;
	double		pu_fraction;
	int			pu_model;		/* popunique.c's model index */
	double		pu_population;	/* rows / sampling fraction, rounded */
	int64	   *pu_sizes;		/* a class-size profile being estimated */
	int64	   *pu_counts;
	/* a population table: k-map against it, delta-presence */
	char	   *pop_name;		/* as given, resolved with the caller's search_path */
	Jsonb	   *pop_qid;		/* its columns for the quasi-identifiers (NULL: the same names) */
	int64		pop_k;			/* k-map: the population rows a class needs (0 without) */
	bool		has_delta;
	double		delta_min;
	double		delta_max;
	TupleIndex *pop_tuples;		/* its distinct level-0 tuples, counted */
	TupleIndex *pop_classes;	/* its classes at the node being evaluated */
	bool	   *blocked;		/* per node: a population class without rows of rel fails delta-presence */
	bool		has_beta;		/* beta-likeness */
	double		beta;
	bool		beta_enhanced;
	bool		ordered;
	bool		monotone;
	Metric		metric;
	double		gs_factor;		/* the loss metric: generalization against suppression */
	double	   *weight;			/* per column, divided by the largest */
	double	  **loss_bound;		/* per column and level: its loss factor, no row suppressed */
	int64	   *suppressed_covered;	/* per column: covered summed over the suppressed rows of the node evaluated */
	Evaluate	evaluate;
	Search		search;
	/* the lattice */
	int64		nnodes;
	int64	   *stride;
	uint8	   *tag;
	bool	   *evaluated;
	int64	   *suppressed;
	int64	   *classes;		/* per node: the classes it keeps */
	double	   *discernibility;
	double	   *entropy;
	double	   *loss;			/* the loss metric */
	int64		nevaluated;
	double		dm_all;			/* the last evaluated node's sum of squared class sizes, all classes */
	/*
	 * evaluate => 'best': nodes no better than the best found are skipped
	 * (per node, upward closed), the least loss of an anonymous evaluated
	 * node, and the evaluated nodes whose bound may yet exceed it
	 */
	uint8	   *pruned;
	bool		has_best;
	double		best_loss;
	struct PruneCandidate *candidates;
	int64		ncandidates;
	int64		candidates_capacity;
	int32	   *bound_levels;	/* a node's levels while its bound is taken */
	double		log2rows;		/* log2 of the rows, which each suppressed class needs */
	/*
	 * Heuristic search: the per-node arrays above hold evaluated nodes only,
	 * in slots (in exact search a node is its own slot and slots is NULL)
	 */
	nodeslot_hash *slots;		/* node -> slot */
	int64		budget;			/* most slots: qidrisk.lattice_heuristic_nodes */
	int64	   *slot_node;		/* per slot: its node */
	double	   *slot_loss;		/* its loss under the metric */
	double	   *slot_bound;		/* a lower bound of the loss of it and every node above */
	int32	   *slot_height;
	bool	   *expanded;		/* its successors have been evaluated */
	/* evaluation buffers */
	int32	   *perm;
	int32	   *perm2;
	int32	   *ends;
	int32	   *ends2;
	int32	   *key;
	int32	   *counts;
	int32	   *starts;
	int32	   *touched;
	int32	   *group_class;	/* per class: groups so far (sensitive split) */
	NodeItems  *bottom;			/* the rows by their level-0 codes (BottomItems) */
	int32	   *dense;			/* per class key: its class, -1 (GroupKeys) */
	uint64		dense_ready;	/* its entries set to -1 so far */
	bool		bottom_tried;
	OrderedTable ordered_table;	/* ordered distance: the table's cumulative shares */
	OrderedItem *items;			/* and a class's values, by rank */
	int32	   *levels;			/* the node being evaluated */
	int32	   *rowcodes;		/* rowcodes[row * ncolumns + i]: the level-0 codes, row-major */
	int		   *pack_shift;		/* column i's level-0 code at this bit of a 64-bit word, NULL */
	uint64	   *pack_mask;		/* when every column's codes fit in one (then snapshots carry them) */
	int32	   *rowbuf;			/* one item's level-0 codes unpacked (ItemRow) */
	int32	  **keys;			/* keys[j][item]: split column j's code at the node's level */
	int		   *split;			/* the columns split on (more than one code at the level) */
	const int32 **maps;			/* their level maps (NULL at level 0) */
	int64	   *queue;
	/* snapshot cache */
	MemoryContext cache_context;
	NodeItems  **cache;
	int			ncache;
	int			cache_capacity;
	int32	   *snap_of;		/* per node: its slot in the cache, -1 */
	Size		cache_bytes;
	Size		cache_budget;
	Size		code_bytes;		/* the cached snapshots' packed codes */
	Size		code_budget;	/* at most this: what the half the cache leaves holds beside the bottom */
	uint64		clock;
	Size		base_bytes;		/* the encoded columns and the lattice */
} Lattice;

/* Stop with an error naming the memory setting */
static inline void
CheckLatticeMemory(double bytes, const char *funcname, const char *what)
{
	QidCheckMemory(bytes, funcname, what, "pass fewer columns or coarser hierarchies");
}

/* A text datum as a key (not copied) */
static inline TextKey
TextKeyOf(Datum value)
{
	text	   *t = DatumGetTextPP(value);
	TextKey		key;

	key.data = VARDATA_ANY(t);
	key.len = VARSIZE_ANY_EXHDR(t);
	return key;
}

/* One column's level-0 code from a packed word (PackRow's inverse) */
static inline int32
UnpackCode(uint64 code, int shift, uint64 mask)
{
	return (int32) ((code >> shift) & mask);
}

/* A row's level-0 codes in one word */
static inline uint64
PackRow(const Lattice *lat, const int32 *row)
{
	uint64		code = 0;

	for (int c = 0; c < lat->ncolumns; c++)
		code |= (uint64) row[c] << lat->pack_shift[c];
	return code;
}

/*
 * The level-0 codes of item x of a snapshot (of row x without one): read
 * from the snapshot's packed codes, in item order, when it has them (into
 * buf), else from the row
 */
static inline const int32 *
ItemRow(const Lattice *lat, const NodeItems *s, int32 x, int32 *buf)
{
	if (s == NULL)
		return lat->rowcodes + (Size) x * lat->ncolumns;
	if (s->code == NULL)
		return lat->rowcodes + (Size) s->rep[x] * lat->ncolumns;
	for (int c = 0; c < lat->ncolumns; c++)
		buf[c] = UnpackCode(s->code[x], lat->pack_shift[c], lat->pack_mask[c]);
	return buf;
}

/* Item x's level-0 codes packed (row x's without a snapshot) */
static inline uint64
ItemPacked(const Lattice *lat, const NodeItems *s, int32 x)
{
	if (s != NULL && s->code != NULL)
		return s->code[x];
	return PackRow(lat, lat->rowcodes + (Size) (s != NULL ? s->rep[x] : x) * lat->ncolumns);
}

/* Decode a node's levels */
static inline void
NodeLevels(const Lattice *lat, int64 node, int32 *levels)
{
	for (int i = 0; i < lat->ncolumns; i++)
		levels[i] = (int32) ((node / lat->stride[i]) % (lat->columns[i].height + 1));
}

/* Where a node's figures are: the node itself, or its slot in heuristic search (-1: not evaluated) */
static inline int64
NodeSlot(const Lattice *lat, int64 node)
{
	NodeSlotEntry *entry;

	if (lat->slots == NULL)
		return node;
	entry = nodeslot_lookup(lat->slots, node);
	return entry != NULL ? entry->slot : -1;
}

extern LAT_PRIVATE char *JsonbStringValue(JsonbValue *v);
extern LAT_PRIVATE JsonbValue *JsonbGet(JsonbContainer *container, const char *key);
extern LAT_PRIVATE const char *JsonbTypePhrase(const JsonbValue *v);
extern LAT_PRIVATE void ParseLossOptions(Lattice *lat, FunctionCallInfo fcinfo);
extern LAT_PRIVATE void ParsePrivacy(Lattice *lat, Jsonb *privacy);
extern LAT_PRIVATE void ParseModels(Lattice *lat, FunctionCallInfo fcinfo, double *max_suppressed, char **sensitive);
extern LAT_PRIVATE void ResolveColumns(Lattice *lat, Oid relid, ArrayType *qid, const char *sensitive);
extern LAT_PRIVATE void LoadHierarchy(LatColumn *col, Oid relid, JsonbValue *spec, const char *schema, const char *funcname);
extern LAT_PRIVATE bool TextFollowsEquality(Oid type, Oid collation);
extern LAT_PRIVATE bool TextFromValue(const QidRelation *rel, int column);
extern LAT_PRIVATE Datum ValueText(const QidValueDict *dict, Datum value);
extern LAT_PRIVATE void HierarchyRow(Lattice *lat, LatColumn *col, int32 code, bool isnew, Datum text_value, bool isnull);
extern LAT_PRIVATE void CheckHierarchyKeys(const Lattice *lat, Jsonb *hierarchies);
extern LAT_PRIVATE void EncodeLattice(Lattice *lat, const char *sensitive);
extern LAT_PRIVATE void PrepareLevels(Lattice *lat);
extern LAT_PRIVATE TupleIndex *TupleIndexCreate(int width, uint32 capacity, const char *funcname);
extern LAT_PRIVATE void ReadPopulation(Lattice *lat);
extern LAT_PRIVATE void CheckPopulationContains(Lattice *lat);
extern LAT_PRIVATE void PopulationClasses(Lattice *lat, const int32 *levels);
extern LAT_PRIVATE bool PopulationClassPasses(Lattice *lat, int32 rep, int64 size, const int32 *levels);
extern LAT_PRIVATE double LossValue(const Lattice *lat, const int32 *levels, int64 suppressed, const int64 *suppressed_covered);
extern LAT_PRIVATE void PrepareLossBound(Lattice *lat);
extern LAT_PRIVATE double LossBound(const Lattice *lat, const int32 *levels);
extern LAT_PRIVATE void EvaluateNode(Lattice *lat, int64 node);

#endif							/* LATTICE_H */
