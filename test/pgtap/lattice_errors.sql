-- Bad input to qid_lattice, the hierarchy functions and qid_anonymize_into gets a
-- clear error (SQLSTATE and qidrisk's own message) and changes nothing.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;

SELECT plan(47 + 18 + 11 + 11 + 13 + 7 + 15);

CREATE TABLE people (id serial, age integer, zip text, sex text, disease text, score numeric);
INSERT INTO people (age, zip, sex, disease, score)
SELECT 20 + i % 30, '100' || (i % 7), CASE WHEN i % 2 = 0 THEN 'F' ELSE 'M' END,
	   (ARRAY['flu', 'cold', 'cancer'])[1 + i % 3], i % 5
FROM generate_series(1, 200) i;
CREATE TABLE h_zip (value text, l1 text, l2 text);
INSERT INTO h_zip SELECT '100' || i, '10*', '*' FROM generate_series(0, 6) i;
CREATE TABLE h_sex (value text, l1 text);
INSERT INTO h_sex VALUES ('F', '*'), ('M', '*');
CREATE TABLE h_short (value text, l1 text);
INSERT INTO h_short VALUES ('1000', '*');
CREATE TABLE h_unnested (value text, l1 text, l2 text);
INSERT INTO h_unnested SELECT '100' || i, 'g' || (i % 2), 'h' || (i % 3) FROM generate_series(0, 6) i;
CREATE TABLE h_twice (value text, l1 text);
INSERT INTO h_twice VALUES ('F', '*'), ('M', '*'), ('F', 'x');
CREATE TABLE h_ragged (value text, levels text[]);
CREATE TABLE h_nulllabel (value text, l1 text);
INSERT INTO h_nulllabel VALUES ('F', '*'), ('M', NULL);
CREATE TABLE tree (child text, parent text);
INSERT INTO tree VALUES ('1000', 'A'), ('1001', 'A'), ('1002', 'B'), ('1003', 'B'), ('1004', 'B'),
	('1005', 'C'), ('1006', 'C'), ('A', 'AB'), ('B', 'AB'), ('AB', '*'), ('C', '*');
CREATE TABLE loop_tree (child text, parent text);
INSERT INTO loop_tree VALUES ('a', 'b'), ('b', 'a');
CREATE TABLE scale (x numeric);
INSERT INTO scale VALUES (1.0), (1.00), (2);
CREATE TABLE h_scale (value text, l1 text);
INSERT INTO h_scale VALUES ('1.0', 'one'), ('1.00', 'uno'), ('2', 'two');

-- arguments
SELECT throws_ok($$SELECT * FROM qid_lattice(NULL, '{zip}', '{}', 2)$$, '22004', NULL, 'NULL table');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', NULL, '{}', 2)$$, '22004', NULL, 'NULL columns');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', NULL, 2)$$, '22004', NULL, 'NULL hierarchies');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', NULL)$$, '22004', NULL, 'NULL k');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 0)$$, '22023',
				 'qid_lattice: k must be at least 1, not 0', 'k = 0');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', -3)$$, '22023', NULL, 'k < 0');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, 1.5)$$, '22023',
				 'qid_lattice: max_suppressed must lie between 0 and 1, not 1.5', 'max_suppressed > 1');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, -0.1)$$, '22023', NULL, 'max_suppressed < 0');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, 'NaN')$$, '22023', NULL, 'max_suppressed NaN');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, 0, NULL, 2)$$, '22023',
				 'qid_lattice: l-diversity and t-closeness need a sensitive column', 'l without sensitive');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, 0, 'disease', 0)$$, '22023', NULL, 'l = 0');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, 0, 'disease', 2, 'recursive')$$, '22023',
				 'qid_lattice: recursive (c,l)-diversity needs c', 'recursive without c');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, 0, 'disease', 2, 'bogus')$$, '22023',
				 'qid_lattice: unknown l_model "bogus"', 'unknown l_model');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, 0, 'disease', t => 1.5)$$, '22023', NULL, 't > 1');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, metric => 'fun')$$, '22023',
				 'qid_lattice: unknown metric "fun"', 'unknown metric');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, evaluate => 'some')$$, '22023', NULL, 'unknown evaluate');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{}', '{}', 2)$$, '22023', NULL, 'no columns');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip,nope}', '{}', 2)$$, '42703',
				 'column "nope" of relation "people" does not exist', 'unknown column');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip,zip}', '{}', 2)$$, '22023', NULL, 'column twice');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, 0, 'nope', 2)$$, '42703', NULL, 'unknown sensitive column');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, 0, 'zip', 2)$$, '22023', NULL, 'sensitive column is a QID');

