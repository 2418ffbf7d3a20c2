/*
 * anonymity.c
 *	  Probabilistic anonymity (Lodha & Thomas 2008, "Probabilistic Anonymity"): the bound on
 *	  the expected singleton fraction, the alpha-quasi-identifier test, the
 *	  number of partitions that give (1-beta, k)-anonymity, and the bucket
 *	  budget of each column.  All are pure functions of their arguments.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/float.h"

#include "qidrisk.h"

PG_FUNCTION_INFO_V1(qidrisk_singleton_fraction_bound);
PG_FUNCTION_INFO_V1(qidrisk_alpha_qid_threshold);
PG_FUNCTION_INFO_V1(qidrisk_alpha_qid_possible);
PG_FUNCTION_INFO_V1(qidrisk_anonymity_partitions);
PG_FUNCTION_INFO_V1(qidrisk_anonymity_partitions_int4);
PG_FUNCTION_INFO_V1(qidrisk_bucket_budget);

/* Refuse a count that is not a finite number >= 1 */
static void
CheckCount(double value, const char *name)
{
	if (isnan(value) || isinf(value) || value < 1.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a finite number of at least 1, not %g", name, value)));
}

/* Refuse an alpha outside Theorem 3's range [0.5, 1) */
static void
CheckAlpha(double alpha)
{
	if (isnan(alpha) || alpha < 0.5 || alpha >= 1.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("alpha must lie in [0.5, 1), not %g", alpha),
				 errdetail("Theorem 3 of Lodha and Thomas (2008) covers dangerous quasi-identifiers only.")));
}

/*
 * Largest expected share of singletons among n rows drawn from any
 * distribution over D values: D/(e n) for D <= n, e^{-n/D} for D >= n.
 */
Datum
qidrisk_singleton_fraction_bound(PG_FUNCTION_ARGS)
{
	double		distinct = PG_GETARG_FLOAT8(0);
	double		population = PG_GETARG_FLOAT8(1);

	CheckCount(distinct, "partitions");
	CheckCount(population, "population_size");
	if (distinct <= population)
		PG_RETURN_FLOAT8(distinct / (M_E * population));
	PG_RETURN_FLOAT8(exp(-population / distinct));
}

/* Theorem 3: an alpha-quasi-identifier needs more than n / ln(1/alpha) values */
static double
AlphaThreshold(double population, double alpha)
{
	return population / log(1.0 / alpha);
}

Datum
qidrisk_alpha_qid_threshold(PG_FUNCTION_ARGS)
{
	double		population = PG_GETARG_FLOAT8(0);
	double		alpha = PG_GETARG_FLOAT8(1);

	CheckCount(population, "population_size");
	CheckAlpha(alpha);
	PG_RETURN_FLOAT8(AlphaThreshold(population, alpha));
}

Datum
qidrisk_alpha_qid_possible(PG_FUNCTION_ARGS)
{
	double		distinct = PG_GETARG_FLOAT8(0);
	double		population = PG_GETARG_FLOAT8(1);
	double		alpha = PG_GETARG_FLOAT8(2);

	CheckCount(distinct, "partitions");
	CheckCount(population, "population_size");
	CheckAlpha(alpha);
	PG_RETURN_BOOL(distinct > AlphaThreshold(population, alpha));
}

/*
 * Theorem 4: D' <= n/(k-1) (1 + x - sqrt(x^2 + 2x)) with x = -ln(beta)/(k-1).
 * 1 + x - sqrt(x^2 + 2x) = 1 / (1 + x + sqrt(x^2 + 2x)) avoids cancellation.
 */
static double
AnonymityPartitions(double population, double k, double beta)
{
	double		x;

	if (isnan(beta) || beta <= 0.0 || beta >= 1.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("beta must lie strictly between 0 and 1, not %g", beta)));
	x = -log(beta) / (k - 1.0);
	return population / (k - 1.0) / (1.0 + x + sqrt(x * x + 2.0 * x));
}

