/*
 * qar.c
 *	  QaR (Béra et al. 2023): the thetas of every p-column subset of a table,
 *	  the dataset risk T(p, alpha), and per-record contributions: U+ scores,
 *	  exact contributions, record entropies and greedy removal.
 *
 * The table is read once through SPI as the caller (privileges and row-level
 * security apply), in key order.  Each candidate column's values are numbered
 * through a hash table on the type's hash and equality functions, then
 * renumbered by the type's default ordering (NULL one more value, ranked
 * last): equal values share a code and codes keep the column's order, which
 * the record entropy needs.  The codes go to the quasi-identifier search
 * engine (qidsearch.c), whose lattice walk refines stripped partitions; an
 * adapter turns each p-subset's partition into a class per row and ranks the
 * subset lexicographically.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/float.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "gpd.h"
#include "qidrisk.h"
#include "qidsearch.h"
#include "quantile.h"
#include "relreader.h"
#include "settings.h"

PG_FUNCTION_INFO_V1(qar_thetas);
PG_FUNCTION_INFO_V1(qar_risk);
PG_FUNCTION_INFO_V1(qar_record_scores);
PG_FUNCTION_INFO_V1(qar_record_contributions);
PG_FUNCTION_INFO_V1(qar_record_entropy);
PG_FUNCTION_INFO_V1(qar_greedy_removal);

/* Rows fetched from the cursor at a time */
#define QAR_FETCH_ROWS 10000
/* Most subsets a call may enumerate */
#define QAR_MAX_SUBSETS 10000000.0

/* A table's candidate columns as dense ranks, and its rows' keys */
typedef struct QarTable
{
	int			nrows;			/* L */
	int			ncolumns;		/* N */
	char	  **names;			/* candidate column names */
	int32	  **codes;			/* codes[column][row], 0-based dense ranks */
	int32	   *ndistinct;		/* distinct values per column */
	char	  **keys;			/* key text per row, NULL for a NULL key */
	int			p;				/* subset size */
	int64		nsubsets;		/* N_p = C(N, p) */
	double		nvisited;		/* subsets the walk visits, every size up to p */
} QarTable;

/* The partition of one subset, as the enumeration hands it over */
typedef struct QarSubset
{
	int64		index;			/* position in lexicographic order */
	const int  *columns;		/* p candidate positions, ascending */
	const int32 *cls;			/* class id per row, 0 .. nclasses - 1 */
	int			nclasses;		/* H */
	const int32 *sizes;			/* rows per class */
	int			singletons;		/* rows unique on the subset */
} QarSubset;

typedef void (*QarVisitor) (const QarTable *table, const QarSubset *subset, void *arg);

/* Raise the memory error that names qidrisk.max_state_memory */
static void
QarCheckMemory(double bytes, const char *funcname)
{
	if (bytes > (double) QidStateMemoryBudget())
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s needs %.0f kB, more than qidrisk.max_state_memory allows",
						funcname, bytes / 1024.0),
				 errhint("Raise qidrisk.max_state_memory (or work_mem), use fewer columns or a smaller p.")));
}

/* C(n, k) as a double */
static double
QarBinomial(int n, int k)
{
	double		c = 1.0;

	for (int i = 1; i <= k; i++)
		c = c * (n - k + i) / i;
	return round(c);
}

/* Check an argument is not NULL */
static void
QarNotNull(FunctionCallInfo fcinfo, int argno, const char *name)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be NULL", name)));
}

/* What a walk's bound needs to know to refuse a table while it is read */
typedef struct QarWork
{
	const char *funcname;
	int			ncolumns;		/* N */
	int			p;
	double		nvisited;		/* subsets the walk visits, every size up to p */
	bool		bounded;		/* the reader's row limit is qidrisk.qar_max_work's */
} QarWork;

/* Hint shared by the refusals of a walk's size */
static int
QarWorkHint(void)
{
	return errhint("Use a smaller p or fewer columns, or raise qidrisk.qar_max_work if you accept the running time.");
}

/*
 * Refuse a walk whose subsets times rows pass qidrisk.qar_max_work: rows is
 * a lower bound (those read so far), 0 before any is read.
 */
static void
QarWorkError(int64 rows, void *arg)
{
	const QarWork *w = arg;
	double		bound = qidrisk_qar_max_work;

	if (rows == 0)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s would visit %.0f subsets, more than qidrisk.qar_max_work allows even for one row",
						w->funcname, w->nvisited),
				 errdetail("It visits every subset of at most %d of the %d columns and reads every row for each: %.0f row visits for one row, more than the bound of %.0f.",
						   w->p, w->ncolumns, w->nvisited, bound),
				 QarWorkHint()));
	if (w->bounded)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s would read " INT64_FORMAT " rows or more in each of %.0f subsets, more than qidrisk.qar_max_work allows",
						w->funcname, rows, w->nvisited),
				 errdetail("It visits every subset of at most %d of the %d columns and reads every row for each: at least %.0f row visits, more than the bound of %.0f, which allows at most %.0f rows here.",
						   w->p, w->ncolumns, (double) rows * w->nvisited, bound,
						   floor(bound / w->nvisited)),
				 QarWorkHint()));
}

/*
 * Check the subsets a walk to the C(n, p) p-subsets visits, and return the
 * most rows qidrisk.qar_max_work lets it read (the walk reads every row for
 * each subset); refuse at once when not one row fits.
 */
