#!/usr/bin/env python3
"""Reference values for test/pgtap/population_uniqueness.sql, computed
outside qidrisk with mpmath at 50 digits, each model from its definition.

A profile is a sample's frequency of frequencies: m[j] classes of j rows,
n = sum j m[j] rows, K = sum m[j] classes, sampling fraction f, population
size N = n / f.

pitman   Pitman's sampling formula (Hoshino 2001): the log-likelihood
             sum_{i=1}^{K-1} log(theta + i alpha) - sum_{i=1}^{n-1} log(theta + i)
             + sum_j m[j] sum_{i=1}^{j-1} log(i - alpha)
         maximised by mpmath's findroot on its two score equations, summed
         term by term, from the best point of a grid of the log-likelihood;
         the root must be a maximum (negative definite Hessian, no grid point
         higher) with 0 < alpha < 1.  Population uniques
             Gamma(theta + 1) / Gamma(theta + alpha) * N^alpha.
zayatz   Zayatz (1991): P(sample unique is population unique)
             = m[1] h(1) / sum_j m[j] h(j),
         h(j) = j C(N-j, n-1) / C(N, n) the hypergeometric probability that
         a population class of j rows gives one sample row (Gamma functions
         for a real N); population uniques m[1] * that / f.
snb      slide negative binomial (Chen and Keller-McNulty 1998): population
         class sizes 1 + NegBin(alpha, beta), K' population classes (K' by
         Haas and Stokes' modified Shlosser estimator D_Sh3), Bernoulli
         sampling at f.  The expected sample classes of sizes 1 and 2,
             E[m_j] = K' sum_{F >= j} P(F) C(F, j) f^j (1-f)^(F-j),
         are summed term by term (not from a closed form; by mpmath's nsum
         when more than 10^5 terms would be needed) and set equal to
         m[1] and m[2]; findroot solves them (from the closed forms' root,
         which only serves as a start).  Population uniques
         K' beta^alpha.  The script also checks, at each root, the closed
         forms qidrisk uses against the sums.
dankar   Dankar et al. (2012): pitman when f <= 0.1 (zayatz when pitman has
         no estimate), otherwise the smaller of zayatz and snb (zayatz when
         snb has none); 0 without sample uniques.

The script also scans ARX's misprinted slide negative binomial equations for
roots (see docs/sample_risk.md) and reports how many profiles have one.

Run: python3 test/reference/population_uniqueness.py  (prints the SQL rows)
"""
import math
import random

import mpmath as mp

mp.mp.dps = 50


def totals(m):
    n = sum(j * c for j, c in m.items())
    k = sum(m.values())
    return n, k


# ---- pitman ----

def pitman_loglik_float(m, n, k, theta, alpha):
    lg = math.lgamma
    x = theta / alpha
    return ((k - 1) * math.log(alpha) + lg(x + k) - lg(x + 1) - lg(theta + n) + lg(theta + 1)
            + sum(c * (lg(j - alpha) - lg(1 - alpha)) for j, c in m.items()))


def pitman_scores(m, n, k, theta, alpha):
    s_theta = (mp.fsum(1 / (theta + i * alpha) for i in range(1, k))
               - mp.fsum(1 / (theta + i) for i in range(1, n)))
    s_alpha = (mp.fsum(i / (theta + i * alpha) for i in range(1, k))
               - mp.fsum(c * mp.fsum(1 / (i - alpha) for i in range(1, j))
                         for j, c in m.items() if j > 1))
    return s_theta, s_alpha


def pitman_hessian(m, n, k, theta, alpha):
    tt = (-mp.fsum(1 / (theta + i * alpha) ** 2 for i in range(1, k))
          + mp.fsum(1 / (theta + i) ** 2 for i in range(1, n)))
    ta = -mp.fsum(i / (theta + i * alpha) ** 2 for i in range(1, k))
    aa = (-mp.fsum(i * i / (theta + i * alpha) ** 2 for i in range(1, k))
          - mp.fsum(c * mp.fsum(1 / (i - alpha) ** 2 for i in range(1, j))
                    for j, c in m.items() if j > 1))
    return tt, ta, aa


