-- qid_lattice's privacy models (argument privacy) against ARX 3.9.2 on UCI
-- Adult, node by node (test/reference/arx_adult_<model>.csv, made by
-- bench/arx.sh, settings in arx_adult_privacy_optima.csv):
--   * k_map estimated from a sampling fraction of 0.1 (Poisson and
--     zero-truncated Poisson, significance 0.01), no k-anonymity beyond it;
--   * average_risk, a ceiling of 0.05 on the prosecutor's average risk;
--   * population_uniqueness with Zayatz's model, a ceiling of 0.01 on the
--     population uniques' share, the population 32,561 / 0.1 rows (ARX's
--     Pitman and SNB solvers differ from popunique.c's, docs/anonymize.md);
--   * beta_likeness, basic and enhanced, beta = 1, on income (8 QIDs) and on
--     education (the other 7 QIDs);
--   * against a population table, Adult, of its research subset, every 2nd
--     row (the table given to qid_lattice): delta_presence in [0, 0.7] and
--     in [0.4, 0.7], and k_map with k = 3;
-- each at 0 % and 2 % suppression: every node's verdict and suppressed rows
-- equal ARX's, and the best node under metric 'loss' has ARX's optimum's
-- value.  qid_anonymize_into's releases meet the models by plain-SQL checks.
-- Average risk, population uniqueness (every model), k_map against a
-- population and delta_presence on random tables: every node's suppressed
-- rows and verdict by plain-SQL references.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
SET jit = off;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(11 * 2 * 4 + 6 + 2 * 4 * 2 + 2 + 3 + 4);

-- a schema of its own, so that an adult table elsewhere in the database does not matter
CREATE SCHEMA lattice_privacy;
SET LOCAL search_path = lattice_privacy, public;
\i data/load_adult.sql
\i data/load_adult_hierarchies.sql
-- ARX's research subset: every 2nd row of the file (its 0-based rows 1, 3, 5, ...)
CREATE TABLE adult_numbered (id bigserial, LIKE adult);
\copy adult_numbered (age, workclass, fnlwgt, education, education_num, marital_status, occupation, relationship, race, sex, capital_gain, capital_loss, hours_per_week, native_country, income) FROM PROGRAM 'gzip -dc data/adult/adult.data.gz | sed -e "s/, /,/g" -e "/^$/d"' WITH (FORMAT csv)
CREATE TABLE adult_odd AS SELECT * FROM adult_numbered WHERE id % 2 = 0;

CREATE TABLE arx_optima (model text, suppression float8, qid text, levels integer[], loss float8,
						 suppressed bigint, anonymous_nodes bigint, nodes bigint, detail text);
\copy arx_optima FROM PROGRAM 'grep -v "^#" test/reference/arx_adult_privacy_optima.csv' WITH (FORMAT csv, HEADER)

-- each model: its file, its QIDs, its sensitive column and its privacy object
CREATE TABLE models (model text, qid text[], sensitive text, privacy jsonb, rel text DEFAULT 'adult');
INSERT INTO models VALUES
	('avgrisk', '{age,workclass,education,marital_status,occupation,race,sex,native_country}', NULL,
	 '{"average_risk": {"max": 0.05}}'),
	('pu_zayatz', '{age,workclass,education,marital_status,occupation,race,sex,native_country}', NULL,
	 '{"population_uniqueness": {"max": 0.01, "sampling_fraction": 0.1, "model": "zayatz"}}'),
	('kmap_poisson', '{age,workclass,education,marital_status,occupation,race,sex,native_country}', NULL,
	 '{"k_map": {"k": 5, "sampling_fraction": 0.1, "estimator": "poisson", "significance": 0.01}}'),
	('kmap_ztpoisson', '{age,workclass,education,marital_status,occupation,race,sex,native_country}', NULL,
	 '{"k_map": {"k": 5, "sampling_fraction": 0.1, "estimator": "zero_truncated_poisson", "significance": 0.01}}'),
	('blikeness_basic_income', '{age,workclass,education,marital_status,occupation,race,sex,native_country}', 'income',
	 '{"beta_likeness": {"beta": 1}}'),
	('blikeness_enhanced_income', '{age,workclass,education,marital_status,occupation,race,sex,native_country}', 'income',
	 '{"beta_likeness": {"beta": 1, "variant": "enhanced"}}'),
	('blikeness_basic_education', '{age,workclass,marital_status,occupation,race,sex,native_country}', 'education',
	 '{"beta_likeness": {"beta": 1, "variant": "basic"}}'),
	('blikeness_enhanced_education', '{age,workclass,marital_status,occupation,race,sex,native_country}', 'education',
	 '{"beta_likeness": {"beta": 1, "variant": "enhanced"}}');
