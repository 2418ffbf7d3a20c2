-- bench/population.sql: build the synthetic population table for bench/run.sh.
-- psql variables: :tab (table name), :rows (row count).
--
-- Every value is a pure function of the row number i: u(i, k) maps
-- hashint8extended(i, k) to [0, 1), one seed k per column, so a table of a
-- given size is identical on every machine and run, and no setseed() state is
-- involved.  Categorical columns pick a value by inverse CDF (width_bucket
-- over cumulative weights); the weights follow the marginals of the UCI Adult
-- data, rounded, so the skew is realistic.
\set ON_ERROR_STOP 1

CREATE OR REPLACE FUNCTION bench_u(i bigint, k bigint) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT (hashint8extended(i, k) & 9007199254740991)::double precision / 9007199254740992 $$;

-- Categorical columns: value names with integer weights -> names[] and the
-- cumulative lower bound of each value's share of [0, 1).
DROP TABLE IF EXISTS pg_temp.bench_categories;
CREATE TEMP TABLE bench_categories AS
WITH spec(col, names, weights) AS (VALUES
	('education',
	 ARRAY['HS-grad', 'Some-college', 'Bachelors', 'Masters', 'Assoc-voc',
		   '11th', 'Assoc-acdm', '10th', '7th-8th', 'Prof-school', '9th',
		   '12th', 'Doctorate', '5th-6th', '1st-4th', 'Preschool'],
	 ARRAY[1050, 730, 535, 172, 138, 118, 107, 93, 65, 58, 51, 43, 41, 33, 17, 5]),
	('occupation',
	 ARRAY['Prof-specialty', 'Craft-repair', 'Exec-managerial', 'Adm-clerical',
		   'Sales', 'Other-service', 'Machine-op-inspct', 'Unknown',
		   'Transport-moving', 'Handlers-cleaners', 'Farming-fishing',
		   'Tech-support', 'Protective-serv', 'Priv-house-serv', 'Armed-Forces'],
	 ARRAY[414, 410, 407, 377, 365, 330, 200, 184, 160, 137, 99, 93, 65, 15, 1]),
	('race',
	 ARRAY['White', 'Black', 'Asian-Pac-Islander', 'Amer-Indian-Eskimo', 'Other'],
	 ARRAY[854, 96, 32, 10, 8]),
	('country',
	 ARRAY['United-States', 'Mexico', 'Philippines', 'Germany', 'Canada',
		   'Puerto-Rico', 'El-Salvador', 'India', 'Cuba', 'England', 'Jamaica',
		   'South-Korea', 'China', 'Italy', 'Dominican-Republic', 'Vietnam',
		   'Guatemala', 'Japan', 'Poland', 'Colombia', 'Taiwan', 'Haiti', 'Iran',
		   'Portugal', 'Nicaragua', 'Peru', 'France', 'Greece', 'Ecuador',
		   'Ireland', 'Hong-Kong', 'Cambodia', 'Trinidad-Tobago', 'Thailand',
		   'Laos', 'Yugoslavia', 'Outlying-US', 'Honduras', 'Hungary', 'Scotland'],
	 ARRAY[29170, 643, 198, 137, 121, 114, 106, 100, 95, 90, 81, 80, 75, 73, 70,
		   67, 64, 62, 60, 59, 51, 44, 43, 37, 34, 31, 29, 29, 28, 24, 20, 19,
		   19, 18, 18, 16, 14, 13, 13, 12])
),
value(col, ord, name, weight) AS (
	SELECT col, v.ord, v.name, v.weight
	FROM spec, unnest(names, weights) WITH ORDINALITY AS v(name, weight, ord)
),
bound AS (
	SELECT col, ord, name,
		   (sum(weight) OVER (PARTITION BY col ORDER BY ord) - weight)::double precision
		   / sum(weight) OVER (PARTITION BY col) AS lo
	FROM value
)
SELECT col, array_agg(name ORDER BY ord) AS names, array_agg(lo ORDER BY ord) AS lo
FROM bound GROUP BY col;

DROP TABLE IF EXISTS :tab;
CREATE UNLOGGED TABLE :tab (
	birth_date date NOT NULL,
	sex text NOT NULL,
	zip5 text NOT NULL,
	education text NOT NULL,
	occupation text NOT NULL,
	race text NOT NULL,
	hours_per_week integer NOT NULL,
	country text NOT NULL
);

INSERT INTO :tab
SELECT
	-- 90 years of birth dates, uniform: 1925-01-01 .. 2014-12-31
	date '1925-01-01' + floor(bench_u(i, 1) * 32872)::integer,
	CASE WHEN bench_u(i, 2) < 0.505 THEN 'F' ELSE 'M' END,
	-- ZIP rank r in 1..30000 drawn from a continuous power law p(r) ~ r^-0.8
	-- by inverse CDF, r = floor((1 + u ((N+1)^0.2 - 1))^5): rank 1 holds ~2%
	-- of the rows, rank 30000 ~0.0008%.  Ranks map one-to-one (7919 is prime
	-- to 90000) onto scattered five-digit codes 10000..99999.
	((floor(power(1 + bench_u(i, 3) * (power(30001, 0.2) - 1), 5))::bigint
	  * 7919) % 90000 + 10000)::text,
	(SELECT names FROM bench_categories WHERE col = 'education')
		[width_bucket(bench_u(i, 4), (SELECT lo FROM bench_categories WHERE col = 'education'))],
	(SELECT names FROM bench_categories WHERE col = 'occupation')
		[width_bucket(bench_u(i, 5), (SELECT lo FROM bench_categories WHERE col = 'occupation'))],
	(SELECT names FROM bench_categories WHERE col = 'race')
		[width_bucket(bench_u(i, 6), (SELECT lo FROM bench_categories WHERE col = 'race'))],
	-- 47% exactly 40 hours; the rest a bell around 40 (sd ~12), within 1..99
	CASE WHEN bench_u(i, 7) < 0.47 THEN 40
		 ELSE greatest(1, least(99, round(40 + 24 * (bench_u(i, 8) + bench_u(i, 9)
													 + bench_u(i, 10) - 1.5))))::integer
	END,
	(SELECT names FROM bench_categories WHERE col = 'country')
		[width_bucket(bench_u(i, 11), (SELECT lo FROM bench_categories WHERE col = 'country'))]
FROM generate_series(1, :rows::bigint) AS i;

VACUUM ANALYZE :tab;
