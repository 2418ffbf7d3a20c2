/*
 * lattice.c
 *	  Full-domain generalization lattice: classification of every node
 *	  (qid_lattice) for k-anonymity with a suppression limit, l-diversity
 *	  (distinct, entropy, recursive (c,l)) and t-closeness (equal or ordered
 *	  distance), with utility measures per node.
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
 * nodes are kept in a cache bounded in bytes.
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
 * evaluated.
 */
#include "postgres.h"

#include <math.h>

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
#include "settings.h"

PG_FUNCTION_INFO_V1(qidrisk_qid_lattice);
PG_FUNCTION_INFO_V1(qidrisk_privacy_class_size);
PG_FUNCTION_INFO_V1(qidrisk_privacy_uniques_prefix);

/* Rows fetched from a cursor at a time; rows read between memory checks */
#define LATTICE_FETCH_BATCH 10000

/* Most class keys grouped through a direct table rather than a hash table */
#define LATTICE_DENSE_KEYS (1 << 18)
#define LATTICE_TABLE_START (1 << 16)	/* GroupKeys's hash table sized for at most these */

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
	EVALUATE_ALL
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

static uint64 lattice_hash_seed;

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

/* Recent values per column ValueCode checks before its keyed table (a power of 2) */
#define LATTICE_RECENT 128

/* How one column's values are hashed and compared while encoding */
typedef struct ValueDict
{
	Oid			type;
	Oid			collation;
	bool		typbyval;
	int16		typlen;
	QidValueHash hash;			/* keyed placement and equality (hashkey.c) */
	int32		null_code;
	int32		ndistinct;
	Size		bytes;
	struct valuehash_hash *table;
	/* recent values by a cheap slot; a miss falls back to the keyed table */
	struct
	{
		Datum		value;
		int32		code;		/* -1: empty */
	}			recent[LATTICE_RECENT];
} ValueDict;

typedef struct ValueEntry
{
	Datum		value;
	int32		code;
	uint32		hash;
	char		status;
} ValueEntry;

#define SH_PREFIX valuehash
#define SH_ELEMENT_TYPE ValueEntry
#define SH_KEY_TYPE Datum
#define SH_KEY value
#define SH_HASH_KEY(tb, key) QidValueHashOf(&((ValueDict *) (tb)->private_data)->hash, key)
#define SH_EQUAL(tb, a, b) QidValueHashEqual(&((ValueDict *) (tb)->private_data)->hash, a, b)
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
	ValueDict	dict;			/* level-0 codes of the values */
	int32	   *codes;			/* per row: the level-0 code */
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
	uint64		clock;
	Size		base_bytes;		/* the encoded columns and the lattice */
} Lattice;

/* Stop with an error naming the memory setting */
static void
CheckLatticeMemory(double bytes, const char *funcname, const char *what)
{
	Size		budget = QidStateMemoryBudget();

	if (bytes > (double) budget)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s exceeds qidrisk.max_state_memory", funcname),
				 errdetail("%s need %.0f kB; the budget is %zu kB.",
						   what, bytes / 1024.0, budget / 1024),
				 errhint("Raise qidrisk.max_state_memory (or work_mem when it is -1), or pass fewer columns or coarser hierarchies.")));
}

/* Prepare the dictionary of one column of the query's result */
static void
ValueDictInit(ValueDict *dict, Oid type, Oid collation, const char *name,
			  const char *funcname)
{
	TypeCacheEntry *entry;

	entry = lookup_type_cache(type, TYPECACHE_HASH_PROC | TYPECACHE_EQ_OPR);
	if (!OidIsValid(entry->hash_proc) || !OidIsValid(entry->eq_opr))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("%s cannot compare the values of column \"%s\": type %s has no default hash support",
						funcname, name, format_type_be(type)),
				 errhint("Leave the column out, or compare a hashable expression of it in a view.")));
	memset(dict, 0, sizeof(ValueDict));
	dict->type = type;
	dict->collation = collation;
	get_typlenbyval(type, &dict->typlen, &dict->typbyval);
	QidValueHashInit(&dict->hash, type, collation, false, CurrentMemoryContext);
	dict->null_code = -1;
	for (int i = 0; i < LATTICE_RECENT; i++)
		dict->recent[i].code = -1;
	dict->table = valuehash_create(CurrentMemoryContext, 256, dict);
}

/*
 * A value's slot among the recent ones: its Datum's bits or its length and
 * three of its bytes (unkeyed: colliding values only miss the shortcut)
 */
static inline int
RecentSlot(const ValueDict *dict, Datum value)
{
	const char *data;
	Size		len;

	if (dict->hash.bitwise)
		return (int) ((value ^ (value >> 7) ^ (value >> 29)) & (LATTICE_RECENT - 1));
	data = VARDATA_ANY(DatumGetPointer(value));
	len = VARSIZE_ANY_EXHDR(DatumGetPointer(value));
	if (len == 0)
		return 0;
	return (int) ((len * 31 + (unsigned char) data[0] * 7 +
				   (unsigned char) data[len / 2] * 3 + (unsigned char) data[len - 1]) &
				  (LATTICE_RECENT - 1));
}

/* Whether a value has the Datum or the bytes of a recent one */
static inline bool
RecentEqual(const ValueDict *dict, Datum value, Datum recent)
{
	Size		len;

	if (dict->hash.bitwise)
		return value == recent;
	len = VARSIZE_ANY_EXHDR(DatumGetPointer(recent));
	return VARSIZE_ANY_EXHDR(DatumGetPointer(value)) == len &&
		memcmp(VARDATA_ANY(DatumGetPointer(value)), VARDATA_ANY(DatumGetPointer(recent)), len) == 0;
}

/* The code of one value, a new one when the value is new */
static inline int32
ValueCode(ValueDict *dict, Datum value, bool isnull, MemoryContext keep, bool *isnew)
{
	ValueEntry *entry;
	bool		found;
	int			slot = -1;

	*isnew = false;
	if (isnull)
	{
		if (dict->null_code < 0)
		{
			dict->null_code = dict->ndistinct++;
			*isnew = true;
		}
		return dict->null_code;
	}
	if (dict->typlen == -1)
		value = PointerGetDatum(PG_DETOAST_DATUM_PACKED(value));
	/* columns of few values repeat them: equal Datums or bytes need no hash */
	if (dict->hash.bitwise || (dict->hash.bytewise && QidValueInPlace(value)))
	{
		slot = RecentSlot(dict, value);
		if (dict->recent[slot].code >= 0 && RecentEqual(dict, value, dict->recent[slot].value))
			return dict->recent[slot].code;
	}
	entry = valuehash_insert(dict->table, value, &found);
	if (!found)
	{
		if (!dict->typbyval)
		{
			MemoryContext old = MemoryContextSwitchTo(keep);

			entry->value = datumCopy(value, false, dict->typlen);
			MemoryContextSwitchTo(old);
			dict->bytes += datumGetSize(value, false, dict->typlen);
		}
		entry->code = dict->ndistinct++;
		*isnew = true;
	}
	if (slot >= 0)
	{
		dict->recent[slot].value = entry->value;
		dict->recent[slot].code = entry->code;
	}
	return entry->code;
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

/* Parse a one-of-several text option */
static int
ParseOption(text *value, const char *name, const char *const *choices, int nchoices,
			const char *funcname)
{
	char	   *s = text_to_cstring(value);
	StringInfoData list;

	for (int i = 0; i < nchoices; i++)
		if (strcmp(s, choices[i]) == 0)
			return i;
	initStringInfo(&list);
	for (int i = 0; i < nchoices; i++)
		appendStringInfo(&list, "%s%s", i > 0 ? ", " : "", choices[i]);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("%s: unknown %s \"%s\"", funcname, name, s),
			 errhint("Use one of: %s.", list.data)));
	return -1;
}

/* Resolve a table name with the caller's search_path, locking it */
static Oid
ResolveTable(const char *name, const char *column, const char *funcname)
{
	List	   *names;
	Oid			relid;

	names = QidStringToQualifiedNameList(name);
	relid = RangeVarGetRelid(makeRangeVarFromNameList(names), AccessShareLock, true);
	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("%s: hierarchy table \"%s\"%s%s%s does not exist",
						funcname, name, *column ? " of column \"" : "", column,
						*column ? "\"" : "")));
	return relid;
}

/* The text of a jsonb string value, or NULL when v is not a string */
static char *
JsonbStringValue(JsonbValue *v)
{
	if (v == NULL || v->type != jbvString)
		return NULL;
	return pnstrdup(v->val.string.val, v->val.string.len);
}

/* Find a key in a jsonb object */
static JsonbValue *
JsonbGet(JsonbContainer *container, const char *key)
{
	JsonbValue	k;

	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	return findJsonbValueFromContainer(container, JB_FOBJECT, &k);
}

/* The layouts of a hierarchy given as an object */
typedef enum HierLayout
{
	HIER_ARX,					/* {"table": t}: value, level 1, ..., level n */
	HIER_CHILD_PARENT,			/* {"table": t, "child": c, "parent": p} */
	HIER_INTERVAL				/* {"widths": [...]} or {"cuts": [[...], ...]} */
} HierLayout;

#define HIERARCHY_HINT "Use \"table_name\", {\"table\": ...}, {\"table\": ..., \"child\": ..., \"parent\": ...}, {\"widths\": [...]} or {\"cuts\": [[...], ...]}."
#define CHILD_PARENT_DETAIL "A child/parent table is given as {\"table\": ..., \"child\": ..., \"parent\": ...}, with \"child\" and \"parent\" both column names."

/* The keys of a hierarchy object: three for a table, then one per interval layout */
enum
{
	HKEY_TABLE, HKEY_CHILD, HKEY_PARENT, HKEY_WIDTHS, HKEY_CUTS, HKEY_COUNT
};
static const struct
{
	const char *name;
	const char *takes;			/* the json it takes, for messages */
	const char *detail;			/* the layout it belongs to */
}			hierarchy_keys[HKEY_COUNT] = {
	{"table", "a string", "\"table\" names the hierarchy table, in ARX's layout or, with \"child\" and \"parent\", as a child/parent table."},
	{"child", "a string", CHILD_PARENT_DETAIL},
	{"parent", "a string", CHILD_PARENT_DETAIL},
	{"widths", "a non-empty array of numbers", "Interval widths are given as {\"widths\": [5, 10, 20]}."},
	{"cuts", "a non-empty array of arrays", "Interval cuts are given as {\"cuts\": [[...], ...]}, one array of cuts per level."},
};

/* How a message names the json type of v */
static const char *
JsonbTypePhrase(const JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull:
			return "null";
		case jbvString:
			return "a string";
		case jbvNumeric:
			return "a number";
		case jbvBool:
			return "a boolean";
		case jbvArray:
			return "an array";
		case jbvBinary:
			return JsonContainerIsArray(v->val.binary.data) ? "an array" : "an object";
		default:
			return "an object";	/* jbvObject; jbvDatetime is never stored */
	}
}

/* The weights object of the loss metric, into lat->weight by column */
static void
ParseWeights(Lattice *lat, Jsonb *weights)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	if (!JB_ROOT_IS_OBJECT(weights) || JB_ROOT_IS_SCALAR(weights))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: weights must be a JSON object", lat->funcname),
				 errhint("Map quasi-identifier columns to weights, as in {\"age\": 2}.")));
	it = JsonbIteratorInit(&weights->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *name;
		int			c;
		double		w;

		if (tok != WJB_KEY)
			continue;
		name = pnstrdup(v.val.string.val, v.val.string.len);
		for (c = 0; c < lat->ncolumns; c++)
			if (strcmp(name, lat->columns[c].name) == 0)
				break;
		if (c == lat->ncolumns)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s: weights name \"%s\", which is not a quasi-identifier column",
							lat->funcname, name)));
		tok = JsonbIteratorNext(&it, &v, true);
		if (v.type != jbvNumeric)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s: the weight of column \"%s\" must be a number, not %s",
							lat->funcname, name, JsonbTypePhrase(&v))));
		w = DatumGetFloat8(DirectFunctionCall1(numeric_float8, NumericGetDatum(v.val.numeric)));
		if (isnan(w) || isinf(w) || w < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s: the weight of column \"%s\" must be a non-negative number, not %g",
							lat->funcname, name, w)));
		lat->weight[c] = w;
	}
}

/*
 * The loss metric's options: gs_factor in [0, 1] and weights, an object of
 * quasi-identifier columns to non-negative numbers (0.5 for a column left
 * out, ARX's default; all equal without weights), scaled
 * so that the largest is 1.  Either with another metric is an error.
 */
static void
ParseLossOptions(Lattice *lat, FunctionCallInfo fcinfo)
{
	bool		has_weights = PG_NARGS() > 15 && !PG_ARGISNULL(15);
	double		largest = 0;

	lat->gs_factor = PG_NARGS() > 14 ? PG_GETARG_FLOAT8(14) : 0.5;
	if (isnan(lat->gs_factor) || lat->gs_factor < 0 || lat->gs_factor > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: gs_factor must lie between 0 and 1, not %g", lat->funcname,
						lat->gs_factor)));
	if (lat->metric != METRIC_LOSS && (lat->gs_factor != 0.5 || has_weights))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: gs_factor and weights apply to metric 'loss' only", lat->funcname),
				 errhint("Pass metric => 'loss', or leave gs_factor and weights out.")));
	lat->weight = palloc(sizeof(double) * lat->ncolumns);
	lat->suppressed_covered = palloc0(sizeof(int64) * lat->ncolumns);
	for (int c = 0; c < lat->ncolumns; c++)
		lat->weight[c] = has_weights ? 0.5 : 1;
	if (has_weights)
		ParseWeights(lat, PG_GETARG_JSONB_P(15));
	for (int c = 0; c < lat->ncolumns; c++)
		largest = Max(largest, lat->weight[c]);
	if (largest <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: at least one weight must be positive", lat->funcname)));
	for (int c = 0; c < lat->ncolumns; c++)
		lat->weight[c] /= largest;
}

/* Raise 22023 about one key of the privacy object */
pg_noreturn static void
PrivacyInvalid(const Lattice *lat, const char *model, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("%s: privacy model \"%s\": %s", lat->funcname, model, what),
			 errhint("Give {\"k_map\": {\"k\": 5, \"sampling_fraction\": 0.1}} or {\"beta_likeness\": {\"beta\": 1}}; see the documentation of qid_lattice.")));
}

/* Refuse a key of a model's object that is not in keys */
static void
PrivacyCheckKeys(const Lattice *lat, JsonbContainer *obj, const char *model,
				 const char *const *keys, int nkeys)
{
	JsonbIterator *it = JsonbIteratorInit(obj);
	JsonbValue	v;
	JsonbIteratorToken tok;

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *key;
		bool		known = false;

		if (tok != WJB_KEY)
			continue;
		key = pnstrdup(v.val.string.val, v.val.string.len);
		for (int i = 0; i < nkeys; i++)
			known |= strcmp(key, keys[i]) == 0;
		if (!known)
			PrivacyInvalid(lat, model, psprintf("unknown key \"%s\"", key));
	}
}

