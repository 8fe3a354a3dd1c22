/*
 * The benchmark suite behind `make bench` and `make bench-quick`: every
 * workload of the table (bench/suite/workloads.c) through `bufsel ab --json`
 * with the arms native, native2 (native again: the run's noise floor, A/A),
 * emulate, passthrough and kernel56, then one report of them all:
 *
 *   OUT/latest.json   the machine, the settings, every ab result whole, the bars
 *   OUT/latest.md     a table of ratios to native per workload and metric, the
 *                     idle-memory figures, and the bars marked pass or FAIL,
 *                     or noisy when native2 / native spans too much to judge
 *   OUT/latest.svg    the throughput ratios as a grouped bar chart (gnuplot)
 *   OUT/latest-latency.svg  the echo round trip's p50/p90/p99/p99.9 per arm
 *   OUT/ab/NAME.*     each ab's own output: .txt (stdout), .err, .json
 *
 * and the Markdown on stdout at the end.  kernel56 is optional in every ab
 * (--optional kernel56): a workload that needs a newer kernel than 5.6 shows
 * "n/a" with the reason, and the suite goes on.  The bars are reported,
 * never enforced: the exit status is 1 only when a workload could not be
 * measured at all (a required arm failed, a program is missing) or a file
 * could not be written.
 *
 *   suite [--quick] [--runs N] [--warmup N] [--seconds S] [--idle-rounds R]
 *         [--bufsel PATH] [--progs DIR] [--out DIR]
 *
 * docs/performance.md describes the workloads, the bars and the files.
 *
 * This file is the order of the run; the rest is in bench/suite/, a file
 * per part: workloads.c (the table), options.c, machine.c, run.c (one ab),
 * results.c (reading ab's JSON), bars.c (the bars and their judging),
 * report.c (latest.json, latest.md), chart.c (the two SVGs), state.c (the
 * suite's state, which all of them share) and util.c.
 */
#define _GNU_SOURCE
#include "bench/suite/bars.h"
#include "bench/suite/chart.h"
#include "bench/suite/machine.h"
#include "bench/suite/options.h"
#include "bench/suite/report.h"
#include "bench/suite/results.h"
#include "bench/suite/run.h"
#include "bench/suite/state.h"
#include "bench/suite/util.h"
#include "bench/suite/workloads.h"
#include "launcher/json.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	suite_parse(argc, argv);
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/ab", suite_S.set.out);
	if ((mkdir(suite_S.set.out, 0755) && errno != EEXIST) || (mkdir(dir, 0755) && errno != EEXIST))
		suite_die("%s: %s", dir, strerror(errno));
	if (access(suite_S.set.bufsel, X_OK))
		suite_die("%s: %s (make first)", suite_S.set.bufsel, strerror(errno));
	suite_machine();

	size_t total = 0, runs = 0;
	for (size_t i = 0; i < WORKLOADS; i++)
		if (!suite_S.set.quick || suite_workloads[i].quick) {
			total++;
			size_t arms = 1;
			for (const char *p = suite_workloads[i].arms; (p = strchr(p, ',')); p++)
				arms++;
			runs += arms * (suite_S.set.runs + suite_S.set.warmup);
		}
	printf("bench: %zu workloads, %zu runs of about %s s each (idle: %s rounds); output in %s\n", total, runs,
	       suite_S.set.seconds, suite_S.set.idle_rounds, suite_S.set.out);
	fflush(stdout); // NOLINT(cert-err33-c): progress lines; the report files hold it all

	double t0 = suite_now_s();
	size_t k = 0, failed = 0;
	for (size_t i = 0; i < WORKLOADS; i++) {
		const struct workload *w = &suite_workloads[i];
		if (suite_S.set.quick && !w->quick)
			continue;
		printf("[%zu/%zu] %s (%s): ", ++k, total, w->title, w->arms);
		fflush(stdout); // NOLINT(cert-err33-c): progress lines; the report files hold it all
		suite_run_workload(i);
		struct result *r = &suite_S.results[i];
		failed += !r->ok;
		printf("%.0f s", r->elapsed_s);
		for (int a = 0; a < RATIO_ARMS && w->throughput; a++) {
			double ratio[3];
			if (strstr(w->arms, suite_ratio_arms[a]) && suite_arm_ratio(r, suite_ratio_arms[a], w->throughput, ratio))
				printf(", %s %.3fx", suite_ratio_arms[a], ratio[0]);
			else if (strstr(w->arms, suite_ratio_arms[a]))
				printf(", %s n/a", suite_ratio_arms[a]);
		}
		printf("%s%s\n", r->ok ? "" : "; FAILED: ", r->ok ? "" : r->error);
		fflush(stdout); // NOLINT(cert-err33-c): progress lines; the report files hold it all
	}
	suite_S.elapsed_s = suite_now_s() - t0;
	suite_loadavg(suite_S.load_end, sizeof(suite_S.load_end));

	suite_idle_figures();
	for (size_t i = 0; i < BARS; i++)
		suite_judge_bar(&suite_bars[i], &suite_S.outcomes[i]);
	suite_write_json();
	suite_write_md();
	int chart = suite_write_chart();

	char path[PATH_MAX];
	size_t len;
	snprintf(path, sizeof(path), "%s/latest.md", suite_S.set.out);
	char *md = suite_read_text(path, &len);
	if (md)
		fwrite(md, 1, len, stdout); // NOLINT(cert-err33-c): a copy of latest.md, which is written
	free(md);
	printf("\nbench: %s/latest.json, latest.md%s; each ab's output in %s/ab/\n", suite_S.set.out,
	       chart ? "" : ", latest.svg, latest-latency.svg", suite_S.set.out);
	if (failed)
		printf("bench: %zu workload%s could not be measured (see above)\n", failed, failed == 1 ? "" : "s");
	for (size_t i = 0; i < WORKLOADS; i++)
		if (suite_S.results[i].has_doc)
			json_free(&suite_S.results[i].doc);
	return failed || chart ? 1 : 0;
}