static double
QarBoundWalk(const char *funcname, int n, int p, double nsubsets, QarWork *work)
{
	double		nvisited = 0;
	double		max_rows;

	if (nsubsets > QAR_MAX_SUBSETS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s would enumerate %.0f subsets, more than %.0f", funcname,
						nsubsets, QAR_MAX_SUBSETS),
				 errhint("Use fewer columns or a p further from half their number.")));
	/* the lattice walk visits every subset of at most p columns on the way */
	for (int k = 1; k <= p; k++)
		nvisited += QarBinomial(n, k);
	if (nvisited > QAR_MAX_SUBSETS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s would visit %.0f subsets of at most %d columns, more than the limit of %.0f",
						funcname, nvisited, p, QAR_MAX_SUBSETS),
				 errdetail("The %.0f subsets of %d columns are reached through every smaller subset.",
						   nsubsets, p),
				 errhint("Use fewer columns or a smaller p.")));
	work->funcname = funcname;
	work->ncolumns = n;
	work->p = p;
	work->nvisited = nvisited;
	work->bounded = true;
	max_rows = floor(qidrisk_qar_max_work / nvisited);
	if (max_rows < 1)
		QarWorkError(0, work);
	return max_rows;
}

/*
 * Refuse, before the walk, a call whose walk (nvisited x rows) and own work
 * (extra, what it is) pass qidrisk.qar_max_work.
 */
static void
QarCheckWork(const QarTable *t, const char *funcname, double extra, const char *what)
{
	double		walk = t->nvisited * t->nrows;

	if (walk + extra > qidrisk_qar_max_work)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s would do about %.0f steps of work on %d rows, more than qidrisk.qar_max_work allows",
						funcname, walk + extra, t->nrows),
				 errdetail("Its walk visits %.0f subsets of at most %d of the %d columns and reads every row for each (%.0f row visits); %s, about %.0f more steps. The bound is %.0f.",
						   t->nvisited, t->p, t->ncolumns, walk, what, extra,
						   qidrisk_qar_max_work),
				 QarWorkHint()));
}

/* About n log2 n, the comparisons of a sort of n values, as a whole number */
static double
QarSortSteps(double n)
{
	return n * ceil(log2(n + 1.0));
}

/*
 * Read the arguments (rel, columns, p[, key]) and the table through the
 * relation reader (relreader.c): the relation is locked before its columns
 * are resolved, and read once through a cursor, as the caller, in key order.
 * key_arg < 0 means no key argument; a NULL key orders and names rows by
 * ctid.  Codes are dense ranks in each type's default ordering (NULL last).
 */
static QarTable *
QarLoad(FunctionCallInfo fcinfo, int key_arg, const char *funcname)
{
	ArrayType  *array;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			p;
	char	   *key = NULL;
	QarTable   *table = palloc0(sizeof(QarTable));
	QidRelation *rel;
	QidEncodeOptions options;
	QidEncoded *enc;
	double		nsubsets;
	double		max_rows;
	QarWork		work;

	QarNotNull(fcinfo, 0, "rel");
	QarNotNull(fcinfo, 1, "candidates");
	QarNotNull(fcinfo, 2, "p");
	array = PG_GETARG_ARRAYTYPE_P(1);
	p = PG_GETARG_INT32(2);
	if (key_arg >= 0 && !PG_ARGISNULL(key_arg))
		key = text_to_cstring(PG_GETARG_TEXT_PP(key_arg));

	rel = QidRelationOpen(PG_GETARG_OID(0), NULL);
	if (ARR_NDIM(array) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("candidates must be a one-dimensional array")));
	deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	if (n < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s needs at least one column", funcname)));
	for (int i = 0; i < n; i++)
	{
		char	   *name;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("candidates must not contain NULL")));
		name = TextDatumGetCString(elems[i]);
		for (int k = 0; k < i; k++)
			if (strcmp(rel->names[k], name) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("column \"%s\" appears twice in candidates", name)));
		QidRelationColumn(rel, name);
		/* an ordered, hashable type, before any row is read */
		(void) ValueTypeGet(CurrentMemoryContext, getBaseType(rel->types[i]),
							rel->collations[i], funcname);
	}
	if (key != NULL)
		QidRelationColumn(rel, key);
	if (p < 1 || p > n)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("p must lie between 1 and the number of columns (%d), not %d", n, p)));
	nsubsets = QarBinomial(n, p);
	max_rows = QarBoundWalk(funcname, n, p, nsubsets, &work);
	if (key_arg >= 0 && key == NULL && rel->relkind != RELKIND_RELATION &&
		rel->relkind != RELKIND_MATVIEW && rel->relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("%s needs key_column for %s, which has no ctid", funcname, rel->relname),
				 errhint("Pass the name of a column that identifies the rows.")));
	QidRelationCheckSelect(rel, NULL);
	/* the key column was checked with the others; only the QID is encoded */
	rel->ncolumns = n;

	memset(&options, 0, sizeof(options));
	options.rank = true;
	options.keys = key_arg >= 0;
	options.key = key;
	options.max_rows = (int64) Min(max_rows, (double) (PG_INT32_MAX / 2 - 1));
	/* refuse as soon as the rows read put the walk past qidrisk.qar_max_work */
	work.bounded = max_rows <= PG_INT32_MAX / 2 - 1;
	options.too_many_rows = QarWorkError;
	options.too_many_rows_arg = &work;
	enc = QidEncodeRelation(rel, &options, funcname);
	if (enc->nrows == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s needs a table with at least one row; %s has none", funcname,
						rel->relname)));

	table->nrows = (int) enc->nrows;
	table->ncolumns = n;
	table->names = enc->names;
	table->codes = enc->codes;
	table->ndistinct = enc->ndistinct;
	table->keys = enc->keys;
	table->p = p;
	table->nsubsets = (int64) nsubsets;
	table->nvisited = work.nvisited;
	return table;
}

