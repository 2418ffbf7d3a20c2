-- birthday_uniqueness_exact and birthday_max_group_size_exact where the probability
-- is far below 1e-75 but above 1e-300: the intermediate products of the
-- recurrence used to underflow.  References computed outside qidrisk by
-- test/reference/birthday_exact.py with mpmath (uniform: the product
-- prod (1 - i/N) at 60 digits; weighted: k! e_k(p) by the recurrence at 40
-- digits, whose exponent range does not underflow).  Required: relative
-- error at most 1e-9.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(14);

CREATE TEMP TABLE uniform_10000 AS SELECT i AS v FROM generate_series(1, 10000) i;
CREATE TEMP TABLE weighted_3000 AS SELECT i AS v, (1 + i % 7)::float8 AS w FROM generate_series(1, 3000) i;

CREATE FUNCTION pg_temp.close(got float8, ref float8) RETURNS boolean LANGUAGE sql AS $$
	SELECT abs(got - ref) <= 1e-9 * ref
$$;

SELECT ok(pg_temp.close(birthday_uniqueness_exact(1600, v), 1.6622092799486016e-59), 'uniform 10,000: k = 1600')
FROM uniform_10000;
SELECT ok(pg_temp.close(birthday_uniqueness_exact(1800, v), 1.0950534229064035e-75), 'uniform 10,000: k = 1800 (was 6.40e-76)')
FROM uniform_10000;
SELECT ok(pg_temp.close(birthday_uniqueness_exact(2100, v), 6.0083095698242597e-104), 'uniform 10,000: k = 2100 (was 1.14e-114)')
FROM uniform_10000;
SELECT ok(pg_temp.close(birthday_uniqueness_exact(3000, v), 3.2190195878252008e-219), 'uniform 10,000: k = 3000 (was 0)')
FROM uniform_10000;
SELECT ok(pg_temp.close(birthday_uniqueness_exact(3000, v, 2.5), 3.2190195878252008e-219), 'uniform 10,000, weighted form: k = 3000')
FROM uniform_10000;
SELECT is(birthday_max_group_size_exact(1e-100, v), birthday_max_group_size(1e-100, 10000), 'birthday_max_group_size_exact(1e-100) = birthday_max_group_size(1e-100, 10000) (was 2011)')
FROM uniform_10000;
SELECT is(birthday_max_group_size(1e-100, 10000), 2068::bigint, 'birthday_max_group_size(1e-100, 10000) = 2068');

SELECT ok(pg_temp.close(birthday_uniqueness_exact(200, v, w), 0.0002093588286880485), 'weights 1 + i % 7 over 3,000 values: k = 200')
FROM weighted_3000;
SELECT ok(pg_temp.close(birthday_uniqueness_exact(600, v, w), 1.6188668975387347e-35), 'weighted: k = 600')
FROM weighted_3000;
SELECT ok(pg_temp.close(birthday_uniqueness_exact(900, v, w), 4.6476519711838825e-82), 'weighted: k = 900')
FROM weighted_3000;
SELECT ok(pg_temp.close(birthday_uniqueness_exact(1200, v, w), 2.0449914412371287e-151), 'weighted: k = 1200')
FROM weighted_3000;
-- values of weight 1e-200 first: levels far apart, whose exponents the
-- recurrence raises (a sign error there once gave 1 for the first)
SELECT ok(pg_temp.close(birthday_uniqueness_exact(60, i, CASE WHEN i <= 50 THEN 1e-200 ELSE 1 END), 6.4976991910578228e-18),
		  '50 values of weight 1e-200, then 70 of weight 1: k = 60')
FROM generate_series(1, 120) i;
SELECT ok(pg_temp.close(birthday_uniqueness_exact(30, i, CASE WHEN i <= 20 THEN 1e-200 ELSE 1 END), 0.0019008736051534057),
		  '20 values of weight 1e-200, then 80 of weight 1: k = 30')
FROM generate_series(1, 100) i;
-- the largest k whose probability is at least 1e-100 lies between 900 and 1200
SELECT ok(birthday_uniqueness_exact(k, v, w) >= 1e-100 AND birthday_uniqueness_exact(k + 1, v, w) < 1e-100,
		  'weighted: birthday_max_group_size_exact(1e-100) is the boundary')
FROM weighted_3000, (SELECT birthday_max_group_size_exact(1e-100, v, w) AS k FROM weighted_3000) m
GROUP BY k;

SELECT * FROM finish();
ROLLBACK;
