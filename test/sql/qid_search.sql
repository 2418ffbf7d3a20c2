-- qid_search on UCI Adult (data/adult, CC BY 4.0): the twelve projections of
-- Lodha & Thomas (2008), Fig. 3, from one search over the ten public columns,
-- each also checked against its own GROUP BY ... HAVING count(*) = 1
CREATE SCHEMA qid_search_test;
SET search_path = qid_search_test, public;
\i data/load_adult.sql
CREATE TEMP TABLE fig3 (row_no int, cols text[], paper bigint);
INSERT INTO fig3 VALUES
	(1, '{age}', 2),
	(2, '{age,hours_per_week}', 986),
	(3, '{age,race,sex}', 65),
	(4, '{age,workclass,education,occupation}', 5056),
	(5, '{age,workclass,occupation,native_country}', 3105),
	(6, '{age,occupation,hours_per_week,native_country}', 7581),
	(7, '{workclass,education,occupation,native_country}', 1384),
	(8, '{age,workclass,education,occupation,native_country}', 7659),
	(9, '{age,workclass,marital_status,occupation,relationship}', 5215),
	(10, '{age,workclass,occupation,relationship,hours_per_week}', 12870),
	(11, '{age,workclass,occupation,hours_per_week,native_country}', 10402),
	(12, '{age,workclass,education,marital_status,occupation,relationship,race,sex,hours_per_week,native_country}', 24802);
CREATE TEMP TABLE adult_search AS
SELECT * FROM qid_search('adult', ARRAY['age', 'workclass', 'education', 'marital_status',
	'occupation', 'relationship', 'race', 'sex', 'hours_per_week', 'native_country']);
SELECT count(*) AS subsets, count(*) FILTER (WHERE identifier) AS identifiers FROM adult_search;
-- the reference: one GROUP BY per projection
CREATE FUNCTION pg_temp.group_by_singletons(cols text[]) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
BEGIN
	EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM adult GROUP BY %s HAVING count(*) = 1) s',
				   (SELECT string_agg(quote_ident(c), ', ') FROM unnest(cols) c)) INTO n;
	RETURN n;
END
$$;
SELECT f.row_no, q.size, f.paper, q.singletons, pg_temp.group_by_singletons(f.cols) AS group_by,
	round(q.singleton_share::numeric, 3) AS f1, q.classes
FROM fig3 f JOIN adult_search q ON q.columns = f.cols ORDER BY f.row_no;
-- the best QIDs: all ten columns expose the most singletons
SELECT columns, size, singletons, best FROM adult_search ORDER BY singletons DESC, size LIMIT 3;
SELECT columns, singletons, best FROM qid_search('adult', ARRAY['age', 'race', 'sex'], summary => true);
-- max_size 2 over every column of the table: 15 + 105 subsets, the best first
SELECT count(*), (array_agg(columns::text))[1] AS best, (array_agg(singletons))[1] AS singletons
FROM qid_search('adult', max_size => 2);
-- Adult writes missing values as '?': drop_incomplete drops only NULL and ''
SELECT DISTINCT rows, rows_removed FROM qid_search('adult', ARRAY['workclass', 'occupation'], drop_incomplete => true);

-- NULL and empty strings: kept as values, or the incomplete rows dropped
CREATE TABLE licences (birth_year int, sex text, zip text);
INSERT INTO licences VALUES (1980, 'F', '84100'), (1980, 'F', '84100'), (1980, 'M', '84100'),
	(1975, 'M', '84121'), (1990, 'F', NULL), (1990, 'F', ''), (1975, NULL, '84121');
SELECT * FROM qid_search('licences');
SELECT * FROM qid_search('licences', drop_incomplete => true);
SELECT columns, singletons, minimal_identifier, best FROM qid_search('licences', summary => true);
ALTER TABLE licences ADD COLUMN id serial;
SELECT columns, singletons, minimal_identifier, best FROM qid_search('licences', summary => true);
SELECT columns, singletons, identifier, minimal_identifier FROM qid_search('licences', ARRAY['id', 'zip'], 2);
-- the table is unchanged
SELECT count(*) FROM licences;

-- bad input
SELECT * FROM qid_search(NULL);
SELECT * FROM qid_search('licences', ARRAY['zip', 'nope']);
SELECT * FROM qid_search('licences', ARRAY['zip', 'ctid']);
SELECT * FROM qid_search('licences', ARRAY['zip', 'zip']);
SELECT * FROM qid_search('licences', ARRAY[]::text[]);
SELECT * FROM qid_search('licences', ARRAY['zip', NULL]);
SELECT * FROM qid_search('licences', ARRAY['zip'], 0);
SELECT * FROM qid_search('licences', summary => NULL);
SELECT * FROM qid_search('no_such_table');
CREATE TABLE shapes (p point, q int);
SELECT * FROM qid_search('shapes');
SET qidrisk.max_state_memory = 64;
SELECT count(*) FROM qid_search('adult');
RESET qidrisk.max_state_memory;
RESET search_path;
DROP SCHEMA qid_search_test CASCADE;