/* A number of a model's object: dflt when absent and not required; NaN and infinities refused */
static double
PrivacyNumber(const Lattice *lat, JsonbContainer *obj, const char *model, const char *key,
			  bool required, double dflt)
{
	JsonbValue *v = JsonbGet(obj, key);
	double		x;

	if (v == NULL)
	{
		if (required)
			PrivacyInvalid(lat, model, psprintf("needs \"%s\"", key));
		return dflt;
	}
	if (v->type != jbvNumeric)
		PrivacyInvalid(lat, model, psprintf("\"%s\" must be a number, not %s", key, JsonbTypePhrase(v)));
	x = DatumGetFloat8(DirectFunctionCall1(numeric_float8, NumericGetDatum(v->val.numeric)));
	if (isnan(x) || isinf(x))
		PrivacyInvalid(lat, model, psprintf("\"%s\" must be a finite number", key));
	return x;
}

/* A string of a model's object among choices: its index, dflt when absent */
static int
PrivacyChoice(const Lattice *lat, JsonbContainer *obj, const char *model, const char *key,
			  const char *const *choices, int nchoices, int dflt)
{
	JsonbValue *v = JsonbGet(obj, key);
	char	   *value;

	if (v == NULL)
		return dflt;
	if (v->type != jbvString)
		PrivacyInvalid(lat, model, psprintf("\"%s\" must be a string, not %s", key, JsonbTypePhrase(v)));
	value = pnstrdup(v->val.string.val, v->val.string.len);
	for (int i = 0; i < nchoices; i++)
		if (strcmp(value, choices[i]) == 0)
			return i;
	PrivacyInvalid(lat, model, psprintf("unknown %s \"%s\"", key, value));
}

/*
 * The class size k-map needs when the population is estimated from a
 * sampling fraction (El Emam and Dankar, "Protecting privacy using
 * k-anonymity", 2008), as ARX derives it: with X of Poisson law of mean
 * lambda = k f, 2 + the least c with P(X <= c) >= 1 - alpha; zero-truncated,
 * 1 + the least c >= 1 with P(1 <= X <= c) / P(X >= 1) >= 1 - alpha; at
 * most k in either case
 */
static int64
KMapClassSize(int64 k, double fraction, bool truncated, double alpha)
{
	double		lambda = (double) k * fraction;
	double		log_p = -lambda;	/* log P(X = c), exact where P underflows */
	double		sum = truncated ? 0 : exp(log_p);
	double		scale = truncated ? -expm1(-lambda) : 1;
	int64		c = 0;

	/* a large mean: start 40 standard deviations below it, the terms before weigh nothing */
	if (lambda > 1000)
	{
		c = (int64) floor(lambda - 40 * sqrt(lambda));
		log_p = -lambda + (double) c * log(lambda) - lgamma((double) c + 1);
		sum = exp(log_p);
	}
	while (sum / scale < 1 - alpha)
	{
		double		p;

		CHECK_FOR_INTERRUPTS();
		c++;
		log_p += log(lambda) - log((double) c);
		p = exp(log_p);
		sum += p;
		/* at k, or where the terms have vanished below a sum short of 1 - alpha */
		if (c + 1 >= k || (p == 0 && (double) c > lambda))
			return k;
	}
	return Min(k, truncated ? c + 1 : c + 2);
}

/*
 * A model's population table: its name (resolved when the table is read) and
 * population_qid, an array of its column names in the order of qid; the
 * models that take one must name the same
 */
static void
ParsePopulation(Lattice *lat, JsonbContainer *obj, const char *model)
{
	JsonbValue *name = JsonbGet(obj, "population");
	JsonbValue *qid = JsonbGet(obj, "population_qid");
	Jsonb	   *qid_jsonb = NULL;
	char	   *text;

	if (name == NULL)
		PrivacyInvalid(lat, model, "needs \"population\"");
	if (name->type != jbvString)
		PrivacyInvalid(lat, model, psprintf("\"population\" must be a table name, not %s", JsonbTypePhrase(name)));
	text = pnstrdup(name->val.string.val, name->val.string.len);
	if (qid != NULL && qid->type != jbvNull)
	{
		if (qid->type != jbvBinary || !JsonContainerIsArray(qid->val.binary.data))
			PrivacyInvalid(lat, model, psprintf("\"population_qid\" must be an array of column names, not %s",
												JsonbTypePhrase(qid)));
		qid_jsonb = JsonbValueToJsonb(qid);
	}
	if (lat->pop_name != NULL &&
		(strcmp(lat->pop_name, text) != 0 ||
		 (qid_jsonb == NULL) != (lat->pop_qid == NULL) ||
		 (qid_jsonb != NULL && compareJsonbContainers(&qid_jsonb->root, &lat->pop_qid->root) != 0)))
		PrivacyInvalid(lat, model, "k_map and delta_presence must name the same population and population_qid");
	lat->pop_name = text;
	lat->pop_qid = qid_jsonb;
}

/*
 * The privacy object: {"k_map": {"k", "sampling_fraction", "estimator",
 * "significance"} or {"k", "population", "population_qid"}, "average_risk":
 * {"max"}, "population_uniqueness": {"max", "sampling_fraction", "model"},
 * "delta_presence": {"min", "max", "population", "population_qid"},
 * "beta_likeness": {"beta", "variant"}}
 */
static void
ParsePrivacy(Lattice *lat, Jsonb *privacy)
{
	static const char *const kmap_keys[] = {"k", "sampling_fraction", "estimator", "significance"};
	static const char *const kmap_population_keys[] = {"k", "population", "population_qid"};
	static const char *const delta_keys[] = {"min", "max", "population", "population_qid"};
	static const char *const estimators[] = {"poisson", "zero_truncated_poisson"};
	static const char *const beta_keys[] = {"beta", "variant"};
	static const char *const risk_keys[] = {"max"};
	static const char *const pu_keys[] = {"max", "sampling_fraction", "model"};
	static const char *const pu_models[] = {"pitman", "zayatz", "snb", "dankar"};
	static const char *const variants[] = {"basic", "enhanced"};
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	if (!JB_ROOT_IS_OBJECT(privacy) || JB_ROOT_IS_SCALAR(privacy))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: privacy must be a JSON object", lat->funcname),
				 errhint("Map privacy models to their settings, as in {\"beta_likeness\": {\"beta\": 1}}.")));
	it = JsonbIteratorInit(&privacy->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *model;
		JsonbContainer *obj;

		if (tok != WJB_KEY)
			continue;
		model = pnstrdup(v.val.string.val, v.val.string.len);
		tok = JsonbIteratorNext(&it, &v, true);
		if (v.type != jbvBinary || !JsonContainerIsObject(v.val.binary.data))
			PrivacyInvalid(lat, model, psprintf("its settings must be an object, not %s", JsonbTypePhrase(&v)));
		obj = v.val.binary.data;
		if (strcmp(model, "k_map") == 0 && JsonbGet(obj, "population") != NULL)
		{
			double		k = PrivacyNumber(lat, obj, model, "k", true, 0);

			if (JsonbGet(obj, "sampling_fraction") != NULL || JsonbGet(obj, "estimator") != NULL ||
				JsonbGet(obj, "significance") != NULL)
				PrivacyInvalid(lat, model, "with \"population\" the population's rows are counted: leave out \"sampling_fraction\", \"estimator\" and \"significance\"");
			PrivacyCheckKeys(lat, obj, model, kmap_population_keys, 3);
			if (k < 1 || k > PG_INT32_MAX || k != floor(k))
				PrivacyInvalid(lat, model, "\"k\" must be a whole number of at least 1");
			ParsePopulation(lat, obj, model);
			lat->pop_k = (int64) k;
		}
		else if (strcmp(model, "k_map") == 0)
		{
			double		k = PrivacyNumber(lat, obj, model, "k", true, 0);
			double		f = PrivacyNumber(lat, obj, model, "sampling_fraction", true, 0);
			double		alpha = PrivacyNumber(lat, obj, model, "significance", false, 0.01);
			bool		truncated = PrivacyChoice(lat, obj, model, "estimator", estimators, 2, 0) == 1;

			PrivacyCheckKeys(lat, obj, model, kmap_keys, 4);
			if (k < 1 || k > PG_INT32_MAX || k != floor(k))
				PrivacyInvalid(lat, model, "\"k\" must be a whole number of at least 1");
			if (!(f > 0 && f <= 1))
				PrivacyInvalid(lat, model, "\"sampling_fraction\" must lie in (0, 1]");
			if (!(alpha > 0 && alpha < 1))
				PrivacyInvalid(lat, model, "\"significance\" must lie in (0, 1)");
			lat->kmap_k = KMapClassSize((int64) k, f, truncated, alpha);
		}
		else if (strcmp(model, "average_risk") == 0)
		{
			PrivacyCheckKeys(lat, obj, model, risk_keys, 1);
			lat->has_average_risk = true;
			lat->average_risk = PrivacyNumber(lat, obj, model, "max", true, 0);
			if (!(lat->average_risk > 0 && lat->average_risk <= 1))
				PrivacyInvalid(lat, model, "\"max\" must lie in (0, 1]");
		}
		else if (strcmp(model, "population_uniqueness") == 0)
		{
			PrivacyCheckKeys(lat, obj, model, pu_keys, 3);
			lat->has_pu = true;
			lat->pu_max = PrivacyNumber(lat, obj, model, "max", true, 0);
			lat->pu_fraction = PrivacyNumber(lat, obj, model, "sampling_fraction", true, 0);
			/* ARX's default model is Dankar et al.'s rule */
			lat->pu_model = QidPopulationModel(pu_models[PrivacyChoice(lat, obj, model, "model", pu_models, 4, 3)]);
			if (!(lat->pu_max > 0 && lat->pu_max <= 1))
				PrivacyInvalid(lat, model, "\"max\" must lie in (0, 1]");
			if (!(lat->pu_fraction > 0 && lat->pu_fraction <= 1))
				PrivacyInvalid(lat, model, "\"sampling_fraction\" must lie in (0, 1]");
		}
		else if (strcmp(model, "delta_presence") == 0)
		{
			PrivacyCheckKeys(lat, obj, model, delta_keys, 4);
			lat->has_delta = true;
			lat->delta_min = PrivacyNumber(lat, obj, model, "min", false, 0);
			lat->delta_max = PrivacyNumber(lat, obj, model, "max", true, 0);
			if (!(lat->delta_min >= 0 && lat->delta_min <= lat->delta_max && lat->delta_max <= 1))
				PrivacyInvalid(lat, model, "\"min\" and \"max\" must satisfy 0 <= min <= max <= 1");
			ParsePopulation(lat, obj, model);
		}
		else if (strcmp(model, "beta_likeness") == 0)
		{
			PrivacyCheckKeys(lat, obj, model, beta_keys, 2);
			lat->has_beta = true;
			lat->beta = PrivacyNumber(lat, obj, model, "beta", true, 0);
			lat->beta_enhanced = PrivacyChoice(lat, obj, model, "variant", variants, 2, 0) == 1;
			if (!(lat->beta > 0))
				PrivacyInvalid(lat, model, "\"beta\" must be positive");
		}
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s: unknown privacy model \"%s\"", lat->funcname, model),
					 errhint("The privacy models are k_map, average_risk, population_uniqueness, delta_presence and beta_likeness.")));
	}
}

/* What v is when it does not suit hierarchy key k (for "not ..."), or NULL when it does */
static const char *
HierarchyKeyMismatch(int k, JsonbValue *v)
{
	JsonbContainer *arr;
	int			n;

	if (k < HKEY_WIDTHS)
		return v->type == jbvString ? NULL : JsonbTypePhrase(v);
	if (v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
		return JsonbTypePhrase(v);
	arr = v->val.binary.data;
	n = (int) JsonContainerSize(arr);
	if (n == 0)
		return "an empty array";
	for (int i = 0; i < n; i++)
	{
		JsonbValue *e = getIthJsonbValueFromContainer(arr, i);

		if ((i & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		if (k == HKEY_WIDTHS ? e->type != jbvNumeric :
			e->type != jbvBinary || !JsonContainerIsArray(e->val.binary.data))
			return psprintf("an array holding %s", JsonbTypePhrase(e));
	}
	return NULL;
}

/*
 * Check a hierarchy object's keys and return its layout: every key known and
 * of its json type, the keys of one layout only, and a child/parent table
 * with both column names (a key silently ignored would read another layout).
 */
static HierLayout
HierarchyLayout(JsonbContainer *obj, const char *column, const char *funcname)
{
	JsonbIterator *it = JsonbIteratorInit(obj);
	JsonbValue	v;
	JsonbIteratorToken tok;
	bool		has[HKEY_COUNT] = {0};
	int			k = -1;

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		const char *got;

		if (tok == WJB_KEY)
		{
			for (k = 0; k < HKEY_COUNT; k++)
				if (strlen(hierarchy_keys[k].name) == (size_t) v.val.string.len &&
					memcmp(hierarchy_keys[k].name, v.val.string.val, v.val.string.len) == 0)
					break;
			if (k == HKEY_COUNT)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("%s: unknown key \"%s\" in the hierarchy of column \"%s\"", funcname,
								pnstrdup(v.val.string.val, v.val.string.len), column),
						 errhint(HIERARCHY_HINT)));
			has[k] = true;
		}
		else if (tok == WJB_VALUE && (got = HierarchyKeyMismatch(k, &v)) != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s: \"%s\" in the hierarchy of column \"%s\" must be %s, not %s", funcname,
							hierarchy_keys[k].name, column, hierarchy_keys[k].takes, got),
					 errdetail("%s", hierarchy_keys[k].detail)));
	}

	/* keys of two layouts (the table keys count as one) */
	for (int a = 0; a < HKEY_COUNT; a++)
		for (int b = a + 1; b < HKEY_COUNT; b++)
			if (has[a] && has[b] && b >= HKEY_WIDTHS)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("%s: the hierarchy of column \"%s\" mixes \"%s\" and \"%s\"", funcname,
								column, hierarchy_keys[a].name, hierarchy_keys[b].name),
						 errdetail("A hierarchy is one table (in ARX's layout or child/parent) or one interval specification (widths or cuts)."),
						 errhint(HIERARCHY_HINT)));
	if (has[HKEY_WIDTHS] || has[HKEY_CUTS])
		return HIER_INTERVAL;
	if (!has[HKEY_TABLE] && !has[HKEY_CHILD] && !has[HKEY_PARENT])
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: the hierarchy of column \"%s\" is an empty object", funcname, column),
				 errhint(HIERARCHY_HINT)));
	if (!has[HKEY_TABLE] || has[HKEY_CHILD] != has[HKEY_PARENT])
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: the hierarchy of column \"%s\" gives \"%s\" without \"%s\"", funcname,
						column, has[HKEY_CHILD] ? "child" : "parent",
						!has[HKEY_TABLE] ? "table" : has[HKEY_CHILD] ? "parent" : "child"),
				 errdetail(CHILD_PARENT_DETAIL)));
	return has[HKEY_CHILD] ? HIER_CHILD_PARENT : HIER_ARX;
}

