/*
 * qidsearch.c
 *	  Quasi-identifier discovery over every subset of candidate columns.
 *
 * The relation is read once through SPI (as the caller, so privileges and
 * row-level security hold).  Each column is dictionary-encoded into dense
 * integer codes: values equal under the type's default hash equality and the
 * column's collation share a code, NULL is one more code (GROUP BY semantics).
 *
 * The subset lattice is then walked depth first with stripped partitions (as
 * in TANE): the partition of S plus a column refines the partition of S, and a
 * class of one row stays a singleton in every superset, so only classes of two
 * rows or more are kept.  For a subset S, singletons(S) = rows - rows in the
 * stripped classes and classes(S) = singletons(S) + stripped classes.  A
 * superset of an identifier is an identifier and is not counted.
 *
 * The walk's tree has parent(S) = S minus its smallest column, and a node's
 * children add one column smaller than its smallest.  Visited in pre-order,
 * subsets come in increasing order of their bit masks, so every proper subset
 * of S is visited before S.  Memory is the codes plus one partition per depth.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/typcache.h"

#include "qidrisk.h"
#include "qidsearch.h"
#include "relreader.h"

PG_FUNCTION_INFO_V1(qidrisk_qid_search);

/* ---- the lattice walk ---- */

typedef struct Walk
{
	QidEncoded *enc;
	int			max_size;
	int			nwords;			/* 64-bit words of a column mask */
	int32	   *counts;			/* per code: rows of the class being split */
	int32	   *slots;			/* per code: next free place in the output */
	int32	   *scratch;		/* the codes of the class being split */
	QidPartition *levels;		/* levels[d]: the partition at depth d + 1 */
	bool	   *level_identifier;	/* levels[d] is an identifier */
	bool	   *level_materialized; /* levels[d]'s rows are written */
	int		   *order;			/* walk position -> candidate position */
	void	  **codes;			/* codes by walk position, as narrow as fits */
	int		   *widths;			/* their widths in bytes: 1, 2 or 4 */
	bool		need_partitions;	/* the visitor reads every partition */
	int		   *columns;		/* the current subset, walk positions ascending */
	int		   *visible;		/* the same as candidate positions, ascending */
	int			size;
	uint64	   *mask;			/* the current subset as a mask */
	HTAB	   *identifiers;	/* masks of identifiers seen */
	int64		nidentifiers;
	QidSubsetVisitor visitor;
	void	   *arg;
	const char *funcname;
} Walk;

/* Partition of one column: counting sort of the rows by code */
static void
ColumnPartition(Walk *walk, int column, QidPartition *out)
{
	const int32 *codes = walk->enc->codes[walk->order[column]];
	int64		nrows = walk->enc->nrows;
	int32		ndistinct = walk->enc->ndistinct[walk->order[column]];
	int32	   *counts = walk->counts;
	int32	   *slots = walk->slots;
	int32		next = 0;

	for (int64 r = 0; r < nrows; r++)
		counts[codes[r]]++;
	out->nclasses = 0;
	for (int32 v = 0; v < ndistinct; v++)
	{
		if (counts[v] >= 2)
		{
			slots[v] = next;
			next += counts[v];
			out->ends[out->nclasses++] = next;
		}
	}
	out->nrows = next;
	for (int64 r = 0; r < nrows; r++)
	{
		int32		v = codes[r];

		if (counts[v] >= 2)
			out->rows[slots[v]++] = (int32) r;
	}
	/* RefinePartition expects the counters at zero */
	memset(counts, 0, sizeof(int32) * ndistinct);
	CHECK_FOR_INTERRUPTS();
}

#define CODETYPE uint8
#define SUFFIX u8
#include "qidsearch_refine.h"
#define CODETYPE uint16
#define SUFFIX u16
#include "qidsearch_refine.h"
#define CODETYPE int32
#define SUFFIX i32
#include "qidsearch_refine.h"