/* anonymity_partitions(population_size, k integer, beta), from 1.0.0 */
Datum
qidrisk_anonymity_partitions_int4(PG_FUNCTION_ARGS)
{
	double		population = PG_GETARG_FLOAT8(0);
	int32		k = PG_GETARG_INT32(1);

	CheckCount(population, "population_size");
	if (k < 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be at least 2, not %d", k)));
	PG_RETURN_FLOAT8(AnonymityPartitions(population, (double) k, PG_GETARG_FLOAT8(2)));
}

/* The float8 k of 0.1.0 and 0.2.0, which call this until they are updated */
Datum
qidrisk_anonymity_partitions(PG_FUNCTION_ARGS)
{
	double		population = PG_GETARG_FLOAT8(0);
	double		k = PG_GETARG_FLOAT8(1);

	CheckCount(population, "population");
	if (isnan(k) || isinf(k) || k < 2.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be a finite number of at least 2, not %g", k)));
	PG_RETURN_FLOAT8(AnonymityPartitions(population, k, PG_GETARG_FLOAT8(2)));
}

/*
 * Equation (1): d'_i = (D' / prod w)^{1/m} w_i over the columns still to
 * generalize; a column whose budget exceeds its own distinct count keeps its
 * values and the others share D'/d_i.  An infinite weight keeps a column.
 */
Datum
qidrisk_bucket_budget(PG_FUNCTION_ARGS)
{
	double		partitions = PG_GETARG_FLOAT8(0);
	ArrayType  *distinct_array = PG_GETARG_ARRAYTYPE_P(1);
	double	   *distinct;
	double	   *weights;
	double	   *budget;
	bool	   *kept;
	Datum	   *elements;
	bool	   *nulls;
	int			ncolumns;
	bool		changed;

	CheckCount(partitions, "partitions");
	if (ARR_NDIM(distinct_array) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("distinct_counts must be a one-dimensional array")));
	deconstruct_array(distinct_array, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL,
					  TYPALIGN_DOUBLE, &elements, &nulls, &ncolumns);
	if (ncolumns == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("distinct_counts must name at least one column")));
	distinct = palloc(sizeof(double) * ncolumns);
	weights = palloc(sizeof(double) * ncolumns);
	budget = palloc(sizeof(double) * ncolumns);
	kept = palloc0(sizeof(bool) * ncolumns);
	for (int i = 0; i < ncolumns; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("distinct_counts must not contain NULL")));
		distinct[i] = DatumGetFloat8(elements[i]);
		CheckCount(distinct[i], "each distinct count");
		weights[i] = 1.0;
	}

	if (!PG_ARGISNULL(2))
	{
		ArrayType  *weight_array = PG_GETARG_ARRAYTYPE_P(2);
		int			nweights;

		deconstruct_array(weight_array, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL,
						  TYPALIGN_DOUBLE, &elements, &nulls, &nweights);
		if (ARR_NDIM(weight_array) > 1 || nweights != ncolumns)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("weights must have one element per distinct count (%d), not %d",
							ncolumns, nweights)));
		for (int i = 0; i < ncolumns; i++)
		{
			if (nulls[i] || isnan(DatumGetFloat8(elements[i])) ||
				DatumGetFloat8(elements[i]) <= 0.0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("weights must be positive numbers (Infinity keeps a column)")));
			weights[i] = DatumGetFloat8(elements[i]);
			if (isinf(weights[i]))
				kept[i] = true;
		}
	}

	/* Eliminate columns until every remaining budget fits under its count */
	do
	{
		double		remaining = partitions;
		double		log_weights = 0.0;
		int			active = 0;

		changed = false;
		for (int i = 0; i < ncolumns; i++)
		{
			if (kept[i])
				remaining /= distinct[i];
			else
			{
				log_weights += log(weights[i]);
				active++;
			}
		}
		if (active == 0)
			break;
		for (int i = 0; i < ncolumns; i++)
		{
			if (kept[i])
				continue;
			/* in logs: the product of weights can overflow a double */
			budget[i] = exp((log(remaining) - log_weights) / active + log(weights[i]));
		}
		for (int i = 0; i < ncolumns; i++)
		{
			if (!kept[i] && budget[i] > distinct[i])
			{
				kept[i] = true;
				changed = true;
			}
		}
	} while (changed);

	for (int i = 0; i < ncolumns; i++)
	{
		if (kept[i])
			budget[i] = distinct[i];
		elements[i] = Float8GetDatum(budget[i]);
	}
	PG_RETURN_ARRAYTYPE_P(construct_array(elements, ncolumns, FLOAT8OID, sizeof(float8),
										  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}
