-- k-map (Desfontaines 2020, "Lowering the cost of anonymization", section 2.1.2) and the weighted-sample risk: behaviour
-- The thesis' example: a 40-person study released with ZIP code and age.  A
-- census table gives, per (ZIP, age), how many people live there.
CREATE TABLE census (zip text, age integer, people integer);
-- Eden, Arizona (85535): about 20 people, one of them 79 years old
INSERT INTO census VALUES ('85535', 79, 1), ('85535', 41, 3), ('85535', 52, 4),
	('85535', 17, 5), ('85535', 66, 7);
-- Chicago 60629: more than 100,000 people, 1,200 of them 42 years old
INSERT INTO census VALUES ('60629', 42, 1200), ('60629', 43, 1150), ('60629', 79, 310),
	('60629', 20, 97340);
-- Phoenix ZIP codes 85001 .. 85040: 90 people aged 79 in each (3,600 in all)
INSERT INTO census SELECT (85000 + i)::text, 79, 90 FROM generate_series(1, 40) i;
-- Table 2.6: two rows of the study
CREATE TABLE study (zip text, age integer);
INSERT INTO study VALUES ('85535', 79), ('60629', 42);
-- both rows are unique in the study (k-anonymity 1) ...
SELECT k_anonymity(zip, age) FROM study;
-- ... but against the census the first matches 1 person, the second 1,200
SELECT * FROM kmap_count('study', 'census', ARRAY['zip', 'age'], 'people') ORDER BY class;
SELECT kmap_value('study', 'census', ARRAY['zip', 'age'], 'people');
SELECT kmap_rows_below('study', 'census', ARRAY['zip', 'age'], 1000, 'people');
-- Table 2.7: generalize ZIP 85535 to 85000-85999.  The census is brought to the
-- same coarseness by a view that applies the same expression to it.
CREATE FUNCTION zip_area(zip text) RETURNS text LANGUAGE sql IMMUTABLE
AS $$ SELECT CASE WHEN zip BETWEEN '85000' AND '85999' THEN '85000-85999' ELSE zip END $$;
CREATE VIEW study_generalized AS SELECT zip_area(zip) AS zip, age FROM study;
CREATE VIEW census_generalized AS SELECT zip_area(zip) AS zip, age, people FROM census;
SELECT * FROM kmap_count('study_generalized', 'census_generalized', ARRAY['zip', 'age'], 'people')
ORDER BY class;
-- the generalized study satisfies 1000-map
SELECT kmap_value('study_generalized', 'census_generalized', ARRAY['zip', 'age'], 'people') >= 1000 AS is_1000_map;
SELECT kmap_rows_below('study_generalized', 'census_generalized', ARRAY['zip', 'age'], 1000, 'people');
-- The population as microdata: one row a person (the census expanded)
CREATE TABLE residents AS
SELECT zip AS postcode, age AS years FROM census, generate_series(1, people) WHERE people < 2000;
-- different column names, matched by position
SELECT * FROM kmap_count('study', 'residents', ARRAY['zip', 'age'],
						 population_qid => ARRAY['postcode', 'years']) ORDER BY class;
-- A coarser release: age bands in the release, single years in the population
CREATE FUNCTION age_band(age integer) RETURNS text LANGUAGE sql IMMUTABLE
AS $$ SELECT CASE WHEN age IS NULL THEN NULL ELSE (age / 10 * 10)::text || '-' || (age / 10 * 10 + 9)::text END $$;
CREATE TABLE banded_study (zip text, age_band text);
INSERT INTO banded_study VALUES ('85535', '70-79'), ('60629', '40-49'), ('60629', '40-49'), ('10001', '30-39');
CREATE VIEW residents_banded AS SELECT postcode, age_band(years) AS band FROM residents;
SELECT * FROM kmap_count('banded_study', 'residents_banded', ARRAY['zip', 'age_band'], NULL,
						 ARRAY['postcode', 'band']) ORDER BY class;
-- the same by range matching: each release band as a range joined to the
-- population's years, compared with kmap_count through the view
SELECT b.zip, b.age_band, count(r.*) AS population_rows
FROM (SELECT DISTINCT zip, age_band FROM banded_study) b
LEFT JOIN residents r ON r.postcode = b.zip
	AND r.years <@ int4range(split_part(b.age_band, '-', 1)::int, split_part(b.age_band, '-', 2)::int, '[]')