/* Split (write) or only count (a leaf's) the refinement by one more column */
static void
RefinePartition(Walk *walk, const QidPartition *in, int column, QidPartition *out,
				bool write)
{
	switch (walk->widths[column])
	{
		case 1:
			if (write)
				Refine_u8(walk, in, column, out, true);
			else
				Refine_u8(walk, in, column, out, false);
			break;
		case 2:
			if (write)
				Refine_u16(walk, in, column, out, true);
			else
				Refine_u16(walk, in, column, out, false);
			break;
		default:
			if (write)
				Refine_i32(walk, in, column, out, true);
			else
				Refine_i32(walk, in, column, out, false);
	}
}

/* Whether the subset's mask without one column is a known identifier */
static bool
IsKnownIdentifier(Walk *walk, int without)
{
	bool		found;
	uint64		bit = UINT64CONST(1) << (without % 64);

	walk->mask[without / 64] &= ~bit;
	(void) hash_search(walk->identifiers, walk->mask, HASH_FIND, &found);
	walk->mask[without / 64] |= bit;
	return found;
}

/* Remember the current subset as an identifier */
static void
RememberIdentifier(Walk *walk)
{
	bool		found;

	(void) hash_search(walk->identifiers, walk->mask, HASH_ENTER, &found);
	if (!found)
	{
		walk->nidentifiers++;
		if ((walk->nidentifiers & 0x3FF) == 0)
			QidCheckSearchMemory((double) walk->nidentifiers *
							  (sizeof(uint64) * walk->nwords + 64) + walk->enc->memory,
							  walk->funcname, "The identifiers found and the encoded columns");
	}
}

/* Report the subset at depth d (levels[d - 1]) and walk its children */
static void
VisitNode(Walk *walk, int depth)
{
	QidPartition *part = &walk->levels[depth - 1];
	int64		nrows = walk->enc->nrows;
	QidSubset	subset;
	bool		identifier = walk->level_identifier[depth - 1];
	int			smallest = walk->columns[0];

	CHECK_FOR_INTERRUPTS();
	/* the visitor sees candidate positions, ascending */
	for (int i = 0; i < walk->size; i++)
	{
		int			v = walk->order[walk->columns[i]];
		int			j = i;

		while (j > 0 && walk->visible[j - 1] > v)
		{
			walk->visible[j] = walk->visible[j - 1];
			j--;
		}
		walk->visible[j] = v;
	}
	subset.columns = walk->visible;
	subset.size = walk->size;
	subset.partition = walk->level_materialized[depth - 1] ? part : NULL;
	subset.identifier = identifier;
	subset.minimal_identifier = false;
	if (identifier)
	{
		subset.singletons = nrows;
		subset.classes = nrows;
		/* minimal: no subset one column smaller is an identifier */
		subset.minimal_identifier = true;
		if (walk->size > 1)
		{
			for (int i = 0; i < walk->size; i++)
			{
				if (IsKnownIdentifier(walk, walk->columns[i]))
				{
					subset.minimal_identifier = false;
					break;
				}
			}
		}
		RememberIdentifier(walk);
	}
	else
	{
		subset.singletons = nrows - part->nrows;
		subset.classes = subset.singletons + part->nclasses;
	}
	walk->visitor(&subset, walk->arg);

	if (walk->size >= walk->max_size)
		return;

	/* children add one column smaller than the smallest */
	memmove(walk->columns + 1, walk->columns, sizeof(int) * walk->size);
	walk->size++;
	for (int c = 0; c < smallest; c++)
	{
		QidPartition *child = &walk->levels[depth];
		bool		child_identifier = identifier;

		walk->columns[0] = c;
		walk->mask[c / 64] |= UINT64CONST(1) << (c % 64);
		if (!child_identifier)
		{
			/* a superset of a known identifier is one */
			for (int i = 1; i < walk->size && !child_identifier; i++)
				child_identifier = IsKnownIdentifier(walk, walk->columns[i]);
		}
		walk->level_materialized[depth] = true;
		if (child_identifier)
		{
			child->nclasses = 0;
			child->nrows = 0;
		}
		else
		{
			/* a leaf's partition is only counted, unless the visitor reads it */
			if (!walk->need_partitions && (c == 0 || walk->size >= walk->max_size))
			{
				RefinePartition(walk, part, c, child, false);
				walk->level_materialized[depth] = false;
			}
			else
				RefinePartition(walk, part, c, child, true);
			child_identifier = (child->nclasses == 0 && nrows > 0);
		}
		walk->level_identifier[depth] = child_identifier;
		VisitNode(walk, depth + 1);
		walk->mask[c / 64] &= ~(UINT64CONST(1) << (c % 64));
	}
	walk->size--;
	memmove(walk->columns, walk->columns + 1, sizeof(int) * walk->size);
	walk->columns[0] = smallest;
}

