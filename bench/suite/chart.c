/*
 * Drawing the chart (chart.h) with gnuplot, run as a child.  gnuplot is
 * optional on a build machine: without it, or when it fails, the suite
 * says so and still writes the rest of the report.
 */
#define _GNU_SOURCE
#include "bench/suite/chart.h"

#include "bench/suite/results.h"
#include "bench/suite/state.h"
#include "bench/suite/util.h"
#include "bench/suite/workloads.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int copy_file(const char *from, const char *to)
{
	size_t len;
	char *text = suite_read_text(from, &len);
	if (!text || !len) {
		free(text);
		return -1;
	}
	FILE *f = fopen(to, "we");
	int ret = f && fwrite(text, 1, len, f) == len ? 0 : -1;
	if (f && fclose(f))
		ret = -1;
	free(text);
	return ret;
}

/* The arms each chart draws, with their titles. */
static const char *const latency_arms[] = { "native", "native2", "emulate", "passthrough", "kernel56", "trap" };
#define LATENCY_ARMS (sizeof(latency_arms) / sizeof(latency_arms[0]))
static const char *const percentiles[] = { "p50_us", "p90_us", "p99_us", "p999_us" };
#define PERCENTILES (sizeof(percentiles) / sizeof(percentiles[0]))

/* The throughput ratio of every charted workload per arm: rows written. */
static unsigned throughput_data(FILE *d)
{
	/* A comment, not a header: a header row would shift the bars and not their whiskers. */
	fputs("# workload", d);
	for (int k = 0; k < RATIO_ARMS; k++)
		fprintf(d, " %s min max", suite_ratio_arms[k]);
	fputc('\n', d);
	unsigned rows = 0;
	for (size_t i = 0; i < WORKLOADS; i++) {
		const struct workload *w = &suite_workloads[i];
		if (!suite_S.results[i].ran || !w->throughput)
			continue;
		fprintf(d, "\"%s\"", w->name);
		bool any = false;
		for (int k = 0; k < RATIO_ARMS; k++) {
			double r[3];
			if (suite_arm_ratio(&suite_S.results[i], suite_ratio_arms[k], w->throughput, r)) {
				fprintf(d, " %.4f %.4f %.4f", r[0], r[1], r[2]);
				any = true;
			} else {
				fputs(" ? ? ?", d);
			}
		}
		fputc('\n', d);
		rows += any;
	}
	return rows;
}

static void throughput_script(FILE *g)
{
	fputs("set title 'Throughput / native (median of round pairs; whiskers: min-max; native2: the noise floor)'\n"
	      "set ylabel 'ratio to native (1.0 = native)'\n"
	      "set style histogram errorbars gap 2 lw 1\n"
	      "set yrange [0:*]\n"
	      "set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 2 lc rgb 'black' front\n",
	      g);
	/* Which metric is each program's throughput: the names come from the table above. */
	fputs("set xlabel 'throughput metric", g);
	const char *sep = ": ";
	for (size_t i = 0; i < WORKLOADS; i++) {
		bool first = true;
		for (size_t j = 0; j < i; j++)
			first &= strcmp(suite_workloads[j].prog, suite_workloads[i].prog) != 0;
		if (first && suite_workloads[i].throughput) {
			fprintf(g, "%s%s %s", sep, suite_workloads[i].prog, suite_workloads[i].throughput);
			sep = ", ";
		}
	}
	fputs("'\n", g);
	fputs("plot 'chart.dat' using 2:3:4:xtic(1) title 'native2 (A/A: the noise floor)', '' using 5:6:7 title 'emulate', "
	      "'' using 8:9:10 title 'passthrough', '' using 11:12:13 title 'kernel56', "
	      "'' using 14:15:16 title 'trap (BUFSEL_PATCH=off)'\n",
	      g);
}

