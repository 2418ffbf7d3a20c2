-- QaR (Béra et al. 2023): dataset risk and per-record contributions
CREATE SCHEMA qar_test;
SET search_path = qar_test, public;
SET extra_float_digits = 0;

-- the slides' toy table (8 rows): the full triple has 4 distinct rows, theta = 4/8
CREATE TABLE toy (id integer, sex text, age_group text, nationality text);
INSERT INTO toy VALUES
	(1, 'Female', '55-64', 'Greek'), (2, 'Male', '25-34', 'Greek'),
	(3, 'Female', '25-34', 'Italian'), (4, 'Male', '25-34', 'Greek'),
	(5, 'Male', '35-44', 'Greek'), (6, 'Female', '55-64', 'Greek'),
	(7, 'Male', '25-34', 'Greek'), (8, 'Male', '25-34', 'Greek');
SELECT * FROM qar_thetas('toy', ARRAY['sex', 'age_group', 'nationality'], 3);
SELECT * FROM qar_thetas('toy', ARRAY['sex', 'age_group', 'nationality'], 2);
SELECT * FROM qar_thetas('toy', ARRAY['sex', 'age_group', 'nationality'], 1);
-- the same distinct counts from plain SQL
SELECT count(*) AS h, count(*) / 8.0 AS theta
FROM (SELECT 1 FROM toy GROUP BY sex, age_group, nationality) s;
-- U+ per row for p = 2: row 3 is unique on all three pairs (0.5 + 0.375 + 0.5)
SELECT * FROM qar_record_scores('toy', ARRAY['sex', 'age_group', 'nationality'], 2, 'id')
ORDER BY row_key::integer;
-- without a key column rows are named by ctid
SELECT row_key, u_plus FROM qar_record_scores('toy', ARRAY['sex', 'age_group', 'nationality'], 1)
WHERE u_plus > 0 ORDER BY row_key;
-- greedy removal with p = 1: row 5 (unique on age_group, theta 3/8) goes first
SELECT step, row_key, round(u_plus::numeric, 6) AS u_plus, risk_after
FROM qar_greedy_removal('toy', ARRAY['sex', 'age_group', 'nationality'], 1, 'id', 3);
-- the table is untouched
SELECT count(*) FROM toy;
-- record entropy: 3 subsets give one bin (floor(sqrt(3)) = 1), so every entropy is 0
SELECT DISTINCT entropy FROM qar_record_entropy('toy', ARRAY['sex', 'age_group', 'nationality'], 2, 'id');
-- the toy has too few subsets for a tail: p = 3 = N gives one theta
SELECT * FROM qar_risk('toy', ARRAY['sex', 'age_group', 'nationality'], 3);

-- GPD fits of small fixed samples
SELECT round(xi::numeric, 6) AS xi, round(beta::numeric, 6) AS beta, fit_method, n
FROM gpd_fit(ARRAY[0.1, 0.2, 0.35, 0.5, 0.8, 1.3, 2.1, 3.4]);
SELECT round(xi::numeric, 6) AS xi, round(beta::numeric, 6) AS beta, fit_method
FROM gpd_fit(ARRAY[0.1, 0.2, 0.35, 0.5, 0.8, 1.3, 2.1, 3.4], 'pwm');
SELECT round(xi::numeric, 6) AS xi, round(beta::numeric, 6) AS beta, fit_method
FROM gpd_fit(ARRAY[0.1, 0.2, 0.35, 0.5, 0.8, 1.3, 2.1, 3.4], 'mom');
-- equal excesses: no likelihood maximum with xi > -1 and pwm says xi = -8: auto takes the boundary fit
SELECT round(xi::numeric, 6) AS xi, round(beta::numeric, 6) AS beta, fit_method
FROM gpd_fit(ARRAY[1, 1, 1]);
SELECT * FROM gpd_fit(ARRAY[1, 1, 1], 'mle');
SELECT * FROM gpd_fit(ARRAY[1, 1, 1], 'mom');
SELECT * FROM gpd_fit(ARRAY[1.5]);
SELECT * FROM gpd_fit(ARRAY[0, 0]);
SELECT * FROM gpd_fit(ARRAY[1, -1]);
SELECT * FROM gpd_fit(ARRAY[1, 'NaN']::float8[]);
SELECT * FROM gpd_fit(ARRAY[1, NULL]);
SELECT * FROM gpd_fit(ARRAY[1, 2], 'lmoments');