/* What the adapter from the engine's subsets to QarSubset keeps between calls */
typedef struct QarWalk
{
	const QarTable *table;
	QarVisitor	visitor;
	void	   *arg;
	int32	   *cls;			/* class per row of the current subset */
	int32	   *sizes;			/* rows per class */
	int64	   *binomial;		/* binomial[n * (p + 1) + k] = C(n, k) */
} QarWalk;

/* Lexicographic rank of p ascending column positions among the C(N, p) subsets */
static int64
QarSubsetRank(const QarWalk *w, const int *columns)
{
	int			n = w->table->ncolumns;
	int			p = w->table->p;
	int64		rank = 0;
	int			prev = -1;

	for (int k = 0; k < p; k++)
	{
		/* subsets whose k-th column lies between the previous one and this one */
		for (int v = prev + 1; v < columns[k]; v++)
			rank += w->binomial[(n - 1 - v) * (p + 1) + (p - 1 - k)];
		prev = columns[k];
	}
	return rank;
}

/*
 * Turn one of the engine's stripped partitions (classes of two rows or
 * more; every other row alone) into a class per row, for p-subsets only.
 */
static void
QarFromEngine(const QidSubset *subset, void *arg)
{
	QarWalk    *w = arg;
	const QarTable *t = w->table;
	const QidPartition *part = subset->partition;
	QarSubset	s;
	int			next = 0;

	if (subset->size != t->p)
		return;
	CHECK_FOR_INTERRUPTS();
	for (int i = 0; i < t->nrows; i++)
		w->cls[i] = -1;
	if (!subset->identifier && part != NULL)
	{
		int64		start = 0;

		for (int64 c = 0; c < part->nclasses; c++)
		{
			for (int64 k = start; k < part->ends[c]; k++)
				w->cls[part->rows[k]] = next;
			w->sizes[next++] = (int32) (part->ends[c] - start);
			start = part->ends[c];
		}
	}
	for (int i = 0; i < t->nrows; i++)
		if (w->cls[i] < 0)
		{
			w->cls[i] = next;
			w->sizes[next++] = 1;
		}
	Assert(next == subset->classes);

	s.index = QarSubsetRank(w, subset->columns);
	s.columns = subset->columns;
	s.cls = w->cls;
	s.nclasses = next;
	s.sizes = w->sizes;
	s.singletons = (int) subset->singletons;
	w->visitor(t, &s, w->arg);
}

/*
 * Hand every p-subset's partition to visitor, through the quasi-identifier
 * search engine's lattice walk (qidsearch.c) over the table's codes.
 */
static void
QarVisitSubsets(const QarTable *t, QarVisitor visitor, void *arg, const char *funcname)
{
	QidEncoded	enc;
	QarWalk		w;
	int			n = t->ncolumns;
	int			p = t->p;

	memset(&enc, 0, sizeof(enc));
	enc.nrows = t->nrows;
	enc.ncolumns = n;
	enc.names = t->names;
	enc.codes = t->codes;
	enc.ndistinct = t->ndistinct;
	enc.memory = (Size) t->nrows * n * sizeof(int32);

	QarCheckMemory((double) t->nrows * 8, funcname);
	w.table = t;
	w.visitor = visitor;
	w.arg = arg;
	w.cls = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int32) * t->nrows);
	w.sizes = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int32) * t->nrows);
	w.binomial = palloc0(sizeof(int64) * (n + 1) * (p + 1));
	for (int i = 0; i <= n; i++)
		for (int k = 0; k <= Min(i, p); k++)
			w.binomial[i * (p + 1) + k] = (int64) QarBinomial(i, k);

	QidVisitSubsets(&enc, p, true, QarFromEngine, &w, funcname);

	pfree(w.cls);
	pfree(w.sizes);
	pfree(w.binomial);
}

/* ---- thetas and the dataset risk ---- */

/* Thetas and class counts of every subset, by lexicographic index */
typedef struct QarThetas
{
	double	   *theta;
	int32	   *classes;
	int32	   *singletons;
} QarThetas;

/* Record one subset's theta */
static void
QarCollectTheta(const QarTable *t, const QarSubset *s, void *arg)
{
	QarThetas  *th = arg;

	th->theta[s->index] = (double) s->nclasses / t->nrows;
	th->classes[s->index] = s->nclasses;
	th->singletons[s->index] = s->singletons;
}

/* Thetas of every subset of a loaded table */
static QarThetas *
QarComputeThetas(const QarTable *t, const char *funcname)
{
	QarThetas  *th = palloc(sizeof(QarThetas));

	th->theta = palloc(sizeof(double) * t->nsubsets);
	th->classes = palloc(sizeof(int32) * t->nsubsets);
	th->singletons = palloc(sizeof(int32) * t->nsubsets);
	QarVisitSubsets(t, QarCollectTheta, th, funcname);
	return th;
}

/* Read alpha and pi_u arguments, checked */
static void
QarProbabilityArgs(FunctionCallInfo fcinfo, int argno, double *alpha, double *pi_u)
{
	QarNotNull(fcinfo, argno, "alpha");
	QarNotNull(fcinfo, argno + 1, "pi_u");
	*alpha = PG_GETARG_FLOAT8(argno);
	*pi_u = PG_GETARG_FLOAT8(argno + 1);
	QarCheckProbabilities(*alpha, *pi_u);
}

