/*
 * The bars (bars.h): the table, and their judging.  The ratio bars read one
 * arm's ratio to native; the idle bars compare figures from two workloads,
 * worked out once by suite_idle_figures() into the suite's state, where the
 * report reads them too.
 */
#define _GNU_SOURCE
#include "bench/suite/bars.h"

#include "bench/suite/results.h"
#include "bench/suite/state.h"
#include "bench/suite/workloads.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>

/* The widest A/A span a throughput bar is judged on: a 3 % gap is not to be
 * told from a run that moves native by more than 6 %; a p99 moves more. */
#define AA_RATE 0.06
#define AA_P99 0.30

const struct bar suite_bars[] = {
	{ BAR_GE, "echo-c64-s64", "passthrough", "msgs_per_s", 0.97, AA_RATE },
	{ BAR_GE, "echo-c64-s4096", "passthrough", "msgs_per_s", 0.97, AA_RATE },
	{ BAR_GE, "echo-c1000-s64", "passthrough", "msgs_per_s", 0.97, AA_RATE },
	{ BAR_GE, "echo-c1000-s4096", "passthrough", "msgs_per_s", 0.97, AA_RATE },
	{ BAR_GE, "pipe", "passthrough", "gb_per_s", 0.97, AA_RATE },
	{ BAR_GE, "file", "passthrough", "ops_per_s", 0.97, AA_RATE },
	{ BAR_GE, "echo-c64-s64", "emulate", "msgs_per_s", 0.90, AA_RATE },
	{ BAR_GE, "echo-c64-s4096", "emulate", "msgs_per_s", 0.90, AA_RATE },
	{ BAR_GE, "pipe", "emulate", "gb_per_s", 0.90, AA_RATE },
	{ BAR_GE, "file", "emulate", "ops_per_s", 0.90, AA_RATE },
	{ BAR_LE, "echo-c64-s64", "emulate", "p99_us", 1.3, AA_P99 },
	{ BAR_LE, "echo-c64-s4096", "emulate", "p99_us", 1.3, AA_P99 },
	{ BAR_IDLE_HELD, "idle_select", "emulate", "held_peak_bytes", 0, 0 },
	{ BAR_IDLE_PREALLOC, "idle_prealloc", "native", "held_peak_bytes", 100, 0 },
};
_Static_assert(sizeof(suite_bars) / sizeof(suite_bars[0]) == BARS, "BARS is the table's length");

static const struct result *result_named(const char *name)
{
	size_t i;
	return suite_workload_named(name, &i) ? &suite_S.results[i] : NULL;
}

/* The held figures of the idle workloads, in bytes (docs/performance.md, "Idle memory"). */
void suite_idle_figures(void)
{
	const struct result *sel = result_named("idle_select"), *pre = result_named("idle_prealloc");
	suite_S.idle_prealloc = suite_arm_median(pre, "native", "held_peak_bytes");
	suite_S.idle_native = suite_arm_median(sel, "native", "held_peak_bytes");
	suite_S.idle_program = suite_arm_median(sel, "emulate", "held_peak_bytes");
	suite_S.idle_bufsel = suite_S.idle_slack = NAN;
	suite_S.idle_rings = 0;
	int a = suite_arm_node(sel, "emulate");
	int groups = a >= 0 ? suite_at(&sel->doc, a, "pool_stats.groups") : -1;
	if (groups < 0 || sel->doc.nodes[groups].type != JSON_ARRAY)
		return;
	/* One buffer per ring: the longest buffer of each ring's groups. */
	double held = 0, slack = 0;
	double last_pid = -1, last_ring = -1, ring_max = 0;
	for (int g = sel->doc.nodes[groups].first; g >= 0; g = sel->doc.nodes[g].next) {
		double pid = suite_num_at(&sel->doc, g, "pid"), ring = suite_num_at(&sel->doc, g, "ring");
		if (pid != last_pid || ring != last_ring) {
			slack += ring_max;
			ring_max = 0;
			suite_S.idle_rings++;
			last_pid = pid;
			last_ring = ring;
		}
		held += suite_num_at(&sel->doc, g, "held_bytes");
		double len = suite_num_at(&sel->doc, g, "buf_len");
		if (len > ring_max)
			ring_max = len;
	}
	suite_S.idle_bufsel = held;
	suite_S.idle_slack = slack + ring_max;
}

