/*
 * gpd.c
 *	  Generalised Pareto fit of threshold excesses and the QaR dataset risk
 *	  (Béra et al. 2023, "Quantifying the contribution of individual records
 *	  to the reidentification risk").
 *
 * The fit is maximum likelihood (Davison & Smith 1990) through the profile
 * likelihood in theta = xi / beta (Grimshaw 1993): for a fixed theta the
 * likelihood is maximised by xi(theta) = mean(log(1 + theta y)) and
 * beta = xi / theta, so the search is one-dimensional.  That search scans a
 * grid over the whole admissible range of theta (xi between -1 and
 * GPD_XI_MAX) and refines the best grid point by golden-section search,
 * which cannot be led astray by a poor starting value.  When the maximum lies
 * on the boundary (no interior maximum with xi > -1, where maximum likelihood
 * estimators do not exist) the fit falls back to probability-weighted moments
 * (Hosking & Wallis 1987), then to the method of moments, each only if its
 * fit contains the data (every excess below the endpoint beta/|xi| when
 * xi < 0, so the log-likelihood is finite) and has xi >= -1 (below, the
 * likelihood is unbounded near the endpoint); failing both, to the boundary
 * fit xi = -1, beta = max(y): the uniform distribution on [0, max(y)], where
 * the likelihood restricted to xi >= -1 attains its supremum when no
 * interior maximum exists.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "gpd.h"
#include "qidrisk.h"

/* Largest shape parameter the likelihood search considers */
#define GPD_XI_MAX 10.0
/* Grid points on each side of theta = 0 */
#define GPD_GRID 64
/* Golden-section iterations: the bracket shrinks by 0.618 each */
#define GPD_GOLDEN_ITERATIONS 100
/* |theta| * max(y) below which the profile uses its theta -> 0 limit */
#define GPD_THETA_ZERO 1e-12

PG_FUNCTION_INFO_V1(gpd_fit);
PG_FUNCTION_INFO_V1(qar_risk_from_thetas);
PG_FUNCTION_INFO_V1(qar_tail_risk);

/* Excesses with their summaries, shared by the profile evaluations */
typedef struct GpdSample
{
	const double *y;
	int			n;
	double		mean;
	double		max;
} GpdSample;

/* Mean of log(1 + theta y): the shape maximising the likelihood at theta */
static double
GpdProfileXi(const GpdSample *s, double theta)
{
	double		sum = 0.0;

	for (int i = 0; i < s->n; i++)
		sum += log1p(theta * s->y[i]);
	return sum / s->n;
}

/* Profile log-likelihood at theta, divided by n */
static double
GpdProfile(const GpdSample *s, double theta)
{
	double		xi;

	if (fabs(theta) * s->max < GPD_THETA_ZERO)
		return -(log(s->mean) + 1.0);
	xi = GpdProfileXi(s, theta);
	return -(log(xi / theta) + 1.0 + xi);
}

/* Log-likelihood of excesses under GPD(xi, beta); -Inf outside the support */
double
GpdLogLikelihood(const double *y, int n, double xi, double beta)
{
	double		sum = 0.0;

	if (!(beta > 0.0))
		return -INFINITY;
	for (int i = 0; i < n; i++)
	{
		double		z = y[i] / beta;

		if (xi == 0.0)
			sum += z;
		else if (xi == -1.0)
		{
			/* uniform on [0, beta]: the density is 1/beta up to the endpoint */
			if (!(z <= 1.0))
				return -INFINITY;
		}
		else
		{
			double		t = 1.0 + xi * z;

			if (!(t > 0.0))
				return -INFINITY;
			sum += (1.0 + 1.0 / xi) * log(t);
		}
	}
	return -n * log(beta) - sum;
}

