-- Bad input to QaR (gpd_fit, qar_risk_from_thetas, qar_tail_risk, qar_thetas,
-- qar_risk, qar_record_scores, qar_record_contributions, qar_record_entropy,
-- qar_greedy_removal): every case raises its documented SQLSTATE, and nothing
-- changes afterwards.  gpd_fit, qar_tail_risk are STRICT: NULL in, NULL out.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(124 + 10);

CREATE TABLE survey AS
SELECT i AS id, i % 3 AS a, i % 5 AS b, i % 7 AS c, (i * 7) % 11 AS d, (i * 3) % 13 AS e, i % 17 AS f,
	   point(i, i) AS p, i::text AS t
FROM generate_series(1, 300) AS i;
CREATE TABLE empty_t (a integer, b integer);
CREATE ROLE qidrisk_e_nobody;
CREATE ROLE qidrisk_e_cols;
GRANT SELECT (a, b, c) ON survey TO qidrisk_e_cols;

-- load the library, which defines qidrisk.max_state_memory
DO $$BEGIN PERFORM class_count(x) FROM generate_series(1, 2) x; END$$;

-- What must not change: table contents, objects, settings, the current role
CREATE FUNCTION pg_temp.snapshot() RETURNS text LANGUAGE sql AS $$
	SELECT concat_ws(' | ', (SELECT md5(string_agg(s::text, ',' ORDER BY id)) FROM survey s),
					 (SELECT count(*) FROM pg_class), (SELECT count(*) FROM pg_proc), (SELECT count(*) FROM pg_type),
					 current_setting('qidrisk.max_state_memory'), current_setting('search_path'), current_user)
$$;
CREATE TEMP TABLE before AS SELECT pg_temp.snapshot() AS s;

