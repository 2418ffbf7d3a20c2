/*
 * hierarchy.c
 *	  hierarchy_generalize: categorical generalization of one column by a
 *	  child -> parent hierarchy table (Lodha & Thomas 2008, Section 4.2);
 *	  hierarchy_levels: such a table's nodes with their ancestors level by
 *	  level, the layout qid_lattice reads.
 *
 * The column's values and the hierarchy's nodes, compared as text, become
 * one dictionary of nodes, each with its parent and the rows holding it.
 * Each value climbs to its top ancestor once (depths are kept, so a chain is
 * walked once however many values share it; a node met again on the walk in
 * progress is a cycle).  Level l generalizes a value to its ancestor l steps
 * up, or its top when the chain is shorter; the chosen level is the lowest
 * with at most max_values classes and every class at least min_rows rows.
 * The work is linear in the rows, the distinct values and the nodes, times
 * the levels tried; the output is sorted by generalization, then value, under
 * the column's collation.  Both tables are read through the relation reader
 * (locked, privileges checked, as the caller, row-level security applying).
 *
 * hierarchy_levels reads the hierarchy alone, into the same dictionary:
 * every node climbs once, then each node's row lists its ancestors up to
 * the greatest depth, so the work is linear in the rows and in the output.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator_d.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"

#include "boundary.h"
#include "hashkey.h"
#include "qidrisk.h"
#include "relreader.h"
#include "settings.h"

PG_FUNCTION_INFO_V1(qidrisk_hierarchy_generalize);
PG_FUNCTION_INFO_V1(qidrisk_hierarchy_levels);

/* How often long loops check for cancellation */
#define HIER_INTERRUPT_MASK 0xFFFF

/* A node that has no parent, or whose depth is not known yet */
#define NO_NODE (-1)
#define DEPTH_UNKNOWN (-1)
#define DEPTH_CLIMBING (-2)

/* One distinct text (a value of the column or a node of the hierarchy) */
typedef struct NodeEntry
{
	Datum		text;			/* a detoasted copy, with a 4-byte header */
	int32		node;
	uint32		hash;
	char		status;
} NodeEntry;

#define SH_PREFIX nodehash
#define SH_ELEMENT_TYPE NodeEntry
#define SH_KEY_TYPE Datum
#define SH_KEY text
/* keyed placement (hashkey.c): chosen texts cannot share a bucket */
#define SH_HASH_KEY(tb, key) QidValueHashOf((QidValueHash *) (tb)->private_data, key)
#define SH_EQUAL(tb, a, b) QidValueHashEqual((QidValueHash *) (tb)->private_data, a, b)
#define SH_STORE_HASH
#define SH_GET_HASH(tb, a) ((a)->hash)
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/* What is known of a node; one struct, so that a node costs one cache miss */
typedef struct HierarchyNodeInfo
{
	Datum		text;			/* a detoasted copy, with a 4-byte header */
	int64		rows;			/* rows of the table holding the node */
	int32		parent;			/* or NO_NODE */
	int32		depth;			/* steps to its top, once climbed */
} HierarchyNodeInfo;

typedef struct Hierarchy
{
	const char *funcname;		/* for messages */
	QidRelation *rel;			/* the table, locked, its column resolved; or
								 * NULL (hierarchy_levels) */
	QidRelation *tree;			/* the hierarchy, locked, child and parent */
	Oid			collation;		/* under which texts are equal and ordered */
	QidValueHash hash;
	nodehash_hash *table;
	MemoryContext context;		/* the nodes and their texts */
	Size		budget;
	Size		later_bytes;	/* per node, of the arrays made after the scans */
	double		text_bytes;
	int32		nnodes;
	int32		capacity;
	HierarchyNodeInfo *nodes;
	int64		null_rows;		/* rows whose value is NULL */
	int64		scanned;
	bool		reading_tree;	/* which scan is running */
} Hierarchy;

/*
 * Bytes per node of the arrays that choose the level and order the output
 * (values, classes, sums, touched, the classes and rows to sort)
 */
