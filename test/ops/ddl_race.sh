#!/bin/bash
# Operations, as TAP (run by test/suites.sh through prove): table-reading
# functions under concurrent DDL.  One session changes a table over and over
# (DROP + ADD of a column with another type, ALTER COLUMN TYPE, RENAME of two
# columns into each other's place, DROP TABLE + CREATE), each change committed
# after a short pause that holds its lock, while a second session calls every
# C table reader (and the SQL ones built on them) on that table.  Every change
# keeps the table's content (the same values, as text or as integers), so
# every call must either fail with a clean error or return the answer it gave
# before any change; the server must never restart.
# Uses the server in PGHOST/PGPORT/PGUSER (a superuser).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"
if [ -n "${PG_CONFIG:-}" ]; then
	PATH="$("$PG_CONFIG" --bindir):$PATH"
fi
DB=qidrisk_ops_race
ROUNDS=${DDL_RACE_ROUNDS:-240}
tmp=$(mktemp -d)

q() { psql -X -qAt -v ON_ERROR_STOP=1 -d $DB "$@"; }
cleanup() {
	psql -X -qAt -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1
	rm -rf "$tmp"
}
cleanup
tmp=$(mktemp -d)
trap cleanup EXIT

echo "1..7"
psql -X -qAt -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE $DB" >/dev/null
start=$(q -c "SELECT pg_postmaster_start_time()")

# c and e hold the same values; the DDL session swaps their types and names
q >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION qidrisk;
CREATE TABLE rt_master AS
SELECT i AS id, i % 7 AS a, (i % 5)::text AS b, (i % 11)::text AS c, i % 11 AS e,
	   (1 + i % 3)::float8 AS w
FROM generate_series(1, 300) i;
UPDATE rt_master SET c = (1000 + id)::text, e = 1000 + id WHERE id % 37 = 0;
CREATE TABLE rt AS SELECT * FROM rt_master;
-- the calls, each reduced to text that does not depend on the column's type
CREATE TABLE calls (id serial, label text, stmt text, want text);
INSERT INTO calls (label, stmt) VALUES
 ('qar_thetas', $$SELECT string_agg(classes || '/' || singletons, ',' ORDER BY ord) FROM qar_thetas('rt', ARRAY['c', 'a', 'b'], 2) WITH ORDINALITY AS t(c, th, classes, singletons, ord)$$),
 ('qar_record_scores', $$SELECT string_agg(round(u_plus::numeric, 9)::text, ',' ORDER BY row_key::int) FROM qar_record_scores('rt', ARRAY['c', 'a', 'b'], 2, 'id')$$),
 ('qar_greedy_removal', $$SELECT string_agg(row_key, ',' ORDER BY step) FROM qar_greedy_removal('rt', ARRAY['c', 'a'], 2, 'id', 3)$$),
 ('kmap_count', $$SELECT string_agg(release_rows || ':' || population_rows, ',' ORDER BY release_rows, population_rows) FROM kmap_count('rt', 'rt', ARRAY['c', 'a'])$$),
 ('kmap_count population', $$SELECT string_agg(release_rows || ':' || population_rows, ',' ORDER BY release_rows, population_rows) FROM kmap_count('rt_master', 'rt', ARRAY['e', 'a'], 'w', ARRAY['e', 'a'])$$),
 ('kmap_row_counts', $$SELECT string_agg(release_rows || ':' || population_rows, ',' ORDER BY release_row ->> 'id', release_rows) FROM kmap_row_counts('rt', 'rt', ARRAY['c', 'b'])$$),
 ('qid_search', $$SELECT string_agg(array_to_string(columns, '+') || '=' || singletons || '/' || classes, ',' ORDER BY array_to_string(columns, '+')) FROM qid_search('rt', ARRAY['c', 'a', 'b'])$$),
 ('qid_search drop_incomplete', $$SELECT string_agg(singletons || '/' || rows_removed, ',' ORDER BY array_to_string(columns, '+')) FROM qid_search('rt', ARRAY['c', 'b'], drop_incomplete => true)$$),
 ('weighted_risk_summary', $$SELECT row(rows, classes, singletons, estimated_population, round(expected_reidentifications::numeric, 9))::text FROM weighted_risk_summary('rt', ARRAY['c', 'a'], 'w')$$),
 ('qid_check', $$SELECT string_agg(rule || '=' || round(measured::numeric, 9), ',' ORDER BY rule) FROM qid_check('rt', ARRAY['c', 'b'], '{"min_k": 1, "max_singleton_share": 1}')$$),
 ('column_distinct_counts', $$SELECT string_agg(column_name || '=' || distinct_values, ',') FROM column_distinct_counts('rt', ARRAY['c', 'a'])$$),
 ('qid_generalize', $$SELECT string_agg(name || '=' || singletons || '/' || rows_modified, ',' ORDER BY name) FROM qid_generalize('rt', ARRAY['c', 'a'], '{"name": "x", "columns": {"a": {"constant": "*"}}}')$$),
 ('qid_lattice', $$SELECT string_agg(array_to_string(levels, '+') || '=' || anonymous || '/' || rows_suppressed, ',' ORDER BY levels) FROM qid_lattice('rt', ARRAY['c', 'a'], '{"a": {"widths": [2, 4]}}', 2, 0.2)$$),
 ('qid_lattice k_map population', $$SELECT string_agg(array_to_string(levels, '+') || '=' || anonymous || '/' || rows_suppressed, ',' ORDER BY levels) FROM qid_lattice('rt', ARRAY['c', 'a'], '{"a": {"widths": [2, 4]}}', 1, 0.2, privacy => '{"k_map": {"k": 2, "population": "rt_master"}}')$$);