def pitman(m, f):
    n, k = totals(m)
    if k <= 1 or k >= n:
        return None
    best = None
    for ia in range(1, 200):
        alpha = ia / 200
        for it in range(-60, 121):
            theta = 10 ** (it / 20) - alpha * 0.999
            ll = pitman_loglik_float(m, n, k, theta, alpha)
            if best is None or ll > best[0]:
                best = (ll, theta, alpha)
    _, theta0, alpha0 = best
    try:
        theta, alpha = mp.findroot(lambda t, a: pitman_scores(m, n, k, t, a),
                                   (mp.mpf(theta0), mp.mpf(alpha0)), tol=mp.mpf('1e-40'))
    except (ValueError, ZeroDivisionError):
        return None
    if not (0 < alpha < 1 and theta > -alpha):
        return None
    tt, ta, aa = pitman_hessian(m, n, k, theta, alpha)
    assert tt < 0 and tt * aa - ta * ta > 0, 'not a maximum'
    assert pitman_loglik_float(m, n, k, float(theta), float(alpha)) >= best[0] - 1e-9
    big_n = mp.mpf(n) / f
    return mp.exp(mp.loggamma(theta + 1) - mp.loggamma(theta + alpha)) * big_n ** alpha


# ---- zayatz ----

def zayatz(m, f):
    n, k = totals(m)
    m1 = m.get(1, 0)
    if m1 == 0:
        return mp.mpf(0)
    big_n = mp.mpf(n) / f

    def h(j):
        # j C(N-j, n-1) / C(N, n), Gamma functions for a real N; 0 when N-j < n-1
        if big_n - j - (n - 1) < 0:
            return mp.mpf(0)
        return j * mp.binomial(big_n - j, n - 1) / mp.binomial(big_n, n)

    return m1 * (m1 * h(1) / mp.fsum(c * h(j) for j, c in m.items())) / f


# ---- snb ----

def shlosser3(m, f):
    n, k = totals(m)
    q = mp.mpf(f)
    m1 = m.get(1, 0)
    a = mp.fsum(j * q * q * (1 - q * q) ** (j - 1) * c for j, c in m.items())
    b = mp.fsum((1 - q) ** j * ((1 + q) ** j - 1) * c for j, c in m.items())
    c3 = mp.fsum((1 - q) ** j * c for j, c in m.items())
    d = mp.fsum(j * q * (1 - q) ** (j - 1) * c for j, c in m.items())
    if c3 == 0:
        return mp.mpf(k)
    return k + m1 * (a / b) * (c3 / d) ** 2


def snb_term(alpha, beta, f, j, big_f):
    return (mp.binomial(big_f + alpha - 2, big_f - 1) * beta ** alpha * (1 - beta) ** (big_f - 1)
            * mp.binomial(big_f, j) * f ** j * (1 - f) ** (big_f - j))


def snb_sum(alpha, beta, f, j):
    """sum_{F >= j} C(F+alpha-2, F-1) beta^alpha (1-beta)^(F-1) C(F, j) f^j (1-f)^(F-j), term by
    term; a series whose terms shrink too slowly for that (more than 10^5 terms) by mpmath's nsum,
    which extrapolates the partial sums (Richardson, Shanks)"""
    if mp.log(mp.mpf('1e-48')) / mp.log((1 - beta) * (1 - f)) > 100000:
        return mp.nsum(lambda big_f: snb_term(alpha, beta, f, j, big_f), [j, mp.inf])
    big_f = j
    t = (mp.binomial(big_f + alpha - 2, big_f - 1) * beta ** alpha * (1 - beta) ** (big_f - 1)
         * mp.binomial(big_f, j) * f ** j)
    s = t
    for _ in range(5000000):
        r = (big_f + alpha - 1) / big_f * (1 - beta) * (big_f + 1) / (big_f + 1 - j) * (1 - f)
        t *= r
        big_f += 1
        s += t
        if r < 1 and t < s * mp.mpf('1e-48'):
            return s
    raise ArithmeticError('the series did not converge')