#define GENERALIZE_LATER_BYTES (3 * sizeof(int32) + sizeof(int64) + 2 * sizeof(Datum) + \
								sizeof(int64) + sizeof(int32) + sizeof(int32))

/*
 * Bytes per node of what hierarchy_levels makes after the scan (the climbing
 * stack, one row's ancestors and their alignment in its array)
 */
#define LEVELS_LATER_BYTES (sizeof(int32) + sizeof(Datum) + sizeof(int32))

/*
 * Stop with an error naming the setting that bounds the nodes' memory:
 * counting the arrays and the copy of the values' texts made later, so that
 * the whole call stays within it
 */
static void
HierarchyCheckBudget(Hierarchy *h)
{
	double		bytes = (double) h->table->size * sizeof(NodeEntry) +
		(double) h->capacity * (sizeof(HierarchyNodeInfo) + h->later_bytes) +
		2 * h->text_bytes;

	if (bytes > (double) h->budget)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s: the %s exceed qidrisk.max_state_memory", h->funcname,
						h->rel ? "values and hierarchy nodes" : "hierarchy nodes"),
				 errdetail("%d distinct %s take %.0f kB; the budget is %zu kB.",
						   h->nnodes, h->rel ? "values and nodes" : "nodes",
						   bytes / 1024.0, h->budget / 1024),
				 errhint("Raise qidrisk.max_state_memory (or work_mem when it is -1).")));
}

/*
 * How many nodes to make room for at first: as many as the hierarchy has
 * rows by its statistics, each row a node and values mostly among them
 * (growing the dictionary rehashes and zeroes it at every doubling), within a
 * quarter of the budget
 */
static uint32
ExpectedNodes(Hierarchy *h)
{
	double		rows = 0;
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(h->tree->relid));

	if (HeapTupleIsValid(tuple))
	{
		rows = ((Form_pg_class) GETSTRUCT(tuple))->reltuples;
		ReleaseSysCache(tuple);
	}
	rows = Min(rows, (double) h->budget /
			   (4 * (sizeof(NodeEntry) + sizeof(HierarchyNodeInfo) + h->later_bytes)));
	return (uint32) Max(Min(rows, (double) (PG_INT32_MAX / 2)), 1024);
}

/* The node of a text, a new one (no rows, no parent) when the text is new */
static int32
HierarchyNode(Hierarchy *h, Datum text)
{
	NodeEntry  *entry;
	bool		found;
	struct varlena *detoasted = PG_DETOAST_DATUM_PACKED(text);

	entry = nodehash_insert(h->table, PointerGetDatum(detoasted), &found);
	if (!found)
	{
		Size		len = VARSIZE_ANY_EXHDR(detoasted);
		Size		size = VARHDRSZ + len;
		int32		node = h->nnodes;
		struct varlena *copy;

		if (node == PG_INT32_MAX - 1)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("%s handles at most %d distinct values and nodes",
							h->funcname, PG_INT32_MAX - 1)));
		if (node == h->capacity)
		{
			h->capacity = (int32) Min((int64) h->capacity * 2, PG_INT32_MAX - 1);
			h->nodes = repalloc_huge(h->nodes, sizeof(HierarchyNodeInfo) * h->capacity);
			HierarchyCheckBudget(h);
		}
		/* a 4-byte header, so that arrays take the text as it is */
		copy = MemoryContextAlloc(h->context, size);
		SET_VARSIZE(copy, size);
		memcpy(VARDATA(copy), VARDATA_ANY(detoasted), len);
		h->text_bytes += size;
		entry->text = PointerGetDatum(copy);
		entry->node = node;
		h->nodes[node].text = entry->text;
		h->nodes[node].rows = 0;
		h->nodes[node].parent = NO_NODE;
		h->nodes[node].depth = DEPTH_UNKNOWN;
		h->nnodes++;
	}
	if ((Pointer) detoasted != DatumGetPointer(text))
		pfree(detoasted);
	return entry->node;
}

/* A node's text as a C string, for messages */
static char *
NodeString(Hierarchy *h, int32 node)
{
	return TextDatumGetCString(h->nodes[node].text);
}