-- hierarchies
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '[1]', 2)$$, '22023',
				 'qid_lattice: hierarchies must be a JSON object', 'hierarchies not an object');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{"sex": "h_sex"}', 2)$$, '42703',
				 'qid_lattice: hierarchies name "sex", which is not a quasi-identifier column', 'hierarchy for a non-QID');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{"zip": "h_missing"}', 2)$$, '42P01',
				 'qid_lattice: hierarchy table "h_missing" of column "zip" does not exist', 'missing hierarchy table');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{"zip": 7}', 2)$$, '22023', NULL, 'hierarchy neither name nor object');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{"zip": "h_short"}', 2)$$, '22023',
				 'qid_lattice: value "1001" of column "zip" is missing from its hierarchy', 'value missing from the hierarchy');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{"zip": "h_unnested"}', 2)$$, '22023', NULL, 'hierarchy not nested');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{sex}', '{"sex": "h_twice"}', 2)$$, '22023',
				 'qid_lattice: the hierarchy of column "sex" lists value "F" twice', 'value listed twice');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{sex}', '{"sex": "h_nulllabel"}', 2)$$, '22004', NULL, 'NULL label');
SELECT throws_ok($$SELECT * FROM qid_lattice('scale', '{x}', '{"x": "h_scale"}', 1)$$, '22023', NULL,
				 'equal values (1.0, 1.00) that generalize differently');
SELECT throws_ok($$SELECT * FROM hierarchy_levels('loop_tree', 'child', 'parent')$$, '22023', NULL, 'cycle in a child -> parent table');
SELECT throws_ok($$SELECT * FROM interval_hierarchy('people', 'age', '{"widths": [5, 7]}')$$, '22023',
				 'interval_hierarchy: width 7 is not a multiple of width 5', 'widths not nested');
SELECT throws_ok($$SELECT * FROM interval_hierarchy('people', 'age', '{"widths": [0]}')$$, '22023', NULL, 'width 0');
SELECT throws_ok($$SELECT * FROM interval_hierarchy('people', 'zip', '{"widths": [5]}')$$, '42804', NULL, 'widths on text');
SELECT throws_ok($$SELECT * FROM interval_hierarchy('people', 'age', '{"cuts": 5}')$$, '22023', NULL, 'cuts not arrays');
SELECT throws_ok($$SELECT * FROM interval_hierarchy('people', 'nope', '{"widths": [5]}')$$, '42703', NULL, 'interval: unknown column');

