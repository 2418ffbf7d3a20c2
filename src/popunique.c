/*
 * popunique.c
 *	  Population uniqueness from a sample: how many records of the population
 *	  are unique on the QID, estimated from the sample's frequency of
 *	  frequencies (m_j classes of j rows) and its sampling fraction f, with no
 *	  population table (population_uniqueness; docs/sample_risk.md).
 *
 * With n sample rows, K sample classes and N = n / f:
 *
 *	pitman	Pitman's sampling formula (Hoshino 2001), (theta, alpha) by maximum
 *			likelihood, then Gamma(theta + 1) / Gamma(theta + alpha) * N^alpha.
 *			The likelihood is maximised through its profile in alpha: for each
 *			alpha the theta score has one sign change in theta, and the alpha
 *			score along that curve is scanned on a grid and its sign changes
 *			refined, so no starting value can lead the search astray.
 *	zayatz	Zayatz (1991): m_1 * P(population unique | sample unique) / f, the
 *			sample's class-size distribution standing for the population's,
 *			with hypergeometric sampling of n rows out of N.
 *	snb		the slide negative binomial model (Chen and Keller-McNulty 1998):
 *			population classes of 1 + NegBin(alpha, beta) rows, K' of them
 *			(Haas and Stokes' estimator D_Sh3), Bernoulli sampling; E[m_1] = m_1
 *			and E[m_2] = m_2 give alpha and beta, and K' beta^alpha uniques.
 *			E[m_2] / E[m_1] does not involve K' and is quadratic in alpha, so
 *			the system reduces to one increasing equation in logit(beta).
 *	dankar	Dankar, El Emam, Neisa and Roffey (2012): pitman when f <= 0.1
 *			(zayatz when it has no estimate), otherwise the smaller of zayatz and
 *			snb (zayatz when snb has none); 0 when no sample row is unique.
 *
 * Every solver brackets its root and runs a bounded number of steps, each
 * loop checks for interrupts, and a model without an estimate says why.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/float.h"

#include "compat.h"
#include "popunique.h"
#include "qidrisk.h"

PG_FUNCTION_INFO_V1(qidrisk_population_uniqueness);

/* Steps of a bracketed root search before it gives up */
#define ROOT_MAX_STEPS 400
/* Points of the grid on which Pitman's alpha score is scanned, logit -25 .. 25 */
#define PITMAN_ALPHA_GRID 64
#define PITMAN_LOGIT_RANGE 25.0
/* The sampling fraction up to which Dankar et al. choose pitman */
#define DANKAR_SMALL_FRACTION 0.1

/* A sample's frequency of frequencies */
typedef struct FreqOfFreq
{
	int			nsizes;
	int64	   *sizes;			/* ascending, each >= 1 */
	int64	   *counts;			/* classes of each size, each >= 1 */
	double		rows;			/* n */
	double		classes;		/* K */
	double		m1;				/* classes of one row */
	double		m2;				/* classes of two rows */
	double		fraction;		/* f */
	double		population;		/* N = n / f */
} FreqOfFreq;

/* One model's answer */
typedef struct PopEstimate
{
	bool		done;			/* computed (the dankar rule reuses the others) */
	bool		available;
	double		uniques;
	const char *note;
} PopEstimate;

typedef double (*RootFn) (double x, void *arg);

/*
 * A root of fn between lo and hi, where fn(lo) and fn(hi) differ in sign:
 * Illinois steps (regula falsi halving the stale end's value), a bisection
 * every third step, until the bracket is a few units in the last place
 */
static bool
BracketRoot(RootFn fn, void *arg, double lo, double flo, double hi, double fhi, double *root)
{
	int			side = 0;

	for (int step = 0; step < ROOT_MAX_STEPS; step++)
	{
		double		x;
		double		fx;

		CHECK_FOR_INTERRUPTS();
		if (fabs(hi - lo) <= 4.0 * DBL_EPSILON * Max(fabs(lo), fabs(hi)) || hi == lo)
		{
			*root = fabs(flo) < fabs(fhi) ? lo : hi;
			return true;
		}
		x = (step % 3 == 2) ? lo + (hi - lo) / 2.0 : (lo * fhi - hi * flo) / (fhi - flo);
		if (!(x > Min(lo, hi) && x < Max(lo, hi)))
			x = lo + (hi - lo) / 2.0;
		fx = fn(x, arg);
		if (isnan(fx))
			return false;
		if (fx == 0.0)
		{
			*root = x;
			return true;
		}
		if ((fx < 0.0) == (flo < 0.0))
		{
			lo = x;
			flo = fx;
			if (side == -1)
				fhi /= 2.0;
			side = -1;
		}
		else
		{
			hi = x;
			fhi = fx;
			if (side == 1)
				flo /= 2.0;
			side = 1;
		}
	}
	return false;
}