/* Risk of thetas H/rows (copied and sorted), false when undefined */
static bool
QarRiskOf(const double *theta, int64 n, int64 rows, double alpha, double pi_u,
		  double *scratch, QarRisk *risk, const char **reason)
{
	memcpy(scratch, theta, sizeof(double) * n);
	QarSortDoubles(scratch, n);
	return QarRiskFromSorted(scratch, n, alpha, pi_u, rows, risk, reason);
}

/* The column names of subset s as a text[] */
static Datum
QarSubsetNames(const QarTable *t, const int *columns)
{
	Datum	   *names = palloc(sizeof(Datum) * t->p);

	for (int k = 0; k < t->p; k++)
		names[k] = CStringGetTextDatum(t->names[columns[k]]);
	return PointerGetDatum(construct_array(names, t->p, TEXTOID, -1, false, TYPALIGN_INT));
}

/* qar_thetas(rel, columns, p) -> (columns, theta, classes, singletons), lexicographic */
Datum
qar_thetas(PG_FUNCTION_ARGS)
{
	QarTable   *t = QarLoad(fcinfo, -1, "qar_thetas");
	QarThetas  *th = QarComputeThetas(t, "qar_thetas");
	ReturnSetInfo *rsinfo;
	int		   *idx = palloc(sizeof(int) * t->p);

	InitMaterializedSRF(fcinfo, 0);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	for (int d = 0; d < t->p; d++)
		idx[d] = d;
	for (int64 j = 0; j < t->nsubsets; j++)
	{
		Datum		values[4];
		bool		nulls[4] = {false};
		int			from;

		values[0] = QarSubsetNames(t, idx);
		values[1] = Float8GetDatum(th->theta[j]);
		values[2] = Int64GetDatum(th->classes[j]);
		values[3] = Int64GetDatum(th->singletons[j]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);

		/* next combination: the rightmost position that can still move */
		from = t->p - 1;
		while (from >= 0 && idx[from] == t->ncolumns - t->p + from)
			from--;
		if (from < 0)
			break;
		idx[from]++;
		for (int d = from + 1; d < t->p; d++)
			idx[d] = idx[d - 1] + 1;
	}
	return (Datum) 0;
}

/* qar_risk(rel, columns, p, alpha, pi_u) -> the risk and what lies behind it */
Datum
qar_risk(PG_FUNCTION_ARGS)
{
	double		alpha,
				pi_u;
	QarTable   *t;
	QarThetas  *th;
	QarRisk		risk;
	const char *reason;
	TupleDesc	tupdesc;
	double	   *scratch;

	QarProbabilityArgs(fcinfo, 3, &alpha, &pi_u);
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "qar_risk must return a composite type");
	t = QarLoad(fcinfo, -1, "qar_risk");
	th = QarComputeThetas(t, "qar_risk");
	scratch = palloc(sizeof(double) * t->nsubsets);
	if (!QarRiskOf(th->theta, t->nsubsets, t->nrows, alpha, pi_u, scratch, &risk, &reason))
		QarRiskError(&risk, reason, alpha, pi_u);
	PG_RETURN_DATUM(HeapTupleGetDatum(QarRiskTuple(BlessTupleDesc(tupdesc), &risk)));
}

/* ---- U+ scores ---- */

/* Per-row sums of H(j) over the subsets the row is unique on */
typedef struct QarScores
{
	int64	   *weight;			/* sum of H(j): U+ = weight / L */
	int32	   *unique;			/* subsets the row is unique on */
} QarScores;

/* Add one subset's H to the rows unique on it */
static void
QarAddScores(const QarTable *t, const QarSubset *s, void *arg)
{
	QarScores  *sc = arg;

	if (s->singletons == 0)
		return;
	for (int i = 0; i < t->nrows; i++)
		if (s->sizes[s->cls[i]] == 1)
		{
			sc->weight[i] += s->nclasses;
			sc->unique[i]++;
		}
}

/* Emit (key, value, ...) rows into the result tuplestore */
static void
QarPutRow(ReturnSetInfo *rsinfo, const char *key, Datum *values, bool *nulls)
{
	values[0] = key ? CStringGetTextDatum(key) : (Datum) 0;
	nulls[0] = key == NULL;
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* qar_record_scores(rel, columns, p, key) -> (key, u_plus, unique_subsets) */
Datum
qar_record_scores(PG_FUNCTION_ARGS)
{
	QarTable   *t = QarLoad(fcinfo, 3, "qar_record_scores");
	QarScores	sc;
	ReturnSetInfo *rsinfo;

	QarCheckMemory((double) t->nrows * 12, "qar_record_scores");
	sc.weight = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * t->nrows);
	sc.unique = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int32) * t->nrows);
	memset(sc.weight, 0, sizeof(int64) * t->nrows);
	memset(sc.unique, 0, sizeof(int32) * t->nrows);
	QarVisitSubsets(t, QarAddScores, &sc, "qar_record_scores");

	InitMaterializedSRF(fcinfo, 0);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	for (int i = 0; i < t->nrows; i++)
	{
		Datum		values[3];
		bool		nulls[3] = {false};

		values[1] = Float8GetDatum((double) sc.weight[i] / t->nrows);
		values[2] = Int32GetDatum(sc.unique[i]);
		QarPutRow(rsinfo, t->keys[i], values, nulls);
	}
	return (Datum) 0;
}

/* ---- exact contributions ---- */

/* Uniqueness bitmap U(i, j), row-major, and H(j) */
typedef struct QarUniqueness
{
	uint8	   *bits;			/* row i's bits start at i * stride */
	int64		stride;			/* bytes per row */
	int32	   *classes;		/* H(j) */
} QarUniqueness;