GROUP BY b.zip, b.age_band ORDER BY b.zip, b.age_band;
-- NULL matches NULL (GROUP BY semantics); equality is the type's: 1.0 = 1.00,
-- text matches varchar; classes absent from the population count 0
CREATE TABLE r_values (code varchar(5), amount numeric, note text);
INSERT INTO r_values VALUES ('a', 1.0, NULL), ('a', 1.00, NULL), (NULL, 2, 'x'), ('b', 3, 'y');
CREATE TABLE p_values (code text, amount numeric, note text);
INSERT INTO p_values VALUES ('a', 1, NULL), ('a', 1.000, NULL), ('a', 1, 'z'), (NULL, 2.0, 'x'), ('c', 3, 'y');
SELECT * FROM kmap_count('r_values', 'p_values', ARRAY['code', 'amount', 'note']) ORDER BY class;
-- a domain matches its base type, varchar matches text, numeric(5,2) matches numeric
CREATE DOMAIN years AS integer CHECK (VALUE >= 0);
CREATE TABLE d_release (a years, z varchar(5), n numeric(5, 2));
INSERT INTO d_release VALUES (1, 'x', 1.00), (2, 'y', 2.50);
CREATE TABLE d_population (a integer, z text, n numeric);
INSERT INTO d_population VALUES (1, 'x', 1), (1, 'x', 1.0), (2, 'y', 2.5), (2, 'y', 2.49);
SELECT * FROM kmap_count('d_release', 'd_population', ARRAY['a', 'z', 'n']) ORDER BY class;
SELECT * FROM kmap_count('d_population', 'd_release', ARRAY['a', 'z', 'n']) ORDER BY class;
-- an empty release has no classes and no k-map value; an empty population counts 0
CREATE TABLE nobody (zip text, age integer);
SELECT count(*) FROM kmap_count('nobody', 'census', ARRAY['zip', 'age']);
SELECT kmap_value('nobody', 'census', ARRAY['zip', 'age']);
SELECT kmap_value('study', 'nobody', ARRAY['zip', 'age']);
-- Back to the release's rows: kmap_row_counts gives every row with its figures
CREATE TABLE released (id integer PRIMARY KEY, zip text, age integer, answer text);
INSERT INTO released VALUES (1, '85535', 79, 'yes'), (2, '60629', 42, 'no'), (3, '60629', 42, 'yes'),
	(4, '85001', 79, 'no');
SELECT (release_row->>'id')::int AS id, class, release_rows, population_rows
FROM kmap_row_counts('released', 'census', ARRAY['zip', 'age'], 'people') ORDER BY 1;
-- or join kmap_count's class to jsonb_build_object of the release's QID columns;
-- a steward suppresses the ZIP of the rows in classes below 100
UPDATE released r SET zip = NULL
FROM kmap_count('released', 'census', ARRAY['zip', 'age'], 'people') k
WHERE k.class = jsonb_build_object('zip', r.zip, 'age', r.age) AND k.population_rows < 100;
SELECT * FROM released ORDER BY id;
-- Weighted sample, no population: F_k = sum of weights, individual risk as
-- sdcMicro's indivRisk.  Class A: one row of weight 10 (p = 0.1); class B:
-- two rows of weight 5 (p = 0.2); class C: three rows of weight 2 (p = 0.5).
CREATE TABLE survey (region text, sex text, weight numeric);
INSERT INTO survey VALUES ('A', 'F', 10), ('B', 'M', 5), ('B', 'M', 5), ('C', 'F', 2), ('C', 'F', 2), ('C', 'F', 2);
-- A: 0.1/0.9 ln 10 = 0.255843; B: 0.25 - 0.0625 ln 5 = 0.149410;
-- C: 0.5 / (3 - 0.5) = 0.2 (approx), ln 2 - 1/2 = 0.193147 (exact)
SELECT class, rows, estimated_population, round(individual_risk::numeric, 6) AS individual_risk
FROM weighted_risk('survey', ARRAY['region', 'sex'], 'weight') ORDER BY class;
SELECT class, round(individual_risk::numeric, 6) AS exact_risk
FROM weighted_risk('survey', ARRAY['region', 'sex'], 'weight', 'exact') ORDER BY class;
-- expected re-identifications 0.255843 + 2 x 0.149410 + 3 x 0.2 = 1.154663
SELECT rows, classes, singletons, estimated_population,
	   round(expected_reidentifications::numeric, 6) AS expected_reidentifications,
	   round(reidentification_rate::numeric, 6) AS reidentification_rate,
	   round(max_individual_risk::numeric, 6) AS max_individual_risk
