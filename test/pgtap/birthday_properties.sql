-- Property tests of the birthday-uniqueness estimators and kl_uniform:
-- exact k! e_k(p) against brute-force enumeration (relative error < 1e-12)
-- and against Monte Carlo (within 4 standard errors); probabilities in [0, 1]
-- and non-increasing in k; the inverse consistent with the forward functions.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(6 * 4 + 3 + 5 + 6 + 7);

-- Small distributions given as (value, weight)
CREATE TABLE dist (name text, value integer, weight float8);
INSERT INTO dist VALUES
	('two', 1, 1), ('two', 2, 3),
	('three', 1, 1), ('three', 2, 2), ('three', 3, 7),
	('four', 1, 5), ('four', 2, 1), ('four', 3, 1), ('four', 4, 1),
	('five', 1, 0.5), ('five', 2, 1.5), ('five', 3, 2.5), ('five', 4, 3.5), ('five', 5, 4.5),
	('uniform6', 1, 1), ('uniform6', 2, 1), ('uniform6', 3, 1), ('uniform6', 4, 1), ('uniform6', 5, 1), ('uniform6', 6, 1),
	('skewed6', 1, 40), ('skewed6', 2, 20), ('skewed6', 3, 10), ('skewed6', 4, 5), ('skewed6', 5, 3), ('skewed6', 6, 1);

-- P(k draws all distinct) by enumerating every ordered k-tuple of values
CREATE FUNCTION pg_temp.brute_force(dist_name text, k integer) RETURNS float8
LANGUAGE sql AS $$
	WITH RECURSIVE p AS (
		SELECT value, weight / sum(weight) OVER () AS p FROM dist WHERE name = dist_name
	), tuples(depth, used, prob) AS (
		SELECT 0, ARRAY[]::integer[], 1::float8
		UNION ALL
		SELECT t.depth + 1, t.used || p.value, t.prob * p.p
		FROM tuples t, p
		WHERE t.depth < k AND NOT p.value = ANY (t.used)
	)
	SELECT coalesce(sum(prob), 0) FROM tuples WHERE depth = k
$$;

-- exact vs enumeration, for k = 2..5 on six distributions
SELECT is(abs(e.exact - b.brute) <= 1e-12 * greatest(b.brute, 1e-300), true,
		  format('%s, k = %s: exact %s vs enumeration %s', d.name, k, e.exact, b.brute))
FROM (SELECT DISTINCT name FROM dist) d, generate_series(2, 5) k,
	LATERAL (SELECT birthday_uniqueness_exact(k, value, weight) AS exact FROM dist WHERE name = d.name) e,
	LATERAL (SELECT pg_temp.brute_force(d.name, k) AS brute) b
ORDER BY d.name, k;

-- raw rows give the same distribution as (value, count) rows
SELECT is(round(birthday_uniqueness_exact(3, value)::numeric, 14),
		  (SELECT round(birthday_uniqueness_exact(3, value, weight)::numeric, 14) FROM dist WHERE name = 'four'),
		  'raw rows and (value, count) rows agree')
FROM dist, generate_series(1, weight::integer) WHERE name = 'four';
SELECT is(round(kl_uniform(value)::numeric, 14),
		  (SELECT round(kl_uniform(value, weight, 4)::numeric, 14) FROM dist WHERE name = 'four'),
		  'kl_uniform: raw rows and (value, count) rows agree')
FROM dist, generate_series(1, weight::integer) WHERE name = 'four';
SELECT is(kl_uniform(value, weight, 6), 0::float8, 'kl_uniform of a uniform distribution is 0')
FROM dist WHERE name = 'uniform6';

-- Monte Carlo: skewed ages 0..94, groups of k; within 4 standard errors
CREATE TABLE ages AS
SELECT age, (95 - age)::float8 ^ 2 AS weight FROM generate_series(0, 94) age;
CREATE FUNCTION pg_temp.monte_carlo(k integer, trials integer) RETURNS float8
LANGUAGE sql AS $$
	WITH cdf AS (
		SELECT array_agg(c ORDER BY age) AS bounds
		FROM (SELECT age, sum(weight) OVER (ORDER BY age) / sum(weight) OVER () AS c FROM ages) s
	), draws AS (
		SELECT t, width_bucket(random(), ARRAY[0::float8] || bounds) AS v
		FROM cdf, generate_series(1, trials) t, generate_series(1, k)
	)
	SELECT avg((n = k)::integer)::float8
	FROM (SELECT t, count(DISTINCT v) AS n FROM draws GROUP BY t) per_trial