/* Record which rows are unique on one subset */
static void
QarMarkUnique(const QarTable *t, const QarSubset *s, void *arg)
{
	QarUniqueness *uq = arg;
	int64		j = s->index;

	uq->classes[j] = s->nclasses;
	if (s->singletons == 0)
		return;
	for (int i = 0; i < t->nrows; i++)
		if (s->sizes[s->cls[i]] == 1)
			uq->bits[i * uq->stride + j / 8] |= (uint8) (1 << (j % 8));
}

/* Check max_rows is given and positive, before the table is read */
static void
QarMaxRowsArg(FunctionCallInfo fcinfo, int argno)
{
	QarNotNull(fcinfo, argno, "max_rows");
	if (PG_GETARG_INT32(argno) < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_rows must be at least 1, not %d", PG_GETARG_INT32(argno))));
}

/* Check a table is within a function's max_rows argument */
static void
QarCheckMaxRows(FunctionCallInfo fcinfo, int argno, const QarTable *t, const char *funcname,
				const char *cost)
{
	int32		max_rows;

	QarNotNull(fcinfo, argno, "max_rows");
	max_rows = PG_GETARG_INT32(argno);
	if (t->nrows > max_rows)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s is limited to %d rows; the table has %d", funcname, max_rows, t->nrows),
				 errdetail("%s", cost),
				 errhint("Raise max_rows if you accept the running time, or use qar_record_scores (U+).")));
}

/*
 * qar_record_contributions(rel, columns, p, key, alpha, pi_u, max_rows)
 *   -> (key, contribution, risk_without): T - T(table without the row)
 */
Datum
qar_record_contributions(PG_FUNCTION_ARGS)
{
	double		alpha,
				pi_u;
	QarTable   *t;
	QarUniqueness uq;
	double	   *theta,
			   *scratch;
	QarRisk		full,
				without;
	const char *reason;
	ReturnSetInfo *rsinfo;
	int64		np;

	QarProbabilityArgs(fcinfo, 4, &alpha, &pi_u);
	QarMaxRowsArg(fcinfo, 6);
	t = QarLoad(fcinfo, 3, "qar_record_contributions");
	QarCheckMaxRows(fcinfo, 6, t, "qar_record_contributions",
					"It sorts the thetas and fits the tail once per row.");
	np = t->nsubsets;
	QarCheckWork(t, "qar_record_contributions", t->nrows * QarSortSteps(np),
				 psprintf("then it sorts the " INT64_FORMAT " thetas once per row", np));
	uq.stride = (np + 7) / 8;
	QarCheckMemory((double) uq.stride * t->nrows + np * 20.0, "qar_record_contributions");
	uq.bits = MemoryContextAllocHuge(CurrentMemoryContext, uq.stride * t->nrows);
	memset(uq.bits, 0, uq.stride * t->nrows);
	uq.classes = palloc(sizeof(int32) * np);
	QarVisitSubsets(t, QarMarkUnique, &uq, "qar_record_contributions");

	theta = palloc(sizeof(double) * np);
	scratch = palloc(sizeof(double) * np);
	for (int64 j = 0; j < np; j++)
		theta[j] = (double) uq.classes[j] / t->nrows;
	if (!QarRiskOf(theta, np, t->nrows, alpha, pi_u, scratch, &full, &reason))
		QarRiskError(&full, reason, alpha, pi_u);

	InitMaterializedSRF(fcinfo, 0);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	for (int i = 0; i < t->nrows; i++)
	{
		Datum		values[3];
		bool		nulls[3] = {false};
		const uint8 *row = uq.bits + i * uq.stride;
		int64		rest = t->nrows - 1;

		CHECK_FOR_INTERRUPTS();
		for (int64 j = 0; j < np; j++)
			scratch[j] = rest > 0 ?
				(double) (uq.classes[j] - ((row[j / 8] >> (j % 8)) & 1)) / rest : 0.0;
		QarSortDoubles(scratch, np);
		if (rest > 0 && QarRiskFromSorted(scratch, np, alpha, pi_u, rest, &without, &reason))
		{
			values[1] = Float8GetDatum(full.risk - without.risk);
			values[2] = Float8GetDatum(without.risk);
		}
		else
			nulls[1] = nulls[2] = true;
		QarPutRow(rsinfo, t->keys[i], values, nulls);
	}
	return (Datum) 0;
}

/* ---- record entropy ---- */

/* Bin counts of H(i, j) per row */
typedef struct QarEntropy
{
	int32	   *bins;			/* row i's counts start at i * nbins */
	int			nbins;			/* floor(sqrt(N_p)), at least 1 */
	int64	   *cdf;			/* scratch: F per class, in rows */
	int64	   *below;			/* scratch: rows r with F(r) <= F(class) */
	int32	   *first;			/* scratch: a row of each class */
	int32	   *order;			/* scratch: classes sorted by F */
	struct QarPoint *points;	/* scratch: classes as points (p <= 3) */
	struct QarPoint *scratch;	/* scratch: the halves being swept */
	int64	   *tree;			/* scratch: Fenwick tree over the last column */
} QarEntropy;

/* Compare classes by their F, for sorting */
static int
QarCompareCdf(const void *a, const void *b, void *arg)
{
	const int64 *cdf = arg;
	int64		x = cdf[*(const int32 *) a];
	int64		y = cdf[*(const int32 *) b];

	return (x > y) - (x < y);
}

/* A class as a point of up to three rank coordinates, for dominance counting */
typedef struct QarPoint
{
	int32		x,
				y,
				z;
	int32		cls;
	int64		weight;			/* rows in the class */
} QarPoint;

