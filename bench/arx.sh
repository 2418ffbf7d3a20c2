#!/bin/bash
# bench/arx.sh - ARX (the Java anonymization tool) side by side with qid_lattice
# on UCI Adult, as a reference for qid_lattice's optima and values.
#
#   bench/arx.sh [--loss] [--privacy] [--large] [--no-qidrisk]
#
# ARX is found in $ARX_HOME (default /opt/arx: arx.jar and lib/*.jar, as
# bench/arx-build.sh ARX_SOURCE_DIR builds it); without it (or without java and
# javac) the script says so and exits 0.  ARX is not part of this repository:
# bench/arx/ArxBench.java (ours) is compiled against it on each run.
#
# Data: Adult from data/adult/adult.data.gz, read the way data/load_adult.sql
# loads it (same pipeline, same 32,561 rows), QIDs age, workclass, education,
# marital_status, occupation, race, sex, native_country with the hierarchies
# data/adult/hierarchies/*.csv (ARX's layout), income sensitive.
#
# --loss (the default when no mode is given): k = 5 with suppression 0 % (a),
#   2 % (b), 2 % and distinct l = 2 on income (c); each with ARX's Loss metric
#   (geometric mean, ARX's default) for gs-factor 0.5 (ARX's default), 0 and 1,
#   with weights age 2 / others 1, and with ARX's discernibility.  Prints each
#   optimum (levels in the QID order above), ARX's value of it, its suppressed
#   rows, the nodes ARX checked and the median of $BENCH_RUNS (default 5) timed runs after one warm-up
#   (data loaded beforehand, one JVM, the cases and qid_lattice interleaved).
#   qid_lattice runs in the same rounds through a psql co-process on the server,
#   with evaluate => 'anonymous' (the default: every anonymous node evaluated)
#   and 'best' (only what finding the optimum needs, as ARX), each printed
#   with the nodes it evaluated
#   in PGHOST/PGPORT/PGUSER (database $BENCH_DB, default "bench", where the
#   extension is re-created and adult and its hierarchies re-loaded): metric
#   'discernibility' against ARX's discernibility, and metric 'loss' against
#   ARX's Loss (gs 0.5) when qid_lattice accepts it (else skipped, with a
#   message); the ratio qidrisk time / ARX time is printed.  Writes
#   $ARX_OUT/arx_adult_loss.csv (every node of case (a)) and
#   $ARX_OUT/arx_adult_loss_optima.csv; ARX_OUT defaults to test/reference.
# --privacy: the privacy models of test/reference/ARX.md, suppression 0 % and
#   2 %: $ARX_OUT/arx_adult_<model>.csv (every node) and
#   $ARX_OUT/arx_adult_privacy_optima.csv.
# --large: exports bench/lattice.sh's adult_1e6 ($BENCH_LATTICE_ROWS rows,
#   built here the same way when missing) with COPY and times ARX on it (k = 5,
#   2 %, Loss and discernibility; $BENCH_LARGE_RUNS runs each, default 1, after
#   one warm-up round when more than one) interleaved with qid_lattice on the
#   same case through the psql co-process (metric 'loss' when it accepts it,
#   and 'discernibility'; evaluate 'anonymous' and 'best'): medians, the optimum, value and suppressed rows of
#   both compared, the ratio qidrisk time / ARX time, and the peak memory of
#   the JVM and of qid_lattice's backend (VmHWM; it counts the shared buffers
#   the backend touched, shown beside it).
# --no-qidrisk: ARX only (no server needed; --large needs one).
# ARX_JAVA_OPTS is passed to java (e.g. -Xmx8g).
set -euo pipefail
cd "$(dirname "$0")/.."

ARX_HOME=${ARX_HOME:-/opt/arx}
ARX_OUT=${ARX_OUT:-test/reference}
RUNS=${BENCH_RUNS:-5}
ROWS=${BENCH_LATTICE_ROWS:-1000000}
LOSS=no PRIVACY=no LARGE=no QIDRISK=yes
for arg in "$@"; do
	case $arg in
	--loss) LOSS=yes ;;
	--privacy) PRIVACY=yes ;;
	--large) LARGE=yes ;;
	--no-qidrisk) QIDRISK=no ;;
	*)
		echo "usage: bench/arx.sh [--loss] [--privacy] [--large] [--no-qidrisk]" >&2
		exit 2
		;;
	esac
done
[ "$PRIVACY$LARGE" = nono ] && LOSS=yes

if [ ! -f "$ARX_HOME/arx.jar" ]; then
	echo "bench/arx.sh: skipped: ARX not found ($ARX_HOME/arx.jar missing; set ARX_HOME or build it with bench/arx-build.sh ARX_SOURCE_DIR)"
	exit 0
fi
if ! command -v java >/dev/null || ! command -v javac >/dev/null; then
	echo "bench/arx.sh: skipped: java and javac are needed (Debian: default-jdk-headless)"
	exit 0