SELECT throws_ok(stmt, code, NULL, descr || ' -> ' || code)
FROM (VALUES
	-- gpd_fit
	('SELECT * FROM gpd_fit(ARRAY[]::float8[])', '22023', 'gpd_fit: no excess'),
	('SELECT * FROM gpd_fit(ARRAY[1.0])', '22023', 'gpd_fit: one excess'),
	('SELECT * FROM gpd_fit(ARRAY[1, NULL]::float8[])', '22004', 'gpd_fit: NULL excess'),
	('SELECT * FROM gpd_fit(ARRAY[1, -1]::float8[])', '22023', 'gpd_fit: negative excess'),
	($$SELECT * FROM gpd_fit(ARRAY[1, 'NaN']::float8[])$$, '22023', 'gpd_fit: NaN excess'),
	($$SELECT * FROM gpd_fit(ARRAY[1, 'Infinity']::float8[])$$, '22023', 'gpd_fit: infinite excess'),
	($$SELECT * FROM gpd_fit(ARRAY[1, '-Infinity']::float8[])$$, '22023', 'gpd_fit: -Infinity excess'),
	('SELECT * FROM gpd_fit(ARRAY[[1, 2], [3, 4]]::float8[])', '2202E', 'gpd_fit: two-dimensional excesses'),
	('SELECT * FROM gpd_fit(ARRAY[0, 0, 0]::float8[])', '22023', 'gpd_fit: all excesses zero'),
	('SELECT * FROM gpd_fit(ARRAY[0, 0, 0]::float8[], ''mle'')', '22023', 'gpd_fit: mle cannot fit zeros'),
	('SELECT * FROM gpd_fit(ARRAY[0, 0, 0]::float8[], ''pwm'')', '22023', 'gpd_fit: pwm cannot fit zeros'),
	('SELECT * FROM gpd_fit(ARRAY[0, 0, 0]::float8[], ''mom'')', '22023', 'gpd_fit: mom cannot fit zeros'),
	($$SELECT * FROM gpd_fit(ARRAY[1, 2, 3]::float8[], 'lmoments')$$, '22023', 'gpd_fit: unknown method'),
	($$SELECT * FROM gpd_fit(ARRAY[1, 2, 3]::float8[], 'MLE')$$, '22023', 'gpd_fit: methods are lower case'),
	($$SELECT * FROM gpd_fit(ARRAY[1, 2, 3]::float8[], '')$$, '22023', 'gpd_fit: empty method'),
	($$SELECT * FROM gpd_fit(ARRAY['a', 'b'])$$, '42883', 'gpd_fit: text excesses (no such function)'),
	-- qar_risk_from_thetas
	('SELECT * FROM qar_risk_from_thetas(NULL)', '22004', 'from_thetas: NULL thetas'),
	('SELECT * FROM qar_risk_from_thetas(ARRAY[]::float8[])', '22023', 'from_thetas: no theta'),
	('SELECT * FROM qar_risk_from_thetas(ARRAY[0.1, NULL])', '22004', 'from_thetas: NULL theta'),
	('SELECT * FROM qar_risk_from_thetas(ARRAY[[0.1, 0.2], [0.3, 0.4]])', '2202E', 'from_thetas: two-dimensional thetas'),
	('SELECT * FROM qar_risk_from_thetas(ARRAY[0.1, 1.5])', '22023', 'from_thetas: theta above 1'),
	('SELECT * FROM qar_risk_from_thetas(ARRAY[0.1, -0.5])', '22023', 'from_thetas: negative theta'),
	($$SELECT * FROM qar_risk_from_thetas(ARRAY[0.1, 'NaN'])$$, '22023', 'from_thetas: NaN theta'),
	($$SELECT * FROM qar_risk_from_thetas(ARRAY[0.1, 'Infinity'])$$, '22023', 'from_thetas: infinite theta'),
	('SELECT * FROM qar_risk_from_thetas(ARRAY[0.1, 1])', '22023', 'from_thetas: theta 1 without rows'),
	('SELECT * FROM qar_risk_from_thetas(ARRAY[0.1, 0])', '22023', 'from_thetas: theta 0 without rows'),
	('SELECT * FROM qar_risk_from_thetas(ARRAY[0.1, 0.2, 0.3])', '22023', 'from_thetas: fewer than 2 exceedances'),
	('SELECT * FROM qar_risk_from_thetas(ARRAY[0.5, 0.5, 0.5, 0.5], 0.01, 0.5, 1)', '22023', 'from_thetas: all thetas equal'),
	('SELECT * FROM qar_risk_from_thetas(ARRAY(SELECT g / 1000.0 FROM generate_series(1, 999) g)::float8[], alpha => 0.2)', '22023', 'from_thetas: alpha not below n_u / n_p'),
	('SELECT * FROM qar_risk_from_thetas(ARRAY(SELECT g / 1000.0 FROM generate_series(1, 999) g)::float8[], alpha => 0)', '22023', 'from_thetas: alpha 0'),
	('SELECT * FROM qar_risk_from_thetas(ARRAY(SELECT g / 1000.0 FROM generate_series(1, 999) g)::float8[], alpha => 1)', '22023', 'from_thetas: alpha 1'),
	($$SELECT * FROM qar_risk_from_thetas(ARRAY(SELECT g / 1000.0 FROM generate_series(1, 999) g)::float8[], alpha => 'NaN')$$, '22023', 'from_thetas: alpha NaN'),
	('SELECT * FROM qar_risk_from_thetas(ARRAY(SELECT g / 1000.0 FROM generate_series(1, 999) g)::float8[], alpha => NULL)', '22004', 'from_thetas: alpha NULL'),
	('SELECT * FROM qar_risk_from_thetas(ARRAY(SELECT g / 1000.0 FROM generate_series(1, 999) g)::float8[], pi_u => 0)', '22023', 'from_thetas: pi_u 0'),
	($$SELECT * FROM qar_risk_from_thetas(ARRAY(SELECT g / 1000.0 FROM generate_series(1, 999) g)::float8[], pi_u => 'Infinity')$$, '22023', 'from_thetas: pi_u Infinity'),
	('SELECT * FROM qar_risk_from_thetas(ARRAY(SELECT g / 1000.0 FROM generate_series(1, 999) g)::float8[], pi_u => NULL)', '22004', 'from_thetas: pi_u NULL'),
	('SELECT * FROM qar_risk_from_thetas(ARRAY(SELECT g / 1000.0 FROM generate_series(1, 999) g)::float8[], rows => 0)', '22023', 'from_thetas: rows 0'),
	('SELECT * FROM qar_risk_from_thetas(ARRAY(SELECT g / 1000.0 FROM generate_series(1, 999) g)::float8[], rows => -5)', '22023', 'from_thetas: negative rows'),
	-- qar_tail_risk
	($$SELECT qar_tail_risk('NaN', 0.1, 1, 100, 10)$$, '22023', 'tail_risk: u NaN'),
	('SELECT qar_tail_risk(0, 0.1, 1, 100, 10)', '22023', 'tail_risk: u 0'),
	('SELECT qar_tail_risk(1, 0.1, 1, 100, 10)', '22023', 'tail_risk: u 1'),
	($$SELECT qar_tail_risk(0.5, 'NaN', 1, 100, 10)$$, '22023', 'tail_risk: xi NaN'),
	($$SELECT qar_tail_risk(0.5, 'Infinity', 1, 100, 10)$$, '22023', 'tail_risk: xi Infinity'),
	('SELECT qar_tail_risk(0.5, 0.1, 0, 100, 10)', '22023', 'tail_risk: beta 0'),
	('SELECT qar_tail_risk(0.5, 0.1, -1, 100, 10)', '22023', 'tail_risk: negative beta'),
	($$SELECT qar_tail_risk(0.5, 0.1, 'Infinity', 100, 10)$$, '22023', 'tail_risk: beta Infinity'),
	($$SELECT qar_tail_risk(0.5, 0.1, 'NaN', 100, 10)$$, '22023', 'tail_risk: beta NaN'),
	('SELECT qar_tail_risk(0.5, 0.1, 1, 0, 10)', '22023', 'tail_risk: n_p 0'),
	('SELECT qar_tail_risk(0.5, 0.1, 1, -5, 10)', '22023', 'tail_risk: negative n_p'),
	('SELECT qar_tail_risk(0.5, 0.1, 1, 100, 0)', '22023', 'tail_risk: n_u 0'),
	('SELECT qar_tail_risk(0.5, 0.1, 1, 100, -1)', '22023', 'tail_risk: negative n_u'),
	('SELECT qar_tail_risk(0.5, 0.1, 1, 100, 200)', '22023', 'tail_risk: n_u above n_p'),
	('SELECT qar_tail_risk(0.5, 0.1, 1, 100, 10, 0)', '22023', 'tail_risk: alpha 0'),
	('SELECT qar_tail_risk(0.5, 0.1, 1, 100, 10, 1)', '22023', 'tail_risk: alpha 1'),
	($$SELECT qar_tail_risk(0.5, 0.1, 1, 100, 10, 'NaN')$$, '22023', 'tail_risk: alpha NaN'),
	('SELECT qar_tail_risk(0.5, 0.1, 1, 100, 10, 0.1)', '22023', 'tail_risk: alpha = n_u / n_p'),
	('SELECT qar_tail_risk(0.5, 0.1, 1, 100, 10, 0.5)', '22023', 'tail_risk: alpha above n_u / n_p'),
	('SELECT qar_tail_risk(0.5, 0.1, 1, 100, 3000000000)', '42883', 'tail_risk: n_u beyond integer (no such function)'),
	-- qar_thetas (the argument checks every table function shares)
	($$SELECT * FROM qar_thetas(NULL, ARRAY['a'])$$, '22004', 'thetas: NULL table'),
	($$SELECT * FROM qar_thetas('survey', NULL)$$, '22004', 'thetas: NULL columns'),
	($$SELECT * FROM qar_thetas('survey', ARRAY['a'], NULL)$$, '22004', 'thetas: NULL p'),
	($$SELECT * FROM qar_thetas('nope', ARRAY['a'])$$, '42P01', 'thetas: unknown table'),
	($$SELECT * FROM qar_thetas('survey', ARRAY[]::text[])$$, '22023', 'thetas: no column'),
	($$SELECT * FROM qar_thetas('survey', ARRAY['a', 'a'])$$, '42701', 'thetas: duplicate column'),
	($$SELECT * FROM qar_thetas('survey', ARRAY['a', NULL])$$, '22004', 'thetas: NULL column name'),
	($$SELECT * FROM qar_thetas('survey', ARRAY['nope'], 1)$$, '42703', 'thetas: unknown column'),
	($$SELECT * FROM qar_thetas('survey', ARRAY['A'], 1)$$, '42703', 'thetas: column names are case-sensitive'),
	($$SELECT * FROM qar_thetas('survey', ARRAY['ctid'], 1)$$, '42703', 'thetas: system column'),
	($$SELECT * FROM qar_thetas('survey', ARRAY[['a'], ['b']])$$, '2202E', 'thetas: two-dimensional columns'),
	($$SELECT * FROM qar_thetas('survey', ARRAY['a', 'b'], 0)$$, '22023', 'thetas: p 0'),
	($$SELECT * FROM qar_thetas('survey', ARRAY['a', 'b'], -1)$$, '22023', 'thetas: negative p'),
	($$SELECT * FROM qar_thetas('survey', ARRAY['a', 'b'], 3)$$, '22023', 'thetas: p above the columns'),
	($$SELECT * FROM qar_thetas('survey', ARRAY['a', 'b'], 2147483647)$$, '22023', 'thetas: p at the integer limit'),
	($$SELECT * FROM qar_thetas('survey', ARRAY['a', 'b'], 2.5)$$, '42883', 'thetas: fractional p (no such function)'),
	($$SELECT * FROM qar_thetas('survey', ARRAY['a', 'p'], 1)$$, '42883', 'thetas: a column without ordering'),
	($$SELECT * FROM qar_thetas('empty_t', ARRAY['a'], 1)$$, '22023', 'thetas: empty table'),
	($$SET LOCAL ROLE qidrisk_e_nobody; SELECT * FROM qar_thetas('survey', ARRAY['a', 'b'], 1)$$, '42501', 'thetas: no SELECT'),
	($$SET LOCAL ROLE qidrisk_e_cols; SELECT * FROM qar_thetas('survey', ARRAY['a', 'd'], 1)$$, '42501', 'thetas: no SELECT on a column'),
	-- qar_risk
	($$SELECT * FROM qar_risk(NULL, ARRAY['a'])$$, '22004', 'risk: NULL table'),
	($$SELECT * FROM qar_risk('survey', ARRAY['a', 'b', 'c'], p => NULL)$$, '22004', 'risk: NULL p'),
	($$SELECT * FROM qar_risk('survey', ARRAY['a', 'b', 'c'], p => 4)$$, '22023', 'risk: p above the columns'),
	($$SELECT * FROM qar_risk('survey', ARRAY['a', 'b', 'c'], alpha => 0)$$, '22023', 'risk: alpha 0'),
	($$SELECT * FROM qar_risk('survey', ARRAY['a', 'b', 'c'], alpha => NULL)$$, '22004', 'risk: alpha NULL'),
	($$SELECT * FROM qar_risk('survey', ARRAY['a', 'b', 'c'], alpha => 'NaN')$$, '22023', 'risk: alpha NaN'),
	($$SELECT * FROM qar_risk('survey', ARRAY['a', 'b', 'c'], pi_u => 1)$$, '22023', 'risk: pi_u 1'),
	($$SELECT * FROM qar_risk('survey', ARRAY['a', 'b', 'c'], pi_u => NULL)$$, '22004', 'risk: pi_u NULL'),
	($$SELECT * FROM qar_risk('survey', ARRAY['a', 'b', 'c'], pi_u => '-Infinity')$$, '22023', 'risk: pi_u -Infinity'),
	($$SELECT * FROM qar_risk('survey', ARRAY['a', 'b', 'c'], 3)$$, '22023', 'risk: one subset, undefined'),
	($$SELECT * FROM qar_risk('survey', ARRAY['a', 'a'])$$, '42701', 'risk: duplicate column'),
	($$SELECT * FROM qar_risk('empty_t', ARRAY['a', 'b'], 1)$$, '22023', 'risk: empty table'),
	($$SET LOCAL ROLE qidrisk_e_nobody; SELECT * FROM qar_risk('survey', ARRAY['a', 'b', 'c'], 2)$$, '42501', 'risk: no SELECT'),
	-- qar_record_scores
	($$SELECT * FROM qar_record_scores(NULL, ARRAY['a'])$$, '22004', 'scores: NULL table'),
	($$SELECT * FROM qar_record_scores('survey', ARRAY['a', 'b'], 0)$$, '22023', 'scores: p 0'),
	($$SELECT * FROM qar_record_scores('survey', ARRAY['a', 'nope'], 1)$$, '42703', 'scores: unknown column'),
	($$SELECT * FROM qar_record_scores('survey', ARRAY['a', 'b'], 2, 'nope')$$, '42703', 'scores: unknown key column'),
	($$SELECT * FROM qar_record_scores('survey', ARRAY['a', 'b'], 2, '')$$, '42703', 'scores: empty key column name'),
	($$SELECT * FROM qar_record_scores('survey', ARRAY['a', 'b'], 2, 'ctid')$$, '42703', 'scores: system key column'),
	($$SELECT * FROM qar_record_scores('survey', ARRAY['a', 'b'], 2, 'p')$$, '42883', 'scores: key column without ordering'),
	($$SET LOCAL ROLE qidrisk_e_cols; SELECT * FROM qar_record_scores('survey', ARRAY['a', 'b'], 1, 'id')$$, '42501', 'scores: no SELECT on the key column'),
	-- qar_record_contributions
	($$SELECT * FROM qar_record_contributions(NULL, ARRAY['a'])$$, '22004', 'contributions: NULL table'),
	($$SELECT * FROM qar_record_contributions('survey', ARRAY['a', 'b', 'c'], 2, max_rows => NULL)$$, '22004', 'contributions: NULL max_rows'),
	($$SELECT * FROM qar_record_contributions('survey', ARRAY['a', 'b', 'c'], 2, max_rows => 0)$$, '22023', 'contributions: max_rows 0'),
	($$SELECT * FROM qar_record_contributions('survey', ARRAY['a', 'b', 'c'], 2, max_rows => -1)$$, '22023', 'contributions: negative max_rows'),
	($$SELECT * FROM qar_record_contributions('survey', ARRAY['a', 'b', 'c'], 2, max_rows => 5)$$, '54000', 'contributions: more rows than max_rows'),
	($$SELECT * FROM qar_record_contributions('survey', ARRAY['a', 'b', 'c'], 2, alpha => 2)$$, '22023', 'contributions: alpha 2'),
	($$SELECT * FROM qar_record_contributions('survey', ARRAY['a', 'b', 'c'], 2, pi_u => 'NaN')$$, '22023', 'contributions: pi_u NaN'),
	($$SELECT * FROM qar_record_contributions('survey', ARRAY['a', 'b', 'c'], 2, key_column => 'nope')$$, '42703', 'contributions: unknown key column'),
	($$SELECT * FROM qar_record_contributions('survey', ARRAY['a', 'b', 'c'], 4)$$, '22023', 'contributions: p above the columns'),
	-- qar_record_entropy
	($$SELECT * FROM qar_record_entropy(NULL, ARRAY['a'])$$, '22004', 'entropy: NULL table'),
	($$SELECT * FROM qar_record_entropy('survey', ARRAY['a', 'b', 'c'], 2, max_rows => NULL)$$, '22004', 'entropy: NULL max_rows'),
	($$SELECT * FROM qar_record_entropy('survey', ARRAY['a', 'b', 'c'], 2, max_rows => -1)$$, '22023', 'entropy: negative max_rows'),
	($$SELECT * FROM qar_record_entropy('survey', ARRAY['a', 'b', 'c'], 2, max_rows => 5)$$, '54000', 'entropy: more rows than max_rows'),
	($$SELECT * FROM qar_record_entropy('survey', ARRAY['a', 'b', 'c'], 5)$$, '22023', 'entropy: p above the columns'),
	($$SELECT * FROM qar_record_entropy('survey', ARRAY['a', 'a'])$$, '42701', 'entropy: duplicate column'),
	-- qar_greedy_removal
	($$SELECT * FROM qar_greedy_removal(NULL, ARRAY['a'])$$, '22004', 'greedy: NULL table'),
	($$SELECT * FROM qar_greedy_removal('survey', ARRAY['a', 'b', 'c'], 2, steps => NULL)$$, '22004', 'greedy: NULL steps'),
	($$SELECT * FROM qar_greedy_removal('survey', ARRAY['a', 'b', 'c'], 2, steps => -1)$$, '22023', 'greedy: negative steps'),
	($$SELECT * FROM qar_greedy_removal('survey', ARRAY['a', 'b', 'c'], 2, steps => 300)$$, '22023', 'greedy: steps not below the rows'),
	($$SELECT * FROM qar_greedy_removal('survey', ARRAY['a', 'b', 'c'], 2, alpha => 0)$$, '22023', 'greedy: alpha 0'),
	($$SELECT * FROM qar_greedy_removal('survey', ARRAY['a', 'b', 'c'], 2, pi_u => 'Infinity')$$, '22023', 'greedy: pi_u Infinity'),
	($$SELECT * FROM qar_greedy_removal('survey', ARRAY['a', 'b', 'c'], 2, key_column => 'nope')$$, '42703', 'greedy: unknown key column'),
	($$SELECT * FROM qar_greedy_removal('survey', ARRAY['a', 'b', 'c'], 9)$$, '22023', 'greedy: p above the columns'),
	($$SET LOCAL qidrisk.max_state_memory = 64; SELECT * FROM qar_greedy_removal('survey', ARRAY['a', 'b', 'c', 'd', 'e', 'f'], 3)$$, '54000', 'greedy: past qidrisk.max_state_memory'),
	($$SET LOCAL ROLE qidrisk_e_nobody; SELECT * FROM qar_greedy_removal('survey', ARRAY['a', 'b', 'c'], 2)$$, '42501', 'greedy: no SELECT')
) AS c(stmt, code, descr);