/*
 * The hierarchy's name for messages, as they have always printed it (under
 * search_path pg_catalog, pg_temp): schema-qualified unless temporary
 */
static const char *
TreeName(Hierarchy *h)
{
	Oid			namespace = get_rel_namespace(h->tree->relid);

	if (namespace == PG_CATALOG_NAMESPACE || isTempNamespace(namespace))
		return quote_identifier(h->tree->relname);
	return h->tree->qualified;
}

/*
 * Make the empty dictionary of nodes, sized from the hierarchy's statistics,
 * its texts compared under h->collation with a key of its own
 */
static void
HierarchyPrepare(Hierarchy *h)
{
	h->context = AllocSetContextCreate(CurrentMemoryContext, "qidrisk hierarchy nodes",
									   ALLOCSET_DEFAULT_SIZES);
	h->budget = QidStateMemoryBudget();
	QidValueHashInit(&h->hash, TEXTOID, h->collation, false, CurrentMemoryContext);
	h->capacity = ExpectedNodes(h);
	h->table = nodehash_create(CurrentMemoryContext, h->capacity, &h->hash);
	h->nodes = MemoryContextAllocHuge(CurrentMemoryContext,
									  sizeof(HierarchyNodeInfo) * h->capacity);
}

/* Count one row of the table into its value's node */
static void
ValueRow(Hierarchy *h, TupleTableSlot *slot)
{
	int32		node;

	slot_getsomeattrs(slot, 1);
	if (slot->tts_isnull[0])
	{
		h->null_rows++;
		return;
	}
	/* HierarchyNode may move h->nodes: index it only afterwards */
	node = HierarchyNode(h, slot->tts_values[0]);
	h->nodes[node].rows++;
}

/*
 * Record one child -> parent row of the hierarchy (a NULL side names only
 * the other node); a second parent is an error
 */
static void
TreeRow(Hierarchy *h, TupleTableSlot *slot)
{
	int32		child = NO_NODE;
	int32		parent = NO_NODE;

	slot_getsomeattrs(slot, 2);
	if (!slot->tts_isnull[0])
		child = HierarchyNode(h, slot->tts_values[0]);
	if (!slot->tts_isnull[1])
		parent = HierarchyNode(h, slot->tts_values[1]);
	if (child == NO_NODE || parent == NO_NODE)
		return;
	if (h->nodes[child].parent == NO_NODE)
		h->nodes[child].parent = parent;
	else if (h->nodes[child].parent != parent)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("hierarchy %s gives \"%s\" more than one parent",
						TreeName(h), NodeString(h, child))));
}

typedef struct HierarchyReceiver
{
	DestReceiver pub;
	Hierarchy  *h;
} HierarchyReceiver;

/* The scans return text columns: one for the table, two for the hierarchy */
static void
HierarchyStartup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	Hierarchy  *h = ((HierarchyReceiver *) self)->h;
	int			ncolumns = h->reading_tree ? 2 : 1;

	(void) operation;
	if (typeinfo->natts != ncolumns)
		elog(ERROR, "%s: a scan returned %d columns", h->funcname, typeinfo->natts);
	for (int i = 0; i < ncolumns; i++)
		if (TupleDescAttr(typeinfo, i)->atttypid != TEXTOID)
			elog(ERROR, "%s: a scan returned a column of type %s", h->funcname,
				 format_type_be(TupleDescAttr(typeinfo, i)->atttypid));
}

static void
HierarchyShutdown(DestReceiver *self)
{
	(void) self;
}

static void
HierarchyDestroy(DestReceiver *self)
{
	(void) self;
}

static bool
HierarchyReceiveSlot(TupleTableSlot *slot, DestReceiver *self)
{
	Hierarchy  *h = ((HierarchyReceiver *) self)->h;

	if ((++h->scanned & HIER_INTERRUPT_MASK) == 0)
	{
		CHECK_FOR_INTERRUPTS();
		HierarchyCheckBudget(h);
	}
	if (h->reading_tree)
		TreeRow(h, slot);
	else
		ValueRow(h, slot);
	return true;
}