/* Theta at which xi(theta) reaches target, bisecting between lo and hi */
static double
GpdSolveTheta(const GpdSample *s, double lo, double hi, double target)
{
	/* invariant: xi(lo) < target (or lo outside the domain), xi(hi) >= target */
	for (int i = 0; i < 200; i++)
	{
		double		mid = 0.5 * (lo + hi);

		if (mid <= lo || mid >= hi)
			break;
		if (1.0 + mid * s->max > 0.0 && GpdProfileXi(s, mid) >= target)
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

/* Maximum likelihood fit; false when the likelihood has no interior maximum */
static bool
GpdFitMle(const GpdSample *s, GpdFit *fit)
{
	double		theta_lo,
				theta_hi,
				s_min,
				s_max;
	double		grid[2 * GPD_GRID + 1];
	double		best_value = -INFINITY;
	int			best = -1;
	int			npoints = 2 * GPD_GRID + 1;
	double		a,
				b,
				theta;

	/* lower end: xi(theta) = -1, or as close to -1/max(y) as doubles allow */
	theta_lo = GpdSolveTheta(s, -1.0 / s->max, 0.0, -1.0);

	/* upper end: xi(theta) = GPD_XI_MAX, found by doubling then bisection */
	theta_hi = 1.0 / s->mean;
	for (int i = 0; i < 1000 && GpdProfileXi(s, theta_hi) < GPD_XI_MAX; i++)
	{
		if (theta_hi > DBL_MAX / 4)
			break;
		theta_hi *= 2.0;
	}
	if (GpdProfileXi(s, theta_hi) >= GPD_XI_MAX)
		theta_hi = GpdSolveTheta(s, 0.0, theta_hi, GPD_XI_MAX);

	/*
	 * grid: on the negative side uniform in log(1 + theta max(y)), which is
	 * what drives xi(theta) to -1 near theta = -1/max(y), so shapes near -1
	 * get grid points too; log-spaced on the positive side
	 */
	s_min = log1p(theta_lo * s->max);
	s_max = log1p(theta_hi * s->mean);
	for (int k = 0; k < GPD_GRID; k++)
		grid[k] = expm1(s_min * (GPD_GRID - k) / GPD_GRID) / s->max;
	grid[GPD_GRID] = 0.0;
	for (int k = 1; k <= GPD_GRID; k++)
		grid[GPD_GRID + k] = expm1(s_max * k / GPD_GRID) / s->mean;

	for (int k = 0; k < npoints; k++)
	{
		double		v = GpdProfile(s, grid[k]);

		if (v > best_value)
		{
			best_value = v;
			best = k;
		}
	}
	if (best <= 0 || best >= npoints - 1)
		return false;

	/* golden-section refinement between the best point's neighbours */
	a = grid[best - 1];
	b = grid[best + 1];
	{
		const double r = 0.5 * (sqrt(5.0) - 1.0);
		double		c = b - r * (b - a),
					d = a + r * (b - a);
		double		fc = GpdProfile(s, c),
					fd = GpdProfile(s, d);

		for (int i = 0; i < GPD_GOLDEN_ITERATIONS; i++)
		{
			if (fc >= fd)
			{
				b = d;
				d = c;
				fd = fc;
				c = b - r * (b - a);
				fc = GpdProfile(s, c);
			}
			else
			{
				a = c;
				c = d;
				fc = fd;
				d = a + r * (b - a);
				fd = GpdProfile(s, d);
			}
			if (b - a <= 1e-15 * Max(fabs(a), fabs(b)))
				break;
		}
		theta = fc >= fd ? c : d;
		if (GpdProfile(s, grid[best]) > Max(fc, fd))
			theta = grid[best];
	}

	if (fabs(theta) * s->max < GPD_THETA_ZERO)
	{
		fit->xi = 0.0;
		fit->beta = s->mean;
	}
	else
	{
		fit->xi = GpdProfileXi(s, theta);
		fit->beta = fit->xi / theta;
	}
	if (!(fit->xi > -1.0) || !(fit->beta > 0.0) || !isfinite(fit->beta))
		return false;
	fit->method = GPD_METHOD_MLE;
	return true;
}

/* Order doubles ascending for qsort */
static int
GpdCompareDoubles(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return (x > y) - (x < y);
}

/* Probability-weighted moments (Hosking & Wallis 1987, plotting positions (i - 0.35)/n) */
static bool
GpdFitPwm(const GpdSample *s, GpdFit *fit)
{
	double	   *sorted = palloc(sizeof(double) * s->n);
	double		a1 = 0.0,
				a0 = s->mean,
				denom;

	memcpy(sorted, s->y, sizeof(double) * s->n);
	qsort(sorted, s->n, sizeof(double), GpdCompareDoubles);
	for (int i = 0; i < s->n; i++)
		a1 += (1.0 - (i + 1 - 0.35) / s->n) * sorted[i];
	a1 /= s->n;
	pfree(sorted);

	denom = a0 - 2.0 * a1;
	if (!(denom > 0.0))
		return false;
	/* Hosking & Wallis's k is -xi */
	fit->xi = 2.0 - a0 / denom;
	fit->beta = 2.0 * a0 * a1 / denom;
	fit->method = GPD_METHOD_PWM;
	return isfinite(fit->xi) && fit->beta > 0.0 && isfinite(fit->beta);
}

/* Method of moments: xi = (1 - mean^2/var)/2, beta = mean (1 + mean^2/var)/2 */
static bool
GpdFitMom(const GpdSample *s, GpdFit *fit)
{
	double		ss = 0.0,
				var,
				r;

	if (s->n < 2)
		return false;
	for (int i = 0; i < s->n; i++)
		ss += (s->y[i] - s->mean) * (s->y[i] - s->mean);
	var = ss / (s->n - 1);
	if (!(var > 0.0))
		return false;
	r = s->mean * s->mean / var;
	fit->xi = 0.5 * (1.0 - r);
	fit->beta = 0.5 * s->mean * (1.0 + r);
	fit->method = GPD_METHOD_MOM;
	return isfinite(fit->xi) && fit->beta > 0.0 && isfinite(fit->beta);
}

/* Uniform on [0, max(y)]: the supremum of the likelihood over xi >= -1 on the boundary */
static bool
GpdFitBoundary(const GpdSample *s, GpdFit *fit)
{
	fit->xi = -1.0;
	fit->beta = s->max;
	fit->method = GPD_METHOD_BOUNDARY;
	return true;
}

/* Does the fit contain every excess (finite log-likelihood)?  Sets its loglik */
static bool
GpdContainsData(const GpdSample *s, GpdFit *fit)
{
	fit->loglik = GpdLogLikelihood(s->y, s->n, fit->xi, fit->beta);
	return isfinite(fit->loglik);
}

/* A moment fit auto accepts: it contains the data and lies where likelihoods are bounded */
static bool
GpdAcceptable(const GpdSample *s, GpdFit *fit)
{
	return fit->xi >= -1.0 && GpdContainsData(s, fit);
}

/* Name of a fitting method as SQL shows it */
const char *
GpdMethodName(GpdMethod method)
{
	switch (method)
	{
		case GPD_METHOD_MLE:
			return "mle";
		case GPD_METHOD_PWM:
			return "pwm";
		case GPD_METHOD_MOM:
			return "mom";
		case GPD_METHOD_BOUNDARY:
			return "boundary";
		case GPD_METHOD_AUTO:
			break;
	}
	return "auto";
}

/* Parse a fitting method name */
static GpdMethod
GpdMethodFromName(const char *name)
{
	if (strcmp(name, "auto") == 0)
		return GPD_METHOD_AUTO;
	if (strcmp(name, "mle") == 0)
		return GPD_METHOD_MLE;
	if (strcmp(name, "pwm") == 0)
		return GPD_METHOD_PWM;
	if (strcmp(name, "mom") == 0)
		return GPD_METHOD_MOM;
	if (strcmp(name, "boundary") == 0)
		return GPD_METHOD_BOUNDARY;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown GPD fitting method \"%s\"", name),
			 errhint("Use auto, mle, pwm, mom or boundary.")));
	return GPD_METHOD_AUTO;		/* keep the compiler quiet */
}