-- a hierarchy object: each key of its json type, no unknown key, one layout
-- (0.1.0 read {"table": ..., "child": 1} in ARX's layout, so a cycle passed)
CREATE TABLE ab (v text);
INSERT INTO ab VALUES ('a'), ('b'), ('a'), ('b');
SELECT throws_ok($$SELECT * FROM qid_lattice('ab', '{v}', '{"v": {"table": "loop_tree", "child": 1}}', 1)$$, '22023',
				 'qid_lattice: "child" in the hierarchy of column "v" must be a string, not a number',
				 'a number for child: refused, not read in ARX''s layout (where the cycle a -> b -> a passed)');
SELECT throws_ok($$SELECT * FROM qid_lattice('ab', '{v}', '{"v": {"table": "loop_tree", "child": "child", "parent": 2}}', 1)$$, '22023',
				 'qid_lattice: "parent" in the hierarchy of column "v" must be a string, not a number', 'a number for parent');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{"zip": {"table": 7}}', 2)$$, '22023',
				 'qid_lattice: "table" in the hierarchy of column "zip" must be a string, not a number', 'a number for table');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{"zip": {"table": "tree", "child": "child", "parent": null}}', 2)$$, '22023',
				 'qid_lattice: "parent" in the hierarchy of column "zip" must be a string, not null', 'null for parent');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{"zip": {"table": "h_zip", "levels": 2}}', 2)$$, '22023',
				 'qid_lattice: unknown key "levels" in the hierarchy of column "zip"', 'an unknown key');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{"zip": {"table": "tree", "child": "child"}}', 2)$$, '22023',
				 'qid_lattice: the hierarchy of column "zip" gives "child" without "parent"', 'child without parent');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{"zip": {"table": "tree", "parent": "parent"}}', 2)$$, '22023',
				 'qid_lattice: the hierarchy of column "zip" gives "parent" without "child"', 'parent without child');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{"zip": {"child": "child", "parent": "parent"}}', 2)$$, '22023',
				 'qid_lattice: the hierarchy of column "zip" gives "child" without "table"', 'child and parent without table');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{age}', '{"age": {"widths": "5, 10"}}', 2)$$, '22023',
				 'qid_lattice: "widths" in the hierarchy of column "age" must be a non-empty array of numbers, not a string',
				 'widths of the wrong type');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{age}', '{"age": {"widths": [5, "10"]}}', 2)$$, '22023',
				 'qid_lattice: "widths" in the hierarchy of column "age" must be a non-empty array of numbers, not an array holding a string',
				 'a width of the wrong type');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{age}', '{"age": {"cuts": [30, 40]}}', 2)$$, '22023',
				 'qid_lattice: "cuts" in the hierarchy of column "age" must be a non-empty array of arrays, not an array holding a number',
				 'cuts not an array of arrays');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{age}', '{"age": {"table": "h_zip", "widths": [5]}}', 2)$$, '22023',
				 'qid_lattice: the hierarchy of column "age" mixes "table" and "widths"', 'a table and widths: two layouts');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{age}', '{"age": {"widths": [5], "cuts": [[30]]}}', 2)$$, '22023',
				 'qid_lattice: the hierarchy of column "age" mixes "widths" and "cuts"', 'widths and cuts: two layouts');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{"zip": {}}', 2)$$, '22023',
				 'qid_lattice: the hierarchy of column "zip" is an empty object', 'an empty object');
SELECT throws_ok($$SELECT * FROM interval_hierarchy('people', 'age', '{"widths": [5], "cut": [[30]]}')$$, '22023',
				 'interval_hierarchy: unknown key "cut"', 'interval_hierarchy: an unknown key');

-- the three kinds of hierarchy work, and a column may have none
SELECT is((SELECT count(*) FROM qid_lattice('people', '{zip,sex,age}',
		   '{"zip": {"table": "tree", "child": "child", "parent": "parent"}, "sex": "h_sex", "age": {"widths": [5, 10]}}', 2)),
		  32::bigint, 'child -> parent table, ARX table and interval widths together: 4 * 2 * 4 nodes');
SELECT is((SELECT levels FROM hierarchy_levels('tree', 'child', 'parent') WHERE value = '1000'),
		  '{A,AB,*}'::text[], 'a child -> parent chain');
SELECT is((SELECT levels FROM hierarchy_levels('tree', 'child', 'parent') WHERE value = '1005'),
		  '{C,*,*}'::text[], 'a shorter chain keeps its top');

-- qid_anonymize_into: bad input and an unreachable target write nothing
SELECT throws_ok($$SELECT * FROM qid_anonymize_into('people', '{zip}', '{"zip": "h_zip"}', NULL, 2)$$, '22004', NULL, 'anonymize: no release name');
SELECT throws_ok($$SELECT * FROM qid_anonymize_into('people', '{zip}', '{"zip": "h_zip"}', 'rel_x', 2, suppression => 'hide')$$, '22023', NULL, 'anonymize: unknown suppression');
SELECT throws_ok($$SELECT * FROM qid_anonymize_into('people', '{zip}', '{"zip": "h_zip"}', 'rel_x', 500)$$, '22023', NULL, 'anonymize: target out of reach');
SELECT hasnt_table('rel_x', 'nothing written on failure');
SELECT throws_ok($$SELECT * FROM qid_anonymize_into('ab', '{v}', '{"v": {"table": "loop_tree", "child": 1}}', 'rel_cycle', 1)$$, '22023',
				 'qid_lattice: "child" in the hierarchy of column "v" must be a string, not a number',
				 'anonymize: a number for child, refused as qid_lattice refuses it');