/* Run one query as the caller, feeding its rows to the hierarchy */
static void
HierarchyScan(Hierarchy *h, const char *query, bool reading_tree)
{
	HierarchyReceiver receiver;
	SPIExecuteOptions options;
	int			rc;

	receiver.pub.receiveSlot = HierarchyReceiveSlot;
	receiver.pub.rStartup = HierarchyStartup;
	receiver.pub.rShutdown = HierarchyShutdown;
	receiver.pub.rDestroy = HierarchyDestroy;
	receiver.pub.mydest = DestNone;
	receiver.h = h;
	memset(&options, 0, sizeof(options));
	options.read_only = true;
	options.dest = &receiver.pub;
	h->reading_tree = reading_tree;
	rc = SPI_execute_extended(query, &options);
	/* a SELECT into a receiver of type DestNone reports SPI_OK_UTILITY */
	if (rc != SPI_OK_SELECT && rc != SPI_OK_UTILITY)
		elog(ERROR, "%s: SPI_execute_extended returned %s", h->funcname,
			 SPI_result_code_string(rc));
	HierarchyCheckBudget(h);
}

/* The collation of a chosen column's "::text": its own, or the default for a type without one */
static Oid
TextCollation(QidRelation *rel, int column)
{
	if (get_typcollation(getBaseType(rel->types[column])) != InvalidOid)
		return rel->collations[column];
	return DEFAULT_COLLATION_OID;
}

/*
 * The collation texts are compared under: the first column's, or the
 * other's where the first has the default one; two others are an error, as
 * they would be in SQL.  what and other_what say which columns they are.
 */
static Oid
MergeCollation(Hierarchy *h, Oid collation, Oid other, const char *what, const char *column,
			   const char *other_what, const char *other_column)
{
	if (other == collation || other == DEFAULT_COLLATION_OID || !OidIsValid(other))
		return collation;
	if (collation == DEFAULT_COLLATION_OID || !OidIsValid(collation))
		return other;
	ereport(ERROR,
			(errcode(ERRCODE_INDETERMINATE_COLLATION),
			 errmsg("%s: %s \"%s\" and %s \"%s\" have different collations",
					h->funcname, what, column, other_what, other_column),
			 errdetail("Collations \"%s\" and \"%s\".", get_collation_name(collation),
					   get_collation_name(other)),
			 errhint("Give them one collation with COLLATE in a view.")));
	return InvalidOid;			/* keep compiler quiet */
}

/*
 * Climb from node to a node whose depth is known (or to the top), then set
 * the depth of every node on the way; a node met again while climbing is on
 * a cycle.  stack has room for every node.
 */
static void
Climb(Hierarchy *h, int32 node, int32 *stack)
{
	int32		n = 0;
	int32		depth;

	while (node != NO_NODE && h->nodes[node].depth == DEPTH_UNKNOWN)
	{
		h->nodes[node].depth = DEPTH_CLIMBING;
		stack[n++] = node;
		node = h->nodes[node].parent;
	}
	if (node != NO_NODE && h->nodes[node].depth == DEPTH_CLIMBING)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("hierarchy %s has a cycle through \"%s\"",
						TreeName(h), NodeString(h, node))));
	/* the last node climbed is a top (depth 0) or a child of a known depth */
	depth = node == NO_NODE ? -1 : h->nodes[node].depth;
	while (n > 0)
		h->nodes[stack[--n]].depth = ++depth;
}

/* One output row: the value's text and rows (its class is known from where it sits) */
typedef struct OutputRow
{
	Datum		text;			/* first: sorted by CompareTexts */
	int64		rows;
} OutputRow;

/* One class of the chosen level */
typedef struct OutputClass
{
	Datum		text;			/* first: sorted by CompareTexts */
	int32		node;
} OutputClass;

/* Order two structs by their leading text under the sort support in arg */
static int
CompareTexts(const void *a, const void *b, void *arg)
{
	return ApplySortComparator(*(const Datum *) a, false, *(const Datum *) b, false,
							   (SortSupport) arg);
}

