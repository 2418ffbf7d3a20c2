-- Property tests of the approximate estimators (distinct sampling) and the
-- qid_key path:
-- * over 50 random tables with Pareto-distributed class sizes, the kept
--   sample is exactly the classes whose key falls below the level's
--   threshold (computed in plain SQL from GROUP BY); on every table the
--   estimates of classes, singletons and classes of size 2 lie within 5
--   standard errors sqrt(N (1 - p) / p) of the exact counts N (GROUP BY), and
--   no size has more kept classes than the table has; the reported standard
--   errors cover the exact counts within 3 of them in at least 97% of the 150
--   cases (and within 1 in 50% to 90%: neither too small nor far too large);
-- * with fewer classes than the capacity the estimates are exact (5 seeds,
--   NULLs, ties, a case-insensitive collation) and the *_key aggregates over
--   qid_key() equal their VARIADIC forms;
-- * serial, forced parallel and partitionwise plans give identical results;
-- * bad input raises the documented SQLSTATEs.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
-- a fixed sampling key: results are compared across statements
SET qidrisk.sample_seed = 1;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(50 * 3 + 2 + 5 * 4 * 2 + 8 + 18);

CREATE COLLATION pg_temp.case_insensitive (provider = icu, locale = 'und-u-ks-level2', deterministic = false);

