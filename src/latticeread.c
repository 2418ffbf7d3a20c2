/*
 * latticeread.c
 *	  Reading the table once, as the caller, through relreader.c: each
 *	  column's values as dense level-0 codes (equal under the type's
 *	  equality), their hierarchy rows, the sensitive value's rank; then each
 *	  level's codes, counts, entropy and the loss metric's shares.
 */
#include "postgres.h"

#include <math.h>

#include "lattice.h"


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
RankSensitive(Lattice *lat, QidValueDict *dict)
{
	int32		n = dict->ndistinct;
	int32	   *rank = palloc(sizeof(int32) * Max(n, 1));
	int64	   *count = palloc0(sizeof(int64) * Max(n, 1));

	lat->nsens = n;
	if (lat->ordered)
	{
		SensValue  *order = palloc(sizeof(SensValue) * Max(n, 1));
		Datum	   *values = palloc(sizeof(Datum) * Max(n, 1));
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
		QidValueDictValues(dict, values);
		for (int32 c = 0; c < n; c++)
		{
			order[c].isnull = c == dict->null_code;
			order[c].value = order[c].isnull ? (Datum) 0 : values[c];
			order[c].code = c;
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
	QidValueDict sens_dict;
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

		QidValueDictInit(&lat->columns[i].dict, att->atttypid, att->attcollation,
						 lat->columns[i].name, lat->funcname, CurrentMemoryContext);
		st->text_att[i] = lat->columns[i].hrows > 0 && !st->from_value[i] ? natts++ : -1;
		st->text_once[i] = TextFollowsEquality(att->atttypid, att->attcollation);
	}
	if (st->has_sensitive)
	{
		Form_pg_attribute att = TupleDescAttr(desc, lat->ncolumns);

		st->sens_att = lat->ncolumns;
		QidValueDictInit(&st->sens_dict, att->atttypid, att->attcollation,
						 st->sensitive, lat->funcname, CurrentMemoryContext);
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
	/* one cache line holds a row's codes, so a random row costs one miss */
	lat->rowcodes = lat->rowcodes == NULL ?
		MemoryContextAllocHuge(st->keep, sizeof(int32) * newcap * Max(ncol, 1)) :
		repalloc_huge(lat->rowcodes, sizeof(int32) * newcap * Max(ncol, 1));
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
		bytes += (double) lat->columns[i].dict.table->size * sizeof(QidValueDictEntry) +
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
	int32	   *row;

	if (lat->nrows == st->capacity)
		EncodeGrow(st);
	row = lat->rowcodes + (Size) lat->nrows * lat->ncolumns;
	for (int i = 0; i < lat->ncolumns; i++)
	{
		LatColumn  *col = &lat->columns[i];
		int32		code = QidValueDictCode(&col->dict, values[i], nulls[i], st->keep, &isnew);
		int			t = st->text_att[i];

		row[i] = code;
		if (t >= 0 && (isnew || !st->text_once[i]))
			HierarchyRow(lat, col, code, isnew, values[t], nulls[t]);
		else if (st->from_value[i] && isnew)
			HierarchyRow(lat, col, code, isnew,
						 nulls[i] ? (Datum) 0 : ValueText(&col->dict, values[i]), nulls[i]);
	}
	if (st->has_sensitive)
		lat->sens[lat->nrows] = QidValueDictCode(&st->sens_dict, values[st->sens_att], nulls[st->sens_att],
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
void
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

/*
 * The bits of each column's level-0 codes in one 64-bit word, when they fit:
 * snapshots then carry their items' codes in item order rather than reading
 * each item's row at random
 */
static void
PackLayout(Lattice *lat)
{
	int			bits = 0;

	/* rows whose codes the cache holds are read at random cheaply: copying codes costs more */
	if ((double) lat->nrows * lat->ncolumns * sizeof(int32) < LATTICE_PACK_MIN_BYTES)
		return;

	lat->pack_shift = palloc(sizeof(int) * Max(lat->ncolumns, 1));
	lat->pack_mask = palloc(sizeof(uint64) * Max(lat->ncolumns, 1));
	for (int i = 0; i < lat->ncolumns; i++)
	{
		int			width = 0;

		while (width < 32 && ((int64) 1 << width) < lat->columns[i].ndist[0])
			width++;
		lat->pack_shift[i] = width > 0 ? bits : 0;
		lat->pack_mask[i] = ((uint64) 1 << width) - 1;
		bits += width;
	}
	if (bits > 64)
	{
		pfree(lat->pack_shift);
		pfree(lat->pack_mask);
		lat->pack_shift = NULL;
		lat->pack_mask = NULL;
	}
}

/* Per column and level: codes of the level-0 values, counts, log2 counts */
void
PrepareLevels(Lattice *lat)
{
	int			ncol = lat->ncolumns;
	int64	  **counts0 = palloc(sizeof(int64 *) * Max(ncol, 1));

	if (lat->rowcodes == NULL)	/* no row read */
		lat->rowcodes = palloc(sizeof(int32) * Max(ncol, 1));
	/* each level-0 value's rows, every column in one pass over the rows */
	for (int i = 0; i < ncol; i++)
		counts0[i] = palloc0(sizeof(int64) * Max(lat->columns[i].dict.ndistinct, 1));
	for (int64 r = 0; r < lat->nrows; r++)
	{
		const int32 *row = lat->rowcodes + r * ncol;

		for (int i = 0; i < ncol; i++)
			counts0[i][row[i]]++;
	}
	for (int i = 0; i < lat->ncolumns; i++)
	{
		LatColumn  *col = &lat->columns[i];
		int32		n0 = col->dict.ndistinct;
		int64	   *count0 = counts0[i];

		if (col->hrows == 0)
			col->height = 0;
		col->map = palloc0(sizeof(int32 *) * (col->height + 1));
		col->ndist = palloc0(sizeof(int32) * (col->height + 1));
		col->log2count = palloc0(sizeof(double *) * (col->height + 1));
		col->entropy = palloc0(sizeof(double) * (col->height + 1));
		col->ndist[0] = n0;
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
	PackLayout(lat);
}