CREATE TABLE outcomes (call integer, round integer, result text, state text, message text);
SQL
# the answers before any change
q >/dev/null <<'SQL'
DO $$
DECLARE
	c record;
	r text;
BEGIN
	FOR c IN SELECT * FROM calls ORDER BY id LOOP
		EXECUTE c.stmt INTO r;
		UPDATE calls SET want = r WHERE id = c.id;
	END LOOP;
END
$$;
SQL
ok "$(q -c "SELECT count(*) FROM calls WHERE want IS NOT NULL")" "$(q -c "SELECT count(*) FROM calls")" \
	"every call answers before the DDL starts"

# a witness session: a crash of any backend would end it too
PGAPPNAME=qidrisk_ddl_witness psql -X -qAt -d $DB -c "SELECT pg_sleep(600)" >/dev/null 2>&1 &
witness=$!

# the DDL session: ROUNDS committed changes, each holding its lock for a moment
{
	echo "SET client_min_messages = warning;"
	for i in $(seq 1 "$ROUNDS"); do
		case $((i % 6)) in
		0) echo "BEGIN; ALTER TABLE rt DROP COLUMN c; ALTER TABLE rt ADD COLUMN c integer DEFAULT 123456789; UPDATE rt SET c = e;" ;;
		1) echo "BEGIN; ALTER TABLE rt ALTER COLUMN c TYPE text USING c::text;" ;;
		2) echo "BEGIN; ALTER TABLE rt ALTER COLUMN c TYPE bigint USING c::bigint;" ;;
		3) echo "BEGIN; ALTER TABLE rt RENAME COLUMN c TO tmp; ALTER TABLE rt RENAME COLUMN e TO c; ALTER TABLE rt RENAME COLUMN tmp TO e;" ;;
		4) echo "BEGIN; ALTER TABLE rt DROP COLUMN c; ALTER TABLE rt ADD COLUMN c text DEFAULT 'x'; UPDATE rt SET c = e::text;" ;;
		5) echo "BEGIN; DROP TABLE rt; CREATE TABLE rt AS SELECT * FROM rt_master;" ;;
		esac
		echo "SELECT pg_sleep(0.0$((i % 4 + 1))); COMMIT;"
	done
} > "$tmp/ddl.sql"
PGAPPNAME=qidrisk_ddl_race psql -X -qAt -d $DB -f "$tmp/ddl.sql" > "$tmp/ddl.out" 2>&1 &
ddl=$!
sleep 0.5

# the reading session: calls round after round until the DDL is done, each
# call committed on its own so that it never holds a lock across a change
q > "$tmp/calls.out" 2>&1 <<SQL &
SET client_min_messages = warning;
DO \$\$
DECLARE
	c record;
	r text;
	round integer := 0;
BEGIN
	LOOP
		round := round + 1;
		FOR c IN SELECT * FROM calls ORDER BY id LOOP
			BEGIN
				EXECUTE c.stmt INTO r;
				INSERT INTO outcomes VALUES (c.id, round, r, NULL, NULL);
			EXCEPTION WHEN OTHERS THEN
				INSERT INTO outcomes VALUES (c.id, round, NULL, SQLSTATE, SQLERRM);
			END;
			COMMIT;
		END LOOP;
		EXIT WHEN round >= 2 AND NOT EXISTS (SELECT FROM pg_stat_activity
											WHERE application_name = 'qidrisk_ddl_race');
		EXIT WHEN round >= 400;
	END LOOP;
END
\$\$;
SQL
reader=$!
wait $ddl
ddl_status=$?
wait $reader
reader_status=$?

# after a crash the server needs a moment before it answers again
for _ in 1 2 3 4 5 6 7 8 9 10; do
	pg_isready -q -d $DB && break
	sleep 1
done
ok "$(psql -X -qAt -d $DB -c "SELECT pg_postmaster_start_time() = '$start'" 2>&1)" "t" \
	"the server never restarted (pg_postmaster_start_time unchanged)"
ok "$(psql -X -qAt -d $DB -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'qidrisk_ddl_witness'" 2>&1)" "t" \
	"no backend crashed (a session open throughout survived)"
wait $witness 2>/dev/null
ok "$ddl_status/$(grep -c -i 'error\|fatal\|terminat' "$tmp/ddl.out")" "0/0" \
	"the DDL session ran its $ROUNDS changes $(grep -i -m1 'error\|fatal\|terminat' "$tmp/ddl.out")"
ok "$reader_status" "0" "the reading session ran to its end $(head -c 300 "$tmp/calls.out")"
ok "$(q -c "SELECT string_agg(DISTINCT c.label || ': ' || o.state || ' ' || o.message, '; ')
			FROM outcomes o JOIN calls c ON c.id = o.call
			WHERE o.result IS NULL AND (o.state IS NULL OR o.state LIKE 'XX%' OR o.state LIKE '58%')")" "" \
	"every failed call failed with a clean error (no XX000, no internal error)"
ok "$(q -c "SELECT string_agg(DISTINCT c.label || ' round ' || o.round || ': ' || left(o.result, 60) || ' <> ' || left(c.want, 60), '; ')
			FROM outcomes o JOIN calls c ON c.id = o.call
			WHERE o.state IS NULL AND o.result IS DISTINCT FROM c.want")" "" \
	"every call that succeeded returned the answer of the unchanged table"
echo "# $(q -c "SELECT count(*) || ' calls, ' || count(*) FILTER (WHERE state IS NULL) || ' answered, errors: ' || coalesce((SELECT string_agg(s || ' x' || k, ', ') FROM (SELECT state AS s, count(*) AS k FROM outcomes WHERE state IS NOT NULL GROUP BY state ORDER BY state) e), 'none') FROM outcomes" 2>&1)"
