/*
 * Writing the report (report.h) from the suite's state, once every
 * workload has run and every bar is judged.  A file that cannot be written
 * stops the suite: a report with a part missing would read as complete.
 */
#define _GNU_SOURCE
#include "bench/suite/report.h"

#include "bench/suite/bars.h"
#include "bench/suite/results.h"
#include "bench/suite/state.h"
#include "bench/suite/util.h"
#include "bench/suite/workloads.h"
#include "launcher/json.h"
#include "launcher/json_write.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static FILE *open_out(const char *name, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", suite_S.set.out, name);
	FILE *f = fopen(path, "we");
	if (!f)
		suite_die("%s: %s", path, strerror(errno));
	return f;
}

static void close_out(FILE *f, const char *path)
{
	if (fflush(f) || ferror(f) || fclose(f))
		suite_die("writing %s: %s", path, strerror(errno));
}

void suite_write_json(void)
{
	char path[PATH_MAX], text[256];
	FILE *f = open_out("latest.json", path, sizeof(path));
	struct json_writer w;
	jw_init(&w, f);
	jw_object(&w, NULL);
	jw_int(&w, "bufsel_bench", 1);
	jw_object(&w, "machine");
	jw_string(&w, "kernel", suite_S.kernel);
	jw_string(&w, "cpu", suite_S.cpu);
	jw_int(&w, "nproc", suite_S.nproc);
	jw_string(&w, "date", suite_S.date);
	jw_string(&w, "loadavg_start", suite_S.load_start);
	jw_string(&w, "loadavg_end", suite_S.load_end);
	jw_end(&w);
	jw_object(&w, "settings");
	jw_bool(&w, "quick", suite_S.set.quick);
	jw_int(&w, "runs", suite_S.set.runs);
	jw_int(&w, "warmup", suite_S.set.warmup);
	jw_string(&w, "seconds", suite_S.set.seconds);
	jw_string(&w, "idle_rounds", suite_S.set.idle_rounds);
	jw_end(&w);
	jw_number(&w, "elapsed_s", suite_S.elapsed_s);
	jw_array(&w, "workloads");
	for (size_t i = 0; i < WORKLOADS; i++) {
		const struct workload *wl = &suite_workloads[i];
		const struct result *r = &suite_S.results[i];
		jw_object(&w, NULL);
		jw_string(&w, "name", wl->name);
		jw_string(&w, "title", wl->title);
		jw_string(&w, "status", !r->ran ? "not run" : r->ok ? "ok" : "failed");
		jw_string(&w, "error", r->ok || !r->ran ? NULL : r->error);
		jw_number(&w, "elapsed_s", r->ran ? r->elapsed_s : NAN);
		if (r->has_doc)
			jw_raw(&w, "ab", r->text, r->len);
		else
			jw_null(&w, "ab");
		jw_end(&w);
	}
	jw_end(&w);
	jw_object(&w, "idle");
	jw_number(&w, "prealloc_held_bytes", suite_S.idle_prealloc);
	jw_number(&w, "native_held_bytes", suite_S.idle_native);
	jw_number(&w, "emulate_program_held_bytes", suite_S.idle_program);
	jw_number(&w, "emulate_bufsel_held_bytes", suite_S.idle_bufsel);
	jw_number(&w, "one_buffer_per_ring_bytes", suite_S.idle_slack);
	jw_int(&w, "rings", suite_S.idle_rings);
	jw_end(&w);
	jw_array(&w, "bars");
	for (size_t i = 0; i < BARS; i++) {
		const struct bar_outcome *o = &suite_S.outcomes[i];
		suite_bar_text(&suite_bars[i], text, sizeof(text));
		jw_object_flat(&w, NULL);
		jw_string(&w, "bar", text);
		jw_string(&w, "workload", suite_bars[i].workload);
		jw_string(&w, "arm", suite_bars[i].arm);
		jw_string(&w, "metric", suite_bars[i].metric);
		jw_number(&w, "value", o->value);
		jw_string(&w, "result", o->result);
		jw_string(&w, "why", o->why[0] ? o->why : NULL);
		jw_end(&w);
	}
	jw_end(&w);
	jw_end(&w);
	if (jw_finish(&w))
		suite_die("writing %s: %s", path, strerror(errno));
	close_out(f, path);
}