-- the formula and its xi -> 0 limit: logit(u) + beta ln(n_u / (n_p alpha))
SELECT qar_tail_risk(0.9, 0, 1, 364, 18) = 1 / (1 + exp(-(ln(9) + ln(18 / 3.64)))) AS limit_ok,
	abs(qar_tail_risk(0.9, 1e-9, 1, 364, 18) - qar_tail_risk(0.9, 0, 1, 364, 18)) < 1e-9 AS continuous;
SELECT round(qar_tail_risk(0.9, 0.5, 1, 364, 18)::numeric, 9) AS risk,
	round((1 / (1 + exp(-(ln(9) + (1 / 0.5) * (power(364 * 0.01 / 18, -0.5) - 1)))))::numeric, 9) AS by_hand;

-- the risk from thetas: u = theta_(ceil(n_p (1 - pi_u))) (percentile_disc), N_u above it
SELECT risk > u AS above_u, u, n_p, n_u, fit_method, rows_used
FROM qar_risk_from_thetas(ARRAY(SELECT i / 400.0 FROM generate_series(1, 399) i));
SELECT percentile_disc(0.95) WITHIN GROUP (ORDER BY i / 400.0) FROM generate_series(1, 399) i;
-- thetas of 0 or 1 need rows, which clamps them to [1/(2 rows), 1 - 1/(2 rows)]
SELECT * FROM qar_risk_from_thetas(ARRAY[0.1, 0.2, 0.3, 0.4, 1, 1]::float8[], 0.01, 0.5);
SELECT u, n_u, rows_used FROM qar_risk_from_thetas(ARRAY[0.1, 0.2, 0.3, 0.4, 1, 1]::float8[], 0.01, 0.5, 10);
-- all thetas equal: none exceeds u
SELECT * FROM qar_risk_from_thetas(ARRAY[0.5, 0.5, 0.5, 0.5]::float8[]);
-- one exceedance only
SELECT * FROM qar_risk_from_thetas(ARRAY(SELECT i / 100.0 FROM generate_series(1, 20) i));
-- alpha not below n_u / n_p
SELECT * FROM qar_risk_from_thetas(ARRAY(SELECT i / 100.0 FROM generate_series(1, 40) i), 0.2, 0.1);
SELECT * FROM qar_risk_from_thetas(ARRAY[0.1, 0.2], 0, 0.05);
SELECT * FROM qar_risk_from_thetas(ARRAY[0.1, 0.2], 0.01, 1);
SELECT * FROM qar_risk_from_thetas(ARRAY[0.1, 1.2]);
SELECT * FROM qar_risk_from_thetas('{}');
SELECT * FROM qar_risk_from_thetas(NULL);

-- bad table arguments
SELECT * FROM qar_thetas('toy', ARRAY['sex', 'age_group'], 0);
SELECT * FROM qar_thetas('toy', ARRAY['sex', 'age_group'], 3);
SELECT * FROM qar_thetas('toy', ARRAY['sex', 'nope'], 1);
SELECT * FROM qar_thetas('toy', ARRAY['sex', 'sex'], 1);
SELECT * FROM qar_thetas('toy', ARRAY['sex', NULL], 1);
SELECT * FROM qar_thetas('toy', '{}', 1);
SELECT * FROM qar_thetas('toy', ARRAY['sex'], NULL);
SELECT * FROM qar_record_scores('toy', ARRAY['sex'], 1, 'nope');
CREATE TABLE empty_t (a integer, b integer);
SELECT * FROM qar_thetas('empty_t', ARRAY['a', 'b'], 1);
SELECT * FROM qar_greedy_removal('toy', ARRAY['sex', 'age_group'], 1, 'id', 8);
SELECT * FROM qar_greedy_removal('toy', ARRAY['sex', 'age_group'], 1, 'id', -1);
SELECT * FROM qar_record_contributions('toy', ARRAY['sex', 'age_group'], 1, 'id', 0.01, 0.05, 5);
SELECT * FROM qar_record_entropy('toy', ARRAY['sex', 'age_group'], 1, 'id', 7);
-- a type without an ordering
CREATE TABLE pts (id integer, p point);
INSERT INTO pts VALUES (1, '(1,1)');
SELECT * FROM qar_thetas('pts', ARRAY['p'], 1);

