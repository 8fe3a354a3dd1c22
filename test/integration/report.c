/*
 * `bufsel report` on a statistics file bufsel itself wrote, the way a user
 * gets one:
 *
 *   bufsel --stats FILE --set ... -- test/prog/pol_stats
 *   bufsel report FILE
 *   bufsel report --plot OUT.svg FILE
 *
 * pol_stats makes every figure the report uses deterministic (which buffers
 * are selected, kept, refused, and how many bytes each delivery carries), so
 * the whole report is compared with text worked out by hand from the script
 * (test/prog/pol_stats.c) and the policies below; only the pid in the
 * header is taken from the run.  --plot must draw with gnuplot, which must
 * be installed: nothing here skips.  And a file that is missing, cut short
 * or not a statistics file gives one line and exit status 1.
 *
 * Runs get BUFSEL_CONF= (no configuration file) and none of the caller's
 * LD_PRELOAD and BUFSEL_* variables, so a user's configuration cannot change
 * what is expected.  The program also gets BUFSEL_LOG=info, whose exit line
 * proves the library was loaded.
 *
 * The build directory is $BUFSEL_BUILD (default "build"), made absolute.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test/integration/harness.h"

#define RUN_TIMEOUT 20 /* seconds for one run; each takes well under one */

/* ---- paths ---------------------------------------------------------------- */

static const char *launcher_path(void)
{
	return harness_built(0, "bufsel");
}


/* ---- running ---------------------------------------------------------------- */


/* Static storage: a failed assertion leaks nothing under ASan. */
static struct run run_a;

/*
 * Runs argv with the caller's environment less LD_PRELOAD and BUFSEL_*, plus
 * BUFSEL_CONF=, plus for a program under bufsel (preload) BUFSEL_LOG=info
 * and, under ASan, the sanitizer runtime for the launcher to add the library
 * to.  stdin is /dev/null; stdout and stderr are collected.
 */
static void run(struct run *r, bool preload, char *const *argv)
{
	static char asan_preload[PATH_MAX + 16];
	size_t k;
	char **env = harness_env(3, &k);
	env[k++] = "BUFSEL_CONF=";
	const char *asan = harness_asan_runtime();
	if (preload) {
		env[k++] = "BUFSEL_LOG=info";
		if (asan) {
			snprintf(asan_preload, sizeof(asan_preload), "LD_PRELOAD=%s", asan);
			env[k++] = asan_preload;
		}
	}
	env[k] = NULL;
	harness_run(r, argv, env, RUN_TIMEOUT);
}

/* ---- the files ---------------------------------------------------------------- */

static char dir[] = "/tmp/bufsel-report-it-XXXXXX";
static char stats[PATH_MAX], picture[PATH_MAX];