static const char *fmt_value(char buf[48], double v)
{
	if (!isfinite(v))
		snprintf(buf, 48, "-");
	else if (v >= 1000 || v <= -1000)
		snprintf(buf, 48, "%.0f", v);
	else
		snprintf(buf, 48, "%.4g", v);
	return buf;
}

static bool higher_better(const char *m)
{
	static const char *const suffixes[] = { "_per_s", "_per_sec", "_per_second", "bps", "iops", "qps", "rps",
						"tps", "throughput" };
	size_t n = strlen(m);
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		size_t k = strlen(suffixes[i]);
		if (n >= k && !strcmp(m + n - k, suffixes[i]))
			return true;
	}
	return false;
}

/* One row of the table: a measure of one workload, natively and as ratios. */
static void table_row(FILE *f, const struct workload *w, const struct result *r, const char *metric)
{
	char v[48], why[200];
	double ratio[3];
	fprintf(f, "| %s | %s %s | %s |", w->title, metric, higher_better(metric) ? "(higher better)" : "(lower better)",
		fmt_value(v, suite_arm_median(r, "native", metric)));
	for (int i = 0; i < RATIO_ARMS; i++) {
		if (!strstr(w->arms, suite_ratio_arms[i]))
			fputs(" - |", f);
		else if (suite_arm_ratio(r, suite_ratio_arms[i], metric, ratio))
			fprintf(f, " %.3fx (%.3f-%.3f) |", ratio[0], ratio[1], ratio[2]);
		else {
			suite_arm_missing(r, suite_ratio_arms[i], why, sizeof(why));
			fputs(why[0] ? " n/a |" : " - |", f);
		}
	}
	fputc('\n', f);
}