INSERT INTO models VALUES
	('dpresence', '{age,workclass,education,marital_status,occupation,race,sex,native_country}', NULL,
	 '{"delta_presence": {"min": 0, "max": 0.7, "population": "adult"}}', 'adult_odd'),
	('dpresence_min', '{age,workclass,education,marital_status,occupation,race,sex,native_country}', NULL,
	 '{"delta_presence": {"min": 0.4, "max": 0.7, "population": "adult"}}', 'adult_odd'),
	('kmap_population', '{age,workclass,education,marital_status,occupation,race,sex,native_country}', NULL,
	 '{"k_map": {"k": 3, "population": "adult"}}', 'adult_odd');

CREATE TABLE arx (model text, levels integer[], anonymous_0 boolean, suppressed_0 bigint, loss_0 float8,
				  anonymous_2 boolean, suppressed_2 bigint, loss_2 float8);
-- each model's file, its header and comments dropped, each row led by the model's name
\copy arx FROM PROGRAM 'for m in avgrisk pu_zayatz kmap_poisson kmap_ztpoisson blikeness_basic_income blikeness_enhanced_income blikeness_basic_education blikeness_enhanced_education dpresence dpresence_min kmap_population; do grep -v "^#" test/reference/arx_adult_$m.csv | tail -n +2 | sed "s/^/$m,/"; done' WITH (FORMAT csv)

