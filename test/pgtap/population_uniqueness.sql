-- population_uniqueness: every model's estimate against an independent
-- reference, the table form against the profile form, the slide negative
-- binomial's fit against its expected counts summed term by term in SQL, and
-- bad input.  test/reference/population_uniqueness.py (mpmath, 50 digits)
-- computed the values below from each model's definition on random frequency
-- profiles (samples of Pitman and Zipf populations, fractions 2e-5 to 0.6)
-- and on profiles where models have no estimate; its output is pasted as it
-- printed it: (class sizes, class counts, f, pitman, zayatz, snb, dankar,
-- the model Dankar's rule chose), NULL where a model has no estimate.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(40);

CREATE TEMP TABLE ref (id serial, sizes bigint[], counts bigint[], f float8, pitman float8,
					   zayatz float8, snb float8, dankar float8, chosen text);
INSERT INTO ref (sizes, counts, f, pitman, zayatz, snb, dankar, chosen) VALUES
(ARRAY[1,2,3,4,5,6,7,8,9,10,11,12,14,19,22,23,32,34]::bigint[], ARRAY[193,37,10,7,4,4,5,1,1,1,2,1,1,1,1,1,1,1]::bigint[], 0.01, 3993.1498018786424, 6585.2587827563275, 3443.8374126679319, 3993.1498018786424, 'pitman'),
(ARRAY[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,27,35,39,40,51,54,65,66,75,114,146]::bigint[], ARRAY[345,65,25,14,14,13,7,4,6,1,1,2,3,2,2,2,2,2,2,2,2,1,2,1,1,1,1,1,1,1,1,1,1,1]::bigint[], 0.05, 2195.2420559542411, 2325.8377871727948, 1328.0603789835736, 2195.2420559542411, 'pitman'),
(ARRAY[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,18,19,21,24,27,30,33,36,37,48,50,56,62,70,72,75,120]::bigint[], ARRAY[364,66,44,20,20,9,4,8,4,1,6,2,3,1,1,3,3,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]::bigint[], 0.1, 1433.7142615936982, 1491.589139297761, 1227.9142478333983, 1433.7142615936982, 'pitman'),
(ARRAY[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,19,21,22,23,24,27,28,36,38,40,45,61,64,74,79]::bigint[], ARRAY[366,78,43,15,17,11,5,7,6,6,2,5,2,6,2,3,1,2,2,1,1,1,1,1,1,1,1,1,1,1,1]::bigint[], 0.2, 907.38172214934514, 933.81723591727405, 960.52375165046681, 933.81723591727405, 'zayatz'),
(ARRAY[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,23,25,30,32,36,40,57,75,93,118]::bigint[], ARRAY[387,68,34,26,22,7,8,10,9,3,3,3,8,2,1,4,2,2,1,1,1,1,1,1,1,1,1,1,1,1]::bigint[], 0.35, 701.31553034522517, 731.97634633393182, 808.60218130413875, 731.97634633393182, 'zayatz'),
(ARRAY[1,2,3,4,5,6,7,8,9,10,11,12,13,16,17,18,20,22,24,25,26,28,29,30,32,43,45,47,50,54,57,65,70]::bigint[], ARRAY[398,75,40,25,27,14,4,7,6,1,4,2,2,2,3,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]::bigint[], 0.6, 538.56630519299085, 540.8030921173355, 554.28196048955624, 540.8030921173355, 'zayatz'),
(ARRAY[1,2,3,4,5,6,7,8,10,11,13,17,18,20,25,27,34,66,83,164]::bigint[], ARRAY[387,42,18,8,5,2,3,1,1,1,1,1,2,1,2,1,1,1,1,1]::bigint[], 0.02, 9118.3881700237198, 9435.0537188787912, 6765.1589098393606, 9118.3881700237198, 'pitman'),
(ARRAY[1,2,3,4,5,6,7,8,9,10,11,12,14,15,18,20,22,23,28,41,43,61,91,136,281]::bigint[], ARRAY[598,71,22,19,9,5,5,3,1,2,2,5,1,1,1,1,2,1,3,1,1,1,1,1,1]::bigint[], 0.1, 3697.2897789968047, 3663.8342197182646, 3540.9709860550661, 3697.2897789968047, 'pitman'),
(ARRAY[1,2,3,4,5,6,7,8,9,10,11,12,14,19,21,22,25,26,30,38,45,55,106,126,291]::bigint[], ARRAY[597,84,24,11,7,2,6,5,3,2,1,1,3,1,1,2,1,2,1,1,1,1,1,1,1]::bigint[], 0.3, 1567.6965854333348, 1509.4575508134485, 1465.6850642640707, 1465.6850642640707, 'snb'),
(ARRAY[1,2,3,4,5,6,7,8,9,10,11,12,14,15,16,18,20,23,28,30,32,44,46,73,97,125,288]::bigint[], ARRAY[590,84,31,19,6,4,7,4,3,1,2,1,1,2,1,1,2,1,1,1,1,1,1,1,1,1,1]::bigint[], 0.5, 1021.6192656469315, 979.77931102250341, 976.3555168883488, 976.3555168883488, 'snb'),
(ARRAY[1,2,3,4,5,6,7,8,9,10,11,12,13]::bigint[], ARRAY[480,482,448,354,311,210,142,76,37,19,7,1,1]::bigint[], 0.15, NULL, 293.4336890607222, 16.604481223378944, 16.604481223378944, 'snb'),
(ARRAY[1]::bigint[], ARRAY[50]::bigint[], 0.05, NULL, 1000, NULL, 1000, 'zayatz'),
(ARRAY[1,3,5]::bigint[], ARRAY[30,10,2]::bigint[], 0.3, 48.702321524114261, 63.538436262131739, NULL, 63.538436262131739, 'zayatz'),
(ARRAY[2,3]::bigint[], ARRAY[20,5]::bigint[], 0.05, NULL, 0, NULL, 0, 'none'),
(ARRAY[1,2,4]::bigint[], ARRAY[40,12,3]::bigint[], 1.0, NULL, 40, 40, 40, 'zayatz'),
(ARRAY[1,3,7,30000]::bigint[], ARRAY[300,10,2,1]::bigint[], 2e-05, 414968778.01289678, 267716.83694202191, NULL, 414968778.01289678, 'pitman');
-- ARX's misprinted SNB equations change sign together on a grid for 2 of the 11 profiles with classes of one and two rows (f < 1)

-- every profile's estimates, from the profile class_size_profile makes of its histogram
CREATE TEMP TABLE got AS
SELECT r.id, e.*
FROM ref r,
	 LATERAL population_uniqueness((SELECT class_size_profile(u.s)
									FROM unnest(r.sizes, r.counts) AS u(s, c), generate_series(1, u.c)),
								   r.f) AS e;
CREATE TEMP VIEW cmp AS
SELECT g.*, r.f, r.chosen, r.sizes, r.counts,
	   CASE g.model WHEN 'pitman' THEN r.pitman WHEN 'zayatz' THEN r.zayatz
					WHEN 'snb' THEN r.snb ELSE r.dankar END AS expected
FROM got g JOIN ref r USING (id);
-- a row agrees with the reference: within 1e-9 relative, 0 exactly, or unavailable with a reason
CREATE TEMP VIEW mismatch AS
SELECT c.* FROM cmp c
WHERE NOT CASE WHEN c.expected IS NULL THEN NOT c.available AND c.population_uniques IS NULL
										   AND c.population_share IS NULL AND c.note <> ''
			   WHEN c.expected = 0 THEN c.available AND c.population_uniques = 0
			   ELSE c.available AND abs(c.population_uniques / c.expected - 1) <= 1e-9 END;

SELECT is((SELECT count(*) FROM got), 4 * (SELECT count(*) FROM ref), 'model all: four rows a profile');
SELECT is((SELECT array_agg(DISTINCT model ORDER BY model) FROM got), '{dankar,pitman,snb,zayatz}',
		  'the models are pitman, zayatz, snb and dankar');
SELECT is((SELECT array_agg(format('profile %s: %s, %s (%s)', id, population_uniques, expected, note) ORDER BY id)
		   FROM mismatch WHERE model = m), NULL, m || ' agrees with the reference on every profile (1e-9 relative)')
FROM unnest(ARRAY['pitman', 'zayatz', 'snb', 'dankar']) AS m;
SELECT is((SELECT count(*) FROM cmp WHERE model = m AND expected IS NOT NULL), n,
		  m || ' has an estimate for ' || n || ' of the 16 profiles, as the reference')
FROM (VALUES ('pitman', 12::bigint), ('zayatz', 16), ('snb', 12), ('dankar', 16)) AS v(m, n);
SELECT is((SELECT array_agg(id ORDER BY id) FROM cmp
		   WHERE model = 'dankar' AND split_part(note, ':', 1) <> CASE chosen WHEN 'none' THEN 'no sample unique' ELSE chosen END),
		  NULL, 'dankar names in its note the model the reference''s rule chose');
SELECT is((SELECT array_agg(id ORDER BY id) FROM cmp
		   WHERE available AND abs(population_share * (SELECT sum(s * c) FROM unnest(sizes, counts) u(s, c)) / f
								   - population_uniques) > 1e-12 * population_uniques),
		  NULL, 'population_share is population_uniques / (n / f)');
SELECT ok((SELECT bool_and(note ~ '^theta = -?[0-9.e+-]+, alpha = [0-9.e+-]+$') FROM cmp WHERE model = 'pitman' AND available),
		  'pitman notes theta and alpha');

-- the fitted slide negative binomial, with the parameters its note gives (6
-- digits), has E[m_1] = K' sum_{F>=1} P(F) F f (1-f)^(F-1) and E[m_2] summed
-- term by term within 1e-4 of m_1 and m_2: P(F) = C(F+a-2, F-1) b^a (1-b)^(F-1),
-- each term from the last by their ratio
CREATE TEMP TABLE snb_fit AS
SELECT c.id, c.f, c.counts[array_position(c.sizes, 1::bigint)]::float8 AS m1,
	   c.counts[array_position(c.sizes, 2::bigint)]::float8 AS m2,
	   p[1]::float8 AS a, p[2]::float8 AS b, p[3]::float8 AS k
FROM cmp c, regexp_match(c.note, '^alpha = ([0-9.e+-]+), beta = ([0-9.e+-]+), K'' = ([0-9.e+-]+) population classes$') AS p
WHERE c.model = 'snb' AND c.available AND c.f < 1;
CREATE TEMP TABLE snb_sums AS
WITH RECURSIVE t(id, j, big_f, term) AS (
	SELECT id, 1, 1::float8, b ^ a * f FROM snb_fit
	UNION ALL
	SELECT id, 2, 2::float8, a * b ^ a * (1 - b) * f ^ 2 FROM snb_fit
	UNION ALL
	SELECT t.id, t.j, t.big_f + 1,
		   t.term * (t.big_f + s.a - 1) / t.big_f * (1 - s.b) * (t.big_f + 1) / (t.big_f + 1 - t.j) * (1 - s.f)
	FROM t JOIN snb_fit s USING (id)
	WHERE t.term >= 1e-300 AND (t.term >= 1e-25 OR t.big_f < 10) AND t.big_f < 2000000
)
SELECT t.id, t.j, s.k * sum(t.term) AS expected, CASE t.j WHEN 1 THEN s.m1 ELSE s.m2 END AS observed
FROM t JOIN snb_fit s USING (id) GROUP BY t.id, t.j, s.k, s.m1, s.m2;
SELECT is((SELECT count(*) FROM snb_fit), 11::bigint, 'snb fits 11 profiles below f = 1');
SELECT is((SELECT array_agg(format('profile %s: E[m_%s] = %s, m = %s', id, j, expected, observed) ORDER BY id, j)
		   FROM snb_sums WHERE abs(expected / observed - 1) > 1e-4),
		  NULL, 'the fitted SNB''s expected sample classes of one and two rows, summed term by term, are m_1 and m_2');

-- the table form reads the same profile: one class per id, over two columns
-- with NULLs, in a table of one of the profiles
CREATE TABLE sample_t (a integer, b text, other integer);
INSERT INTO sample_t
SELECT CASE WHEN id % 5 = 0 THEN NULL ELSE id END, CASE WHEN id % 5 = 0 THEN id::text END, g
FROM (SELECT row_number() OVER () AS id, u.s FROM ref r, unnest(r.sizes, r.counts) AS u(s, c), generate_series(1, u.c)
	  WHERE r.id = 3) x, generate_series(1, x.s) g;
SELECT results_eq($$SELECT * FROM population_uniqueness('sample_t', ARRAY['a', 'b'], 0.1)$$,
				  $$SELECT model, population_uniques, population_share, available, note FROM got WHERE id = 3$$,
				  'the table form of a profile''s sample gives the profile form''s rows, to the bit');
SELECT results_eq($$SELECT * FROM population_uniqueness('sample_t', ARRAY['a', 'b'], 0.1, 'snb')$$,
				  $$SELECT model, population_uniques, population_share, available, note FROM got WHERE id = 3 AND model = 'snb'$$,
				  'one model: its row of all');
SELECT results_eq($$SELECT * FROM population_uniqueness((SELECT class_profile(a, b) FROM sample_t), 0.1)$$,
				  $$SELECT * FROM population_uniqueness('sample_t', ARRAY['a', 'b'], 0.1)$$,
				  'the profile of class_profile gives the table form''s rows');
CREATE TABLE one_class AS SELECT 7 AS a FROM generate_series(1, 30);
SELECT results_eq($$SELECT model, available, note FROM population_uniqueness('one_class', ARRAY['a'], 0.5)$$,
				  $$VALUES ('pitman', false, 'the sample has a single class: alpha and theta are not identified'),
						   ('zayatz', true, 'no sample unique'),
						   ('snb', false, 'no sample class of one row: the equations E[m_1] = m_1 and E[m_2] = m_2 have no solution'),
						   ('dankar', true, 'no sample unique: 0, as zayatz gives')$$,
				  'one class, no sample unique: zayatz and dankar estimate 0, pitman and snb say why they cannot');
CREATE TABLE empty_t (a integer);
SELECT results_eq($$SELECT model, population_uniques, available, note FROM population_uniqueness('empty_t', ARRAY['a'], 0.5)$$,
				  $$VALUES ('pitman', NULL::float8, false, 'the sample has no rows'), ('zayatz', NULL, false, 'the sample has no rows'),
						   ('snb', NULL, false, 'the sample has no rows'), ('dankar', NULL, false, 'the sample has no rows')$$,
				  'an empty table: no model has an estimate');
-- a class of 10^18 rows at f = 1e-9 (Zayatz's product summed in runs) answers at once
SET LOCAL statement_timeout = '10s';
SELECT cmp_ok((SELECT abs(population_uniques / 1e9 - 1) FROM population_uniqueness(
				  (SELECT class_size_profile(s) FROM unnest('{1,1,2,1000000000000000000}'::bigint[]) s), 1e-9, 'zayatz')),
			  '<', 1e-8::float8, 'zayatz with a class of 10^18 rows at f = 1e-9: half the 2 sample uniques, / f');
RESET statement_timeout;

-- bad input: the documented SQLSTATE, checked before the table is read
SELECT throws_ok($$SELECT * FROM population_uniqueness('sample_t', ARRAY['a'], NULL)$$, '22004',
				 'population_uniqueness: sampling_fraction must not be NULL', 'NULL sampling_fraction');
SELECT throws_ok($$SELECT * FROM population_uniqueness('sample_t', ARRAY['a'], 0.1, NULL)$$, '22004',
				 'population_uniqueness: model must not be NULL', 'NULL model');
SELECT throws_ok($$SELECT * FROM population_uniqueness(NULL::qid_profile, 0.1)$$, '22004',
				 'population_uniqueness: profile must not be NULL', 'NULL profile');
SELECT throws_ok($$SELECT * FROM population_uniqueness(NULL::regclass, ARRAY['a'], 0.1)$$, '22004',
				 'population_uniqueness: rel must not be NULL', 'NULL table');
SELECT throws_ok(format('SELECT * FROM population_uniqueness(%L, ARRAY[%L], %L::float8)', 'sample_t', 'a', f), '22023',
				 format('sampling_fraction must be in (0, 1], not %s', f), 'sampling_fraction ' || f)
FROM unnest(ARRAY['0', '-0.5', '1.0000001', 'NaN', 'Infinity']) AS f;
SELECT throws_ok($$SELECT * FROM population_uniqueness('sample_t', ARRAY['nope'], 0.1, 'pitmann')$$, '22023',
				 'unknown population uniqueness model "pitmann"', 'an unknown model, reported before the unknown column');
SELECT throws_ok($$SELECT * FROM population_uniqueness((SELECT class_size_profile(s) FROM unnest('{1,2}'::bigint[]) s), 1e-308)$$,
				 '22023', 'population_uniqueness: sampling_fraction 1e-308 makes the population size n / f infinite',
				 'a fraction that makes n / f infinite');
SELECT throws_ok($$SELECT * FROM population_uniqueness(ROW(3, 2, 1, NULL, 1, 2, '{2,1}', '{1,1}')::qid_profile, 0.5)$$,
				 '22023', 'population_uniqueness: class sizes must be strictly ascending', 'sizes not ascending');
SELECT throws_ok($$SELECT * FROM population_uniqueness(ROW(3, 2, 1, NULL, 1, 2, '{1,2}', '{1}')::qid_profile, 0.5)$$,
				 '22023', 'population_uniqueness: profile.class_sizes has 2 elements but profile.class_counts 1',
				 'sizes and counts of different lengths');
SELECT throws_ok($$SELECT * FROM population_uniqueness(ROW(4, 2, 1, NULL, 1, 2, '{1,2}', '{1,1}')::qid_profile, 0.5)$$,
				 '22023', 'population_uniqueness: profile.rows is 4 but its histogram holds 3 rows',
				 'rows that disagree with the histogram');
SELECT throws_ok($$SELECT * FROM population_uniqueness(ROW(1, 1, 1, NULL, 1, 1, '{1,2}', '{1,0}')::qid_profile, 0.5)$$,
				 '22023', 'population_uniqueness: class sizes and class counts must be at least 1', 'a count of 0');
SELECT throws_ok($$SELECT * FROM population_uniqueness(ROW(1, 1, 1, NULL, 1, 1, NULL, '{1}')::qid_profile, 0.5)$$,
				 '22004', 'population_uniqueness: profile.class_sizes must not be NULL', 'no histogram');
SELECT throws_ok($$SELECT * FROM population_uniqueness('sample_t', '{}', 0.5)$$, '22023', NULL, 'no QID column');
SELECT throws_ok($$SELECT * FROM population_uniqueness('sample_t', ARRAY['a', 'a'], 0.5)$$, '42701',
				 'population_uniqueness: column "a" appears twice in qid', 'a column twice');
SELECT throws_ok($$SELECT * FROM population_uniqueness('sample_t', ARRAY['nope'], 0.5)$$, '42703', NULL, 'an unknown column');

SELECT * FROM finish();
ROLLBACK;
