#!/bin/bash
# Reproduce Koot et al.'s experiment on synthetic municipalities and plot it:
# writes docs/birthday_experiment.csv and docs/birthday_experiment.png.
# Uses the server in PG* variables if PGHOST is set, else a throwaway cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PGHOST:-}" ]; then
	bash test/setup.sh
	exec env NONROOT=1 pg_virtualenv -v 15 bash "$0"
fi
if ! command -v gnuplot >/dev/null; then
	SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo
	$SUDO apt-get install -y -qq gnuplot-nox >/dev/null
fi
psql -X -q -v ON_ERROR_STOP=1 -f docs/birthday_experiment.sql > docs/birthday_experiment.csv
gnuplot <<'PLOT'
set terminal pngcairo size 900,560 font "DejaVu Sans,11"
set output "docs/birthday_experiment.png"
set datafile separator ","
set key bottom left
set logscale y
set format y "10^{%L}"
set xlabel "heterogeneity kappa (KL distance of the age distribution to uniform, nats)"
set ylabel "P(29 people all have different ages)"
set title "Birthday uniqueness of 29 people over ages 0-94, 60 synthetic municipalities"
plot "docs/birthday_experiment.csv" every ::1 using 2:3 with points pt 7 ps 0.9 lc rgb "#1f77b4" title "exact k! e_k(p)", \
     "" every ::1 using 2:4 with lines lw 2 lc rgb "#d62728" title "Koot: pi_u exp(-kappa k^2/N)", \
     "" every ::1 using 2:5 with lines lw 1 dt 2 lc rgb "#ff7f0e" title "exp(-(1/2+kappa) k^2/N)", \
     "" every ::1 using 2:6 with lines lw 2 dt 3 lc rgb "#2ca02c" title "uniform estimate pi_u(29,95)"
PLOT
# how linear is ln P in kappa, and how far off is the uniform estimate?
psql -X -q -v ON_ERROR_STOP=1 > docs/birthday_experiment_summary.txt <<'SQL'
CREATE TEMP TABLE r (municipality int, kappa float8, exact float8, koot float8, koot_closed_form float8,
	uniform float8, max_k_exact int, max_k_koot int);
\copy r FROM 'docs/birthday_experiment.csv' WITH (FORMAT csv, HEADER)
SELECT count(*) AS municipalities,
	round(min(kappa)::numeric, 3) AS kappa_min, round(max(kappa)::numeric, 3) AS kappa_max,
	round(regr_slope(ln(exact), kappa)::numeric, 3) AS slope_ln_exact,
	round(regr_intercept(ln(exact), kappa)::numeric, 3) AS intercept,
	round(regr_r2(ln(exact), kappa)::numeric, 4) AS r2,
	round((-(29.0 ^ 2) / 95)::numeric, 3) AS koot_slope,
	round(ln(min(uniform))::numeric, 3) AS ln_uniform,
	round(min(uniform / exact)::numeric, 2) AS uniform_overshoot_min,
	round(max(uniform / exact)::numeric, 2) AS uniform_overshoot_max,
	round(max(abs(ln(koot / exact)))::numeric, 3) AS koot_max_abs_ln_error
FROM r;
SQL
echo "wrote docs/birthday_experiment.csv, docs/birthday_experiment.png and docs/birthday_experiment_summary.txt"
