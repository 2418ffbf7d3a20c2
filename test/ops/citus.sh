#!/bin/bash
# Operations, as TAP: qidrisk on a real Citus cluster (docs/distributed.md).
# Builds Citus once per PostgreSQL version and caches it (test/citus.sh:
# 13.2.2 for 15, 14.0.1 for 17; on 18 it skips unless QIDRISK_CITUS_ON_18=1),
# starts a coordinator and two workers of its own (local sockets, trust,
# fsync off), installs qidrisk from this tree, and runs every documented
# aggregate form and table-level function on a 200,000-row table distributed
# over 32 shards and on a reference copy,
# asserting exact equality with a local copy; checks the plan shapes the page
# describes (pushdown, row-gather, the co-location recipe and
# class_size_profile split over the shards of a table keyed by qid_key), and
# bounds the bytes the coordinator receives for the k-map and weighted-risk
# functions (Citus's "Tuple data received from nodes", logged by auto_explain)
# and for class_size_profile; measures what a constant argument adds to a
# row-gather.
# Skips, saying why, when the Citus sources are absent (QIDRISK_CITUS_SOURCES,
# see test/citus.sh) or no release supports this PostgreSQL.
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ -n "${PG_CONFIG:-}" ]; then
	PATH="$("$PG_CONFIG" --bindir):$PATH"
fi
export PG_CONFIG=${PG_CONFIG:-$(command -v pg_config)}
. test/citus.sh
unset PGHOST PGPORT PGUSER PGPASSWORD PGDATABASE PGSERVICE PGSYSCONFDIR

if [ "$(id -u)" -ne 0 ]; then
	echo "1..0 # SKIP needs root (installs Citus, runs servers as postgres)"
	exit 0
fi
if ! citus_sources; then
	echo "1..0 # SKIP $CITUS_MISSING"
	exit 0
fi
started=$(date +%s)
if ! citus_install >/tmp/qidrisk-citus-install.$$ 2>&1; then
	cat /tmp/qidrisk-citus-install.$$ | sed 's/^/# /'
	rm -f /tmp/qidrisk-citus-install.$$
	echo "1..1"
	echo "not ok 1 - Citus $CITUS_VERSION builds and installs for $("$PG_CONFIG" --version)"
	exit 0
fi
sed 's/^/# /' /tmp/qidrisk-citus-install.$$
rm -f /tmp/qidrisk-citus-install.$$
echo "# Citus $CITUS_VERSION ready for $("$PG_CONFIG" --version) in $(($(date +%s) - started)) s"
# qidrisk as built from this tree
make -s PG_CONFIG="$PG_CONFIG" >/dev/null && make -s install PG_CONFIG="$PG_CONFIG" >/dev/null

tmp=$(mktemp -d /tmp/qidrisk-citus.XXXXXX)
port=$((20000 + RANDOM % 10000))
cleanup() {
	citus_stop "$tmp"
	rm -rf "$tmp"
}
trap cleanup EXIT
if ! citus_cluster "$tmp" "$port"; then
	echo "1..1"
	echo "not ok 1 - a coordinator and two workers start"
	tail -5 "$tmp"/n*.log | sed 's/^/# /'
	exit 0
fi

. test/tap.sh
# like ok, on a condition
check() {
	n=$((n + 1))
	if eval "$1"; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		echo "#   failed: $1"
	fi
}
# psql on node PORT, database qc; q: on the coordinator
on() {
	local p=$1
	shift
	psql -X -qAt -v ON_ERROR_STOP=1 -h "$tmp" -p "$p" -U postgres -d qc "$@"
}
q() { on "$port" "$@"; }

for p in "$port" $((port + 1)) $((port + 2)); do
	psql -X -qAt -h "$tmp" -p "$p" -U postgres -d postgres -c "CREATE DATABASE qc" >/dev/null
	on "$p" -c "SET client_min_messages = warning" -c "CREATE EXTENSION citus"
done
q >/dev/null <<SQL
SELECT citus_set_coordinator_host('$tmp', $port);
SELECT citus_add_node('$tmp', $((port + 1)));
SELECT citus_add_node('$tmp', $((port + 2)));
SQL

