-- Property tests of QaR (Béra et al. 2023): the GPD fit against known parameters, closed forms and
-- a fit written in SQL from docs/qar.md (auto's choice of method included); thetas / U+ / T /
-- exact contributions / greedy removal / entropy against independent plain-SQL implementations on
-- random tables, row-level security, and every bad input's SQLSTATE.
\set ON_ERROR_STOP 1
\set QUIET 1
SET client_min_messages = warning;
\ir needs_superuser.psql
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS qidrisk;
SET LOCAL max_parallel_workers_per_gather = 0;
-- every test below is counted, so a query that yields fewer rows than its cases fails the plan
SELECT plan(12 * 3 + 6 * 2	-- GPD samples: mle, pwm, the likelihood's maximum; pwm and mom closed forms
	+ 7						-- auto: short-tailed samples, against the SQL fit, the boundary fit
	+ 6 + 1					-- the risk from thetas against the SQL formula and fit
	+ 6 + 3 + 5				-- thetas, theta = H/L, U+
	+ 4 + 1					-- qar_risk against the SQL formula and fit
	+ 2 + 3 + 1				-- exact contributions, greedy removal, the table unchanged
	+ 7 + 1					-- record entropy
	+ 3 + 2					-- row-level security, privileges
	+ 30);					-- bad input

-- == GPD samples by inverse-CDF sampling: y = beta ((1 - U)^-xi - 1) / xi, -beta ln(1 - U) at xi = 0 ==
CREATE TABLE gpd_cases (id integer, seed float8, xi float8, beta float8, n integer, y float8[]);
CREATE FUNCTION pg_temp.make_samples() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	c record;
	id integer := 0;
BEGIN
	FOR c IN SELECT * FROM (VALUES (0.11), (0.57)) s(seed),
		(VALUES (-0.4, 1.0), (-0.2, 2.0), (0.0, 1.0), (0.001, 1.5), (0.2, 0.5), (0.4, 3.0)) v(xi, beta)
	LOOP
		id := id + 1;
		PERFORM setseed(c.seed);
		INSERT INTO gpd_cases SELECT id, c.seed, c.xi, c.beta, 5000,
			array_agg(CASE WHEN c.xi = 0 THEN -c.beta * ln(1 - u)
				ELSE c.beta * (power(1 - u, -c.xi) - 1) / c.xi END)
		FROM (SELECT random() AS u FROM generate_series(1, 5000)) r;
	END LOOP;
END $$;
SELECT pg_temp.make_samples();

-- GPD log-likelihood, written independently of the C code
CREATE FUNCTION pg_temp.gpd_ll(y float8[], xi float8, beta float8) RETURNS float8
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE
		WHEN beta <= 0 THEN '-Infinity'::float8
		WHEN xi = 0 THEN -count(*) * ln(beta) - sum(v) / beta
		WHEN min(1 + xi * v / beta) <= 0 THEN '-Infinity'::float8
		ELSE -count(*) * ln(beta) - (1 + 1 / xi) * sum(ln(1 + xi * v / beta)) END
	FROM unnest(y) v
$$;

-- == An independent GPD fit (docs/qar.md section 3), for the references below ==
-- With s = ln(1 + theta max(y)) and theta = (e^s - 1) / max(y), 1 + theta y = (max - y + e^s y) / max:
-- positive for every s, and e^s at y = max, so the profile can be followed right up to theta = -1/max(y)
CREATE FUNCTION pg_temp.ref_xi(y float8[], s float8) RETURNS float8
LANGUAGE sql IMMUTABLE AS $$
	SELECT avg(ln(m.mx - v + exp(s) * v) - ln(m.mx))
	FROM unnest(y) v, (SELECT max(w) AS mx FROM unnest(y) w) m
$$;
-- the sign of the profile's derivative: d/dtheta = (xi - theta g (1 + xi)) / (theta xi) with
-- g = mean(y / (1 + theta y)), and theta xi > 0; at theta = 0 the sign of mean(y^2)/2 - mean(y)^2
CREATE FUNCTION pg_temp.ref_slope(y float8[], s float8) RETURNS float8
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN s = 0 THEN avg(v * v) / 2 - avg(v) ^ 2
		ELSE avg(ln(m.mx - v + exp(s) * v) - ln(m.mx))
			- (1 + avg(ln(m.mx - v + exp(s) * v) - ln(m.mx))) * avg((exp(s) - 1) * v / (m.mx - v + exp(s) * v)) END
	FROM unnest(y) v, (SELECT max(w) AS mx FROM unnest(y) w) m
$$;
-- maximum likelihood: the best of 1001 points uniform in s over -1 < xi <= 10 (s within +-512, where
-- exp(s) is a double), then bisection on the sign of the derivative between the best point's
-- neighbours; no row when the best point ends the range (no interior maximum)
CREATE FUNCTION pg_temp.ref_mle(y float8[], OUT xi float8, OUT beta float8)
RETURNS SETOF record
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	mx float8 := (SELECT max(v) FROM unnest(y) v);
	s_lo float8 := -1;
	s_hi float8 := 1;
	lo float8;
	hi float8;
	mid float8;
	best record;
BEGIN
	WHILE pg_temp.ref_xi(y, s_lo) > -1 AND s_lo > -300 LOOP
		s_lo := 2 * s_lo;
	END LOOP;
	WHILE pg_temp.ref_xi(y, s_hi) <= 10 AND s_hi < 300 LOOP
		s_hi := 2 * s_hi;
	END LOOP;
	SELECT i, min(i) OVER () AS first_i, max(i) OVER () AS last_i INTO best
	FROM (SELECT i, s, avg(ln(mx - v + exp(s) * v) - ln(mx)) AS x, avg(v) AS m
		FROM (SELECT i, s_lo + (s_hi - s_lo) * i / 1000 AS s FROM generate_series(0, 1000) i) g, unnest(y) v
		GROUP BY i, s) q
	WHERE x > -1 AND x <= 10
	ORDER BY CASE WHEN abs(s) < 1e-9 THEN -(ln(m) + 1) ELSE -(ln(x / ((exp(s) - 1) / mx)) + 1 + x) END DESC, i
	LIMIT 1;
	IF best.i IS NULL OR best.i = best.first_i OR best.i = best.last_i THEN
		RETURN;
	END IF;
	lo := s_lo + (s_hi - s_lo) * (best.i - 1) / 1000;
	hi := s_lo + (s_hi - s_lo) * (best.i + 1) / 1000;
	IF NOT (pg_temp.ref_slope(y, lo) > 0 AND pg_temp.ref_slope(y, hi) < 0) THEN
		RAISE EXCEPTION 'ref_mle: the slope does not change sign around grid point %', best.i;
	END IF;
	LOOP
		mid := (lo + hi) / 2;
		EXIT WHEN mid <= lo OR mid >= hi;
		IF pg_temp.ref_slope(y, mid) > 0 THEN lo := mid; ELSE hi := mid; END IF;
	END LOOP;
	IF lo = 0 OR hi = 0 THEN
		xi := 0;
		beta := (SELECT avg(v) FROM unnest(y) v);
	ELSE
		xi := pg_temp.ref_xi(y, lo);
		beta := xi / ((exp(lo) - 1) / mx);
	END IF;
	IF xi > -1 THEN
		RETURN NEXT;
	END IF;
END $$;
-- does GPD(xi, beta) contain every excess (density above 0)?
CREATE FUNCTION pg_temp.ref_contains(y float8[], xi float8, beta float8) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
	SELECT beta > 0 AND (xi >= 0 OR (SELECT max(v) FROM unnest(y) v) <= beta / -xi
		AND (xi = -1 OR (SELECT max(v) FROM unnest(y) v) < beta / -xi))
$$;
-- auto: mle, then pwm, then mom (each with xi >= -1 and containing the data), then boundary
CREATE FUNCTION pg_temp.ref_fit(y float8[], OUT xi float8, OUT beta float8, OUT fit_method text)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	c record;
BEGIN
	FOR c IN
		SELECT m.xi, m.beta, 'mle' AS method, 1 AS rank FROM pg_temp.ref_mle(y) m
		UNION ALL
		SELECT 2 - a0 / (a0 - 2 * a1), 2 * a0 * a1 / (a0 - 2 * a1), 'pwm', 2
		FROM (SELECT avg(v) AS a0, avg((1 - (rn - 0.35) / n) * v) AS a1
			FROM (SELECT v, row_number() OVER (ORDER BY v) AS rn, count(*) OVER () AS n FROM unnest(y) v) r) q
		WHERE a0 - 2 * a1 > 0
		UNION ALL
		SELECT (1 - m ^ 2 / s2) / 2, m * (1 + m ^ 2 / s2) / 2, 'mom', 3
		FROM (SELECT avg(v) AS m, var_samp(v) AS s2 FROM unnest(y) v) q WHERE s2 > 0
		UNION ALL
		SELECT -1, max(v), 'boundary', 4 FROM unnest(y) v
		ORDER BY rank
	LOOP
		IF c.xi >= -1 AND pg_temp.ref_contains(y, c.xi, c.beta) THEN
			xi := c.xi;
			beta := c.beta;
			fit_method := c.method;
			RETURN;
		END IF;
	END LOOP;
END $$;

-- MLE within 4 asymptotic standard errors (Smith 1985: var xi = (1+xi)^2/n, var beta = 2 beta^2 (1+xi)/n)
SELECT ok(abs(f.xi - c.xi) <= 4 * (1 + c.xi) / sqrt(c.n)
		AND abs(f.beta - c.beta) <= 4 * c.beta * sqrt(2 * (1 + c.xi) / c.n) AND f.fit_method = 'mle',
	format('mle recovers xi = %s, beta = %s (seed %s): got %s, %s', c.xi, c.beta, c.seed,
		round(f.xi::numeric, 4), round(f.beta::numeric, 4)))
FROM gpd_cases c, gpd_fit(c.y) f ORDER BY c.id;

-- PWM within 4 asymptotic standard errors (Hosking & Wallis 1987, k = -xi, valid for xi < 1/2)
SELECT ok(abs(f.xi - c.xi) <= 4 * sqrt((1 - c.xi) * (2 - c.xi) ^ 2 * (1 - c.xi + 2 * c.xi ^ 2)
			/ ((1 - 2 * c.xi) * (3 - 2 * c.xi) * c.n))
		AND abs(f.beta - c.beta) <= 4 * c.beta * sqrt((7 - 18 * c.xi + 11 * c.xi ^ 2 - 2 * c.xi ^ 3)
			/ ((1 - 2 * c.xi) * (3 - 2 * c.xi) * c.n)),
	format('pwm recovers xi = %s, beta = %s (seed %s): got %s, %s', c.xi, c.beta, c.seed,
		round(f.xi::numeric, 4), round(f.beta::numeric, 4)))
FROM gpd_cases c, gpd_fit(c.y, 'pwm') f ORDER BY c.id;

-- the MLE is a maximum: reported log-likelihood is the SQL one, and no nearby point beats it
SELECT ok(abs(f.loglik - pg_temp.gpd_ll(c.y, f.xi, f.beta)) <= 1e-9 * abs(f.loglik)
		AND NOT EXISTS (SELECT 1 FROM (VALUES (-1), (0), (1)) a(dx), (VALUES (-1), (0), (1)) b(db)
			WHERE pg_temp.gpd_ll(c.y, f.xi + dx * 0.002, f.beta * (1 + db * 0.002)) > f.loglik + 1e-9 * abs(f.loglik)),
	format('mle maximises the likelihood (case %s)', c.id))
FROM gpd_cases c, gpd_fit(c.y, 'mle') f ORDER BY c.id;

-- small samples: pwm and mom equal their closed forms computed in SQL
CREATE TABLE small_samples AS
SELECT s, array_agg(round((-ln(1 - random()) * (1 + s % 3))::numeric, 4)::float8) AS y
FROM (SELECT setseed(0.2)) z, generate_series(1, 6) s, generate_series(1, 7 + 3 * s) i GROUP BY s;
-- a fit that does not contain its data (an excess beyond beta/|xi|) is refused with 22023
CREATE FUNCTION pg_temp.fit_or_refused(y float8[], method text, OUT xi float8, OUT beta float8, OUT refused boolean)
LANGUAGE plpgsql AS $$
BEGIN
	SELECT f.xi, f.beta, false INTO xi, beta, refused FROM gpd_fit(y, method) f;
EXCEPTION WHEN invalid_parameter_value THEN
	refused := true;
END $$;
CREATE TEMP VIEW small_closed AS
SELECT s, y, cxi, cbeta,
	cxi >= 0 OR (SELECT max(v) FROM unnest(y) v) < cbeta / -cxi AS contains
FROM (SELECT s, 2 - r.a0 / (r.a0 - 2 * r.a1) AS cxi, 2 * r.a0 * r.a1 / (r.a0 - 2 * r.a1) AS cbeta
	FROM (SELECT s, avg(v) AS a0, avg((1 - (rn - 0.35) / n) * v) AS a1
		FROM (SELECT s, v, row_number() OVER (PARTITION BY s ORDER BY v) AS rn,
				count(*) OVER (PARTITION BY s) AS n
			FROM small_samples, unnest(y) v) q GROUP BY s) r) c
JOIN small_samples USING (s);
SELECT ok(CASE WHEN c.contains THEN NOT f.refused AND abs(f.xi - c.cxi) < 1e-12 AND abs(f.beta - c.cbeta) < 1e-12
			   ELSE f.refused END,
	format('pwm closed form, sample %s (contains its data: %s)', c.s, c.contains))
FROM small_closed c, pg_temp.fit_or_refused(c.y, 'pwm') f ORDER BY c.s;
SELECT ok(CASE WHEN r.cxi >= 0 OR r.mx < r.cbeta / -r.cxi
			   THEN NOT f.refused AND abs(f.xi - r.cxi) < 1e-12 AND abs(f.beta - r.cbeta) < 1e-12
			   ELSE f.refused END,
	format('mom closed form, sample %s', r.s))
FROM (SELECT s, (1 - m ^ 2 / v) / 2 AS cxi, m * (1 + m ^ 2 / v) / 2 AS cbeta, mx
	FROM (SELECT s, avg(v) AS m, var_samp(v) AS v, max(v) AS mx FROM small_samples, unnest(y) v GROUP BY s) q) r
JOIN small_samples USING (s), pg_temp.fit_or_refused(small_samples.y, 'mom') f ORDER BY r.s;

-- every fit auto returns contains its data: a finite log-likelihood, no excess beyond
-- beta/|xi| when xi < 0, and xi >= -1 (below it the likelihood is unbounded); samples
-- from short-tailed GPDs (xi down to -1.5) reach the moment and boundary fits
CREATE TABLE short_tailed AS
SELECT s, xi0, array_agg(((1 - random()) ^ (-xi0) - 1) / xi0) AS y
FROM (SELECT setseed(0.31)) z, generate_series(1, 120) s,
	LATERAL (SELECT -0.2 - (s % 14) * 0.1 AS xi0) x, generate_series(1, 5 + s % 11) i
GROUP BY s, xi0;
SELECT ok(bool_and(isfinite_ll AND xi >= -1 AND (xi >= 0 OR mx <= beta / -xi * (1 + 1e-12))),
	format('auto fits of %s short-tailed samples contain their data (methods used: %s)',
		count(*), string_agg(DISTINCT fit_method, ', ' ORDER BY fit_method)))
FROM (SELECT f.xi, f.beta, f.fit_method, f.loglik > '-Infinity' AND f.loglik < 'Infinity' AS isfinite_ll,
		(SELECT max(v) FROM unnest(t.y) v) AS mx
	FROM short_tailed t, gpd_fit(t.y) f) q;
SELECT ok(count(DISTINCT f.fit_method) >= 3, 'the short-tailed samples exercise at least three methods of auto')
FROM short_tailed t, gpd_fit(t.y) f;
-- auto against the SQL fit: the same method, xi within 2e-7, beta within 2e-7 of itself (on these
-- samples the C fit's golden section on the profile stops up to 3.9e-8 from the maximum in xi, the
-- SQL fit's bisection on the root of its derivative up to 2.3e-12, both measured with mpmath)
CREATE TEMP TABLE auto_fits AS
SELECT 'short-tailed' AS samples, t.s, f.xi, f.beta, f.fit_method, r.xi AS ref_xi, r.beta AS ref_beta, r.fit_method AS ref_method
FROM short_tailed t LEFT JOIN LATERAL gpd_fit(t.y) f ON true LEFT JOIN LATERAL pg_temp.ref_fit(t.y) r ON true
UNION ALL
SELECT 'small', c.s, f.xi, f.beta, f.fit_method, r.xi, r.beta, r.fit_method
FROM small_samples c LEFT JOIN LATERAL gpd_fit(c.y) f ON true LEFT JOIN LATERAL pg_temp.ref_fit(c.y) r ON true;
SELECT is((SELECT string_agg(format('%s: %s (%s, %s) vs %s (%s, %s)', a.s, a.fit_method, a.xi, a.beta,
			coalesce(a.ref_method, 'NULL'), a.ref_xi, a.ref_beta), '; ' ORDER BY a.s)
		FROM auto_fits a
		WHERE a.samples = v.samples AND NOT coalesce(a.fit_method = a.ref_method AND abs(a.xi - a.ref_xi) <= 2e-7
			AND abs(a.beta - a.ref_beta) <= 2e-7 * a.ref_beta, false)),
	NULL, format('auto = the SQL fit on the %s %s samples (its methods: %s)',
		(SELECT count(*) FROM auto_fits a WHERE a.samples = v.samples), v.samples,
		(SELECT string_agg(ref_method || ' ' || n, ', ' ORDER BY ref_method)
			FROM (SELECT ref_method, count(*) AS n FROM auto_fits a WHERE a.samples = v.samples GROUP BY 1) q)))
FROM (VALUES (1, 'short-tailed'), (2, 'small')) v(k, samples) ORDER BY v.k;
-- the sample whose pwm fit ended at 1.570 below its largest excess 2.064: auto takes the
-- boundary fit, the uniform law on [0, max]; its log-likelihood is -n ln(max)
SELECT results_eq(
	$$SELECT xi, beta, fit_method, round(loglik::numeric, 12) FROM gpd_fit(ARRAY[1.009799,0.510994,1.377485,0.645857,
		1.101022,0.526925,1.140874,0.731322,2.063692,0.919007])$$,
	$$VALUES (-1::float8, 2.063692::float8, 'boundary'::text, round((-10 * ln(2.063692))::numeric, 12))$$,
	'a sample without likelihood maximum and whose moment fits end before its largest excess gets the boundary fit');
SELECT throws_ok($$SELECT * FROM gpd_fit(ARRAY[1.009799,0.510994,1.377485,0.645857,1.101022,0.526925,1.140874,
	0.731322,2.063692,0.919007], 'pwm')$$, '22023', NULL, 'pwm refuses a fit whose endpoint lies below an excess');
SELECT is((SELECT fit_method FROM gpd_fit(ARRAY[1, 1, 1], 'boundary')), 'boundary', 'the boundary fit can be asked for');

-- == The risk formula against an independent SQL implementation, from thetas ==
CREATE FUNCTION pg_temp.ref_risk(thetas float8[], rows bigint, alpha float8, pi_u float8)
RETURNS TABLE(risk float8, u float8, n_u integer, xi float8, beta float8, fit_method text)
LANGUAGE plpgsql AS $$
DECLARE
	eps float8 := CASE WHEN rows IS NULL THEN 0 ELSE 0.5 / rows END;
	n_p integer := cardinality(thetas);
	uc float8;
	ex float8[];
	f record;
	q float8;
BEGIN
	SELECT percentile_disc(1 - pi_u) WITHIN GROUP (ORDER BY t) INTO u FROM unnest(thetas) t;
	uc := least(greatest(u, eps), 1 - eps);
	SELECT array_agg(ln(c / (1 - c)) - ln(uc / (1 - uc))), count(*) INTO ex, n_u
	FROM (SELECT least(greatest(t, eps), 1 - eps) AS c FROM unnest(thetas) t WHERE t > u) s;
	SELECT * INTO f FROM pg_temp.ref_fit(ex);
	xi := f.xi;
	beta := f.beta;
	fit_method := f.fit_method;
	q := CASE WHEN xi = 0 THEN beta * ln(n_u / (n_p * alpha))
		ELSE beta / xi * (power(n_p * alpha / n_u, -xi) - 1) END;
	risk := 1 / (1 + exp(-(ln(uc / (1 - uc)) + q)));
	RETURN NEXT;
END $$;

-- The risk and its fit agree: excesses computed in SQL differ from C's in the last bits, and the
-- C fit's maximum likelihood is up to 3.9e-8 off in xi (above), which moved the risk by up to
-- 4.2e-9 here; a method or formula gone wrong moves it by 1e-4 and more.  A function that
-- returns no row gives a failing test, not none
CREATE TYPE pg_temp.risk_fit AS (risk float8, u float8, n_u integer, xi float8, beta float8, fit_method text);
CREATE FUNCTION pg_temp.risk_agrees(a pg_temp.risk_fit, b pg_temp.risk_fit) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
	SELECT coalesce(abs(a.risk - b.risk) <= 5e-8 AND a.u = b.u AND a.n_u = b.n_u AND abs(a.xi - b.xi) <= 2e-7
		AND abs(a.beta - b.beta) <= 2e-7 * b.beta AND a.fit_method = b.fit_method, false)
$$;
CREATE TABLE risk_cases AS
SELECT k, ARRAY(SELECT (floor(random() * 50) + 1) / 50.0 FROM generate_series(1, 20 + 37 * k)) AS th
FROM (SELECT setseed(0.3)) z, generate_series(1, 6) k;
SELECT ok(pg_temp.risk_agrees(ROW(a.risk, a.u, a.n_u, a.xi, a.beta, a.fit_method), ROW(b.*)),
	format('qar_risk_from_thetas = SQL formula and fit, case %s (risk %s, %s)', k, round(a.risk::numeric, 6), a.fit_method))
FROM risk_cases c LEFT JOIN LATERAL qar_risk_from_thetas(c.th, 0.01, 0.1, 50) a ON true
	LEFT JOIN LATERAL pg_temp.ref_risk(c.th, 50, 0.01, 0.1) b ON true
ORDER BY k;
-- thetas whose excesses are the short-tailed samples, so that the risk uses every method of auto:
-- u = 0.5 (logit 0), 7 n_u thetas up to it, the n_u samples above it (expit(y))
CREATE TEMP TABLE short_risks AS
SELECT t.s, ROW(a.risk, a.u, a.n_u, a.xi, a.beta, a.fit_method)::pg_temp.risk_fit AS a, ROW(b.*)::pg_temp.risk_fit AS b
FROM short_tailed t
	CROSS JOIN LATERAL (SELECT ARRAY(SELECT 0.5 * i / (7 * cardinality(t.y)) FROM generate_series(1, 7 * cardinality(t.y)) i)
		|| ARRAY(SELECT 1 / (1 + exp(-v)) FROM unnest(t.y) v) AS th) c
	LEFT JOIN LATERAL qar_risk_from_thetas(c.th, 0.01, 0.125) a ON true
	LEFT JOIN LATERAL pg_temp.ref_risk(c.th, NULL, 0.01, 0.125) b ON true;
SELECT is((SELECT string_agg(format('%s: %s vs %s', s, a, b), '; ' ORDER BY s) FROM short_risks WHERE NOT pg_temp.risk_agrees(a, b)),
	NULL, format('qar_risk_from_thetas = SQL formula and fit on thetas over the %s short-tailed samples (its methods: %s)',
		(SELECT count(*) FROM short_risks),
		(SELECT string_agg(m || ' ' || n, ', ' ORDER BY m) FROM (SELECT (b).fit_method AS m, count(*) AS n FROM short_risks GROUP BY 1) q)));

-- == Random tables: types, NULLs, ties ==
CREATE FUNCTION pg_temp.make_table(name text, seed float8, nrows integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM setseed(seed);
	EXECUTE format($q$CREATE TABLE %I AS
		SELECT i AS id,
			(random() * 3)::integer AS a,
			CASE WHEN random() < 0.1 THEN NULL ELSE chr(65 + (random() * 5)::integer) END AS b,
			CASE WHEN random() < 0.05 THEN '-0'::float8 WHEN random() < 0.1 THEN 'NaN'::float8
				ELSE round((random() * 4)::numeric, 0)::float8 END AS c,
			date '2020-01-01' + (random() * 6)::integer AS d,
			(random() * 40)::integer AS e,
			random() < 0.3 AS f,
			CASE WHEN random() < 0.2 THEN NULL ELSE (random() * 8)::integer END AS g,
			md5((random() * 12)::integer::text) AS h
		FROM generate_series(1, %s) i$q$, name, nrows);
END $$;
SELECT pg_temp.make_table('qr1', 0.1, 40);
SELECT pg_temp.make_table('qr2', 0.2, 300);
SELECT pg_temp.make_table('qr3', 0.3, 1500);
CREATE TEMP TABLE qr2_before AS SELECT md5(string_agg(t::text, ',' ORDER BY id)) AS digest FROM qr2 t;

-- the p-subsets of cols in lexicographic order of positions
CREATE FUNCTION pg_temp.subsets(cols text[], p integer) RETURNS SETOF text[]
LANGUAGE sql AS $$
	WITH RECURSIVE s(pos, last) AS (
		SELECT ARRAY[i], i FROM generate_series(1, cardinality(cols)) i
		UNION ALL
		SELECT pos || j, j FROM s, generate_series(s.last + 1, cardinality(cols)) j
		WHERE cardinality(pos) < p)
	SELECT ARRAY(SELECT cols[k] FROM unnest(pos) k) FROM s WHERE cardinality(pos) = p ORDER BY pos
$$;

-- one GROUP BY per subset: H(j)
CREATE FUNCTION pg_temp.ref_thetas(rel text, cols text[], p integer)
RETURNS TABLE(columns text[], h bigint, singles bigint)
LANGUAGE plpgsql AS $$
BEGIN
	FOR columns IN SELECT * FROM pg_temp.subsets(cols, p) LOOP
		EXECUTE format('SELECT count(*), count(*) FILTER (WHERE n = 1) FROM (SELECT count(*) AS n FROM %I GROUP BY %s) s',
			rel, (SELECT string_agg(quote_ident(c), ', ') FROM unnest(columns) c))
			INTO h, singles;
		RETURN NEXT;
	END LOOP;
END $$;

-- U+ by brute force: for every subset, the rows alone in their group get H/L
CREATE FUNCTION pg_temp.ref_uplus(rel text, cols text[], p integer)
RETURNS TABLE(id integer, u_plus float8, uniq integer)
LANGUAGE plpgsql AS $$
DECLARE
	l bigint;
	sub text[];
	hj bigint;
	list text;
BEGIN
	EXECUTE format('SELECT count(*) FROM %I', rel) INTO l;
	CREATE TEMP TABLE ref_acc (id integer, w bigint, n integer) ON COMMIT DROP;
	FOR sub IN SELECT * FROM pg_temp.subsets(cols, p) LOOP
		list := (SELECT string_agg(quote_ident(c), ', ') FROM unnest(sub) c);
		EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM %I GROUP BY %s) s', rel, list) INTO hj;
		EXECUTE format('INSERT INTO ref_acc SELECT id, $1, 1 FROM (SELECT id, count(*) OVER (PARTITION BY %s) AS f FROM %I) s WHERE f = 1',
			list, rel) USING hj;
	END LOOP;
	RETURN QUERY EXECUTE format('SELECT t.id, coalesce(sum(a.w), 0)::float8 / $1, coalesce(sum(a.n), 0)::integer
		FROM %I t LEFT JOIN ref_acc a USING (id) GROUP BY t.id', rel) USING l;
	DROP TABLE ref_acc;
END $$;

SELECT is(
	(SELECT array_agg(row(q.columns, q.classes, q.singletons)::text ORDER BY ord)
		FROM qar_thetas(t.rel::regclass, ARRAY['a','b','c','d','e','f','g','h'], t.p)
			WITH ORDINALITY q(columns, theta, classes, singletons, ord)),
	(SELECT array_agg(row(r.columns, r.h, r.singles)::text ORDER BY ord)
		FROM pg_temp.ref_thetas(t.rel, ARRAY['a','b','c','d','e','f','g','h'], t.p)
			WITH ORDINALITY r(columns, h, singles, ord)),
	format('qar_thetas classes and singletons = one GROUP BY per subset (%s, p = %s)', t.rel, t.p))
FROM (VALUES ('qr1', 1), ('qr1', 3), ('qr1', 8), ('qr2', 2), ('qr2', 4), ('qr3', 3)) t(rel, p);

SELECT ok(NOT EXISTS (
		SELECT 1 FROM qar_thetas(t.rel::regclass, ARRAY['a','b','c','d','e','f','g','h'], 3) q
		WHERE q.theta <> q.classes::float8 / t.n),
	format('theta = H/L (%s)', t.rel))
FROM (VALUES ('qr1', 40), ('qr2', 300), ('qr3', 1500)) t(rel, n);

SELECT is(
	(SELECT count(*) FROM qar_record_scores(t.rel::regclass, ARRAY['a','b','c','d','e','f','g','h'], t.p, 'id') s
		FULL JOIN pg_temp.ref_uplus(t.rel, ARRAY['a','b','c','d','e','f','g','h'], t.p) r ON r.id = s.row_key::integer
		WHERE s.row_key IS NULL OR r.id IS NULL OR abs(s.u_plus - r.u_plus) > 1e-12 OR s.unique_subsets <> r.uniq),
	0::bigint,
	format('U+ = brute force over every row (%s, p = %s)', t.rel, t.p))
FROM (VALUES ('qr1', 2), ('qr1', 3), ('qr2', 3), ('qr2', 5), ('qr3', 3)) t(rel, p);

-- T of a table against the SQL formula fed with GROUP BY thetas
SELECT ok(pg_temp.risk_agrees(ROW(a.risk, a.u, a.n_u, a.xi, a.beta, a.fit_method), ROW(b.*)) AND a.n_p = t.np AND a.rows = t.n,
	format('qar_risk = SQL formula and fit on GROUP BY thetas (%s, p = %s): %s, %s', t.rel, t.p,
		round(a.risk::numeric, 6), a.fit_method))
FROM (VALUES ('qr1', 3, 40, 56), ('qr2', 3, 300, 56), ('qr2', 4, 300, 70), ('qr3', 3, 1500, 56)) t(rel, p, n, np)
	LEFT JOIN LATERAL qar_risk(t.rel::regclass, ARRAY['a','b','c','d','e','f','g','h'], t.p, 0.01, 0.2) a ON true
	LEFT JOIN LATERAL pg_temp.ref_risk(ARRAY(SELECT r.h::float8 / t.n
		FROM pg_temp.ref_thetas(t.rel, ARRAY['a','b','c','d','e','f','g','h'], t.p) r), t.n, 0.01, 0.2) b ON true;

-- thetas of 1: subsets containing a unique column identify every row; logit clamped at 1 - 1/(2L)
CREATE TABLE qr_ident AS SELECT id, a, b, c, d, e, f, g, md5(id::text) AS h FROM qr2;
SELECT ok((SELECT count(*) FILTER (WHERE theta = 1) = 21 FROM qar_thetas('qr_ident', ARRAY['a','b','c','d','e','f','g','h'], 3))
		AND pg_temp.risk_agrees(ROW(a.risk, a.u, a.n_u, a.xi, a.beta, a.fit_method), ROW(b.*)),
	format('thetas of 1 (21 subsets with a unique column): qar_risk = SQL formula and fit with the clamp (%s, n_u = %s, %s)',
		round(a.risk::numeric, 6), a.n_u, a.fit_method))
FROM (SELECT 1) one
	LEFT JOIN LATERAL qar_risk('qr_ident', ARRAY['a','b','c','d','e','f','g','h'], 3, 0.01, 0.5) a ON true
	LEFT JOIN LATERAL pg_temp.ref_risk(ARRAY(SELECT r.h::float8 / 300
		FROM pg_temp.ref_thetas('qr_ident', ARRAY['a','b','c','d','e','f','g','h'], 3) r), 300, 0.01, 0.5) b ON true;

-- == Exact contributions: T - T(table without the row), the latter by qar_risk on a copy ==
CREATE FUNCTION pg_temp.risk_or_null(rel text, p integer) RETURNS float8
LANGUAGE plpgsql AS $$
BEGIN
	RETURN (SELECT risk FROM qar_risk(rel::regclass, ARRAY['a','b','c','d','e','f','g','h'], p, 0.01, 0.2));
EXCEPTION WHEN invalid_parameter_value THEN
	RETURN NULL;
END $$;
CREATE FUNCTION pg_temp.check_contributions(rel text, p integer, ids integer[]) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	full_risk float8 := pg_temp.risk_or_null(rel, p);
	i integer;
	r record;
	w float8;
BEGIN
	FOREACH i IN ARRAY ids LOOP
		EXECUTE format('CREATE TEMP TABLE qar_copy AS SELECT * FROM %I WHERE id <> %s', rel, i);
		w := pg_temp.risk_or_null('qar_copy', p);
		SELECT * INTO r FROM qar_record_contributions(rel::regclass, ARRAY['a','b','c','d','e','f','g','h'], p, 'id', 0.01, 0.2)
		WHERE row_key = i::text;
		DROP TABLE qar_copy;
		IF r.risk_without IS DISTINCT FROM w OR r.contribution IS DISTINCT FROM full_risk - w THEN
			RAISE WARNING 'row %: % % vs % %', i, r.risk_without, r.contribution, w, full_risk - w;
			RETURN false;
		END IF;
	END LOOP;
	RETURN true;
END $$;
SELECT ok(pg_temp.check_contributions('qr1', 3, ARRAY(SELECT generate_series(1, 40))),
	'exact contributions = qar_risk without the row, every row of qr1');
SELECT ok(pg_temp.check_contributions('qr2', 3,
		ARRAY(SELECT row_key::integer FROM qar_record_scores('qr2', ARRAY['a','b','c','d','e','f','g','h'], 3, 'id')
			ORDER BY u_plus DESC, row_key::integer LIMIT 6) || ARRAY[1, 2, 3]),
	'exact contributions = qar_risk without the row, top U+ rows and others of qr2');

-- == Greedy removal: each step's row is the top U+ of the table without the previous rows ==
CREATE FUNCTION pg_temp.check_greedy(rel text, p integer, steps integer) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	g record;
	top record;
	expect float8;
BEGIN
	EXECUTE format('CREATE TEMP TABLE greedy_copy AS SELECT * FROM %I', rel);
	FOR g IN SELECT * FROM qar_greedy_removal(rel::regclass, ARRAY['a','b','c','d','e','f','g','h'], p, 'id', steps, 0.01, 0.2)
		ORDER BY step
	LOOP
		IF g.step > 0 THEN
			SELECT * INTO top FROM qar_record_scores('greedy_copy', ARRAY['a','b','c','d','e','f','g','h'], p, 'id')
			ORDER BY u_plus DESC, row_key::integer LIMIT 1;
			IF top.row_key IS DISTINCT FROM g.row_key OR top.u_plus IS DISTINCT FROM g.u_plus THEN
				RAISE WARNING 'step %: % % vs % %', g.step, g.row_key, g.u_plus, top.row_key, top.u_plus;
				RETURN false;
			END IF;
			DELETE FROM greedy_copy WHERE id = g.row_key::integer;
		END IF;
		expect := pg_temp.risk_or_null('greedy_copy', p);
		IF abs(g.risk_after - expect) > 1e-12 OR (g.risk_after IS NULL) <> (expect IS NULL) THEN
			RAISE WARNING 'step %: risk % vs %', g.step, g.risk_after, expect;
			RETURN false;
		END IF;
	END LOOP;
	DROP TABLE greedy_copy;
	RETURN true;
END $$;
SELECT ok(pg_temp.check_greedy('qr1', 3, 30), 'greedy removal = recomputation after each deletion (qr1, 30 of 40 rows)');
SELECT ok(pg_temp.check_greedy('qr2', 3, 25), 'greedy removal = recomputation after each deletion (qr2, 25 steps)');
SELECT ok(pg_temp.check_greedy('qr2', 2, 10), 'greedy removal = recomputation after each deletion (qr2, p = 2)');
SELECT is((SELECT md5(string_agg(t::text, ',' ORDER BY id)) FROM qr2 t), (SELECT digest FROM qr2_before),
	'qr2 is unchanged by greedy removal and exact contributions');

-- == Record entropy against SQL: F by a self-join, H by ranks, floor(sqrt(N_p)) bins ==
CREATE TABLE qe AS
SELECT i AS id, (random() * 4)::integer AS a, chr(65 + (random() * 3)::integer) AS b,
	(random() * 6)::integer AS c, (random() * 2)::integer AS d, (random() * 9)::integer AS e
FROM (SELECT setseed(0.7)) z, generate_series(1, 90) i;
CREATE TABLE qe2 AS
SELECT i AS id, (random() * 30)::integer AS a, md5((random() * 50)::integer::text) AS b,
	(random() * 200)::integer AS c, (random() * 3)::integer AS d, (random() * 90)::integer AS e
FROM (SELECT setseed(0.8)) z, generate_series(1, 400) i;
CREATE FUNCTION pg_temp.ref_entropy(rel text, cols text[], p integer) RETURNS TABLE(id integer, entropy float8)
LANGUAGE plpgsql AS $$
DECLARE
	sub text[];
	np integer := (SELECT count(*) FROM pg_temp.subsets(cols, p));
	nb integer := floor(sqrt(np));
	l integer;
BEGIN
	EXECUTE format('SELECT count(*) FROM %I', rel) INTO l;
	CREATE TEMP TABLE ent_acc (id integer, bin integer) ON COMMIT DROP;
	FOR sub IN SELECT * FROM pg_temp.subsets(cols, p) LOOP
		EXECUTE format($q$
			INSERT INTO ent_acc
			SELECT id, ((count(*) OVER (ORDER BY f RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)) * %s + %s - 1) / %s
			FROM (SELECT x.id, (SELECT count(*) FROM %I y WHERE %s) AS f FROM %I x) s$q$,
			nb, l, l, rel, (SELECT string_agg(format('y.%1$I <= x.%1$I', c), ' AND ') FROM unnest(sub) c), rel);
	END LOOP;
	RETURN QUERY SELECT s.id, -sum(s.c::float8 / np * ln(s.c::float8 / np))
		FROM (SELECT a.id, a.bin, count(*) AS c FROM ent_acc a GROUP BY 1, 2) s GROUP BY s.id;
	DROP TABLE ent_acc;
END $$;
-- p <= 3 counts dominance by divide and conquer, p > 3 by pairs: both against the self-join
SELECT is(
	(SELECT count(*) FROM qar_record_entropy(t.rel::regclass, ARRAY['a','b','c','d','e'], t.p, 'id') s
		FULL JOIN pg_temp.ref_entropy(t.rel, ARRAY['a','b','c','d','e'], t.p) r ON r.id = s.row_key::integer
		WHERE s.row_key IS NULL OR r.id IS NULL OR abs(s.entropy - r.entropy) > 1e-12),
	0::bigint, format('record entropy = SQL reference (%s, p = %s)', t.rel, t.p))
FROM (VALUES ('qe', 1), ('qe', 2), ('qe', 3), ('qe', 4), ('qe2', 2), ('qe2', 3), ('qe2', 4)) t(rel, p);
SELECT ok((SELECT max(entropy) > 0 FROM qar_record_entropy('qe', ARRAY['a','b','c','d','e'], 2, 'id')),
	'entropies are not all zero');

-- == Row-level security and privileges: the functions see what the caller sees ==
CREATE ROLE qar_reader NOLOGIN;
CREATE TABLE qr_rls AS SELECT * FROM qr2;
ALTER TABLE qr_rls ENABLE ROW LEVEL SECURITY;
CREATE POLICY even ON qr_rls FOR SELECT USING (id % 2 = 0);
GRANT SELECT ON qr_rls TO qar_reader;
CREATE TABLE qr_even AS SELECT * FROM qr2 WHERE id % 2 = 0;
CREATE TABLE qr_secret AS SELECT * FROM qr2;
CREATE TEMP TABLE rls_expect AS
SELECT (SELECT array_agg(row(q.*)::text) FROM qar_thetas('qr_even', ARRAY['a','b','c','d','e','f','g','h'], 3) q) AS thetas,
	(SELECT array_agg(row(s.*)::text ORDER BY row_key) FROM qar_record_scores('qr_even', ARRAY['a','b','c','d','e','f','g','h'], 3, 'id') s) AS scores,
	(SELECT risk FROM qar_risk('qr_even', ARRAY['a','b','c','d','e','f','g','h'], 3, 0.01, 0.2)) AS risk;
GRANT SELECT ON rls_expect TO qar_reader;
SET ROLE qar_reader;
SELECT is((SELECT array_agg(row(q.*)::text) FROM qar_thetas('qr_rls', ARRAY['a','b','c','d','e','f','g','h'], 3) q),
	(SELECT thetas FROM rls_expect), 'RLS: thetas of the visible rows only');
SELECT is((SELECT array_agg(row(s.*)::text ORDER BY row_key) FROM qar_record_scores('qr_rls', ARRAY['a','b','c','d','e','f','g','h'], 3, 'id') s),
	(SELECT scores FROM rls_expect), 'RLS: U+ of the visible rows only');
SELECT is((SELECT risk FROM qar_risk('qr_rls', ARRAY['a','b','c','d','e','f','g','h'], 3, 0.01, 0.2)),
	(SELECT risk FROM rls_expect), 'RLS: risk of the visible rows only');
SELECT throws_ok($$SELECT * FROM qar_thetas('qr_secret', ARRAY['a','b'], 1)$$, '42501', NULL,
	'no SELECT privilege: 42501');
SELECT throws_ok($$SELECT * FROM qar_greedy_removal('qr_secret', ARRAY['a','b'], 1, 'id', 1)$$, '42501', NULL,
	'no SELECT privilege (greedy removal): 42501');
RESET ROLE;

-- == Bad input: SQLSTATEs ==
SELECT throws_ok($$SELECT * FROM qar_thetas('qr1', ARRAY['a','b'], 0)$$, '22023', NULL, 'p = 0: 22023');
SELECT throws_ok($$SELECT * FROM qar_thetas('qr1', ARRAY['a','b'], 3)$$, '22023', NULL, 'p > N: 22023');
SELECT is((SELECT count(*) FROM qar_thetas('qr1', ARRAY['a','b','c'], 3)), 1::bigint, 'p = N: one subset');
SELECT throws_ok($$SELECT * FROM qar_risk('qr1', ARRAY['a','b','c'], 3)$$, '22023', NULL,
	'p = N: one theta, no exceedance: 22023');
SELECT throws_ok($$SELECT * FROM qar_thetas('qr1', ARRAY['a','zz'], 1)$$, '42703', NULL, 'unknown column: 42703');
SELECT throws_ok($$SELECT * FROM qar_record_scores('qr1', ARRAY['a'], 1, 'zz')$$, '42703', NULL, 'unknown key column: 42703');
SELECT throws_ok($$SELECT * FROM qar_thetas('qr1', ARRAY['a','a'], 1)$$, '42701', NULL, 'duplicate column: 42701');
SELECT throws_ok($$SELECT * FROM qar_thetas('qr1', ARRAY['a',NULL], 1)$$, '22004', NULL, 'NULL column: 22004');
SELECT throws_ok($$SELECT * FROM qar_thetas('qr1', NULL, 1)$$, '22004', NULL, 'NULL columns: 22004');
SELECT throws_ok($$SELECT * FROM qar_thetas('qr1', '{}', 1)$$, '22023', NULL, 'no column: 22023');
SELECT throws_ok($$SELECT * FROM qar_risk('qr2', ARRAY['a','b','c','d','e','f','g','h'], 3, 0, 0.05)$$, '22023', NULL, 'alpha = 0: 22023');
SELECT throws_ok($$SELECT * FROM qar_risk('qr2', ARRAY['a','b','c','d','e','f','g','h'], 3, 0.01, 'NaN')$$, '22023', NULL, 'pi_u NaN: 22023');
SELECT throws_ok($$SELECT * FROM qar_risk('qr2', ARRAY['a','b','c','d','e','f','g','h'], 3, NULL, 0.05)$$, '22004', NULL, 'alpha NULL: 22004');
SELECT throws_ok($$SELECT * FROM qar_risk('qr2', ARRAY['a','b','c','d','e','f','g','h'], 3, 0.5, 0.05)$$, '22023', NULL,
	'alpha not below n_u / n_p: 22023');
SELECT throws_ok($$SELECT * FROM qar_risk_from_thetas(ARRAY[0.3, 0.3, 0.3, 0.3, 0.3]::float8[])$$, '22023', NULL,
	'all thetas equal: 22023');
SELECT throws_ok($$SELECT * FROM qar_risk_from_thetas(ARRAY(SELECT i / 100.0 FROM generate_series(1, 20) i))$$, '22023', NULL,
	'one exceedance: 22023');
SELECT throws_ok($$SELECT * FROM qar_risk_from_thetas(ARRAY[0.2, 1]::float8[], 0.01, 0.5)$$, '22023', NULL,
	'theta 1 without rows: 22023');
SELECT throws_ok($$SELECT * FROM qar_risk_from_thetas(ARRAY[0.2, NULL]::float8[])$$, '22004', NULL, 'NULL theta: 22004');
SELECT throws_ok($$SELECT * FROM qar_risk_from_thetas(ARRAY[0.2, 0.3]::float8[], 0.01, 0.05, 0)$$, '22023', NULL, 'rows = 0: 22023');
SELECT throws_ok($$SELECT * FROM gpd_fit(ARRAY[1]::float8[])$$, '22023', NULL, 'one excess: 22023');
SELECT throws_ok($$SELECT * FROM gpd_fit(ARRAY[1, 'Infinity']::float8[])$$, '22023', NULL, 'infinite excess: 22023');
SELECT throws_ok($$SELECT * FROM gpd_fit(ARRAY[1, 1, 1]::float8[], 'mle')$$, '22023', NULL, 'mle without an interior maximum: 22023');
SELECT throws_ok($$SELECT * FROM gpd_fit(ARRAY[[1, 2], [3, 4]]::float8[])$$, '2202E', NULL, '2-D excesses: 2202E');
SELECT throws_ok($$SELECT qar_tail_risk(1, 0.1, 1, 10, 2)$$, '22023', NULL, 'u = 1: 22023');
SELECT throws_ok($$SELECT qar_tail_risk(0.5, 0.1, 1, 10, 20)$$, '22023', NULL, 'n_u > n_p: 22023');
SELECT throws_ok($$SELECT * FROM qar_record_contributions('qr2', ARRAY['a','b'], 1, 'id', 0.01, 0.05, 100)$$, '54000', NULL,
	'contributions past max_rows: 54000');
SELECT throws_ok($$SELECT * FROM qar_record_entropy('qr2', ARRAY['a','b'], 1, 'id', 100)$$, '54000', NULL,
	'entropy past max_rows: 54000');
SELECT throws_ok($$SELECT * FROM qar_greedy_removal('qr1', ARRAY['a','b'], 1, 'id', 40)$$, '22023', NULL,
	'steps = rows: 22023');
SET LOCAL qidrisk.max_state_memory = 64;
SELECT throws_ok($$SELECT * FROM qar_greedy_removal('qr3', ARRAY['a','b','c','d','e','f','g','h'], 3, 'id', 5)$$, '54000', NULL,
	'greedy removal past qidrisk.max_state_memory: 54000');
RESET qidrisk.max_state_memory;
SELECT throws_ok($$SELECT * FROM qar_thetas(0::oid::regclass, ARRAY['a'], 1)$$, '42P01', NULL, 'unknown relation: 42P01');

SELECT * FROM finish();
ROLLBACK;