/* ---- special functions ---- */

/* x^-p - (x + m)^-p for x > 0, m >= 0, without cancellation */
static double
PowerDifference(double x, double m, int p)
{
	return -expm1(-p * log1p(m / x)) * pow(x, -p);
}

/*
 * psi(x + m) - psi(x) - log(1 + m/x) for x >= 16 and m >= 0: the differences
 * of the asymptotic series of psi, each term to full precision (the next
 * term is below 3e-20 of the result)
 */
static double
PsiDifferenceRest(double x, double m)
{
	return PowerDifference(x, m, 1) / 2.0 + PowerDifference(x, m, 2) / 12.0
		- PowerDifference(x, m, 4) / 120.0 + PowerDifference(x, m, 6) / 252.0
		- PowerDifference(x, m, 8) / 240.0 + PowerDifference(x, m, 10) / 132.0
		- 691.0 * PowerDifference(x, m, 12) / 32760.0 + PowerDifference(x, m, 14) / 12.0;
}

/*
 * sum_{i=0}^{m-1} 1 / (x + i) = psi(x + m) - psi(x), for x > 0 and a whole
 * m >= 0: directly for few terms, else shifted to x >= 16 and taken as
 * log(1 + m/x) and the series' differences, which keep every digit when m
 * is small against x
 */
static double
SumRecip(double x, double m)
{
	double		s = 0.0;

	if (m <= 64.0)
	{
		for (double i = m - 1.0; i >= 0.0; i -= 1.0)
			s += 1.0 / (x + i);
		return s;
	}
	while (x < 16.0)
	{
		s += 1.0 / x;
		x += 1.0;
		m -= 1.0;
	}
	return s + log1p(m / x) + PsiDifferenceRest(x, m);
}

/* psi(x), the digamma function, for x > 0: shifted to x >= 16, then its asymptotic series */
static double
Digamma(double x)
{
	double		s = 0.0;
	double		r2;

	while (x < 16.0)
	{
		s -= 1.0 / x;
		x += 1.0;
	}
	r2 = 1.0 / (x * x);
	return s + log(x) - 0.5 / x
		- r2 * (1.0 / 12 - r2 * (1.0 / 120 - r2 * (1.0 / 252 - r2 * (1.0 / 240 - r2 * (1.0 / 132)))));
}

/* u - log(1 + u) for u >= 0, to full relative precision */
static double
Log1pmxNeg(double u)
{
	double		s = 0.0;
	double		term = u;

	if (u >= 0.5)
		return u - log1p(u);
	/* u^2/2 - u^3/3 + ...: alternating, terms shrink by at least half */
	for (int k = 2; k < 80; k++)
	{
		term *= -u;
		s -= term / k;
		if (fabs(term) < 1e-18 * s)
			break;
	}
	return s;
}

/*
 * sum_{i=1}^{m} i / (x + i), for x > -1 and a whole m >= 0, as a sum of
 * positive terms: directly for few terms, else shifted to x >= 15 and
 * written m - x (psi(x + 1 + m) - psi(x + 1)) with the cancelling part
 * m - x log(1 + m / (x + 1)) taken as (x + 1) (u - log(1 + u)) + log(1 + u)
 */
static double
SumRatio(double x, double m)
{
	double		s = 0.0;
	double		y;
	double		u;

	if (m <= 64.0)
	{
		for (double i = m; i >= 1.0; i -= 1.0)
			s += i / (x + i);
		return s;
	}
	/* sum_{i=1}^{m} i/(x+i) = 1/(x+1) + sum_{i=1}^{m-1} i/(x+1+i) + sum_{i=1}^{m-1} 1/(x+1+i) */
	while (x < 15.0)
	{
		s += 1.0 / (x + 1.0) + SumRecip(x + 2.0, m - 1.0);
		x += 1.0;
		m -= 1.0;
	}
	y = x + 1.0;
	u = m / y;
	return s + y * Log1pmxNeg(u) + log1p(u) - x * PsiDifferenceRest(y, m);
}