/*
 * Fit a GPD to n excesses.  Returns false (fit untouched) when the sample
 * cannot be fitted: fewer than 2 excesses, or all of them zero, or the
 * requested method fails.  Errors on negative or non-finite excesses.
 */
bool
GpdFitExcesses(const double *y, int n, GpdMethod method, GpdFit *fit)
{
	GpdSample	s;
	double		sum = 0.0;
	bool		ok = false;

	if (n < 2)
		return false;
	s.y = y;
	s.n = n;
	s.max = 0.0;
	for (int i = 0; i < n; i++)
	{
		if (!isfinite(y[i]) || y[i] < 0.0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("GPD excesses must be finite numbers at least 0"),
					 errdetail("Excess %d is %g.", i + 1, y[i])));
		sum += y[i];
		s.max = Max(s.max, y[i]);
	}
	s.mean = sum / n;
	if (!(s.max > 0.0))
		return false;

	/*
	 * The fits are scale-equivariant (xi unchanged, beta scaled), but their
	 * squares and sums overflow or underflow for excesses near the ends of
	 * the double range: fit those scaled by a power of two, which is exact,
	 * into [0.5, 1), and scale beta back.  Ordinary excesses are untouched.
	 */
	if (s.max > 0x1p500 || s.max < 0x1p-500 || !isfinite(sum))
	{
		double	   *scaled = palloc(sizeof(double) * n);
		int			exponent;
		bool		scaled_ok;

		(void) frexp(s.max, &exponent);
		for (int i = 0; i < n; i++)
			scaled[i] = ldexp(y[i], -exponent);
		scaled_ok = GpdFitExcesses(scaled, n, method, fit);
		pfree(scaled);
		if (!scaled_ok)
			return false;
		fit->beta = ldexp(fit->beta, exponent);
		if (!isfinite(fit->beta) || !(fit->beta > 0.0))
			return false;		/* the scale itself is not a double */
		fit->loglik = GpdLogLikelihood(y, n, fit->xi, fit->beta);
		return isfinite(fit->loglik);
	}

	switch (method)
	{
		case GPD_METHOD_MLE:
			ok = GpdFitMle(&s, fit);
			break;
		case GPD_METHOD_PWM:
			ok = GpdFitPwm(&s, fit);
			break;
		case GPD_METHOD_MOM:
			ok = GpdFitMom(&s, fit);
			break;
		case GPD_METHOD_BOUNDARY:
			ok = GpdFitBoundary(&s, fit);
			break;
		case GPD_METHOD_AUTO:
			/*
			 * a moment fit whose endpoint lies below an excess is no fit, and
			 * with xi < -1 the likelihood is unbounded near the endpoint, so
			 * the boundary fit stands for both
			 */
			ok = (GpdFitMle(&s, fit) && GpdContainsData(&s, fit)) ||
				(GpdFitPwm(&s, fit) && GpdAcceptable(&s, fit)) ||
				(GpdFitMom(&s, fit) && GpdAcceptable(&s, fit)) ||
				GpdFitBoundary(&s, fit);
			break;
	}
	/* whatever the method, a returned fit has a finite likelihood */
	return ok && GpdContainsData(&s, fit);
}

