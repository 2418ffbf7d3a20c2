-- The example database of qidrisk's documentation (docs/examples.md): every
-- table the examples in README.md and docs/*.md use.  Run it with psql from the
-- repository's top folder in an empty database (it loads data/load_adult.sql):
--   createdb qidrisk_examples && psql -d qidrisk_examples -f data/examples.sql
-- test/ops/docs.sh runs each page's examples in a fresh copy of it.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS qidrisk;

-- five people: the frequency aggregates, checks and qid_search
CREATE TABLE people (birth_year int, sex text, zip text, region text);
INSERT INTO people VALUES (1980, 'F', '1000', 'north'), (1980, 'F', '1000', 'north'),
	(1980, 'M', '1000', 'north'), (1975, 'M', '2000', 'south'), (1990, 'F', NULL, 'south');

-- a census with one row per (municipality, age) and its number of people;
-- in municipality B the ages cluster around 30 (birthday uniqueness)
CREATE TABLE census_ages (municipality text, age int, people float8);
INSERT INTO census_ages
SELECT m, age, 100 + (CASE WHEN m = 'B' THEN 400 * exp(-(((age - 30) / 8.0) ^ 2)) ELSE 0 END)
FROM unnest(ARRAY['A', 'B']) m, generate_series(0, 94) age;

-- k-map (Table 2.6 of Desfontaines' thesis: Eden, Arizona has about 20
-- inhabitants, Chicago's 60629 more than 100,000): a release, an aggregated
-- census, the census as microdata with other column names, a release in
-- age bands, and a small population table with other column names
CREATE TABLE study (id int PRIMARY KEY, zip text, age int);
INSERT INTO study VALUES (1, '85535', 79), (2, '60629', 42), (3, '60629', 42);
CREATE TABLE census (zip text, age int, people int);
INSERT INTO census VALUES ('85535', 79, 1), ('85535', 41, 3), ('60629', 42, 1200), ('60629', 79, 310),
	('85001', 79, 1800), ('85002', 79, 1800);
CREATE TABLE residents AS
SELECT zip AS postcode, age AS years FROM census, generate_series(1, people) WHERE people < 2000;
CREATE TABLE banded_study (zip text, age_band text);
INSERT INTO banded_study VALUES ('85535', '70-79'), ('60629', '40-49'), ('60629', '40-49'), ('10001', '30-39');
CREATE TABLE people_2020 (postcode text, years int);
INSERT INTO people_2020 SELECT '60629', 42 FROM generate_series(1, 5);

-- a weighted survey sample (individual and global risk)
CREATE TABLE survey (region text, sex text, weight numeric);
INSERT INTO survey VALUES ('A', 'F', 10), ('B', 'M', 5), ('B', 'M', 5), ('C', 'F', 2), ('C', 'F', 2), ('C', 'F', 2);

-- driving licences with a municipality -> province mapping (qid_search,
-- qid_generalize, checks)
CREATE TABLE licences (birth_year int, sex text, municipality text);
INSERT INTO licences VALUES (1980, 'F', 'Salerno'), (1980, 'F', 'Salerno'), (1980, 'M', 'Salerno'),
	(1980, 'M', 'Salerno'), (1975, 'F', 'Napoli'), (1975, 'F', 'Napoli'), (1981, 'M', 'Amalfi'),
	(1981, 'M', 'Positano'), (1962, 'F', 'Pozzuoli'), (1962, 'F', 'Napoli'), (1990, 'M', 'Napoli');
CREATE TABLE province_of ("from" text, "to" text);
INSERT INTO province_of VALUES ('Salerno', 'SA'), ('Amalfi', 'SA'), ('Positano', 'SA'),
	('Napoli', 'NA'), ('Pozzuoli', 'NA');

-- patients' ZIP codes and a child -> parent hierarchy of places
-- (hierarchy_generalize)
CREATE TABLE places (child text, parent text);
INSERT INTO places VALUES ('02138', 'Cambridge'), ('02139', 'Cambridge'), ('02446', 'Brookline'),
	('Cambridge', 'Middlesex'), ('Brookline', 'Norfolk'), ('Middlesex', 'MA'), ('Norfolk', 'MA');
CREATE TABLE patients (zip text);
INSERT INTO patients VALUES ('02138'), ('02138'), ('02139'), ('02446'), ('02446'), ('02446'), (NULL);

-- the QaR slides' toy table
CREATE TABLE toy (id integer, sex text, age_group text, nationality text);
INSERT INTO toy VALUES (1, 'Female', '55-64', 'Greek'), (2, 'Male', '25-34', 'Greek'),
	(3, 'Female', '25-34', 'Italian'), (4, 'Male', '25-34', 'Greek'), (5, 'Male', '35-44', 'Greek'),
	(6, 'Female', '55-64', 'Greek'), (7, 'Male', '25-34', 'Greek'), (8, 'Male', '25-34', 'Greek');

-- a million synthetic rows, more classes than the approximate estimators keep
CREATE TABLE big AS SELECT 1930 + i % 80 AS birth_year, (ARRAY['F','M'])[1 + i % 2] AS sex,
	(hashint4(i) & 65535)::text AS zip FROM generate_series(1, 1000000) i;

-- UCI Adult (data/adult, CC BY 4.0), 32,561 rows, with a key numbering the
-- rows in the file's order (the QaR per-record functions name rows by it)
\i data/load_adult.sql
-- loaded again into the table with its key, so the key is the line number on
-- every PostgreSQL version (ADD COLUMN numbers the rows in scan order)
TRUNCATE adult;
ALTER TABLE adult ADD COLUMN id integer GENERATED ALWAYS AS IDENTITY;
\copy adult (age, workclass, fnlwgt, education, education_num, marital_status, occupation, relationship, race, sex, capital_gain, capital_loss, hours_per_week, native_country, income) FROM PROGRAM 'gzip -dc data/adult/adult.data.gz | sed -e "s/, /,/g" -e "/^$/d"' WITH (FORMAT csv)

-- its own tables only: a non-superuser cannot analyze the system catalogs
ANALYZE people, census_ages, study, census, residents, banded_study, people_2020, survey, licences,
	province_of, places, patients, toy, big, adult;
