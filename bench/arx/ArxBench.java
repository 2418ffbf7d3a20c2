/*
 * bench/arx/ArxBench.java - ARX reference runs for qidrisk's qid_lattice
 * (run through bench/arx.sh, which exports the data and compiles this file
 * against ARX's library; ARX itself is not part of this repository).
 *
 * Modes:
 *   loss     k-anonymity cases on Adult with ARX's Loss metric (and its
 *            discernibility), timed, optionally interleaved with qid_lattice
 *            through a psql co-process; writes every node of case (a)
 *   privacy  the privacy models (average risk, population uniqueness, k-map,
 *            delta-presence, beta-likeness) on Adult; writes every node's
 *            anonymity per model
 *   large    k = 5, 2 % suppression on a large exported table, timed
 *
 * Input: a comma-separated file with a header row (no quoting: the values
 * of Adult hold no commas or quotes), and a folder of ARX-layout hierarchy
 * files <column>.csv.
 */

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.util.ArrayDeque;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXLattice;
import org.deidentifier.arx.ARXLattice.ARXNode;
import org.deidentifier.arx.ARXLattice.Anonymity;
import org.deidentifier.arx.ARXPopulationModel;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.AttributeType;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.DataDefinition;
import org.deidentifier.arx.DataHandle;
import org.deidentifier.arx.DataSubset;
import org.deidentifier.arx.criteria.AverageReidentificationRisk;
import org.deidentifier.arx.criteria.BasicBLikeness;
import org.deidentifier.arx.criteria.DPresence;
import org.deidentifier.arx.criteria.DistinctLDiversity;
import org.deidentifier.arx.criteria.EnhancedBLikeness;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.criteria.KMap;
import org.deidentifier.arx.criteria.PopulationUniqueness;
import org.deidentifier.arx.criteria.PrivacyCriterion;
import org.deidentifier.arx.metric.InformationLoss;
import org.deidentifier.arx.metric.Metric;
import org.deidentifier.arx.metric.Metric.AggregateFunction;
import org.deidentifier.arx.risk.RiskModelPopulationUniqueness.PopulationUniquenessModel;

public final class ArxBench {

	/* qidrisk's QID order (bench/lattice.sh); every level vector printed is in this order */
	static final String[] QID = {"age", "workclass", "education", "marital_status", "occupation", "race", "sex",
		"native_country"};
	static final String SENSITIVE = "income";

	static Map<String, String> opts = new HashMap<>();
	static String[] header;
	static List<String[]> rows;

	public static void main(String[] args) throws Exception {
		Locale.setDefault(Locale.ROOT);
		if (args.length < 1) {
			throw new IllegalArgumentException("usage: ArxBench loss|privacy|large --data F --hierarchies D [options]");
		}
		for (int i = 1; i + 1 < args.length; i += 2) {
			opts.put(args[i].replaceFirst("^--", ""), args[i + 1]);
		}
		readTable(opt("data", null));
		switch (args[0]) {
			case "loss":
				lossMode();
				break;
			case "privacy":
				privacyMode();
				break;
			case "large":
				largeMode();
				break;
			default:
				throw new IllegalArgumentException("unknown mode " + args[0]);
		}
	}

	static String opt(String name, String dflt) {
		String v = opts.get(name);
		if (v == null && dflt == null) {
			throw new IllegalArgumentException("missing --" + name);
		}
		return v == null ? dflt : v;
	}

	/* ---------------------------------------------------------------- data */

	static void readTable(String path) throws IOException {
		List<String> lines = Files.readAllLines(Paths.get(path), StandardCharsets.UTF_8);
		header = lines.get(0).split(",", -1);
		rows = new ArrayList<>(lines.size());
		for (int i = 1; i < lines.size(); i++) {
			String line = lines.get(i);
			if (line.indexOf('"') >= 0) {
				throw new IOException(path + ":" + (i + 1) + ": quoted values are not supported");
			}
			String[] f = line.split(",", -1);
			if (f.length != header.length) {
				throw new IOException(path + ":" + (i + 1) + ": " + f.length + " fields, header has " + header.length);
			}
			rows.add(f);
		}
	}