/* Copy a column's codes into the narrowest integers that hold them */
static void
NarrowCodes(Walk *walk, int column)
{
	int			source = walk->order[column];
	const int32 *codes = walk->enc->codes[source];
	int64		nrows = walk->enc->nrows;

	if (walk->enc->ndistinct[source] <= PG_UINT8_MAX + 1)
	{
		uint8	   *narrow = MemoryContextAllocHuge(CurrentMemoryContext, Max(nrows, 1));

		for (int64 r = 0; r < nrows; r++)
			narrow[r] = (uint8) codes[r];
		walk->codes[column] = narrow;
		walk->widths[column] = 1;
	}
	else if (walk->enc->ndistinct[source] <= PG_UINT16_MAX + 1)
	{
		uint16	   *narrow = MemoryContextAllocHuge(CurrentMemoryContext,
													sizeof(uint16) * Max(nrows, 1));

		for (int64 r = 0; r < nrows; r++)
			narrow[r] = (uint16) codes[r];
		walk->codes[column] = narrow;
		walk->widths[column] = 2;
	}
	else
	{
		walk->codes[column] = (void *) codes;
		walk->widths[column] = 4;
	}
}

/* Order columns by distinct values, fewest first (ties: candidate order) */
static int
CompareByDistinct(const void *a, const void *b, void *arg)
{
	const int32 *ndistinct = (const int32 *) arg;
	int			x = *(const int *) a;
	int			y = *(const int *) b;

	if (ndistinct[x] != ndistinct[y])
		return ndistinct[x] < ndistinct[y] ? -1 : 1;
	return x < y ? -1 : (x > y);
}

/*
 * Visit every subset of the encoded columns of at most max_size columns, each
 * after all of its own subsets.  The walk numbers the columns by ascending
 * distinct count, so that a subset is refined from its parent without its
 * coarsest column (the parent with the fewest rows left in classes), and
 * visits subsets in increasing order of their bit masks in that numbering.
 * With need_partitions the visitor gets every subset's stripped partition,
 * valid only during the call; otherwise partition may be NULL.
 */