# The tables: every value a pure function of the row number (as bench/population.sql)
q >/dev/null <<'SQL'
SET client_min_messages = error;
CREATE EXTENSION qidrisk;
CREATE FUNCTION u(i bigint, k bigint) RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT (hashint8extended(i, k) & 9007199254740991)::double precision / 9007199254740992 $$;
-- birth year uniform over 90 years, sex, ZIP by a power law over 3,000 codes,
-- education with 3% NULLs, an integer weight 1..4; region 0..96 distributes
CREATE TABLE pop_local AS
SELECT i AS id, (i % 97)::int AS region,
	   1925 + floor(u(i, 1) * 90)::int AS birth_year,
	   CASE WHEN u(i, 2) < 0.505 THEN 'F' ELSE 'M' END AS sex,
	   (10000 + (floor((1 + u(i, 3) * (3001 ^ 0.2 - 1)) ^ 5)::bigint * 7919) % 90000)::text AS zip,
	   CASE WHEN u(i, 4) < 0.03 THEN NULL ELSE (ARRAY['HS', 'College', 'Bachelors', 'Masters', 'Doctorate'])[1 + floor(u(i, 4) ^ 2 * 5)::int] END AS education,
	   1 + floor(u(i, 5) * 4)::int AS weight
FROM generate_series(1, 200000) i;
CREATE TABLE pop_dist (LIKE pop_local);
SELECT create_distributed_table('pop_dist', 'region', shard_count => 32);
INSERT INTO pop_dist SELECT * FROM pop_local;
CREATE TABLE pop_ref (LIKE pop_local);
SELECT create_reference_table('pop_ref');
INSERT INTO pop_ref SELECT * FROM pop_local;
-- the release: 5,000 other draws of the same law
CREATE TABLE rel_local AS
SELECT i AS id, (i % 97)::int AS region,
	   1925 + floor(u(i, 1) * 90)::int AS birth_year,
	   CASE WHEN u(i, 2) < 0.505 THEN 'F' ELSE 'M' END AS sex,
	   (10000 + (floor((1 + u(i, 3) * (3001 ^ 0.2 - 1)) ^ 5)::bigint * 7919) % 90000)::text AS zip,
	   CASE WHEN u(i, 4) < 0.03 THEN NULL ELSE (ARRAY['HS', 'College', 'Bachelors', 'Masters', 'Doctorate'])[1 + floor(u(i, 4) ^ 2 * 5)::int] END AS education
FROM generate_series(1000000001, 1000005000) i;
CREATE TABLE rel_dist (LIKE rel_local);
SELECT create_distributed_table('rel_dist', 'region', colocate_with => 'pop_dist');
INSERT INTO rel_dist SELECT * FROM rel_local;
-- an aggregated census (a count column), distributed by ZIP
CREATE TABLE census_local AS
SELECT birth_year, sex, zip, count(*)::int AS people FROM pop_local GROUP BY 1, 2, 3;
CREATE TABLE census_dist (LIKE census_local);
SELECT create_distributed_table('census_dist', 'zip', shard_count => 32);
INSERT INTO census_dist SELECT * FROM census_local;
-- a coarser release, and the population generalized alike in views
CREATE TABLE rel_decade AS SELECT birth_year / 10 * 10 AS decade, sex, zip FROM rel_local;
CREATE VIEW pop_local_decade AS SELECT birth_year / 10 * 10 AS decade, sex, zip AS postcode FROM pop_local;
CREATE VIEW pop_dist_decade AS SELECT birth_year / 10 * 10 AS decade, sex, zip AS postcode FROM pop_dist;
ANALYZE;
SQL
ok "$(on $((port + 1)) -c "SELECT extversion FROM pg_extension WHERE extname = 'qidrisk'")" \
	"$(q -c "SELECT extversion FROM pg_extension WHERE extname = 'qidrisk'")" \
	"CREATE EXTENSION qidrisk on the coordinator created it on the workers"
ok "$(q -c "SELECT count(*), count(DISTINCT nodeport) FROM pg_dist_shard_placement p JOIN pg_dist_shard s USING (shardid) WHERE logicalrelid = 'pop_dist'::regclass")" \
	"32|2" "pop_dist has 32 shards on the two workers"

