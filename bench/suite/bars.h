/*
 * The performance bars: the table of what must hold, and the judging of
 * each bar against this run's results.  A new bar is a new row in bars.c.
 */
#ifndef BUFSEL_BENCH_SUITE_BARS_H
#define BUFSEL_BENCH_SUITE_BARS_H

#include <stddef.h>

/*
 * The performance bars.  A ratio bar holds when the median of the round
 * pairs' ratios (bufsel / native) is at least (GE) or at most (LE) the limit;
 * the idle bars are worked out from several workloads (see idle_bars()).
 * A ratio bar is judged only when the workload's native2 arm (native again)
 * shows the run quiet enough: its ratios to native, the noise floor of that
 * metric in that run, may span at most aa_limit (max - min); a noisier run
 * publishes the figures and no verdict ("noisy").
 */
enum bar_kind { BAR_GE, BAR_LE, BAR_IDLE_HELD, BAR_IDLE_PREALLOC };

struct bar {
	enum bar_kind kind;
	const char *workload, *arm, *metric;
	double limit;
	double aa_limit;	/* ratio bars: the widest A/A span judged */
};

/* The table's length as a constant, for the arrays sized by it (struct suite); bars.c checks it. */
#define BARS ((size_t)14)
extern const struct bar suite_bars[];

struct bar_outcome {
	double value;		/* NaN: could not be measured */
	const char *result;	/* "pass", "FAIL", "noisy", "n/a", "not run" */
	char measured[160];
	char why[200];
};

void suite_idle_figures(void);
void suite_judge_bar(const struct bar *b, struct bar_outcome *o);
void suite_bar_text(const struct bar *b, char *buf, size_t len);

#endif