def snb_closed(alpha, beta, f):
    d = (1 - f) * (1 - beta)
    dd = 1 - d
    e1 = f * (beta / dd) ** alpha * (1 + alpha * d / dd)
    e2 = alpha * beta ** alpha * f ** 2 * (1 - beta) / 2 * dd ** (-(alpha + 2)) * (2 - (1 - alpha) * d)
    return e1, e2


def snb_start(kk, m1, m2, f):
    """best point of a grid of the closed forms' log residuals, in floats (a start only)"""
    best = None
    kk, f = float(kk), float(f)
    for ia in range(-60, 61):
        alpha = 10 ** (ia / 15)
        for ib in range(-200, 200):
            beta = 1 / (1 + math.exp(-ib / 10))
            q = 1 / (1 + math.exp(ib / 10))
            d = (1 - f) * q
            dd = beta + f * q
            l1 = math.log(kk * f) + alpha * (math.log(beta) - math.log(dd)) + math.log1p(alpha * d / dd)
            l2 = (math.log(kk * alpha * f * f * q / 2) + alpha * math.log(beta) - (alpha + 2) * math.log(dd)
                  + math.log(2 - (1 - alpha) * d))
            r = (l1 - math.log(m1)) ** 2 + (l2 - math.log(m2)) ** 2
            if best is None or r < best[0]:
                best = (r, alpha, beta)
    return best


def snb(m, f):
    m1, m2 = m.get(1, 0), m.get(2, 0)
    if m1 == 0 or m2 == 0:
        return None
    f = mp.mpf(f)
    kk = shlosser3(m, f)
    r, alpha0, beta0 = snb_start(kk, m1, m2, f)
    if r > 1e-2:
        return None

    def closed(s, t):
        alpha, beta = mp.exp(s), 1 / (1 + mp.exp(-t))
        e1, e2 = snb_closed(alpha, beta, f)
        return mp.log(kk * e1 / m1), mp.log(kk * e2 / m2)

    def residuals(s, t):
        alpha, beta = mp.exp(s), 1 / (1 + mp.exp(-t))
        return (mp.log(kk * snb_sum(alpha, beta, f, 1) / m1),
                mp.log(kk * snb_sum(alpha, beta, f, 2) / m2))

    # the closed forms' root is a start; the root returned is the summed series'
    s, t = mp.findroot(closed, (mp.log(alpha0), mp.log(beta0 / (1 - beta0))), tol=mp.mpf('1e-40'))
    s, t = mp.findroot(residuals, (s, t), tol=mp.mpf('1e-40'))
    alpha, beta = mp.exp(s), 1 / (1 + mp.exp(-t))
    e1, e2 = snb_closed(alpha, beta, f)
    assert abs(kk * e1 / m1 - 1) < mp.mpf('1e-25') and abs(kk * e2 / m2 - 1) < mp.mpf('1e-25')
    return kk * beta ** alpha


def arx_misprint_roots(m, f, steps=200):
    """grid cells (log alpha in [-12, 8], logit beta in [-25, 25]) where both equations of ARX's
    ModelSNB change sign: its E[m_2] has D^(alpha+2) where the expectation has D^-(alpha+2)"""
    m1, m2 = m.get(1, 0), m.get(2, 0)
    if m1 == 0 or m2 == 0 or f >= 1:
        return None
    kk = float(shlosser3(m, f))

    def residuals(alpha, t):
        beta, q = 1 / (1 + math.exp(-t)), 1 / (1 + math.exp(t))
        d = (1 - f) * q
        dd = beta + f * q
        l1 = math.log(kk * f) + alpha * (math.log(beta) - math.log(dd)) + math.log1p(alpha * d / dd) - math.log(m1)
        inner = 2 - (1 - alpha) * d
        l2 = (math.log(kk * alpha * f * f * q / 2) + alpha * math.log(beta) + (alpha + 2) * math.log(dd)
              + math.log(inner) - math.log(m2)) if inner > 0 else -1e300
        return l1, l2

    grid = [[residuals(math.exp(-12 + 20 * i / steps), -25 + 50 * j / steps) for j in range(steps + 1)]
            for i in range(steps + 1)]
    cells = 0
    for i in range(steps):
        for j in range(steps):
            corners = [grid[i][j], grid[i + 1][j], grid[i][j + 1], grid[i + 1][j + 1]]
            if all(min(c[e] for c in corners) < 0 < max(c[e] for c in corners) for e in (0, 1)):
                cells += 1
    return cells


