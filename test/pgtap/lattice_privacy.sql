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
-- each at 0 % and 2 % suppression: every node's verdict and suppressed rows
-- equal ARX's, and the best node under metric 'loss' has ARX's optimum's
-- value.  qid_anonymize_into's releases meet the models by plain-SQL checks.
-- Average risk and population uniqueness (every model) on random tables:
-- every node's suppressed rows and verdict by plain-SQL references.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
SET jit = off;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(8 * 2 * 3 + 6 + 2 * 4 * 2 + 2);

-- a schema of its own, so that an adult table elsewhere in the database does not matter
CREATE SCHEMA lattice_privacy;
SET LOCAL search_path = lattice_privacy, public;
\i data/load_adult.sql
\i data/load_adult_hierarchies.sql

CREATE TABLE arx_optima (model text, suppression float8, qid text, levels integer[], loss float8,
						 suppressed bigint, anonymous_nodes bigint, nodes bigint, detail text);
\copy arx_optima FROM PROGRAM 'grep -v "^#" test/reference/arx_adult_privacy_optima.csv' WITH (FORMAT csv, HEADER)

-- each model: its file, its QIDs, its sensitive column and its privacy object
CREATE TABLE models (model text, qid text[], sensitive text, privacy jsonb);
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

CREATE TABLE arx (model text, levels integer[], anonymous_0 boolean, suppressed_0 bigint, loss_0 float8,
				  anonymous_2 boolean, suppressed_2 bigint, loss_2 float8);
-- each model's file, its header and comments dropped, each row led by the model's name
\copy arx FROM PROGRAM 'for m in avgrisk pu_zayatz kmap_poisson kmap_ztpoisson blikeness_basic_income blikeness_enhanced_income blikeness_basic_education blikeness_enhanced_education; do grep -v "^#" test/reference/arx_adult_$m.csv | tail -n +2 | sed "s/^/$m,/"; done' WITH (FORMAT csv)

-- every node of every model at 0 % and 2 %, k = 1 (ARX's runs add no k-anonymity)
CREATE TABLE ours AS
SELECT m.model, s.suppression, q.*
FROM models m CROSS JOIN (VALUES (0.0::float8), (0.02)) s(suppression)
CROSS JOIN LATERAL qid_lattice('adult', m.qid, (SELECT jsonb_object_agg(c, 'adult_hierarchy_' || c) FROM unnest(m.qid) c),
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
	g text := (SELECT string_agg(CASE WHEN lv[i] = 0 THEN format('t.%I::text', c) ELSE format('h%s.l%s', i, lv[i]) END, ', ')
			   FROM unnest(ARRAY['a', 'b', 'c']) WITH ORDINALITY AS x(c, i));
	joins text := (SELECT string_agg(format(' LEFT JOIN %I h%s ON h%s.value IS NOT DISTINCT FROM t.%I::text',
										'h_' || name || '_' || c, i, i, c), '')
			   FROM unnest(ARRAY['a', 'b', 'c']) WITH ORDINALITY AS x(c, i));
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
	g text := (SELECT string_agg(CASE WHEN lv[i] = 0 THEN format('t.%I::text', c) ELSE format('h%s.l%s', i, lv[i]) END, ', ')
			   FROM unnest(ARRAY['a', 'b', 'c']) WITH ORDINALITY AS x(c, i));
	joins text := (SELECT string_agg(format(' LEFT JOIN %I h%s ON h%s.value IS NOT DISTINCT FROM t.%I::text',
										'h_' || name || '_' || c, i, i, c), '')
			   FROM unnest(ARRAY['a', 'b', 'c']) WITH ORDINALITY AS x(c, i));
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

SELECT * FROM finish();
ROLLBACK;
