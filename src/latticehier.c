/*
 * latticehier.c
 *	  A quasi-identifier's hierarchy: its layout (an ARX table, child and
 *	  parent columns, widths or cuts), read through hierarchy_levels or
 *	  interval_hierarchy, checked (one row per value, as many levels in each,
 *	  nested levels), and a value's hierarchy row while the table is read;
 *	  the names of tables qid_anonymize_into's body resolves with the
 *	  caller's search_path.
 */
#include "postgres.h"

#include <math.h>

#include "lattice.h"

PG_FUNCTION_INFO_V1(qidrisk_qualified_table);
PG_FUNCTION_INFO_V1(qidrisk_qualified_new_table);
PG_FUNCTION_INFO_V1(qidrisk_qualified_privacy);


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
void
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
bool
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
bool
TextFromValue(const QidRelation *rel, int column)
{
	Oid			type = rel->types[column];

	return type != BOOLOID && TextFollowsEquality(type, rel->collations[column]);
}

/* The text of a value whose text is its cast: itself (text, varchar) or its output */
Datum
ValueText(const QidValueDict *dict, Datum value)
{
	Oid			output;
	bool		isvarlena;

	if (dict->type == TEXTOID || dict->type == VARCHAROID)
		return value;
	getTypeOutputInfo(dict->type, &output, &isvarlena);
	return CStringGetTextDatum(OidOutputFunctionCall(output, value));
}

/* Map a row's value text to its hierarchy row, checking equal values agree */
void
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

/* The hierarchies object: its keys must be quasi-identifier columns */
void
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