FROM weighted_risk_summary('survey', ARRAY['region', 'sex'], 'weight');
-- without weights the table is its own population: risk 1/f_k
SELECT class, round(individual_risk::numeric, 6) FROM weighted_risk('survey', ARRAY['region'], NULL) ORDER BY class;
SELECT round(individual_risk(1, 10)::numeric, 6), round(individual_risk(2, 10)::numeric, 6),
	   round(individual_risk(3, 6)::numeric, 6), round(individual_risk(3, 6, 'exact')::numeric, 6),
	   individual_risk(4, 4);
-- identifiers are quoted: odd table and column names, another schema
CREATE SCHEMA "Odd Schema";
CREATE TABLE "Odd Schema"."Release ""2024""" ("Zip Code" text, "age; DROP TABLE census" int);
INSERT INTO "Odd Schema"."Release ""2024""" VALUES ('85535', 79);
CREATE TABLE "Odd Schema"."Census" ("ZIP" text, "Age" int, "Head Count" int);
INSERT INTO "Odd Schema"."Census" VALUES ('85535', 79, 1), ('85535', 79, 2);
SELECT * FROM kmap_count('"Odd Schema"."Release ""2024"""', '"Odd Schema"."Census"',
						 ARRAY['Zip Code', 'age; DROP TABLE census'], 'Head Count', ARRAY['ZIP', 'Age']);
SELECT count(*) FROM census;
-- Errors
SELECT * FROM kmap_count('study', 'census', ARRAY['zip', 'agee']);
SELECT * FROM kmap_count('study', 'residents', ARRAY['zip', 'age']);
SELECT * FROM kmap_count('study', 'census', ARRAY['zip', 'age'], 'zip');
SELECT * FROM kmap_count('study', 'census', ARRAY['zip', 'age'], population_qid => ARRAY['zip']);
SELECT * FROM kmap_count('study', 'census', ARRAY['zip', 'zip']);
SELECT * FROM kmap_count('study', 'census', ARRAY[NULL, 'age']);
SELECT * FROM kmap_count('study', 'census', '{}');
CREATE TABLE census_text_age (zip text, age text, people integer);
SELECT * FROM kmap_count('study', 'census_text_age', ARRAY['zip', 'age']);
INSERT INTO census VALUES ('99999', 1, -3);
SELECT * FROM kmap_count('study', 'census', ARRAY['zip', 'age'], 'people');
UPDATE census SET people = NULL WHERE zip = '99999';
SELECT * FROM kmap_count('study', 'census', ARRAY['zip', 'age'], 'people');
-- the grouped scans (a distributed table's) check every class's weights too,
-- and give the same counts
SET qidrisk.kmap_population_scan = grouped;
SELECT * FROM kmap_count('study', 'census', ARRAY['zip', 'age'], 'people');
UPDATE census SET people = -3 WHERE zip = '99999';
SELECT * FROM kmap_count('study', 'census', ARRAY['zip', 'age'], 'people');
DELETE FROM census WHERE zip = '99999';
SELECT * FROM kmap_count('study', 'census', ARRAY['zip', 'age'], 'people') ORDER BY class;
RESET qidrisk.kmap_population_scan;
SELECT * FROM kmap_count('study', 'census', ARRAY['zip', 'age'], 'people') ORDER BY class;
SET qidrisk.kmap_population_scan = sometimes;
-- the key filter the grouped scan sends to the shards: certainly-not answers only
SELECT qidrisk_internal.qidrisk_kmap_key_filter('\x00'::bytea, qid_key(1));
SELECT qidrisk_internal.qidrisk_kmap_key_filter(('\x03' || repeat('00', 16) || repeat('00', 64))::bytea, qid_key(1));
SELECT kmap_rows_below('study', 'census', ARRAY['zip', 'age'], -1);
SELECT individual_risk(0, 3);
SELECT individual_risk(1, 'NaN');
SELECT individual_risk(1, 3, 'montecarlo');
SET qidrisk.max_state_memory = '64kB';
SELECT count(*) FROM kmap_count('residents', 'census', ARRAY['postcode', 'years'], NULL, ARRAY['zip', 'age']);
CREATE TABLE many AS SELECT i FROM generate_series(1, 5000) i;
SELECT count(*) FROM kmap_count('many', 'many', ARRAY['i']);
RESET qidrisk.max_state_memory;
SELECT count(*) FROM kmap_count('many', 'many', ARRAY['i']);