$$;
SELECT setseed(0.42);
SELECT ok(abs(mc - exact) <= 4 * sqrt(exact * (1 - exact) / trials),
		  format('k = %s: exact %s, Monte Carlo %s over %s trials', k, round(exact::numeric, 5), round(mc::numeric, 5), trials))
FROM (VALUES (5, 20000), (10, 20000), (15, 20000)) c(k, trials),
	LATERAL (SELECT birthday_uniqueness_exact(c.k, age, weight) AS exact FROM ages) e,
	LATERAL (SELECT pg_temp.monte_carlo(c.k, c.trials) AS mc) m;
-- skew lowers the probability below the uniform one over the same support
SELECT ok(birthday_uniqueness_exact(15, age, weight) < birthday_uniqueness(15, 95), 'skew lowers the probability')
FROM ages;
-- Koot's approximation is in the right place for this skew
SELECT ok(abs(ln(birthday_uniqueness(15, 95, kl_uniform(age, weight, 95))) - ln(birthday_uniqueness_exact(15, age, weight))) < 0.5,
		  'Koot approximation within a factor e^0.5 of the exact value at k = 15')
FROM ages;

-- [0, 1] and non-increasing in k, sampled widely
SELECT ok(bool_and(p BETWEEN 0 AND 1) AND bool_and(p <= prev OR prev IS NULL),
		  format('uniform, n = %s: probabilities in [0, 1], non-increasing in k', n))
FROM (SELECT n, p, lag(p) OVER (PARTITION BY n ORDER BY k) AS prev
	  FROM (VALUES (1.0), (95.0), (1e6), (1e12)) v(n),
		   LATERAL (SELECT k, birthday_uniqueness(k, v.n) AS p
					FROM generate_series(0, 20000, 37) k) s) t
GROUP BY n ORDER BY n;
SELECT ok(bool_and(p BETWEEN 0 AND 1) AND bool_and(p <= prev OR prev IS NULL),
		  format('exact on %s: probabilities in [0, 1], non-increasing in k', name))
FROM (SELECT name, p, lag(p) OVER (PARTITION BY name ORDER BY k) AS prev
	  FROM (VALUES ('ages')) d(name),
		   LATERAL (SELECT k, (SELECT birthday_uniqueness_exact(k, age, weight) FROM ages) AS p
					FROM generate_series(0, 96) k) s) t
GROUP BY name;
SELECT ok(bool_and(p BETWEEN 0 AND 1) AND bool_and(p <= prev OR prev IS NULL),
		  'Koot and Poissonized forms: in [0, 1], non-increasing in k')
FROM (SELECT p, lag(p) OVER (PARTITION BY form ORDER BY k) AS prev
	  FROM generate_series(0, 400) k,
		   LATERAL (VALUES ('koot', birthday_uniqueness(k, 365, 0.3)),
						   ('approx', birthday_uniqueness_approx(k, 365, 0.3)),
						   ('poisson', birthday_uniqueness_poisson(k, 365))) f(form, p)) t;

-- the inverse: P(k) >= target > P(k + 1)
SELECT ok(birthday_uniqueness(k, n) >= target AND birthday_uniqueness(k + 1, n) < target,
		  format('birthday_max_group_size(%s, %s) = %s brackets the target', target, n, k))
FROM (VALUES (0.5, 365.0), (0.01, 95.0), (0.99, 1e9), (1e-6, 1e5)) v(target, n),
	LATERAL (SELECT birthday_max_group_size(v.target, v.n) AS k) s;
SELECT ok(e.p_k >= 0.05 AND e.p_next < 0.05, format('birthday_max_group_size_exact(0.05) = %s brackets the target', e.k))
FROM (SELECT birthday_max_group_size_exact(0.05, age, weight) AS k FROM ages) m,
	LATERAL (SELECT birthday_uniqueness_exact(m.k, age, weight) AS p_k,
					birthday_uniqueness_exact(m.k + 1, age, weight) AS p_next, m.k FROM ages) e;
SELECT ok(birthday_max_group_size(0.05, 95, kl) <= birthday_max_group_size(0.05, 95), 'heterogeneity lowers the largest safe group')
FROM (SELECT kl_uniform(age, weight, 95) AS kl FROM ages) s;
SELECT is(birthday_max_group_size_exact(0.05, age), birthday_max_group_size(0.05, 95), 'uniform raw rows: exact and closed-form inverses agree')
FROM generate_series(1, 950) i, LATERAL (SELECT i % 95 AS age) a;

SELECT * FROM finish();
ROLLBACK;
