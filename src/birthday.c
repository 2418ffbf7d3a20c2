/*
 * birthday.c
 *	  Birthday uniqueness: the probability that k people drawn independently
 *	  from a distribution over N values are all distinct (Koot, Mandjes,
 *	  van 't Noordende and de Laat 2011), exact and approximate, and its
 *	  inverse (the largest k that keeps the probability above a target).
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/float.h"

#include "birthday.h"
#include "qidrisk.h"

PG_FUNCTION_INFO_V1(birthday_uniqueness_uniform);
PG_FUNCTION_INFO_V1(birthday_uniqueness_koot);
PG_FUNCTION_INFO_V1(birthday_uniqueness_approx);
PG_FUNCTION_INFO_V1(birthday_uniqueness_poisson_uniform);
PG_FUNCTION_INFO_V1(birthday_max_k_uniform);
PG_FUNCTION_INFO_V1(birthday_max_k_koot);

/* Below this many remaining values, sum the product's terms one by one */
#define STIRLING_MIN_REMAINING 1000.0

/* Below this k, sum the product's terms one by one */
#define DIRECT_SUM_MAX_K 10000

/* Reject a NaN, infinite or out-of-range parameter */
void
BirthdayCheckFinite(double value, const char *name)
{
	if (isnan(value) || isinf(value))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a finite number, not %g", name, value)));
}

/* Check the group size k and the domain size N of the uniform model */
static void
CheckGroupAndDomain(int64 k, double n)
{
	if (k < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("group_size must not be negative, not " INT64_FORMAT, k)));
	BirthdayCheckFinite(n, "domain_size");
	if (n <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("domain_size must be positive, not %g", n),
				 errdetail("domain_size is the number of equally likely values.")));
}

/* Tail of Stirling's series for ln(m!), accurate to 1e-16 for m >= 1000 */
static double
StirlingTail(double m)
{
	double		m2 = m * m;

	return 1.0 / (12.0 * m) - 1.0 / (360.0 * m * m2) + 1.0 / (1260.0 * m * m2 * m2);
}

/*
 * ln pi_u(k, N) = ln(N! / ((N-k)! N^k)) = sum_{i<k} log1p(-i/N).
 *
 * For large k and N - k, Stirling's series gives it in closed form without
 * cancellation: -(N-k+1/2) log1p(-k/N) - k + tail(N) - tail(N-k).
 */