void
QidVisitSubsets(QidEncoded *enc, int max_size, bool need_partitions,
				QidSubsetVisitor visitor, void *arg, const char *funcname)
{
	MemoryContext work;
	MemoryContext old;
	Walk		walk;
	HASHCTL		ctl;
	int32		max_distinct = 1;
	int			depth;
	double		bytes;

	if (enc->ncolumns == 0)
		return;
	depth = Min(max_size, enc->ncolumns);
	for (int i = 0; i < enc->ncolumns; i++)
		max_distinct = Max(max_distinct, enc->ndistinct[i]);

	/* one partition per depth, a row buffer, and two arrays indexed by code */
	bytes = (double) enc->memory +
		(double) (depth * (enc->nrows + enc->nrows / 2 + 1) + enc->nrows) * sizeof(int32) +
		(double) enc->nrows * sizeof(uint16) * enc->ncolumns +
		2.0 * max_distinct * sizeof(int32);
	QidCheckSearchMemory(bytes, funcname, "The encoded columns and the partitions of the walk");

	work = AllocSetContextCreate(CurrentMemoryContext, "qidrisk lattice walk",
								 ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(work);
	memset(&walk, 0, sizeof(walk));
	walk.enc = enc;
	walk.max_size = depth;
	walk.nwords = (enc->ncolumns + 63) / 64;
	walk.counts = MemoryContextAllocHuge(work, sizeof(int32) * max_distinct);
	walk.slots = MemoryContextAllocHuge(work, sizeof(int32) * max_distinct);
	walk.scratch = MemoryContextAllocHuge(work, sizeof(int32) * Max(enc->nrows, 1));
	walk.levels = palloc0(sizeof(QidPartition) * depth);
	walk.level_identifier = palloc0(sizeof(bool) * depth);
	walk.level_materialized = palloc0(sizeof(bool) * depth);
	walk.need_partitions = need_partitions;
	walk.order = palloc(sizeof(int) * enc->ncolumns);
	for (int i = 0; i < enc->ncolumns; i++)
		walk.order[i] = i;
	qsort_arg(walk.order, enc->ncolumns, sizeof(int), CompareByDistinct, enc->ndistinct);
	walk.codes = palloc(sizeof(void *) * enc->ncolumns);
	walk.widths = palloc(sizeof(int) * enc->ncolumns);
	for (int i = 0; i < enc->ncolumns; i++)
		NarrowCodes(&walk, i);
	for (int d = 0; d < depth; d++)
	{
		walk.levels[d].rows = MemoryContextAllocHuge(work, sizeof(int32) * Max(enc->nrows, 1));
		walk.levels[d].ends = MemoryContextAllocHuge(work, sizeof(int32) * (enc->nrows / 2 + 1));
	}
	memset(walk.counts, 0, sizeof(int32) * max_distinct);
	walk.columns = palloc0(sizeof(int) * (depth + 1));
	walk.visible = palloc0(sizeof(int) * (depth + 1));
	walk.mask = palloc0(sizeof(uint64) * walk.nwords);
	walk.visitor = visitor;
	walk.arg = arg;
	walk.funcname = funcname;
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(uint64) * walk.nwords;
	ctl.entrysize = ctl.keysize;
	ctl.hcxt = work;
	walk.identifiers = hash_create("qidrisk identifiers", 256, &ctl,
								   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);

	for (int c = 0; c < enc->ncolumns; c++)
	{
		walk.columns[0] = c;
		walk.size = 1;
		walk.mask[c / 64] |= UINT64CONST(1) << (c % 64);
		ColumnPartition(&walk, c, &walk.levels[0]);
		walk.level_materialized[0] = true;
		walk.level_identifier[0] = (walk.levels[0].nclasses == 0 && enc->nrows > 0);
		VisitNode(&walk, 1);
		walk.mask[c / 64] &= ~(UINT64CONST(1) << (c % 64));
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(work);
}

/* ---- qid_search ---- */

/* One examined subset, kept for sorting */
typedef struct SearchResult
{
	int64		singletons;
	int64		classes;
	int32		size;
	int32		first;			/* where its columns start in the pool */
	bool		identifier;
	bool		minimal_identifier;
} SearchResult;

typedef struct SearchState
{
	MemoryContext context;		/* where the results live */
	SearchResult *results;
	int64		nresults;
	int64		capacity;
	int32	   *pool;			/* the results' column positions */
	int64		pool_used;
	int64		pool_capacity;
	bool		summary;		/* keep only minimal identifiers and the best */
	int64		best;			/* index of the best result so far, -1 */
	Size		base_memory;
	const char *funcname;
} SearchState;

/* Order results best first: most singletons, fewest columns, candidate order */
static int
CompareResults(const SearchResult *a, const SearchResult *b, const int32 *pool)
{
	if (a->singletons != b->singletons)
		return a->singletons > b->singletons ? -1 : 1;
	if (a->size != b->size)
		return a->size < b->size ? -1 : 1;
	for (int i = 0; i < a->size; i++)
	{
		int32		x = pool[a->first + i];
		int32		y = pool[b->first + i];

		if (x != y)
			return x < y ? -1 : 1;
	}
	return 0;
}

/* qsort_arg adapter of CompareResults */
static int
CompareResultsArg(const void *a, const void *b, void *arg)
{
	return CompareResults((const SearchResult *) a, (const SearchResult *) b,
						  (const int32 *) arg);
}

/* Append one result, its columns ascending */
static int64
AddResult(SearchState *state, const QidSubset *subset)
{
	SearchResult *result;

	if (state->nresults == state->capacity)
	{
		state->capacity = Max(64, state->capacity * 2);
		state->results = state->results == NULL ?
			MemoryContextAllocHuge(state->context, sizeof(SearchResult) * state->capacity) :
			repalloc_huge(state->results, sizeof(SearchResult) * state->capacity);
	}
	if (state->pool_used + subset->size > state->pool_capacity)
	{
		state->pool_capacity = Max(256, Max(state->pool_capacity * 2,
											state->pool_used + subset->size));
		state->pool = state->pool == NULL ?
			MemoryContextAllocHuge(state->context, sizeof(int32) * state->pool_capacity) :
			repalloc_huge(state->pool, sizeof(int32) * state->pool_capacity);
		QidCheckSearchMemory((double) state->base_memory +
						  (double) state->capacity * sizeof(SearchResult) +
						  (double) state->pool_capacity * sizeof(int32),
						  state->funcname, "The examined subsets and the encoded columns");
	}
	result = &state->results[state->nresults];
	result->singletons = subset->singletons;
	result->classes = subset->classes;
	result->size = subset->size;
	result->first = (int32) state->pool_used;
	result->identifier = subset->identifier;
	result->minimal_identifier = subset->minimal_identifier;
	for (int i = 0; i < subset->size; i++)
		state->pool[state->pool_used++] = subset->columns[i];
	return state->nresults++;
}

/* Whether a visited subset comes before a stored result in the output order */
static bool
SubsetBefore(const QidSubset *subset, const SearchResult *result, const int32 *pool)
{
	if (subset->singletons != result->singletons)
		return subset->singletons > result->singletons;
	if (subset->size != result->size)
		return subset->size < result->size;
	for (int i = 0; i < subset->size; i++)
	{
		if (subset->columns[i] != pool[result->first + i])
			return subset->columns[i] < pool[result->first + i];
	}
	return false;
}

/* Collect a visited subset: every one, or only the summary's */
static void
CollectSubset(const QidSubset *subset, void *arg)
{
	SearchState *state = (SearchState *) arg;
	bool		better;

	if (!state->summary)
	{
		AddResult(state, subset);
		return;
	}
	better = state->best < 0 ||
		SubsetBefore(subset, &state->results[state->best], state->pool);
	if (subset->minimal_identifier || better)
	{
		int64		index = AddResult(state, subset);

		/* a former best stays stored but is skipped on output */
		if (better)
			state->best = index;
	}
}

/* Lock the relation, resolve the candidate columns (NULL: every column), check access */
static QidRelation *
SearchColumns(Oid relid, ArrayType *array, const char *funcname)
{
	QidRelation *rel = QidRelationOpen(relid, NULL);

	if (array == NULL)
	{
		QidRelationEveryColumn(rel, funcname);
		QidRelationCheckSelect(rel, "qid_search without columns (NULL) reads every column of the table; pass the columns you may read.");
		return rel;
	}
	else
	{
		Datum	   *elems;
		bool	   *nulls;
		int			n;

		if (ARR_NDIM(array) > 1)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("%s needs a one-dimensional array of column names", funcname)));
		deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
		if (n == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s needs at least one candidate column", funcname),
					 errhint("Pass NULL to examine every column of the table.")));
		for (int i = 0; i < n; i++)
		{
			char	   *name;

			if (nulls[i])
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("%s: candidate column names must not be NULL", funcname)));
			name = TextDatumGetCString(elems[i]);
			for (int j = 0; j < rel->ncolumns; j++)
				if (strcmp(name, rel->names[j]) == 0)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("%s: column \"%s\" is listed twice", funcname, name),
							 errdetail("Each candidate column may appear once.")));
			QidRelationColumn(rel, name);
		}
		QidRelationCheckSelect(rel, "qid_search reads only the candidate columns; with columns NULL it reads every column.");
		return rel;
	}
}