/* Order points by x, then y, then z */
static int
QarComparePointXyz(const void *a, const void *b)
{
	const QarPoint *p = a;
	const QarPoint *q = b;

	if (p->x != q->x)
		return p->x < q->x ? -1 : 1;
	if (p->y != q->y)
		return p->y < q->y ? -1 : 1;
	return (p->z > q->z) - (p->z < q->z);
}

/* Order points by y alone */
static int
QarComparePointY(const void *a, const void *b)
{
	const QarPoint *p = a;
	const QarPoint *q = b;

	return (p->y > q->y) - (p->y < q->y);
}

/* Add weight at position z (0-based) of a Fenwick tree of size n */
static inline void
QarFenwickAdd(int64 *tree, int n, int z, int64 weight)
{
	for (int i = z + 1; i <= n; i += i & (-i))
		tree[i] += weight;
}

/* Sum of a Fenwick tree's positions 0 .. z */
static inline int64
QarFenwickSum(const int64 *tree, int z)
{
	int64		sum = 0;

	for (int i = z + 1; i > 0; i -= i & (-i))
		sum += tree[i];
	return sum;
}

/*
 * Divide and conquer over points sorted by (x, y, z) (CDQ): every point of
 * the left half precedes every point of the right half in x, so a left point
 * dominates a right one when its y and z are not larger; those pairs are
 * counted by a sweep in y with a Fenwick tree over z.
 */
static void
QarDominanceSplit(QarPoint *pts, int lo, int hi, QarPoint *scratch, int64 *tree,
				  int nz, int64 *cdf)
{
	int			mid,
				nleft,
				nright,
				k = 0;
	QarPoint   *left,
			   *right;

	if (hi - lo < 2)
		return;
	CHECK_FOR_INTERRUPTS();
	mid = (lo + hi) / 2;
	QarDominanceSplit(pts, lo, mid, scratch, tree, nz, cdf);
	QarDominanceSplit(pts, mid, hi, scratch, tree, nz, cdf);

	nleft = mid - lo;
	nright = hi - mid;
	left = scratch + lo;
	right = scratch + mid;
	memcpy(left, pts + lo, sizeof(QarPoint) * nleft);
	memcpy(right, pts + mid, sizeof(QarPoint) * nright);
	qsort(left, nleft, sizeof(QarPoint), QarComparePointY);
	qsort(right, nright, sizeof(QarPoint), QarComparePointY);
	for (int r = 0; r < nright; r++)
	{
		while (k < nleft && left[k].y <= right[r].y)
		{
			QarFenwickAdd(tree, nz, left[k].z, left[k].weight);
			k++;
		}
		cdf[right[r].cls] += QarFenwickSum(tree, right[r].z);
	}
	for (int i = 0; i < k; i++)
		QarFenwickAdd(tree, nz, left[i].z, -left[i].weight);
}

/* F of every class of a subset of at most 3 columns, in O(H log^2 H) */
static void
QarDominance3(const QarTable *t, const QarSubset *s, QarEntropy *en)
{
	int			H = s->nclasses;
	int			nz = 1;
	QarPoint   *pts = en->points;

	for (int a = 0; a < H; a++)
	{
		int			r = en->first[a];

		pts[a].x = t->codes[s->columns[0]][r];
		pts[a].y = t->p > 1 ? t->codes[s->columns[1]][r] : 0;
		pts[a].z = t->p > 2 ? t->codes[s->columns[2]][r] : 0;
		pts[a].cls = a;
		pts[a].weight = s->sizes[a];
		/* a class dominates itself */
		en->cdf[a] = s->sizes[a];
	}
	if (t->p > 2)
		nz = t->ndistinct[s->columns[2]];
	memset(en->tree, 0, sizeof(int64) * (nz + 1));
	qsort(pts, H, sizeof(QarPoint), QarComparePointXyz);
	QarDominanceSplit(pts, 0, H, en->scratch, en->tree, nz, en->cdf);
}

/* F of every class by comparing all pairs of classes, for p > 3 */
static void
QarDominancePairs(const QarTable *t, const QarSubset *s, QarEntropy *en)
{
	int			H = s->nclasses;

	for (int a = 0; a < H; a++)
	{
		int			ra = en->first[a];
		int64		f = 0;

		CHECK_FOR_INTERRUPTS();
		for (int b = 0; b < H; b++)
		{
			int			rb = en->first[b];
			bool		dominated = true;

			for (int k = 0; k < t->p && dominated; k++)
			{
				const int32 *codes = t->codes[s->columns[k]];

				dominated = codes[rb] <= codes[ra];
			}
			if (dominated)
				f += s->sizes[b];
		}
		en->cdf[a] = f;
	}
}

/* Bin every row's H(i, j) for one subset */
static void
QarBinEntropy(const QarTable *t, const QarSubset *s, void *arg)
{
	QarEntropy *en = arg;
	int			H = s->nclasses;
	int			p = t->p;
	int64		L = t->nrows;
	int64		cum = 0;

	for (int c = 0; c < H; c++)
		en->first[c] = -1;
	for (int i = 0; i < t->nrows; i++)
		if (en->first[s->cls[i]] < 0)
			en->first[s->cls[i]] = i;

	/* F(a): rows whose every column ranks at or below class a's */
	if (p <= 3)
		QarDominance3(t, s, en);
	else
		QarDominancePairs(t, s, en);
	for (int a = 0; a < H; a++)
		en->order[a] = a;

	/* H(i, j) L: rows r with F(r) <= F(i), ties included */
	qsort_arg(en->order, H, sizeof(int32), QarCompareCdf, en->cdf);
	for (int k = 0; k < H;)
	{
		int			end = k;
		int64		group = 0;

		while (end < H && en->cdf[en->order[end]] == en->cdf[en->order[k]])
			group += s->sizes[en->order[end++]];
		cum += group;
		for (int m = k; m < end; m++)
			en->below[en->order[m]] = cum;
		k = end;
	}

	/* bin m (1-based) holds H in ((m - 1)/B, m/B]: m = ceil(below B / L) */
	for (int i = 0; i < t->nrows; i++)
	{
		int64		below = en->below[s->cls[i]];
		int64		m = (below * en->nbins + L - 1) / L;

		en->bins[(int64) i * en->nbins + (m - 1)]++;
	}
}