/* Intern one label of a level, returning its code */
static int32
InternLabel(labelhash_hash *table, const char *label, int32 *nlabels, char ***labels,
			int32 *capacity)
{
	TextKey		key;
	LabelEntry *entry;
	bool		found;

	key.data = label;
	key.len = strlen(label);
	entry = labelhash_insert(table, key, &found);
	if (!found)
	{
		if (*nlabels == *capacity)
		{
			*capacity = Max(16, *capacity * 2);
			*labels = *labels == NULL ? palloc(sizeof(char *) * *capacity) :
				repalloc(*labels, sizeof(char *) * *capacity);
		}
		(*labels)[*nlabels] = (char *) label;
		entry->code = (*nlabels)++;
	}
	return entry->code;
}

/* The query that reads a hierarchy (value text, levels text[]) and its arguments */
typedef struct HierarchyQuery
{
	StringInfoData sql;
	int			nargs;
	Oid			argtypes[3];
	Datum		args[3];
} HierarchyQuery;

/* A hierarchy table in ARX's layout, or as child and parent columns, through hierarchy_levels */
static void
HierarchyFromTable(HierarchyQuery *q, LatColumn *col, const char *table, JsonbContainer *obj,
				   const char *schema, const char *funcname)
{
	q->argtypes[0] = REGCLASSOID;
	q->args[0] = ObjectIdGetDatum(ResolveTable(table, col->name, funcname));
	q->nargs = 1;
	if (obj == NULL)
	{
		appendStringInfo(&q->sql, "SELECT value, levels FROM %s.hierarchy_levels($1)",
						 quote_identifier(schema));
		return;
	}
	appendStringInfo(&q->sql, "SELECT value, levels FROM %s.hierarchy_levels($1, $2, $3)",
					 quote_identifier(schema));
	q->argtypes[1] = TEXTOID;
	q->args[1] = CStringGetTextDatum(JsonbStringValue(JsonbGet(obj, "child")));
	q->argtypes[2] = TEXTOID;
	q->args[2] = CStringGetTextDatum(JsonbStringValue(JsonbGet(obj, "parent")));
	q->nargs = 3;
}

/* Widths or cuts over the column's own values, through interval_hierarchy */
static void
HierarchyFromIntervals(HierarchyQuery *q, LatColumn *col, Oid relid, JsonbValue *spec,
					   const char *schema)
{
	appendStringInfo(&q->sql, "SELECT value, levels FROM %s.interval_hierarchy($1, $2, $3)",
					 quote_identifier(schema));
	q->argtypes[0] = REGCLASSOID;
	q->args[0] = ObjectIdGetDatum(relid);
	q->argtypes[1] = TEXTOID;
	q->args[1] = CStringGetTextDatum(col->name);
	q->argtypes[2] = JSONBOID;
	q->args[2] = JsonbPGetDatum(JsonbValueToJsonb(spec));
	q->nargs = 3;
}

/* The query for a column's hierarchy, by its layout: a table name, or an object */
static void
HierarchyQueryOf(HierarchyQuery *q, LatColumn *col, Oid relid, JsonbValue *spec,
				 const char *schema, const char *funcname)
{
	initStringInfo(&q->sql);
	if (spec->type == jbvString)
		HierarchyFromTable(q, col, JsonbStringValue(spec), NULL, schema, funcname);
	else if (spec->type == jbvBinary && JsonContainerIsObject(spec->val.binary.data))
	{
		JsonbContainer *obj = spec->val.binary.data;
		HierLayout	layout = HierarchyLayout(obj, col->name, funcname);

		if (layout == HIER_INTERVAL)
			HierarchyFromIntervals(q, col, relid, spec, schema);
		else
			HierarchyFromTable(q, col, JsonbStringValue(JsonbGet(obj, "table")),
							   layout == HIER_ARX ? NULL : obj, schema, funcname);
	}
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: the hierarchy of column \"%s\" must be a table name or an object",
						funcname, col->name),
				 errhint(HIERARCHY_HINT)));
}

/* A hierarchy row's value: once, NULL at most once */
static void
HierarchyValue(LatColumn *col, int32 r, Datum value, bool isnull, const char *funcname)
{
	TextKey		key;
	LabelEntry *entry;
	bool		found;

	if (isnull)
	{
		if (col->hnull_row >= 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s: the hierarchy of column \"%s\" lists NULL twice",
							funcname, col->name)));
		col->hnull_row = r;
		col->hvalue[r] = NULL;
		return;
	}
	col->hvalue[r] = TextDatumGetCString(value);
	key.data = col->hvalue[r];
	key.len = strlen(key.data);
	entry = labelhash_insert(col->hlookup, key, &found);
	if (found)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: the hierarchy of column \"%s\" lists value \"%s\" twice",
						funcname, col->name, col->hvalue[r]),
				 errdetail("A hierarchy has one row per value.")));
	entry->code = r;
}

/* Labels per level, interned into codes as the hierarchy's rows are read */
typedef struct LabelTables
{
	int32	   *capacity;
	labelhash_hash **tables;
} LabelTables;

/* The first row fixes the height; every level gets its codes and label table */
static void
HierarchyLevelsInit(LatColumn *col, int height, int32 nrows, LabelTables *lt)
{
	col->height = height;
	col->hcode = palloc0(sizeof(int32 *) * (height + 1));
	col->nlabels = palloc0(sizeof(int32) * (height + 1));
	col->labels = palloc0(sizeof(char **) * (height + 1));
	lt->capacity = palloc0(sizeof(int32) * (height + 1));
	lt->tables = palloc0(sizeof(labelhash_hash *) * (height + 1));
	for (int j = 1; j <= height; j++)
	{
		col->hcode[j] = palloc(sizeof(int32) * nrows);
		lt->tables[j] = labelhash_create(CurrentMemoryContext, 64, NULL);
	}
}

/* A hierarchy row's levels: as many as every other row's, none NULL */
static void
HierarchyLevels(LatColumn *col, int32 r, int32 nrows, Datum levels, bool isnull, LabelTables *lt,
				const char *funcname)
{
	Datum	   *elems = NULL;
	bool	   *enulls = NULL;
	int			nelems = 0;

	if (!isnull)
		deconstruct_array(DatumGetArrayTypeP(levels), TEXTOID, -1, false, TYPALIGN_INT,
						  &elems, &enulls, &nelems);
	if (col->height < 0)
		HierarchyLevelsInit(col, nelems, nrows, lt);
	else if (nelems != col->height)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: the hierarchy of column \"%s\" gives value \"%s\" %d levels, not %d",
						funcname, col->name,
						col->hvalue[r] ? col->hvalue[r] : "NULL", nelems, col->height),
				 errdetail("Every value of a hierarchy has the same number of levels.")));
	for (int j = 1; j <= nelems; j++)
	{
		if (enulls[j - 1])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s: the hierarchy of column \"%s\" has a NULL at level %d of value \"%s\"",
							funcname, col->name, j,
							col->hvalue[r] ? col->hvalue[r] : "NULL")));
		col->hcode[j][r] = InternLabel(lt->tables[j], TextDatumGetCString(elems[j - 1]),
									   &col->nlabels[j], &col->labels[j], &lt->capacity[j]);
	}
}

/* Each level of a hierarchy is a coarsening of the one below it */
static void
HierarchyCheckNested(const LatColumn *col, const char *funcname)
{
	for (int j = 1; j < col->height; j++)
	{
		int32	   *parent = palloc(sizeof(int32) * col->nlabels[j]);

		for (int32 i = 0; i < col->nlabels[j]; i++)
			parent[i] = -1;
		for (int32 r = 0; r < col->hrows; r++)
		{
			int32		a = col->hcode[j][r];
			int32		b = col->hcode[j + 1][r];

			if (parent[a] < 0)
				parent[a] = b;
			else if (parent[a] != b)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("%s: the hierarchy of column \"%s\" is not nested: \"%s\" at level %d becomes both \"%s\" and \"%s\" at level %d",
								funcname, col->name, col->labels[j][a], j,
								col->labels[j + 1][parent[a]], col->labels[j + 1][b], j + 1),
						 errdetail("Each level of a hierarchy must merge whole groups of the level below it.")));
		}
		pfree(parent);
	}
}

/*
 * Read the hierarchy of one column (value text, levels text[]) through the
 * extension's hierarchy_levels / interval_hierarchy, and check that it is a
 * hierarchy: one row per value, as many levels in every row, no NULL label,
 * and each level a coarsening of the one below it.
 */
static void
LoadHierarchy(LatColumn *col, Oid relid, JsonbValue *spec, const char *schema,
			  const char *funcname)
{
	HierarchyQuery q;
	LabelTables lt = {0};
	int			ret;
	uint64		nrows;
	SPITupleTable *tuptable;
	MemoryContext mine = CurrentMemoryContext;

	HierarchyQueryOf(&q, col, relid, spec, schema, funcname);
	ret = SPI_execute_with_args(q.sql.data, q.nargs, q.argtypes, q.args, NULL, true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(ret));
	/* SPI leaves its own context current; what we build outlives it */
	MemoryContextSwitchTo(mine);
	nrows = SPI_processed;
	tuptable = SPI_tuptable;
	if (nrows >= PG_INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s: the hierarchy of column \"%s\" has too many rows", funcname, col->name)));
	if (nrows == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: the hierarchy of column \"%s\" is empty", funcname, col->name)));

	col->hrows = (int32) nrows;
	col->hvalue = palloc(sizeof(char *) * nrows);
	col->hnull_row = -1;
	col->hlookup = labelhash_create(CurrentMemoryContext, Max(nrows, 16), NULL);
	col->height = -1;
	for (uint64 r = 0; r < nrows; r++)
	{
		HeapTuple	tuple = tuptable->vals[r];
		bool		isnull;
		Datum		datum;

		if ((r & 0x3FF) == 0)
			CHECK_FOR_INTERRUPTS();
		datum = SPI_getbinval(tuple, tuptable->tupdesc, 1, &isnull);
		HierarchyValue(col, (int32) r, datum, isnull, funcname);
		datum = SPI_getbinval(tuple, tuptable->tupdesc, 2, &isnull);
		HierarchyLevels(col, (int32) r, (int32) nrows, datum, isnull, &lt, funcname);
	}
	HierarchyCheckNested(col, funcname);
}

/*
 * Whether equal values of a type always have the same text, so that a value's
 * hierarchy row is looked up once, for its first row: integers, bool, and
 * text and varchar under a deterministic collation.  Not numeric (1.0 and
 * 1.00), floats (-0 and 0), bpchar (trailing blanks), domains or others.
 */
static bool
TextFollowsEquality(Oid type, Oid collation)
{
	switch (type)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case BOOLOID:
			return true;
		case TEXTOID:
		case VARCHAROID:
			return OidIsValid(collation) && get_collation_isdeterministic(collation);
		default:
			return false;
	}
}

/*
 * Whether a hierarchy column's text can be taken from its value instead of
 * a cast column: text and varchar (the value is its text) and integers (the
 * cast is their output function), as the relation declares them
 */
static bool
TextFromValue(const QidRelation *rel, int column)
{
	Oid			type = rel->types[column];

	return type != BOOLOID && TextFollowsEquality(type, rel->collations[column]);
}

/*
 * Build "SELECT q1, ..., qn[, sensitive], CAST(qi AS text) (hierarchy
 * columns whose text is not the value's) FROM rel"; from_value[i]: column
 * i's text is taken from its value, not cast
 */
static char *
LatticeQuery(const Lattice *lat, bool *from_value)
{
	const QidRelation *rel = lat->rel;
	StringInfoData query;

	initStringInfo(&query);
	appendStringInfoString(&query, "SELECT ");
	/* the relation's resolved columns: the quasi-identifiers, then the sensitive one */
	for (int i = 0; i < rel->ncolumns; i++)
		appendStringInfo(&query, "%s%s", i > 0 ? ", " : "", quote_identifier(rel->names[i]));
	for (int i = 0; i < lat->ncolumns; i++)
	{
		from_value[i] = lat->columns[i].hrows > 0 && TextFromValue(rel, i);
		if (lat->columns[i].hrows > 0 && !from_value[i])
			appendStringInfo(&query, ", CAST(%s AS pg_catalog.text)",
							 quote_identifier(lat->columns[i].name));
	}
	appendStringInfo(&query, " FROM %s", rel->qualified);
	return query.data;
}

/* The text of a value whose text is its cast: itself (text, varchar) or its output */
static Datum
ValueText(const ValueDict *dict, Datum value)
{
	Oid			output;
	bool		isvarlena;

	if (dict->type == TEXTOID || dict->type == VARCHAROID)
		return value;
	getTypeOutputInfo(dict->type, &output, &isvarlena);
	return CStringGetTextDatum(OidOutputFunctionCall(output, value));
}

/* Map a row's value text to its hierarchy row, checking equal values agree */
static inline void
HierarchyRow(Lattice *lat, LatColumn *col, int32 code, bool isnew, Datum text_value,
			 bool isnull)
{
	int32		hrow;

	if (isnull)
	{
		hrow = col->hnull_row;
		if (hrow < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s: NULL in column \"%s\" is missing from its hierarchy",
							lat->funcname, col->name),
					 errhint("Add a hierarchy row whose first column is NULL.")));
	}
	else
	{
		TextKey		key = TextKeyOf(text_value);
		LabelEntry *entry = labelhash_lookup(col->hlookup, key);

		if (entry == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s: value \"%s\" of column \"%s\" is missing from its hierarchy",
							lat->funcname, pnstrdup(key.data, key.len), col->name),
					 errhint("Add a row for every value of the column to its hierarchy.")));
		hrow = entry->code;
	}
	if (code >= col->ncodes0)
	{
		int32		newcap = Max(64, col->ncodes0 * 2);

		while (newcap <= code)
			newcap *= 2;
		col->hrow_of_code = col->hrow_of_code == NULL ?
			MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int32) * newcap) :
			repalloc_huge(col->hrow_of_code, sizeof(int32) * newcap);
		col->ncodes0 = newcap;
	}
	if (isnew)
		col->hrow_of_code[code] = hrow;
	else if (col->hrow_of_code[code] != hrow)
	{
		int32		other = col->hrow_of_code[code];

		for (int j = 1; j <= col->height; j++)
			if (col->hcode[j][other] != col->hcode[j][hrow])
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("%s: values \"%s\" and \"%s\" of column \"%s\" are equal but generalize differently at level %d",
								lat->funcname, col->hvalue[other] ? col->hvalue[other] : "NULL",
								col->hvalue[hrow] ? col->hvalue[hrow] : "NULL", col->name, j),
						 errdetail("Values equal under the column type's equality must have the same generalizations.")));
	}
}

/* Order of sensitive values for the ordered distance */
typedef struct SensValue
{
	Datum		value;
	bool		isnull;
	int32		code;
} SensValue;

static int
CompareSens(const void *a, const void *b, void *arg)
{
	const SensValue *x = a;
	const SensValue *y = b;

	if (x->isnull || y->isnull)
		return (int) x->isnull - (int) y->isnull;	/* NULL last */
	return ApplySortComparator(x->value, false, y->value, false, (SortSupport) arg);
}

/*
 * The sensitive values' codes made their ranks in the type's order (NULL
 * last) when the distance is ordered, and their shares of the table
 */