def dankar(values, m, f):
    if m.get(1, 0) == 0:
        return mp.mpf(0), 'none'
    if f <= 0.1:
        return (values['pitman'], 'pitman') if values['pitman'] is not None else (values['zayatz'], 'zayatz')
    if values['snb'] is not None and values['snb'] < values['zayatz']:
        return values['snb'], 'snb'
    return values['zayatz'], 'zayatz'


# ---- profiles ----

def sample_profile(rng, population_sizes, f):
    """frequency of frequencies of a Bernoulli(f) sample of a population's classes"""
    m = {}
    for size in population_sizes:
        j = sum(1 for _ in range(size) if rng.random() < f)
        if j:
            m[j] = m.get(j, 0) + 1
    return m


def crp_population(rng, big_n, alpha, theta):
    """class sizes of big_n draws of Pitman's Chinese restaurant process"""
    sizes = []
    owner = []
    for i in range(big_n):
        if not sizes or rng.random() * (i + theta) < theta + alpha * len(sizes):
            sizes.append(0)
            c = len(sizes) - 1
        else:
            # a class with probability proportional to its size minus alpha
            while True:
                c = owner[rng.randrange(i)]
                if rng.random() * sizes[c] < sizes[c] - alpha:
                    break
        sizes[c] += 1
        owner.append(c)
    return sizes


def zipf_population(rng, big_n, classes, s):
    weights = [1 / (c + 1) ** s for c in range(classes)]
    total = sum(weights)
    cum = []
    acc = 0
    for w in weights:
        acc += w / total
        cum.append(acc)
    sizes = [0] * classes
    import bisect
    for _ in range(big_n):
        sizes[min(bisect.bisect_left(cum, rng.random()), classes - 1)] += 1
    return [x for x in sizes if x]


def profiles():
    rng = random.Random(20120066)
    out = []
    for seed_f in (0.01, 0.05, 0.1, 0.2, 0.35, 0.6):
        out.append((sample_profile(rng, crp_population(rng, min(60000, int(2000 / seed_f)), 0.6, 30),
                                   seed_f), seed_f))
    for seed_f in (0.02, 0.1, 0.3, 0.5):
        out.append((sample_profile(rng, zipf_population(rng, min(60000, int(2000 / seed_f)), 20000, 1.1),
                                   seed_f), seed_f))
    out.append((sample_profile(rng, [rng.randint(1, 40) for _ in range(3000)], 0.15), 0.15))
    # hand-made: every row unique; no class of 2; no unique; a census (f = 1)
    out.append(({1: 50}, 0.05))
    out.append(({1: 30, 3: 10, 5: 2}, 0.3))
    out.append(({2: 20, 3: 5}, 0.05))
    out.append(({1: 40, 2: 12, 4: 3}, 1.0))
    # a large class at a small fraction: Zayatz's product in long runs of factors near 1
    out.append(({1: 300, 3: 10, 7: 2, 30000: 1}, 2e-5))
    return out


def fmt(x):
    return 'NULL' if x is None else '%.17g' % float(x)


if __name__ == '__main__':
    misprint = []
    for m, f in profiles():
        misprint.append(arx_misprint_roots(m, f))
        values = {'pitman': pitman(m, f), 'zayatz': zayatz(m, f), 'snb': snb(m, f)}
        values['dankar'], chosen = dankar(values, m, f)
        sizes = sorted(m)
        print("(ARRAY[%s]::bigint[], ARRAY[%s]::bigint[], %r, %s, %s, %s, %s, '%s')," % (
            ','.join(str(j) for j in sizes), ','.join(str(m[j]) for j in sizes), f,
            fmt(values['pitman']), fmt(values['zayatz']), fmt(values['snb']),
            fmt(values['dankar']), chosen))
    checked = [c for c in misprint if c is not None]
    print("-- ARX's misprinted SNB equations change sign together on a grid for %d of the %d profiles"
          " with classes of one and two rows (f < 1)" % (sum(1 for c in checked if c), len(checked)))
