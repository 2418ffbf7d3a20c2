-- The experiment of Koot et al. (2011), section 5, on synthetic data:
-- municipalities with age distributions (0..94) of increasing skew; for a
-- group of k = 29 people, the exact probability that all ages differ, Koot's
-- approximation from the distribution's KL distance kappa, and the naive
-- uniform estimate.  Output: CSV on stdout.
\set QUIET 1
\pset format csv
\pset tuples_only off
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS qidrisk;

-- 60 municipalities: a uniform base plus a bump around a modal age whose
-- strength grows with the municipality number, and fewer people past 80
CREATE TEMP TABLE municipality_ages AS
SELECT m AS municipality, age,
	round(population * w / sum(w) OVER (PARTITION BY m))::float8 AS people
FROM generate_series(1, 60) m,
	LATERAL (SELECT 20000 + (m * 7919) % 80000 AS population,
					18 + (m * 37) % 50 AS mode,
					((m - 1) / 59.0) ^ 2 * 6 AS strength) p,
	generate_series(0, 94) age,
	LATERAL (SELECT (1 + p.strength * exp(-(((age - p.mode) / 9.0) ^ 2)))
			 * CASE WHEN age < 80 THEN 1 ELSE exp(-(age - 80) / 6.0) END AS w) weights;

SELECT municipality,
	kl_uniform(age, people, 95) AS kappa,
	birthday_uniqueness_exact(29, age, people) AS exact,
	birthday_uniqueness(29, 95, kl_uniform(age, people, 95)) AS koot,
	birthday_uniqueness_approx(29, 95, kl_uniform(age, people, 95)) AS koot_closed_form,
	birthday_uniqueness(29, 95) AS uniform,
	birthday_max_group_size_exact(0.01, age, people) AS max_k_exact,
	birthday_max_group_size(0.01, 95, kl_uniform(age, people, 95)) AS max_k_koot
FROM municipality_ages
GROUP BY municipality
ORDER BY kappa;