double
BirthdayLogUniform(int64 k, double n)
{
	double		sum = 0.0;
	double		compensation = 0.0;

	if (k <= 1)
		return 0.0;
	if ((double) k > n)
		return -INFINITY;

	if (k > DIRECT_SUM_MAX_K && n - (double) k >= STIRLING_MIN_REMAINING)
	{
		double		x = (double) k / n;
		double		r;			/* log1p(-x) + x, without cancellation */

		if (x < 0.01)
		{
			double		power = x * x;

			r = 0.0;
			for (int j = 2; j < 40 && power / j > 1e-20 * fabs(r); j++, power *= x)
				r -= power / j;
		}
		else
			r = log1p(-x) + x;

		/* -(N-k+1/2) log1p(-x) - k, rewritten with N x = k */
		return -(n - (double) k + 0.5) * r - (double) k * x + x / 2 +
			StirlingTail(n) - StirlingTail(n - (double) k);
	}

	/* Neumaier-compensated sum of the k - 1 terms */
	for (int64 i = 1; i < k; i++)
	{
		double		term = log1p(-(double) i / n);
		double		t = sum + term;

		if ((i & 0xFFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		if (fabs(sum) >= fabs(term))
			compensation += (sum - t) + term;
		else
			compensation += (term - t) + sum;
		sum = t;
		/* past this the probability is 0 in double precision anyway */
		if (sum < -1000.0)
			return sum;
	}
	return sum + compensation;
}

/* birthday_uniqueness(k, n): exact probability under N equally likely values */
Datum
birthday_uniqueness_uniform(PG_FUNCTION_ARGS)
{
	int64		k = PG_GETARG_INT64(0);
	double		n = PG_GETARG_FLOAT8(1);

	CheckGroupAndDomain(k, n);
	PG_RETURN_FLOAT8(exp(BirthdayLogUniform(k, n)));
}

/* Check a heterogeneity kappa */
static void
CheckKappa(double kappa)
{
	BirthdayCheckFinite(kappa, "kappa");
	if (kappa < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("kappa must not be negative, not %g", kappa),
				 errdetail("A Kullback-Leibler distance is zero or positive.")));
}

/* ln of Koot's approximation pi_u(k,N) exp(-kappa k^2 / N) */
static double
LogKoot(int64 k, double n, double kappa)
{
	double		log_uniform = BirthdayLogUniform(k, n);

	if (k <= 1)
		return 0.0;
	return log_uniform - kappa * (double) k * (double) k / n;
}

/* birthday_uniqueness(k, n, kappa): Koot et al.'s approximation for a skewed distribution */
Datum
birthday_uniqueness_koot(PG_FUNCTION_ARGS)
{
	int64		k = PG_GETARG_INT64(0);
	double		n = PG_GETARG_FLOAT8(1);
	double		kappa = PG_GETARG_FLOAT8(2);

	CheckGroupAndDomain(k, n);
	CheckKappa(kappa);
	PG_RETURN_FLOAT8(exp(LogKoot(k, n, kappa)));
}

/* birthday_uniqueness_approx(k, n, kappa): exp(-(1/2 + kappa) k^2 / N) */
Datum
birthday_uniqueness_approx(PG_FUNCTION_ARGS)
{
	int64		k = PG_GETARG_INT64(0);
	double		n = PG_GETARG_FLOAT8(1);
	double		kappa = PG_GETARG_FLOAT8(2);

	CheckGroupAndDomain(k, n);
	CheckKappa(kappa);
	if (k <= 1)
		PG_RETURN_FLOAT8(1.0);
	PG_RETURN_FLOAT8(exp(-(0.5 + kappa) * (double) k * (double) k / n));
}

/*
 * log1p(x) - x for x >= 0, without the cancellation of subtracting the two
 * when x is small (a series then)
 */
double
BirthdayLog1pMinusX(double x)
{
	if (x < 0.01)
	{
		double		power = x * x;
		double		r = 0.0;

		/* -x^2/2 + x^3/3 - ...: terms shrink by 100 at least */
		for (int j = 2; j < 20; j++, power *= x)
		{
			double		term = power / j;

			r += (j % 2 == 0) ? -term : term;
			if (term <= 1e-18 * fabs(r))
				break;
		}
		return r;
	}
	return log1p(x) - x;
}

/*
 * ln of the Poisson term of a value of probability w / total drawn about k
 * times, e^{-k w/total} (1 + k w/total): w / total is formed first so that
 * k w cannot overflow
 */
double
BirthdayLogPoissonTerm(double k, double n)
{
	double		x = k / n;

	/* N values of probability 1/N: N (log1p(k/N) - k/N) */
	if (isinf(x))
	{
		/* k/N overflows only when N is tiny: log1p(k/N) = ln k - ln N + log1p(N/k) */
		return n * (log(k) - log(n) + log1p(n / k)) - k;
	}
	return n * BirthdayLog1pMinusX(x);
}

/*
 * birthday_uniqueness_poisson(k, n): with a Poisson(k) number of draws, the
 * values' counts are independent: prod over N values of e^{-k/N}(1 + k/N).
 */
Datum
birthday_uniqueness_poisson_uniform(PG_FUNCTION_ARGS)
{
	int64		k = PG_GETARG_INT64(0);
	double		n = PG_GETARG_FLOAT8(1);

	CheckGroupAndDomain(k, n);
	PG_RETURN_FLOAT8(exp(BirthdayLogPoissonTerm((double) k, n)));
}

/* Check an inverse question's target probability */
void
BirthdayCheckTarget(double target)
{
	BirthdayCheckFinite(target, "target");
	if (target <= 0 || target > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("target must be in (0, 1], not %g", target)));
}

/* Largest k whose Koot probability (uniform when kappa = 0) is >= target */
int64
BirthdayLargestK(double target, double n, double kappa)
{
	double		log_target = log(target);
	int64		low = 1;		/* probability 1 >= target */
	int64		high;

	/* pi_u is 0 past N, so the answer is at most floor(N) */
	high = (int64) Min(floor(n), (double) PG_INT64_MAX / 4);
	if (high < 1)
		return 1;
	while (low < high)
	{
		int64		mid = low + (high - low + 1) / 2;

		CHECK_FOR_INTERRUPTS();
		if (LogKoot(mid, n, kappa) >= log_target)
			low = mid;
		else
			high = mid - 1;
	}
	return low;
}

/* birthday_max_group_size(target, n): largest group whose all-distinct probability is >= target */
Datum
birthday_max_k_uniform(PG_FUNCTION_ARGS)
{
	double		target = PG_GETARG_FLOAT8(0);
	double		n = PG_GETARG_FLOAT8(1);

	BirthdayCheckTarget(target);
	CheckGroupAndDomain(0, n);
	PG_RETURN_INT64(BirthdayLargestK(target, n, 0.0));
}

/* birthday_max_group_size(target, n, kappa): the same under Koot's approximation */
Datum
birthday_max_k_koot(PG_FUNCTION_ARGS)
{
	double		target = PG_GETARG_FLOAT8(0);
	double		n = PG_GETARG_FLOAT8(1);
	double		kappa = PG_GETARG_FLOAT8(2);

	BirthdayCheckTarget(target);
	CheckGroupAndDomain(0, n);
	CheckKappa(kappa);
	PG_RETURN_INT64(BirthdayLargestK(target, n, kappa));
}