/* The round trip's percentiles per echo workload and arm, the medians over the rounds: rows written. */
static unsigned latency_data(FILE *d)
{
	fputs("# workload/arm", d);
	for (size_t p = 0; p < PERCENTILES; p++)
		fprintf(d, " %s", percentiles[p]);
	fputc('\n', d);
	unsigned rows = 0;
	for (size_t i = 0; i < WORKLOADS; i++) {
		const struct workload *w = &suite_workloads[i];
		const struct result *r = &suite_S.results[i];
		if (!r->ran || !r->has_doc)
			continue;
		for (size_t k = 0; k < LATENCY_ARMS; k++) {
			double v[PERCENTILES];
			bool any = false;
			for (size_t p = 0; p < PERCENTILES; p++) {
				v[p] = suite_arm_median(r, latency_arms[k], percentiles[p]);
				any |= isfinite(v[p]) && v[p] > 0;
			}
			if (!any)
				continue;
			fprintf(d, "\"%s %s\"", w->name, latency_arms[k]);
			for (size_t p = 0; p < PERCENTILES; p++)
				if (isfinite(v[p]) && v[p] > 0)
					fprintf(d, " %.2f", v[p]);
				else
					fputs(" ?", d);
			fputc('\n', d);
			rows++;
		}
	}
	return rows;
}

static void latency_script(FILE *g)
{
	fputs("set title 'Round-trip latency per arm: p50, p90, p99, p99.9 (median over the rounds)'\n"
	      "set ylabel 'microseconds (log scale)'\n"
	      "set logscale y\n"
	      "set style histogram clustered gap 1\n"
	      "set xtics rotate by -45\n"
	      "plot 'chart.dat' using 2:xtic(1) title 'p50', '' using 3 title 'p90', '' using 4 title 'p99', "
	      "'' using 5 title 'p99.9'\n",
	      g);
}

/*
 * gnuplot works in a directory of its own with relative names only, so no
 * path is ever written into its script; the picture is copied out to
 * OUT/name after.  0 when it was written.
 */
static int draw(const char *name, unsigned (*data)(FILE *), void (*script)(FILE *))
{
	char dir[] = "/tmp/bufsel-bench-XXXXXX", dat[64], gp[64], svg[64], dest[PATH_MAX];
	if (!mkdtemp(dir)) {
		fprintf(stderr, "bench: chart: %s\n", strerror(errno));
		return -1;
	}
	snprintf(dat, sizeof(dat), "%s/chart.dat", dir);
	snprintf(gp, sizeof(gp), "%s/chart.gp", dir);
	snprintf(svg, sizeof(svg), "%s/chart.svg", dir);
	FILE *d = fopen(dat, "we"), *g = fopen(gp, "we");
	if (!d || !g)
		suite_die("chart: %s", strerror(errno));
	unsigned rows = data(d);
	fputs("set terminal svg size 1100,600 dynamic noenhanced font 'sans,11' background rgb 'white'\n"
	      "set output 'chart.svg'\n"
	      "set datafile missing '?'\n"
	      "set style data histograms\n"
	      "set style fill solid 0.8 border -1\n"
	      "set key outside right top\n"
	      "set xtics nomirror font 'sans,9'\n"
	      "set grid ytics\n",
	      g);
	script(g);
	if (fclose(d) | fclose(g))
		suite_die("chart: %s", strerror(errno));
	int ret = -1;
	if (!rows) {
		fprintf(stderr, "bench: chart: nothing to draw in %s\n", name);
	} else {
		posix_spawn_file_actions_t fa;
		pid_t pid;
		char *argv[] = { "gnuplot", "chart.gp", NULL };
		int status, e = posix_spawn_file_actions_init(&fa);
		if (!e)
			e = posix_spawn_file_actions_addchdir_np(&fa, dir);
		if (!e)
			e = posix_spawn_file_actions_adddup2(&fa, 2, 1);
		if (!e)
			e = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
		posix_spawn_file_actions_destroy(&fa);
		if (e)
			fprintf(stderr, "bench: chart: cannot run gnuplot (apt-get install gnuplot-nox): %s\n", strerror(e));
		else if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			fprintf(stderr, "bench: chart: gnuplot failed on %s\n", name);
		else {
			snprintf(dest, sizeof(dest), "%s/%s", suite_S.set.out, name);
			ret = copy_file(svg, dest);
			if (ret)
				fprintf(stderr, "bench: chart: cannot write %s\n", dest);
		}
	}
	unlink(dat);
	unlink(gp);
	unlink(svg);
	rmdir(dir);
	return ret;
}

int suite_write_chart(void)
{
	int throughput = draw("latest.svg", throughput_data, throughput_script);
	int latency = draw("latest-latency.svg", latency_data, latency_script);
	return throughput | latency;
}
