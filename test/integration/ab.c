/*
 * `bufsel ab` on real programs, the way a user runs it:
 *
 *   bufsel ab --runs 2 --arms native,emulate,passthrough --json F -- PROGRAM
 *
 * The program of most tests is a shell script written here that tells, in
 * its bench: line, what its environment was (bufsel preloaded or not, the
 * mode, the kernel setting, a --set key), a number that depends on the arm
 * (so the ratios have a known value), and its place in the sequence of all
 * runs, counted in a file (so the order ab claims in its JSON is checked
 * against the order the runs really had).  The pool statistics are those of
 * test/prog/bs_read, compared with the file bufsel writes for the same
 * program run through the launcher.  Failures (a program that exits 1, one
 * that fails only under bufsel, a timeout, Ctrl-C) and bad command lines
 * must give the documented exit status and one clear message.
 *
 * The JSON is read with launcher/json.c, the reader `bufsel report` uses.
 * Runs get none of the caller's LD_PRELOAD and BUFSEL_* variables, and
 * BUFSEL_CONF= (no configuration file), so a user's configuration cannot
 * change what is expected.  The build directory is $BUFSEL_BUILD (default
 * "build"), made absolute.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launcher/json.h"
#include "test/integration/harness.h"

#define RUN_TIMEOUT 60 /* seconds for one ab; each takes about one */

/* ---- paths and files ------------------------------------------------------------ */

static char dir[] = "/tmp/bufsel-ab-it-XXXXXX";
static char json_path[PATH_MAX], stats_path[PATH_MAX], counter[PATH_MAX], script[PATH_MAX], pidfile[PATH_MAX];

static const char *launcher(void)
{
	return harness_built(0, "bufsel");
}