/* What hierarchy_generalize works on once the hierarchy is read */
typedef struct Generalization
{
	bool		has_max;		/* the limits, each optional */
	bool		has_min;
	int64		max_values;
	int64		min_rows;
	int32	   *values;			/* the nodes that have rows */
	int32		nvalues;
	int32		max_depth;		/* the deepest value's depth */
	int32	   *classes;		/* each value's class at the chosen level */
	int64	   *sums;			/* per node, zeroed between uses */
	int32		level;			/* the chosen level */
	OutputClass *order;			/* the classes, sorted */
	int32		nchosen;
	OutputRow  *output;			/* the values, in their classes' runs */
	SortSupportData sort;
} Generalization;

/* Open and lock both relations, resolve the columns, settle the collation */
static void
GeneralizeOpen(Hierarchy *h, Oid relid, Oid treeid, const char *column,
			   const char *child_column, const char *parent_column)
{
	memset(h, 0, sizeof(*h));
	h->funcname = "hierarchy_generalize";
	h->later_bytes = GENERALIZE_LATER_BYTES;

	/* both relations exist and are locked before their columns are resolved */
	h->rel = QidRelationOpen(relid, NULL);
	h->tree = QidRelationOpen(treeid, "hierarchy");
	QidRelationColumn(h->rel, column);
	QidRelationCheckSelect(h->rel, NULL);
	QidRelationColumn(h->tree, child_column);
	QidRelationColumn(h->tree, parent_column);
	QidRelationCheckSelect(h->tree, NULL);

	/* texts as "::text" makes them; the column's collation, merged as SQL would */
	h->collation = MergeCollation(h, TextCollation(h->rel, 0), TextCollation(h->tree, 0),
								  "column", column, "hierarchy column", child_column);
	h->collation = MergeCollation(h, h->collation, TextCollation(h->tree, 1),
								  "column", column, "hierarchy column", parent_column);
	HierarchyPrepare(h);
}

/* Read the column's values and the hierarchy's child -> parent pairs through SPI */
static void
GeneralizeRead(Hierarchy *h, const char *column, const char *child_column,
			   const char *parent_column)
{
	StringInfoData query;
	bool		pushed;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "hierarchy_generalize: SPI_connect failed");
	pushed = QidReadSnapshotPush(h->rel, h->tree);
	initStringInfo(&query);
	appendStringInfo(&query, "SELECT qidrisk_t.%s::pg_catalog.text FROM %s AS qidrisk_t",
					 quote_identifier(column), h->rel->qualified);
	HierarchyScan(h, query.data, false);
	resetStringInfo(&query);
	appendStringInfo(&query,
					 "SELECT qidrisk_h.%s::pg_catalog.text, qidrisk_h.%s::pg_catalog.text FROM %s AS qidrisk_h"
					 " WHERE qidrisk_h.%s IS NOT NULL AND qidrisk_h.%s IS NOT NULL",
					 quote_identifier(child_column), quote_identifier(parent_column),
					 h->tree->qualified, quote_identifier(child_column),
					 quote_identifier(parent_column));
	HierarchyScan(h, query.data, true);
	if (pushed)
		PopActiveSnapshot();
	SPI_finish();
}