# same NAME SQL: SQL with :T replaced by pop_dist, then pop_ref, gives what it gives with pop_local
same() {
	local want got t
	want=$(q -c "SET qidrisk.sample_seed = 7" -c "${2//:T/pop_local}" 2>&1)
	want=${want:-(the local query returned nothing)}
	for t in pop_dist pop_ref; do
		got=$(q -c "SET qidrisk.sample_seed = 7" -c "${2//:T/$t}" 2>&1)
		ok "$got" "$want" "$1: ${t#pop_} = local"
	done
}
QID="birth_year, sex, zip"
QIDN="birth_year, sex, education"
KEY="qid_key(birth_year, sex, zip)"
KEYN="qid_key(birth_year, sex, education)"
freq() { # the frequency aggregates over QID $1 (VARIADIC) or key $2
	echo "singleton_count($1), class_count($1), k_anonymity($1), rows_below_k(5, $1), class_profile($1)::text,
	singleton_count_key($2), class_count_key($2), k_anonymity_key($2), rows_below_k_key(5, $2), class_profile_key($2)::text"
}
approx() {
	echo "approx_class_count($1), approx_singleton_count($1), approx_class_profile(4096, $1)::text,
	approx_class_count_key($2), approx_singleton_count_key($2), approx_class_profile_key(4096, $2)::text"
}
same "ungrouped frequency aggregates, VARIADIC and key forms" "SELECT $(freq "$QID" "$KEY") FROM :T"
same "ungrouped, a QID with NULLs" "SELECT $(freq "$QIDN" "$KEYN") FROM :T"
same "grouped by the distribution column" \
	"SELECT md5(string_agg(x::text, ',' ORDER BY region)) FROM (SELECT region, $(freq "$QID" "$KEY") FROM :T GROUP BY region) x"
same "grouped by another column" \
	"SELECT string_agg(x::text, ',' ORDER BY sex) FROM (SELECT sex, $(freq "$QIDN" "$KEYN") FROM :T GROUP BY sex) x"
same "approximate aggregates (a fixed sampling key), ungrouped" "SELECT $(approx "$QID" "$KEY") FROM :T"
same "approximate aggregates, grouped by the distribution column" \
	"SELECT md5(string_agg(x::text, ',' ORDER BY region)) FROM (SELECT region, $(approx "$QID" "$KEY") FROM :T GROUP BY region) x"
same "qid_key of every row" "SELECT md5(string_agg($KEYN::text, ',' ORDER BY id)) FROM :T"
same "class_size_profile of the class sizes, and rows below 5 from it" \
	"SELECT p::text, rows_below(p, 5) FROM (SELECT class_size_profile(n) AS p FROM (SELECT count(*) AS n FROM :T GROUP BY $QIDN) s) x"

# kmap_pairs NAME SQL: SQL with :R and :P (release, population) gives on
# distributed, reference and mixed pairs what it gives on the local tables
rows_of() { echo "SELECT count(*), md5(string_agg(k::text, ',' ORDER BY k::text)) FROM ($1) k"; }
ok "$(q -c "SELECT count(*) FROM kmap_count('rel_local', 'pop_local', ARRAY['birth_year', 'sex', 'zip']) WHERE population_rows = 0")" \
	"$(q -c "SELECT count(*) FROM (SELECT DISTINCT birth_year, sex, zip FROM rel_local) r WHERE NOT EXISTS (SELECT FROM pop_local p WHERE (p.birth_year, p.sex, p.zip) = (r.birth_year, r.sex, r.zip))")" \
	"the local k-map counts classes absent from the population as 0 (the reference the others meet)"