static void judge(struct bar_outcome *o, bool pass)
{
	o->result = pass ? "pass" : "FAIL";
}

void suite_judge_bar(const struct bar *b, struct bar_outcome *o)
{
	size_t index = 0;
	const struct workload *w = suite_workload_named(b->workload, &index);
	const struct result *r = &suite_S.results[index];
	double ratio[3], aa[3];
	o->value = NAN;
	o->result = "n/a";
	o->measured[0] = o->why[0] = '\0';
	if (!r->ran) {
		o->result = "not run";
		snprintf(o->why, sizeof(o->why), "%s is not part of this suite", w->title);
		return;
	}
	switch (b->kind) {
	case BAR_GE:
	case BAR_LE:
		if (!suite_arm_ratio(r, b->arm, b->metric, ratio)) {
			suite_arm_missing(r, b->arm, o->why, sizeof(o->why));
			if (!o->why[0])
				snprintf(o->why, sizeof(o->why), "no %s in both arms", b->metric);
			return;
		}
		o->value = ratio[0];
		if (!suite_arm_ratio(r, "native2", b->metric, aa)) {
			snprintf(o->measured, sizeof(o->measured), "%.3fx (%.3f-%.3f); no A/A", ratio[0], ratio[1],
				 ratio[2]);
			snprintf(o->why, sizeof(o->why), "no native2 arm: the run's noise is not known");
			return;
		}
		snprintf(o->measured, sizeof(o->measured), "%.3fx (%.3f-%.3f); A/A %.3f-%.3f", ratio[0], ratio[1],
			 ratio[2], aa[1], aa[2]);
		if (aa[2] - aa[1] > b->aa_limit) {
			o->result = "noisy";
			snprintf(o->why, sizeof(o->why), "A/A span %.3f > %.2f: not judged", aa[2] - aa[1], b->aa_limit);
			return;
		}
		judge(o, b->kind == BAR_GE ? ratio[0] >= b->limit : ratio[0] <= b->limit);
		return;
	case BAR_IDLE_HELD:
		if (!isfinite(suite_S.idle_bufsel) || !isfinite(suite_S.idle_native)) {
			snprintf(o->why, sizeof(o->why), "%s",
				 !isfinite(suite_S.idle_native) ? "no held_peak_bytes natively" : "no pool statistics under bufsel");
			return;
		}
		o->value = suite_S.idle_bufsel;
		snprintf(o->measured, sizeof(o->measured), "%.0f B held by bufsel; native %.0f B + %.0f B (%u ring%s)",
			 suite_S.idle_bufsel, suite_S.idle_native, suite_S.idle_slack, suite_S.idle_rings, suite_S.idle_rings == 1 ? "" : "s");
		judge(o, suite_S.idle_bufsel <= suite_S.idle_native + suite_S.idle_slack);
		return;
	case BAR_IDLE_PREALLOC:
		if (!isfinite(suite_S.idle_prealloc) || !isfinite(suite_S.idle_native)) {
			snprintf(o->why, sizeof(o->why), "no held_peak_bytes from %s",
				 !isfinite(suite_S.idle_prealloc) ? "idle_prealloc" : "idle_select natively");
			return;
		}
		o->value = suite_S.idle_native > 0 ? suite_S.idle_prealloc / suite_S.idle_native : INFINITY;
		snprintf(o->measured, sizeof(o->measured), "%.0f B / %.0f B = %.1fx", suite_S.idle_prealloc, suite_S.idle_native,
			 o->value);
		judge(o, o->value >= b->limit);
		return;
	}
}

void suite_bar_text(const struct bar *b, char *buf, size_t len)
{
	size_t index = 0;
	const struct workload *w = suite_workload_named(b->workload, &index);
	switch (b->kind) {
	case BAR_GE:
		snprintf(buf, len, "%s >= %.2fx native %s, %s", b->arm, b->limit, b->metric, w->title);
		break;
	case BAR_LE:
		snprintf(buf, len, "%s <= %.2fx native %s, %s", b->arm, b->limit, b->metric, w->title);
		break;
	case BAR_IDLE_HELD:
		snprintf(buf, len, "idle: bytes held by bufsel <= native held bytes + one buffer per ring");
		break;
	case BAR_IDLE_PREALLOC:
		snprintf(buf, len, "idle: preallocated / native buffer-select held bytes >= %.0fx", b->limit);
		break;
	}
}