static void
RankSensitive(Lattice *lat, ValueDict *dict)
{
	int32		n = dict->ndistinct;
	int32	   *rank = palloc(sizeof(int32) * Max(n, 1));
	int64	   *count = palloc0(sizeof(int64) * Max(n, 1));

	lat->nsens = n;
	if (lat->ordered)
	{
		SensValue  *order = palloc(sizeof(SensValue) * Max(n, 1));
		valuehash_iterator it;
		ValueEntry *entry;
		SortSupportData sort;
		TypeCacheEntry *tc = lookup_type_cache(dict->type, TYPECACHE_LT_OPR);

		if (!OidIsValid(tc->lt_opr))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("%s: the ordered distance needs an ordering of type %s",
							lat->funcname, format_type_be(dict->type)),
					 errhint("Use t_distance => 'equal'.")));
		memset(&sort, 0, sizeof(sort));
		sort.ssup_cxt = CurrentMemoryContext;
		sort.ssup_collation = dict->collation;
		sort.ssup_nulls_first = false;
		PrepareSortSupportFromOrderingOp(tc->lt_opr, &sort);
		valuehash_start_iterate(dict->table, &it);
		while ((entry = valuehash_iterate(dict->table, &it)) != NULL)
		{
			order[entry->code].value = entry->value;
			order[entry->code].isnull = false;
			order[entry->code].code = entry->code;
		}
		if (dict->null_code >= 0)
		{
			order[dict->null_code].isnull = true;
			order[dict->null_code].value = (Datum) 0;
			order[dict->null_code].code = dict->null_code;
		}
		qsort_arg(order, n, sizeof(SensValue), CompareSens, &sort);
		for (int32 i = 0; i < n; i++)
			rank[order[i].code] = i;
	}
	else
	{
		for (int32 i = 0; i < n; i++)
			rank[i] = i;
	}
	for (int64 r = 0; r < lat->nrows; r++)
	{
		lat->sens[r] = rank[lat->sens[r]];
		count[lat->sens[r]]++;
	}
	lat->sens_share = palloc(sizeof(double) * Max(n, 1));
	for (int32 i = 0; i < n; i++)
		lat->sens_share[i] = (double) count[i] / (double) lat->nrows;
	if (lat->ordered)
		OrderedTableInit(&lat->ordered_table, count, n);
}

/* Reading the relation: its rows arrive one by one (QidReadRows) */
typedef struct EncodeState
{
	Lattice    *lat;
	MemoryContext keep;			/* where the codes and new values go */
	MemoryContext batch;		/* detoasted values, reset now and then */
	bool		has_sensitive;
	const char *sensitive;
	int64		capacity;
	int			sens_att;		/* the sensitive column in a row */
	int		   *text_att;		/* per column: its text column, -1 */
	bool	   *text_once;		/* the hierarchy row of a value is looked up once */
	bool	   *from_value;		/* at its first row, from the value's text */
	ValueDict	sens_dict;
} EncodeState;

/* The query's columns, as the executed query sees them: the dictionaries */
static void
EncodeStartup(TupleDesc desc, void *arg)
{
	EncodeState *st = (EncodeState *) arg;
	Lattice    *lat = st->lat;
	MemoryContext old = MemoryContextSwitchTo(st->keep);
	int			natts = lat->ncolumns + (st->has_sensitive ? 1 : 0);

	for (int i = 0; i < lat->ncolumns; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		ValueDictInit(&lat->columns[i].dict, att->atttypid, att->attcollation,
					  lat->columns[i].name, lat->funcname);
		st->text_att[i] = lat->columns[i].hrows > 0 && !st->from_value[i] ? natts++ : -1;
		st->text_once[i] = TextFollowsEquality(att->atttypid, att->attcollation);
	}
	if (st->has_sensitive)
	{
		Form_pg_attribute att = TupleDescAttr(desc, lat->ncolumns);

		st->sens_att = lat->ncolumns;
		ValueDictInit(&st->sens_dict, att->atttypid, att->attcollation,
					  st->sensitive, lat->funcname);
	}
	MemoryContextSwitchTo(old);
}

/* Room for more rows' codes, within the memory budget */
static void
EncodeGrow(EncodeState *st)
{
	Lattice    *lat = st->lat;
	int			ncol = lat->ncolumns;
	int64		newcap = Max(st->capacity * 2, LATTICE_FETCH_BATCH);

	if (newcap >= PG_INT32_MAX / 2)
		newcap = PG_INT32_MAX / 2 - 1;
	if (lat->nrows + 1 > newcap)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s handles at most %d rows", lat->funcname, PG_INT32_MAX / 2 - 2)));
	CheckLatticeMemory((double) newcap * sizeof(int32) * (ncol + 1) * 3,
					   lat->funcname, "The encoded columns and the evaluation buffers");
	for (int i = 0; i < ncol; i++)
		lat->columns[i].codes = lat->columns[i].codes == NULL ?
			MemoryContextAllocHuge(st->keep, sizeof(int32) * newcap) :
			repalloc_huge(lat->columns[i].codes, sizeof(int32) * newcap);
	if (st->has_sensitive)
		lat->sens = lat->sens == NULL ?
			MemoryContextAllocHuge(st->keep, sizeof(int32) * newcap) :
			repalloc_huge(lat->sens, sizeof(int32) * newcap);
	st->capacity = newcap;
}

/* The encoded columns and their dictionaries within the memory budget */
static void
EncodeCheckMemory(EncodeState *st)
{
	Lattice    *lat = st->lat;
	double		bytes = (double) st->capacity * sizeof(int32) * (lat->ncolumns + 1) * 3;

	for (int i = 0; i < lat->ncolumns; i++)
		bytes += (double) lat->columns[i].dict.table->size * sizeof(ValueEntry) +
			lat->columns[i].dict.bytes;
	CheckLatticeMemory(bytes, lat->funcname,
					   "The encoded columns, their dictionaries and the evaluation buffers");
}

/* One row: its codes and hierarchy rows */
static void
EncodeRow(Datum *values, bool *nulls, void *arg)
{
	EncodeState *st = (EncodeState *) arg;
	Lattice    *lat = st->lat;
	MemoryContext old = MemoryContextSwitchTo(st->batch);
	bool		isnew;

	if (lat->nrows == st->capacity)
		EncodeGrow(st);
	for (int i = 0; i < lat->ncolumns; i++)
	{
		LatColumn  *col = &lat->columns[i];
		int32		code = ValueCode(&col->dict, values[i], nulls[i], st->keep, &isnew);
		int			t = st->text_att[i];

		col->codes[lat->nrows] = code;
		if (t >= 0 && (isnew || !st->text_once[i]))
			HierarchyRow(lat, col, code, isnew, values[t], nulls[t]);
		else if (st->from_value[i] && isnew)
			HierarchyRow(lat, col, code, isnew,
						 nulls[i] ? (Datum) 0 : ValueText(&col->dict, values[i]), nulls[i]);
	}
	if (st->has_sensitive)
		lat->sens[lat->nrows] = ValueCode(&st->sens_dict, values[st->sens_att], nulls[st->sens_att],
										  st->keep, &isnew);
	lat->nrows++;
	MemoryContextSwitchTo(old);
	if (lat->nrows % LATTICE_FETCH_BATCH == 0)
	{
		CHECK_FOR_INTERRUPTS();
		MemoryContextReset(st->batch);
		EncodeCheckMemory(st);
	}
}

/*
 * Read the relation once, as the caller, through relreader.c: level-0 codes
 * per column, hierarchy rows, and the sensitive value's code (its rank in
 * the type's order when ordered)
 */
static void
EncodeLattice(Lattice *lat, const char *sensitive)
{
	static const QidRowReader reader = {EncodeStartup, EncodeRow};
	EncodeState st;

	memset(&st, 0, sizeof(st));
	st.lat = lat;
	st.keep = CurrentMemoryContext;
	st.batch = AllocSetContextCreate(st.keep, "qid_lattice batch", ALLOCSET_DEFAULT_SIZES);
	st.has_sensitive = sensitive != NULL;
	st.sensitive = sensitive;
	st.text_att = palloc(sizeof(int) * lat->ncolumns);
	st.text_once = palloc(sizeof(bool) * lat->ncolumns);
	st.from_value = palloc(sizeof(bool) * lat->ncolumns);
	QidReadRows(lat->rel, LatticeQuery(lat, st.from_value), 0, &reader, &st, lat->funcname);
	/* SPI leaves its own context current; what we build outlives it */
	MemoryContextSwitchTo(st.keep);
	MemoryContextDelete(st.batch);
	EncodeCheckMemory(&st);
	if (sensitive != NULL)
		RankSensitive(lat, &st.sens_dict);
}

/* ---- a population table: k-map against it, delta-presence ---- */

/* An empty index of tuples of width codes */
static TupleIndex *
TupleIndexCreate(int width, uint32 capacity, const char *funcname)
{
	TupleIndex *index = palloc0(sizeof(TupleIndex));

	index->width = width;
	index->capacity = Max(capacity, 64);
	index->funcname = funcname;
	index->codes = MemoryContextAllocHuge(CurrentMemoryContext,
										  sizeof(int32) * width * ((Size) index->capacity + 1));
	index->count = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * index->capacity);
	index->table = codetuple_create(CurrentMemoryContext, index->capacity, index);
	return index;
}

/* Where the next tuple's codes go before TupleIndexAdd or TupleIndexFind */
static int32 *
TupleIndexProbe(TupleIndex *index)
{
	if (index->ntuples == index->capacity)
	{
		if (index->capacity >= PG_UINT32_MAX / 2)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("%s handles at most %u distinct rows of a population", index->funcname,
							PG_UINT32_MAX / 2)));
		index->capacity *= 2;
		CheckLatticeMemory(((double) sizeof(int32) * index->width + sizeof(int64) + sizeof(TupleEntry) * 2) *
						   index->capacity, index->funcname, "The population's distinct rows");
		index->codes = repalloc_huge(index->codes, sizeof(int32) * index->width * ((Size) index->capacity + 1));
		index->count = repalloc_huge(index->count, sizeof(int64) * index->capacity);
	}
	return index->codes + (Size) index->ntuples * index->width;
}

/* Count rows of the tuple written at TupleIndexProbe */
static void
TupleIndexAdd(TupleIndex *index, int64 rows)
{
	bool		found;
	TupleEntry *entry = codetuple_insert(index->table, index->ntuples, &found);

	if (found)
		index->count[entry->tuple] += rows;
	else
		index->count[index->ntuples++] = rows;
}

/* The rows of the tuple written at TupleIndexProbe, 0 when it has none */
static int64
TupleIndexFind(TupleIndex *index)
{
	TupleEntry *entry = codetuple_lookup(index->table, index->ntuples);

	return entry != NULL ? index->count[entry->tuple] : 0;
}

static void
TupleIndexReset(TupleIndex *index)
{
	codetuple_reset(index->table);
	index->ntuples = 0;
}

/* The population's relation, locked, its columns resolved and readable by the caller */
static QidRelation *
OpenPopulation(Lattice *lat)
{
	Oid			relid;
	QidRelation *rel;
	int			nqid = lat->pop_qid ? (int) JB_ROOT_COUNT(lat->pop_qid) : lat->ncolumns;

	relid = RangeVarGetRelid(makeRangeVarFromNameList(QidStringToQualifiedNameList(lat->pop_name)),
							 AccessShareLock, true);
	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("%s: population table \"%s\" does not exist", lat->funcname, lat->pop_name)));
	rel = QidRelationOpen(relid, "population");
	if (nqid != lat->ncolumns)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: population_qid names %d columns for %d quasi-identifiers",
						lat->funcname, nqid, lat->ncolumns)));
	for (int i = 0; i < lat->ncolumns; i++)
	{
		const char *name = lat->columns[i].name;
		int			c;

		if (lat->pop_qid != NULL)
		{
			JsonbValue *v = getIthJsonbValueFromContainer(&lat->pop_qid->root, i);

			if (v->type != jbvString)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("%s: population_qid must hold column names, not %s",
								lat->funcname, JsonbTypePhrase(v))));
			name = pnstrdup(v->val.string.val, v->val.string.len);
		}
		c = QidRelationColumn(rel, name);
		if (rel->types[c] != lat->columns[i].dict.type)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("%s: column \"%s\" of the population is of type %s, column \"%s\" of rel of type %s",
							lat->funcname, name, format_type_be(rel->types[c]), lat->columns[i].name,
							format_type_be(lat->columns[i].dict.type)),
					 errhint("Give population_qid the population's columns in the order of qid, or cast them in a view.")));
	}
	QidRelationCheckSelect(rel, NULL);
	return rel;
}

/* The population's columns, and the text of those with a hierarchy */
static char *
PopulationQuery(const Lattice *lat, const QidRelation *rel)
{
	StringInfoData query;

	initStringInfo(&query);
	appendStringInfoString(&query, "SELECT ");
	for (int i = 0; i < lat->ncolumns; i++)
		appendStringInfo(&query, "%s%s", i > 0 ? ", " : "", quote_identifier(rel->names[i]));
	for (int i = 0; i < lat->ncolumns; i++)
		if (lat->columns[i].hrows > 0)
			appendStringInfo(&query, ", CAST(%s AS pg_catalog.text)", quote_identifier(rel->names[i]));
	appendStringInfo(&query, " FROM %s", rel->qualified);
	return query.data;
}

/* Reading the population: its rows arrive one by one (QidReadRows) */
typedef struct PopulationReader
{
	Lattice    *lat;
	MemoryContext keep;			/* where new values are copied */
	MemoryContext batch;		/* detoasted values, reset now and then */
	int		   *text_att;		/* per column: its text column, -1 */
	int64		rows;
} PopulationReader;

/* Encode one population row into the columns' codes and count its tuple */
static void
PopulationRow(Datum *values, bool *nulls, void *arg)
{
	PopulationReader *reader = (PopulationReader *) arg;
	Lattice    *lat = reader->lat;
	int32	   *probe = TupleIndexProbe(lat->pop_tuples);
	MemoryContext old = MemoryContextSwitchTo(reader->batch);

	for (int i = 0; i < lat->ncolumns; i++)
	{
		LatColumn  *col = &lat->columns[i];
		int			t = reader->text_att[i];
		bool		isnew;

		probe[i] = ValueCode(&col->dict, values[i], nulls[i], reader->keep, &isnew);
		if (t >= 0)
			HierarchyRow(lat, col, probe[i], isnew, values[t], nulls[t]);
	}
	TupleIndexAdd(lat->pop_tuples, 1);
	MemoryContextSwitchTo(old);
	if (++reader->rows % LATTICE_FETCH_BATCH == 0)
	{
		CHECK_FOR_INTERRUPTS();
		MemoryContextReset(reader->batch);
	}
}

/*
 * Read the population through SPI as the caller: its values join the
 * columns' dictionaries (and must be in their hierarchies), its rows are
 * counted per distinct tuple of level-0 codes
 */
static void
ReadPopulation(Lattice *lat)
{
	static const QidRowReader row_reader = {NULL, PopulationRow};
	QidRelation *rel = OpenPopulation(lat);
	PopulationReader reader;
	int			natts = lat->ncolumns;

	reader.lat = lat;
	reader.keep = CurrentMemoryContext;
	reader.batch = AllocSetContextCreate(reader.keep, "qid_lattice population batch", ALLOCSET_DEFAULT_SIZES);
	reader.text_att = palloc(sizeof(int) * lat->ncolumns);
	reader.rows = 0;
	for (int i = 0; i < lat->ncolumns; i++)
		reader.text_att[i] = lat->columns[i].hrows > 0 ? natts++ : -1;
	lat->pop_tuples = TupleIndexCreate(lat->ncolumns, 1024, lat->funcname);
	QidReadRows(rel, PopulationQuery(lat, rel), 0, &row_reader, &reader, lat->funcname);
	MemoryContextSwitchTo(reader.keep);
	MemoryContextDelete(reader.batch);
}

