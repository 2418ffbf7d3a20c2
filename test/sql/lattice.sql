-- docs/anonymize.md's worked example on UCI Adult (data/adult, CC BY 4.0)
-- with the hierarchies in data/adult/hierarchies: k = 5, 2% suppression,
-- distinct 2-diversity of income
\set QUIET 1
SET client_min_messages = warning;
CREATE SCHEMA lattice_test;
SET search_path = lattice_test, public;
\i data/load_adult.sql
\i data/load_adult_hierarchies.sql
\unset QUIET
CREATE TEMP TABLE h AS SELECT '{"age": "adult_hierarchy_age", "workclass": "adult_hierarchy_workclass",
  "education": "adult_hierarchy_education", "marital_status": "adult_hierarchy_marital_status",
  "occupation": "adult_hierarchy_occupation", "race": "adult_hierarchy_race",
  "sex": "adult_hierarchy_sex", "native_country": "adult_hierarchy_native_country"}'::jsonb AS h;
SELECT count(*) AS nodes, count(*) FILTER (WHERE anonymous) AS anonymous,
       count(*) FILTER (WHERE minimal) AS minimal, count(*) FILTER (WHERE evaluated) AS evaluated
FROM h, qid_lattice('adult', '{age,workclass,education,marital_status,occupation,race,sex,native_country}',
                    h.h, 5, 0.02, 'income', 2);
-- predictive tagging alone
SELECT count(*) FILTER (WHERE evaluated) AS evaluated, count(*) FILTER (WHERE best IS NULL) AS no_best
FROM h, qid_lattice('adult', '{age,workclass,education,marital_status,occupation,race,sex,native_country}',
                    h.h, 5, 0.02, 'income', 2, evaluate => 'tagged');
SELECT height, count(*) AS nodes, count(*) FILTER (WHERE anonymous) AS anonymous,
       count(*) FILTER (WHERE minimal) AS minimal
FROM h, qid_lattice('adult', '{age,workclass,education,marital_status,occupation,race,sex,native_country}',
                    h.h, 5, 0.02, 'income', 2, evaluate => 'tagged')
GROUP BY height ORDER BY height;
SELECT levels, rows_suppressed, classes, round(precision_loss::numeric, 3) AS precision_loss,
       discernibility, round(entropy_loss::numeric) AS entropy_loss, best
FROM h, qid_lattice('adult', '{age,workclass,education,marital_status,occupation,race,sex,native_country}',
                    h.h, 5, 0.02, 'income', 2)
WHERE minimal ORDER BY discernibility, levels LIMIT 3;
SELECT levels, rows_suppressed, discernibility
FROM h, qid_lattice('adult', '{age,workclass,education,marital_status,occupation,race,sex,native_country}',
                    h.h, 5, 0.02, 'income', 2)
WHERE best;
SELECT levels, rows_suppressed, round(loss::numeric, 4) AS loss
FROM h, qid_lattice('adult', '{age,workclass,education,marital_status,occupation,race,sex,native_country}',
                    h.h, 5, 0.02, 'income', 2, metric => 'precision')
WHERE best;
-- predictive tagging agrees with evaluating every node, on the whole lattice
SELECT count(*) AS nodes,
       count(*) FILTER (WHERE a.anonymous <> b.anonymous OR a.minimal <> b.minimal) AS disagreements,
       count(*) FILTER (WHERE a.evaluated AND (a.rows_suppressed <> b.rows_suppressed OR a.classes <> b.classes
                                               OR a.discernibility <> b.discernibility)) AS figures_differ
FROM h, qid_lattice('adult', '{age,workclass,education,marital_status,occupation,race,sex,native_country}',
                    h.h, 5, 0.02, 'income', 2, evaluate => 'tagged') a
JOIN qid_lattice('adult', '{age,workclass,education,marital_status,occupation,race,sex,native_country}',
                 (SELECT h FROM h), 5, 0.02, 'income', 2, evaluate => 'all') b USING (levels);
-- the same age intervals built by qidrisk
SELECT count(*) AS same_nodes
FROM qid_lattice('adult', '{age,sex}', '{"age": "adult_hierarchy_age", "sex": "adult_hierarchy_sex"}', 5) a
JOIN qid_lattice('adult', '{age,sex}', '{"age": {"widths": [5, 10, 20]}, "sex": "adult_hierarchy_sex"}', 5) b
  USING (levels)
WHERE a.anonymous = b.anonymous AND a.rows_suppressed IS NOT DISTINCT FROM b.rows_suppressed
  AND a.classes IS NOT DISTINCT FROM b.classes;
SELECT * FROM interval_hierarchy('adult', 'age', '{"widths": [5, 10, 20]}') WHERE value = '39';
SELECT * FROM hierarchy_levels('adult_hierarchy_age') WHERE value = '39';
SELECT node, rows_released, rows_suppressed, values_changed, k_anonymity, l_diversity
FROM h, qid_anonymize_into('adult', '{age,workclass,education,marital_status,occupation,race,sex,native_country}',
                      h.h, 'adult_k5', 5, 0.02, 'income', 2);
SELECT k_anonymity(age, workclass, education, marital_status, occupation, race, sex, native_country)
FROM adult_k5;
-- qid_lattice's classes at the best node are the release's (0.2.0 counted
-- the suppressed classes too: 169)
SELECT (SELECT classes FROM h, qid_lattice('adult', '{age,workclass,education,marital_status,occupation,race,sex,native_country}',
                                           h.h, 5, 0.02, 'income', 2) WHERE best) AS lattice_classes,
       (SELECT class_count(age, workclass, education, marital_status, occupation, race, sex, native_country)
        FROM adult_k5) AS release_classes;
SELECT count(*) FROM adult;
\set QUIET 1
RESET search_path;
DROP SCHEMA lattice_test CASCADE;