-- every node of every model at 0 % and 2 %, k = 1 (ARX's runs add no k-anonymity)
CREATE TABLE ours AS
SELECT m.model, s.suppression, q.*
FROM models m CROSS JOIN (VALUES (0.0::float8), (0.02)) s(suppression)
CROSS JOIN LATERAL qid_lattice(m.rel::regclass, m.qid, (SELECT jsonb_object_agg(c, 'adult_hierarchy_' || c) FROM unnest(m.qid) c),
							   1, s.suppression, m.sensitive, evaluate => 'all', metric => 'loss',
							   privacy => m.privacy) q;
ANALYZE ours;

SELECT is((SELECT count(*) FROM ours o JOIN arx a USING (model, levels)
		   WHERE o.model = m.model AND o.suppression = s.suppression
			 AND o.anonymous IS DISTINCT FROM CASE WHEN s.suppression = 0 THEN a.anonymous_0 ELSE a.anonymous_2 END),
		  0::bigint, format('%s, %s suppression: every node''s verdict is ARX''s (%s nodes)', m.model, s.suppression,
							(SELECT count(*) FROM arx a WHERE a.model = m.model)))
FROM models m CROSS JOIN (VALUES (0.0::float8), (0.02)) s(suppression) ORDER BY m.model, s.suppression;

-- ARX leaves the count empty where a node is not anonymous, and marks every row of the top node
SELECT is((SELECT count(*) FROM ours o JOIN arx a USING (model, levels)
		   WHERE o.model = m.model AND o.suppression = s.suppression
			 AND o.rows_suppressed <> CASE WHEN s.suppression = 0 THEN a.suppressed_0 ELSE a.suppressed_2 END
			 AND o.anonymous AND o.height < (SELECT max(height) FROM ours t WHERE t.model = m.model)),
		  0::bigint, format('%s, %s suppression: suppressed rows equal ARX''s at every anonymous node', m.model, s.suppression))
FROM models m CROSS JOIN (VALUES (0.0::float8), (0.02)) s(suppression) ORDER BY m.model, s.suppression;

-- (where the average risk or population uniqueness suppresses classes, ARX picks among classes
-- of one size by their loss, qidrisk by their order, so the loss of such nodes differs: there
-- the best node found is at least as good as ARX's optimum)
SELECT ok(CASE WHEN m.model IN ('avgrisk', 'pu_zayatz') AND s.suppression > 0 THEN o.loss <= x.loss
			   ELSE abs(o.loss - x.loss) <= 1e-12 * x.loss END,
		  format('%s, %s suppression: the best node''s loss is ARX''s optimum''s (%s)%s', m.model, s.suppression, x.loss,
				 CASE WHEN m.model IN ('avgrisk', 'pu_zayatz') AND s.suppression > 0 THEN ' or less' ELSE '' END))
FROM models m CROSS JOIN (VALUES (0.0::float8), (0.02)) s(suppression)
JOIN arx_optima x ON x.model = m.model AND x.suppression = s.suppression
JOIN ours o ON o.model = m.model AND o.suppression = s.suppression AND o.best
ORDER BY m.model, s.suppression;

-- evaluate => 'best' (which qid_anonymize_into searches with) finds the best node of
-- evaluate => 'all' under every model, with its loss and suppressed rows
SELECT is((SELECT (b.levels, b.loss, b.rows_suppressed)::text
		   FROM qid_lattice(m.rel::regclass, m.qid, (SELECT jsonb_object_agg(c, 'adult_hierarchy_' || c) FROM unnest(m.qid) c),
							1, s.suppression, m.sensitive, evaluate => 'best', metric => 'loss', privacy => m.privacy) b
		   WHERE b.best),
		  (SELECT (o.levels, o.loss, o.rows_suppressed)::text FROM ours o
		   WHERE o.model = m.model AND o.suppression = s.suppression AND o.best),
		  format('%s, %s suppression: evaluate best finds the best node', m.model, s.suppression))
FROM models m CROSS JOIN (VALUES (0.0::float8), (0.02)) s(suppression) ORDER BY m.model, s.suppression;

-- qid_anonymize_into: its releases meet the models, checked on the written rows
SELECT is((SELECT rows_suppressed FROM qid_anonymize_into('adult', m.qid,
			(SELECT jsonb_object_agg(c, 'adult_hierarchy_' || c) FROM unnest(m.qid) c), 'release_kmap', 1, 0.02,
			metric => 'loss', privacy => m.privacy)),
		  (SELECT suppressed FROM arx_optima WHERE model = 'kmap_ztpoisson' AND suppression = 0.02),
		  'qid_anonymize_into with k-map (zero-truncated Poisson, 2 %) suppresses the rows ARX does')
FROM models m WHERE m.model = 'kmap_ztpoisson';
SELECT is((SELECT min(n) FROM (SELECT count(*) AS n FROM release_kmap
								GROUP BY age, workclass, education, marital_status, occupation, race, sex, native_country) c),
		  4::bigint, 'its smallest class holds the 4 rows k-map derives for k = 5 at a sampling fraction of 0.1');
CREATE TABLE anonymized AS
SELECT * FROM qid_anonymize_into('adult', '{age,workclass,education,marital_status,occupation,race,sex,native_country}',
						  (SELECT jsonb_object_agg(c, 'adult_hierarchy_' || c)
						   FROM unnest('{age,workclass,education,marital_status,occupation,race,sex,native_country}'::text[]) c),
						  'release_beta', 1, 0.02, 'income', metric => 'loss',
						  privacy => '{"beta_likeness": {"beta": 1, "variant": "enhanced"}}');
-- every class's share of each income value exceeds its share in all of Adult by at most min(1, -ln share) times it
SELECT is((SELECT count(*) FROM (
			SELECT r.income, count(*)::float8 / sum(count(*)) OVER (PARTITION BY age, workclass, education, marital_status,
																	  occupation, race, sex, native_country) AS p,
				   t.q
			FROM release_beta r JOIN (SELECT income, count(*)::float8 / sum(count(*)) OVER () AS q FROM adult GROUP BY 1) t
			USING (income)
			GROUP BY age, workclass, education, marital_status, occupation, race, sex, native_country, r.income, t.q) c
		   WHERE p > q AND (p - q) / q > least(1, -ln(q))),
		  0::bigint, 'qid_anonymize_into with enhanced beta-likeness: every class of the release meets it');

-- average risk on random tables: every node's suppressed rows and verdict by a plain-SQL
-- reference (kept classes smallest first suppressed while classes / rows exceeds the ceiling)
\ir lattice_cases.psql
SELECT pg_temp.make_case('r' || i, 0.2 * i, 300, ARRAY[2, 1, 2]) FROM generate_series(1, 2) i;
CREATE FUNCTION pg_temp.ref_risk_suppressed(name text, lv integer[], k integer, ceiling float8)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	g text := (pg_temp.node_sql(name, lv)).g;
	joins text := (pg_temp.node_sql(name, lv)).joins;
	r bigint;
BEGIN
	EXECUTE format($q$
		WITH cls AS (SELECT count(*) AS size FROM %I t %s GROUP BY %s),
		kept AS (SELECT size, row_number() OVER o AS j, count(*) OVER () AS nc, sum(size) OVER () AS nr,
						coalesce(sum(size) OVER (o ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
				 FROM cls WHERE size >= %s WINDOW o AS (ORDER BY size))
		SELECT (SELECT coalesce(sum(size), 0) FROM cls WHERE size < %4$s)
			 + (SELECT coalesce(sum(size), 0) FROM kept WHERE (nc - j + 1)::float8 > %5$s * (nr - before)::float8)$q$,
		't_' || name, joins, g, k, ceiling) INTO r;
	RETURN r;
END
$$;
SELECT is((SELECT count(*) FROM qid_lattice('t_r' || i, '{a,b,c}', pg_temp.hierarchies('r' || i, ARRAY[2, 1, 2]), 2, 0.1,
											evaluate => 'all', privacy => '{"average_risk": {"max": 0.2}}') q
		   WHERE q.rows_suppressed <> pg_temp.ref_risk_suppressed('r' || i, q.levels, 2, 0.2)
			  OR q.anonymous <> (q.rows_suppressed <= floor(0.1 * q.rows))),
		  0::bigint, format('average risk 0.2 on random table %s: every node''s suppressed rows and verdict by SQL', i))
FROM generate_series(1, 2) i;

-- qid_anonymize_into with an average risk ceiling: the release's classes per row within it
CREATE TABLE anonymized_risk AS
SELECT * FROM qid_anonymize_into('adult', '{age,workclass,education,marital_status,occupation,race,sex,native_country}',
						  (SELECT jsonb_object_agg(c, 'adult_hierarchy_' || c)
						   FROM unnest('{age,workclass,education,marital_status,occupation,race,sex,native_country}'::text[]) c),
						  'release_risk', 1, 0.02, metric => 'discernibility', privacy => '{"average_risk": {"max": 0.05}}');
SELECT cmp_ok((SELECT count(DISTINCT (age, workclass, education, marital_status, occupation, race, sex, native_country))::float8
				/ count(*) FROM release_risk), '<=', 0.05::float8,
			  'qid_anonymize_into with average_risk 0.05: the release''s classes per row are at most 0.05');

-- population uniqueness on random tables: every node's suppressed rows and verdict by a
-- plain-SQL reference (class sizes by GROUP BY, popunique's profile form, ARX's search)
CREATE FUNCTION pg_temp.pu_met(sizes bigint[], p integer, big_n float8, ceiling float8, model text)
RETURNS boolean
LANGUAGE sql AS $$
	WITH s AS (SELECT size, count(*) AS c FROM unnest(sizes[p + 1:]) size GROUP BY 1),
	u AS (SELECT u.* FROM (SELECT sum(size * c) AS r FROM s) t,
		  population_uniqueness(ROW(NULL, NULL, NULL, NULL, NULL, NULL,
									(SELECT array_agg(size ORDER BY size) FROM s),
									(SELECT array_agg(c ORDER BY size) FROM s))::qid_profile,
								t.r / big_n, model) u)
	SELECT CASE WHEN coalesce(cardinality(sizes), 0) <= p OR sizes[p + 1] > 1 THEN true
				ELSE coalesce((SELECT available AND population_uniques > 0 AND population_uniques / big_n <= ceiling FROM u), false) END
$$;
CREATE FUNCTION pg_temp.ref_pu(name text, lv integer[], k integer, max_suppressed float8, ceiling float8,
							   fraction float8, model text, OUT suppressed bigint, OUT anonymous boolean)
LANGUAGE plpgsql AS $$
DECLARE
	g text := (pg_temp.node_sql(name, lv)).g;
	joins text := (pg_temp.node_sql(name, lv)).joins;
	sizes bigint[];
	n_rows bigint;
	big_n float8;
	low integer := 0;
	high integer;
	mid integer;
	p integer := 0;
BEGIN
	EXECUTE format('SELECT array_agg(size ORDER BY size) FILTER (WHERE size >= %s), coalesce(sum(size) FILTER (WHERE size < %s), 0), sum(size)
					FROM (SELECT count(*) AS size FROM %I t %s GROUP BY %s) c', k, k, 't_' || name, joins, g)
	INTO sizes, suppressed, n_rows;
	big_n := greatest(round(n_rows / fraction), 1);
	high := coalesce(cardinality(sizes), 0) - 1;
	IF NOT pg_temp.pu_met(sizes, 0, big_n, ceiling, model) THEN
		mid := (low + high) / 2;
		WHILE low <= high LOOP
			IF pg_temp.pu_met(sizes, mid + 1, big_n, ceiling, model) THEN
				high := mid - 1;
			ELSE
				low := mid + 1;
			END IF;
			mid := trunc((low + high) / 2.0);
		END LOOP;
		p := mid + 1;
		IF mid + 1 < cardinality(sizes) AND NOT pg_temp.pu_met(sizes, mid + 1, big_n, ceiling, model) THEN
			p := mid + 2;
		END IF;
	END IF;
	suppressed := suppressed + coalesce((SELECT sum(x) FROM unnest(sizes[1:p]) x), 0);
	anonymous := suppressed <= floor(max_suppressed * n_rows);
END
$$;
SELECT pg_temp.make_case('p' || i, 0.3 * i, 300, ARRAY[2, 1, 2]) FROM generate_series(1, 2) i;
SELECT is((SELECT count(*) FROM qid_lattice('t_p' || i, '{a,b,c}', pg_temp.hierarchies('p' || i, ARRAY[2, 1, 2]), 1, s,
											evaluate => 'all', privacy => jsonb_build_object('population_uniqueness',
												jsonb_build_object('max', 0.01, 'sampling_fraction', 0.3, 'model', m))) q,
				pg_temp.ref_pu('p' || i, q.levels, 1, s, 0.01, 0.3, m) r
		   WHERE q.rows_suppressed <> r.suppressed OR q.anonymous <> r.anonymous),
		  0::bigint, format('population uniqueness (%s, 0.01, f = 0.3), %s suppression, random table %s: every node''s suppressed rows and verdict by SQL',
							m, s, i))
FROM generate_series(1, 2) i, unnest('{pitman,zayatz,snb,dankar}'::text[]) m, (VALUES (0.0::float8), (0.1)) v(s)
ORDER BY i, m, s;

-- qid_anonymize_into with population uniqueness: ARX's suppressed rows, and the release's own
-- class sizes meet the ceiling by the profile form of population_uniqueness
SELECT is((SELECT rows_suppressed FROM qid_anonymize_into('adult', m.qid,
			(SELECT jsonb_object_agg(c, 'adult_hierarchy_' || c) FROM unnest(m.qid) c), 'release_pu', 1, 0.02,
			metric => 'loss', privacy => m.privacy)),
		  (SELECT suppressed FROM arx_optima WHERE model = 'pu_zayatz' AND suppression = 0.02),
		  'qid_anonymize_into with population uniqueness (Zayatz, 2 %) suppresses the rows ARX does')
FROM models m WHERE m.model = 'pu_zayatz';
SELECT ok((SELECT u.population_uniques / round(32561 / 0.1) <= 0.01
		   FROM (SELECT sum(size * c) AS r, array_agg(size ORDER BY size) AS sizes, array_agg(c ORDER BY size) AS counts
				 FROM (SELECT size, count(*) AS c FROM (SELECT count(*) AS size FROM release_pu
						GROUP BY age, workclass, education, marital_status, occupation, race, sex, native_country) x
					   GROUP BY 1) y) p,
				population_uniqueness(ROW(NULL, NULL, NULL, NULL, NULL, NULL, p.sizes, p.counts)::qid_profile,
									  p.r / round(32561 / 0.1), 'zayatz') u),
		  'its release''s estimated population uniques are at most 1 % of the population');

-- qid_anonymize_into against a population table: ARX's suppressed rows, and the release's
-- classes checked against Adult generalized to the release's node in plain SQL
CREATE TABLE hier AS
SELECT x.col, x.value, x.j FROM (
	SELECT 'age' AS col, value, to_jsonb(h) AS j FROM adult_hierarchy_age h UNION ALL
	SELECT 'workclass', value, to_jsonb(h) FROM adult_hierarchy_workclass h UNION ALL
	SELECT 'education', value, to_jsonb(h) FROM adult_hierarchy_education h UNION ALL
	SELECT 'marital_status', value, to_jsonb(h) FROM adult_hierarchy_marital_status h UNION ALL
	SELECT 'occupation', value, to_jsonb(h) FROM adult_hierarchy_occupation h UNION ALL
	SELECT 'race', value, to_jsonb(h) FROM adult_hierarchy_race h UNION ALL
	SELECT 'sex', value, to_jsonb(h) FROM adult_hierarchy_sex h UNION ALL
	SELECT 'native_country', value, to_jsonb(h) FROM adult_hierarchy_native_country h) x;
-- Adult's rows per class at a node (levels in the order of the 8 QIDs)
CREATE FUNCTION pg_temp.adult_classes(lv integer[]) RETURNS TABLE (key text, prows bigint)
LANGUAGE sql AS $$
	SELECT ROW(CASE WHEN lv[1] = 0 THEN a.age::text ELSE h1.j ->> ('level' || lv[1]) END,
			   CASE WHEN lv[2] = 0 THEN a.workclass::text ELSE h2.j ->> ('level' || lv[2]) END,
			   CASE WHEN lv[3] = 0 THEN a.education::text ELSE h3.j ->> ('level' || lv[3]) END,
			   CASE WHEN lv[4] = 0 THEN a.marital_status::text ELSE h4.j ->> ('level' || lv[4]) END,
			   CASE WHEN lv[5] = 0 THEN a.occupation::text ELSE h5.j ->> ('level' || lv[5]) END,
			   CASE WHEN lv[6] = 0 THEN a.race::text ELSE h6.j ->> ('level' || lv[6]) END,
			   CASE WHEN lv[7] = 0 THEN a.sex::text ELSE h7.j ->> ('level' || lv[7]) END,
			   CASE WHEN lv[8] = 0 THEN a.native_country::text ELSE h8.j ->> ('level' || lv[8]) END)::text, count(*)
	FROM adult a
	LEFT JOIN hier h1 ON h1.col = 'age' AND h1.value = a.age::text
	LEFT JOIN hier h2 ON h2.col = 'workclass' AND h2.value = a.workclass::text
	LEFT JOIN hier h3 ON h3.col = 'education' AND h3.value = a.education::text
	LEFT JOIN hier h4 ON h4.col = 'marital_status' AND h4.value = a.marital_status::text
	LEFT JOIN hier h5 ON h5.col = 'occupation' AND h5.value = a.occupation::text
	LEFT JOIN hier h6 ON h6.col = 'race' AND h6.value = a.race::text
	LEFT JOIN hier h7 ON h7.col = 'sex' AND h7.value = a.sex::text
	LEFT JOIN hier h8 ON h8.col = 'native_country' AND h8.value = a.native_country::text
	GROUP BY 1
$$;
CREATE TABLE anonymized_population AS
SELECT m.model, r.* FROM models m, qid_anonymize_into('adult_odd', m.qid,
		(SELECT jsonb_object_agg(c, 'adult_hierarchy_' || c) FROM unnest(m.qid) c), 'release_' || m.model, 1, 0.02,
		metric => 'loss', privacy => m.privacy) r
WHERE m.model IN ('kmap_population', 'dpresence_min');
SELECT is((SELECT rows_suppressed FROM anonymized_population WHERE model = 'kmap_population'),
		  (SELECT suppressed FROM arx_optima WHERE model = 'kmap_population' AND suppression = 0.02),
		  'qid_anonymize_into with k_map against Adult (k = 3, 2 %) suppresses the rows ARX does');
SELECT is((SELECT count(*) FROM (SELECT ROW(age, workclass, education, marital_status, occupation, race, sex,
											native_country)::text AS key, count(*) AS size
								 FROM release_kmap_population GROUP BY 1) r
		   LEFT JOIN pg_temp.adult_classes((SELECT node FROM anonymized_population WHERE model = 'kmap_population')) p
		   USING (key) WHERE coalesce(p.prows, 0) < 3),
		  0::bigint, 'its release: every class matches at least 3 rows of Adult');
SELECT is((SELECT count(*) FROM (SELECT ROW(age, workclass, education, marital_status, occupation, race, sex,
											native_country)::text AS key, count(*) AS size
								 FROM release_dpresence_min GROUP BY 1) r
		   LEFT JOIN pg_temp.adult_classes((SELECT node FROM anonymized_population WHERE model = 'dpresence_min')) p
		   USING (key) WHERE NOT (r.size::float8 / p.prows BETWEEN 0.4 AND 0.7)),
		  0::bigint, 'qid_anonymize_into with delta_presence in [0.4, 0.7]: every class of its release holds that share of its Adult rows');

-- k_map against a population and delta_presence on a random table (NULLs, ties) and a random
-- subset of it, the population read through a view with other column names: every node's
-- suppressed rows and verdict by a plain-SQL reference
SELECT pg_temp.make_case('q1', 0.7, 400, ARRAY[2, 1, 2]);
SELECT setseed(0.25);
CREATE TABLE t_q1_sample AS SELECT * FROM t_q1 WHERE random() < 0.45;
CREATE VIEW q1_population AS SELECT s AS ps, c AS pc, b AS pb, a AS pa FROM t_q1;
CREATE FUNCTION pg_temp.ref_population(lv integer[], k integer, dmin float8, dmax float8, max_suppressed float8,
									   OUT suppressed bigint, OUT anonymous boolean)
LANGUAGE plpgsql AS $$
DECLARE
	g text := (pg_temp.node_sql('q1', lv)).g;
	joins text := (pg_temp.node_sql('q1', lv)).joins;
	blocked boolean;
BEGIN
	EXECUTE format($q$
		WITH s AS (SELECT ROW(%1$s)::text AS key, count(*) AS size FROM t_q1_sample t %2$s GROUP BY 1),
		p AS (SELECT ROW(%1$s)::text AS key, count(*) AS prows FROM t_q1 t %2$s GROUP BY 1)
		SELECT coalesce(sum(s.size) FILTER (WHERE coalesce(p.prows, 0) < %3$s
											OR NOT (s.size::float8 / p.prows BETWEEN %4$s AND %5$s)), 0),
			   %4$s > 0 AND (SELECT count(*) FROM p) > (SELECT count(*) FROM s)
		FROM s LEFT JOIN p USING (key)$q$, g, joins, k, dmin, dmax) INTO suppressed, blocked;
	anonymous := suppressed <= floor(max_suppressed * (SELECT count(*) FROM t_q1_sample)) AND NOT blocked;
END
$$;
SELECT is((SELECT count(*) FROM qid_lattice('t_q1_sample', '{a,b,c}', pg_temp.hierarchies('q1', ARRAY[2, 1, 2]), 1, v.s,
											evaluate => 'all', privacy => v.privacy) q,
				pg_temp.ref_population(q.levels, v.k, v.dmin, v.dmax, v.s) r
		   WHERE q.rows_suppressed <> r.suppressed OR q.anonymous <> r.anonymous),
		  0::bigint, format('%s, %s suppression, random table: every node''s suppressed rows and verdict by SQL', v.privacy, v.s))
FROM (VALUES ('{"k_map": {"k": 3, "population": "q1_population", "population_qid": ["pa", "pb", "pc"]}}'::jsonb, 3, 0.0::float8, 1.0::float8),
			 ('{"delta_presence": {"min": 0.3, "max": 0.6, "population": "q1_population", "population_qid": ["pa", "pb", "pc"]}}', 0, 0.3, 0.6)) v0(privacy, k, dmin, dmax),
	 LATERAL (SELECT v0.*, x.s FROM (VALUES (0.0::float8), (0.1)) x(s)) v
ORDER BY v.privacy::text, v.s;

SELECT * FROM finish();
ROLLBACK;
