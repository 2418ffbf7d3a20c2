-- Birthday uniqueness and heterogeneity (Koot et al. 2011)

-- the paper's check values, to the 3 significant digits it prints:
-- pi_u(29, 95) = 0.84 %, pi_u(41, 190) = 0.95 %
SELECT round((100 * birthday_uniqueness(29, 95))::numeric, 2) AS pct_29_95,
	round((100 * birthday_uniqueness(41, 190))::numeric, 2) AS pct_41_190;
-- the classic birthday problem: 23 people, 365 days
SELECT round(birthday_uniqueness(23, 365)::numeric, 6), birthday_max_group_size(0.5, 365);
-- edges: k = 0 and 1 are certain, k > N impossible, k = N is N!/N^N
SELECT birthday_uniqueness(0, 10), birthday_uniqueness(1, 10), birthday_uniqueness(11, 10),
	round(birthday_uniqueness(10, 10)::numeric, 12) = round((3628800 / 1e10)::numeric, 12) AS ten_factorial;
-- large N and k stay accurate (log space): N = 1e12, k up to 1e7
-- (ln pi_u = -sum_j S_j / (j N^j), S_j the power sums of 1..k-1, in numeric)
SELECT birthday_uniqueness(2, 1e12) = 1 - 1e-12 AS two_of_a_trillion,
	abs(ln(birthday_uniqueness(10000000, 1e12)) - (
		SELECT -(m * (m + 1) / 2 / n + m * (m + 1) * (2 * m + 1) / 6 / (2 * n ^ 2)
			+ (m * (m + 1) / 2) ^ 2 / (3 * n ^ 3)
			+ m * (m + 1) * (2 * m + 1) * (3 * m ^ 2 + 3 * m - 1) / 30 / (4 * n ^ 4))
		FROM (SELECT 9999999::numeric AS m, 1e12::numeric AS n) s)::float8) < 1e-9 AS ten_million_of_a_trillion;
-- the closed form (k > 10000) agrees with a numeric product at the switch point
SELECT abs(ln(birthday_uniqueness(20000, 1e7)) /
	(SELECT sum(ln(1 - i::numeric / 10000000)) FROM generate_series(1, 19999) i)::float8 - 1) < 1e-12 AS stirling_matches;
-- Koot's approximation, the closed form and the Poissonized form
SELECT round(birthday_uniqueness(29, 95, 0)::numeric, 12) = round(birthday_uniqueness(29, 95)::numeric, 12) AS kappa_zero_is_uniform,
	round(birthday_uniqueness(29, 95, 0.1)::numeric, 10) AS koot,
	round(birthday_uniqueness_approx(29, 95)::numeric, 10) AS approx,
	round(birthday_uniqueness_approx(29, 95, 0.1)::numeric, 10) AS approx_kappa,
	round(birthday_uniqueness_poisson(29, 95)::numeric, 10) AS poisson;
SELECT birthday_max_group_size(0.01, 95), birthday_max_group_size(0.01, 95, 0.05), birthday_max_group_size(1, 95), birthday_max_group_size(0.5, 1);

-- KL distance to uniform
CREATE TABLE letters (v text);
INSERT INTO letters VALUES ('a'), ('a'), ('b'), ('c');
-- by hand: p = (1/2, 1/4, 1/4); M = 3: 1/2 ln(3/2) + 1/2 ln(3/4); M = 4: 1/2 ln 2
SELECT round(kl_uniform(v)::numeric, 12) = round((0.5 * ln(1.5) + 0.5 * ln(0.75))::numeric, 12) AS m3,
	round(kl_uniform(v, 4)::numeric, 12) = round((0.5 * ln(2))::numeric, 12) AS m4