	/* Data with the given QIDs (hierarchies from files), one sensitive column (may be null); others dropped. */
	static Data makeData(String[] qids, String sensitive) throws IOException {
		List<String> keep = new ArrayList<>(Arrays.asList(qids));
		if (sensitive != null) {
			keep.add(sensitive);
		}
		int[] idx = new int[keep.size()];
		for (int j = 0; j < idx.length; j++) {
			idx[j] = Arrays.asList(header).indexOf(keep.get(j));
			if (idx[j] < 0) {
				throw new IOException("no column " + keep.get(j) + " in the data");
			}
		}
		List<String[]> list = new ArrayList<>(rows.size() + 1);
		list.add(keep.toArray(new String[0]));
		for (String[] r : rows) {
			String[] o = new String[idx.length];
			for (int j = 0; j < idx.length; j++) {
				o[j] = r[idx[j]];
			}
			list.add(o);
		}
		Data data = Data.create(list);
		DataDefinition def = data.getDefinition();
		String dir = opt("hierarchies", null);
		for (String q : qids) {
			def.setAttributeType(q, Hierarchy.create(dir + "/" + q + ".csv", StandardCharsets.UTF_8, ';'));
		}
		if (sensitive != null) {
			def.setAttributeType(sensitive, AttributeType.SENSITIVE_ATTRIBUTE);
		}
		return data;
	}

	/* ------------------------------------------------------------- running */

	static final class Run {
		ARXResult result;
		double ms;
	}

	/* the nodes ARX's search checked (evaluated), as its result's lattice marks them */
	static int checkedNodes(ARXResult res) {
		int n = 0;
		for (ARXNode[] level : res.getLattice().getLevels()) {
			for (ARXNode node : level) {
				if (node.isChecked()) {
					n++;
				}
			}
		}
		return n;
	}

	static Run anonymize(Data data, ARXConfiguration config) throws IOException {
		data.getHandle().release();
		Run run = new Run();
		long t0 = System.nanoTime();
		run.result = new ARXAnonymizer().anonymize(data, config);
		run.ms = (System.nanoTime() - t0) / 1e6;
		return run;
	}

	/* income is sensitive only where a model names it (ARX refuses a sensitive column no model uses) */
	static Run anonymize(Data data, Case c) throws IOException {
		data.getHandle().release();
		data.getDefinition().setAttributeType(SENSITIVE, c.l > 1 ? AttributeType.SENSITIVE_ATTRIBUTE
			: AttributeType.INSENSITIVE_ATTRIBUTE);
		return anonymize(data, c.config());
	}

	static int[] levels(ARXNode node, String[] qids) {
		int[] l = new int[qids.length];
		for (int i = 0; i < qids.length; i++) {
			l[i] = node.getGeneralization(qids[i]);
		}
		return l;
	}

	static String pgArray(int[] l) {
		StringBuilder b = new StringBuilder("{");
		for (int i = 0; i < l.length; i++) {
			b.append(i > 0 ? "," : "").append(l[i]);
		}
		return b.append('}').toString();
	}

	/* ARX's value of a score: the aggregate (Loss) or the single value (discernibility), as ARX prints it */
	static String value(InformationLoss<?> loss) {
		return loss == null ? "" : loss.toString();
	}

	/* per-QID components of a multi-dimensional score, in the given QID order */
	static double[] components(ARXNode node, String[] qids) {
		Object v = node.getHighestScore().getValue();
		if (!(v instanceof double[])) {
			return null;
		}
		double[] raw = (double[]) v;
		String[] arxOrder = node.getQuasiIdentifyingAttributes();
		double[] out = new double[qids.length];
		for (int i = 0; i < qids.length; i++) {
			out[i] = raw[Arrays.asList(arxOrder).indexOf(qids[i])];
		}
		return out;
	}

	/* rows suppressed in the output of a node (of the research subset when there is one) */
	static int suppressed(ARXResult result, ARXNode node, boolean subset) {
		DataHandle h = result.getOutput(node, false);
		if (subset) {
			h = h.getView();
		}
		int n = 0;
		for (int i = 0; i < h.getNumRows(); i++) {
			if (h.isOutlier(i)) {
				n++;
			}
		}
		return n;
	}

	/* every node of the lattice: ARX materializes only the nodes its search touched, expand() adds neighbours */
	static List<ARXNode> allNodes(ARXResult result) {
		ARXLattice lattice = result.getLattice();
		List<ARXNode> out = new ArrayList<>();
		Set<String> seen = new HashSet<>();
		ArrayDeque<ARXNode> queue = new ArrayDeque<>();
		queue.add(lattice.getBottom());
		seen.add(Arrays.toString(lattice.getBottom().getTransformation()));
		while (!queue.isEmpty()) {
			ARXNode node = queue.poll();
			out.add(node);
			lattice.expand(node);
			for (ARXNode s : node.getSuccessors()) {
				if (seen.add(Arrays.toString(s.getTransformation()))) {
					queue.add(s);
				}
			}
		}
		return out;
	}

	static double median(List<Double> v) {
		List<Double> s = new ArrayList<>(v);
		s.sort(null);
		int n = s.size();
		return n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
	}