/*
 * delta-presence counts rel's rows among the population's: every tuple of
 * rel must have at least as many rows in the population
 */
static void
CheckPopulationContains(Lattice *lat)
{
	TupleIndex *sample = TupleIndexCreate(lat->ncolumns, 1024, lat->funcname);

	for (int64 r = 0; r < lat->nrows; r++)
	{
		if ((r & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		memcpy(TupleIndexProbe(sample), lat->rowcodes + r * lat->ncolumns, sizeof(int32) * lat->ncolumns);
		TupleIndexAdd(sample, 1);
	}
	for (uint32 t = 0; t < sample->ntuples; t++)
	{
		int64		rows;

		memcpy(TupleIndexProbe(lat->pop_tuples), sample->codes + (Size) t * lat->ncolumns,
			   sizeof(int32) * lat->ncolumns);
		rows = TupleIndexFind(lat->pop_tuples);
		if (rows < sample->count[t])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s: delta_presence needs rel's rows to be rows of the population", lat->funcname),
					 errdetail("%lld rows of rel share their quasi-identifiers with %lld rows of the population.",
							   (long long) sample->count[t], (long long) rows)));
	}
}

/* The population's classes at a node: its tuples generalized to the node's levels */
static void
PopulationClasses(Lattice *lat, const int32 *levels)
{
	TupleIndex *tuples = lat->pop_tuples;

	TupleIndexReset(lat->pop_classes);
	for (uint32 t = 0; t < tuples->ntuples; t++)
	{
		const int32 *codes = tuples->codes + (Size) t * lat->ncolumns;
		int32	   *probe = TupleIndexProbe(lat->pop_classes);

		if ((t & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < lat->ncolumns; i++)
			probe[i] = levels[i] == 0 ? codes[i] : lat->columns[i].map[levels[i]][codes[i]];
		TupleIndexAdd(lat->pop_classes, tuples->count[t]);
	}
}

/*
 * Whether a class of size rows (its representative row rep) passes the
 * population's models: k-map, at least pop_k population rows in it;
 * delta-presence, its share of them within [delta_min, delta_max]
 */
static bool
PopulationClassPasses(Lattice *lat, int32 rep, int64 size, const int32 *levels)
{
	const int32 *row = lat->rowcodes + (Size) rep * lat->ncolumns;
	int32	   *probe = TupleIndexProbe(lat->pop_classes);
	int64		rows;

	for (int i = 0; i < lat->ncolumns; i++)
		probe[i] = levels[i] == 0 ? row[i] : lat->columns[i].map[levels[i]][row[i]];
	rows = TupleIndexFind(lat->pop_classes);
	if (lat->pop_k > 0 && rows < lat->pop_k)
		return false;
	if (lat->has_delta)
	{
		/* the quotient as ARX computes it, so that bounds compare alike */
		double		delta = (double) size / (double) rows;

		return delta >= lat->delta_min && delta <= lat->delta_max;
	}
	return true;
}

/*
 * The loss metric's shares: a generalized value covers the hierarchy rows
 * that generalize to it, of all its rows (the domain, from the hierarchy as
 * ARX takes it; the column's distinct values without one).  Counted in
 * integers, so that a node's sums are exact and divided once.
 */
static void
PrepareShares(LatColumn *col, const int64 *count0)
{
	int32		n0 = col->dict.ndistinct;

	col->domain = col->hrows > 0 ? col->hrows : Max(n0, 1);
	col->covered = palloc0(sizeof(int32 *) * (col->height + 1));
	col->covered_total = palloc0(sizeof(int64) * (col->height + 1));
	col->covered[0] = palloc(sizeof(int32) * Max(n0, 1));
	for (int32 v = 0; v < n0; v++)
	{
		col->covered[0][v] = 1;
		col->covered_total[0] += count0[v];
	}
	for (int j = 1; j <= col->height; j++)
	{
		col->covered[j] = palloc0(sizeof(int32) * Max(col->nlabels[j], 1));
		for (int32 r = 0; r < col->hrows; r++)
			col->covered[j][col->hcode[j][r]]++;
		for (int32 v = 0; v < n0; v++)
			col->covered_total[j] += count0[v] * col->covered[j][col->map[j][v]];
	}
}

/* Per column and level: codes of the level-0 values, counts, log2 counts */
static void
PrepareLevels(Lattice *lat)
{
	int			ncol = lat->ncolumns;

	/* one cache line holds a row's codes, so a random row costs one miss */
	lat->rowcodes = MemoryContextAllocHuge(CurrentMemoryContext,
										   sizeof(int32) * Max(lat->nrows, 1) * Max(ncol, 1));
	for (int i = 0; i < ncol; i++)
	{
		const int32 *codes = lat->columns[i].codes;

		for (int64 r = 0; r < lat->nrows; r++)
			lat->rowcodes[r * ncol + i] = codes[r];
	}
	for (int i = 0; i < lat->ncolumns; i++)
	{
		LatColumn  *col = &lat->columns[i];
		int32		n0 = col->dict.ndistinct;
		int64	   *count0 = palloc0(sizeof(int64) * Max(n0, 1));

		if (col->hrows == 0)
			col->height = 0;
		col->map = palloc0(sizeof(int32 *) * (col->height + 1));
		col->ndist = palloc0(sizeof(int32) * (col->height + 1));
		col->log2count = palloc0(sizeof(double *) * (col->height + 1));
		col->entropy = palloc0(sizeof(double) * (col->height + 1));
		col->ndist[0] = n0;
		for (int64 r = 0; r < lat->nrows; r++)
			count0[col->codes[r]]++;
		col->log2count[0] = palloc(sizeof(double) * Max(n0, 1));
		for (int32 v = 0; v < n0; v++)
		{
			col->log2count[0][v] = count0[v] > 0 ? log2((double) count0[v]) : 0;
		}
		for (int j = 1; j <= col->height; j++)
		{
			int64	   *count = palloc0(sizeof(int64) * Max(col->nlabels[j], 1));

			col->ndist[j] = col->nlabels[j];
			col->map[j] = palloc(sizeof(int32) * Max(n0, 1));
			for (int32 v = 0; v < n0; v++)
			{
				col->map[j][v] = col->hcode[j][col->hrow_of_code[v]];
				count[col->map[j][v]] += count0[v];
			}
			col->log2count[j] = palloc(sizeof(double) * Max(col->nlabels[j], 1));
			for (int32 v = 0; v < col->nlabels[j]; v++)
				col->log2count[j][v] = count[v] > 0 ? log2((double) count[v]) : 0;
			/* every row: -log2 of its value's share of its generalized value */
			for (int32 v = 0; v < n0; v++)
				col->entropy[j] += (double) count0[v] *
					(col->log2count[j][col->map[j][v]] - col->log2count[0][v]);
		}
		if (lat->metric == METRIC_LOSS)
			PrepareShares(col, count0);
	}
}

/* The code of a row in a column at a level */
static inline int32
LevelCode(const LatColumn *col, int level, int32 row)
{
	int32		code0 = col->codes[row];

	return level == 0 ? code0 : col->map[level][code0];
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

/*
 * Split each class [ends[i-1], ends[i]) of perm by key[item], writing the
 * refined permutation to perm2 and its ends to ends2.  With group_class,
 * group_class[i] receives the groups written up to the end of class i.
 */
static int32
SplitClasses(Lattice *lat, const int32 *perm, const int32 *ends, int32 nclasses,
			 const int32 *key, int32 *perm2, int32 *ends2, int32 *group_class)
{
	int32	   *counts = lat->counts;
	int32	   *starts = lat->starts;
	int32	   *touched = lat->touched;
	int32		begin = 0;
	int32		nout = 0;

	for (int32 i = 0; i < nclasses; i++)
	{
		int32		end = ends[i];

		if ((i & 0xFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		if (end - begin == 1)
		{
			perm2[begin] = perm[begin];
			ends2[nout++] = end;
		}
		else
		{
			int32		ntouched = 0;

			for (int32 x = begin; x < end; x++)
			{
				int32		v = key[perm[x]];

				if (counts[v]++ == 0)
					touched[ntouched++] = v;
			}
			if (ntouched == 1)
			{
				memcpy(perm2 + begin, perm + begin, sizeof(int32) * (end - begin));
				ends2[nout++] = end;
				counts[touched[0]] = 0;
			}
			else
			{
				int32		pos = begin;

				for (int32 t = 0; t < ntouched; t++)
				{
					int32		v = touched[t];

					starts[v] = pos;
					pos += counts[v];
					ends2[nout++] = pos;
					counts[v] = 0;
				}
				for (int32 x = begin; x < end; x++)
					perm2[starts[key[perm[x]]]++] = perm[x];
			}
		}
		if (group_class != NULL)
			group_class[i] = nout;
		begin = end;
	}
	return nout;
}

/*
 * A class key's hash: multiply-shift under the call's random odd multiplier,
 * the top bits folded into the low ones the table masks
 */
static inline uint32
ClassKeyHash(uint64 k)
{
	uint32		h = (uint32) (((k + 1) * (lattice_hash_seed | 1)) >> 32);

	return h ^ (h >> 16);
}

/* A node's classes by the split columns' codes as one mixed-radix key */
typedef struct ClassKeyEntry
{
	uint64		key;
	int32		cls;
	char		status;
} ClassKeyEntry;

#define SH_PREFIX classkey
#define SH_ELEMENT_TYPE ClassKeyEntry
#define SH_KEY_TYPE uint64
#define SH_KEY key
#define SH_HASH_KEY(tb, k) ClassKeyHash(k)
#define SH_EQUAL(tb, a, b) ((a) == (b))
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/*
 * The multipliers of the split columns' codes in one 64-bit key, false when
 * the product of their numbers of codes at the node's levels overflows it
 */
static bool
ClassKeyRadix(const Lattice *lat, const int32 *levels, int nsplit, uint64 *mult, uint64 *nkeys)
{
	uint64		product = 1;

	for (int j = 0; j < nsplit; j++)
	{
		mult[j] = product;
		if (pg_mul_u64_overflow(product, (uint64) lat->columns[lat->split[j]].ndist[levels[lat->split[j]]],
								&product))
			return false;
	}
	*nkeys = product;
	return true;
}

/* A new class c of GroupKeys: its codes in the split columns, first item and size */
static inline void
NewClass(Lattice *lat, const int32 *row, int nsplit, int32 c, int32 x, int32 *size,
		 int32 *first)
{
	for (int j = 0; j < nsplit; j++)
	{
		int32		code0 = row[lat->split[j]];

		lat->keys[j][c] = lat->maps[j] ? lat->maps[j][code0] : code0;
	}
	if (first != NULL)
		first[c] = x;
	size[c] = 0;
}

/*
 * GroupKeys with the direct table: every item's key first (in perm2, which
 * no caller passes), then the classes, so the table's loads overlap
 */
static int32
GroupDense(Lattice *lat, const NodeItems *base, int32 m, int nsplit,
		   const uint64 *const *part, int32 *cls, int32 *size, int32 *first,
		   const int32 *weight)
{
	int			ncol = lat->ncolumns;
	const int  *split = lat->split;
	const int32 *rowcodes = lat->rowcodes;
	const int32 *rep = base ? base->rep : NULL;
	int32	   *kb = lat->perm2;
	int32	   *dense = lat->dense;
	int32	   *dense_keys = lat->ends2;	/* the keys dense holds, to clear */
	int32		nclasses = 0;

	Assert(kb != cls && kb != size && kb != first);
	for (int32 x = 0; x < m; x++)
	{
		const int32 *row = rowcodes + (Size) (rep ? rep[x] : x) * ncol;
		uint64		key = 0;

		if ((x & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		for (int j = 0; j < nsplit; j++)
			key += part[j][row[split[j]]];
		kb[x] = (int32) key;
	}
	for (int32 x = 0; x < m; x++)
	{
		int32		key = kb[x];
		int32		c = dense[key];

		if (c < 0)
		{
			c = dense[key] = nclasses;
			dense_keys[c] = key;
			NewClass(lat, rowcodes + (Size) (rep ? rep[x] : x) * ncol, nsplit, c, x, size, first);
			nclasses++;
		}
		if (cls != NULL)
			cls[x] = c;
		size[c] += weight != NULL ? weight[x] : 1;
	}
	for (int32 c = 0; c < nclasses; c++)
		dense[dense_keys[c]] = -1;
	return nclasses;
}

/* GroupKeys with a hash table of the keys, sized for its classes up to a bound */
static int32
GroupTable(Lattice *lat, const NodeItems *base, int32 m, int nsplit,
		   const uint64 *const *part, uint64 nkeys, int32 *cls, int32 *size, int32 *first,
		   const int32 *weight)
{
	int			ncol = lat->ncolumns;
	classkey_hash *table;
	int32		nclasses = 0;

	/* growing would move every entry */
	table = classkey_create(CurrentMemoryContext,
							(uint32) Max(Min(Min((uint64) m, nkeys), LATTICE_TABLE_START), 1024),
							NULL);
	for (int32 x = 0; x < m; x++)
	{
		const int32 *row = lat->rowcodes + (Size) (base ? base->rep[x] : x) * ncol;
		uint64		key = 0;
		bool		found;
		ClassKeyEntry *entry;
		int32		c;

		if ((x & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		for (int j = 0; j < nsplit; j++)
			key += part[j][row[lat->split[j]]];
		entry = classkey_insert(table, key, &found);
		if (!found)
			entry->cls = nclasses;
		c = entry->cls;
		if (c == nclasses)
			NewClass(lat, row, nsplit, nclasses++, x, size, first);
		if (cls != NULL)
			cls[x] = c;
		size[c] += weight != NULL ? weight[x] : 1;
	}
	classkey_destroy(table);
	return nclasses;
}

/*
 * Group the items [0, m) of base (the rows when NULL) by the split columns'
 * key, classes numbered in order of first occurrence: cls[x] (unless NULL)
 * is an item's class, size[c] a class's items (weighted by weight[x] unless
 * NULL), first[c] (unless NULL) its first item and keys[j][c] its code in
 * split column j
 */
static int32
GroupKeys(Lattice *lat, const NodeItems *base, int32 m, int nsplit, const uint64 *mult,
		  uint64 nkeys, int32 *cls, int32 *size, int32 *first, const int32 *weight)
{
	bool		dense = false;
	int32		nclasses;
	uint64	  **part;

	/*
	 * few possible keys: a class per key, else a hash table; the direct
	 * table within the half of the budget the snapshot cache leaves
	 */
	if (nkeys <= (uint64) Min(LATTICE_DENSE_KEYS, Max(4 * lat->nrows, 1024)) &&
		sizeof(int32) * Min(LATTICE_DENSE_KEYS, Max(4 * lat->nrows, 1024)) <= lat->cache_budget)
	{
		if (lat->dense == NULL)
		{
			Size		n = Min(LATTICE_DENSE_KEYS, Max(4 * lat->nrows, 1024));

			lat->dense = MemoryContextAlloc(GetMemoryChunkContext(lat->perm), sizeof(int32) * n);
		}
		/* only the keys used so far are set: the rest is never touched */
		if (nkeys > lat->dense_ready)
		{
			memset(lat->dense + lat->dense_ready, -1, sizeof(int32) * (nkeys - lat->dense_ready));
			lat->dense_ready = nkeys;
		}
		dense = true;
	}
	/* per split column and level-0 code: its share of the key */
	part = palloc(sizeof(uint64 *) * nsplit);
	for (int j = 0; j < nsplit; j++)
	{
		int32		n0 = lat->columns[lat->split[j]].ndist[0];

		part[j] = palloc(sizeof(uint64) * Max(n0, 1));
		for (int32 v = 0; v < n0; v++)
			part[j][v] = (uint64) (lat->maps[j] ? lat->maps[j][v] : v) * mult[j];
	}
	if (dense)
		nclasses = GroupDense(lat, base, m, nsplit, (const uint64 *const *) part, cls, size,
							  first, weight);
	else
		nclasses = GroupTable(lat, base, m, nsplit, (const uint64 *const *) part, nkeys, cls,
							  size, first, weight);
	for (int j = 0; j < nsplit; j++)
		pfree(part[j]);
	pfree(part);
	return nclasses;
}

/*
 * The classes of base's items (the rows when NULL) [0, m) by the split
 * columns, as one SplitClasses pass per column would give them (ends in
 * *ends, items in *perm), with one hash lookup per item: items are grouped
 * by their key, then those classes are ordered by the column-by-column
 * passes over one item per class (which order the subclasses of a class by
 * first occurrence, so a class's place follows its first item), and the
 * items placed stably.
 */
static int32
GroupItems(Lattice *lat, const NodeItems *base, int32 m, int nsplit, const uint64 *mult,
		   uint64 nkeys, int32 **perm, int32 **perm2, int32 **ends, int32 **ends2)
{
	int32	   *cls = lat->key;
	int32	   *start = lat->group_class;	/* per class: its items, then its place */
	int32		nclasses = GroupKeys(lat, base, m, nsplit, mult, nkeys, cls, start, NULL, NULL);
	int32		n = 1;
	int32		pos = 0;
	int32	   *order;
	int32	   *out;

	for (int32 c = 0; c < nclasses; c++)
		(*perm)[c] = c;
	(*ends)[0] = nclasses;
	for (int j = 0; j < nsplit; j++)
	{
		int32	   *tmp;

		n = SplitClasses(lat, *perm, *ends, n, lat->keys[j], *perm2, *ends2, NULL);
		tmp = *perm, *perm = *perm2, *perm2 = tmp;
		tmp = *ends, *ends = *ends2, *ends2 = tmp;
	}
	Assert(n == nclasses);
	order = *perm;
	for (int32 t = 0; t < nclasses; t++)
	{
		int32		c = order[t];
		int32		size = start[c];

		start[c] = pos;
		pos += size;
		(*ends)[t] = pos;
	}
	/* the items, in order within each class */
	out = *perm2;
	for (int32 x = 0; x < m; x++)
		out[start[cls[x]]++] = x;
	*perm2 = *perm;
	*perm = out;
	return nclasses;
}

/*
 * Without a sensitive column a node's items are its classes: base's items
 * [0, m) grouped by key, each class's first item (in first) and weight (in
 * size), the classes ordered as GroupItems orders them (into *perm); no
 * pass places the items
 */
static int32
GroupClasses(Lattice *lat, const NodeItems *base, int32 m, int nsplit, const uint64 *mult,
			 uint64 nkeys, int32 **perm, int32 **perm2, int32 **ends, int32 **ends2,
			 int32 *first, int32 *size)
{
	int32		nclasses = GroupKeys(lat, base, m, nsplit, mult, nkeys, NULL, size, first,
									 base ? base->count : NULL);
	int32		n = 1;

	for (int32 c = 0; c < nclasses; c++)
		(*perm)[c] = c;
	(*ends)[0] = nclasses;
	for (int j = 0; j < nsplit; j++)
	{
		int32	   *tmp;

		n = SplitClasses(lat, *perm, *ends, n, lat->keys[j], *perm2, *ends2, NULL);
		tmp = *perm, *perm = *perm2, *perm2 = tmp;
		tmp = *ends, *ends = *ends2, *ends2 = tmp;
	}
	Assert(n == nclasses);
	return nclasses;
}

/*
 * The rows grouped by their level-0 codes, without a sensitive column: the
 * base of the nodes no cached snapshot lies below.  Its items are in order
 * of their first rows, so refining them orders classes as refining the rows
 * would, with the same first rows.  Built once; NULL when the key overflows.
 */
static NodeItems *
BottomItems(Lattice *lat)
{
	int32		nrows = (int32) lat->nrows;
	int			nsplit = 0;
	uint64	   *mult;
	uint64		nkeys;
	int32	   *levels;
	NodeItems  *s;
	int32		n;

	if (lat->bottom_tried)
		return lat->bottom;
	lat->bottom_tried = true;
	/* within the half of the budget the snapshot cache leaves */
	if (lat->has_sensitive || nrows < 2 ||
		3 * sizeof(int32) * (Size) nrows > lat->cache_budget)
		return NULL;
	mult = palloc(sizeof(uint64) * lat->ncolumns);
	levels = palloc0(sizeof(int32) * lat->ncolumns);
	for (int i = 0; i < lat->ncolumns; i++)
		if (lat->columns[i].ndist[0] > 1)
		{
			lat->split[nsplit] = i;
			lat->maps[nsplit++] = NULL;
		}
	if (nsplit > 0 && ClassKeyRadix(lat, levels, nsplit, mult, &nkeys))
	{
		n = GroupKeys(lat, NULL, nrows, nsplit, mult, nkeys, NULL, lat->group_class, lat->perm, NULL);
		s = palloc0(sizeof(NodeItems));
		s->node = -1;
		s->nitems = s->nclasses = n;
		s->rep = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int32) * n);
		s->count = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int32) * n);
		s->class_end = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int32) * n);
		memcpy(s->rep, lat->perm, sizeof(int32) * n);
		memcpy(s->count, lat->group_class, sizeof(int32) * n);
		for (int32 c = 0; c < n; c++)
			s->class_end[c] = c + 1;
		lat->bottom = s;
	}
	pfree(mult);
	pfree(levels);
	return lat->bottom;
}

/*
 * The classes of base's items (the rows when NULL) [0, m) by the split
 * columns: one SplitClasses pass per column (ends in *ends, items in *perm)
 */
static int32
SplitColumns(Lattice *lat, const NodeItems *base, int32 m, int nsplit,
			 int32 **perm, int32 **perm2, int32 **ends, int32 **ends2)
{
	int			ncol = lat->ncolumns;
	int32		nclasses = 0;

	for (int32 x = 0; x < m; x++)
		(*perm)[x] = x;
	if (m > 0)
		(*ends)[nclasses++] = m;
	/* every split column's codes in one pass over the rows */
	for (int32 x = 0; x < m; x++)
	{
		const int32 *row = lat->rowcodes + (Size) (base ? base->rep[x] : x) * ncol;

		if ((x & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		for (int j = 0; j < nsplit; j++)
		{
			int32		code0 = row[lat->split[j]];

			lat->keys[j][x] = lat->maps[j] ? lat->maps[j][code0] : code0;
		}
	}
	for (int j = 0; j < nsplit; j++)
	{
		int32	   *tmp;

		nclasses = SplitClasses(lat, *perm, *ends, nclasses, lat->keys[j], *perm2, *ends2, NULL);
		tmp = *perm, *perm = *perm2, *perm2 = tmp;
		tmp = *ends, *ends = *ends2, *ends2 = tmp;
	}
	return nclasses;
}

/*
 * beta-likeness of one class (Cao and Karras 2012): every sensitive value's
 * share in the class exceeds its share in the table by at most beta times
 * that share; enhanced, by at most min(beta, -ln share) times it
 */
static bool
ClassBetaLike(const Lattice *lat, const NodeItems *s, int32 b, int32 e, int64 size)
{
	for (int32 x = b; x < e; x++)
	{
		double		table_share = lat->sens_share[lat->sens[s->rep[x]]];
		double		class_share = (double) s->count[x] / (double) size;
		double		bound = lat->beta;

		if (lat->beta_enhanced)
			bound = Min(bound, -log(table_share));
		if (class_share > table_share && (class_share - table_share) / table_share > bound)
			return false;
	}
	return true;
}

/* Whether one class (items [b, e) of a snapshot) meets l-diversity and t-closeness */
static bool
ClassDiverse(Lattice *lat, const NodeItems *s, int32 b, int32 e, int64 size)
{
	int32		distinct = e - b;

	if (lat->l > 1)
	{
		if (distinct < lat->l)
			return false;
		if (lat->l_model == L_ENTROPY)
		{
			double		h = 0;

			for (int32 x = b; x < e; x++)
			{
				double		p = (double) s->count[x] / (double) size;

				h -= p * log(p);
			}
			if (h < log((double) lat->l) * (1.0 - ENTROPY_TOLERANCE))
				return false;
		}
		else if (lat->l_model == L_RECURSIVE)
		{
			int32	   *sorted = lat->touched;
			double		tail = 0;

			for (int32 x = b; x < e; x++)
				sorted[x - b] = s->count[x];
			/* descending insertion sort: classes hold few sensitive values */
			for (int32 x = 1; x < distinct; x++)
			{
				int32		v = sorted[x];
				int32		y = x;

				while (y > 0 && sorted[y - 1] < v)
				{
					sorted[y] = sorted[y - 1];
					y--;
				}
				sorted[y] = v;
			}
			for (int32 x = lat->l - 1; x < distinct; x++)
				tail += sorted[x];
			if (!((double) sorted[0] < lat->c * tail))
				return false;
		}
	}
	if (lat->has_t)
	{
		double		d = 0;

		if (!lat->ordered)
		{
			/* half the L1 distance; absent values contribute their share */
			double		sum = 0;

			for (int32 x = b; x < e; x++)
			{
				double		q = lat->sens_share[lat->sens[s->rep[x]]];
				double		p = (double) s->count[x] / (double) size;

				sum += fabs(p - q) - q;
			}
			d = (sum + 1.0) / 2.0;
		}
		else
		{
			OrderedItem *items = lat->items;

			for (int32 x = b; x < e; x++)
			{
				items[x - b].rank = lat->sens[s->rep[x]];
				items[x - b].count = s->count[x];
			}
			OrderedItemsSort(items, distinct);
			d = OrderedDistance(&lat->ordered_table, items, distinct, size);
		}
		if (d > lat->t)
			return false;
	}
	if (lat->has_beta && !ClassBetaLike(lat, s, b, e, size))
		return false;
	return true;
}

/* Remove the least recently used snapshots until bytes more fit */
static void
CacheMakeRoom(Lattice *lat, Size bytes)
{
	while (lat->ncache > 0 && lat->cache_bytes + bytes > lat->cache_budget)
	{
		int			oldest = 0;
		NodeItems   *s;

		for (int i = 1; i < lat->ncache; i++)
			if (lat->cache[i]->used < lat->cache[oldest]->used)
				oldest = i;
		s = lat->cache[oldest];
		lat->snap_of[NodeSlot(lat, s->node)] = -1;
		lat->cache_bytes -= s->bytes;
		pfree(s->rep);
		pfree(s->count);
		pfree(s->class_end);
		pfree(s);
		lat->cache[oldest] = lat->cache[--lat->ncache];
		if (oldest < lat->ncache)
			lat->snap_of[NodeSlot(lat, lat->cache[oldest]->node)] = oldest;
	}
}

/* Whether node a lies at or below node b */
static bool
NodeBelow(const Lattice *lat, int64 a, int64 b)
{
	for (int i = 0; i < lat->ncolumns; i++)
	{
		int64		la = (a / lat->stride[i]) % (lat->columns[i].height + 1);
		int64		lb = (b / lat->stride[i]) % (lat->columns[i].height + 1);

		if (la > lb)
			return false;
	}
	return true;
}

/* The cached snapshot at or below a node with the fewest items, or NULL */
static NodeItems *
CacheBase(Lattice *lat, int64 node)
{
	NodeItems   *best = NULL;

	/* the direct predecessors first: the usual case */
	for (int i = 0; i < lat->ncolumns; i++)
	{
		int64		level = (node / lat->stride[i]) % (lat->columns[i].height + 1);
		int64		slot = level > 0 ? NodeSlot(lat, node - lat->stride[i]) : -1;

		if (slot >= 0 && lat->snap_of[slot] >= 0)
		{
			NodeItems   *s = lat->cache[lat->snap_of[slot]];

			if (best == NULL || s->nitems < best->nitems)
				best = s;
		}
	}
	if (best == NULL)
	{
		for (int i = 0; i < lat->ncache; i++)
		{
			NodeItems   *s = lat->cache[i];

			if (NodeBelow(lat, s->node, node) &&
				(best == NULL || s->nitems < best->nitems))
				best = s;
		}
	}
	return best;
}

/*
 * The loss metric of a node (Iyengar's loss, as ARX weighs and aggregates
 * it): per column, each kept row costs g times its value's share of the
 * domain and each suppressed row its share plus s times the rest, normalized
 * so that the bottom node without suppression costs 0, cut to 10 decimals;
 * then the weighted geometric mean over columns.  Sums are taken times the
 * domain, in integers.  With suppressed_covered NULL, the loss had no row
 * been suppressed: a lower bound for the node and every node above it, as
 * suppression and generalization only add.
 */
static double
LossValue(const Lattice *lat, const int32 *levels, int64 suppressed,
		  const int64 *suppressed_covered)
{
	double		f = lat->gs_factor;
	double		g = f <= 0.5 ? 1 : 1 - 2 * (f - 0.5);
	double		s = f < 0.5 ? 2 * f : 1;
	double		n = (double) lat->nrows;
	double		product = 1;

	for (int c = 0; c < lat->ncolumns; c++)
	{
		const LatColumn *col = &lat->columns[c];
		int64		cs = suppressed_covered ? suppressed_covered[c] : 0;
		double		d = (double) col->domain;
		double		sum = g * (double) (col->covered_total[levels[c]] - cs) +
			(double) cs + s * ((double) suppressed * d - (double) cs);
		double		least = g * n;
		double		v = n * d - least > 0 ? (sum - least) / (n * d - least) : 0;

		v = floor(Max(v, 0) * 1e10) / 1e10;
		product *= pow(v * lat->weight[c] + 1, 1.0 / lat->ncolumns);
	}
	return product - 1;
}

/* What a node's classes add up to */
typedef struct NodeTally
{
	int64		suppressed;		/* rows of the classes suppressed */
	int64		kept;			/* classes kept */
	int64		kept_rows;
	double		dm;				/* sum of squared sizes, kept classes */
	double		dm_all;			/* and of all classes */
	double		entropy_suppressed; /* bits of the suppressed rows */
	bool		blocked;		/* a failing class that cannot be suppressed */
} NodeTally;

/* Count one class (items [b, e) of a snapshot, size rows) as suppressed */
static void
SuppressClass(Lattice *lat, const NodeItems *s, int32 b, int64 size, const int32 *levels,
			  NodeTally *tally)
{
	int			ncol = lat->ncolumns;
	double		log2rows = log2((double) lat->nrows);
	double		bits = 0;
	const int32 *row = lat->rowcodes + (Size) s->rep[b] * ncol;

	/* a suppressed row's value generalizes to all rows, not to its class's */
	tally->suppressed += size;
	for (int c = 0; c < ncol; c++)
	{
		const LatColumn *col = &lat->columns[c];
		int32		code = levels[c] == 0 ? row[c] : col->map[levels[c]][row[c]];

		bits += log2rows - col->log2count[levels[c]][code];
		if (lat->metric == METRIC_LOSS)
			lat->suppressed_covered[c] += size * col->covered[levels[c]][code];
	}
	tally->entropy_suppressed += (double) size * bits;
}

/* Order kept classes by size, then by place (the first items of the ones suppressed first) */
static int
CompareKeptClasses(const void *a, const void *b)
{
	const int64 *x = a;
	const int64 *y = b;

	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Suppress the kept class kept[j] ((size, first item) pairs) */
static void
SuppressKept(Lattice *lat, const NodeItems *s, const int32 *levels, const int64 *kept,
			 int64 j, NodeTally *tally)
{
	int64		size = kept[2 * j];

	SuppressClass(lat, s, (int32) kept[2 * j + 1], size, levels, tally);
	tally->kept--;
	tally->kept_rows -= size;
	tally->dm -= (double) size * (double) size;
}

/*
 * The average risk ceiling (ARX's AverageReidentificationRisk): the kept
 * classes per kept row, a prosecutor's average risk, at most the ceiling;
 * else the smallest kept classes are suppressed, fewest first, until it is
 * (removing the smallest classes only raises the average size).  kept holds
 * (size, first item) per kept class, ascending; returns the classes suppressed.
 */
static int64
EnforceAverageRisk(Lattice *lat, const NodeItems *s, const int32 *levels, const int64 *kept,
				   NodeTally *tally)
{
	int64		n = tally->kept;
	int64		j = 0;

	while (j < n && (double) tally->kept > lat->average_risk * (double) tally->kept_rows)
		SuppressKept(lat, s, levels, kept, j++, tally);
	return j;
}

/*
 * Whether the kept classes (sizes kept[0], kept[2], ... ascending) but the
 * first p meet the population uniqueness ceiling, as ARX decides it: met with
 * no class left or no class of one row; else the model's estimate of
 * population uniques over the population must be positive and at most the
 * ceiling (a model without an estimate fails)
 */
static bool
PopulationUniquenessMet(Lattice *lat, const int64 *kept, int64 p, int64 n)
{
	int			nsizes = 0;
	double		uniques;

	if (p >= n || kept[2 * p] > 1)
		return true;
	for (int64 j = p; j < n; j++)
	{
		if (nsizes > 0 && lat->pu_sizes[nsizes - 1] == kept[2 * j])
			lat->pu_counts[nsizes - 1]++;
		else
		{
			lat->pu_sizes[nsizes] = kept[2 * j];
			lat->pu_counts[nsizes++] = 1;
		}
	}
	if (!QidPopulationUniques(lat->pu_sizes, lat->pu_counts, nsizes, lat->pu_population,
							  lat->pu_model, &uniques))
		return false;
	return uniques > 0 && uniques / lat->pu_population <= lat->pu_max;
}

/*
 * How many of the smallest kept classes population uniqueness suppresses:
 * ARX's binary search over the prefix length (RiskBasedCriterion.enforce,
 * without its early stop, which changes no verdict), step for step, since
 * the estimate need not fall as classes go and a plain search would differ
 */
static int64
PopulationUniquenessPrefix(Lattice *lat, const int64 *kept, int64 n)
{
	int64		low = 0;
	int64		high = n - 1;
	int64		mid;

	if (PopulationUniquenessMet(lat, kept, 0, n))
		return 0;
	/* the first mid + 1 classes are suppressed throughout */
	mid = (low + high) / 2;
	while (low <= high)
	{
		CHECK_FOR_INTERRUPTS();
		if (PopulationUniquenessMet(lat, kept, mid + 1, n))
			high = mid - 1;
		else
			low = mid + 1;
		mid = (low + high) / 2;
	}
	if (mid + 1 < n && !PopulationUniquenessMet(lat, kept, mid + 1, n))
		return mid + 2;
	return mid + 1;
}

/* Sizes of a node's classes, which pass the models, and what they add up to */
static void
TallyClasses(Lattice *lat, const NodeItems *s, const int32 *levels, NodeTally *tally)
{
	int32		b = 0;
	int64	   *kept = lat->kept_classes;

	if (lat->metric == METRIC_LOSS)
		memset(lat->suppressed_covered, 0, sizeof(int64) * lat->ncolumns);
	if (lat->pop_classes != NULL)
	{
		PopulationClasses(lat, levels);
		/* delta-presence: a population class without rows of rel has delta 0 and nothing to suppress */
		tally->blocked = lat->has_delta && lat->delta_min > 0 &&
			lat->pop_classes->ntuples > (uint32) s->nclasses;
	}
	for (int32 i = 0; i < s->nclasses; i++)
	{
		int32		e = s->class_end[i];
		int64		size = 0;
		bool		keep;

		for (int32 x = b; x < e; x++)
			size += s->count[x];
		tally->dm_all += (double) size * (double) size;
		keep = size >= lat->k;
		if (keep && (lat->l > 1 || lat->has_t || lat->has_beta))
			keep = ClassDiverse(lat, s, b, e, size);
		if (keep && lat->pop_classes != NULL)
			keep = PopulationClassPasses(lat, s->rep[b], size, levels);
		if (!keep)
			SuppressClass(lat, s, b, size, levels, tally);
		else
		{
			if (kept != NULL)
			{
				kept[2 * tally->kept] = size;
				kept[2 * tally->kept + 1] = b;
			}
			tally->kept++;
			tally->kept_rows += size;
			tally->dm += (double) size * (double) size;
		}
		b = e;
	}
	if (kept != NULL && tally->kept > 0)
	{
		int64		first = 0;
		int64		n;

		qsort(kept, tally->kept, 2 * sizeof(int64), CompareKeptClasses);
		if (lat->has_average_risk)
			first = EnforceAverageRisk(lat, s, levels, kept, tally);
		n = first + tally->kept;
		if (lat->has_pu)
		{
			int64		p = PopulationUniquenessPrefix(lat, kept + 2 * first, n - first);

			for (int64 j = first; j < first + p; j++)
				SuppressKept(lat, s, levels, kept, j, tally);
		}
	}
}

/* A node's snapshot of ngroups items in nclasses classes, in the cache's context */
static NodeItems *
NewNodeItems(Lattice *lat, int64 node, int32 ngroups, int32 nclasses)
{
	MemoryContext old = MemoryContextSwitchTo(lat->cache_context);
	NodeItems  *s = palloc(sizeof(NodeItems));

	s->node = node;
	s->nitems = ngroups;
	s->nclasses = nclasses;
	s->rep = MemoryContextAllocHuge(lat->cache_context, sizeof(int32) * Max(ngroups, 1));
	s->count = MemoryContextAllocHuge(lat->cache_context, sizeof(int32) * Max(ngroups, 1));
	s->class_end = MemoryContextAllocHuge(lat->cache_context, sizeof(int32) * Max(nclasses, 1));
	s->bytes = sizeof(NodeItems) + sizeof(int32) * (2 * (Size) ngroups + nclasses);
	s->used = ++lat->clock;
	MemoryContextSwitchTo(old);
	return s;
}

/* A node's classes: suppression and utility, its figures, its snapshot cached when it fits */
static void
FinishNode(Lattice *lat, int64 node, NodeItems *s, const int32 *levels)
{
	NodeTally	tally;
	int64		slot = node;

	/* classes: suppression and utility */
	memset(&tally, 0, sizeof(tally));
	TallyClasses(lat, s, levels, &tally);
	if (lat->slots != NULL)
	{
		bool		found;

		slot = lat->nevaluated;
		nodeslot_insert(lat->slots, node, &found)->slot = (int32) slot;
		lat->slot_node[slot] = node;
		lat->snap_of[slot] = -1;
	}
	lat->evaluated[slot] = true;
	lat->nevaluated++;
	lat->dm_all = tally.dm_all;
	lat->suppressed[slot] = tally.suppressed;
	lat->blocked[slot] = tally.blocked;
	/* the release's classes: suppression removes the others */
	lat->classes[slot] = tally.kept;
	lat->discernibility[slot] = tally.dm + (double) tally.suppressed * (double) lat->nrows;
	lat->entropy[slot] = tally.entropy_suppressed;
	for (int c = 0; c < lat->ncolumns; c++)
		lat->entropy[slot] += lat->columns[c].entropy[levels[c]];
	if (lat->metric == METRIC_LOSS)
		lat->loss[slot] = LossValue(lat, levels, tally.suppressed, lat->suppressed_covered);

	/* keep the snapshot when it fits */
	if (s->bytes <= lat->cache_budget)
	{
		CacheMakeRoom(lat, s->bytes);
		if (lat->ncache == lat->cache_capacity)
		{
			lat->cache_capacity *= 2;
			lat->cache = repalloc(lat->cache, sizeof(NodeItems *) * lat->cache_capacity);
		}
		lat->snap_of[slot] = lat->ncache;
		lat->cache[lat->ncache++] = s;
		lat->cache_bytes += s->bytes;
	}
	else
	{
		pfree(s->rep);
		pfree(s->count);
		pfree(s->class_end);
		pfree(s);
	}
}

/*
 * The snapshot of a node without a sensitive column grouped from the rows
 * or the bottom items: one item per class, its first row and its rows
 */
static NodeItems *
ClassItems(Lattice *lat, int64 node, const NodeItems *base, int32 m, int nsplit,
		   const uint64 *mult, uint64 nkeys)
{
	int32	   *perm = lat->perm;
	int32	   *perm2 = lat->perm2;
	int32	   *ends = lat->ends;
	int32	   *ends2 = lat->ends2;
	int32	   *first = lat->key;
	int32	   *size = lat->group_class;
	int32		nclasses = GroupClasses(lat, base, m, nsplit, mult, nkeys, &perm, &perm2,
										&ends, &ends2, first, size);
	NodeItems  *s = NewNodeItems(lat, node, nclasses, nclasses);

	for (int32 t = 0; t < nclasses; t++)
	{
		int32		c = perm[t];

		s->rep[t] = base ? base->rep[first[c]] : first[c];
		s->count[t] = size[c];
		s->class_end[t] = t + 1;
	}
	return s;
}

/* Evaluate one node: its classes, suppressed rows and utility */
static void
EvaluateNode(Lattice *lat, int64 node)
{
	NodeItems   *base = CacheBase(lat, node);
	int32		m;
	int32	   *levels = lat->levels;
	int32	   *perm = lat->perm;
	int32	   *perm2 = lat->perm2;
	int32	   *ends = lat->ends;
	int32	   *ends2 = lat->ends2;
	int32	   *key = lat->key;
	int32		nclasses;
	int32		ngroups;
	NodeItems   *s;
	int			ncol = lat->ncolumns;
	int		   *split = lat->split;
	const int32 **maps = lat->maps;
	int			nsplit;
	uint64	   *mult = palloc(sizeof(uint64) * ncol);
	uint64		nkeys;

	CHECK_FOR_INTERRUPTS();
	NodeLevels(lat, node, levels);
	if (base != NULL)
		base->used = ++lat->clock;
	else
		base = BottomItems(lat);
	m = base ? base->nitems : (int32) lat->nrows;
	nsplit = 0;
	for (int i = 0; i < ncol; i++)
		if (lat->columns[i].ndist[levels[i]] > 1)
		{
			split[nsplit] = i;
			maps[nsplit] = levels[i] == 0 ? NULL : lat->columns[i].map[levels[i]];
			nsplit++;
		}
	/* group by one key, then order the classes */
	if ((base == NULL || base == lat->bottom) && m > 1 && nsplit > 1 &&
		ClassKeyRadix(lat, levels, nsplit, mult, &nkeys))
	{
		if (!lat->has_sensitive)
		{
			FinishNode(lat, node, ClassItems(lat, node, base, m, nsplit, mult, nkeys), levels);
			pfree(mult);
			return;
		}
		nclasses = GroupItems(lat, base, m, nsplit, mult, nkeys, &perm, &perm2, &ends, &ends2);
	}
	else
		nclasses = SplitColumns(lat, base, m, nsplit, &perm, &perm2, &ends, &ends2);
	pfree(mult);
	if (lat->has_sensitive)
	{
		int32	   *tmp;

		for (int32 x = 0; x < m; x++)
			key[x] = lat->sens[base ? base->rep[x] : x];
		ngroups = SplitClasses(lat, perm, ends, nclasses, key, perm2, ends2, lat->group_class);
		tmp = perm, perm = perm2, perm2 = tmp;
		tmp = ends, ends = ends2, ends2 = tmp;
	}
	else
	{
		ngroups = nclasses;
		for (int32 i = 0; i < nclasses; i++)
			lat->group_class[i] = i + 1;
	}

	/* the node's items */
	s = NewNodeItems(lat, node, ngroups, nclasses);
	{
		int32		begin = 0;

		for (int32 g = 0; g < ngroups; g++)
		{
			int32		end = ends[g];
			int64		count = 0;

			for (int32 x = begin; x < end; x++)
				count += base ? base->count[perm[x]] : 1;
			s->rep[g] = base ? base->rep[perm[begin]] : perm[begin];
			s->count[g] = (int32) count;
			begin = end;
		}
	}
	memcpy(s->class_end, lat->group_class, sizeof(int32) * nclasses);
	FinishNode(lat, node, s, levels);
}
/* Whether an evaluated node is anonymous */
static inline bool
Anonymous(const Lattice *lat, int64 node)
{
	int64		slot = NodeSlot(lat, node);

	return lat->suppressed[slot] <= lat->max_suppressed_rows && !lat->blocked[slot];
}

/* Tag a node and, by monotonicity, every node above (anonymous) or below it */
static void
TagClosure(Lattice *lat, int64 node, uint8 tag)
{
	int64	   *queue = lat->queue;
	int64		head = 0;
	int64		tail = 0;

	if (lat->tag[node] == tag)
		return;
	lat->tag[node] = tag;
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

			if (tag == TAG_ANONYMOUS)
			{
				if (level == lat->columns[i].height)
					continue;
				next = n + lat->stride[i];
			}
			else
			{
				if (level == 0)
					continue;
				next = n - lat->stride[i];
			}
			if (lat->tag[next] == tag)
				continue;
			if (lat->tag[next] != TAG_UNKNOWN)
				elog(ERROR, "qid_lattice: monotonicity violated at node " INT64_FORMAT, next);
			lat->tag[next] = tag;
			queue[tail++] = next;
		}
	}
}

/* Evaluate a node (if needed) and tag it and its closure */
static bool
CheckNode(Lattice *lat, int64 node)
{
	bool		anonymous;

	if (lat->tag[node] != TAG_UNKNOWN)
		return lat->tag[node] == TAG_ANONYMOUS;
	EvaluateNode(lat, node);
	anonymous = Anonymous(lat, node);
	TagClosure(lat, node, anonymous ? TAG_ANONYMOUS : TAG_NOT_ANONYMOUS);
	return anonymous;
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

		if (lat->tag[start] != TAG_UNKNOWN)
			continue;
		/* the path: up through untagged nodes, first column first */
		for (;;)
		{
			bool		moved = false;

			path[len++] = n;
			for (int i = 0; i < lat->ncolumns; i++)
			{
				int64		level = (n / lat->stride[i]) % (lat->columns[i].height + 1);

				if (level < lat->columns[i].height &&
					lat->tag[n + lat->stride[i]] == TAG_UNKNOWN)
				{
					n += lat->stride[i];
					moved = true;
					break;
				}
			}
			if (!moved)
				break;
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
NodeBound(const Lattice *lat, Metric metric, const int32 *levels)
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
			bound = lat->dm_all;
			break;
		case METRIC_ENTROPY:
			for (int c = 0; c < lat->ncolumns; c++)
				bound += lat->columns[c].entropy[levels[c]];
			break;
		case METRIC_SUPPRESSED:
			break;
		case METRIC_LOSS:
			bound = LossValue(lat, levels, 0, NULL);
			break;
	}
	return bound;
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

/*
 * Whether no node at or above a slot can beat the best found: its bound
 * exceeds the best loss (with a relative 1e-9 for rounding, so that ties,
 * which the order of the best decides, are still reached)
 */
static bool
SlotPruned(const Lattice *lat, int32 slot, int32 best)
{
	double		b;

	if (best < 0)
		return false;
	b = lat->slot_loss[best];
	return lat->slot_bound[slot] > b + fabs(b) * 1e-9;
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
	lat->slot_bound[slot] = NodeBound(lat, lat->metric, lat->levels);
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
 * qid_lattice's models and options from its arguments (the relation and its
 * columns come after): k, suppression, l, t, metric, evaluate, search,
 * privacy; *sensitive gets sensitive_column (NULL without one)
 */
static void
ParseModels(Lattice *lat, FunctionCallInfo fcinfo, double *max_suppressed, char **sensitive)
{
	static const char *const l_models[] = {"distinct", "entropy", "recursive"};
	static const char *const distances[] = {"equal", "ordered"};
	static const char *const metrics[] = {"height", "precision", "discernibility", "entropy", "suppressed", "loss"};
	static const char *const evaluates[] = {"tagged", "anonymous", "all"};
	static const char *const searches[] = {"exact", "heuristic"};

	for (int i = 0; i < PG_NARGS(); i++)
	{
		if (i == 5 || i == 8 || i == 9 || i == 15 || i == 16)
			continue;			/* sensitive_column, c, t, weights and privacy may be NULL */
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s: argument %d must not be NULL", lat->funcname, i + 1),
					 errhint("Only sensitive_column, c, t, weights and privacy may be NULL.")));
	}
	lat->k = PG_GETARG_INT32(3);
	if (lat->k < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: k must be at least 1, not " INT64_FORMAT, lat->funcname, lat->k)));
	*max_suppressed = PG_GETARG_FLOAT8(4);
	if (isnan(*max_suppressed) || *max_suppressed < 0 || *max_suppressed > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: max_suppressed must lie between 0 and 1, not %g", lat->funcname,
						*max_suppressed)));
	lat->l = PG_GETARG_INT32(6);
	if (lat->l < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: l must be at least 1, not %d", lat->funcname, lat->l)));
	lat->l_model = (LModel) ParseOption(PG_GETARG_TEXT_PP(7), "l_model", l_models, 3, lat->funcname);
	if (!PG_ARGISNULL(8))
	{
		lat->c = PG_GETARG_FLOAT8(8);
		if (isnan(lat->c) || isinf(lat->c) || lat->c <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s: c must be a positive number, not %g", lat->funcname, lat->c)));
	}
	if (lat->l_model == L_RECURSIVE && PG_ARGISNULL(8))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: recursive (c,l)-diversity needs c", lat->funcname)));
	if (!PG_ARGISNULL(9))
	{
		lat->has_t = true;
		lat->t = PG_GETARG_FLOAT8(9);
		if (isnan(lat->t) || lat->t < 0 || lat->t > 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s: t must lie between 0 and 1, not %g", lat->funcname, lat->t)));
	}
	lat->ordered = ParseOption(PG_GETARG_TEXT_PP(10), "t_distance", distances, 2, lat->funcname) == 1;
	lat->metric = (Metric) ParseOption(PG_GETARG_TEXT_PP(11), "metric", metrics, 6, lat->funcname);
	lat->evaluate = (Evaluate) ParseOption(PG_GETARG_TEXT_PP(12), "evaluate", evaluates, 3, lat->funcname);
	/* a 1.0.0 declaration, before ALTER EXTENSION UPDATE, passes no search */
	if (PG_NARGS() > 13)
		lat->search = (Search) ParseOption(PG_GETARG_TEXT_PP(13), "search", searches, 2, lat->funcname);
	if (!PG_ARGISNULL(5))
		*sensitive = text_to_cstring(PG_GETARG_TEXT_PP(5));
	if (PG_NARGS() > 16 && !PG_ARGISNULL(16))
		ParsePrivacy(lat, PG_GETARG_JSONB_P(16));
	if (*sensitive == NULL && (lat->l > 1 || lat->has_t))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: l-diversity and t-closeness need a sensitive column", lat->funcname)));
	if (*sensitive == NULL && lat->has_beta)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: beta_likeness needs a sensitive column", lat->funcname)));
	lat->has_sensitive = *sensitive != NULL;

}

/* Lock the relation, then resolve the quasi-identifier and sensitive columns */
static void
ResolveColumns(Lattice *lat, Oid relid, ArrayType *qid, const char *sensitive)
{
	Datum	   *elems;
	bool	   *enulls;
	int			nelems;

	/* locked before its columns are resolved, as every table qidrisk reads */
	lat->rel = QidRelationOpen(relid, NULL);
	if (ARR_NDIM(qid) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s needs a one-dimensional array of column names", lat->funcname)));
	deconstruct_array(qid, TEXTOID, -1, false, TYPALIGN_INT, &elems, &enulls, &nelems);
	if (nelems == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s needs at least one quasi-identifier column", lat->funcname)));
	lat->ncolumns = nelems;
	lat->columns = palloc0(sizeof(LatColumn) * nelems);
	for (int i = 0; i < nelems; i++)
	{
		if (enulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s: quasi-identifier column names must not be NULL", lat->funcname)));
		lat->columns[i].name = TextDatumGetCString(elems[i]);
		QidRelationColumn(lat->rel, lat->columns[i].name);
		for (int j = 0; j < i; j++)
			if (strcmp(lat->columns[i].name, lat->columns[j].name) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("%s: column \"%s\" is listed twice", lat->funcname, lat->columns[i].name)));
	}
	if (sensitive != NULL)
	{
		QidRelationColumn(lat->rel, sensitive);
		for (int i = 0; i < nelems; i++)
			if (strcmp(sensitive, lat->columns[i].name) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("%s: the sensitive column \"%s\" is also a quasi-identifier",
								lat->funcname, sensitive)));
	}
}

/* The hierarchies object: its keys must be quasi-identifier columns */
static void
CheckHierarchyKeys(const Lattice *lat, Jsonb *hierarchies)
{
	if (!JB_ROOT_IS_OBJECT(hierarchies))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: hierarchies must be a JSON object", lat->funcname),
				 errhint("Map each column to its hierarchy, as in {\"age\": \"age_hierarchy\"}.")));
	{
		JsonbIterator *it = JsonbIteratorInit(&hierarchies->root);
		JsonbValue	v;
		JsonbIteratorToken tok;

		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		{
			if (tok == WJB_KEY)
			{
				char	   *keyname = pnstrdup(v.val.string.val, v.val.string.len);
				bool		known = false;

				for (int i = 0; i < lat->ncolumns; i++)
					known |= strcmp(keyname, lat->columns[i].name) == 0;
				if (!known)
					ereport(ERROR,
							(errcode(ERRCODE_UNDEFINED_COLUMN),
							 errmsg("%s: hierarchies name \"%s\", which is not a quasi-identifier column",
									lat->funcname, keyname)));
			}
		}
	}
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
						   sizeof(int64) * 5 + sizeof(double) * 2 + 2 + sizeof(int32)) +
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
	lat->cache_context = AllocSetContextCreate(work, "qid_lattice snapshots", ALLOCSET_DEFAULT_SIZES);
	lat->cache_capacity = 64;
	lat->cache = palloc(sizeof(NodeItems *) * lat->cache_capacity);
	{
		Size		budget = QidStateMemoryBudget();

		lat->cache_budget = budget > lat->base_bytes ? (budget - lat->base_bytes) / 2 : 0;
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

		if (lat->evaluated[n])
			continue;
		if (!lat->monotone || lat->evaluate == EVALUATE_ALL ||
			(lat->evaluate == EVALUATE_ANONYMOUS && lat->tag[n] == TAG_ANONYMOUS))
		{
			EvaluateNode(lat, n);
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

			if (lat->tag[n] != TAG_ANONYMOUS)
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
		int			height = 0;

		if ((n & 0x3FF) == 0)
			CHECK_FOR_INTERRUPTS();
		NodeLevels(lat, n, lat->levels);
		for (int i = 0; i < nelems; i++)
		{
			lv[i] = Int32GetDatum(lat->levels[i]);
			height += lat->levels[i];
			if (minimal && lat->levels[i] > 0 && lat->tag[n - lat->stride[i]] == TAG_ANONYMOUS)
				minimal = false;
		}
		values[0] = PointerGetDatum(construct_array(lv, nelems, INT4OID, 4, true, TYPALIGN_INT));
		values[1] = BoolGetDatum(anonymous);
		values[2] = BoolGetDatum(minimal);
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

/* qidrisk_privacy_class_size(privacy, k, rows): the least class size of k and k-map, as qid_lattice takes it */
Datum
qidrisk_privacy_class_size(PG_FUNCTION_ARGS)
{
	Lattice		lat;
	int64		rows = PG_GETARG_INT64(2);

	memset(&lat, 0, sizeof(lat));
	lat.funcname = "qid_lattice";
	lat.k = PG_GETARG_INT32(1);
	ParsePrivacy(&lat, PG_GETARG_JSONB_P(0));
	if (lat.kmap_k > 0)
		lat.k = Max(lat.k, Min(lat.kmap_k, Max(rows, 1)));
	PG_RETURN_INT64(lat.k);
}

/*
 * qidrisk_privacy_uniques_prefix(privacy, sizes, rows): how many of the
 * classes of these sizes (ascending), smallest first, population uniqueness
 * suppresses in a table of that many rows, as qid_lattice does (0 without it)
 */
Datum
qidrisk_privacy_uniques_prefix(PG_FUNCTION_ARGS)
{
	Lattice		lat;
	ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(1);
	int64		rows = PG_GETARG_INT64(2);
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int64	   *kept;

	memset(&lat, 0, sizeof(lat));
	lat.funcname = "qid_anonymize_into";
	ParsePrivacy(&lat, PG_GETARG_JSONB_P(0));
	if (!lat.has_pu)
		PG_RETURN_INT64(0);
	deconstruct_array(arr, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &elems, &nulls, &n);
	kept = palloc(sizeof(int64) * 2 * Max(n, 1));
	lat.pu_sizes = palloc(sizeof(int64) * Max(n, 1));
	lat.pu_counts = palloc(sizeof(int64) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		kept[2 * i] = nulls[i] ? 0 : DatumGetInt64(elems[i]);
		kept[2 * i + 1] = i;
		if (kept[2 * i] < 1 || (i > 0 && kept[2 * i] < kept[2 * i - 2]))
			elog(ERROR, "qidrisk_privacy_uniques_prefix: class sizes must be positive and ascending");
	}
	lat.pu_population = Max(floor((double) rows / lat.pu_fraction + 0.5), 1.0);
	PG_RETURN_INT64(PopulationUniquenessPrefix(&lat, kept, n));
}

PG_FUNCTION_INFO_V1(qidrisk_qualified_table);
PG_FUNCTION_INFO_V1(qidrisk_qualified_new_table);
PG_FUNCTION_INFO_V1(qidrisk_qualified_privacy);

/*
 * qidrisk_qualified_table(name): an existing table's name, schema-qualified
 * and quoted, resolved with the caller's search_path (so that functions
 * running under a pinned search_path find the caller's tables).
 */
Datum
qidrisk_qualified_table(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	Oid			relid = ResolveTable(name, "", "qid_anonymize_into");

	PG_RETURN_TEXT_P(cstring_to_text(quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
																get_rel_name(relid))));
}

/* qidrisk_qualified_new_table(name): where CREATE TABLE name would create it */
Datum
qidrisk_qualified_new_table(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	List	   *names = QidStringToQualifiedNameList(name);
	RangeVar   *rv = makeRangeVarFromNameList(names);
	Oid			nsp = RangeVarGetCreationNamespace(rv);

	PG_RETURN_TEXT_P(cstring_to_text(quote_qualified_identifier(get_namespace_name(nsp), rv->relname)));
}

/*
 * qidrisk_qualified_privacy(privacy): the privacy object with the population
 * of k_map and delta_presence schema-qualified and quoted, resolved with the
 * caller's search_path (for qid_anonymize_into's body, which pins its own)
 */
Datum
qidrisk_qualified_privacy(PG_FUNCTION_ARGS)
{
	static const char *const models[] = {"k_map", "delta_presence"};
	Jsonb	   *privacy = PG_GETARG_JSONB_P(0);

	if (!JB_ROOT_IS_OBJECT(privacy) || JB_ROOT_IS_SCALAR(privacy))
		PG_RETURN_JSONB_P(privacy);		/* qid_lattice refuses it */
	for (int m = 0; m < (int) lengthof(models); m++)
	{
		JsonbValue *obj = JsonbGet(&privacy->root, models[m]);
		JsonbValue *name;
		char	   *text;
		Oid			relid;
		Datum		path[2];
		JsonbValue	qualified;

		if (obj == NULL || obj->type != jbvBinary || !JsonContainerIsObject(obj->val.binary.data) ||
			(name = JsonbGet(obj->val.binary.data, "population")) == NULL || name->type != jbvString)
			continue;
		text = pnstrdup(name->val.string.val, name->val.string.len);
		relid = RangeVarGetRelid(makeRangeVarFromNameList(QidStringToQualifiedNameList(text)),
								 AccessShareLock, true);
		if (!OidIsValid(relid))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("qid_anonymize_into: population table \"%s\" does not exist", text)));
		qualified.type = jbvString;
		qualified.val.string.val = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
															  get_rel_name(relid));
		qualified.val.string.len = strlen(qualified.val.string.val);
		path[0] = CStringGetTextDatum(models[m]);
		path[1] = CStringGetTextDatum("population");
		privacy = DatumGetJsonbP(DirectFunctionCall4(jsonb_set, JsonbPGetDatum(privacy),
													 PointerGetDatum(construct_array(path, 2, TEXTOID, -1, false, TYPALIGN_INT)),
													 JsonbPGetDatum(JsonbValueToJsonb(&qualified)),
													 BoolGetDatum(false)));
	}
	PG_RETURN_JSONB_P(privacy);
}