SELECT hasnt_table('rel_cycle', 'nothing written for the cycle that used to pass');
SELECT throws_ok($$SELECT * FROM qid_anonymize_into('people', '{zip}', '{"zip": {"table": 7}}', 'rel_x', 2)$$, '22023',
				 'qid_lattice: "table" in the hierarchy of column "zip" must be a string, not a number', 'anonymize: a number for table');

-- the search: its name, its budget, the lattices it refuses; nothing written
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, search => 'fast')$$, '22023',
				 'qid_lattice: unknown search "fast"', 'unknown search');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, search => NULL)$$, '22004',
				 'qid_lattice: argument 14 must not be NULL', 'NULL search');
SELECT throws_ok($$SELECT * FROM qid_anonymize_into('people', '{zip}', '{"zip": "h_zip"}', 'rel_s', 2, search => 'fast')$$, '22023',
				 'qid_lattice: unknown search "fast"', 'anonymize: unknown search');
SELECT hasnt_table('rel_s', 'nothing written for an unknown search');

-- the loss metric's options
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, metric => 'loss', gs_factor => 1.5)$$, '22023',
				 'qid_lattice: gs_factor must lie between 0 and 1, not 1.5', 'gs_factor above 1');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, metric => 'loss', gs_factor => 'NaN')$$, '22023',
				 'qid_lattice: gs_factor must lie between 0 and 1, not NaN', 'gs_factor NaN');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, metric => 'loss', gs_factor => NULL)$$, '22004',
				 'qid_lattice: argument 15 must not be NULL', 'gs_factor NULL');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, gs_factor => 0.2)$$, '22023',
				 'qid_lattice: gs_factor and weights apply to metric ''loss'' only', 'gs_factor with another metric');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, metric => 'height', weights => '{"zip": 2}')$$, '22023',
				 'qid_lattice: gs_factor and weights apply to metric ''loss'' only', 'weights with another metric');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, metric => 'loss', weights => '[1]')$$, '22023',
				 'qid_lattice: weights must be a JSON object', 'weights an array');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, metric => 'loss', weights => '{"age": 1}')$$, '22023',
				 'qid_lattice: weights name "age", which is not a quasi-identifier column', 'weights of an unknown column');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, metric => 'loss', weights => '{"zip": "2"}')$$, '22023',
				 'qid_lattice: the weight of column "zip" must be a number, not a string', 'a weight not a number');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, metric => 'loss', weights => '{"zip": -1}')$$, '22023',
				 'qid_lattice: the weight of column "zip" must be a non-negative number, not -1', 'a negative weight');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, metric => 'loss', weights => '{"zip": 0}')$$, '22023',
				 'qid_lattice: at least one weight must be positive', 'every weight zero');
SELECT throws_ok($$SELECT * FROM qid_anonymize_into('people', '{zip}', '{"zip": "h_zip"}', 'rel_g', 2, metric => 'loss', gs_factor => -0.1)$$, '22023',
				 'qid_lattice: gs_factor must lie between 0 and 1, not -0.1', 'anonymize: gs_factor below 0');