-- the walk's work (every subset of at most p columns, each over every row) is bounded by
-- qidrisk.qar_max_work before the walk starts: 20,000 rows x 24 columns with p = 12 visit
-- 9,740,685 subsets (an estimated half hour) and are refused while the table is read
CREATE TABLE wide24 AS
SELECT i AS id,
	(i * 3) % 2 AS c01, (i * 5) % 3 AS c02, (i * 7) % 4 AS c03, (i * 9) % 5 AS c04, (i * 11) % 6 AS c05, (i * 13) % 7 AS c06,
	(i * 15) % 8 AS c07, (i * 17) % 9 AS c08, (i * 19) % 10 AS c09, (i * 21) % 11 AS c10, (i * 23) % 12 AS c11, (i * 25) % 13 AS c12,
	(i * 27) % 14 AS c13, (i * 29) % 15 AS c14, (i * 31) % 16 AS c15, (i * 33) % 17 AS c16, (i * 35) % 18 AS c17, (i * 37) % 19 AS c18,
	(i * 39) % 20 AS c19, (i * 41) % 21 AS c20, (i * 43) % 22 AS c21, (i * 45) % 23 AS c22, (i * 47) % 24 AS c23, (i * 49) % 25 AS c24
FROM generate_series(1, 20000) i;
SELECT array_agg(attname::text ORDER BY attnum) AS wide24_cols FROM pg_attribute
WHERE attrelid = 'wide24'::regclass AND attnum > 1 \gset
SET statement_timeout = '5s';
SELECT count(*) FROM qar_thetas('wide24', :'wide24_cols', 12);
SELECT count(*) FROM qar_record_scores('wide24', :'wide24_cols', 12, 'id');
SELECT count(*) FROM qar_greedy_removal('wide24', :'wide24_cols', 11, 'id', 1);
-- the functions' own work counts too, checked once the rows are known, before the walk:
-- entropy with p > 3 compares pairs of rows, contributions sort the thetas once per row,
-- greedy removal walks twice and sorts them once per step
SELECT count(*) FROM qar_record_entropy('wide24', :'wide24_cols', 4, 'id', max_rows => 20000);
SELECT count(*) FROM qar_record_contributions('wide24', :'wide24_cols', 6, 'id', max_rows => 20000);
SELECT count(*) FROM qar_greedy_removal('wide24', :'wide24_cols', 6, 'id', 19999);
-- a small p on the same table is far below the default bound
SELECT count(*) FROM qar_thetas('wide24', :'wide24_cols', 2);
-- at the bound a call runs; one below, it is refused (toy, p = 2: 6 subsets x 8 rows = 48)
SET qidrisk.qar_max_work = 48;
SELECT count(*) FROM qar_thetas('toy', ARRAY['sex', 'age_group', 'nationality'], 2);
SET qidrisk.qar_max_work = 47;
SELECT count(*) FROM qar_thetas('toy', ARRAY['sex', 'age_group', 'nationality'], 2);
-- a bound below the subsets refuses before any row is read
SET qidrisk.qar_max_work = 5;
SELECT count(*) FROM qar_thetas('toy', ARRAY['sex', 'age_group', 'nationality'], 2);
SET qidrisk.qar_max_work = 0;
-- raised past a long walk, the walk stays cancellable
SET qidrisk.qar_max_work = 1e12;
SET statement_timeout = '1s';
SELECT count(*) FROM qar_thetas('wide24', :'wide24_cols', 12);
RESET statement_timeout;
RESET qidrisk.qar_max_work;
DROP TABLE wide24;