/* The values (nodes with rows) climb to their tops, which gives their depths */
static void
GeneralizeClimb(Hierarchy *h, Generalization *g)
{
	int32	   *stack;

	g->values = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int32) * Max(h->nnodes, 1));
	stack = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int32) * Max(h->nnodes, 1));
	for (int32 node = 0; node < h->nnodes; node++)
	{
		if ((node & HIER_INTERRUPT_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		if (h->nodes[node].rows == 0)
			continue;
		g->values[g->nvalues++] = node;
		Climb(h, node, stack);
		g->max_depth = Max(g->max_depth, h->nodes[node].depth);
	}
	pfree(stack);
}

/*
 * The lowest level that meets the limits.  Level by level, each value's
 * class moves one step up unless it is at the top; the classes are counted
 * and their rows summed in sums, whose touched entries are cleared again.
 */
static void
GeneralizeChooseLevel(Hierarchy *h, Generalization *g)
{
	int32	   *touched;

	g->classes = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int32) * Max(g->nvalues, 1));
	g->sums = MemoryContextAllocExtended(CurrentMemoryContext, sizeof(int64) * Max(h->nnodes, 1),
										 MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	touched = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int32) * Max(g->nvalues, 1));
	memcpy(g->classes, g->values, sizeof(int32) * g->nvalues);
	g->level = -1;
	for (int32 l = 0; g->nvalues > 0 && l <= g->max_depth; l++)
	{
		int64		nclasses = 0;
		int64		smallest = PG_INT64_MAX;

		for (int32 i = 0; i < g->nvalues; i++)
		{
			int32		class = g->classes[i];

			if ((i & HIER_INTERRUPT_MASK) == 0)
				CHECK_FOR_INTERRUPTS();
			if (l > 0 && h->nodes[class].parent != NO_NODE)
				g->classes[i] = class = h->nodes[class].parent;
			if (g->sums[class] == 0)
				touched[nclasses++] = class;
			g->sums[class] += h->nodes[g->values[i]].rows;
		}
		for (int64 t = 0; t < nclasses; t++)
		{
			smallest = Min(smallest, g->sums[touched[t]]);
			g->sums[touched[t]] = 0;
		}
		if ((!g->has_max || nclasses <= g->max_values) &&
			(!g->has_min || smallest >= g->min_rows))
		{
			g->level = l;
			break;
		}
	}
	pfree(touched);
	if (g->level < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("no level of hierarchy %s meets max_values = %s and min_rows = %s",
						TreeName(h),
						g->has_max ? psprintf(INT64_FORMAT, g->max_values) : "<NULL>",
						g->has_min ? psprintf(INT64_FORMAT, g->min_rows) : "<NULL>"),
				 errhint("Even the top of the hierarchy is too fine; add a coarser level or relax the policy.")));
}

/*
 * The rows in order of generalization: the classes sorted, each value put
 * in its class's run (sums then holds where the run of each class ends)
 */
static void
GeneralizeOrder(Hierarchy *h, Generalization *g)
{
	memset(&g->sort, 0, sizeof(g->sort));
	g->sort.ssup_cxt = CurrentMemoryContext;
	g->sort.ssup_collation = h->collation;
	g->sort.ssup_nulls_first = false;
	PrepareSortSupportFromOrderingOp(TextLessOperator, &g->sort);
	g->order = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(OutputClass) * Max(g->nvalues, 1));
	for (int32 i = 0; i < g->nvalues; i++)
	{
		if (g->sums[g->classes[i]] == 0)
		{
			g->order[g->nchosen].text = h->nodes[g->classes[i]].text;
			g->order[g->nchosen++].node = g->classes[i];
		}
		g->sums[g->classes[i]]++;
	}
	qsort_arg(g->order, g->nchosen, sizeof(OutputClass), CompareTexts, &g->sort);
	g->output = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(OutputRow) * Max(g->nvalues, 1));
	for (int32 c = 0, start = 0; c < g->nchosen; c++)
	{
		int64		size = g->sums[g->order[c].node];

		g->sums[g->order[c].node] = start;
		start += size;
	}
	for (int32 i = 0; i < g->nvalues; i++)
	{
		OutputRow  *row = &g->output[g->sums[g->classes[i]]++];

		row->text = h->nodes[g->values[i]].text;
		row->rows = h->nodes[g->values[i]].rows;
	}
}

/*
 * Each class's values side by side in memory, so that sorting a class reads
 * a compact run rather than texts scattered over the whole table (in place
 * of the dictionary, which is done with)
 */
static void
GeneralizeCompact(Hierarchy *h, Generalization *g)
{
	Size		copy_bytes = 0;
	char	   *copies;

	for (int32 r = 0; r < g->nvalues; r++)
		copy_bytes += VARSIZE_ANY(DatumGetPointer(g->output[r].text));
	nodehash_destroy(h->table);
	h->table = NULL;
	copies = MemoryContextAllocHuge(CurrentMemoryContext, Max(copy_bytes, 1));
	copy_bytes = 0;
	for (int32 r = 0; r < g->nvalues; r++)
	{
		Size		size = VARSIZE_ANY(DatumGetPointer(g->output[r].text));

		memcpy(copies + copy_bytes, DatumGetPointer(g->output[r].text), size);
		g->output[r].text = PointerGetDatum(copies + copy_bytes);
		copy_bytes += size;
	}
}