-- the privacy models
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '[1]')$$, '22023',
				 'qid_lattice: privacy must be a JSON object', 'privacy an array');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"k_anonymity": {}}')$$, '22023',
				 'qid_lattice: unknown privacy model "k_anonymity"', 'an unknown privacy model');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"k_map": 5}')$$, '22023',
				 'qid_lattice: privacy model "k_map": its settings must be an object, not a number', 'settings not an object');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"k_map": {"k": 5, "sampling_fraction": 0.1, "alpha": 0.05}}')$$, '22023',
				 'qid_lattice: privacy model "k_map": unknown key "alpha"', 'k_map: an unknown key');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"k_map": {"sampling_fraction": 0.1}}')$$, '22023',
				 'qid_lattice: privacy model "k_map": needs "k"', 'k_map without k');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"k_map": {"k": 2.5, "sampling_fraction": 0.1}}')$$, '22023',
				 'qid_lattice: privacy model "k_map": "k" must be a whole number of at least 1', 'k_map: k not whole');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"k_map": {"k": 5, "sampling_fraction": 0}}')$$, '22023',
				 'qid_lattice: privacy model "k_map": "sampling_fraction" must lie in (0, 1]', 'k_map: sampling fraction 0');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"k_map": {"k": 5, "sampling_fraction": 0.1, "estimator": "binomial"}}')$$, '22023',
				 'qid_lattice: privacy model "k_map": unknown estimator "binomial"', 'k_map: an unknown estimator');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"k_map": {"k": 5, "sampling_fraction": 0.1, "significance": 1}}')$$, '22023',
				 'qid_lattice: privacy model "k_map": "significance" must lie in (0, 1)', 'k_map: significance 1');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, sensitive_column => 'disease', privacy => '{"beta_likeness": {"beta": -1}}')$$, '22023',
				 'qid_lattice: privacy model "beta_likeness": "beta" must be positive', 'beta_likeness: a negative beta');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"beta_likeness": {"beta": 1}}')$$, '22023',
				 'qid_lattice: beta_likeness needs a sensitive column', 'beta_likeness without a sensitive column');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"average_risk": {"max": 0}}')$$, '22023',
				 'qid_lattice: privacy model "average_risk": "max" must lie in (0, 1]', 'average_risk: a ceiling of 0');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"average_risk": {"max": "0.1"}}')$$, '22023',
				 'qid_lattice: privacy model "average_risk": "max" must be a number, not a string', 'average_risk: a string');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"population_uniqueness": {"sampling_fraction": 0.1}}')$$, '22023',
				 'qid_lattice: privacy model "population_uniqueness": needs "max"', 'population_uniqueness without max');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"population_uniqueness": {"max": 1.5, "sampling_fraction": 0.1}}')$$, '22023',
				 'qid_lattice: privacy model "population_uniqueness": "max" must lie in (0, 1]', 'population_uniqueness: a ceiling above 1');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"population_uniqueness": {"max": 0.01}}')$$, '22023',
				 'qid_lattice: privacy model "population_uniqueness": needs "sampling_fraction"', 'population_uniqueness without a sampling fraction');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"population_uniqueness": {"max": 0.01, "sampling_fraction": 1.2}}')$$, '22023',
				 'qid_lattice: privacy model "population_uniqueness": "sampling_fraction" must lie in (0, 1]', 'population_uniqueness: a sampling fraction above 1');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"population_uniqueness": {"max": 0.01, "sampling_fraction": 0.1, "model": "all"}}')$$, '22023',
				 'qid_lattice: privacy model "population_uniqueness": unknown model "all"', 'population_uniqueness: model all');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"population_uniqueness": {"max": 0.01, "sampling_fraction": 0.1, "population": "t"}}')$$, '22023',
				 'qid_lattice: privacy model "population_uniqueness": unknown key "population"', 'population_uniqueness: an unknown key');
SELECT throws_ok($$SELECT * FROM qid_anonymize_into('people', '{zip}', '{}', 'people_pu', 2, local_recoding => true,
													privacy => '{"population_uniqueness": {"max": 0.01, "sampling_fraction": 0.1}}')$$, '0A000',
				 'qid_anonymize_into: local_recoding does not support population_uniqueness', 'qid_anonymize_into: local recoding under population uniqueness');
