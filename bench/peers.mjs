// bench/peers.mjs - the timing half of bench/peers.sh (which documents it).
// Arguments: TABLE CSV DUCKDB_FILE RUNS OUT_JSON.  Drives one PostgreSQL
// session (node-postgres, connection from PGHOST/PGPORT/PGUSER/PGDATABASE)
// and one DuckDB connection (one thread) from one process, so every round
// runs every variant of every shape back to back.
import { DuckDBInstance } from '@duckdb/node-api';
import pg from 'pg';
import fs from 'node:fs';
import os from 'node:os';

const [table, csv, duckFile, runsArg, outFile] = process.argv.slice(2);
const runs = Number(runsArg);
const shapes = [
	{ name: 'near-distinct', label: 'birth date, sex, zip', cols: ['d', 's', 'zip'] },
	{ name: 'medium', label: 'birth year, sex, zip / 10', cols: ['y', 's', 'zip4'] },
	{ name: 'low', label: 'birth year, sex', cols: ['y', 's'] },
];

const pgClient = new pg.Client();
await pgClient.connect();
for (const sql of ['SET jit = off', 'SET max_parallel_workers_per_gather = 0'])
	await pgClient.query(sql);

const duck = await DuckDBInstance.create(duckFile, { threads: '1' });
const dcon = await duck.connect();
const loaded = await dcon.runAndReadAll(
	"SELECT count(*) AS n FROM information_schema.tables WHERE table_name = 'pop'");
if (Number(loaded.getRowObjects()[0].n) === 0)
	await dcon.run(`CREATE TABLE pop AS SELECT * FROM read_csv('${csv}', header = false,
		columns = {'d': 'INTEGER', 's': 'INTEGER', 'zip': 'INTEGER', 'y': 'INTEGER', 'zip4': 'INTEGER'})`);

const rowsPg = Number((await pgClient.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);
const rowsDuck = Number((await dcon.runAndReadAll('SELECT count(*) AS n FROM pop')).getRowObjects()[0].n);
if (rowsPg !== rowsDuck)
	throw new Error(`DuckDB holds ${rowsDuck} rows, PostgreSQL ${rowsPg}: remove ${duckFile}`);

function variants(shape) {
	const c = shape.cols.join(', ');
	const hash = shape.cols.map((x) => `hashint4(${x})`).join(' # ');
	// the three that the ratios compare first, back to back; the slow GROUP BY last
	return {
		qidrisk: { engine: 'pg', sql: `SELECT singleton_count(${c}) AS v FROM ${table}` },
		scan: { engine: 'pg', sql: `SELECT bit_xor(${hash}) AS v FROM ${table}` },
		duckdb: { engine: 'duck', sql: `SELECT count(*) AS v FROM (SELECT 1 FROM pop GROUP BY ${c} HAVING count(*) = 1)` },
		plain_sql: { engine: 'pg', sql: `SELECT count(*) AS v FROM (SELECT 1 FROM ${table} GROUP BY ${c} HAVING count(*) = 1) g` },
	};
}

// A round's order: the compared three forward in odd rounds and backward in
// even ones, so that none of them always runs first after the slow GROUP BY
function roundOrder(shape, round) {
	const all = Object.entries(variants(shape));
	const compared = all.slice(0, 3);
	return [...(round % 2 === 0 ? compared : compared.reverse()), all[3]];
}

async function timed(v) {
	const t0 = process.hrtime.bigint();
	let value;
	if (v.engine === 'pg')
		value = (await pgClient.query(v.sql)).rows[0].v;
	else
		value = (await dcon.runAndReadAll(v.sql)).getRowObjects()[0].v;
	const ms = Number(process.hrtime.bigint() - t0) / 1e6;
	return { ms, value: String(value) };
}

const result = { rows: rowsPg, runs, load_before: os.loadavg(), cpus: os.cpus().length, shapes: [] };
for (const shape of shapes) {
	const c = shape.cols.join(', ');
	const counts = (await dcon.runAndReadAll(`SELECT count(*) AS classes, count(*) FILTER (WHERE n = 1) AS singletons
		FROM (SELECT count(*) AS n FROM pop GROUP BY ${c})`)).getRowObjects()[0];
	result.shapes.push({ ...shape, classes: Number(counts.classes), singletons: Number(counts.singletons), times: {} });
}
// a warm-up of every variant, checking the answers
for (const s of result.shapes)
	for (const [name, v] of Object.entries(variants(s))) {
		const r = await timed(v);
		if (name !== 'scan' && Number(r.value) !== s.singletons)
			throw new Error(`${s.name} ${name}: ${r.value} singletons, the reference count says ${s.singletons}`);
		s.times[name] = [];
	}
for (let round = 0; round < runs; round++)
	for (const s of result.shapes)
		for (const [name, v] of roundOrder(s, round)) {
			const r = await timed(v);
			if (name !== 'scan' && Number(r.value) !== s.singletons)
				throw new Error(`${s.name} ${name}: ${r.value} singletons in round ${round + 1}`);
			s.times[name].push(r.ms);
		}
result.load_after = os.loadavg();
result.duckdb_version = (await dcon.runAndReadAll('SELECT version() AS v')).getRowObjects()[0].v;
result.pg_version = (await pgClient.query('SHOW server_version')).rows[0].server_version;
await pgClient.end();
fs.writeFileSync(outFile, JSON.stringify(result, null, 1));