/* lgamma(x + d) - lgamma(x) for x > 0 and 0 <= d < 1, to full relative precision */
static double
LogGammaRatio(double x, double d)
{
	double		s = 0.0;

	/* lgamma(x + d) - lgamma(x) = [same at x + 1] - log(1 + d/x) */
	while (x < 16.0)
	{
		s -= log1p(d / x);
		x += 1.0;
	}
	/* Stirling's series, taken as differences */
	return s + (x - 0.5) * log1p(d / x) + d * log(x + d) - d
		- PowerDifference(x, d, 1) / 12.0 + PowerDifference(x, d, 3) / 360.0
		- PowerDifference(x, d, 5) / 1260.0 + PowerDifference(x, d, 7) / 1680.0
		- PowerDifference(x, d, 9) / 1188.0 + 691.0 * PowerDifference(x, d, 11) / 360360.0
		- PowerDifference(x, d, 13) / 156.0;
}

/* logistic(s) = 1 / (1 + e^-s) and its complement, each to full precision */
static void
Logistic(double s, double *p, double *q)
{
	*p = 1.0 / (1.0 + exp(-s));
	*q = 1.0 / (1.0 + exp(s));
}

/* ---- pitman ---- */

typedef struct PitmanArgs
{
	const FreqOfFreq *fof;
	double		alpha;
	double		t;				/* theta + alpha, from the last theta solve */
	bool		failed;
} PitmanArgs;

/* The theta score at t = theta + alpha: sum_{i<K} 1/(theta + i alpha) - sum_{i<n} 1/(theta + i) */
static double
PitmanThetaScore(double logt, void *arg)
{
	PitmanArgs *a = arg;
	double		t = exp(logt);

	return SumRecip(t / a->alpha, a->fof->classes - 1.0) / a->alpha
		- SumRecip(t - a->alpha + 1.0, a->fof->rows - 1.0);
}

/*
 * theta + alpha maximising the likelihood at this alpha: the theta score is
 * +Infinity as theta nears -alpha and negative for large theta (K < n)
 */
static bool
PitmanSolveTheta(PitmanArgs *a)
{
	double		lo = 0.0,
				hi = 0.0,
				flo,
				fhi,
				root;

	flo = fhi = PitmanThetaScore(0.0, a);
	while (flo <= 0.0 && lo > -690.0)
		flo = PitmanThetaScore(lo -= 2.0, a);
	while (fhi >= 0.0 && hi < 690.0)
		fhi = PitmanThetaScore(hi += 2.0, a);
	if (flo == 0.0 || fhi == 0.0)
	{
		a->t = exp(flo == 0.0 ? lo : hi);
		return true;
	}
	if (!(flo > 0.0 && fhi < 0.0) || !BracketRoot(PitmanThetaScore, a, lo, flo, hi, fhi, &root))
		return false;
	a->t = exp(root);
	return true;
}

/* The alpha score at theta maximising the likelihood for alpha = logistic(s) */
static double
PitmanAlphaScore(double s, void *arg)
{
	PitmanArgs *a = arg;
	const FreqOfFreq *fof = a->fof;
	double		q;
	double		b = 0.0;
	double		psi_q;
	double		small = 0.0;	/* sum_{i<j} 1/(i - alpha) for the size j reached */
	int64		j = 1;

	CHECK_FOR_INTERRUPTS();
	Logistic(s, &a->alpha, &q);
	if (!PitmanSolveTheta(a))
	{
		a->failed = true;
		return NAN;
	}
	/*
	 * sum_j m_j sum_{i<j} 1/(i - alpha) (1 - alpha taken as q): added up for
	 * small sizes, psi(q + j - 1) - psi(q) for large ones (no digit cancels:
	 * psi(q) < 0 < psi(q + 64))
	 */
	psi_q = Digamma(q);
	for (int k = 0; k < fof->nsizes; k++)
	{
		int64		size = fof->sizes[k];

		if ((k & 0x3FF) == 0x3FF)
			CHECK_FOR_INTERRUPTS();
		if (size <= 64)
		{
			for (; j < size; j++)
				small += 1.0 / ((double) j - a->alpha);
			b += (double) fof->counts[k] * small;
		}
		else
			b += (double) fof->counts[k] * (Digamma(q + (double) (size - 1)) - psi_q);
	}
	/* sum_{i<K} i/(theta + i alpha) = sum i/(x + i) / alpha, x = theta/alpha */
	return SumRatio(a->t / a->alpha - 1.0, fof->classes - 1.0) / a->alpha - b;
}

/* The log-likelihood at (theta, alpha), t = theta + alpha (up to a constant) */
static double
PitmanLogLik(const FreqOfFreq *fof, double t, double alpha)
{
	double		theta = t - alpha;
	double		x = t / alpha - 1.0;
	double		ll;

	ll = (fof->classes - 1.0) * log(alpha) + lgamma(x + fof->classes) - lgamma(x + 1.0)
		- lgamma(theta + fof->rows) + lgamma(theta + 1.0);
	for (int k = 0; k < fof->nsizes; k++)
		ll += (double) fof->counts[k] * (lgamma((double) fof->sizes[k] - alpha) - lgamma(1.0 - alpha));
	return ll;
}