-- UCI Adult (data/adult, CC BY 4.0): 32,561 rows, 14 columns, p = 3, 364 subsets
\i data/load_adult.sql
-- the key is the row's line in the file: COPY numbers rows in input order, while
-- an identity column added afterwards numbers them in an order not promised
TRUNCATE adult;
ALTER TABLE adult ADD COLUMN id integer GENERATED ALWAYS AS IDENTITY;
\copy adult (age, workclass, fnlwgt, education, education_num, marital_status, occupation, relationship, race, sex, capital_gain, capital_loss, hours_per_week, native_country, income) FROM PROGRAM 'gzip -dc data/adult/adult.data.gz | sed -e "s/, /,/g" -e "/^$/d"' WITH (FORMAT csv)
SELECT count(*), count(*) FILTER (WHERE theta = 1) AS identifiers, round(min(theta)::numeric, 6),
	round(max(theta)::numeric, 6)
FROM qar_thetas('adult', ARRAY['age', 'workclass', 'fnlwgt', 'education', 'education_num',
	'marital_status', 'occupation', 'relationship', 'race', 'sex', 'capital_gain',
	'capital_loss', 'hours_per_week', 'native_country']);
SELECT round(risk::numeric, 6) AS risk, round(u::numeric, 6) AS u, n_p, n_u,
	round(xi::numeric, 4) AS xi, round(beta::numeric, 4) AS beta, fit_method, rows
FROM qar_risk('adult', ARRAY['age', 'workclass', 'fnlwgt', 'education', 'education_num',
	'marital_status', 'occupation', 'relationship', 'race', 'sex', 'capital_gain',
	'capital_loss', 'hours_per_week', 'native_country'], 3, 0.01, 0.05);
SELECT row_key, round(u_plus::numeric, 4) AS u_plus, unique_subsets
FROM qar_record_scores('adult', ARRAY['age', 'workclass', 'fnlwgt', 'education', 'education_num',
	'marital_status', 'occupation', 'relationship', 'race', 'sex', 'capital_gain',
	'capital_loss', 'hours_per_week', 'native_country'], 3, 'id')
ORDER BY u_plus DESC, row_key::integer LIMIT 5;
SELECT step, row_key, round(u_plus::numeric, 4) AS u_plus, round(risk_after::numeric, 6) AS risk_after
FROM qar_greedy_removal('adult', ARRAY['age', 'workclass', 'fnlwgt', 'education', 'education_num',
	'marital_status', 'occupation', 'relationship', 'race', 'sex', 'capital_gain',
	'capital_loss', 'hours_per_week', 'native_country'], 3, 'id', 5);
-- a view reads like its table; without a key column it has no ctid to name rows by
CREATE VIEW adult_v AS SELECT * FROM adult WHERE sex = 'Female';
CREATE TABLE adult_f AS SELECT * FROM adult WHERE sex = 'Female';
SELECT (SELECT array_agg(q ORDER BY columns) FROM qar_thetas('adult_v', ARRAY['age', 'race', 'education', 'occupation'], 2) q)
	= (SELECT array_agg(q ORDER BY columns) FROM qar_thetas('adult_f', ARRAY['age', 'race', 'education', 'occupation'], 2) q)
	AS same_thetas;
SELECT row_key, round(u_plus::numeric, 6) FROM qar_record_scores('adult_v', ARRAY['age', 'race', 'education', 'occupation'], 2, 'id')
ORDER BY u_plus DESC, row_key::integer LIMIT 3;
SELECT * FROM qar_record_scores('adult_v', ARRAY['age', 'race'], 1);
-- greedy removal keeps every subset's partition: 364 x 32,561 class ids
SET qidrisk.max_state_memory = '8MB';
SELECT * FROM qar_greedy_removal('adult', ARRAY['age', 'workclass', 'fnlwgt', 'education', 'education_num',
	'marital_status', 'occupation', 'relationship', 'race', 'sex', 'capital_gain',
	'capital_loss', 'hours_per_week', 'native_country'], 3, 'id', 5);
RESET qidrisk.max_state_memory;

DROP SCHEMA qar_test CASCADE;
