/*
 * Running one workload: `bufsel ab` with the workload's program, arms and
 * the suite's settings, its output kept under OUT/ab/, its JSON read back
 * into the workload's result.
 */
#ifndef BUFSEL_BENCH_SUITE_RUN_H
#define BUFSEL_BENCH_SUITE_RUN_H

#include <stddef.h>

void suite_run_workload(size_t index);

#endif