FROM letters;
SELECT kl_uniform(i % 10), kl_uniform(i % 10, 10) FROM generate_series(1, 1000) i;
-- a (value, count) table gives the same as the raw rows
SELECT round(kl_uniform(v, n, 4)::numeric, 12) = round((0.5 * ln(2))::numeric, 12) AS weighted
FROM (VALUES ('a', 2.0), ('b', 1.0), ('c', 1.0)) t(v, n);
-- multi-column QIDs: a composite or array value
SELECT kl_uniform(ARRAY[x::text, y]) FROM (VALUES (1, 'F'), (1, 'F'), (2, 'M'), (2, 'F')) t(x, y);
-- NULL is one more value, as in GROUP BY
SELECT round(kl_uniform(v)::numeric, 12) FROM (VALUES ('a'), (NULL), (NULL), ('a')) t(v);
-- empty input
SELECT kl_uniform(v), birthday_uniqueness_exact(3, v) FROM letters WHERE false;

-- exact non-uniform probability k! e_k(p)
-- p = (1/2, 1/4, 1/4), k = 2: 1 - sum p^2 = 1 - 3/8; k = 3: 3! * 1/32
SELECT birthday_uniqueness_exact(2, v) = 0.625 AS k2, birthday_uniqueness_exact(3, v) = 6.0 / 32 AS k3,
	birthday_uniqueness_exact(4, v) AS k4_is_zero, birthday_uniqueness_exact(1, v) AS k1_is_one
FROM letters;
SELECT birthday_uniqueness_exact(2, v, n) = 0.625 AS weighted_k2,
	round(birthday_uniqueness_poisson_product(2, v, n)::numeric, 12) =
	round((exp(-2) * (1 + 1) * (1 + 0.5) * (1 + 0.5))::numeric, 12) AS poisson_product
FROM (VALUES ('a', 2.0), ('b', 1.0), ('c', 1.0)) t(v, n);
-- uniform data: the exact aggregate equals the closed form
SELECT abs(birthday_uniqueness_exact(29, i % 95) / birthday_uniqueness(29, 95) - 1) < 1e-12 AS uniform_agrees
FROM generate_series(1, 95 * 10) i;
SELECT birthday_max_group_size_exact(0.01, i % 95) = birthday_max_group_size(0.01, 95) AS inverse_agrees,
	birthday_max_group_size_exact(0.5, v) AS letters_half, birthday_max_group_size_exact(0.5, v, n) AS letters_half_weighted
FROM generate_series(1, 95 * 10) i, (VALUES ('a', 2.0)) t(v, n);
-- per group and in parallel plans
SELECT i % 2 AS g, round(kl_uniform(i % 7)::numeric, 10) FROM generate_series(1, 100) i GROUP BY 1 ORDER BY 1;

-- bad input
SELECT birthday_uniqueness(-1, 10);
SELECT birthday_uniqueness(3, 0);
SELECT birthday_uniqueness(3, 'NaN');
SELECT birthday_uniqueness(3, 'Infinity');
SELECT birthday_uniqueness(3, 10, -0.5);
SELECT birthday_uniqueness(3, 10, 'NaN');
SELECT birthday_max_group_size(0, 10);
SELECT birthday_max_group_size(1.5, 10);
SELECT birthday_uniqueness(NULL, 10);
SELECT kl_uniform(v, 2) FROM letters;
SELECT kl_uniform(v, NULL::bigint) FROM letters;
SELECT kl_uniform(v, -1.0, 4) FROM (VALUES ('a')) t(v);
SELECT kl_uniform(v, 'NaN'::float8, 4) FROM (VALUES ('a')) t(v);
SELECT kl_uniform(v, NULL::float8, 4) FROM (VALUES ('a')) t(v);
SELECT birthday_uniqueness_exact(-2, v) FROM letters;
SELECT birthday_uniqueness_exact(i, v) FROM letters, generate_series(1, 2) i;
SELECT birthday_max_group_size_exact(2, v) FROM letters;
SELECT kl_uniform('a');
SELECT kl_uniform(point(1, 1));