static void
EstimatePitman(const FreqOfFreq *fof, PopEstimate *est)
{
	PitmanArgs	a = {fof, 0.0, 0.0, false};
	double		score[PITMAN_ALPHA_GRID];
	double		grid[PITMAN_ALPHA_GRID];
	bool		found = false;
	double		best_ll = -INFINITY,
				best_t = 0.0,
				best_alpha = 0.0;

	if (fof->classes >= fof->rows)
	{
		est->note = "every sample row is unique: the likelihood grows without bound in theta";
		return;
	}
	if (fof->classes < 2.0)
	{
		est->note = "the sample has a single class: alpha and theta are not identified";
		return;
	}
	for (int g = 0; g < PITMAN_ALPHA_GRID; g++)
	{
		grid[g] = -PITMAN_LOGIT_RANGE + 2.0 * PITMAN_LOGIT_RANGE * g / (PITMAN_ALPHA_GRID - 1);
		score[g] = PitmanAlphaScore(grid[g], &a);
		if (a.failed)
		{
			est->note = "the theta equation has no root at some alpha";
			return;
		}
	}
	/* every sign change from + to - is a local maximum of the profile likelihood */
	for (int g = 0; g + 1 < PITMAN_ALPHA_GRID; g++)
	{
		double		s;
		double		ll;

		if (!(score[g] > 0.0 && score[g + 1] <= 0.0))
			continue;
		if (score[g + 1] == 0.0)
			s = grid[g + 1];
		else if (!BracketRoot(PitmanAlphaScore, &a, grid[g], score[g], grid[g + 1], score[g + 1], &s))
		{
			est->note = psprintf("the maximum likelihood search did not converge in %d steps",
								 ROOT_MAX_STEPS);
			return;
		}
		(void) PitmanAlphaScore(s, &a);
		ll = PitmanLogLik(fof, a.t, a.alpha);
		if (!found || ll > best_ll)
		{
			found = true;
			best_ll = ll;
			best_t = a.t;
			best_alpha = a.alpha;
		}
	}
	if (!found)
	{
		est->note = "the likelihood is largest at alpha <= 0, outside the model's 0 < alpha < 1";
		return;
	}
	/* Gamma(theta + 1) / Gamma(theta + alpha) N^alpha, theta + alpha = t */
	est->uniques = exp(LogGammaRatio(best_t, 1.0 - best_alpha) + best_alpha * log(fof->population));
	est->available = true;
	est->note = psprintf("theta = %.6g, alpha = %.6g", best_t - best_alpha, best_alpha);
}

/* ---- zayatz ---- */

/*
 * The running sum log prod_{i=1}^{j-1} (1 - c/(N - i)), c = n - 1, that
 * Zayatz's hypergeometric probabilities need at each class size j
 */
typedef struct HyperProduct
{
	double		big_n;			/* N */
	double		c;				/* n - 1 */
	int64		next;			/* the next factor's i */
	double		log;			/* the sum so far (-Infinity: a factor is 0) */
	double		comp;			/* Kahan compensation of log */
} HyperProduct;

/* Add a term to the compensated sum */
static void
HyperAdd(HyperProduct *h, double term)
{
	double		y = term - h->comp;
	double		t = h->log + y;

	h->comp = (t - h->log) - y;
	h->log = t;
}

/*
 * sum_{i=a}^{b} log(1 - c/(N - i)) where every c/(N - i) <= 1e-4, as
 * -sum_{k=1}^{4} c^k/k sum_i (N - i)^-k: the first power sum by psi
 * differences, the others by Euler-Maclaurin (N - i >= 1e4 c); the omitted
 * powers weigh below 2e-17 of the result
 */
static double
HyperSeries(const HyperProduct *h, double a, double b)
{
	double		x = h->big_n - b;
	double		m = b - a + 1.0;
	double		s = h->c * SumRecip(x, m);
	double		ck = h->c;

	for (int k = 2; k <= 4; k++)
	{
		double		powers;

		ck *= h->c;
		powers = PowerDifference(x, m, k - 1) / (k - 1) + PowerDifference(x, m, k) / 2.0
			+ k * PowerDifference(x, m, k + 1) / 12.0
			- k * (k + 1.0) * (k + 2.0) * PowerDifference(x, m, k + 3) / 720.0;
		s += ck * powers / k;
	}
	return -s;
}