	static String times(List<Double> v) {
		StringBuilder b = new StringBuilder();
		for (double d : v) {
			b.append(b.length() > 0 ? " " : "").append(String.format("%.1f", d));
		}
		return b.toString();
	}

	/* ------------------------------------------------------------ qidrisk */

	/* A psql co-process (PGHOST etc. from the environment) so qid_lattice runs interleave with ARX's. */
	static final class Psql {
		final Process process;
		final BufferedWriter in;
		final BufferedReader out;
		static final Pattern TIME = Pattern.compile("^Time: ([0-9.]+) ms");

		Psql() throws IOException {
			ProcessBuilder pb = new ProcessBuilder("psql", "-X", "-q", "-At", "-F", "|");
			pb.redirectErrorStream(true);
			process = pb.start();
			in = new BufferedWriter(new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8));
			out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
		}

		/* runs one statement; returns its output lines, the last one "Time: <ms>" or "ERROR ..." */
		List<String> run(String sql) throws IOException {
			in.write("\\timing on\n" + sql + "\n\\timing off\n\\echo @@end\n");
			in.flush();
			List<String> lines = new ArrayList<>();
			String time = null;
			String error = null;
			for (String line; (line = out.readLine()) != null && !line.equals("@@end");) {
				Matcher m = TIME.matcher(line);
				if (m.find()) {
					time = m.group(1);
				} else if (line.contains("ERROR:")) {
					error = line;
				} else {
					lines.add(line);
				}
			}
			lines.add(error != null ? "ERROR " + error : "Time: " + time);
			return lines;
		}