static void setup(void)
{
	strcpy(dir, "/tmp/bufsel-report-it-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(stats, sizeof(stats), "%s/stats.json", dir);
	snprintf(picture, sizeof(picture), "%s/pools.svg", dir);
}

static void teardown(void)
{
	unlink(stats);
	unlink(picture);
	rmdir(dir);
}

TestSuite(report, .init = setup, .fini = teardown);

/*
 * pol_stats through the launcher with group 2 capped at 1 buffer and every
 * selection of group 3 failing (test/prog/pol_stats.c has the script).
 * Returns the program's pid, the one the file names.
 */
static pid_t write_stats(void)
{
	char *argv[] = { (char *)launcher_path(),
			 "--stats",
			 stats,
			 "--set",
			 "group.2.cap=1",
			 "--set",
			 "group.3.enobufs_rate=1",
			 "--set",
			 "group.3.seed=7",
			 "--",
			 (char *)harness_built(1, "test/prog/pol_stats"),
			 NULL };
	run(&run_a, true, argv);
	harness_expect_exit(&run_a, 0, "bufsel --stats ... -- pol_stats");
	cr_assert(strstr(run_a.err, "bufsel: exit: pid="), "the library was not loaded:\n%s", run_a.err);
	return run_a.pid;
}

/*
 * What pol_stats does to each group (test/prog/pol_stats.c):
 *   group 1: 4 buffers of 16; READs of 3, 5 and 7 bytes keep three buffers,
 *     then a RECV at EOF takes a fourth and puts it back: peak out 4.  The
 *     99th percentile of 3 deliveries is the 3rd (7 bytes, bucket 4-7): 7.
 *     ceil(4 x 1.25) = 5 of 7 = 35 bytes against 4 x 16 = 64: saves 29 B.
 *   group 2: 2 buffers of 16, one READ of 2 bytes (bucket 2-3), the second
 *     READ refused by the cap: peak out 1, ceil(1.25) = 2 of 3 = 6 against
 *     32: saves 26 B.
 *   group 3: 1 buffer of 16, its one READ refused by injection: nothing
 *     out, nothing recorded: 1 buffer, its length kept: saves 0 B.
 */
#define POL_STATS_REPORT                                                                                        \
	"\n"                                                                                                    \
	"ring  bgid  buffers  buf_len  peak out  selected  -ENOBUFS e/c/i  bytes p50  bytes p99\n"              \
	"   0     1        4       16         4         4           1/0/0          7          7\n"              \
	"   0     2        2       16         1         1           0/1/0          3          3\n"              \
	"   0     3        1       16         0         0           0/0/1          -          -\n"              \
	"\n"                                                                                                    \
	"buffers: the most the group had; buf_len: its longest buffer, in bytes;\n"                             \
	"peak out: the most buffers in use or held by the program at once;\n"                                   \
	"-ENOBUFS e/c/i: selections refused because the group was empty / at its cap / by injection;\n"         \
	"bytes p50, p99: the upper bound of the power-of-two bucket holding that percentile\n"                  \
	"of the bytes delivered in a buffer ('-': none recorded).\n"                                            \
	"\n"                                                                                                    \
	"recommendation (margin 25%, percentile 99):\n"                                                         \
	"count = ceil(peak out x 1.25), at least 1; length = bytes p99, at most buf_len, at least 1\n"          \
	"(buf_len when no bytes were recorded); saves = buffers x buf_len - count x length.\n"                  \
	"  ring 0 bgid 1: 5 buffers of 7 bytes, now 4 of 16: saves 29 B\n"                                       \
	"  ring 0 bgid 2: 2 buffers of 3 bytes, now 2 of 16: saves 26 B\n"                                       \
	"  ring 0 bgid 3: 1 buffer of 16 bytes (no bytes recorded), now 1 of 16: saves 0 B\n"                    \
	"total: saves 55 B\n"

Test(report, pol_stats_recommendation, .timeout = 60)
{
	pid_t pid = write_stats();
	char *argv[] = { (char *)launcher_path(), "report", stats, NULL };
	run(&run_a, false, argv);
	harness_expect_exit(&run_a, 0, "bufsel report");
	static char want[PATH_MAX + 4096];
	snprintf(want, sizeof(want), "bufsel report: %s (pid %d): 1 ring, 3 buffer groups\n%s", stats, (int)pid,
		 POL_STATS_REPORT);
	cr_assert_str_eq(run_a.out, want, "--- got ---\n%s--- expected ---\n%s", run_a.out, want);
	cr_assert_str_eq(run_a.err, "", "stderr: %s", run_a.err);

	/* The same run at margin 100% and the median: group 1 gets 8 buffers
	 * (4 x 2) of 7 bytes (the 2nd of 3 deliveries is in bucket 4-7),
	 * 56 bytes against 64: saves 8 B; group 2: 2 of 3, saves 26 B. */
	char *argv2[] = { (char *)launcher_path(), "report", "--margin", "100", "--percentile", "50", stats, NULL };
	run(&run_a, false, argv2);
	harness_expect_exit(&run_a, 0, "bufsel report --margin 100 --percentile 50");
	const char *rec = strstr(run_a.out, "  ring 0 bgid 1:");
	cr_assert_str_eq(rec ? rec : run_a.out,
			 "  ring 0 bgid 1: 8 buffers of 7 bytes, now 4 of 16: saves 8 B\n"
			 "  ring 0 bgid 2: 2 buffers of 3 bytes, now 2 of 16: saves 26 B\n"
			 "  ring 0 bgid 3: 1 buffer of 16 bytes (no bytes recorded), now 1 of 16: saves 0 B\n"
			 "total: saves 34 B\n");
}

Test(report, plot_svg, .timeout = 60)
{
	write_stats();
	char *argv[] = { (char *)launcher_path(), "report", "--plot", picture, stats, NULL };
	run(&run_a, false, argv);
	harness_expect_exit(&run_a, 0, "bufsel report --plot");
	cr_assert(strstr(run_a.out, "total: saves 55 B\n"), "the report is missing:\n%s", run_a.out);
	FILE *f = fopen(picture, "r");
	cr_assert_not_null(f, "%s: %s", picture, strerror(errno));
	static char svg[1 << 20];
	size_t n = fread(svg, 1, sizeof(svg) - 1, f);
	fclose(f);
	cr_assert_gt(n, 1000, "%s has %zu bytes", picture, n);
	cr_assert(strstr(svg, "<svg") && strstr(svg, "</svg>"), "%s is not a whole SVG", picture);
	/* One series per group, in both histograms. */
	for (int g = 1; g <= 3; g++) {
		char title[32];
		snprintf(title, sizeof(title), "ring 0 bgid %d", g);
		const char *first = strstr(svg, title);
		cr_assert(first && strstr(first + 1, title), "%s: \"%s\" is not in both plots", picture, title);
	}
}

/* One line on stderr, nothing on stdout, exit status 1. */
static void expect_one_line(const struct run *r, const char *line, const char *what)
{
	harness_expect_exit(r, 1, what);
	cr_assert_str_eq(r->out, "", "%s: stdout: %s", what, r->out);
	cr_assert_str_eq(r->err, line, "%s: got %sexpected %s", what, r->err, line);
}

Test(report, bad_files, .timeout = 60)
{
	char *argv[] = { (char *)launcher_path(), "report", stats, NULL };
	char line[PATH_MAX + 128];
	run(&run_a, false, argv);
	snprintf(line, sizeof(line), "bufsel: report: %s: No such file or directory\n", stats);
	expect_one_line(&run_a, line, "bufsel report on a missing file");

	/* The real file cut short, as a program killed while writing leaves it. */
	write_stats();
	FILE *f = fopen(stats, "r+");
	cr_assert_not_null(f);
	cr_assert_eq(fseek(f, 0, SEEK_END), 0);
	long size = ftell(f);
	fclose(f);
	cr_assert_gt(size, 100);
	cr_assert_eq(truncate(stats, size / 2), 0);
	run(&run_a, false, argv);
	harness_expect_exit(&run_a, 1, "bufsel report on a truncated file");
	snprintf(line, sizeof(line), "bufsel: report: %s: not JSON: line ", stats);
	cr_assert(!strncmp(run_a.err, line, strlen(line)) && strchr(run_a.err, '\n') == run_a.err + run_a.err_len - 1,
		  "not one line saying \"%s...\": %s", line, run_a.err);

	/* JSON, but not statistics. */
	f = fopen(stats, "w");
	cr_assert_not_null(f);
	fputs("{\"pid\":1,\"ring\":[]}\n", f);
	fclose(f);
	run(&run_a, false, argv);
	snprintf(line, sizeof(line), "bufsel: report: %s: no \"rings\" (line 1)\n", stats);
	expect_one_line(&run_a, line, "bufsel report on JSON without rings");

	/* A usage error is status 2. */
	char *argv2[] = { (char *)launcher_path(), "report", NULL };
	run(&run_a, false, argv2);
	harness_expect_exit(&run_a, 2, "bufsel report without a file");
	cr_assert_str_eq(run_a.err, "bufsel: report: no statistics file given (bufsel report --help)\n");
}