SELECT is(pg_temp.snapshot(), s, 'nothing changed: table, objects, settings and role') FROM before;
-- STRICT functions: NULL in, NULL out (not an error)
SELECT ok((SELECT xi IS NULL FROM gpd_fit(NULL)) AND qar_tail_risk(0.5, NULL, 1, 100, 10) IS NULL,
		  'gpd_fit and qar_tail_risk are STRICT');
-- the messages say what is wrong
SELECT throws_ok('SELECT qar_tail_risk(0.5, 0.1, 1, 100, 10, 0.5)', '22023',
				 'alpha must be below the exceedance fraction n_u / n_p', 'tail risk past n_u / n_p is refused, as qar_risk does');
SELECT throws_ok($$SELECT * FROM qar_record_entropy('survey', ARRAY['a', 'b'], 1, max_rows => 0)$$, '22023',
				 'max_rows must be at least 1, not 0', 'a bad max_rows is a bad argument, not a limit');
-- excesses near the ends of the double range fit as their scaled copies do
-- (they used to raise 'no GPD fit exists'), and a scale beyond double is no fit
SELECT ok((SELECT abs(b.xi - a.xi) < 1e-9 AND abs(b.beta / 1e200 - a.beta) < 1e-9 * a.beta AND b.fit_method = a.fit_method
		   FROM gpd_fit(ARRAY[1, 1, 2, 3.5, 0.25]) a, gpd_fit(ARRAY[1e200, 1e200, 2e200, 3.5e200, 0.25e200]) b),
		  'gpd_fit of excesses around 1e200: the same xi, beta scaled');
