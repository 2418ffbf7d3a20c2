-- Bad input to the birthday-uniqueness and KL functions: every case raises
-- its documented SQLSTATE, and nothing changes afterwards.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(38 + 2);

CREATE TABLE letters (v text, w float8);
INSERT INTO letters VALUES ('a', 1), ('b', 2), ('c', 3), ('a', 1);

-- What must not change: table contents and objects
CREATE FUNCTION pg_temp.snapshot() RETURNS text LANGUAGE sql AS $$
	SELECT concat_ws(' | ', (SELECT md5(string_agg(l::text, ',' ORDER BY l::text)) FROM letters l),
					 (SELECT count(*) FROM pg_class), (SELECT count(*) FROM pg_proc), (SELECT count(*) FROM pg_type))
$$;
CREATE TEMP TABLE before AS SELECT pg_temp.snapshot() AS s;

SELECT throws_ok(stmt, code, NULL, descr || ' -> ' || code)
FROM (VALUES
	('SELECT birthday_uniqueness(-1, 10)', '22023', 'negative k'),
	('SELECT birthday_uniqueness(3, 0)', '22023', 'n = 0'),
	('SELECT birthday_uniqueness(3, -10)', '22023', 'negative n'),
	($$SELECT birthday_uniqueness(3, 'NaN')$$, '22023', 'n NaN'),
	($$SELECT birthday_uniqueness(3, 'Infinity')$$, '22023', 'n Infinity'),
	('SELECT birthday_uniqueness(3, 10, -0.5)', '22023', 'negative kappa'),
	($$SELECT birthday_uniqueness(3, 10, 'NaN')$$, '22023', 'kappa NaN'),
	($$SELECT birthday_uniqueness(3, 10, 'Infinity')$$, '22023', 'kappa Infinity'),
	('SELECT birthday_uniqueness_approx(3, 10, -1)', '22023', 'approx: negative kappa'),
	('SELECT birthday_uniqueness_approx(-3, 10)', '22023', 'approx: negative k'),
	('SELECT birthday_uniqueness_poisson(3, -1)', '22023', 'poisson: negative n'),
	('SELECT birthday_uniqueness_poisson(-3, 10)', '22023', 'poisson: negative k'),
	('SELECT birthday_max_group_size(0, 10)', '22023', 'target 0'),
	('SELECT birthday_max_group_size(1.5, 10)', '22023', 'target above 1'),
	($$SELECT birthday_max_group_size('NaN', 10)$$, '22023', 'target NaN'),
	($$SELECT birthday_max_group_size(0.5, 'NaN')$$, '22023', 'max_k: n NaN'),
	('SELECT birthday_max_group_size(0.5, 10, -1)', '22023', 'max_k: negative kappa'),
	('SELECT kl_uniform(v, 2) FROM letters', '22023', 'domain_size below the distinct values'),
	('SELECT kl_uniform(v, 0::bigint) FROM letters', '22023', 'domain_size 0'),
	('SELECT kl_uniform(v, NULL::bigint) FROM letters', '22004', 'NULL domain_size'),
	('SELECT kl_uniform(v, w::bigint) FROM letters', '22023', 'domain_size changing between rows'),
	('SELECT kl_uniform(v, -1.0, 4) FROM letters', '22023', 'negative weight'),
	($$SELECT kl_uniform(v, 'NaN'::float8, 4) FROM letters$$, '22023', 'NaN weight'),
	($$SELECT kl_uniform(v, 'Infinity'::float8, 4) FROM letters$$, '22023', 'infinite weight'),
	('SELECT kl_uniform(v, NULL::float8, 4) FROM letters', '22004', 'NULL weight'),
	('SELECT birthday_uniqueness_exact(-2, v) FROM letters', '22023', 'exact: negative k'),
	('SELECT birthday_uniqueness_exact(NULL, v) FROM letters', '22004', 'exact: NULL k'),
	('SELECT birthday_uniqueness_exact(i, v) FROM letters, generate_series(1, 2) i', '22023', 'exact: k changing between rows'),
	('SELECT birthday_uniqueness_exact(2, v, -1.0) FROM letters', '22023', 'exact: negative weight'),
	('SELECT birthday_uniqueness_poisson_product(-1, v) FROM letters', '22023', 'poisson product: negative k'),
	('SELECT birthday_uniqueness_poisson_product(2, v, NULL::float8) FROM letters', '22004', 'poisson product: NULL weight'),
	('SELECT birthday_max_group_size_exact(2, v) FROM letters', '22023', 'max_k_exact: target above 1'),
	('SELECT birthday_max_group_size_exact(NULL, v) FROM letters', '22004', 'max_k_exact: NULL target'),
	('SELECT birthday_max_group_size_exact(0.5, v, -1.0) FROM letters', '22023', 'max_k_exact: negative weight'),
	($$SELECT kl_uniform('a')$$, '42804', 'untyped literal'),
	('SELECT kl_uniform(point(1, 1))', '42883', 'type without a hash function'),
	('SELECT birthday_uniqueness_exact(2, point(1, 1))', '42883', 'exact: type without a hash function'),
	($$SELECT birthday_uniqueness('x', 10)$$, '22P02', 'k not a number')
) AS c(stmt, code, descr);

SELECT is(pg_temp.snapshot(), s, 'nothing changed: table and objects') FROM before;
SELECT is((SELECT birthday_uniqueness_exact(2, v) FROM letters), 0.625::float8, 'the aggregates still work after the errors');

SELECT * FROM finish();
ROLLBACK;
