-- trusted = true: a database owner without superuser installs qidrisk, and a
-- role with nothing but SELECT on a table uses it.  Roles are taken with SET
-- SESSION AUTHORIZATION (privileges as if they had logged in), so the test
-- needs no passwords.
\set SHOW_CONTEXT never
\set regress_db :DBNAME
CREATE ROLE qidrisk_r_owner;
CREATE ROLE qidrisk_r_steward;
CREATE DATABASE qidrisk_r_trusted OWNER qidrisk_r_owner;
\c qidrisk_r_trusted
SET SESSION AUTHORIZATION qidrisk_r_owner;
SELECT current_user, rolsuper, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = current_user;
CREATE EXTENSION qidrisk;
SELECT extname, extowner::regrole, extversion FROM pg_extension WHERE extname = 'qidrisk';
-- the objects belong to the bootstrap superuser, the extension to its installer
SELECT count(*) FILTER (WHERE p.proowner = 10) = count(*) AS all_owned_by_bootstrap, count(*) > 0 AS has_functions
FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'qidrisk';
CREATE TABLE licences (birth_year integer, sex text, zip text);
INSERT INTO licences SELECT 1950 + i % 20, CASE WHEN i % 2 = 0 THEN 'F' ELSE 'M' END, (1000 + i % 3)::text
FROM generate_series(1, 300) i;
INSERT INTO licences VALUES (1900, 'F', '9999');
SELECT singleton_count(birth_year, sex, zip), k_anonymity(birth_year, sex) FROM licences;
SELECT rule, measured, passed FROM qid_check('licences', ARRAY['birth_year', 'sex', 'zip'], '{"min_k": 2}', record_history => true);
-- a steward with SELECT only
GRANT SELECT ON licences TO qidrisk_r_steward;
SET SESSION AUTHORIZATION qidrisk_r_steward;
SELECT class_count(zip) FROM licences;
CALL qid_assert('licences', ARRAY['sex'], '{"min_k": 2}', record_history => true);
CALL qid_assert('licences', ARRAY['birth_year', 'sex', 'zip'], '{"min_k": 2}', record_history => true);
-- each role sees its own history
SELECT checked_by, qid, passed FROM qid_check_history ORDER BY checked_at;
-- and cannot write history at all (only qid_check does), nor change it
INSERT INTO qidrisk_internal.check_history (checked_by, relation, qid, policy, results, passed)
VALUES ('qidrisk_r_owner', 'licences', '{sex}', '{"min_k": 2}', '[]', true);
UPDATE qidrisk_internal.check_history SET passed = true;
-- the role that installed the extension reads every row (it no longer owns the table)
SET SESSION AUTHORIZATION qidrisk_r_owner;
SELECT checked_by, qid, passed FROM qid_check_history ORDER BY checked_at;
-- without SELECT: permission denied
REVOKE SELECT ON licences FROM qidrisk_r_steward;
SET SESSION AUTHORIZATION qidrisk_r_steward;
SELECT class_count(zip) FROM licences;
SELECT * FROM qid_check('licences', ARRAY['sex'], '{"min_k": 2}');
CALL qid_assert('licences', ARRAY['sex'], '{"min_k": 2}');
SET SESSION AUTHORIZATION qidrisk_r_owner;
-- the owner can also remove the extension again
DROP EXTENSION qidrisk;
\c :regress_db
DROP DATABASE qidrisk_r_trusted;
DROP ROLE qidrisk_r_owner;
DROP ROLE qidrisk_r_steward;