-- a population table (k_map against it, delta_presence): people is its own population
CREATE TABLE pop_other (zip integer, sex text);
CREATE TABLE pop_half AS SELECT * FROM people WHERE id % 2 = 0;
CREATE TABLE pop_newzip AS SELECT zip FROM people UNION ALL SELECT '2000';
CREATE ROLE qidrisk_lattice_errors_reader;
GRANT SELECT ON people TO qidrisk_lattice_errors_reader;
GRANT USAGE ON SCHEMA public TO qidrisk_lattice_errors_reader;
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"delta_presence": {"max": 0.5}}')$$, '22023',
				 'qid_lattice: privacy model "delta_presence": needs "population"', 'delta_presence without a population');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"delta_presence": {"max": 0.5, "population": 7}}')$$, '22023',
				 'qid_lattice: privacy model "delta_presence": "population" must be a table name, not a number', 'a population not a name');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"delta_presence": {"min": 0.6, "max": 0.5, "population": "people"}}')$$, '22023',
				 'qid_lattice: privacy model "delta_presence": "min" and "max" must satisfy 0 <= min <= max <= 1', 'delta_presence: min above max');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"k_map": {"k": 3, "population": "people", "sampling_fraction": 0.1}}')$$, '22023',
				 'qid_lattice: privacy model "k_map": with "population" the population''s rows are counted: leave out "sampling_fraction", "estimator" and "significance"',
				 'k_map: a population and a sampling fraction');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"k_map": {"k": 3, "population": "people"}, "delta_presence": {"max": 0.5, "population": "pop_half"}}')$$, '22023',
				 'qid_lattice: privacy model "delta_presence": k_map and delta_presence must name the same population and population_qid', 'two populations');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"k_map": {"k": 3, "population": "people", "population_qid": "zip"}}')$$, '22023',
				 'qid_lattice: privacy model "k_map": "population_qid" must be an array of column names, not a string', 'population_qid a string');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"k_map": {"k": 3, "population": "nowhere"}}')$$, '42P01',
				 'qid_lattice: population table "nowhere" does not exist', 'a missing population table');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"k_map": {"k": 3, "population": "people", "population_qid": ["zip", "sex"]}}')$$, '22023',
				 'qid_lattice: population_qid names 2 columns for 1 quasi-identifiers', 'population_qid of another length');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{age}', '{}', 2, privacy => '{"k_map": {"k": 3, "population": "pop_other"}}')$$, '42703',
				 'column "age" of relation "pop_other" does not exist', 'a population without the column');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"k_map": {"k": 3, "population": "pop_other"}}')$$, '42804',
				 'qid_lattice: column "zip" of the population is of type integer, column "zip" of rel of type text', 'a population column of another type');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"delta_presence": {"max": 0.5, "population": "pop_half"}}')$$, '22023',
				 'qid_lattice: delta_presence needs rel''s rows to be rows of the population', 'delta_presence: rel not within the population');
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{"zip": "h_zip"}', 2, privacy => '{"k_map": {"k": 3, "population": "pop_newzip"}}')$$, '22023',
				 'qid_lattice: value "2000" of column "zip" is missing from its hierarchy', 'a population value missing from the hierarchy');
SET LOCAL ROLE qidrisk_lattice_errors_reader;
SELECT throws_ok($$SELECT * FROM qid_lattice('people', '{zip}', '{}', 2, privacy => '{"k_map": {"k": 3, "population": "pop_half"}}')$$, '42501',
				 'permission denied for column "zip" of relation "pop_half"', 'a population the caller may not read');
RESET ROLE;
SELECT throws_ok($$SELECT * FROM qid_anonymize_into('people', '{zip}', '{}', 'people_dp', 1, local_recoding => true,
													privacy => '{"delta_presence": {"max": 0.5, "population": "people"}}')$$, '0A000',
				 'qid_anonymize_into: local_recoding does not support delta_presence', 'qid_anonymize_into: local recoding under delta_presence');
SELECT throws_ok($$SELECT * FROM qid_anonymize_into('people', '{zip}', '{}', 'people_km', 1,
													privacy => '{"k_map": {"k": 3, "population": "nowhere"}}')$$, '42P01',
				 'qid_anonymize_into: population table "nowhere" does not exist', 'qid_anonymize_into: a missing population table');
