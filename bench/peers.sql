-- bench/peers.sql: build the table bench/peers.sh compares qidrisk and DuckDB on.
-- psql variables: :tab (table name), :rows (row count).
--
-- Integer columns only, so that PostgreSQL's floor is one hashint4 per value
-- and both engines read the same numbers.  Every value is a pure function of
-- the row number i (bench_u, with the seeds and distributions of
-- bench/qidshape.sql's d, s and zip), so a table of a given size is identical
-- on every machine and run.
\set ON_ERROR_STOP 1

CREATE OR REPLACE FUNCTION bench_u(i bigint, k bigint) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT (hashint8extended(i, k) & 9007199254740991)::double precision / 9007199254740992 $$;

DROP TABLE IF EXISTS :tab;
CREATE UNLOGGED TABLE :tab (
	d integer NOT NULL,			-- birth date: a day of 90 years (0 = 1925-01-01), uniform
	s integer NOT NULL,			-- sex: 0 or 1
	zip integer NOT NULL,		-- a five-digit code, power-law skewed
	y integer NOT NULL,			-- d's year
	zip4 integer NOT NULL		-- zip / 10
);

INSERT INTO :tab (d, s, zip, y, zip4)
SELECT d, s, zip, extract(year FROM date '1925-01-01' + d)::integer, zip / 10
FROM (
	SELECT
		floor(bench_u(i, 1) * 32872)::integer AS d,
		(bench_u(i, 2) >= 0.505)::integer AS s,
		-- rank r in 1..30000 with p(r) ~ r^-0.8, mapped one-to-one onto
		-- scattered codes 10000..99999 (7919 is prime to 90000)
		((floor(power(1 + bench_u(i, 3) * (power(30001, 0.2) - 1), 5))::bigint
		  * 7919) % 90000 + 10000)::integer AS zip
	FROM generate_series(1, :rows::bigint) AS i
) g;

VACUUM ANALYZE :tab;
