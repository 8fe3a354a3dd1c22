/*
 * The workload table: which program each workload runs, with which
 * arguments, in which arms, whether bench-quick has it, and the metric its
 * chart bar shows.  A new workload is a new row in workloads.c; every other
 * file walks the table and holds no list of its own.
 */
#ifndef BUFSEL_BENCH_SUITE_WORKLOADS_H
#define BUFSEL_BENCH_SUITE_WORKLOADS_H

#include <stdbool.h>
#include <stddef.h>

/* native2 is native again: its ratio to native is the run's noise floor (A/A). */
#define ALL_ARMS "native,native2,emulate,passthrough,kernel56"
#define MAX_ARGS 8

/* The arms with a ratio to native, native2 first. */
#define RATIO_ARMS 5
extern const char *const suite_ratio_arms[RATIO_ARMS];
/* Where the whole per-call signal would show: the trap arm too (BUFSEL_PATCH=off). */
#define TRAP_ARMS ALL_ARMS ",trap"

/* How long a workload runs: --seconds S, or --rounds R. */
enum span { SPAN_SECONDS, SPAN_ROUNDS };

struct workload {
	const char *name;	/* file names under OUT/ab/ */
	const char *title;
	const char *prog;	/* under --progs */
	const char *args[MAX_ARGS];
	enum span span;
	const char *arms;
	bool quick;		/* part of bench-quick */
	const char *throughput;	/* the metric the chart shows; NULL: not charted */
};

/* The table's length as a constant, for the arrays sized by it (struct suite); workloads.c checks it. */
#define WORKLOADS ((size_t)10)
extern const struct workload suite_workloads[];

const struct workload *suite_workload_named(const char *name, size_t *index);

#endif