fi
if [ "$LARGE" = yes ] && [ "$QIDRISK" = no ]; then
	echo "bench/arx.sh: --large exports its table from PostgreSQL: it cannot run with --no-qidrisk" >&2
	exit 2
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
CP="$WORK/classes:$ARX_HOME/arx.jar:$ARX_HOME/lib/*"
mkdir "$WORK/classes"
javac -nowarn -d "$WORK/classes" -cp "$CP" bench/arx/ArxBench.java
VERSION=$(tr '\n' ' ' <"$ARX_HOME/VERSION" 2>/dev/null | sed 's/ built .*//; s/ $//' || true)
VERSION=${VERSION:-unknown version}
echo "bench/arx.sh: $VERSION from $ARX_HOME; $(java -version 2>&1 | head -1)"

# the same rows as data/load_adult.sql, with its column names as a header
{
	echo age,workclass,fnlwgt,education,education_num,marital_status,occupation,relationship,race,sex,capital_gain,capital_loss,hours_per_week,native_country,income
	gzip -dc data/adult/adult.data.gz | sed -e "s/, /,/g" -e "/^$/d"
} >"$WORK/adult.csv"

arx() {
	# shellcheck disable=SC2086
	java ${ARX_JAVA_OPTS:-} -cp "$CP" ArxBench "$@" --arx-version "$VERSION" --hierarchies data/adult/hierarchies
}

LOSS_ARGS=(--qidrisk no)
if [ "$QIDRISK" = yes ]; then
	. bench/common.sh
	bench_database "${BENCH_DB:-bench}"
	"${PSQL[@]}" -c "SET client_min_messages = warning" \
		-c "DROP TABLE IF EXISTS adult, adult_hierarchy_age, adult_hierarchy_workclass, adult_hierarchy_education,
			adult_hierarchy_marital_status, adult_hierarchy_occupation, adult_hierarchy_race,
			adult_hierarchy_sex, adult_hierarchy_native_country CASCADE" \
		-f data/load_adult.sql -f data/load_adult_hierarchies.sql
	[ "$("${PSQL[@]}" -At -c "SELECT count(*) FROM adult")" = 32561 ]
	LOSS_ARGS=(--qidrisk yes --qidrisk-loss no)
	if "${PSQL[@]}" -At -c "CREATE TEMP TABLE probe (a integer)" -c "INSERT INTO probe VALUES (1)" \
		-c "SELECT count(*) FROM qid_lattice('probe', '{a}', '{}', 1, metric => 'loss')" >/dev/null 2>"$WORK/probe"; then
		LOSS_ARGS=(--qidrisk yes --qidrisk-loss yes)
	else
		echo "bench/arx.sh: qid_lattice does not accept metric => 'loss' ($(grep -o 'ERROR:.*' "$WORK/probe" | head -1)): only discernibility is compared"
	fi
fi

if [ "$LOSS" = yes ]; then
	arx loss --data "$WORK/adult.csv" --runs "$RUNS" "${LOSS_ARGS[@]}" \
		--nodes "$ARX_OUT/arx_adult_loss.csv" --optima "$ARX_OUT/arx_adult_loss_optima.csv"
fi
if [ "$PRIVACY" = yes ]; then
	arx privacy --data "$WORK/adult.csv" --out "$ARX_OUT" --optima "$ARX_OUT/arx_adult_privacy_optima.csv" \
		${ARX_MODELS:+--only "$ARX_MODELS"}
fi
if [ "$LARGE" = yes ]; then
	bench_check_rows arx "$ROWS"
	if [ "$("${PSQL[@]}" -At -c "SELECT count(*) FROM adult_1e6" 2>/dev/null || true)" != "$ROWS" ]; then
		echo "bench/arx.sh: building adult_1e6 ($ROWS rows) as bench/lattice.sh does"
		"${PSQL[@]}" -v rows="$ROWS" -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS adult_1e6" \
			-f bench/adult_large.sql -c "VACUUM ANALYZE adult_1e6"
	fi
	"${PSQL[@]}" -c "\\copy (SELECT age, workclass, education, marital_status, occupation, race, sex, native_country, income FROM adult_1e6) TO '$WORK/large.csv' WITH (FORMAT csv, HEADER)"
	TIME=()
	[ -x /usr/bin/time ] && TIME=(/usr/bin/time -f "large: JVM wall %e s, max RSS %M kB")
	# shellcheck disable=SC2086
	"${TIME[@]}" java ${ARX_JAVA_OPTS:-} -cp "$CP" ArxBench large \
		--data "$WORK/large.csv" --runs "${BENCH_LARGE_RUNS:-1}" --arx-version "$VERSION" \
		--hierarchies data/adult/hierarchies "${LOSS_ARGS[@]}"
fi
