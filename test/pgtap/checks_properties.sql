-- Property tests of the pre-publication checks: every measured figure of
-- qid_check equals an independent plain-SQL reference on random tables
-- (4 seeds, 0 to 3,000 rows, NULLs, heavy ties, 1 to 3 columns); passed is
-- exactly measured against threshold (thresholds at and just past the measured
-- value); qid_assert raises QR001 naming the failed rules, inside a CALLed
-- procedure too; history rows match the run; the table is unchanged.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(4 * 4 * 3 * 3 + 12);

-- A random table of tied values, about 10% NULL per column
CREATE FUNCTION pg_temp.make_table(seed float8, nrows integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM setseed(seed);
	DROP TABLE IF EXISTS r;
	CREATE TABLE r (a integer, "B col" text, c numeric);
	INSERT INTO r
	SELECT CASE WHEN random() < 0.1 THEN NULL ELSE floor(random() * greatest(3, nrows / 4))::int END,
		CASE WHEN random() < 0.1 THEN NULL ELSE (ARRAY['x', 'y', 'z', 'X'])[1 + floor(random() * 4)::int] END,
		CASE WHEN random() < 0.1 THEN NULL ELSE (ARRAY[1, 1.0, 2.50, 2.5, 7])[1 + floor(random() * 5)::int] END
	FROM generate_series(1, nrows);
END
$$;

-- Plain-SQL figures over GROUP BY: k level, singleton share, rows below 3,
-- and the all-distinct probability for 2 and 3 draws by power sums
-- (2! e_2 = 1 - S2, 3! e_3 = 1 - 3 S2 + 2 S3)
CREATE FUNCTION pg_temp.reference(cols text[], OUT k float8, OUT share float8, OUT below3 float8,
								  OUT p2 float8, OUT p3 float8)
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format($q$
		WITH c AS (SELECT count(*)::float8 AS n FROM r GROUP BY %1$s), t AS (SELECT sum(n) AS total FROM c)
		SELECT min(n), coalesce(sum(n) FILTER (WHERE n = 1), 0) / max(t.total),
			   coalesce(sum(n) FILTER (WHERE n < 3), 0),
			   1 - sum((n / t.total) ^ 2),
			   1 - 3 * sum((n / t.total) ^ 2) + 2 * sum((n / t.total) ^ 3)
		FROM c, t$q$, (SELECT string_agg(quote_ident(x), ', ') FROM unnest(cols) x))
	INTO k, share, below3, p2, p3;
END
$$;

-- Compare qid_check with the reference for one QID, thresholds at the measured value (pass) and past it (fail)
CREATE FUNCTION pg_temp.check_qid(cols text[], label text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	ref record;
	got record;
	rows_at_boundary boolean;
	gs integer := 2 + cardinality(cols) % 2;
	p float8;
BEGIN
	SELECT * INTO ref FROM pg_temp.reference(cols);
	p := CASE gs WHEN 2 THEN ref.p2 ELSE ref.p3 END;
	-- measured values against the reference
	SELECT array_agg(measured ORDER BY rule) AS m INTO got
	FROM qid_check('r', cols, jsonb_build_object('min_k', 1, 'max_singleton_share', 1,
				   'max_rows_below_k', jsonb_build_object('k', 3, 'max', 1e9),
				   'max_birthday_uniqueness', jsonb_build_object('group_size', gs, 'max', 1)));
	RETURN NEXT ok((got.m[1] IS NOT DISTINCT FROM p OR abs(got.m[1] - p) < 1e-12)
				   AND got.m[2] = ref.below3
				   AND got.m[3] IS NOT DISTINCT FROM ref.share
				   AND got.m[4] IS NOT DISTINCT FROM ref.k,
				   format('%s: measured %s = reference (p%s %s, below3 %s, share %s, k %s)',
						  label, got.m, gs, p, ref.below3, ref.share, ref.k));
	-- thresholds equal to the measured values pass
	RETURN NEXT is((SELECT bool_and(passed) FROM qid_check('r', cols,
					jsonb_build_object('min_k', coalesce(ref.k, 1), 'max_singleton_share', coalesce(ref.share, 0),
									   'max_rows_below_k', jsonb_build_object('k', 3, 'max', ref.below3),
									   'max_birthday_uniqueness', jsonb_build_object('group_size', gs, 'max', least(1, coalesce(p, 0) + 1e-12))))),
				   true, label || ': thresholds at the measured values pass');
	-- thresholds just past them fail, rule by rule (an empty table passes everything)
	RETURN NEXT is((SELECT array_agg(passed ORDER BY rule) FROM qid_check('r', cols,
					jsonb_build_object('min_k', coalesce(ref.k, 1) + 1,
									   'max_singleton_share', greatest(coalesce(ref.share, 0) - 1e-9, 0),
									   'max_rows_below_k', jsonb_build_object('k', 3, 'max', greatest(ref.below3 - 1, 0)),
									   'max_birthday_uniqueness', jsonb_build_object('group_size', gs, 'max', greatest(coalesce(p, 0) - 1e-9, 0))))),
				   ARRAY[p IS NULL OR p = 0, ref.below3 = 0, ref.share IS NULL OR ref.share = 0, ref.k IS NULL],
				   label || ': thresholds past the measured values fail');
END
$$;

-- seeds x sizes x QIDs x 3 tests, one table at a time
CREATE FUNCTION pg_temp.run_all() RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	s float8;
	n integer;
	q text;
BEGIN
	FOREACH s IN ARRAY ARRAY[0.11, 0.22, 0.33, 0.44] LOOP
		FOREACH n IN ARRAY ARRAY[0, 1, 40, 3000] LOOP
			PERFORM pg_temp.make_table(s, n);
			FOREACH q IN ARRAY ARRAY['a', 'B col|c', 'a|B col|c'] LOOP
				RETURN QUERY SELECT pg_temp.check_qid(string_to_array(q, '|'),
													  format('seed %s, %s rows, qid %s', s, n, q));
			END LOOP;
		END LOOP;
	END LOOP;
END
$$;
SELECT pg_temp.run_all();

-- The asserting form, a procedure around it, and the history
CREATE TABLE p (age integer, zip text);
INSERT INTO p SELECT 20 + i % 5, 'z' || i % 3 FROM generate_series(1, 60) i;
INSERT INTO p VALUES (99, 'z9'), (98, 'z9');
CREATE TEMP TABLE before AS SELECT md5(string_agg(p::text, ',' ORDER BY p::text)) AS h FROM p;

SELECT lives_ok($$CALL qid_assert('p', ARRAY['age', 'zip'], '{"min_k": 1, "max_rows_below_k": {"k": 2, "max": 2}}')$$,
				'qid_assert is silent when every rule passes');
SELECT throws_ok($$CALL qid_assert('p', ARRAY['age', 'zip'], '{"min_k": 2, "max_singleton_share": 0.5, "max_rows_below_k": {"k": 3, "max": 1}}')$$,
				 'QR001', 'qidrisk policy check failed for public.p: min_k, max_rows_below_k',
				 'qid_assert raises QR001 naming exactly the failed rules, in policy order');
CREATE FUNCTION pg_temp.assert_detail(policy jsonb) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	d text;
BEGIN
	CALL qid_assert('p', ARRAY['age', 'zip'], policy);
	RETURN 'no error';
EXCEPTION WHEN SQLSTATE 'QR001' THEN
	GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
	RETURN d;
END
$$;
SELECT is(pg_temp.assert_detail('{"min_k": 3, "max_singleton_share": 0.01}'),
		  format('min_k: measured 1, threshold 3. max_singleton_share: measured %s, threshold 0.01.', 2 / 62::float8),
		  'the detail gives each failed rule''s measured value and threshold');
CREATE PROCEDURE pg_temp.nightly(k integer) LANGUAGE plpgsql AS $$
BEGIN
	CALL qid_assert('p', ARRAY['age', 'zip'], jsonb_build_object('min_k', k));
END
$$;
SELECT lives_ok('CALL pg_temp.nightly(1)', 'a procedure around qid_assert passes when the policy holds');
SELECT throws_ok('CALL pg_temp.nightly(2)', 'QR001', NULL, 'a CALLed procedure fails with QR001 when the policy breaks');
SELECT throws_ok($$CALL qid_assert('p', ARRAY['age'], '{"min_k": 2}', record_history => true)$$, '2D000', NULL,
				 'qid_assert with record_history commits, so it refuses to run inside a transaction block');

CREATE TEMP TABLE hist_before AS SELECT count(*) AS n FROM qid_check_history;
SELECT is(count(*), 2::bigint, 'qid_check with record_history returns its rows as usual')
FROM qid_check('p', ARRAY['age', 'zip'], '{"min_k": 2, "max_singleton_share": 0.5}', record_history => true);
SELECT is((SELECT count(*) FROM qid_check_history) - n, 1::bigint, 'and appends one history row') FROM hist_before;
SELECT is((SELECT ROW(relation, qid, policy, passed, checked_by, checked_at = now())::text
		   FROM qid_check_history ORDER BY checked_at DESC LIMIT 1),
		  ROW('public.p', ARRAY['age', 'zip'], '{"min_k": 2, "max_singleton_share": 0.5}'::jsonb, false,
			  current_user::name, true)::text,
		  'the history row records the table, QID, policy, overall result, role and time');
SELECT is((SELECT results FROM qid_check_history ORDER BY checked_at DESC LIMIT 1),
		  (SELECT jsonb_agg(to_jsonb(c)) FROM qid_check('p', ARRAY['age', 'zip'], '{"min_k": 2, "max_singleton_share": 0.5}') c),
		  'the history row''s results are the rows qid_check returned');
SELECT is((SELECT count(*) FROM qid_check_history) - n, 1::bigint, 'without record_history nothing is appended')
FROM hist_before;
SELECT is((SELECT md5(string_agg(p::text, ',' ORDER BY p::text)) FROM p), h, 'the checked table is unchanged') FROM before;
SELECT * FROM finish();
ROLLBACK;
