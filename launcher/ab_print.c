/*
 * The text report of `bufsel ab` (ab_print.h), for a person to read; the
 * JSON (ab_json.c) has every run's figures in full for a program to.
 */
#define _GNU_SOURCE
#include "launcher/ab_print.h"

#include "launcher/ab_measures.h"
#include "launcher/ab_messages.h"
#include "launcher/ab_pool_stats.h"
#include "launcher/ab_state.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Four significant digits, whole numbers from 1000 up: "0.01234", "12.35", "123457". */
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

static int name_width(void)
{
	int w = 10;
	for (unsigned m = 0; m < ab.nmeasures; m++)
		if ((int)strlen(ab.measure[m]) > w)
			w = (int)strlen(ab.measure[m]);
	return w;
}

static void print_arm(const struct arm *a, int w)
{
	char med[48], lo[48], hi[48];
	if (a->failed) {
		printf("%s: n/a: %s, %s\n\n", a->def->name, a->where, a->reason);
		return;
	}
	printf("%s: %u run%s\n", a->def->name, a->done, a->done == 1 ? "" : "s");
	printf("  %-*s %12s %12s %12s %8s\n", w, "measure", "median", "min", "max", "spread");
	for (unsigned m = 0; m < ab.nmeasures; m++) {
		if (!ab_reported(a, m))
			continue;
		struct spread s = ab_measure_spread(a, m);
		char rel[32] = "-";
		if (s.median != 0)
			snprintf(rel, sizeof(rel), "%.1f%%", (s.max - s.min) / (s.median < 0 ? -s.median : s.median) * 100);
		printf("  %-*s %12s %12s %12s %8s\n", w, ab.measure[m], fmt_value(med, s.median), fmt_value(lo, s.min),
		       fmt_value(hi, s.max), rel);
	}
	putchar('\n');
}

static void print_ratios(const struct arm *a, int w)
{
	double *r = ab_xcalloc(ab.runs, sizeof(double));
	/* The other arms are judged against native2's spread, beside theirs. */
	bool floor = a != ab.aa && ab.aa && !ab.aa->failed;
	printf("%s / native%s, round by round (%u pairs):\n", a->def->name,
	       a == ab.aa ? " (A/A: this run's noise floor)" : "", a->done < ab.native->done ? a->done : ab.native->done);
	printf("  %-*s %9s %9s %9s  %s", w, "measure", "median", "min", "max", "better");
	if (floor)
		printf("  %-13s  %s", "A/A", "median is");
	putchar('\n');
	for (unsigned m = 0; m < ab.nmeasures; m++) {
		if (!ab_compared(m) || (!ab_reported(a, m) && !ab_reported(ab.native, m)))
			continue;
		ab_pair_ratios(a, m, r);
		struct spread s = ab_spread_of(r, ab.runs);
		if (!s.n) {
			struct spread n = ab_measure_spread(ab.native, m);
			printf("  %-*s %9s %9s %9s  %s\n", w, ab.measure[m], "-", "-", "-",
			       n.n && n.min == 0 && n.max == 0 ? "(0 natively)" : "(no round has it in both arms)");
			continue;
		}
		const char *better = ab_higher_is_better(m) ? "higher" : "lower";
		printf("  %-*s %8.3fx %8.3fx %8.3fx  %-*s", w, ab.measure[m], s.median, s.min, s.max,
		       floor ? 6 : 0, better);
		if (floor) {
			struct spread n = ab_noise(m);
			char range[32] = "-";
			if (n.n)
				snprintf(range, sizeof(range), "%.3f-%.3fx", n.min, n.max);
			printf("  %-13s  %s", range, n.n ? ab_against_noise(m, s.median, n) : "(no A/A pair)");
		}
		putchar('\n');
	}
	putchar('\n');
	free(r);
}

static void print_pools(void)
{
	bool header = false;
	for (unsigned i = 0; i < ab.narms; i++) {
		const struct arm *a = &ab.arms[i];
		if (!a->def->mode || a->failed)
			continue;
		if (!header) {
			printf("bufsel pool statistics, last round (round %u), per buffer group:\n", ab.runs);
			printf("  %-12s %8s %5s %6s %8s %8s %8s %12s %9s  %s\n", "arm", "pid", "ring", "bgid", "buffers",
			       "buf_len", "peak_out", "held_bytes", "selected", "-ENOBUFS (empty/capped/injected)");
			header = true;
		}
		if (!a->ngroups) {
			printf("  %-12s %s\n", a->def->name,
			       a->nfiles ? "no legacy buffer group in its statistics"
					 : "no statistics written: no process made a legacy buffer group");
			continue;
		}
		for (size_t k = 0; k < a->ngroups; k++) {
			const struct group_summary *g = &a->groups[k];
			char pid[24] = "-";
			if (g->has_pid)
				snprintf(pid, sizeof(pid), "%" PRIu64, g->pid);
			printf("  %-12s %8s %5" PRIu64 " %6" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %12" PRIu64
			       " %9" PRIu64 "  %" PRIu64 " (%" PRIu64 "/%" PRIu64 "/%" PRIu64 ")%s\n",
			       a->def->name, pid, g->ring, g->bgid, g->buffers, g->buf_len, g->peak_out, ab_held_bytes(g),
			       g->selected, g->empty + g->capped + g->injected, g->empty, g->capped, g->injected,
			       g->strays ? "  strays!" : "");
		}
	}
	bool any = false;
	for (unsigned i = 0; i < ab.narms; i++)
		any |= ab.arms[i].ngroups > 0;
	if (any)
		printf("  held_bytes = peak_out x buf_len: the most memory the group had out at once.\n");
}

void ab_print_report(void)
{
	int w = name_width();
	printf("bufsel ab: %s", ab.argv[0]);
	for (int i = 1; ab.argv[i]; i++)
		printf(" %s", ab.argv[i]);
	printf("\n%u round%s after %u warm-up round%s; arms:", ab.runs, ab.runs == 1 ? "" : "s", ab.warmup,
	       ab.warmup == 1 ? "" : "s");
	for (unsigned i = 0; i < ab.narms; i++)
		printf("%s %s", i ? "," : "", ab.arms[i].def->name);
	printf(" (reversed every other round)\n\n");
	for (unsigned i = 0; i < ab.narms; i++)
		print_arm(&ab.arms[i], w);
	for (unsigned i = 0; i < ab.narms; i++) {
		const struct arm *a = &ab.arms[i];
		if (a == ab.native)
			continue;
		if (a->failed)
			printf("%s / native: n/a: %s, %s\n\n", a->def->name, a->where, a->reason);
		else if (!ab.native)
			printf("%s / native: no native arm to compare with\n\n", a->def->name);
		else
			print_ratios(a, w);
	}
	print_pools();
}
