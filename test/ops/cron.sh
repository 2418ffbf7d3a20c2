#!/bin/bash
# Operations, as TAP: the pg_cron recipe of docs/checks.md, run for real.  A
# cluster of its own, initialised with Debian's default authentication (peer on
# the socket, scram-sha-256 over TCP) and configured as the page says; a
# non-superuser steward schedules a nightly check, a passing and a failing
# every-minute qid_assert, and one with a mistyped policy; after one run of
# each, pg_cron's run details and both history rows are there, and the
# mistyped policy's error shows no internals.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"
if [ -n "${PG_CONFIG:-}" ]; then
	PATH="$("$PG_CONFIG" --bindir):$PATH"
fi
bindir=$(pg_config --bindir)
sharedir=$(pg_config --sharedir)
# the cluster is reached over its own socket as the operating system's postgres user
unset PGHOST PGPORT PGUSER PGPASSWORD PGDATABASE PGSERVICE PGSYSCONFDIR
if ! [ -f "$sharedir/extension/pg_cron.control" ]; then
	echo "1..1"
	echo "not ok 1 - pg_cron is installed for $(pg_config --version) (test/setup.sh installs it)"
	exit 0
fi
tmp=$(mktemp -d /tmp/qidrisk-cron.XXXXXX)
chown postgres "$tmp"
port=$((20000 + RANDOM % 10000))
as_postgres() { su postgres -s /bin/bash -c "$1"; }
cleanup() {
	as_postgres "'$bindir/pg_ctl' -D '$tmp/data' -m immediate stop" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
echo "1..9"
as_postgres "'$bindir/initdb' -D '$tmp/data' -U postgres --auth-local=peer --auth-host=scram-sha-256" >/dev/null
# the settings docs/checks.md gives, nothing more
cat >> "$tmp/data/postgresql.conf" <<CONF
shared_preload_libraries = 'pg_cron'
cron.database_name = 'publications'
cron.use_background_workers = on
CONF
as_postgres "'$bindir/pg_ctl' -D '$tmp/data' -l '$tmp/log' -w -o \"-p $port -k $tmp -c listen_addresses=localhost\" start" >/dev/null
# psql as postgres over the socket (peer authentication)
sq() { su postgres -s /bin/bash -c "psql -X -qAt -v ON_ERROR_STOP=1 -h $tmp -p $port -d $1"; }
echo 'CREATE ROLE steward LOGIN; CREATE DATABASE publications;' | sq postgres >/dev/null
sq publications >/dev/null <<'SQL'
CREATE EXTENSION pg_cron;
CREATE EXTENSION qidrisk;
GRANT USAGE ON SCHEMA cron TO steward;
CREATE TABLE licences AS
SELECT 1950 + i % 40 AS birth_year, CASE WHEN i % 2 = 0 THEN 'F' ELSE 'M' END AS sex FROM generate_series(1, 800) i;
INSERT INTO licences VALUES (1920, 'F');
GRANT SELECT ON licences TO steward;
SET ROLE steward;
SELECT cron.schedule('licences-sex', '* * * * *',
	$$CALL qid_assert('public.licences', ARRAY['sex'], '{"min_k": 5}', record_history => true)$$);
SELECT cron.schedule('licences-publication-check', '0 2 * * *',
	$$CALL qid_assert('public.licences', ARRAY['birth_year', 'sex'], '{"min_k": 5}', record_history => true)$$);
SELECT cron.schedule('licences-check-now', '* * * * *',
	$$CALL qid_assert('public.licences', ARRAY['birth_year', 'sex'], '{"min_k": 5}', record_history => true)$$);
SELECT cron.schedule('licences-typo', '* * * * *',
	$$CALL qid_assert('public.licences', ARRAY['sex'], '{"min_kk": 5}', record_history => true)$$);
SQL
ok "$(echo "SELECT string_agg(DISTINCT type || ' ' || auth_method, ', ') FROM pg_hba_file_rules WHERE type IN ('local', 'host')" | sq postgres)" \
	"host scram-sha-256, local peer" "the cluster has Debian's default authentication"
# jobs start at the next full minute; wait for one finished run of each
done_runs=0
for _ in $(seq 1 100); do
	done_runs=$(echo "SELECT count(DISTINCT jobid) FROM cron.job_run_details WHERE status IN ('succeeded', 'failed')" | sq publications)
	[ "$done_runs" = 3 ] && break
	sleep 1
done
ok "$done_runs" "3" "the three jobs ran within 100 s"
ok "$(echo "SELECT d.status FROM cron.job_run_details d JOIN cron.job j USING (jobid) WHERE j.jobname = 'licences-sex' ORDER BY d.start_time LIMIT 1" | sq publications)" \
	"succeeded" "the passing check's job succeeded"
ok "$(echo "SELECT d.status || ': ' || split_part(d.return_message, E'\n', 1) FROM cron.job_run_details d JOIN cron.job j USING (jobid) WHERE j.jobname = 'licences-check-now' ORDER BY d.start_time LIMIT 1" | sq publications)" \
	"failed: ERROR: qidrisk policy check failed for public.licences: min_k" "the failing check's job failed with the QR001 message"
ok "$(echo "SELECT d.status || ': ' || replace(rtrim(d.return_message, E'\n'), E'\n', ' | ') FROM cron.job_run_details d JOIN cron.job j USING (jobid) WHERE j.jobname = 'licences-typo' ORDER BY d.start_time LIMIT 1" | sq publications)" \
	'failed: ERROR: unknown qid_check policy rule "min_kk" | HINT: Known rules: min_k, max_singleton_share, max_rows_below_k, max_birthday_uniqueness, min_kmap, max_qar_risk, min_l, max_t.' \
	"the mistyped policy's job failed with its message and hint, and no context of qidrisk's internals"
ok "$(echo "SELECT string_agg(checked_by || ' ' || array_to_string(qid, ',') || ' ' || passed, '; ' ORDER BY passed DESC) FROM (SELECT DISTINCT ON (qid) * FROM qid_check_history ORDER BY qid, checked_at) h" | sq publications)" \
	"steward sex true; steward birth_year,sex false" "both runs left a history row in the steward's name, the failing one too"
ok "$(echo "SELECT results -> 0 ->> 'measured' FROM qid_check_history WHERE NOT passed ORDER BY checked_at LIMIT 1" | sq publications)" \
	"1" "the failing run's row records the measured k-anonymity"
ok "$(echo "SELECT count(*) FROM cron.job_run_details WHERE status NOT IN ('succeeded', 'failed', 'running', 'starting')" | sq publications)" \
	"0" "no job run is stuck in connecting"
ok "$(printf '%s\n' "SET ROLE steward;" "SELECT cron.unschedule('licences-check-now');" | sq publications)|$(echo "SELECT string_agg(jobname || ' ' || schedule, ',' ORDER BY jobname) FROM cron.job WHERE jobname LIKE 'licences-%check%'" | sq publications)" \
	"t|licences-publication-check 0 2 * * *" "the steward removes the check-now job; the nightly one stays scheduled"