/* Logit of a probability in (0, 1) */
static inline double
Logit(double x)
{
	return log(x) - log1p(-x);
}

/* Inverse logit, without overflow for large |z| */
static inline double
Expit(double z)
{
	if (z >= 0.0)
		return 1.0 / (1.0 + exp(-z));
	return exp(z) / (1.0 + exp(z));
}

/* Clamp a theta into [1/(2L), 1 - 1/(2L)] so its logit is finite */
static inline double
QarClamp(double theta, double eps)
{
	if (eps <= 0.0)
		return theta;
	return Min(Max(theta, eps), 1.0 - eps);
}

/*
 * T = expit(logit(u) + beta/xi (x^-xi - 1)), x = n_p alpha / n_u; the
 * xi -> 0 limit is expit(logit(u) - beta ln x), and expm1 keeps small xi exact.
 */
static double
QarTailRisk(double logit_u, double xi, double beta, double x)
{
	double		q;

	if (xi == 0.0)
		q = -beta * log(x);
	else
		q = beta * expm1(-xi * log(x)) / xi;
	return Expit(logit_u + q);
}

/* Check that alpha and pi_u are probabilities strictly between 0 and 1 */
void
QarCheckProbabilities(double alpha, double pi_u)
{
	if (!(alpha > 0.0 && alpha < 1.0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("alpha must lie strictly between 0 and 1"),
				 errdetail("alpha is %g.", alpha)));
	if (!(pi_u > 0.0 && pi_u < 1.0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("pi_u must lie strictly between 0 and 1"),
				 errdetail("pi_u is %g.", pi_u)));
}

/*
 * QaR dataset risk from n_p thetas (sorted ascending in place).  rows > 0
 * clamps thetas to [1/(2 rows), 1 - 1/(2 rows)] before the logit; rows = 0
 * requires thetas strictly inside (0, 1).  Returns false and sets *reason when
 * the risk is undefined (fewer than 2 exceedances, alpha too large, no fit),
 * so callers choose between an error and a NULL.
 */