static void setup(void)
{
	strcpy(dir, "/tmp/bufsel-ab-it-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(json_path, sizeof(json_path), "%s/ab.json", dir);
	snprintf(stats_path, sizeof(stats_path), "%s/stats.json", dir);
	snprintf(counter, sizeof(counter), "%s/counter", dir);
	snprintf(script, sizeof(script), "%s/prog.sh", dir);
	snprintf(pidfile, sizeof(pidfile), "%s/pid", dir);
}

static void teardown(void)
{
	const char *files[] = { json_path, stats_path, counter, script, pidfile };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		unlink(files[i]);
	rmdir(dir);
}

TestSuite(ab, .init = setup, .fini = teardown);

/* Writes the script the tests run; only shell built-ins, so it runs the same under any preload. */
static void write_script(const char *body)
{
	FILE *f = fopen(script, "w");
	cr_assert_not_null(f, "%s: %s", script, strerror(errno));
	fprintf(f, "#!/bin/sh\n%s", body);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(chmod(script, 0755), 0);
}

/*
 * The environment, seen from inside the program, as numbers:
 *   preloaded  1 when LD_PRELOAD names libbufsel.so
 *   mode       0 unset, 1 emulate, 2 passthrough
 *   k56        1 when BUFSEL_KERNEL is 5.6
 *   nopatch    1 when BUFSEL_PATCH is off
 *   stats      1 when BUFSEL_STATS is set
 *   cap        BUFSEL_CAP, -1 when unset
 *   seed       BUFSEL_SEED (the caller's), -1 when unset
 *   ops_per_s  1000 natively, 500 under bufsel: every ratio is 0.5
 *   lat_us     10 natively, 40 under bufsel: every ratio is 4
 *   seq        the run's place among all runs, from the counter file
 */
#define ENV_SCRIPT                                                                                   \
	"case \"$LD_PRELOAD\" in *libbufsel.so*) p=1 ;; *) p=0 ;; esac\n"                            \
	"case \"$BUFSEL_MODE\" in emulate) m=1 ;; passthrough) m=2 ;; *) m=0 ;; esac\n"               \
	"k=0; [ \"$BUFSEL_KERNEL\" = 5.6 ] && k=1\n"                                                 \
	"t=0; [ \"$BUFSEL_PATCH\" = off ] && t=1\n"                                                   \
	"s=0; [ -n \"${BUFSEL_STATS+x}\" ] && s=1\n"                                                 \
	"n=0; [ -f COUNTER ] && read n < COUNTER; n=$((n + 1)); echo $n > COUNTER\n"                 \
	"echo 'not a bench line: x=1'\n"                                                             \
	"echo \"bench: preloaded=$p mode=$m k56=$k nopatch=$t stats=$s cap=${BUFSEL_CAP:--1} "       \
	"seed=${BUFSEL_SEED:--1} seq=$n\"\n"                                                         \
	"echo \"bench: ops_per_s=$((1000 / (1 + p))) lat_us=$((10 + 30 * p))\"\n"

static void write_env_script(const char *extra)
{
	char body[4096], *o = body;
	/* The counter's path goes where the text says COUNTER. */
	for (const char *s = ENV_SCRIPT; *s;) {
		if (!strncmp(s, "COUNTER", 7)) {
			o += sprintf(o, "'%s'", counter);
			s += 7;
		} else {
			*o++ = *s++;
		}
	}
	strcpy(o, extra);
	write_script(body);
}

/* ---- running ab --------------------------------------------------------------------- */

static struct run run_a;

/* argv after "bufsel ab", with env_extra (NULL-terminated) added to the cleaned environment. */
static void ab(const char *const *args, const char *const *env_extra)
{
	static char *argv[64];
	static char asan_preload[PATH_MAX + 16];
	size_t k, n = 0;
	char **env = harness_env(8, &k);
	env[k++] = "BUFSEL_CONF=";
	const char *asan = harness_asan_runtime();
	/* The sanitizer runtime first in every arm; ab appends the library, as the launcher does. */
	if (asan) {
		snprintf(asan_preload, sizeof(asan_preload), "LD_PRELOAD=%s", asan);
		env[k++] = asan_preload;
	}
	for (size_t i = 0; env_extra && env_extra[i]; i++)
		env[k++] = (char *)env_extra[i];
	env[k] = NULL;
	argv[n++] = (char *)launcher();
	argv[n++] = "ab";
	for (size_t i = 0; args[i]; i++) {
		cr_assert_lt(n, sizeof(argv) / sizeof(argv[0]) - 1);
		argv[n++] = (char *)args[i];
	}
	argv[n] = NULL;
	harness_run(&run_a, argv, env, RUN_TIMEOUT);
}

static void expect_out(const char *needle)
{
	cr_assert(strstr(run_a.out, needle), "stdout lacks \"%s\":\n%s", needle, run_a.out);
}

/* How many lines of stdout read words, blanks aside (the columns' widths are ab's choice). */
static int lines_with_words(const char *words)
{
	int found = 0;
	for (const char *p = run_a.out; *p;) {
		size_t n = strcspn(p, "\n");
		char line[512], *o = line;
		for (size_t i = 0; i < n && o < line + sizeof(line) - 2; i++)
			if (p[i] != ' ' || (o > line && o[-1] != ' '))
				*o++ = p[i];
		while (o > line && o[-1] == ' ')
			o--;
		*o = '\0';
		found += !strcmp(line, words);
		p += n + (p[n] == '\n');
	}
	return found;
}

/* ---- reading the JSON ------------------------------------------------------------------ */

static struct json_doc doc;
static char *doc_text;

static void load_json(const char *path)
{
	static char err[512];
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	free(doc_text);
	doc_text = malloc(1 << 22);
	cr_assert_not_null(doc_text);
	size_t n = fread(doc_text, 1, (1 << 22) - 1, f);
	fclose(f);
	json_free(&doc);
	cr_assert_eq(json_parse(&doc, doc_text, n, err, sizeof(err)), 0, "%s is not JSON: %s", path, err);
}

/* The node at a dotted path from node `from`: names, or element numbers in arrays; -1 when absent. */
static int at(int from, const char *path)
{
	char seg[128];
	int node = from;
	for (const char *s = path; node >= 0;) {
		size_t n = strcspn(s, ".");
		snprintf(seg, sizeof(seg), "%.*s", (int)n, s);
		if (doc.nodes[node].type == JSON_ARRAY)
			node = json_element(&doc, node, atoi(seg));
		else if (doc.nodes[node].type == JSON_OBJECT)
			node = json_member(&doc, node, seg);
		else
			node = -1;
		if (!s[n])
			break;
		s += n + 1;
	}
	return node;
}

static int must(int from, const char *path)
{
	int node = at(from, path);
	cr_assert_geq(node, 0, "the JSON has no %s", path);
	return node;
}

static double num(int from, const char *path)
{
	int node = must(from, path);
	cr_assert_eq(doc.nodes[node].type, JSON_NUMBER, "%s is not a number", path);
	char buf[64];
	snprintf(buf, sizeof(buf), "%.*s", (int)doc.nodes[node].len, doc.nodes[node].text);
	return strtod(buf, NULL);
}

static const char *str(int from, const char *path)
{
	int node = must(from, path);
	cr_assert_eq(doc.nodes[node].type, JSON_STRING, "%s is not a string", path);
	return doc.nodes[node].text;
}

static int count(int from, const char *path)
{
	int node = must(from, path);
	cr_assert(doc.nodes[node].type == JSON_ARRAY || doc.nodes[node].type == JSON_OBJECT, "%s holds nothing",
		  path);
	return doc.nodes[node].count;
}

/* ---- the arms, the measures and the ratios --------------------------------------------------- */

struct expect_arm {
	const char *name;
	double preloaded, mode, k56, stats, cap, nopatch;
};

Test(ab, arms_environments_and_ratios, .timeout = 120)
{
	write_env_script("");
	static const char *const args[] = { "--runs", "2", "--arms", "native,emulate,passthrough,kernel56,trap",
					    "--set", "cap=7", "--json", json_path, "--", script, NULL };
	static const char *const env[] = { "BUFSEL_SEED=5", NULL };
	ab(args, env);
	harness_expect_exit(&run_a, 0, "bufsel ab --runs 2");

	/* Every arm and every ratio is printed. */
	const char *const arms[] = { "native", "emulate", "passthrough", "kernel56", "trap" };
	for (int i = 0; i < 5; i++) {
		char line[64];
		snprintf(line, sizeof(line), "\n%s: 2 runs\n", arms[i]);
		expect_out(line);
		if (i) {
			snprintf(line, sizeof(line), "\n%s / native, round by round (2 pairs):\n", arms[i]);
			expect_out(line);
		}
	}
	cr_assert(!strstr(run_a.out, "not a bench line"), "a program's other lines are not shown:\n%s", run_a.out);

	load_json(json_path);
	cr_assert_str_eq(str(0, "status"), "ok");
	cr_assert_str_eq(str(0, "program.0"), script);
	cr_assert_eq(count(0, "arm_order"), 5);

	/* What each arm's environment was, as the program saw it, in every run and warm-up. */
	const struct expect_arm want[] = {
		{ "native", 0, 0, 0, 0, -1, 0 },
		{ "emulate", 1, 1, 0, 1, 7, 0 },
		{ "passthrough", 1, 2, 0, 1, 7, 0 },
		{ "kernel56", 1, 1, 1, 1, 7, 0 },
		{ "trap", 1, 1, 0, 1, 7, 1 },
	};
	for (int i = 0; i < 5; i++) {
		int arm = must(0, "arms");
		arm = must(arm, want[i].name);
		cr_assert_str_eq(str(arm, "status"), "ok");
		cr_assert_eq(count(arm, "runs"), 2, "%s: runs", want[i].name);
		cr_assert_eq(count(arm, "warmup_runs"), 1, "%s: warm-up runs", want[i].name);
		for (int r = 0; r < 3; r++) {
			int run = r < 2 ? must(must(arm, "runs"), r ? "1" : "0") : must(arm, "warmup_runs.0");
			cr_assert_eq(num(run, "exit_status"), 0);
			cr_assert_eq(num(run, "metrics.preloaded"), want[i].preloaded, "%s: preloaded", want[i].name);
			cr_assert_eq(num(run, "metrics.mode"), want[i].mode, "%s: BUFSEL_MODE", want[i].name);
			cr_assert_eq(num(run, "metrics.k56"), want[i].k56, "%s: BUFSEL_KERNEL", want[i].name);
			cr_assert_eq(num(run, "metrics.nopatch"), want[i].nopatch, "%s: BUFSEL_PATCH", want[i].name);
			cr_assert_eq(num(run, "metrics.stats"), want[i].stats, "%s: BUFSEL_STATS", want[i].name);
			cr_assert_eq(num(run, "metrics.cap"), want[i].cap, "%s: --set cap=7", want[i].name);
			/* The caller's own BUFSEL_* reach the bufsel arms, never the native one. */
			cr_assert_eq(num(run, "metrics.seed"), want[i].preloaded ? 5 : -1, "%s: BUFSEL_SEED", want[i].name);
			cr_assert_gt(num(run, "wall_s"), 0);
			cr_assert_geq(num(run, "user_s"), 0);
			cr_assert_gt(num(run, "maxrss_kib"), 0);
			/* ab's count of the runs is the order they really ran in. */
			cr_assert_eq(num(run, "seq"), num(run, "metrics.seq"), "%s: seq", want[i].name);
		}
		/* Rounds alternate: an arm's place in round 1 mirrors its place in round 2. */
		double p1 = num(arm, "runs.0.position"), p2 = num(arm, "runs.1.position");
		cr_assert_eq(p1 + p2, 6, "%s: positions %g and %g do not mirror", want[i].name, p1, p2);
		cr_assert_eq(num(arm, "summary.metrics.ops_per_s.median"), want[i].preloaded ? 500 : 1000);
	}

	/* Ratios: round i over round i, for the program's metrics and for ab's own measures. */
	int nat = must(0, "arms.native");
	for (int i = 1; i < 4; i++) {
		int arm = must(must(0, "arms"), want[i].name);
		cr_assert_eq(num(arm, "ratio.pairs"), 2);
		cr_assert_eq(num(arm, "ratio.metrics.ops_per_s.median"), 0.5);
		cr_assert_str_eq(str(arm, "ratio.metrics.ops_per_s.better"), "higher");
		cr_assert_eq(num(arm, "ratio.metrics.lat_us.median"), 4);
		cr_assert_str_eq(str(arm, "ratio.metrics.lat_us.better"), "lower");
		for (int r = 0; r < 2; r++) {
			char rp[32], wp[32];
			snprintf(rp, sizeof(rp), "ratio.wall_s.ratios.%d", r);
			snprintf(wp, sizeof(wp), "runs.%d.wall_s", r);
			double want_ratio = num(arm, wp) / num(nat, wp);
			cr_assert(fabs(num(arm, rp) - want_ratio) <= 1e-6 * want_ratio, "%s: %s is %g, runs say %g",
				  want[i].name, rp, num(arm, rp), want_ratio);
		}
	}
	cr_assert_eq(doc.nodes[must(nat, "ratio")].type, JSON_NULL, "native has no ratio");
	/* One line per bufsel arm. */
	cr_assert_eq(lines_with_words("ops_per_s 0.500x 0.500x 0.500x higher"), 4, "stdout:\n%s", run_a.out);
	cr_assert_eq(lines_with_words("lat_us 4.000x 4.000x 4.000x lower"), 4, "stdout:\n%s", run_a.out);
}

/* ---- the pool statistics ------------------------------------------------------------------------ */

struct group_fig {
	uint64_t bgid, buffers, buf_len, peak_out, selected, empty, capped, injected;
};

static uint64_t u64(int from, const char *path)
{
	uint64_t v;
	cr_assert_eq(json_u64(&doc, must(from, path), &v), 0, "%s is not an integer", path);
	return v;
}

/*
 * The default arms carry native2, the program alone a second time: native2 /
 * native is the run's noise floor, and every other ratio is printed beside
 * it and judged against it.  The script reports 1000 natively and 500 under
 * bufsel, so the floor is exactly 1 and emulate is worse beyond it.
 */
Test(ab, native2_is_the_noise_floor, .timeout = 120)
{
	write_env_script("");
	static const char *const args[] = { "--runs", "2", "--json", json_path, "--", script, NULL };
	ab(args, NULL);
	harness_expect_exit(&run_a, 0, "bufsel ab --runs 2");
	expect_out("arms: native, native2, emulate (reversed every other round)\n");
	expect_out("\nnative2 / native (A/A: this run's noise floor), round by round (2 pairs):\n");
	cr_assert_eq(lines_with_words("ops_per_s 1.000x 1.000x 1.000x higher"), 1, "stdout:\n%s", run_a.out);
	cr_assert_eq(lines_with_words("ops_per_s 0.500x 0.500x 0.500x higher 1.000-1.000x worse"), 1, "stdout:\n%s",
		     run_a.out);
	cr_assert_eq(lines_with_words("lat_us 4.000x 4.000x 4.000x lower 1.000-1.000x worse"), 1, "stdout:\n%s",
		     run_a.out);

	load_json(json_path);
	cr_assert_eq(count(0, "arm_order"), 3);
	cr_assert_str_eq(str(0, "arm_order.1"), "native2");
	int aa = must(0, "arms.native2"), emu = must(0, "arms.emulate");
	for (int r = 0; r < 2; r++) {
		char path[32];
		snprintf(path, sizeof(path), "runs.%d.metrics.preloaded", r);
		cr_assert_eq(num(aa, path), 0, "native2 runs the program alone");
	}
	cr_assert_eq(num(aa, "ratio.metrics.ops_per_s.median"), 1);
	cr_assert_lt(at(aa, "ratio.metrics.ops_per_s.against_noise"), 0, "native2 is not judged against itself");
	cr_assert_eq(num(emu, "ratio.metrics.ops_per_s.aa_min"), 1);
	cr_assert_eq(num(emu, "ratio.metrics.ops_per_s.aa_max"), 1);
	cr_assert_str_eq(str(emu, "ratio.metrics.ops_per_s.against_noise"), "worse");
	cr_assert_str_eq(str(emu, "ratio.metrics.lat_us.against_noise"), "worse");
}

Test(ab, pool_statistics_of_a_program_that_provides_buffers, .timeout = 120)
{
	const char *prog = harness_built(1, "test/prog/bs_read");
	/* The statistics of one run through the launcher: what ab must report for its last round. */
	char *direct[] = { (char *)launcher(), "--stats", stats_path, "--", (char *)prog, NULL };
	size_t k;
	char **env = harness_env(3, &k);
	env[k++] = "BUFSEL_CONF=";
	static char asan_preload[PATH_MAX + 16];
	if (harness_asan_runtime()) {
		snprintf(asan_preload, sizeof(asan_preload), "LD_PRELOAD=%s", harness_asan_runtime());
		env[k++] = asan_preload;
	}
	env[k] = NULL;
	harness_run(&run_a, direct, env, RUN_TIMEOUT);
	harness_expect_exit(&run_a, 0, "bufsel --stats -- bs_read");
	load_json(stats_path);
	struct group_fig want[64];
	int nwant = 0;
	for (int g = doc.nodes[must(0, "rings.0.groups")].first; g >= 0; g = doc.nodes[g].next) {
		cr_assert_lt(nwant, 64);
		want[nwant++] = (struct group_fig){ u64(g, "bgid"), u64(g, "peak_size"), u64(g, "buf_len"),
						    u64(g, "peak_out"), u64(g, "selected"), u64(g, "enobufs.empty"),
						    u64(g, "enobufs.capped"), u64(g, "enobufs.injected") };
	}
	cr_assert_gt(nwant, 0, "bs_read made no buffer group");

	static const char *const args[] = { "--runs", "2", "--warmup", "0", "--arms", "native,emulate,passthrough",
					    "--json", json_path, "--", NULL, NULL };
	const char *a[sizeof(args) / sizeof(args[0])];
	memcpy(a, args, sizeof(args));
	a[9] = prog;
	ab(a, NULL);
	harness_expect_exit(&run_a, 0, "bufsel ab -- bs_read");
	expect_out("bufsel pool statistics, last round (round 2), per buffer group:\n");
	expect_out("  passthrough  no statistics written: no process made a legacy buffer group\n");

	load_json(json_path);
	int pools = must(0, "arms.emulate.pool_stats");
	cr_assert_eq(num(pools, "round"), 2);
	cr_assert_eq(count(pools, "files"), 1, "one process, one statistics file");
	cr_assert_eq(doc.nodes[must(pools, "files.0.stats")].type, JSON_OBJECT, "the file is embedded");
	cr_assert_eq(count(pools, "groups"), nwant);
	uint64_t total = 0;
	for (int i = 0; i < nwant; i++) {
		int g = json_element(&doc, must(pools, "groups"), i);
		struct group_fig got = { u64(g, "bgid"), u64(g, "buffers"), u64(g, "buf_len"), u64(g, "peak_out"),
					 u64(g, "selected"), u64(g, "enobufs_empty"), u64(g, "enobufs_capped"),
					 u64(g, "enobufs_injected") };
		cr_assert(!memcmp(&got, &want[i], sizeof(got)), "group %d differs from bufsel --stats (bgid %lu vs %lu)",
			  i, (unsigned long)got.bgid, (unsigned long)want[i].bgid);
		cr_assert_eq(u64(g, "held_bytes"), got.peak_out * got.buf_len);
		cr_assert_eq(u64(g, "pid"), u64(pools, "files.0.stats.pid"));
		total += got.peak_out * got.buf_len;

		char row[128];
		snprintf(row, sizeof(row), "  emulate      %8lu %5d %6lu", (unsigned long)u64(g, "pid"), 0,
			 (unsigned long)got.bgid);
		expect_out(row);
	}
	cr_assert_eq(u64(pools, "held_bytes"), total);
	/* Natively and in passthrough the kernel had the buffers: bufsel counted nothing. */
	cr_assert_eq(doc.nodes[must(0, "arms.native.pool_stats")].type, JSON_NULL);
	cr_assert_eq(count(0, "arms.passthrough.pool_stats.groups"), 0);
	cr_assert_eq(count(0, "arms.passthrough.pool_stats.files"), 0);
}

/* ---- failures --------------------------------------------------------------------------------------- */

Test(ab, a_failing_program_stops_ab, .timeout = 60)
{
	static const char *const args[] = { "--runs", "2", "--", "false", NULL };
	ab(args, NULL);
	harness_expect_exit(&run_a, 1, "bufsel ab -- false");
	cr_assert(strstr(run_a.err, "bufsel: ab: native arm, warm-up run 1: exited with status 1\n"),
		  "the message names the arm and the run:\n%s", run_a.err);
	cr_assert_str_eq(run_a.out, "", "nothing is reported when a run fails");
}

Test(ab, a_program_failing_under_bufsel_names_the_arm, .timeout = 60)
{
	write_script("echo 'bench: x=1'\n"
		     "case \"$BUFSEL_MODE\" in passthrough) echo 'passthrough went wrong' >&2; exit 3 ;; esac\n");
	static const char *const args[] = { "--runs", "2", "--warmup", "0", "--arms", "native,emulate,passthrough",
					    "--json", json_path, "--", script, NULL };
	ab(args, NULL);
	harness_expect_exit(&run_a, 1, "bufsel ab: passthrough fails");
	cr_assert(strstr(run_a.err, "bufsel: ab: passthrough arm, round 1: exited with status 3\n"),
		  "the message names the arm and the round:\n%s", run_a.err);
	cr_assert(strstr(run_a.err, "passthrough went wrong"), "the program's stderr is shown:\n%s", run_a.err);
	load_json(json_path);
	cr_assert_str_eq(str(0, "status"), "failed");
	cr_assert_str_eq(str(0, "failure.arm"), "passthrough");
	cr_assert_str_eq(str(0, "failure.where"), "round 1");
	cr_assert_str_eq(str(0, "arms.passthrough.failure.stderr_tail"), "passthrough went wrong");
	/* The runs before the failure are kept: round 1 ran native, emulate, then passthrough. */
	cr_assert_eq(count(0, "arms.native.runs"), 1);
	cr_assert_eq(count(0, "arms.emulate.runs"), 1);
}

Test(ab, an_optional_arm_fails_alone, .timeout = 60)
{
	write_env_script("[ \"$BUFSEL_KERNEL\" = 5.6 ] && { echo 'needs a newer kernel' >&2; exit 4; }\nexit 0\n");
	static const char *const args[] = { "--runs", "2", "--arms", "native,emulate,kernel56", "--optional",
					    "kernel56", "--json", json_path, "--", script, NULL };
	ab(args, NULL);
	harness_expect_exit(&run_a, 0, "bufsel ab --optional kernel56");
	expect_out("\nkernel56: n/a: warm-up run 1, exited with status 4\n");
	cr_assert(strstr(run_a.err, "kernel56 arm, warm-up run 1: exited with status 4; kernel56 is optional"),
		  "stderr:\n%s", run_a.err);
	load_json(json_path);
	cr_assert_str_eq(str(0, "status"), "ok");
	cr_assert_str_eq(str(0, "arms.kernel56.status"), "failed");
	cr_assert_str_eq(str(0, "arms.kernel56.failure.reason"), "exited with status 4");
	cr_assert_str_eq(str(0, "arms.kernel56.failure.stderr_tail"), "needs a newer kernel");
	cr_assert_eq(count(0, "arms.native.runs"), 2);
	cr_assert_eq(count(0, "arms.emulate.runs"), 2);
	cr_assert_eq(num(0, "arms.emulate.ratio.metrics.ops_per_s.median"), 0.5);
}

Test(ab, a_run_that_hangs_times_out, .timeout = 60)
{
	static const char *const args[] = { "--timeout", "1", "--warmup", "0", "--", "sleep", "30", NULL };
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ab(args, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	harness_expect_exit(&run_a, 1, "bufsel ab --timeout 1 -- sleep 30");
	cr_assert(strstr(run_a.err, "bufsel: ab: native arm, round 1: timed out after 1 s (killed)\n"), "stderr:\n%s",
		  run_a.err);
	cr_assert_lt(t1.tv_sec - t0.tv_sec, 10, "the timeout did not stop the run");
}

Test(ab, ctrl_c_kills_the_program_and_stops, .timeout = 60)
{
	/* Written whole, then renamed: the test never reads half a pid. */
	char body[3 * PATH_MAX + 64];
	snprintf(body, sizeof(body), "echo $$ > '%s.tmp' && mv '%s.tmp' '%s'\nexec sleep 30\n", pidfile, pidfile,
		 pidfile);
	write_script(body);

	size_t k;
	char **env = harness_env(3, &k);
	env[k++] = "BUFSEL_CONF=";
	static char asan_preload[PATH_MAX + 16];
	if (harness_asan_runtime()) {
		snprintf(asan_preload, sizeof(asan_preload), "LD_PRELOAD=%s", harness_asan_runtime());
		env[k++] = asan_preload;
	}
	env[k] = NULL;
	char *argv[] = { (char *)launcher(), "ab", "--", script, NULL };
	pid_t abpid = fork();
	cr_assert_geq(abpid, 0);
	if (abpid == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(null, 1);
		dup2(null, 2);
		execve(argv[0], argv, env);
		_exit(127);
	}
	pid_t prog = 0;
	for (int i = 0; i < 1000 && !prog; i++) {
		FILE *f = fopen(pidfile, "r");
		if (f) {
			cr_assert_eq(fscanf(f, "%d", &prog), 1);
			fclose(f);
		} else {
			usleep(10000);
		}
	}
	cr_assert_gt(prog, 0, "the program never started");
	cr_assert_eq(kill(abpid, SIGINT), 0);
	int status;
	cr_assert_eq(waitpid(abpid, &status, 0), abpid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGINT, "ab ended with wait status 0x%x",
		  (unsigned)status);
	/* The program was ab's child: killed and reaped, its pid is free. */
	cr_assert(kill(prog, 0) < 0 && errno == ESRCH, "the program (pid %d) is still there", (int)prog);
}

/* ---- bad command lines ------------------------------------------------------------------------------- */

struct bad_line {
	const char *args[8];
	const char *message;	/* the one line on stderr */
};

Test(ab, bad_command_lines, .timeout = 60)
{
	static const struct bad_line cases[] = {
		{ { "--arms", "native,fast", "--", "true" },
		  "bufsel: ab: --arms: unknown arm 'fast' (arms: native, native2, emulate, passthrough, kernel56, trap) (bufsel ab "
		  "--help)\n" },
		{ { "--arms", "native,native", "--", "true" }, "bufsel: ab: --arms: 'native' given twice (bufsel ab --help)\n" },
		{ { "--runs", "0", "--", "true" },
		  "bufsel: ab: --runs: '0' is not a whole number in 1..10000 (bufsel ab --help)\n" },
		{ { "--runs", "five", "--", "true" },
		  "bufsel: ab: --runs: 'five' is not a whole number in 1..10000 (bufsel ab --help)\n" },
		{ { "--runs", "2" }, "bufsel: ab: no PROGRAM given (bufsel ab --help)\n" },
		{ { "--", "bufsel-ab-no-such-program" },
		  "bufsel: ab: bufsel-ab-no-such-program: command not found (bufsel ab --help)\n" },
		{ { "--optional", "kernel56", "--", "true" },
		  "bufsel: ab: --optional: 'kernel56' is not among the arms (bufsel ab --help)\n" },
		{ { "--set", "mode=passthrough", "--", "true" },
		  "bufsel: ab: --set mode=passthrough: mode is set by each arm (--arms) (bufsel ab --help)\n" },
		{ { "--set", "cap=lots", "--", "true" },
		  "bufsel: ab: --set cap: 'lots' is not an integer in 0..65535 (bufsel ab --help)\n" },
		{ { "--timeout", "-1", "--", "true" },
		  "bufsel: ab: --timeout: '-1' is not a number of seconds in 0..604800 (bufsel ab --help)\n" },
		{ { "--fast", "--", "true" }, "bufsel: ab: unknown option '--fast' (bufsel ab --help)\n" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ab(cases[i].args, NULL);
		harness_expect_exit(&run_a, 2, cases[i].message);
		cr_assert_str_eq(run_a.out, "", "%s: stdout: %s", cases[i].message, run_a.out);
		cr_assert_str_eq(run_a.err, cases[i].message);
	}
}
