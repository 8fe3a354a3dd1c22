/*
 * One workload's result, and what it says about each arm: ab's JSON as
 * run.c read it back, walked by dotted paths.  Every reader returns NaN,
 * -1 or false for what is not there, so a workload that failed or an arm
 * that did not run shows as a gap, never as a crash.
 */
#ifndef BUFSEL_BENCH_SUITE_RESULTS_H
#define BUFSEL_BENCH_SUITE_RESULTS_H

#include "launcher/json.h"

#include <stdbool.h>
#include <stddef.h>

/* One workload's outcome: ab's JSON, read back, or why there is none. */
struct result {
	bool ran;		/* false: not part of this suite (bench-quick) */
	bool ok;		/* ab exited 0 */
	char error[600];	/* when !ok */
	char *text;
	size_t len;
	struct json_doc doc;
	bool has_doc;
	double elapsed_s;
};

int suite_at(const struct json_doc *d, int from, const char *path);
double suite_num_at(const struct json_doc *d, int from, const char *path);
int suite_arm_node(const struct result *r, const char *arm);
double suite_arm_median(const struct result *r, const char *arm, const char *metric);
bool suite_arm_ratio(const struct result *r, const char *arm, const char *metric, double out[3]);
void suite_arm_missing(const struct result *r, const char *arm, char *why, size_t len);

#endif