/* Each class's run sorted by value and emitted, the NULL value last */
static void
GeneralizeEmit(Hierarchy *h, Generalization *g, ReturnSetInfo *rsinfo)
{
	for (int32 c = 0, start = 0; c < g->nchosen; c++)
	{
		int32		end = (int32) g->sums[g->order[c].node];
		Datum		out[4];
		bool		nulls[4] = {false, false, false, false};

		CHECK_FOR_INTERRUPTS();
		qsort_arg(g->output + start, end - start, sizeof(OutputRow), CompareTexts, &g->sort);
		out[1] = g->order[c].text;
		out[2] = Int32GetDatum(g->level);
		for (int32 r = start; r < end; r++)
		{
			if ((r & HIER_INTERRUPT_MASK) == 0)
				CHECK_FOR_INTERRUPTS();
			out[0] = g->output[r].text;
			out[3] = Int64GetDatum(g->output[r].rows);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, nulls);
		}
		start = end;
	}
	if (h->null_rows > 0)
	{
		Datum		out[4] = {(Datum) 0, (Datum) 0, Int32GetDatum(g->level), Int64GetDatum(h->null_rows)};
		bool		nulls[4] = {true, true, false, false};

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, nulls);
	}
}

/*
 * hierarchy_generalize(rel, column_name, hierarchy, max_values, min_rows,
 * child_column, parent_column): each value of the column with its
 * generalization at the lowest level that meets the limits, the level and
 * the value's rows
 */
static Datum
HierarchyGeneralize(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Hierarchy	h;
	Generalization g;
	char	   *column;
	char	   *child_column;
	char	   *parent_column;

	memset(&g, 0, sizeof(g));
	g.has_max = !PG_ARGISNULL(3);
	g.has_min = !PG_ARGISNULL(4);
	g.max_values = g.has_max ? PG_GETARG_INT64(3) : 0;
	g.min_rows = g.has_min ? PG_GETARG_INT64(4) : 0;
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(5) || PG_ARGISNULL(6))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("hierarchy_generalize needs a table, a column and a hierarchy")));
	if (!g.has_max && !g.has_min)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("hierarchy_generalize needs max_values, min_rows or both")));
	if ((g.has_max && g.max_values < 1) || (g.has_min && g.min_rows < 1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_values and min_rows must be at least 1")));
	column = text_to_cstring(PG_GETARG_TEXT_PP(1));
	child_column = text_to_cstring(PG_GETARG_TEXT_PP(5));
	parent_column = text_to_cstring(PG_GETARG_TEXT_PP(6));

	InitMaterializedSRF(fcinfo, 0);
	GeneralizeOpen(&h, PG_GETARG_OID(0), PG_GETARG_OID(2), column, child_column, parent_column);
	GeneralizeRead(&h, column, child_column, parent_column);
	GeneralizeClimb(&h, &g);
	GeneralizeChooseLevel(&h, &g);
	GeneralizeOrder(&h, &g);
	GeneralizeCompact(&h, &g);
	GeneralizeEmit(&h, &g, rsinfo);
	return (Datum) 0;
}

/*
 * Emit one row per node: its text and its ancestors 1 .. max_depth steps up,
 * a top standing for itself above its depth
 */
static void
EmitLevels(Hierarchy *h, ReturnSetInfo *rsinfo, int32 max_depth)
{
	Datum	   *ancestors = MemoryContextAllocHuge(CurrentMemoryContext,
												   sizeof(Datum) * Max(max_depth, 1));
	MemoryContext row_context = AllocSetContextCreate(CurrentMemoryContext,
													  "qidrisk hierarchy_levels row",
													  ALLOCSET_DEFAULT_SIZES);

	for (int32 node = 0; node < h->nnodes; node++)
	{
		int32		at = node;
		Datum		out[2];
		bool		nulls[2] = {false, false};
		MemoryContext old;

		/* a row costs up to max_depth steps */
		CHECK_FOR_INTERRUPTS();
		for (int32 level = 0; level < max_depth; level++)
		{
			if (h->nodes[at].parent != NO_NODE)
				at = h->nodes[at].parent;
			ancestors[level] = h->nodes[at].text;
		}
		old = MemoryContextSwitchTo(row_context);
		out[0] = h->nodes[node].text;
		out[1] = PointerGetDatum(construct_array(ancestors, max_depth, TEXTOID, -1, false,
												 TYPALIGN_INT));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, nulls);
		MemoryContextSwitchTo(old);
		MemoryContextReset(row_context);
	}
	MemoryContextDelete(row_context);
	pfree(ancestors);
}