/* qar_record_entropy(rel, columns, p, key, max_rows) -> (key, entropy) */
Datum
qar_record_entropy(PG_FUNCTION_ARGS)
{
	QarTable   *t;
	QarEntropy	en;
	ReturnSetInfo *rsinfo;

	QarMaxRowsArg(fcinfo, 4);
	t = QarLoad(fcinfo, 3, "qar_record_entropy");
	QarCheckMaxRows(fcinfo, 4, t, "qar_record_entropy",
					"It compares every pair of distinct combinations when p > 3.");
	/* p > 3 compares every pair of combinations, at most the rows, p columns each */
	if (t->p > 3)
		QarCheckWork(t, "qar_record_entropy",
					 (double) t->nsubsets * t->p * t->nrows * t->nrows,
					 psprintf("with p > 3 it compares every pair of rows on each of the " INT64_FORMAT " subsets of %d columns",
							  t->nsubsets, t->p));
	else
		QarCheckWork(t, "qar_record_entropy",
					 (double) t->nsubsets * QarSortSteps(t->nrows) * ceil(log2(t->nrows + 1.0)),
					 psprintf("it counts dominance by divide and conquer (rows log^2 rows) on each of the " INT64_FORMAT " subsets",
							  t->nsubsets));
	en.nbins = Max(1, (int) floor(sqrt((double) t->nsubsets)));
	while ((int64) (en.nbins + 1) * (en.nbins + 1) <= t->nsubsets)
		en.nbins++;
	while ((int64) en.nbins * en.nbins > t->nsubsets)
		en.nbins--;
	{
		int32		maxd = 1;

		for (int c = 0; c < t->ncolumns; c++)
			maxd = Max(maxd, t->ndistinct[c]);
		QarCheckMemory((double) t->nrows * (en.nbins * 4 + 28 + 2 * sizeof(QarPoint)) +
					   (double) (maxd + 1) * 8, "qar_record_entropy");
		en.tree = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * (maxd + 1));
	}
	en.points = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(QarPoint) * t->nrows);
	en.scratch = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(QarPoint) * t->nrows);
	en.bins = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int32) * t->nrows * en.nbins);
	memset(en.bins, 0, sizeof(int32) * t->nrows * en.nbins);
	en.cdf = palloc(sizeof(int64) * t->nrows);
	en.below = palloc(sizeof(int64) * t->nrows);
	en.first = palloc(sizeof(int32) * t->nrows);
	en.order = palloc(sizeof(int32) * t->nrows);
	QarVisitSubsets(t, QarBinEntropy, &en, "qar_record_entropy");

	InitMaterializedSRF(fcinfo, 0);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	for (int i = 0; i < t->nrows; i++)
	{
		Datum		values[2];
		bool		nulls[2] = {false};
		double		e = 0.0;

		for (int m = 0; m < en.nbins; m++)
		{
			int32		c = en.bins[(int64) i * en.nbins + m];

			if (c > 0)
			{
				double		q = (double) c / t->nsubsets;

				e -= q * log(q);
			}
		}
		values[1] = Float8GetDatum(e);
		QarPutRow(rsinfo, t->keys[i], values, nulls);
	}
	return (Datum) 0;
}

/* ---- greedy removal ---- */

/*
 * Everything the removal keeps per subset: each row's class, the classes'
 * sizes and sums of member rows (so the survivor of a pair is known), and
 * the rows unique on the subset (removed rows are dropped lazily).
 */
typedef struct QarGreedy
{
	int64		nrows;
	int32	   *cls;			/* cls[j * L + i] */
	int64	   *class_start;	/* subset j's classes start here in size/sum */
	int32	   *size;
	int64	   *member_sum;
	int32	   *classes;		/* H(j) */
	int64	   *list_start;		/* subset j's unique rows: list[list_start[j] ..] */
	int32	   *list_len;
	int32	   *list;
	int64	   *weight;			/* sum of H(j) over subsets unique on */
	int64		steps;
	int64		next_class;		/* filling position while visiting */
	int64		next_list;
} QarGreedy;

/* Keep one subset's partition for the removal */
static void
QarKeepPartition(const QarTable *t, const QarSubset *s, void *arg)
{
	QarGreedy  *g = arg;
	int64		j = s->index;
	int64		L = t->nrows;
	int32	   *cls = g->cls + j * L;
	int64	   *sum;

	memcpy(cls, s->cls, sizeof(int32) * L);
	g->class_start[j] = g->next_class;
	g->classes[j] = s->nclasses;
	memcpy(g->size + g->next_class, s->sizes, sizeof(int32) * s->nclasses);
	sum = g->member_sum + g->next_class;
	memset(sum, 0, sizeof(int64) * s->nclasses);
	g->list_start[j] = g->next_list;
	g->list_len[j] = 0;
	for (int64 i = 0; i < L; i++)
	{
		sum[cls[i]] += i;
		if (s->sizes[cls[i]] == 1)
		{
			g->list[g->next_list + g->list_len[j]++] = (int32) i;
			g->weight[i] += s->nclasses;
		}
	}
	g->next_class += s->nclasses;
	g->next_list += s->singletons + Min(g->steps, L);
}