SELECT ok((SELECT abs(b.xi - a.xi) < 1e-9 AND abs(b.beta / 1e-300 - a.beta) < 1e-9 * a.beta AND b.fit_method = a.fit_method
		   FROM gpd_fit(ARRAY[1, 1, 2, 3.5, 0.25]) a, gpd_fit(ARRAY[1e-300, 1e-300, 2e-300, 3.5e-300, 0.25e-300]) b),
		  'gpd_fit of excesses around 1e-300: the same xi, beta scaled');
SELECT throws_ok($$SELECT * FROM gpd_fit(ARRAY[1e308, 1e308, 1.7e308], 'pwm')$$, '22023', NULL,
				 'gpd_fit whose pwm beta would exceed the double range: no fit, 22023');
SELECT is((SELECT (xi, beta, fit_method)::text FROM gpd_fit(ARRAY[1e308, 1e308, 1.7e308])), '(-1,1.7e+308,boundary)',
		  'gpd_fit auto near the top of the double range: the boundary fit, whose beta is the largest excess');
-- the boundary just below n_u / n_p still works, and agrees with the formula
SELECT is(round(qar_tail_risk(0.9, 0.5, 1, 364, 18, 0.04)::numeric, 12),
		  round((1 / (1 + exp(-(ln(9) + 1 / 0.5 * ((364 * 0.04 / 18) ^ (-0.5) - 1)))))::numeric, 12),
		  'qar_tail_risk still works just below n_u / n_p (plain formula)');
SELECT is((SELECT q.risk FROM qar_risk('survey', ARRAY['a', 'b', 'c', 'd', 'e', 'f'], 2, 0.01, 0.3) q),
		  (SELECT q.risk FROM qar_risk_from_thetas((SELECT array_agg(theta) FROM qar_thetas('survey', ARRAY['a', 'b', 'c', 'd', 'e', 'f'], 2)), 0.01, 0.3, 300) q),
		  'qar_risk still works after the errors, and equals the risk of its thetas');

DROP OWNED BY qidrisk_e_nobody, qidrisk_e_cols;
DROP ROLE qidrisk_e_nobody, qidrisk_e_cols;

SELECT * FROM finish();
ROLLBACK;
