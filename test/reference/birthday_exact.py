#!/usr/bin/env python3
"""Reference values for the birthday_uniqueness_exact tests in
test/pgtap/birthday_precision.sql, computed outside qidrisk with mpmath.

  uniform over N values:  pi_u(k, N) = prod_{i<k} (1 - i/N), at 60 digits
  weighted:  k! e_k(p) with p_i = w_i / sum(w), the elementary symmetric
             polynomial by the recurrence e_j <- e_j + p e_{j-1} at 40
             digits (mpmath's exponent range never underflows)

Run: python3 test/reference/birthday_exact.py
"""
import mpmath as mp


def uniform(k, n):
    mp.mp.dps = 60
    r = mp.mpf(1)
    for i in range(k):
        r *= 1 - mp.mpf(i) / n
    return r


def weighted(ks, weights):
    mp.mp.dps = 40
    total = mp.fsum(mp.mpf(w) for w in weights)
    kmax = max(ks)
    e = [mp.mpf(0)] * (kmax + 1)
    e[0] = mp.mpf(1)
    for i, w in enumerate(weights):
        p = mp.mpf(w) / total
        for j in range(min(i + 1, kmax), 0, -1):
            e[j] += p * e[j - 1]
    return {k: mp.factorial(k) * e[k] for k in ks}


if __name__ == '__main__':
    for k in (1600, 1800, 2100, 3000):
        print('uniform 10000', k, '%.17g' % float(uniform(k, 10000)))
    # values 1..3000 weighted 1 + i % 7
    ws = [1 + i % 7 for i in range(1, 3001)]
    for k, v in sorted(weighted([200, 600, 900, 1200], ws).items()):
        print('weighted 3000', k, '%.17g' % float(v) if v > mp.mpf('1e-300') else mp.nstr(v, 17))
    # n0 values of weight 1e-200 before the others of weight 1: the young
    # levels sit far below the older ones, so their exponents are raised
    for k, n, n0 in ((60, 120, 50), (30, 100, 20)):
        ws = [mp.mpf('1e-200') if i < n0 else 1 for i in range(n)]
        print('tiny first', k, n, n0, '%.17g' % float(weighted([k], ws)[k]))