/* Count a subset's classes and singletons for the removal's allocation */
static void
QarSizePartition(const QarTable *t, const QarSubset *s, void *arg)
{
	int64	   *totals = arg;

	(void) t;
	totals[0] += s->nclasses;
	totals[1] += s->singletons;
}

/* Remove row r from every subset, updating H, sizes, uniqueness and weights */
static void
QarRemoveRow(QarGreedy *g, int64 np, int32 r, const bool *removed)
{
	int64		L = g->nrows;

	for (int64 j = 0; j < np; j++)
	{
		int32		c = g->cls[j * L + r];
		int64		at = g->class_start[j] + c;
		int32		left = --g->size[at];

		g->member_sum[at] -= r;
		if (left == 0)
		{
			/* r was unique: H(j) drops, every row unique on j loses one */
			int32	   *list = g->list + g->list_start[j];
			int32		kept = 0;

			g->classes[j]--;
			for (int32 k = 0; k < g->list_len[j]; k++)
			{
				int32		i = list[k];

				if (removed[i] || i == r)
					continue;
				g->weight[i]--;
				list[kept++] = i;
			}
			g->list_len[j] = kept;
		}
		else if (left == 1)
		{
			/* the other row of the pair becomes unique */
			int32		survivor = (int32) g->member_sum[at];

			g->weight[survivor] += g->classes[j];
			g->list[g->list_start[j] + g->list_len[j]++] = survivor;
		}
	}
}

/*
 * qar_greedy_removal(rel, columns, p, key, steps, alpha, pi_u)
 *   -> (step, key, u_plus, risk_after): step 0 is the table as it is
 */
Datum
qar_greedy_removal(PG_FUNCTION_ARGS)
{
	double		alpha,
				pi_u;
	QarTable   *t;
	QarGreedy	g;
	int64		totals[2] = {0, 0};
	int64		np,
				L;
	int32		steps;
	bool	   *removed;
	double	   *theta,
			   *scratch;
	ReturnSetInfo *rsinfo;
	double		bytes;

	QarNotNull(fcinfo, 4, "steps");
	QarProbabilityArgs(fcinfo, 5, &alpha, &pi_u);
	steps = PG_GETARG_INT32(4);
	if (steps < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("steps must not be negative")));
	t = QarLoad(fcinfo, 3, "qar_greedy_removal");
	L = t->nrows;
	np = t->nsubsets;
	if (steps > L - 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("steps must not exceed the rows minus one (%d), not %d",
						(int) (L - 1), steps)));

	QarCheckWork(t, "qar_greedy_removal",
				 t->nvisited * L + (steps + 1.0) * (QarSortSteps(np) + L),
				 psprintf("then it walks again and sorts the " INT64_FORMAT " thetas once per step", np));
	QarVisitSubsets(t, QarSizePartition, totals, "qar_greedy_removal");
	bytes = (double) np * L * 4 + totals[0] * 12.0 +
		(totals[1] + (double) np * Min(steps, L)) * 4 + L * 9.0 + np * 40.0;
	QarCheckMemory(bytes, "qar_greedy_removal");

	g.nrows = L;
	g.steps = steps;
	g.cls = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int32) * np * L);
	g.class_start = palloc(sizeof(int64) * np);
	g.size = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int32) * totals[0]);
	g.member_sum = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * totals[0]);
	g.classes = palloc(sizeof(int32) * np);
	g.list_start = palloc(sizeof(int64) * np);
	g.list_len = palloc(sizeof(int32) * np);
	g.list = MemoryContextAllocHuge(CurrentMemoryContext,
									sizeof(int32) * Max(1, totals[1] + np * Min(steps, L)));
	g.weight = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * L);
	memset(g.weight, 0, sizeof(int64) * L);
	g.next_class = 0;
	g.next_list = 0;
	QarVisitSubsets(t, QarKeepPartition, &g, "qar_greedy_removal");

	removed = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(bool) * L);
	memset(removed, 0, sizeof(bool) * L);
	theta = palloc(sizeof(double) * np);
	scratch = palloc(sizeof(double) * np);

	InitMaterializedSRF(fcinfo, 0);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	for (int32 step = 0; step <= steps; step++)
	{
		Datum		values[4];
		bool		nulls[4] = {false};
		int64		rows = L - step;
		QarRisk		risk;
		const char *reason;

		CHECK_FOR_INTERRUPTS();
		values[0] = Int32GetDatum(step);
		if (step == 0)
		{
			nulls[1] = nulls[2] = true;
		}
		else
		{
			/* the largest U+ among the rows left; ties go to the first key */
			int32		best = -1;

			for (int32 i = 0; i < L; i++)
				if (!removed[i] && (best < 0 || g.weight[i] > g.weight[best]))
					best = i;
			values[1] = t->keys[best] ? CStringGetTextDatum(t->keys[best]) : (Datum) 0;
			nulls[1] = t->keys[best] == NULL;
			values[2] = Float8GetDatum((double) g.weight[best] / (rows + 1));
			QarRemoveRow(&g, np, best, removed);
			removed[best] = true;
		}
		for (int64 j = 0; j < np; j++)
			theta[j] = (double) g.classes[j] / rows;
		if (QarRiskOf(theta, np, rows, alpha, pi_u, scratch, &risk, &reason))
			values[3] = Float8GetDatum(risk.risk);
		else
			nulls[3] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
