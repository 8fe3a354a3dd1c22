/*
 * The suite's state, one object for the whole run: written by options.c
 * (the settings), machine.c, run.c (the results) and bars.c (the idle
 * figures, the outcomes), in that order, and read by the report and the
 * chart at the end.  The suite is one thread, so nothing guards it.
 */
#ifndef BUFSEL_BENCH_SUITE_STATE_H
#define BUFSEL_BENCH_SUITE_STATE_H

#include "bench/suite/bars.h"
#include "bench/suite/results.h"
#include "bench/suite/workloads.h"

#include <stdbool.h>

struct settings {
	bool quick;
	unsigned runs, warmup;
	const char *seconds, *idle_rounds;
	const char *bufsel, *progs, *out;
};

/* The suite's whole state: its settings, one result per workload, the bars' outcomes. */
struct suite {
	struct settings set;
	struct result results[WORKLOADS];
	struct bar_outcome outcomes[BARS];
	char kernel[128], cpu[256], date[40], load_start[64], load_end[64];
	long nproc;
	double elapsed_s;
	/* The idle figures, in bytes: NaN when not measured. */
	double idle_prealloc, idle_native, idle_program, idle_bufsel, idle_slack;
	unsigned idle_rings;
};

extern struct suite suite_S;

#endif
