-- Load generalization hierarchies for eight quasi-identifiers of UCI Adult
-- (data/adult/hierarchies, written for qidrisk) into tables adult_hierarchy_*.
-- Each file has ARX's layout: one row per original value, then its levels
-- 1..n, ';'-separated, no header.  Levels per column, the original included:
-- age 5, workclass 3, education 4, marital_status 3, occupation 2, race 2,
-- sex 2, native_country 3, so their full-domain lattice has 4,320 nodes.
-- Run with psql from the repository's top folder (after data/load_adult.sql).
CREATE TABLE adult_hierarchy_age (value text, level1 text, level2 text, level3 text, level4 text);
CREATE TABLE adult_hierarchy_workclass (value text, level1 text, level2 text);
CREATE TABLE adult_hierarchy_education (value text, level1 text, level2 text, level3 text);
CREATE TABLE adult_hierarchy_marital_status (value text, level1 text, level2 text);
CREATE TABLE adult_hierarchy_occupation (value text, level1 text);
CREATE TABLE adult_hierarchy_race (value text, level1 text);
CREATE TABLE adult_hierarchy_sex (value text, level1 text);
CREATE TABLE adult_hierarchy_native_country (value text, level1 text, level2 text);
\copy adult_hierarchy_age FROM 'data/adult/hierarchies/age.csv' WITH (FORMAT csv, DELIMITER ';')
\copy adult_hierarchy_workclass FROM 'data/adult/hierarchies/workclass.csv' WITH (FORMAT csv, DELIMITER ';')
\copy adult_hierarchy_education FROM 'data/adult/hierarchies/education.csv' WITH (FORMAT csv, DELIMITER ';')
\copy adult_hierarchy_marital_status FROM 'data/adult/hierarchies/marital_status.csv' WITH (FORMAT csv, DELIMITER ';')
\copy adult_hierarchy_occupation FROM 'data/adult/hierarchies/occupation.csv' WITH (FORMAT csv, DELIMITER ';')
\copy adult_hierarchy_race FROM 'data/adult/hierarchies/race.csv' WITH (FORMAT csv, DELIMITER ';')
\copy adult_hierarchy_sex FROM 'data/adult/hierarchies/sex.csv' WITH (FORMAT csv, DELIMITER ';')
\copy adult_hierarchy_native_country FROM 'data/adult/hierarchies/native_country.csv' WITH (FORMAT csv, DELIMITER ';')