		void close() throws IOException {
			in.write("\\q\n");
			in.flush();
			in.close();
		}
	}

	static final String QID_SQL = "ARRAY['age', 'workclass', 'education', 'marital_status', 'occupation', 'race', 'sex', 'native_country']";
	static final String H_SQL = "jsonb_build_object('age', 'adult_hierarchy_age', 'workclass', 'adult_hierarchy_workclass', "
		+ "'education', 'adult_hierarchy_education', 'marital_status', 'adult_hierarchy_marital_status', "
		+ "'occupation', 'adult_hierarchy_occupation', 'race', 'adult_hierarchy_race', 'sex', 'adult_hierarchy_sex', "
		+ "'native_country', 'adult_hierarchy_native_country')";

	/* ---------------------------------------------------------- loss mode */

	/*
	 * qid_lattice's evaluate modes timed side by side: the default, which
	 * evaluates every anonymous node, and 'best', which like ARX evaluates
	 * only what finding the optimum needs
	 */
	static final String[] EVALUATE = {"anonymous", "best"};

	/* run one timed psql query: its time into ms, its first row (or the error) into result[key] */
	static void timeQuery(Psql psql, String sql, List<Double> ms, Map<String, String> result, String key) throws IOException {
		List<String> out = psql.run(sql);
		String status = out.get(out.size() - 1);
		if (status.startsWith("Time: ") && !status.equals("Time: null")) {
			ms.add(Double.parseDouble(status.substring(6)));
			result.put(key, out.size() > 1 ? out.get(0) : "(no best node)");
		} else {
			result.put(key, status);
		}
	}

	static final class Case {
		final String name;
		final int k;
		final double suppression;
		final int l;
		final String metric;	/* "loss" or "discernibility" */
		final double gs;
		final boolean weighted;
		final List<Double> arxMs = new ArrayList<>();
		/* per qid_lattice evaluate mode (EVALUATE): its times, best row and nodes evaluated */
		final Map<String, List<Double>> qidriskMs = new HashMap<>();
		final Map<String, String> qidriskResult = new HashMap<>();
		final Map<String, String> qidriskNodes = new HashMap<>();
		Run last;

		Case(String name, int k, double suppression, int l, String metric, double gs, boolean weighted) {
			this.name = name;
			this.k = k;
			this.suppression = suppression;
			this.l = l;
			this.metric = metric;
			this.gs = gs;
			this.weighted = weighted;
		}

		ARXConfiguration config() {
			ARXConfiguration c = ARXConfiguration.create();
			c.addPrivacyModel(new KAnonymity(k));
			if (l > 1) {
				c.addPrivacyModel(new DistinctLDiversity(SENSITIVE, l));
			}
			c.setSuppressionLimit(suppression);
			if (metric.equals("loss")) {
				c.setQualityModel(Metric.createLossMetric(gs, AggregateFunction.GEOMETRIC_MEAN));
			} else {
				c.setQualityModel(Metric.createDiscernabilityMetric(false));
			}
			if (weighted) {
				for (String q : QID) {
					c.setAttributeWeight(q, q.equals("age") ? 2d : 1d);
				}
			}
			return c;
		}

		/* the qid_lattice call for the same case, or null when there is none to compare with */
		String qidriskSql(boolean lossAvailable, String evaluate) {
			String args = qidriskArgs(lossAvailable);
			return args == null ? null : "SELECT array_to_string(levels, ','), rows_suppressed, loss FROM qid_lattice("
				+ args + ", evaluate => '" + evaluate + "') WHERE best;";
		}

		/* how many nodes that call evaluates */
		String qidriskNodesSql(boolean lossAvailable, String evaluate) {
			return "SELECT count(*) FILTER (WHERE evaluated) FROM qid_lattice(" + qidriskArgs(lossAvailable)
				+ ", evaluate => '" + evaluate + "');";
		}

		String qidriskArgs(boolean lossAvailable) {
			String m;
			if (metric.equals("discernibility")) {
				m = "discernibility";
			} else if (lossAvailable && gs == 0.5 && !weighted) {
				m = "loss";
			} else {
				return null;
			}
			return "'adult', " + QID_SQL + ", " + H_SQL + ", " + k + ", " + suppression
				+ (l > 1 ? ", sensitive_column => 'income', l => " + l : "") + ", metric => '" + m + "'";
		}

		String describe() {
			return String.format("k=%d supp=%.2f%s %s%s", k, suppression, l > 1 ? " l=" + l + "(income)" : "",
				metric.equals("loss") ? "loss(gs=" + gs + ",geometric mean)" : "discernibility",
				weighted ? " weights(age=2,others=1)" : "");
		}
	}

	static void lossMode() throws Exception {
		int runs = Integer.parseInt(opt("runs", "5"));
		boolean qidrisk = opt("qidrisk", "no").equals("yes");
		boolean lossAvailable = opt("qidrisk-loss", "no").equals("yes");
		Data data = makeData(QID, SENSITIVE);
		List<Case> cases = new ArrayList<>();
		String[][] base = {{"a", "5", "0", "1"}, {"b", "5", "0.02", "1"}, {"c", "5", "0.02", "2"}};
		for (String[] b : base) {
			int k = Integer.parseInt(b[1]);
			double s = Double.parseDouble(b[2]);
			int l = Integer.parseInt(b[3]);
			cases.add(new Case(b[0], k, s, l, "loss", 0.5, false));
			cases.add(new Case(b[0] + "-gs0", k, s, l, "loss", 0d, false));
			cases.add(new Case(b[0] + "-gs1", k, s, l, "loss", 1d, false));
			cases.add(new Case(b[0] + "-w", k, s, l, "loss", 0.5, true));
			cases.add(new Case(b[0] + "-dm", k, s, l, "discernibility", 0.5, false));
		}
		Psql psql = qidrisk ? new Psql() : null;
		/* warm-up: JIT for ARX, caches for PostgreSQL */
		for (Case c : cases) {
			anonymize(data, c);
			for (String e : EVALUATE) {
				if (psql != null && c.qidriskSql(lossAvailable, e) != null) {
					psql.run(c.qidriskSql(lossAvailable, e));
					c.qidriskNodes.put(e, psql.run(c.qidriskNodesSql(lossAvailable, e)).get(0));
				}
			}
		}
		for (int r = 0; r < runs; r++) {
			for (Case c : cases) {
				c.last = anonymize(data, c);
				c.arxMs.add(c.last.ms);
				for (String e : EVALUATE) {
					String sql = psql != null ? c.qidriskSql(lossAvailable, e) : null;
					if (sql != null) {
						timeQuery(psql, sql, c.qidriskMs.computeIfAbsent(e, x -> new ArrayList<>()), c.qidriskResult, e);
					}
				}
			}
		}
		if (psql != null) {
			psql.close();
		}
		PrintWriter optima = new PrintWriter(opt("optima", "/dev/null"), "UTF-8");
		optima.println("# " + arxVersion() + " optima on UCI Adult (bench/arx.sh loss mode); levels in the order "
			+ String.join(",", QID) + "; loss = ARX's value of the optimum (Loss: geometric mean of the per-QID values, "
			+ "ARX's default; discernibility: ARX's non-monotonic DM); suppressed = rows of the output ARX marks as outliers");
		optima.println("case,k,suppression,l_income,metric,gs_factor,weights,levels,loss,suppressed");
		System.out.println(arxVersion() + ", " + rows.size() + " rows, QID order " + String.join(",", QID)
			+ ", " + runs + " timed runs each (after one warm-up), interleaved");
		for (Case c : cases) {
			ARXResult res = c.last.result;
			ARXNode opt = res.getGlobalOptimum();
			String line;
			if (opt == null) {
				line = String.format("%-6s %s: no solution", c.name, c.describe());
				optima.printf("%s,%d,%s,%d,%s,%s,%s,,,%n", c.name, c.k, c.suppression, c.l, c.metric, c.gs,
					c.weighted ? "age=2" : "");
			} else {
				int[] lv = levels(opt, QID);
				int sup = suppressed(res, opt, false);
				line = String.format("%-6s %s: optimum %s loss %s suppressed %d; ARX checked %d nodes; ARX median %.1f ms [%s]",
					c.name, c.describe(), pgArray(lv), value(opt.getHighestScore()), sup, checkedNodes(res),
					median(c.arxMs), times(c.arxMs));
				optima.printf("%s,%d,%s,%d,%s,%s,%s,\"%s\",%s,%d%n", c.name, c.k, c.suppression, c.l, c.metric, c.gs,
					c.weighted ? "age=2" : "", pgArray(lv), value(opt.getHighestScore()), sup);
			}
			System.out.println(line);
			for (String e : EVALUATE) {
				String q = c.qidriskResult.get(e);
				List<Double> ms = c.qidriskMs.get(e);
				if (q != null && ms != null && !ms.isEmpty()) {
					System.out.printf("       qid_lattice(metric => '%s', evaluate => '%s'): best %s (levels|rows_suppressed|loss), %s; "
						+ "%s nodes evaluated; median %.1f ms [%s]; qidrisk/ARX time = %.2f%n", c.metric, e, q,
						agreement(q, opt), c.qidriskNodes.get(e), median(ms), times(ms), median(ms) / median(c.arxMs));
				} else if (q != null) {
					System.out.printf("       qid_lattice(metric => '%s', evaluate => '%s'): %s%n", c.metric, e, q);
				}
			}
		}
		optima.close();
		if (qidrisk && !lossAvailable) {
			System.out.println("qid_lattice has no metric 'loss' yet: the Loss comparison is skipped");
		}
		String nodes = opts.get("nodes");
		if (nodes != null) {
			writeLossNodes(data, cases.get(0), nodes);
		}
	}

	/* does qid_lattice's best row (levels|rows_suppressed|loss) match ARX's optimum? values within 1e-12 relative */
	static String agreement(String qidrisk, ARXNode opt) {
		String[] f = qidrisk.split("\\|");
		if (opt == null || f.length != 3) {
			return "not comparable";
		}
		double a = Double.parseDouble(value(opt.getHighestScore()));
		double q = Double.parseDouble(f[2]);
		boolean sameValue = Math.abs(a - q) <= 1e-12 * Math.max(1d, Math.abs(a));
		boolean sameLevels = ("{" + f[0] + "}").equals(pgArray(levels(opt, QID)));
		return sameValue ? (sameLevels ? "same optimum and value as ARX" : "same value as ARX, other levels (a tie)")
			: "DIFFERS from ARX";
	}

	/* every node of case (a): anonymity, suppressed rows, ARX's Loss (aggregate and per QID) */
	static void writeLossNodes(Data data, Case c, String file) throws IOException {
		ARXResult res = anonymize(data, c).result;
		Map<String, String> lines = new TreeMap<>();
		for (ARXNode node : allNodes(res)) {
			int sup = suppressed(res, node, false);
			int[] lv = levels(node, QID);
			double[] comp = components(node, QID);
			StringBuilder b = new StringBuilder();
			b.append('"').append(pgArray(lv)).append("\",").append(node.getAnonymity() == Anonymity.ANONYMOUS ? "t" : "f")
				.append(',').append(sup).append(',').append(value(node.getHighestScore()));
			for (double d : comp) {
				b.append(',').append(d);
			}
			lines.put(key(lv), b.toString());
		}
		try (PrintWriter w = new PrintWriter(file, "UTF-8")) {
			w.println("# " + arxVersion() + ", UCI Adult (data/adult, 32,561 rows), QIDs " + String.join(",", QID)
				+ " with data/adult/hierarchies, k = 5, suppression limit 0 %, Loss metric gs-factor 0.5 (ARX default), geometric mean.");
			w.println("# One row per node (bench/arx.sh). levels: level per QID in that order; anonymous: ARX's verdict (t/f);");
			w.println("# suppressed: rows of classes that fail k = 5 (ARX marks them suppressed even where the node is not anonymous);");
			w.println("# loss: ARX's value (Java Double.toString of the aggregate, exact); loss_<qid>: ARX's per-QID values (floored to 10 decimals) it aggregates.");
			StringBuilder h = new StringBuilder("levels,anonymous,suppressed,loss");
			for (String q : QID) {
				h.append(",loss_").append(q);
			}
			w.println(h);
			for (String l : lines.values()) {
				w.println(l);
			}
		}
		System.out.println("wrote " + file + " (" + lines.size() + " nodes)");
	}

	static String key(int[] lv) {
		StringBuilder b = new StringBuilder();
		for (int v : lv) {
			b.append((char) ('0' + v));
		}
		return b.toString();
	}

	static String arxVersion() {
		return opt("arx-version", "(unknown)");
	}

	/* ------------------------------------------------------- privacy mode */

	static final class Model {
		final String name;
		final String[] qids;
		final String sensitive;
		final boolean riskBased;
		final boolean subset;
		final Supplier<PrivacyCriterion> criterion;
		final Function<DataSubset, PrivacyCriterion> onSubset;
		final String note;

		Model(String name, String[] qids, String sensitive, boolean riskBased, boolean subset,
			  Supplier<PrivacyCriterion> criterion, String note) {
			this(name, qids, sensitive, riskBased, subset, criterion, null, note);
		}

		/* a model of a research subset (every 2nd row) of the table, which is the population */
		Model(String name, Function<DataSubset, PrivacyCriterion> onSubset, String note) {
			this(name, QID, null, false, true, null, onSubset, note);
		}

		private Model(String name, String[] qids, String sensitive, boolean riskBased, boolean subset,
			  Supplier<PrivacyCriterion> criterion, Function<DataSubset, PrivacyCriterion> onSubset, String note) {
			this.name = name;
			this.qids = qids;
			this.sensitive = sensitive;
			this.riskBased = riskBased;
			this.subset = subset;
			this.criterion = criterion;
			this.onSubset = onSubset;
			this.note = note;
		}
	}

	static void privacyMode() throws Exception {
		String outDir = opt("out", null);
		String only = opts.get("only");
		int n = rows.size();
		/* sampling fraction 0.1: population n / 0.1 (ARX rounds it: 325,610 for Adult) */
		ARXPopulationModel population = ARXPopulationModel.create(n, 0.1);
		String[] qid7 = Arrays.stream(QID).filter(q -> !q.equals("education")).toArray(String[]::new);
		Set<Integer> every2nd = new HashSet<>();
		for (int i = 1; i < n; i += 2) {
			every2nd.add(i);
		}
		List<Model> models = new ArrayList<>();
		models.add(new Model("avgrisk", QID, null, true, false, () -> new AverageReidentificationRisk(0.05),
			"AverageReidentificationRisk(0.05)"));
		for (PopulationUniquenessModel m : PopulationUniquenessModel.values()) {
			models.add(new Model("pu_" + m.name().toLowerCase(), QID, null, true, false,
				() -> new PopulationUniqueness(0.01, m, population),
				"PopulationUniqueness(0.01, " + m + ", population " + n + "/0.1)"));
		}
		models.add(new Model("kmap_poisson", QID, null, false, false,
			() -> new KMap(5, 0.01, population, KMap.CellSizeEstimator.POISSON), "KMap(5, 0.01, Poisson)"));
		models.add(new Model("kmap_ztpoisson", QID, null, false, false,
			() -> new KMap(5, 0.01, population, KMap.CellSizeEstimator.ZERO_TRUNCATED_POISSON),
			"KMap(5, 0.01, zero-truncated Poisson)"));
		models.add(new Model("dpresence", d -> new DPresence(0d, 0.7d, d), "DPresence(0, 0.7, every 2nd row)"));
		models.add(new Model("dpresence_min", d -> new DPresence(0.4d, 0.7d, d), "DPresence(0.4, 0.7, every 2nd row)"));
		models.add(new Model("kmap_population", d -> new KMap(3, d), "KMap(3, every 2nd row of the population)"));
		models.add(new Model("blikeness_basic_income", QID, "income", false, false,
			() -> new BasicBLikeness("income", 1d), "BasicBLikeness(income, 1.0)"));
		models.add(new Model("blikeness_enhanced_income", QID, "income", false, false,
			() -> new EnhancedBLikeness("income", 1d), "EnhancedBLikeness(income, 1.0)"));
		models.add(new Model("blikeness_basic_education", qid7, "education", false, false,
			() -> new BasicBLikeness("education", 1d), "BasicBLikeness(education, 1.0), 7 QIDs"));
		models.add(new Model("blikeness_enhanced_education", qid7, "education", false, false,
			() -> new EnhancedBLikeness("education", 1d), "EnhancedBLikeness(education, 1.0), 7 QIDs"));

		PrintWriter optima = new PrintWriter(opt("optima", "/dev/null"), "UTF-8");
		optima.println("# " + arxVersion() + " optima on UCI Adult for privacy models (bench/arx.sh privacy mode), "
			+ "no k-anonymity model (k = 1), Loss metric gs 0.5 geometric mean; levels in the order of the model's QIDs "
			+ "(qidrisk's order, education left out where it is the sensitive column); see test/reference/ARX.md");
		optima.println("model,suppression,qid,levels,loss,suppressed,anonymous_nodes,nodes,detail");
		for (Model m : models) {
			if (only != null && !Arrays.asList(only.split(",")).contains(m.name)) {
				continue;
			}
			Data data = makeData(m.qids, m.sensitive);
			Map<String, String[]> perNode = new TreeMap<>();
			for (double supp : new double[] {0d, 0.02}) {
				ARXConfiguration c = ARXConfiguration.create();
				PrivacyCriterion crit = m.subset ? m.onSubset.apply(DataSubset.create(data, every2nd)) : m.criterion.get();
				c.addPrivacyModel(crit);
				c.setSuppressionLimit(supp);
				c.setQualityModel(Metric.createLossMetric(0.5, AggregateFunction.GEOMETRIC_MEAN));
				Run run = anonymize(data, c);
				ARXResult res = run.result;
				String detail = m.note;
				KMap km = res.getConfiguration().getPrivacyModel(KMap.class);
				if (km != null) {
					detail += String.format(" derived k %d, type-1 error %s", km.getDerivedK(), km.getType1Error());
				}
				ARXNode opt = res.getGlobalOptimum();
				int anonymousNodes = 0;
				int nodes = 0;
				long t0 = System.nanoTime();
				for (ARXNode node : allNodes(res)) {
					int[] lv = levels(node, m.qids);
					boolean anon;
					String sup;
					String loss;
					int s = suppressed(res, node, m.subset);
					anon = node.getAnonymity() == Anonymity.ANONYMOUS;
					/* a risk-based model stops suppressing when the limit is passed: that count means nothing */
					sup = anon || !m.riskBased ? String.valueOf(s) : "";
					loss = anon ? value(node.getHighestScore()) : "";
					String[] cols = perNode.computeIfAbsent(key(lv), x -> new String[7]);
					cols[0] = pgArray(lv);
					int off = supp == 0d ? 1 : 4;
					cols[off] = anon ? "t" : "f";
					cols[off + 1] = sup;
					cols[off + 2] = loss;
					anonymousNodes += anon ? 1 : 0;
					nodes++;
				}
				double allMs = (System.nanoTime() - t0) / 1e6;
				String levels = opt == null ? "" : pgArray(levels(opt, m.qids));
				String loss = opt == null ? "" : value(opt.getHighestScore());
				String sup = opt == null ? "" : String.valueOf(suppressed(res, opt, m.subset));
				optima.printf("%s,%s,%s,\"%s\",%s,%s,%d,%d,\"%s\"%n", m.name, supp, String.join(" ", m.qids), levels,
					loss, sup, anonymousNodes, nodes, detail);
				optima.flush();
				System.out.printf("%-28s supp %.2f: optimum %s loss %s suppressed %s; %d of %d nodes anonymous; "
					+ "ARX %.1f ms (+%.0f ms for every node); %s%n", m.name, supp, opt == null ? "none" : levels, loss,
					sup, anonymousNodes, nodes, run.ms, allMs, detail);
			}
			String file = outDir + "/arx_adult_" + m.name + ".csv";
			try (PrintWriter w = new PrintWriter(file, "UTF-8")) {
				w.println("# " + arxVersion() + ", UCI Adult, " + m.note + ", no k-anonymity (k = 1), Loss gs 0.5 geometric mean. "
					+ "QIDs in this order: " + String.join(",", m.qids) + (m.sensitive != null ? "; sensitive " + m.sensitive : "") + ".");
				w.println("# One row per node; _0 = suppression limit 0 %, _2 = 2 %. anonymous: ARX's verdict; suppressed: rows ARX "
					+ "suppresses in the node's output" + (m.subset ? " (of the research subset)" : "")
					+ (m.riskBased ? " (empty for nodes that are not anonymous: ARX stops suppressing there)" : " (rows of failing classes)")
					+ "; loss: ARX's Loss of anonymous nodes. See test/reference/ARX.md.");
				w.println("levels,anonymous_0,suppressed_0,loss_0,anonymous_2,suppressed_2,loss_2");
				for (String[] cols : perNode.values()) {
					w.println("\"" + cols[0] + "\"," + String.join(",", Arrays.copyOfRange(cols, 1, 7)));
				}
			}
		}
		optima.close();
	}

	/* ---------------------------------------------------------- large mode */

	static void largeMode() throws Exception {
		int runs = Integer.parseInt(opt("runs", "1"));
		boolean qidrisk = opt("qidrisk", "no").equals("yes");
		boolean lossAvailable = opt("qidrisk-loss", "no").equals("yes");
		String table = opt("table", "adult_1e6");
		Data data = makeData(QID, null);
		String[] metrics = {"loss", "discernibility"};
		Map<String, List<Double>> arxMs = new HashMap<>();
		Map<String, List<Double>> qidMs = new HashMap<>();
		Map<String, String> qidResult = new HashMap<>();
		Map<String, Run> last = new HashMap<>();
		Psql psql = qidrisk ? new Psql() : null;
		String backend = psql != null ? psql.run("SELECT pg_backend_pid();").get(0) : null;
		/* one warm-up round (JIT for ARX, caches for PostgreSQL) when more than one run is timed */
		for (int r = runs > 1 ? -1 : 0; r < runs; r++) {
			for (String metric : metrics) {
				ARXConfiguration c = ARXConfiguration.create();
				c.addPrivacyModel(new KAnonymity(5));
				c.setSuppressionLimit(0.02);
				c.setQualityModel(metric.equals("loss") ? Metric.createLossMetric(0.5, AggregateFunction.GEOMETRIC_MEAN)
					: Metric.createDiscernabilityMetric(false));
				Run run = anonymize(data, c);
				last.put(metric, run);
				if (r >= 0) {
					arxMs.computeIfAbsent(metric, x -> new ArrayList<>()).add(run.ms);
				}
				if (psql == null || (metric.equals("loss") && !lossAvailable)) {
					continue;
				}
				for (String e : EVALUATE) {
					List<Double> ms = r >= 0 ? qidMs.computeIfAbsent(metric + "/" + e, x -> new ArrayList<>())
						: new ArrayList<>();
					timeQuery(psql, "SELECT array_to_string(levels, ','), rows_suppressed, loss FROM qid_lattice('"
						+ table + "', " + QID_SQL + ", " + H_SQL + ", 5, 0.02, metric => '" + metric
						+ "', evaluate => '" + e + "') WHERE best;", ms, qidResult, metric + "/" + e);
				}
			}
		}
		String backendPeak = backend != null ? peakRss(backend) : null;
		if (psql != null) {
			psql.close();
		}
		Runtime rt = Runtime.getRuntime();
		for (String metric : metrics) {
			Run run = last.get(metric);
			List<Double> ms = arxMs.get(metric);
			ARXNode opt = run.result.getGlobalOptimum();
			System.out.printf("large: %d rows, k=5 supp=0.02 %s: optimum %s value %s suppressed %s; "
				+ "ARX median %.1f ms [%s]%n", rows.size(),
				metric.equals("loss") ? "loss(gs=0.5)" : "discernibility", opt == null ? "none" : pgArray(levels(opt, QID)),
				opt == null ? "" : value(opt.getHighestScore()),
				opt == null ? "" : String.valueOf(suppressed(run.result, opt, false)), median(ms), times(ms));
			for (String e : EVALUATE) {
				String q = qidResult.get(metric + "/" + e);
				List<Double> qms = qidMs.get(metric + "/" + e);
				if (q != null && qms != null && !qms.isEmpty()) {
					System.out.printf("       qid_lattice(metric => '%s', evaluate => '%s'): best %s (levels|rows_suppressed|value), %s; "
						+ "median %.1f ms [%s]; qidrisk/ARX time = %.2f%n", metric, e, q, agreement(q, opt),
						median(qms), times(qms), median(qms) / median(ms));
				} else if (q != null) {
					System.out.printf("       qid_lattice(metric => '%s', evaluate => '%s'): %s%n", metric, e, q);
				}
			}
		}
		System.out.printf("large: ARX JVM heap in use %d MB of max %d MB; ARX JVM %s%s%n", (rt.totalMemory() - rt.freeMemory()) >> 20,
			rt.maxMemory() >> 20, peakRss("self"),
			backendPeak != null ? "; qid_lattice's backend " + backendPeak : "");
	}

	/* peak resident memory of a process (VmHWM; shared memory it touched, as RssShmem, is part of it) */
	static String peakRss(String pid) {
		String hwm = null;
		String shmem = null;
		try {
			for (String line : Files.readAllLines(Paths.get("/proc/" + pid + "/status"))) {
				if (line.startsWith("VmHWM:")) {
					hwm = line.substring(6).trim();
				} else if (line.startsWith("RssShmem:")) {
					shmem = line.substring(9).trim();
				}
			}
		} catch (IOException e) {
			/* not Linux, or not this host: no figure */
		}
		return hwm == null ? "peak RSS unknown" : "peak RSS " + hwm + (shmem != null ? " (shared memory now " + shmem + ")" : "");
	}
}