/*
 * Advance the product to the factors before class size j; long runs of
 * factors within 1e-4 of 1 are summed at once, and beyond those each factor
 * takes at least 1e-4 off the sum, so the loop stops (below -800, where every
 * later probability is negligible) within 8e6 steps
 */
static void
HyperAdvance(HyperProduct *h, int64 j)
{
	double		last_small = floor(h->big_n - 1e4 * h->c);

	while (h->next < j && h->log > -800.0)
	{
		double		i = (double) h->next;
		double		rest = h->big_n - i;

		if (last_small - i >= 64.0 && (double) j - 1.0 - i >= 64.0)
		{
			double		upto = Min((double) j - 1.0, last_small);

			HyperAdd(h, HyperSeries(h, i, upto));
			h->next = upto >= (double) (j - 1) ? j : (int64) upto + 1;
			continue;
		}
		if (rest - h->c <= 0.0)
		{
			h->log = -INFINITY; /* a class above N - n + 1 rows: probability 0 */
			return;
		}
		HyperAdd(h, log1p(-h->c / rest));
		if ((++h->next & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
	}
}

/*
 * Zayatz: the probability that a population class of j rows gives exactly
 * one of the n sample rows is h(j) = j C(N-j, n-1) / C(N, n), and
 * h(j) / h(1) = j prod_{i=1}^{j-1} (N - n + 1 - i)/(N - i).  With the
 * sample's class sizes standing for the population's,
 * P(population unique | sample unique) = m_1 h(1) / sum_j m_j h(j).
 */
static void
EstimateZayatz(const FreqOfFreq *fof, PopEstimate *est)
{
	HyperProduct h = {fof->population, fof->rows - 1.0, 1, 0.0, 0.0};
	double		sum = 0.0;
	double		conditional;

	if (fof->m1 == 0.0)
	{
		est->available = true;
		est->uniques = 0.0;
		est->note = "no sample unique";
		return;
	}
	for (int k = 0; k < fof->nsizes; k++)
	{
		HyperAdvance(&h, fof->sizes[k]);
		if (h.log <= -800.0)
			break;
		sum += (double) fof->counts[k] * (double) fof->sizes[k] * exp(h.log);
	}
	conditional = fof->m1 / sum;
	est->uniques = fof->m1 * conditional / fof->fraction;
	est->available = true;
	est->note = psprintf("P(population unique | sample unique) = %.6g", conditional);
}

/* ---- snb ---- */

/*
 * Haas and Stokes' (1998) modified Shlosser estimator D_Sh3 of the
 * population's classes, q = f:
 *	K + m_1 [sum j q^2 (1-q^2)^(j-1) m_j / sum (1-q)^j ((1+q)^j - 1) m_j]
 *		  * [sum (1-q)^j m_j / sum j q (1-q)^(j-1) m_j]^2
 */
static double
ShlosserSh3(const FreqOfFreq *fof)
{
	double		q = fof->fraction;
	double		a = 0.0,
				b = 0.0,
				c = 0.0,
				d = 0.0;

	if (q >= 1.0)
		return fof->classes;
	for (int k = 0; k < fof->nsizes; k++)
	{
		double		j = (double) fof->sizes[k];
		double		m = (double) fof->counts[k];
		double		unsampled = exp(j * log1p(-q));
		double		grown = j * log1p(q);

		a += j * q * q * exp((j - 1.0) * log1p(-q * q)) * m;
		/* (1-q)^j ((1+q)^j - 1), as (1-q^2)^j - (1-q)^j where (1+q)^j overflows */
		b += (grown < 700.0 ? unsampled * expm1(grown) : exp(j * log1p(-q * q)) - unsampled) * m;
		c += unsampled * m;
		d += j * q * exp((j - 1.0) * log1p(-q)) * m;
	}
	if (c == 0.0)
		return fof->classes;
	return fof->classes + fof->m1 * (a / b) * (c / d) * (c / d);
}

typedef struct SnbArgs
{
	const FreqOfFreq *fof;
	double		big_k;			/* K' */
	double		rho;			/* m_2 / m_1 */
	double		alpha;			/* from the last evaluation */
	double		log_beta;
} SnbArgs;

/*
 * log E[m_1] - log m_1 at beta = logistic(s), alpha solving
 * E[m_2] / E[m_1] = rho.  With q = 1 - beta, d = (1 - f) q, D = 1 - d:
 *	E[m_1] = K' f (beta/D)^alpha (1 + alpha d/D)
 *	E[m_2] = K' alpha f^2 q beta^alpha D^-(alpha+2) (2 - (1 - alpha) d) / 2
 * so the ratio is rho when f q d alpha^2 + (f q (2 - d) - 2 rho D d) alpha
 * - 2 rho D^2 = 0, whose positive root is alpha.
 */
static double
SnbEquation(double s, void *arg)
{
	SnbArgs    *a = arg;
	double		f = a->fof->fraction;
	double		beta,
				q,
				d,
				big_d,
				qa,
				qb,
				qc,
				log_ratio;

	Logistic(s, &beta, &q);
	d = (1.0 - f) * q;
	big_d = beta + f * q;
	qa = f * q * d;
	qb = f * q * (2.0 - d) - 2.0 * a->rho * big_d * d;
	qc = 2.0 * a->rho * big_d * big_d;
	if (qa == 0.0)
		a->alpha = qc / qb;
	else if (qb > 0.0)
		a->alpha = 2.0 * qc / (qb + sqrt(qb * qb + 4.0 * qa * qc));
	else
		a->alpha = (-qb + sqrt(qb * qb + 4.0 * qa * qc)) / (2.0 * qa);
	/* log(beta/D), by log1p(-f q/D) when beta/D is near 1 */
	a->log_beta = -log1p(exp(-s));
	log_ratio = beta < 0.5 * big_d ? a->log_beta - log(big_d) : log1p(-f * q / big_d);
	return log(a->big_k * f) + a->alpha * log_ratio + log1p(a->alpha * d / big_d) - log(a->fof->m1);
}

static void
EstimateSnb(const FreqOfFreq *fof, PopEstimate *est)
{
	SnbArgs		a = {fof, 0.0, 0.0, 0.0, 0.0};
	double		lo = 0.0,
				hi = 0.0,
				flo,
				fhi,
				s;

	if (fof->m1 == 0.0 || fof->m2 == 0.0)
	{
		est->note = psprintf("no sample class of %s: the equations E[m_1] = m_1 and E[m_2] = m_2 have no solution",
							 fof->m1 == 0.0 ? "one row" : "two rows");
		return;
	}
	a.big_k = ShlosserSh3(fof);
	a.rho = fof->m2 / fof->m1;
	/* the equation increases from -Infinity (beta -> 0) to its Poisson limit (beta -> 1) */
	flo = fhi = SnbEquation(0.0, &a);
	while (flo >= 0.0 && lo > -600.0)
		flo = SnbEquation(lo -= 2.0, &a);
	while (fhi <= 0.0 && hi < 600.0 && isfinite(fhi))
		fhi = SnbEquation(hi += 2.0, &a);
	if (!(flo < 0.0 && fhi > 0.0 && isfinite(flo) && isfinite(fhi)))
	{
		est->note = psprintf("the equations E[m_1] = m_1 and E[m_2] = m_2 have no solution with K' = %.6g population classes",
							 a.big_k);
		return;
	}
	if (!BracketRoot(SnbEquation, &a, lo, flo, hi, fhi, &s))
	{
		est->note = psprintf("the solver did not converge in %d steps", ROOT_MAX_STEPS);
		return;
	}
	(void) SnbEquation(s, &a);
	/* a census (f = 1) has E[m_1] = K' beta^alpha: the uniques are m_1 exactly */
	est->uniques = fof->fraction == 1.0 ? fof->m1 : a.big_k * exp(a.alpha * a.log_beta);
	est->available = true;
	est->note = psprintf("alpha = %.6g, beta = %.6g, K' = %.6g population classes",
						 a.alpha, exp(a.log_beta), a.big_k);
}

/* ---- the models together ---- */

typedef enum PopModel
{
	POP_PITMAN,
	POP_ZAYATZ,
	POP_SNB,
	POP_DANKAR,
	POP_MODELS
} PopModel;

static const char *const model_names[POP_MODELS] = {"pitman", "zayatz", "snb", "dankar"};

static PopEstimate *Estimate(const FreqOfFreq *fof, PopEstimate *all, PopModel model);

/* Dankar et al.'s rule over the other estimates */
static void
EstimateDankar(const FreqOfFreq *fof, PopEstimate *all, PopEstimate *est)
{
	PopEstimate *pitman,
			   *zayatz,
			   *snb,
			   *chosen;
	const char *why;

	if (fof->m1 == 0.0)
	{
		est->available = true;
		est->uniques = 0.0;
		est->note = "no sample unique: 0, as zayatz gives";
		return;
	}
	zayatz = Estimate(fof, all, POP_ZAYATZ);
	if (fof->fraction <= DANKAR_SMALL_FRACTION)
	{
		pitman = Estimate(fof, all, POP_PITMAN);
		chosen = pitman->available ? pitman : zayatz;
		why = pitman->available ? "pitman: sampling fraction at most 0.1"
			: "zayatz: sampling fraction at most 0.1, pitman unavailable";
	}
	else
	{
		snb = Estimate(fof, all, POP_SNB);
		if (!snb->available)
		{
			chosen = zayatz;
			why = "zayatz: sampling fraction above 0.1, snb unavailable";
		}
		else if (snb->uniques < zayatz->uniques)
		{
			chosen = snb;
			why = "snb: sampling fraction above 0.1, snb below zayatz";
		}
		else
		{
			chosen = zayatz;
			why = "zayatz: sampling fraction above 0.1, zayatz at most snb";
		}
	}
	est->available = chosen->available;
	est->uniques = chosen->uniques;
	est->note = chosen->available ? why : psprintf("%s (%s)", why, chosen->note);
}

/* The estimate of one model, computed once */
static PopEstimate *
Estimate(const FreqOfFreq *fof, PopEstimate *all, PopModel model)
{
	PopEstimate *est = &all[model];

	if (est->done)
		return est;
	est->done = true;
	est->available = false;
	est->uniques = 0.0;
	if (fof->rows == 0.0)
	{
		est->note = "the sample has no rows";
		return est;
	}
	switch (model)
	{
		case POP_PITMAN:
			EstimatePitman(fof, est);
			break;
		case POP_ZAYATZ:
			EstimateZayatz(fof, est);
			break;
		case POP_SNB:
			EstimateSnb(fof, est);
			break;
		default:
			EstimateDankar(fof, all, est);
			break;
	}
	if (est->available && !(isfinite(est->uniques) && est->uniques >= 0.0))
	{
		est->available = false;
		est->note = psprintf("the estimate is not a finite number (%g)", est->uniques);
	}
	return est;
}

/*
 * The population uniques of one model (QidPopulationModel's index) for a
 * class-size profile, sizes ascending and counts, of a sample from a
 * population of the given size; false when the model has no estimate.
 * qid_lattice's population_uniqueness criterion.
 */
bool
QidPopulationUniques(const int64 *sizes, const int64 *counts, int nsizes,
					 double population, int model, double *uniques)
{
	FreqOfFreq	fof;
	PopEstimate all[POP_MODELS];
	PopEstimate *est;

	memset(&fof, 0, sizeof(fof));
	fof.nsizes = nsizes;
	fof.sizes = (int64 *) sizes;
	fof.counts = (int64 *) counts;
	for (int k = 0; k < nsizes; k++)
	{
		fof.rows += (double) sizes[k] * (double) counts[k];
		fof.classes += (double) counts[k];
		if (sizes[k] == 1)
			fof.m1 = (double) counts[k];
		if (sizes[k] == 2)
			fof.m2 = (double) counts[k];
	}
	fof.population = population;
	fof.fraction = Min(fof.rows / population, 1.0);
	memset(all, 0, sizeof(all));
	est = Estimate(&fof, all, (PopModel) model);
	*uniques = est->uniques;
	return est->available;
}

/* The index of a model's name for QidPopulationUniques, -1 when unknown */
int
QidPopulationModel(const char *name)
{
	for (int m = 0; m < POP_MODELS; m++)
		if (strcmp(name, model_names[m]) == 0)
			return m;
	return -1;
}

/* ---- the SQL function ---- */

pg_noreturn static void
ProfileError(const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("population_uniqueness: %s", what),
			 errdetail("A profile is a qid_profile from class_profile or class_size_profile: "
					   "class_sizes ascending, each at least 1, and class_counts, each at least 1, of the same length.")));
}

