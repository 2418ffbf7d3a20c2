/*
 * latticeoptions.c
 *	  qid_lattice's arguments: k, suppression, l, t, metric, evaluate,
 *	  search, the loss metric's gs_factor and weights, the privacy object's
 *	  models and their settings, the quasi-identifier columns (resolved
 *	  through relreader.c), and the names of tables qid_anonymize_into's body
 *	  resolves with the caller's search_path.
 */
#include "postgres.h"

#include <math.h>

#include "lattice.h"

PG_FUNCTION_INFO_V1(qidrisk_privacy_class_size);

/* The key of the hashes that place labels, tuples and class keys: qid_lattice draws it per call */
LAT_PRIVATE uint64 lattice_hash_seed;


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

/* The text of a jsonb string value, or NULL when v is not a string */
char *
JsonbStringValue(JsonbValue *v)
{
	if (v == NULL || v->type != jbvString)
		return NULL;
	return pnstrdup(v->val.string.val, v->val.string.len);
}

/* Find a key in a jsonb object */
JsonbValue *
JsonbGet(JsonbContainer *container, const char *key)
{
	JsonbValue	k;

	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	return findJsonbValueFromContainer(container, JB_FOBJECT, &k);
}

/* How a message names the json type of v */
const char *
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
void
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
void
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

/*
 * qid_lattice's models and options from its arguments (the relation and its
 * columns come after): k, suppression, l, t, metric, evaluate, search,
 * privacy; *sensitive gets sensitive_column (NULL without one)
 */
void
ParseModels(Lattice *lat, FunctionCallInfo fcinfo, double *max_suppressed, char **sensitive)
{
	static const char *const l_models[] = {"distinct", "entropy", "recursive"};
	static const char *const distances[] = {"equal", "ordered"};
	static const char *const metrics[] = {"height", "precision", "discernibility", "entropy", "suppressed", "loss"};
	static const char *const evaluates[] = {"tagged", "anonymous", "all", "best"};
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
	lat->evaluate = (Evaluate) ParseOption(PG_GETARG_TEXT_PP(12), "evaluate", evaluates, 4, lat->funcname);
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
void
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
