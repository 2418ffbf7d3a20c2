#!/usr/bin/env python3
"""Reference values for test/pgtap/precision.sql, computed outside qidrisk.

mpmath at 60 significant digits evaluates each quantity from its defining
formula, with the function's double arguments taken exactly:

  individual_risk(f, F)  p = f/F, q = 1 - p (exact in mpmath);
      f = 1:  (p/q) ln(1/p)                      (Benedetti and Franconi 1998)
      f = 2:  p/q - (p/q)^2 ln(1/p)
      exact, f >= 3:  p * integral_0^1 s^(f-1) / (p + q s) ds, the integral
          as 2F1(1, f; f+1; -q/p) / (p f) and checked against numerical
          quadrature (mpmath.quad) to 1e-30
      approx, f >= 3:  p / (f - q)               (sdcMicro's default)
  birthday_uniqueness_poisson(k, n)  e^{-k} (1 + k/n)^n, as exp(n log1p(k/n) - k)
  birthday_uniqueness_poisson_product(k, value, weight)  prod e^{-k w/W} (1 + k w/W)

Run: python3 test/reference/precision.py  (prints the SQL VALUES rows)
"""
import mpmath as mp

mp.mp.dps = 60


def risk(f, F, method):
    f = mp.mpf(f)
    F = mp.mpf(F)
    if F <= f:
        return 1 / f
    p = f / F
    q = 1 - p
    if f == 1:
        return (p / q) * mp.log(1 / p)
    if f == 2:
        return p / q - (p / q) ** 2 * mp.log(1 / p)
    if method == 'approx':
        return p / (f - q)
    j = mp.hyp2f1(1, f, f + 1, -q / p) / (p * f)
    if F < 1e30:
        jq = mp.quad(lambda s: s ** (f - 1) / (p + q * s), [0, min(p / q, 1), 1])
        assert abs(jq - j) <= mp.mpf('1e-30') * j, (f, F, jq, j)
    return p * j


def fmt(x):
    return '%.17g' % float(x)


def risk_rows():
    rows = []
    fs = [1, 2, 3, 5, 10, 63, 64, 100, 1000]
    Fs = [1.5, 2.5, 4.0, 10.0, 100.0, 1e3, 1e6, 1e9, 1e12, 4e15, 1e16, 1e17, 1e20,
          1e30, 1e50, 1e100, 1e200, 1e300]
    for method in ('approx', 'exact'):
        for f in fs:
            for F in Fs:
                if F <= f:
                    continue
                if method == 'approx' and f <= 2:
                    continue
                rows.append("(%d, %s::float8, '%s', %s::float8)" % (f, fmt(F), method,
                                                                     fmt(risk(f, F, method))))
    return rows


def poisson(k, n):
    k = mp.mpf(k)
    n = mp.mpf(n)
    # (1 + k/n)^n as exp(n log1p(k/n)): 1 + k/n would round to 1 for n = 1e300
    return mp.exp(n * mp.log1p(k / n) - k)


def poisson_rows():
    rows = []
    for k in [2, 3, 10, 100, 1000, 10 ** 6]:
        for n in [1e-308, 1e-300, 1e-10, 0.5, 1.0, 365.0, 1e6, 1e12, 1e15, 1e100, 1e300]:
            v = poisson(k, n)
            if v >= mp.mpf('1e-300'):
                rows.append('(%d, %s::float8, %s::float8)' % (k, fmt(n), fmt(v)))
    return rows


def product(k, weights):
    k = mp.mpf(k)
    total = sum(mp.mpf(w) for w in weights)
    r = mp.mpf(1)
    for w in weights:
        x = k * mp.mpf(w) / total
        r *= mp.exp(mp.log1p(x) - x)
    return r


if __name__ == '__main__':
    print('-- individual_risk')
    print(',\n'.join(risk_rows()))
    print('-- birthday_uniqueness_poisson')
    print(',\n'.join(poisson_rows()))
    print('-- products')
    for k, ws in [(3, [1e300, 1e300]), (2, [1e300, 1e-300]), (10, [1e308, 1.0]),
                  (9223372036854775807, [1e300])]:
        print(k, ws, fmt(product(k, ws)))