/* A bigint[] field of the profile, without NULLs */
static int64 *
ProfileArray(HeapTupleHeader profile, const char *field, int *n)
{
	bool		isnull;
	Datum		d = GetAttributeByName(profile, field, &isnull);
	ArrayType  *arr;
	Datum	   *elems;
	bool	   *nulls;
	int64	   *out;

	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("population_uniqueness: profile.%s must not be NULL", field)));
	arr = DatumGetArrayTypeP(d);
	if (ARR_NDIM(arr) > 1 || ARR_ELEMTYPE(arr) != INT8OID)
		ProfileError(psprintf("profile.%s must be a one-dimensional bigint[]", field));
	deconstruct_array(arr, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &elems, &nulls, n);
	out = palloc(sizeof(int64) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("population_uniqueness: profile.%s must not contain NULL", field)));
		out[i] = DatumGetInt64(elems[i]);
	}
	return out;
}

/* The frequency of frequencies of a qid_profile, checked */
static void
ReadProfile(HeapTupleHeader profile, double fraction, FreqOfFreq *fof)
{
	int			ncounts;
	bool		isnull;
	Datum		d;

	memset(fof, 0, sizeof(*fof));
	fof->sizes = ProfileArray(profile, "class_sizes", &fof->nsizes);
	fof->counts = ProfileArray(profile, "class_counts", &ncounts);
	if (ncounts != fof->nsizes)
		ProfileError(psprintf("profile.class_sizes has %d elements but profile.class_counts %d",
							  fof->nsizes, ncounts));
	for (int k = 0; k < fof->nsizes; k++)
	{
		if (fof->sizes[k] < 1 || fof->counts[k] < 1)
			ProfileError("class sizes and class counts must be at least 1");
		if (k > 0 && fof->sizes[k] <= fof->sizes[k - 1])
			ProfileError("class sizes must be strictly ascending");
		fof->rows += (double) fof->sizes[k] * (double) fof->counts[k];
		fof->classes += (double) fof->counts[k];
		if (fof->sizes[k] == 1)
			fof->m1 = (double) fof->counts[k];
		if (fof->sizes[k] == 2)
			fof->m2 = (double) fof->counts[k];
	}
	/* a profile's own totals must agree with its histogram */
	d = GetAttributeByName(profile, "rows", &isnull);
	if (!isnull && (double) DatumGetInt64(d) != fof->rows)
		ProfileError(psprintf("profile.rows is " INT64_FORMAT " but its histogram holds %.0f rows",
							  DatumGetInt64(d), fof->rows));
	d = GetAttributeByName(profile, "classes", &isnull);
	if (!isnull && (double) DatumGetInt64(d) != fof->classes)
		ProfileError(psprintf("profile.classes is " INT64_FORMAT " but its histogram holds %.0f classes",
							  DatumGetInt64(d), fof->classes));
	fof->fraction = fraction;
	fof->population = fof->rows / fraction;
	if (!isfinite(fof->population))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("population_uniqueness: sampling_fraction %s makes the population size n / f infinite",
						float8out_internal(fraction))));
}