kmap_pairs() {
	local name=$1 sql=$2 want pair rel pop got
	want=$(q -c "$(rows_of "$(r=${sql//:R/rel_local}; echo "${r//:P/pop_local}")")" 2>&1)
	want=${want:-(the local query returned nothing)}
	for pair in "rel_local pop_dist" "rel_dist pop_dist" "rel_local pop_ref" "rel_dist pop_local"; do
		rel=${pair% *}
		pop=${pair#* }
		got=$(q -c "$(rows_of "$(r=${sql//:R/$rel}; echo "${r//:P/$pop}")")" 2>&1)
		ok "$got" "$want" "$name: release ${rel#rel_}, population ${pop#pop_} = local"
	done
}
kmap_pairs "kmap_count" "SELECT * FROM kmap_count(':R', ':P', ARRAY['birth_year', 'sex', 'zip'])"
kmap_pairs "kmap_count, a QID with NULLs" "SELECT * FROM kmap_count(':R', ':P', ARRAY['birth_year', 'sex', 'education'])"
kmap_pairs "kmap_count with a weight" "SELECT * FROM kmap_count(':R', ':P', ARRAY['birth_year', 'zip'], 'weight')"
kmap_pairs "kmap_row_counts" \
	"SELECT release_row - 'region' - 'id' AS r, class, release_rows, population_rows FROM kmap_row_counts(':R', ':P', ARRAY['birth_year', 'sex', 'zip'])"
kmap_pairs "kmap_value and kmap_rows_below" \
	"SELECT kmap_value(':R', ':P', ARRAY['birth_year', 'sex', 'zip']), kmap_rows_below(':R', ':P', ARRAY['birth_year', 'sex', 'zip'], 3), kmap_rows_below(':R', ':P', ARRAY['sex', 'zip'], 40, 'weight')"
ok "$(q -c "$(rows_of "SELECT * FROM kmap_count('rel_local', 'census_dist', ARRAY['birth_year', 'sex', 'zip'], 'people')")")" \
	"$(q -c "$(rows_of "SELECT * FROM kmap_count('rel_local', 'census_local', ARRAY['birth_year', 'sex', 'zip'], 'people')")")" \
	"kmap_count against an aggregated census (a count column) distributed by ZIP = local"
ok "$(q -c "$(rows_of "SELECT * FROM kmap_count('rel_decade', 'pop_dist_decade', ARRAY['decade', 'sex', 'zip'], NULL, ARRAY['decade', 'sex', 'postcode'])")")" \
	"$(q -c "$(rows_of "SELECT * FROM kmap_count('rel_decade', 'pop_local_decade', ARRAY['decade', 'sex', 'zip'], NULL, ARRAY['decade', 'sex', 'postcode'])")")" \
	"kmap_count against a generalizing view over the distributed table (population_qid) = local"
same "weighted_risk" "$(rows_of "SELECT * FROM weighted_risk(':T', ARRAY['birth_year', 'sex', 'zip'], 'weight')")"
same "weighted_risk, exact method, no weights" "$(rows_of "SELECT * FROM weighted_risk(':T', ARRAY['sex', 'zip'], NULL, 'exact')")"
same "weighted_risk_summary" "SELECT * FROM weighted_risk_summary(':T', ARRAY['birth_year', 'sex', 'zip'], 'weight')"
same "qid_check with min_k and min_kmap" \
	"SELECT string_agg(rule || ' ' || measured || ' ' || passed, ', ' ORDER BY rule) FROM qid_check(':T', ARRAY['birth_year', 'sex', 'zip'], '{\"min_k\": 2, \"min_kmap\": {\"population\": \"census_local\", \"k\": 2, \"weight\": \"people\"}}')"
same "qid_check min_kmap with the population distributed" \
	"SELECT string_agg(rule || ' ' || measured || ' ' || passed, ', ' ORDER BY rule) FROM qid_check('rel_local', ARRAY['birth_year', 'sex', 'zip'], '{\"min_kmap\": {\"population\": \":T\", \"k\": 2}}')"
same "column_distinct_counts" "SELECT string_agg(column_name || ' ' || distinct_values, ', ') FROM column_distinct_counts(':T', ARRAY['birth_year', 'sex', 'zip', 'education'])"
# estimates read pg_stats, which a Citus table has on its shards only (ANALYZE
# above ran); the local copy has them
estimate=$(q -v VERBOSITY=verbose -c "SELECT * FROM column_distinct_counts('pop_dist', ARRAY['sex', 'zip'], estimated => true)" 2>&1 | head -1)
check 'echo "$estimate" | grep -q "ERROR: *0A000: public.pop_dist is a Citus table: its statistics are on its shards"' \
	"column_distinct_counts(estimated => true) of a distributed table: 0A000, pass estimated => false ($estimate)"
ok "$(q -c "SELECT count(*) FROM column_distinct_counts('pop_local', ARRAY['sex', 'zip'], estimated => true) WHERE distinct_values > 0")" 2 \
	"column_distinct_counts(estimated => true) of the local copy: an estimate for each column"

# Plan shapes: the first line of the coordinator's plan and the shard query
plan() { q -c "EXPLAIN (VERBOSE, COSTS OFF) $1"; }
shape() { # "pushdown" or "row-gather", and whether the shard query calls $2
	local p
	p=$(plan "$1")
	case "$(echo "$p" | head -1)" in
	"Custom Scan (Citus Adaptive)"*) printf 'pushdown' ;;
	*Aggregate*) printf 'row-gather' ;;
	*) printf 'other: %s' "$(echo "$p" | head -1)" ;;
	esac
	if echo "$p" | grep -q "Query: .*$2("; then printf ', shards run %s' "$2"; fi
}
ok "$(shape "SELECT region, singleton_count($QID) FROM pop_dist GROUP BY region" singleton_count)" \
	"pushdown, shards run singleton_count" "grouped by the distribution column: the whole aggregate runs on each shard"
ok "$(shape "SELECT singleton_count($QID) FROM pop_dist" singleton_count)" \
	"row-gather" "VARIADIC, not grouped by it: the shards send the QID columns of every row"
ok "$(shape "SELECT singleton_count_key($KEY) FROM pop_dist" qid_key)" \
	"row-gather, shards run qid_key" "key form, not grouped by it: the shards send each row's 16-byte key (internal state not split)"
ok "$(shape "SELECT sex, class_profile_key($KEY) FROM pop_dist GROUP BY sex" qid_key)" \
	"row-gather, shards run qid_key" "key form grouped by another column: row-gather of keys"

# The co-location recipe: a plain uuid key column checked against qid_key
q -c "SET client_min_messages = warning" \
	-c "CREATE TABLE keyed_gen (birth_year int, sex text, zip text, qid uuid GENERATED ALWAYS AS (qid_key(birth_year, sex, zip)) STORED)" >/dev/null
refused=$(q -c "SELECT create_distributed_table('keyed_gen', 'qid')" 2>&1 | sed -n 's/^ERROR: *//p' | head -1)
check '[ -n "$refused" ]' "Citus refuses a generated column as distribution column ($refused)"
q >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE TABLE keyed (birth_year int, sex text, zip text,
	qid uuid NOT NULL CHECK (qid = qid_key(birth_year, sex, zip)));
SELECT create_distributed_table('keyed', 'qid', shard_count => 32);
INSERT INTO keyed SELECT birth_year, sex, zip, qid_key(birth_year, sex, zip) FROM pop_local;
SQL
ok "$(q -c "INSERT INTO keyed SELECT birth_year, 'M', zip, qid_key(birth_year, sex, zip) FROM pop_local WHERE sex = 'F' LIMIT 1" 2>&1 | grep -o 'violates check constraint' | head -1)" \
	"violates check constraint" "the CHECK rejects a key that is not the row's qid_key"
ok "$(q -c "SELECT (SELECT count(*) FROM (SELECT qid FROM keyed GROUP BY qid HAVING count(*) = 1) s), (SELECT count(DISTINCT qid) FROM keyed), (SELECT min(n) FROM (SELECT count(*) AS n FROM keyed GROUP BY qid) s)")" \
	"$(q -c "SELECT singleton_count($QID), class_count($QID), k_anonymity($QID) FROM pop_local")" \
	"keyed by qid_key: plain GROUP BY qid gives the singletons, classes and k of the local aggregates"
p=$(plan "SELECT count(*) FROM (SELECT qid FROM keyed GROUP BY qid HAVING count(*) = 1) s")
check 'echo "$p" | grep -q "Query: .*GROUP BY .*qid HAVING"' "the singleton count runs per shard (GROUP BY qid HAVING in the shard query)"

# What the coordinator receives: auto_explain logs the queries kmap runs,
# with Citus's "Tuple data received from nodes"
received() { # the statement's nested queries: "query text => bytes" per distributed query, then the sum
	q -c "LOAD 'auto_explain'" -c "SET auto_explain.log_min_duration = 0" -c "SET auto_explain.log_analyze = on" \
		-c "SET auto_explain.log_timing = off" -c "SET auto_explain.log_verbose = on" \
		-c "SET auto_explain.log_nested_statements = on" -c "SET auto_explain.log_level = notice" \
		-c "$1" 2>&1 >/dev/null | python3 -c '
import re, sys
units = {"bytes": 1, "kB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3}
query = None; total = 0; shard_constants = 0
for line in sys.stdin:
    m = re.match(r"Query Text: (.*)", line)
    if m: query = m.group(1)[:90]
    m = re.search(r"Tuple data received from nodes: (\d+) (bytes|kB|MB|GB)", line)
    if m:
        b = int(m.group(1)) * units[m.group(2)]; total += b
        print("#   %s => %d bytes" % (query, b))
    # a bytea literal in the target list of a shard query comes back with every row
    if re.search(r"Query: SELECT (?:(?! FROM ).)*\x27\\x", line): shard_constants += 1
print("total %d constants %d" % (total, shard_constants))'
}
bound() { # NAME SQL LIMIT_BYTES [DISTRIBUTED_STATEMENTS]
	local out total constants
	out=$(received "$2")
	echo "$out" | grep '^#'
	read -r _ total _ constants < <(echo "$out" | tail -1)
	check "[ $total -gt 0 ] && [ $total -le $3 ]" "$1: the coordinator received $total bytes (bound $3)"
	ok "$constants" 0 "$1: no shard query returns a constant with its rows"
	if [ -n "${4:-}" ]; then
		ok "$(echo "$out" | grep -c ' => ')" "$4" "$1: $4 distributed statement(s)"
	fi
}
# The control: the single-node probe over a distributed population ships the
# release's keys with every row (here a 5-row release against 5,000 rows)
q -c "CREATE TABLE rel_tiny AS SELECT * FROM rel_local ORDER BY id LIMIT 5" >/dev/null
out=$(received "SET qidrisk.kmap_population_scan = probe; SELECT count(*) FROM kmap_count('rel_tiny', 'rel_dist', ARRAY['birth_year', 'sex', 'zip'])")
check '[ "$(echo "$out" | tail -1 | cut -d" " -f4)" -gt 0 ]' "control: qidrisk.kmap_population_scan = probe returns the keys as a constant with every row (the check below can fail)"
ok "$(q -c "SET qidrisk.kmap_population_scan = probe" -c "$(rows_of "SELECT * FROM kmap_count('rel_tiny', 'rel_dist', ARRAY['birth_year', 'sex', 'zip'])")")" \
	"$(q -c "$(rows_of "SELECT * FROM kmap_count('rel_tiny', 'rel_dist', ARRAY['birth_year', 'sex', 'zip'])")")" \
	"control: the probe and the grouped scan give the same counts"

# the release's key filter goes once with each shard query, in its WHERE clause
filtered=$(q -c "LOAD 'auto_explain'" -c "SET auto_explain.log_min_duration = 0" -c "SET auto_explain.log_verbose = on" \
	-c "SET auto_explain.log_nested_statements = on" -c "SET auto_explain.log_level = notice" \
	-c "SELECT count(*) FROM kmap_count('rel_local', 'pop_dist', ARRAY['birth_year', 'sex', 'zip'])" 2>&1 |
	grep -c "Query: SELECT qidrisk_internal.qid_key(birth_year, sex, zip) AS qid_key, count(\*) AS count FROM public.pop_dist_[0-9]* pop_dist WHERE qidrisk_internal.qidrisk_kmap_key_filter('\\\\x[0-9a-f]*'::bytea, qidrisk_internal.qid_key(birth_year, sex, zip)) GROUP BY")
ok "$filtered" 1 "the population is grouped by qid_key on the shards, only the rows that pass the release's key filter"

# The population rows the filter passes: the matching ones, and at most about
# 5% of the others (two bits a key in 8 to 16 bits a release class); each comes
# as at most one row of a 16-byte key and an 8-byte count (and 9 bytes of
# weight figures: the sum and whether every weight is good) per class and
# shard, as Citus counts the values it receives
matching=$(q -c "SELECT sum(population_rows)::bigint FROM kmap_count('rel_local', 'pop_local', ARRAY['birth_year', 'sex', 'zip'])")
passing=$((matching + 200000 / 20))
echo "# $matching population rows match a release class; the filter passes about $passing"
bound "kmap_count, local release, distributed population" \
	"SELECT count(*) FROM kmap_count('rel_local', 'pop_dist', ARRAY['birth_year', 'sex', 'zip'])" $((passing * 40))
bound "kmap_count with a weight" \
	"SELECT count(*) FROM kmap_count('rel_local', 'pop_dist', ARRAY['birth_year', 'sex', 'zip'], 'weight')" $((passing * 56))
bound "kmap_count, both distributed" \
	"SELECT count(*) FROM kmap_count('rel_dist', 'pop_dist', ARRAY['birth_year', 'sex', 'zip'])" $((passing * 40 + 5000 * 60))
bound "kmap_value" "SELECT kmap_value('rel_dist', 'pop_dist', ARRAY['birth_year', 'sex', 'zip'])" $((passing * 40 + 5000 * 60))
bound "kmap_rows_below" "SELECT kmap_rows_below('rel_local', 'pop_dist', ARRAY['birth_year', 'sex', 'zip'], 3)" $((passing * 40))
# kmap_row_counts returns every release row: those come to the coordinator too
bound "kmap_row_counts" "SELECT count(*) FROM kmap_row_counts('rel_dist', 'pop_dist', ARRAY['birth_year', 'sex', 'zip'])" $((passing * 40 + 5000 * 60 + 5000 * 200))
# weighted_risk reads its table once, as release and population at the same
# time: GROUP BY the QID, one row per class and shard holding it, with the
# QID's values (4 + 1 + 5 bytes here), the row count, the weight's sum and
# whether every weight is good (8 + 8 + 1 bytes)
pairs=$(q -c "SELECT count(*) FROM (SELECT DISTINCT get_shard_id_for_distribution_column('pop_dist', region), $QID FROM pop_local) s")
echo "# pop_dist holds $pairs (shard, class) pairs of ($QID)"
bound "weighted_risk" "SELECT count(*) FROM weighted_risk('pop_dist', ARRAY['birth_year', 'sex', 'zip'], 'weight')" $((pairs * 32)) 1
bound "weighted_risk_summary" "SELECT * FROM weighted_risk_summary('pop_dist', ARRAY['birth_year', 'sex', 'zip'], 'weight')" $((pairs * 32)) 1
bound "weighted_risk without a weight" "SELECT count(*) FROM weighted_risk('pop_dist', ARRAY['birth_year', 'sex', 'zip'], NULL)" $((pairs * 22)) 1

# class_size_profile over the table keyed by qid_key: each shard counts its
# classes (whole there) and reduces their sizes to its partial state, a
# bigint[] of (size, classes) pairs; the coordinator combines the shards'
# states.  Every frequency figure comes from the profile.
PROFILE="SELECT class_size_profile(n) AS p FROM (SELECT count(*) AS n FROM keyed GROUP BY qid) s"
ok "$(q -c "SELECT (p).singletons, (p).classes, (p).k_anonymity, rows_below(p, 5), p::text FROM ($PROFILE) x")" \
	"$(q -c "SELECT singleton_count($QID), class_count($QID), k_anonymity($QID), rows_below_k(5, $QID), class_profile($QID)::text FROM pop_local")" \
	"keyed: class_size_profile's singletons, classes, k, rows below 5 and profile = the local aggregates"
ok "$(q -c "SELECT string_agg(h::text, ',' ORDER BY h.class_size) FROM ($PROFILE) x, class_histogram(x.p) h")" \
	"$(q -c "SELECT string_agg(h::text, ',' ORDER BY h.class_size) FROM (SELECT class_profile($QID) AS p FROM pop_local) x, class_histogram(x.p) h")" \
	"keyed: class_histogram of class_size_profile = of the local class_profile"
p=$(plan "$PROFILE")
echo "$p" | grep -m1 "Query:" | cut -c1-220 | sed 's/^/#   shard query: /'
# Citus 13 splits the aggregate with worker_partial_agg / coord_combine_agg,
# the state as text; Citus 14 with worker_binary_partial_agg /
# coord_binary_combine_agg, the state in its binary form (bytea) when the
# state type has one, as bigint[] has
if echo "$p" | grep -q "worker_binary_partial_agg("; then
	split=binary partial=worker_binary_partial_agg combine=coord_binary_combine_agg
	state_bytes=$((2 * 12)) # an int8 array element: its 4-byte length and 8 bytes
else
	split=text partial=worker_partial_agg combine=coord_combine_agg
	state_bytes=$((2 * 21)) # 20 digits and a comma
fi
case "$CITUS_VERSION" in
13.*) expect=text ;;
*) expect=binary ;;
esac
ok "$split" "$expect" "keyed: Citus $CITUS_VERSION sends the shards' states as $expect ($partial)"
check 'echo "$p" | head -3 | grep -q "$combine("' \
	"keyed: the coordinator combines the shards' states ($combine)"
check 'echo "$p" | grep -q "Query: SELECT $partial(.*class_size_profile.* FROM (SELECT count(\*) AS n FROM public.keyed_[0-9]* keyed GROUP BY keyed.qid) s"' \
	"keyed: each shard runs the GROUP BY qid and $partial of class_size_profile"
# What the shards send is each one's state, measured by running that shard
# query on every shard (on Citus 13 EXPLAIN ANALYZE cannot run it, below)
sizes=$(q -c "SELECT count(DISTINCT n) FROM (SELECT count(*) AS n FROM pop_local GROUP BY $QID) s")
read -r sent shards < <(q -F ' ' -c "SELECT sum(result::bigint), count(*) FROM run_command_on_shards('keyed',
	\$\$SELECT octet_length($partial('public.class_size_profile(bigint)'::pg_catalog.regprocedure, n)::text)
	FROM (SELECT count(*) AS n FROM %s GROUP BY qid) s\$\$)")
if [ "$split" = binary ]; then
	# the bytea as text is its hex form: 2 characters a byte, and \x
	sent=$(((sent - 2 * shards) / 2))
fi
bound_state=$((shards * (64 + sizes * state_bytes)))
echo "# $sizes distinct class sizes; the $shards shards send $sent bytes of state"
check "[ $shards -eq 32 ] && [ $sent -gt 0 ] && [ $sent -le $bound_state ]" \
	"keyed: the shards send at most $state_bytes bytes per distinct size, and a header ($sent bytes, bound $bound_state)"
if [ "$split" = text ]; then
	refused=$(q -c "EXPLAIN (ANALYZE) $PROFILE" 2>&1 | sed -n 's/^ERROR: *//p' | head -1)
	check '[ -n "$refused" ]' "Citus $CITUS_VERSION cannot EXPLAIN ANALYZE an aggregate it splits with worker_partial_agg ($refused)"
else
	# what the coordinator receives, as for the functions above: the states
	# and the protocol's per-row framing
	bound "keyed: class_size_profile (EXPLAIN ANALYZE runs on Citus $CITUS_VERSION)" "$PROFILE" $((bound_state * 2)) 1
fi

# A constant argument of an ungrouped aggregate (rows_below_k's k) travels
# with every row that a row-gather ships; rows_below of class_profile does not
consts=()
for call in "singleton_count($QID)" "rows_below_k(5, $QID)" "rows_below(class_profile($QID), 5)"; do
	got=$(received "SELECT $call FROM pop_dist" | tail -1 | cut -d' ' -f2)
	consts+=("$got")
	echo "# SELECT $call FROM pop_dist: $got bytes received; shard query: $(plan "SELECT $call FROM pop_dist" | grep -m1 "Query:" | sed 's/^ *//')"
done
check "[ ${consts[1]} -gt $((consts[0] + 200000 * 3 / 2)) ]" \
	"rows_below_k(5, ...) ungrouped receives more than singleton_count (the constant with each of the 200,000 rows)"
check "[ ${consts[2]} -le ${consts[0]} ]" "rows_below(class_profile(...), 5) receives no more than singleton_count"

echo "1..$n"
echo "# citus.sh: $(($(date +%s) - started)) s in all"