/*
 * qid_search(rel, columns, max_size, drop_incomplete, summary): one row per
 * examined subset, best first.
 */
Datum
qidrisk_qid_search(PG_FUNCTION_ARGS)
{
	const char *funcname = "qid_search";
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext work;
	MemoryContext old;
	Oid			relid;
	QidRelation *rel;
	int			ncolumns;
	int			max_size;
	QidEncodeOptions options;
	QidEncoded *enc;
	SearchState state;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s needs a table", funcname)));
	relid = PG_GETARG_OID(0);
	if (!PG_ARGISNULL(2) && PG_GETARG_INT32(2) < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_size must be at least 1, not %d", PG_GETARG_INT32(2))));
	if (PG_ARGISNULL(3) || PG_ARGISNULL(4))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s: drop_incomplete and summary must not be NULL", funcname)));
	memset(&options, 0, sizeof(options));
	options.drop_incomplete = PG_GETARG_BOOL(3);

	InitMaterializedSRF(fcinfo, 0);

	work = AllocSetContextCreate(CurrentMemoryContext, "qid_search", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(work);
	rel = SearchColumns(relid, PG_ARGISNULL(1) ? NULL : PG_GETARG_ARRAYTYPE_P(1), funcname);
	ncolumns = rel->ncolumns;
	max_size = PG_ARGISNULL(2) ? ncolumns : Min(PG_GETARG_INT32(2), ncolumns);

	enc = QidEncodeRelation(rel, &options, funcname);

	memset(&state, 0, sizeof(state));
	state.context = work;
	state.summary = PG_GETARG_BOOL(4);
	state.best = -1;
	state.base_memory = enc->memory;
	state.funcname = funcname;
	QidVisitSubsets(enc, max_size, false, CollectSubset, &state, funcname);

	qsort_arg(state.results, state.nresults, sizeof(SearchResult), CompareResultsArg, state.pool);

	for (int64 i = 0; i < state.nresults; i++)
	{
		SearchResult *result = &state.results[i];
		Datum		values[10];
		bool		nulls[10] = {false};
		Datum	   *elems = palloc(sizeof(Datum) * result->size);

		/* sorted, the best comes first; superseded bests follow it */
		if (state.summary && !result->minimal_identifier && i != 0)
			continue;
		for (int k = 0; k < result->size; k++)
			elems[k] = CStringGetTextDatum(enc->names[state.pool[result->first + k]]);
		values[0] = PointerGetDatum(construct_array(elems, result->size, TEXTOID, -1, false,
													TYPALIGN_INT));
		values[1] = Int32GetDatum(result->size);
		values[2] = Int64GetDatum(result->singletons);
		if (enc->nrows > 0)
			values[3] = Float8GetDatum((double) result->singletons / (double) enc->nrows);
		else
			nulls[3] = true;
		values[4] = Int64GetDatum(result->classes);
		values[5] = BoolGetDatum(result->identifier);
		values[6] = BoolGetDatum(result->minimal_identifier);
		values[7] = BoolGetDatum(i == 0);
		values[8] = Int64GetDatum(enc->nrows);
		values[9] = Int64GetDatum(enc->dropped);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		if ((i & 0x3FF) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(work);
	return (Datum) 0;
}