/* The model argument: one model, or -1 for all */
static int
ModelArgument(text *arg)
{
	char	   *name = text_to_cstring(arg);

	if (strcmp(name, "all") == 0)
		return -1;
	for (int m = 0; m < POP_MODELS; m++)
		if (strcmp(name, model_names[m]) == 0)
			return m;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown population uniqueness model \"%s\"", name),
			 errhint("Use \"pitman\", \"zayatz\", \"snb\", \"dankar\" or \"all\".")));
	pg_unreachable();
}

/*
 * population_uniqueness(profile, sampling_fraction, model) -> (model,
 * population_uniques, population_share, available, note), one row per model
 * ("all": pitman, zayatz, snb, dankar).  The sampling fraction and the model
 * are checked before the profile, so callers can check them alone.
 */
Datum
qidrisk_population_uniqueness(PG_FUNCTION_ARGS)
{
	double		fraction;
	int			model;
	FreqOfFreq	fof;
	PopEstimate all[POP_MODELS];
	ReturnSetInfo *rsinfo;

	if (PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("population_uniqueness: %s must not be NULL",
						PG_ARGISNULL(1) ? "sampling_fraction" : "model")));
	fraction = PG_GETARG_FLOAT8(1);
	if (!(fraction > 0.0 && fraction <= 1.0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("sampling_fraction must be in (0, 1], not %s", float8out_internal(fraction)),
				 errdetail("The sampling fraction is the sample's share of the population: the population has n / f rows.")));
	model = ModelArgument(PG_GETARG_TEXT_PP(2));
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("population_uniqueness: profile must not be NULL")));
	ReadProfile(PG_GETARG_HEAPTUPLEHEADER(0), fraction, &fof);

	memset(all, 0, sizeof(all));
	InitMaterializedSRF(fcinfo, 0);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	for (int m = 0; m < POP_MODELS; m++)
	{
		PopEstimate *est;
		Datum		values[5];
		bool		nulls[5] = {false};

		if (model >= 0 && m != model)
			continue;
		est = Estimate(&fof, all, (PopModel) m);
		values[0] = CStringGetTextDatum(model_names[m]);
		values[1] = Float8GetDatum(est->uniques);
		values[2] = Float8GetDatum(est->uniques / fof.population);
		nulls[1] = nulls[2] = !est->available;
		values[3] = BoolGetDatum(est->available);
		values[4] = CStringGetTextDatum(est->note);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