void suite_write_md(void)
{
	char path[PATH_MAX], v[48], text[256], why[200];
	FILE *f = open_out("latest.md", path, sizeof(path));
	fprintf(f, "# bufsel benchmarks, %s\n\n", suite_S.date);
	fprintf(f, "Linux %s, %s, %ld CPUs; load average %s at the start, %s at the end.\n", suite_S.kernel, suite_S.cpu, suite_S.nproc,
		suite_S.load_start, suite_S.load_end);
	fprintf(f, "%s: %u rounds after %u warm-up round%s, --seconds %s, --rounds %s (idle); %.0f s in all.\n\n",
		suite_S.set.quick ? "make bench-quick" : "make bench", suite_S.set.runs, suite_S.set.warmup, suite_S.set.warmup == 1 ? "" : "s",
		suite_S.set.seconds, suite_S.set.idle_rounds, suite_S.elapsed_s);
	fputs("Ratios are an arm / native, round by round: the median of the pairs and (min-max). native2 is the "
	      "program alone again: its ratio is this run's noise floor (A/A).\n\n", f);
	fputs("| workload | metric | native | native2 ratio (A/A) | emulate ratio | passthrough ratio | kernel56 ratio | trap ratio |\n", f);
	fputs("|---|---|---|---|---|---|---|---|\n", f);
	for (size_t i = 0; i < WORKLOADS; i++) {
		const struct workload *w = &suite_workloads[i];
		const struct result *r = &suite_S.results[i];
		if (!r->ran)
			continue;
		int nat = suite_arm_node(r, "native");
		int metrics = nat >= 0 ? suite_at(&r->doc, nat, "summary.metrics") : -1;
		if (metrics < 0 || r->doc.nodes[metrics].type != JSON_OBJECT) {
			fprintf(f, "| %s | - | FAILED | | | | | |\n", w->title);
			continue;
		}
		table_row(f, w, r, w->span == SPAN_SECONDS ? "cpu_s" : "wall_s");
		for (int m = r->doc.nodes[metrics].first; m >= 0; m = r->doc.nodes[m].next)
			table_row(f, w, r, r->doc.nodes[m].key);
	}

	/* Echo with one connection pays interception on every message: how much of it is the signal. */
	for (size_t i = 0; i < WORKLOADS; i++) {
		double e[3], t[3], ec[3], tc[3];
		if (strcmp(suite_workloads[i].name, "echo-c1-s64") || !suite_S.results[i].ran ||
		    !suite_arm_ratio(&suite_S.results[i], "emulate", "msgs_per_s", e) || !suite_arm_ratio(&suite_S.results[i], "trap", "msgs_per_s", t) ||
		    !suite_arm_ratio(&suite_S.results[i], "emulate", "server_cpu_us_per_msg", ec) ||
		    !suite_arm_ratio(&suite_S.results[i], "trap", "server_cpu_us_per_msg", tc))
			continue;
		fputs("\n## Echo, 1 connection: the trap's share\n\n", f);
		fprintf(f, "Every message costs the server at least one `io_uring_enter`. With every call trapped "
			   "(`trap` arm, `BUFSEL_PATCH=off`) throughput is %.3fx native and server CPU per message "
			   "%.3fx; with site patching (`emulate`) %.3fx and %.3fx. ",
			t[0], tc[0], e[0], ec[0]);
		/* A share of a gap is only meaningful when every round of the trap
		 * arm was below native; otherwise the gap is this run's noise. */
		if (t[2] < 1) {
			double share = 100.0 * (e[0] - t[0]) / (1 - t[0]);
			fprintf(f, "The signal round trip is the difference: %.0f%% of the throughput gap of the "
				   "trap arm is gone with patching.\n",
				share < 0 ? 0.0 : share > 100 ? 100.0 : share);
		} else {
			fprintf(f, "The trap arm's gap to native (range %.3f-%.3fx) is within this run's noise, "
				   "so no share of it is given.\n", t[1], t[2]);
		}
	}

	fputs("\n## Idle memory\n\n", f);
	fputs("| figure | bytes |\n|---|---|\n", f);
	fprintf(f, "| idle_prealloc natively: held_peak_bytes (program) | %s |\n", fmt_value(v, suite_S.idle_prealloc));
	fprintf(f, "| idle_select natively: held_peak_bytes (program) | %s |\n", fmt_value(v, suite_S.idle_native));
	fprintf(f, "| idle_select under bufsel (emulate): held_peak_bytes (program) | %s |\n",
		fmt_value(v, suite_S.idle_program));
	fprintf(f, "| idle_select under bufsel (emulate): held by bufsel, peak_out x buf_len (pool statistics) | %s |\n",
		fmt_value(v, suite_S.idle_bufsel));
	fprintf(f, "| one buffer per ring (%u ring%s) | %s |\n", suite_S.idle_rings, suite_S.idle_rings == 1 ? "" : "s",
		fmt_value(v, suite_S.idle_slack));

	fputs("\n## Bars\n\n| bar | measured | result |\n|---|---|---|\n", f);
	for (size_t i = 0; i < BARS; i++) {
		const struct bar_outcome *o = &suite_S.outcomes[i];
		suite_bar_text(&suite_bars[i], text, sizeof(text));
		if (o->measured[0] && o->why[0])
			fprintf(f, "| %s | %s: %s | %s |\n", text, o->measured, o->why, o->result);
		else
			fprintf(f, "| %s | %s | %s |\n", text, o->measured[0] ? o->measured : o->why, o->result);
	}

	bool header = false;
	for (size_t i = 0; i < WORKLOADS; i++) {
		const struct result *r = &suite_S.results[i];
		if (!r->ran)
			continue;
		for (int k = -1; k < RATIO_ARMS; k++) {
			const char *arm = k < 0 ? "native" : suite_ratio_arms[k];
			if (!strstr(suite_workloads[i].arms, arm))
				continue;
			suite_arm_missing(r, arm, why, sizeof(why));
			if (!why[0])
				continue;
			if (!header)
				fputs("\n## Not measured\n\n", f);
			header = true;
			fprintf(f, "- %s, %s: %s\n", suite_workloads[i].title, arm, why);
		}
	}
	close_out(f, path);
}