bool
QarRiskFromSorted(double *thetas, int64 n_p, double alpha, double pi_u,
				  int64 rows, QarRisk *risk, const char **reason)
{
	int64		k;
	double		u,
				uc,
				eps = rows > 0 ? 0.5 / rows : 0.0,
				lu;
	double	   *excess;
	int64		first;
	int			n_u;
	GpdFit		fit;


	/* u: the empirical quantile of type 1, theta_(ceil(n_p (1 - pi_u))) */
	k = (int64) ceil((1.0 - pi_u) * (double) n_p);
	k = Max(k, 1);
	k = Min(k, n_p);
	u = thetas[k - 1];
	first = k;
	while (first < n_p && thetas[first] <= u)
		first++;
	n_u = (int) (n_p - first);

	risk->u = u;
	risk->n_p = n_p;
	risk->n_u = n_u;
	risk->rows = rows;
	if (n_u < 2)
	{
		*reason = "fewer than 2 thetas exceed the threshold u";
		return false;
	}
	if (alpha * (double) n_p >= (double) n_u)
	{
		*reason = "alpha is not below the exceedance fraction n_u / n_p";
		return false;
	}

	uc = QarClamp(u, eps);
	lu = Logit(uc);
	excess = palloc(sizeof(double) * n_u);
	for (int i = 0; i < n_u; i++)
		excess[i] = Logit(QarClamp(thetas[first + i], eps)) - lu;
	if (!GpdFitExcesses(excess, n_u, GPD_METHOD_AUTO, &fit))
	{
		pfree(excess);
		*reason = "no GPD fit exists for the exceedances";
		return false;
	}
	pfree(excess);

	risk->risk = QarTailRisk(lu, fit.xi, fit.beta, alpha * (double) n_p / n_u);
	risk->fit = fit;
	return true;
}

/* Check thetas are finite values in [0, 1], inside (0, 1) unless rows clamps them */
static void
QarCheckThetas(const double *thetas, int n, bool clamped)
{
	for (int i = 0; i < n; i++)
	{
		if (!(thetas[i] >= 0.0 && thetas[i] <= 1.0))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("thetas must lie between 0 and 1"),
					 errdetail("Theta %d is %g.", i + 1, thetas[i])));
		if (!clamped && (thetas[i] == 0.0 || thetas[i] == 1.0))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("theta %g has an infinite logit", thetas[i]),
					 errdetail("Theta %d is %g.", i + 1, thetas[i]),
					 errhint("Pass rows, the table's row count, to clamp thetas to [1/(2 rows), 1 - 1/(2 rows)].")));
	}
}

/* Copy a float8[] without NULLs into a palloc'd array */
double *
QarFloatArray(ArrayType *array, const char *name, int *count)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	double	   *values;

	if (ARR_NDIM(array) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s must be a one-dimensional array", name)));
	deconstruct_array(array, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &elems, &nulls, &n);
	values = palloc(sizeof(double) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not contain NULL", name)));
		values[i] = DatumGetFloat8(elems[i]);
	}
	*count = n;
	return values;
}

/* Raise the error of an undefined risk */
void
QarRiskError(const QarRisk *risk, const char *reason, double alpha, double pi_u)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("QaR risk is undefined: %s", reason),
			 errdetail("n_p = " INT64_FORMAT " subsets, u = %g, n_u = %d exceedances, alpha = %g, pi_u = %g.",
					   risk->n_p, risk->u, risk->n_u, alpha, pi_u),
			 errhint("Raise pi_u, lower alpha, or use more columns (a larger n_p); thetas equal to u do not count as exceedances.")));
}

/* Build the result row of a risk */
HeapTuple
QarRiskTuple(TupleDesc tupdesc, const QarRisk *risk)
{
	Datum		values[8];
	bool		nulls[8] = {false};

	values[0] = Float8GetDatum(risk->risk);
	values[1] = Float8GetDatum(risk->u);
	values[2] = Int64GetDatum(risk->n_p);
	values[3] = Int32GetDatum(risk->n_u);
	values[4] = Float8GetDatum(risk->fit.xi);
	values[5] = Float8GetDatum(risk->fit.beta);
	values[6] = CStringGetTextDatum(GpdMethodName(risk->fit.method));
	values[7] = Int64GetDatum(risk->rows);
	nulls[7] = risk->rows <= 0;
	return heap_form_tuple(tupdesc, values, nulls);
}

