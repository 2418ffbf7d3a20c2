/*
 * indivrisk.c
 *	  Individual re-identification risk of a sample record under the
 *	  Benedetti-Franconi negative-binomial model (sdcMicro's indivRisk,
 *	  mu-ARGUS).
 *
 * A record in a sample class of size f whose estimated population size is F
 * (the sum of the class's sampling weights) has p = f / F.  Given f, the
 * population class size is f plus a negative binomial count with parameters
 * f and p, and the risk is the expected value of 1/F_k:
 *
 *		r(f, p) = p^f * sum_{h >= f} C(h-1, f-1) (1-p)^(h-f) / h
 *				= integral_0^1 p s^(f-1) / (p + (1-p) s) ds
 *
 * (the second form substitutes s = p t / (1 - (1-p) t) in the generating
 * function integral of E[1/F]).  Its cost is bounded whatever f and p.  For f = 1 and 2 it is
 *		r = p/(1-p) ln(1/p)  and  r = p/(1-p) - (p/(1-p))^2 ln(1/p),
 * the closed forms of Benedetti and Franconi (1998), Franconi and Polettini
 * (2004) and sdcMicro.  For f >= 3 sdcMicro's default ("approx") uses
 * r = p / (f - (1-p)); "exact" evaluates the integral.  r = 1/f when p = 1.
 */
#include "postgres.h"

#include <math.h>

#include "utils/builtins.h"

#include "indivrisk.h"
#include "qidrisk.h"

PG_FUNCTION_INFO_V1(qidrisk_individual_risk);

/* From this class size on, J(f) is summed as a series (a few dozen terms) */
#define SERIES_FROM 64

/*
 * J(f) = integral_0^1 s^(f-1) / (p + q s) ds with q = 1 - p, which the
 * caller computes as (F - f) / F: 1 - p rounds to 1 once p < 1e-16.
 *
 * Small f: the recurrence q J(f) + p J(f-1) = 1/(f-1).  Upwards from
 * J(1) = ln(1/p)/q it multiplies errors by p/q a step, so it runs upwards
 * while that stays small and otherwise downwards from far above f, where
 * errors shrink by q/p (at most about 15 f steps below SERIES_FROM).
 *
 * Large f: expanding 1/(p + q s) = sum_k q^k (1-s)^k gives
 * J(f) = sum_k q^k B(f, k+1), whose terms shrink by q k/(f+k): for f >= 64
 * they fall below 1e-17 of the sum within a few dozen terms, whatever p.
 */
static double
RiskIntegral(int64 f, double p, double q)
{
	double		j;

	if (q <= 0.0)
		return 1.0 / (double) f;
	if (f >= SERIES_FROM)
	{
		double		term = 1.0 / (double) f;

		j = term;
		for (int64 k = 1; term > j * 1e-17; k++)
		{
			term *= q * (double) k / (double) (f + k);
			j += term;
		}
		return j;
	}
	if (p <= q || (double) (f - 1) * log(p / q) <= log(16.0))
	{
		/* ln(1/p) from whichever of p and q is the more accurate near it */
		j = (p < 0.5 ? -log(p) : -log1p(-q)) / q;
		for (int64 n = 2; n <= f; n++)
			j = (1.0 / (double) (n - 1) - p * j) / q;
		return j;
	}
	else
	{
		/* (q/p)^extra < e^-40: the start value's error vanishes */
		int64		extra = (int64) ceil(40.0 / log(p / q)) + 1;
		int64		top = f + extra;

		j = 1.0 / (double) top; /* J(top) lies in [1/top, 1/(p top)] */
		for (int64 n = top; n > f; n--)
			j = (1.0 / (double) (n - 1) - q * j) / p;
		return j;
	}
}

/* The risk of a record in a class of f sample rows and F estimated population */
double
IndividualRisk(int64 f, double population, bool exact)
{
	double		p;
	double		q;

	/* a class cannot be smaller in the population than in the sample */
	if (population <= (double) f)
		return 1.0 / (double) f;
	p = (double) f / population;
	/* 1 - p, to full relative precision even when p is below 1e-16 */
	q = (population - (double) f) / population;
	if (f >= 3 && !exact)
		return p / ((double) (f - 1) + p);
	return p * RiskIntegral(f, p, q);
}

/* individual_risk(sample_frequency, population_frequency, method) */
Datum
qidrisk_individual_risk(PG_FUNCTION_ARGS)
{
	int64		f;
	double		population;
	char	   *method;
	bool		exact;

	for (int i = 0; i < 3; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("individual_risk: %s must not be NULL",
							i == 0 ? "sample_frequency" :
							i == 1 ? "population_frequency" : "method")));
	f = PG_GETARG_INT64(0);
	population = PG_GETARG_FLOAT8(1);
	method = text_to_cstring(PG_GETARG_TEXT_PP(2));

	if (strcmp(method, "approx") == 0)
		exact = false;
	else if (strcmp(method, "exact") == 0)
		exact = true;
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown individual risk method \"%s\"", method),
				 errhint("Use \"approx\" (sdcMicro's default) or \"exact\".")));
	if (f < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("sample_frequency must be at least 1, not " INT64_FORMAT, f)));
	if (isnan(population) || isinf(population) || population < 0.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("population_frequency must be a finite number at least 0, not %g",
						population)));
	PG_RETURN_FLOAT8(IndividualRisk(f, population, exact));
}
