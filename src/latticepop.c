/*
 * latticepop.c
 *	  A population table, for k_map against it and delta_presence: read
 *	  as the caller into the quasi-identifiers' dictionaries and counted per
 *	  distinct tuple of level-0 codes, then generalized to each evaluated
 *	  node's levels, where each class of the table is judged by its
 *	  population rows.
 */
#include "postgres.h"

#include <math.h>

#include "lattice.h"


/* ---- a population table: k-map against it, delta-presence ---- */

/* An empty index of tuples of width codes */
TupleIndex *
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

		probe[i] = QidValueDictCode(&col->dict, values[i], nulls[i], reader->keep, &isnew);
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
void
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
void
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
void
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
bool
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
