-- bench/qidshape.sql: build the QID-shape table for bench/parallel.sh.
-- psql variables: :tab (table name), :rows (row count).
--
-- A near-distinct quasi-identifier of a date, a 0/1 integer and a skewed
-- integer ZIP, with coarser columns derived from them so that one table holds
-- QIDs of very different class counts.  Every value is a pure function of the
-- row number i (bench_u, as in bench/population.sql, with the same seeds and
-- distributions as its birth_date, sex and zip5), so a table of a given size
-- is identical on every machine and run.  At 4,000,000 rows about 3.8 million
-- rows are unique on (d, s, zip).
\set ON_ERROR_STOP 1

CREATE OR REPLACE FUNCTION bench_u(i bigint, k bigint) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT (hashint8extended(i, k) & 9007199254740991)::double precision / 9007199254740992 $$;

DROP TABLE IF EXISTS :tab;
CREATE UNLOGGED TABLE :tab (
	d date NOT NULL,			-- a day of 90 years, uniform
	s integer NOT NULL,			-- 0 or 1
	zip integer NOT NULL,		-- a five-digit code, power-law skewed
	m date NOT NULL,			-- d's month
	y integer NOT NULL,			-- d's year
	zip3 integer NOT NULL,		-- zip's first three digits (900 values)
	region integer NOT NULL		-- zip's first digit (9 values)
);

INSERT INTO :tab (d, s, zip, m, y, zip3, region)
SELECT d, s, zip, date_trunc('month', d)::date, extract(year FROM d)::integer,
	   zip / 100, zip / 10000
FROM (
	SELECT
		date '1925-01-01' + floor(bench_u(i, 1) * 32872)::integer AS d,
		(bench_u(i, 2) >= 0.505)::integer AS s,
		-- rank r in 1..30000 with p(r) ~ r^-0.8 (rank 1 ~2% of the rows), mapped
		-- one-to-one onto scattered codes 10000..99999 (7919 is prime to 90000)
		((floor(power(1 + bench_u(i, 3) * (power(30001, 0.2) - 1), 5))::bigint
		  * 7919) % 90000 + 10000)::integer AS zip
	FROM generate_series(1, :rows::bigint) AS i
) g;

VACUUM ANALYZE :tab;
