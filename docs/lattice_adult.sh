#!/bin/bash
# docs/lattice_adult.sh - the plot in docs/anonymize.md: nodes, anonymous and
# minimal nodes of UCI Adult's 4,320-node lattice by height (k = 5, 2%
# suppression, distinct 2-diversity of income).  Needs a server in PG* with
# qidrisk installed (database $PLOT_DB, default "bench") and Debian's
# python3-matplotlib (run with /usr/bin/python3).
# Writes docs/lattice_adult.csv and docs/lattice_adult.png.
set -euo pipefail
cd "$(dirname "$0")/.."
DB=${PLOT_DB:-bench}
psql -X -q -d "$DB" -v ON_ERROR_STOP=1 <<'SQL' > docs/lattice_adult.csv
SET client_min_messages = warning;
DROP TABLE IF EXISTS adult, adult_hierarchy_age, adult_hierarchy_workclass, adult_hierarchy_education,
	adult_hierarchy_marital_status, adult_hierarchy_occupation, adult_hierarchy_race,
	adult_hierarchy_sex, adult_hierarchy_native_country CASCADE;
\o /dev/null
\i data/load_adult.sql
\i data/load_adult_hierarchies.sql
\o
COPY (
	SELECT height, count(*) AS nodes, count(*) FILTER (WHERE anonymous) AS anonymous,
		   count(*) FILTER (WHERE minimal) AS minimal
	FROM qid_lattice('adult', '{age,workclass,education,marital_status,occupation,race,sex,native_country}',
		'{"age": "adult_hierarchy_age", "workclass": "adult_hierarchy_workclass",
		  "education": "adult_hierarchy_education", "marital_status": "adult_hierarchy_marital_status",
		  "occupation": "adult_hierarchy_occupation", "race": "adult_hierarchy_race",
		  "sex": "adult_hierarchy_sex", "native_country": "adult_hierarchy_native_country"}',
		5, 0.02, 'income', 2, evaluate => 'tagged')
	GROUP BY height ORDER BY height
) TO STDOUT WITH (FORMAT csv, HEADER);
SQL
/usr/bin/python3 - <<'PY'
import csv
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt
rows = list(csv.DictReader(open('docs/lattice_adult.csv')))
h = [int(r['height']) for r in rows]
fig, ax = plt.subplots(figsize=(7, 4))
ax.bar(h, [int(r['nodes']) for r in rows], color='#dddddd', label='nodes')
ax.bar(h, [int(r['anonymous']) for r in rows], color='#4c72b0', label='anonymous')
ax.bar(h, [int(r['minimal']) for r in rows], color='#dd8452', label='minimal')
ax.set_xticks(h)
ax.set_xlabel('height (sum of the levels)')
ax.set_ylabel('nodes')
ax.set_title('UCI Adult, 8 quasi-identifiers: k = 5, 2% suppression, l = 2 on income')
ax.legend()
fig.tight_layout()
fig.savefig('docs/lattice_adult.png', dpi=100)
PY
echo "wrote docs/lattice_adult.csv and docs/lattice_adult.png"