-- A table of nclasses classes whose sizes follow a Pareto law (63% size 1,
-- 16% size 2, a heavy tail); the values differ from seed to seed
CREATE FUNCTION pg_temp.make_skewed_table(seed float8, seedno integer, nclasses integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM setseed(seed);
	DROP TABLE IF EXISTS s;
	CREATE TABLE s AS
	SELECT id + seedno * 1000000 AS a,
		CASE WHEN id % 11 = 0 THEN NULL ELSE (id % 5)::text END AS b,
		date '2000-01-01' + (id % 3) AS c
	FROM (SELECT id, floor(1 / power(random(), 0.7))::integer AS size
		  FROM generate_series(1, nclasses) id) classes,
		generate_series(1, size);
	ANALYZE s;
END
$$;

-- The kept sample recomputed in plain SQL: the classes (GROUP BY) whose key,
-- permuted under the sampling key (qidrisk.sample_seed fixes it), has its
-- first "level" bits zero, as (kept, sizes, kept of each size).  This checks
-- the sample's definition only: the estimates are checked against the exact
-- counts below, not against this sample divided by the rate
CREATE FUNCTION pg_temp.reference_sample(rate float8) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	RETURN (WITH c AS (SELECT qidrisk_internal.qidrisk_sample_permute(qid_key(a, b, c)) AS k, count(*) AS n FROM s GROUP BY a, b, c),
	level AS (SELECT round(-log(2, rate::numeric))::integer AS l),
	kept AS (
		SELECT n FROM c, level
		WHERE l = 0 OR ('x' || substr(replace(k::text, '-', ''), 1, 16))::bit(64)
			< (lpad('1', l, '0') || repeat('0', 64 - l))::bit(64)),
	histogram AS (SELECT n, count(*) AS m FROM kept GROUP BY n)
	SELECT ROW((SELECT count(*) FROM kept),
		(SELECT coalesce(array_agg(n ORDER BY n), '{}') FROM histogram),
		(SELECT coalesce(array_agg(m ORDER BY n), '{}') FROM histogram))::text);
END
$$;

-- 50 seeds: exact sample, key form, the estimates against the exact counts,
-- and the coverage of the reported standard errors
CREATE FUNCTION pg_temp.run_statistical() RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	p qid_profile_estimate;
	rate float8;
	truth record;
	within3 integer := 0;
	within1 integer := 0;
	cases integer := 0;
	est float8[];
	se float8[];
	tru float8[];
	doubles_est float8;
	doubles_se float8;
	too_many text;
BEGIN
	FOR seedno IN 1..50 LOOP
		PERFORM pg_temp.make_skewed_table(seedno / 100.0, seedno, 8000 + (seedno * 157) % 8000);
		SELECT (approx_class_profile(1024, a, b, c)).* INTO p FROM s;
		rate := p.sampling_rate;
		RETURN NEXT is(ROW(p.sampled_classes, p.class_sizes,
						   ARRAY(SELECT round(c * rate)::bigint FROM unnest(p.class_counts) c))::text,
					   pg_temp.reference_sample(rate),
					   format('seed %s: the sample is the classes below the level threshold', seedno));
		RETURN NEXT is((SELECT approx_class_profile_key(1024, qid_key(a, b, c)) FROM s), p,
					   format('seed %s: approx_class_profile_key equals approx_class_profile', seedno));

		-- the exact counts (GROUP BY): classes of each size, all, singletons, of size 2
		CREATE TEMP TABLE sizes AS
		SELECT n, count(*) AS m FROM (SELECT count(*) AS n FROM s GROUP BY a, b, c) g GROUP BY n;
		SELECT sum(m) AS classes, coalesce(sum(m) FILTER (WHERE n = 1), 0) AS singletons,
			coalesce(sum(m) FILTER (WHERE n = 2), 0) AS doubles INTO truth FROM sizes;
		doubles_est := coalesce((SELECT h.c FROM unnest(p.class_sizes, p.class_counts) h(s, c) WHERE h.s = 2), 0);
		doubles_se := coalesce((SELECT h.e FROM unnest(p.class_sizes, p.class_counts_se) h(s, e) WHERE h.s = 2), 0);
		est := ARRAY[p.classes, p.singletons, doubles_est];
		se := ARRAY[p.classes_se, p.singletons_se, doubles_se];
		tru := ARRAY[truth.classes, truth.singletons, truth.doubles];

		-- Y ~ Binomial(N, p) kept, estimate Y / p, standard error sqrt(N (1 - p) / p)
		-- (docs/approximate.md): 5 of them are passed with probability 6e-7 under a
		-- normal law (the largest over 20 sampling keys x these 50 tables was 3.9).
		-- Kept classes have their exact sizes: no size has more kept than exist
		SELECT string_agg(format('size %s: %s kept of %s', h.sz, h.c * rate, coalesce(t.m, 0)), ', ') INTO too_many
		FROM unnest(p.class_sizes, p.class_counts) h(sz, c) LEFT JOIN sizes t ON t.n = h.sz
		WHERE h.c * rate > coalesce(t.m, 0);
		RETURN NEXT ok(coalesce(rate < 1 AND too_many IS NULL
							   AND abs(est[1] - tru[1]) <= 5 * sqrt(tru[1] * (1 - rate) / rate)
							   AND abs(est[2] - tru[2]) <= 5 * sqrt(tru[2] * (1 - rate) / rate)
							   AND abs(est[3] - tru[3]) <= 5 * sqrt(tru[3] * (1 - rate) / rate), false),
					   format('seed %s: estimates within 5 standard errors of the exact counts (rate %s): '
							  'classes %s of %s, singletons %s of %s, size 2 %s of %s%s',
							  seedno, rate, round(est[1]), tru[1], round(est[2]), tru[2], round(est[3]), tru[3],
							  coalesce('; more kept than exist: ' || too_many, '')));
		DROP TABLE sizes;

		FOR i IN 1..3 LOOP
			cases := cases + 1;
			within3 := within3 + (abs(est[i] - tru[i]) <= 3 * se[i])::integer;
			within1 := within1 + (abs(est[i] - tru[i]) <= se[i])::integer;
		END LOOP;
	END LOOP;
	RETURN NEXT cmp_ok(within3::float8 / cases, '>=', 0.97::float8,
					   format('%s of %s estimates within 3 standard errors', within3, cases));
	RETURN NEXT ok(within1::float8 / cases BETWEEN 0.50 AND 0.90,
				   format('%s of %s estimates within 1 standard error (about 68%% expected)', within1, cases));
END
$$;

SELECT * FROM pg_temp.run_statistical();

-- A random table of tied values of several types, about 10% NULL each
CREATE FUNCTION pg_temp.make_random_table(seed float8, nrows integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM setseed(seed);
	DROP TABLE IF EXISTS r;
	CREATE TABLE r (c_int integer, c_text_ci text COLLATE pg_temp.case_insensitive,
					c_num numeric, c_date date);
	INSERT INTO r
	SELECT CASE WHEN random() < 0.1 THEN NULL ELSE floor(random() * 200)::int END,
		CASE WHEN random() < 0.1 THEN NULL ELSE (ARRAY['a', 'A', 'b', 'B', 'ab', 'AB'])[1 + floor(random() * 6)::int] END,
		CASE WHEN random() < 0.1 THEN NULL ELSE (ARRAY[1, 1.0, 1.00, 2.5, 2.50, 7])[1 + floor(random() * 6)::int] END,
		CASE WHEN random() < 0.1 THEN NULL ELSE date '2020-01-01' + floor(random() * 3)::int END
	FROM generate_series(1, nrows);
	ANALYZE r;
END
$$;

-- Below the capacity: exact estimates, and the key aggregates equal the VARIADIC ones
CREATE FUNCTION pg_temp.run_exact() RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	subsets text[] := ARRAY['c_int', 'c_text_ci,c_num', 'c_int,c_date', 'c_int,c_text_ci,c_num,c_date'];
	subset text;
	seed float8;
	ours text;
	reference text;
BEGIN
	FOREACH seed IN ARRAY ARRAY[0.12, 0.34, 0.56, 0.78, 0.9] LOOP
		PERFORM pg_temp.make_random_table(seed, (seed * 6000)::integer);
		FOREACH subset IN ARRAY subsets LOOP
			EXECUTE format($q$
				SELECT ROW(p.rows, p.classes, p.singletons, p.sampling_rate, p.sampled_classes,
					p.class_sizes, p.class_counts, p.classes_se, p.singletons_se,
					(SELECT coalesce(max(e), 0) FROM unnest(p.class_counts_se) e))::text
				FROM (SELECT (approx_class_profile(4096, %1$s)).* FROM r) p
			$q$, subset) INTO ours;
			EXECUTE format($q$
				SELECT ROW(p.rows, p.classes::float8, p.singletons::float8, 1::float8, p.classes,
					p.class_sizes, p.class_counts::float8[], 0::float8, 0::float8, 0::float8)::text
				FROM (SELECT (class_profile(%1$s)).* FROM r) p
			$q$, subset) INTO reference;
			RETURN NEXT is(ours, reference, format('seed %s {%s}: below capacity the estimates are exact', seed, subset));

			EXECUTE format($q$
				SELECT ROW(singleton_count_key(k), class_count_key(k), k_anonymity_key(k),
					rows_below_k_key(3, k), class_profile_key(k), approx_singleton_count_key(k),
					approx_class_count_key(k))::text
				FROM (SELECT qid_key(%1$s) AS k FROM r) a
			$q$, subset) INTO ours;
			EXECUTE format($q$
				SELECT ROW(singleton_count(%1$s), class_count(%1$s), k_anonymity(%1$s),
					rows_below_k(3, %1$s), class_profile(%1$s), approx_singleton_count(%1$s),
					approx_class_count(%1$s))::text
				FROM r
			$q$, subset) INTO reference;
			RETURN NEXT is(ours, reference, format('seed %s {%s}: the key aggregates equal the VARIADIC ones', seed, subset));
		END LOOP;
	END LOOP;
END
$$;

SELECT * FROM pg_temp.run_exact();

\ir parallel_plans.psql

-- Serial, parallel and partitionwise plans agree
SELECT pg_temp.make_skewed_table(0.5, 99, 30000);
SET max_parallel_workers_per_gather = 0;
CREATE TEMP TABLE serial_answers AS
SELECT approx_class_profile(256, a, b, c) AS p, approx_singleton_count(a, b, c) AS s,
	approx_class_profile_key(256, qid_key(a, b, c)) AS pk, class_profile_key(qid_key(a, b, c)) AS ck
FROM s;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
SET max_parallel_workers_per_gather = 2;
SELECT ok(pg_temp.runs_partial_in_workers('SELECT approx_class_profile(256, a, b, c) FROM s'),
		  'approx_class_profile runs as partial aggregates in workers');
SELECT ok(pg_temp.runs_partial_in_workers('SELECT approx_class_profile_key(256, qid_key(a, b, c)), class_profile_key(qid_key(a, b, c)) FROM s'),
		  'the key aggregates run as partial aggregates in workers');
SELECT is((SELECT ROW(approx_class_profile(256, a, b, c), approx_singleton_count(a, b, c))::text FROM s),
		  (SELECT ROW(p, s)::text FROM serial_answers), 'approximate aggregates: parallel equals serial');
SELECT is((SELECT ROW(approx_class_profile_key(256, qid_key(a, b, c)), class_profile_key(qid_key(a, b, c)))::text FROM s),
		  (SELECT ROW(pk, ck)::text FROM serial_answers), 'key aggregates: parallel equals serial');
SELECT is((SELECT pk FROM serial_answers), (SELECT p FROM serial_answers), 'the key form equals the VARIADIC form');

CREATE TEMP TABLE s_parts (LIKE s) PARTITION BY HASH (a);
CREATE TEMP TABLE s_parts_0 PARTITION OF s_parts FOR VALUES WITH (MODULUS 3, REMAINDER 0);
CREATE TEMP TABLE s_parts_1 PARTITION OF s_parts FOR VALUES WITH (MODULUS 3, REMAINDER 1);
CREATE TEMP TABLE s_parts_2 PARTITION OF s_parts FOR VALUES WITH (MODULUS 3, REMAINDER 2);
INSERT INTO s_parts SELECT * FROM s;
ANALYZE s_parts;
SET enable_partitionwise_aggregate = on;
SET max_parallel_workers_per_gather = 0;
SELECT is((SELECT ROW(approx_class_profile(256, a, b, c), approx_singleton_count(a, b, c))::text FROM s_parts),
		  (SELECT ROW(p, s)::text FROM serial_answers), 'approximate aggregates: partitionwise equals serial');
SELECT is((SELECT ROW(approx_class_profile_key(256, qid_key(a, b, c)), class_profile_key(qid_key(a, b, c)))::text FROM s_parts),
		  (SELECT ROW(pk, ck)::text FROM serial_answers), 'key aggregates: partitionwise equals serial');
SELECT is((SELECT approx_class_profile(256, a, b, c) FROM s WHERE false),
		  ROW(0, 0, 0, 0, 0, NULL, 1, 0, '{}', '{}', '{}')::qid_profile_estimate, 'no rows: zeros');
RESET ALL;

-- Bad input
SELECT throws_ok('SELECT approx_class_profile(NULL, a) FROM s', '22004', NULL, 'capacity NULL');
SELECT throws_ok('SELECT approx_class_profile(63, a) FROM s', '22023', NULL, 'capacity below 64');
SELECT throws_ok('SELECT approx_class_profile(16777217, a) FROM s', '22023', NULL, 'capacity above 2^24');
SELECT throws_ok('SELECT approx_class_profile(CASE WHEN a % 2 = 0 THEN 64 ELSE 128 END, a) FROM s', '22023', NULL, 'capacity varying');
SELECT throws_ok('SET LOCAL qidrisk.max_state_memory = 64; SELECT approx_class_profile(65536, a) FROM s', '54000', NULL, 'sample larger than the memory budget');
SELECT throws_ok('SELECT approx_singleton_count(VARIADIC ARRAY[a]) FROM s', '0A000', NULL, 'VARIADIC array');
SELECT throws_ok('SELECT approx_class_count(''x'') FROM s', '42P18', NULL, 'untyped literal');
SELECT throws_ok('SELECT approx_class_count(point(a, a)) FROM s', '42883', NULL, 'type without hashing');
SELECT throws_ok('SELECT approx_class_profile(100) FROM s', '42883', NULL, 'no quasi-identifier column');
SELECT throws_ok('SELECT qid_key(VARIADIC ARRAY[1, 2])', '0A000', NULL, 'qid_key: VARIADIC array');
SELECT throws_ok('SELECT qid_key(''x'')', '42P18', NULL, 'qid_key: untyped literal');
SELECT throws_ok('SELECT qid_key(point(1, 1))', '42883', NULL, 'qid_key: type without hashing');
SELECT throws_ok('SELECT rows_below_k_key(NULL, qid_key(a)) FROM s', '22004', NULL, 'rows_below_k_key: k NULL');
SELECT throws_ok('SELECT rows_below_k_key(0, qid_key(a)) FROM s', '22023', NULL, 'rows_below_k_key: k = 0');
SELECT throws_ok('SELECT approx_interval(1, 1, 0)', '22023', NULL, 'approx_interval: rate 0');
SELECT throws_ok('SELECT approx_interval(1, 1, 0.5, 1)', '22023', NULL, 'approx_interval: confidence 1');
SELECT throws_ok('SELECT approx_interval(''NaN'', 1, 0.5)', '22023', NULL, 'approx_interval: NaN estimate');
-- The support functions take internal and cannot be called from SQL.  Recent
-- minor releases refuse the call itself (42846); older ones (15.18) coerce
-- the NULL to internal and internal_in refuses it (0A000).
CREATE FUNCTION pg_temp.sqlstate_of(stmt text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE stmt;
	RETURN NULL;
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE;
END
$$;
SELECT ok(pg_temp.sqlstate_of('SELECT qidrisk_internal.qidrisk_sketch_serialize(NULL::internal)') IN ('42846', '0A000'),
		  'internal functions cannot be called directly -> 42846 or 0A000');

SELECT * FROM finish();
ROLLBACK;