SELECT throws_ok($$SET LOCAL qidrisk.lattice_heuristic_nodes = 0$$, '22023', NULL, 'a budget of 0 nodes');
SELECT throws_ok($$SET LOCAL qidrisk.lattice_heuristic_nodes = 10000001$$, '22023', NULL,
				 'a budget past the exact search''s 10,000,000 nodes');
-- the lattices too large are refused from the hierarchies' heights, before
-- the table is read: wide is a view that fails when read; the timeout turns
-- a search that started anyway into a quick failure, not a 2^24-node run
SELECT format('CREATE TABLE wide_rows (%s)', string_agg(format('c%s integer', i), ', ')) FROM generate_series(1, 63) i \gexec
INSERT INTO wide_rows SELECT FROM generate_series(1, 3);
CREATE FUNCTION pg_temp.wide_read() RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	RAISE EXCEPTION 'wide was read';
END
$$;
CREATE VIEW wide AS SELECT *, pg_temp.wide_read() AS x FROM wide_rows;
CREATE TABLE h_zero (value text, l1 text);
INSERT INTO h_zero VALUES (NULL, '*');
SELECT throws_ok($$SELECT * FROM qid_lattice('wide', '{c1,c2}', '{"c1": "h_zero", "c2": "h_zero"}', 2)$$, 'P0001',
				 'wide was read', 'a lattice of 4 nodes reads wide, which fails');
SET LOCAL statement_timeout = '10s';
SELECT throws_ok(format($$SELECT * FROM qid_lattice('wide', %L, %L, 2)$$,
						(SELECT array_agg('c' || i) FROM generate_series(1, 24) i),
						(SELECT jsonb_object_agg('c' || i, 'h_zero') FROM generate_series(1, 24) i)), '54000',
				 'qid_lattice: the lattice has more than 10000000 nodes', 'exact search: 2^24 nodes refused before wide is read');
SELECT throws_ok(format($$SELECT * FROM qid_lattice('wide', %L, %L, 2, search => 'heuristic')$$,
						(SELECT array_agg('c' || i) FROM generate_series(1, 63) i),
						(SELECT jsonb_object_agg('c' || i, 'h_zero') FROM generate_series(1, 63) i)), '54000',
				 'qid_lattice: the lattice has more nodes than a 64-bit node number can count',
				 'heuristic search: 2^63 nodes, past int64, refused before wide is read');
SELECT throws_ok(format($$SELECT * FROM qid_anonymize_into('wide', %L, %L, 'rel_w', 2, search => 'heuristic')$$,
						(SELECT array_agg('c' || i) FROM generate_series(1, 63) i),
						(SELECT jsonb_object_agg('c' || i, 'h_zero') FROM generate_series(1, 63) i)), '54000',
				 'qid_lattice: the lattice has more nodes than a 64-bit node number can count',
				 'anonymize, heuristic: 2^63 nodes refused before wide is read');
SELECT hasnt_table('rel_w', 'nothing written for a lattice past int64');
SET LOCAL statement_timeout = 0;

-- names resolve with the caller's search_path, not the functions' pinned one
CREATE SCHEMA lattice_other;
CREATE TABLE lattice_other.h_sex2 (value text, l1 text);
INSERT INTO lattice_other.h_sex2 VALUES ('F', '*'), ('M', '*');
SET LOCAL search_path = lattice_other, public;
SELECT is((SELECT count(*) FROM qid_lattice('public.people', '{sex}', '{"sex": "h_sex2"}', 2)), 2::bigint,
		  'qid_lattice finds a hierarchy on the caller''s search_path');
SELECT is((SELECT rows_released FROM qid_anonymize_into('public.people', '{sex,zip}', '{"sex": "h_sex2", "zip": {"table": "public.h_zip"}}', 'rel_sp', 2)),
		  200::bigint, 'qid_anonymize_into finds them too');
SELECT has_table('lattice_other', 'rel_sp', 'the release goes to the first schema of the caller''s search_path');
SELECT is((SELECT count(*) FROM public.people), 200::bigint, 'the source keeps its rows');
RESET search_path;

SELECT * FROM finish();
ROLLBACK;