/*
 * hierarchy_levels(hierarchy, child_column, parent_column): every node of a
 * child -> parent table (every child and every parent, as text) with its
 * ancestors level by level up to the greatest depth.  The table is read
 * once; every node climbs once, so a chain of any depth costs its length.
 */
static Datum
HierarchyLevels(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Hierarchy	h;
	char	   *child_column;
	char	   *parent_column;
	StringInfoData query;
	bool		pushed;
	int32	   *stack;
	int32		max_depth = 0;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("hierarchy_levels needs a hierarchy table and its child and parent columns")));
	child_column = text_to_cstring(PG_GETARG_TEXT_PP(1));
	parent_column = text_to_cstring(PG_GETARG_TEXT_PP(2));

	InitMaterializedSRF(fcinfo, 0);
	memset(&h, 0, sizeof(h));
	h.funcname = "hierarchy_levels";
	h.later_bytes = LEVELS_LATER_BYTES;

	/* locked before its columns are resolved */
	h.tree = QidRelationOpen(PG_GETARG_OID(0), "hierarchy");
	QidRelationColumn(h.tree, child_column);
	QidRelationColumn(h.tree, parent_column);
	QidRelationCheckSelect(h.tree, NULL);
	h.collation = MergeCollation(&h, TextCollation(h.tree, 0), TextCollation(h.tree, 1),
								 "child column", child_column, "parent column", parent_column);
	HierarchyPrepare(&h);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "hierarchy_levels: SPI_connect failed");
	pushed = QidReadSnapshotPush(h.tree, NULL);
	initStringInfo(&query);
	appendStringInfo(&query,
					 "SELECT qidrisk_h.%s::pg_catalog.text, qidrisk_h.%s::pg_catalog.text FROM %s AS qidrisk_h"
					 " WHERE qidrisk_h.%s IS NOT NULL OR qidrisk_h.%s IS NOT NULL",
					 quote_identifier(child_column), quote_identifier(parent_column),
					 h.tree->qualified, quote_identifier(child_column),
					 quote_identifier(parent_column));
	HierarchyScan(&h, query.data, true);
	if (pushed)
		PopActiveSnapshot();
	SPI_finish();

	/* every node climbs, so that a cycle anywhere is found */
	stack = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int32) * Max(h.nnodes, 1));
	for (int32 node = 0; node < h.nnodes; node++)
	{
		if ((node & HIER_INTERRUPT_MASK) == 0)
			CHECK_FOR_INTERRUPTS();
		Climb(&h, node, stack);
		max_depth = Max(max_depth, h.nodes[node].depth);
	}
	pfree(stack);
	nodehash_destroy(h.table);
	h.table = NULL;

	EmitLevels(&h, rsinfo, max_depth);
	return (Datum) 0;
}

/* hierarchy_levels under a boundary: an error of the input shows the call, not the read */
Datum
qidrisk_hierarchy_levels(PG_FUNCTION_ARGS)
{
	return QidCallBounded(HierarchyLevels, fcinfo);
}

/* hierarchy_generalize under a boundary: an error of the input shows the call, not the reads */
Datum
qidrisk_hierarchy_generalize(PG_FUNCTION_ARGS)
{
	return QidCallBounded(HierarchyGeneralize, fcinfo);
}