/* gpd_fit(excesses float8[], method text) -> (xi, beta, fit_method, loglik, n) */
Datum
gpd_fit(PG_FUNCTION_ARGS)
{
	ArrayType  *array = PG_GETARG_ARRAYTYPE_P(0);
	GpdMethod	method = GpdMethodFromName(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	TupleDesc	tupdesc;
	int			n;
	double	   *y = QarFloatArray(array, "excesses", &n);
	GpdFit		fit;
	Datum		values[5];
	bool		nulls[5] = {false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "gpd_fit must return a composite type");
	if (n < 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a GPD fit needs at least 2 excesses, not %d", n)));
	if (!GpdFitExcesses(y, n, method, &fit))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("no GPD fit by method %s exists for these excesses", GpdMethodName(method)),
				 errdetail("All excesses are zero, their variance is zero, the likelihood has no maximum with xi > -1, the fit's endpoint beta/|xi| lies below the largest excess, or the scale beta lies beyond the double range."),
				 method != GPD_METHOD_AUTO ?
				 errhint("Use method auto, which falls back from mle to pwm, mom and boundary.") : 0));

	values[0] = Float8GetDatum(fit.xi);
	values[1] = Float8GetDatum(fit.beta);
	values[2] = CStringGetTextDatum(GpdMethodName(fit.method));
	values[3] = Float8GetDatum(fit.loglik);
	values[4] = Int32GetDatum(n);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

/* qar_risk_from_thetas(thetas float8[], alpha, pi_u, rows bigint) -> qar risk row */
Datum
qar_risk_from_thetas(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	int			n;
	double	   *thetas;
	double		alpha,
				pi_u;
	int64		rows = 0;
	QarRisk		risk;
	const char *reason;

	for (int i = 0; i < 3; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not be NULL", i == 0 ? "thetas" : i == 1 ? "alpha" : "pi_u")));
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "qar_risk_from_thetas must return a composite type");
	thetas = QarFloatArray(PG_GETARG_ARRAYTYPE_P(0), "thetas", &n);
	alpha = PG_GETARG_FLOAT8(1);
	pi_u = PG_GETARG_FLOAT8(2);
	if (!PG_ARGISNULL(3))
	{
		rows = PG_GETARG_INT64(3);
		if (rows < 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("rows must be at least 1")));
	}
	QarCheckProbabilities(alpha, pi_u);
	if (n < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("thetas must not be empty")));
	QarCheckThetas(thetas, n, rows > 0);
	qsort(thetas, n, sizeof(double), GpdCompareDoubles);
	if (!QarRiskFromSorted(thetas, n, alpha, pi_u, rows, &risk, &reason))
		QarRiskError(&risk, reason, alpha, pi_u);
	PG_RETURN_DATUM(HeapTupleGetDatum(QarRiskTuple(BlessTupleDesc(tupdesc), &risk)));
}

/* Sort doubles ascending */
void
QarSortDoubles(double *values, int64 n)
{
	qsort(values, n, sizeof(double), GpdCompareDoubles);
}

/* qar_tail_risk(u, xi, beta, n_p, n_u, alpha): the slides' formula alone */
Datum
qar_tail_risk(PG_FUNCTION_ARGS)
{
	double		u = PG_GETARG_FLOAT8(0);
	double		xi = PG_GETARG_FLOAT8(1);
	double		beta = PG_GETARG_FLOAT8(2);
	int64		n_p = PG_GETARG_INT64(3);
	int32		n_u = PG_GETARG_INT32(4);
	double		alpha = PG_GETARG_FLOAT8(5);

	if (!(u > 0.0 && u < 1.0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("u must lie strictly between 0 and 1")));
	if (!isfinite(xi) || !(beta > 0.0) || !isfinite(beta))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("xi must be finite and beta a finite number above 0")));
	if (n_u < 1 || n_p < n_u)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("n_u must lie between 1 and n_p")));
	QarCheckProbabilities(alpha, 0.5);
	/* past the exceedance fraction the tail formula falls below u: refuse, as qar_risk does */
	if (alpha * (double) n_p >= (double) n_u)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("alpha must be below the exceedance fraction n_u / n_p"),
				 errdetail("alpha is %g, n_u / n_p is %d / " INT64_FORMAT ".", alpha, n_u, n_p)));
	PG_RETURN_FLOAT8(QarTailRisk(Logit(u), xi, beta, alpha * (double) n_p / n_u));
}
