/*
 * The workload table (workloads.h) and its look-up by name, which the bars
 * and the report use to find the workload a bar or a figure belongs to.
 */
#define _GNU_SOURCE
#include "bench/suite/workloads.h"

#include <string.h>

const char *const suite_ratio_arms[] = { "native2", "emulate", "passthrough", "kernel56", "trap" };

const struct workload suite_workloads[] = {
	{ "echo-c1-s64", "echo, 1 conn, 64 B", "echo", { "--conns", "1", "--size", "64" }, SPAN_SECONDS, TRAP_ARMS,
	  true, "msgs_per_s" },
	{ "echo-c1-s4096", "echo, 1 conn, 4096 B", "echo", { "--conns", "1", "--size", "4096" }, SPAN_SECONDS,
	  ALL_ARMS, false, "msgs_per_s" },
	{ "echo-c64-s64", "echo, 64 conns, 64 B", "echo", { "--conns", "64", "--size", "64" }, SPAN_SECONDS,
	  TRAP_ARMS, true, "msgs_per_s" },
	{ "echo-c64-s4096", "echo, 64 conns, 4096 B", "echo", { "--conns", "64", "--size", "4096" }, SPAN_SECONDS,
	  ALL_ARMS, false, "msgs_per_s" },
	{ "echo-c1000-s64", "echo, 1000 conns, 64 B", "echo", { "--conns", "1000", "--size", "64" }, SPAN_SECONDS,
	  ALL_ARMS, true, "msgs_per_s" },
	{ "echo-c1000-s4096", "echo, 1000 conns, 4096 B", "echo", { "--conns", "1000", "--size", "4096" },
	  SPAN_SECONDS, ALL_ARMS, false, "msgs_per_s" },
	{ "pipe", "pipe", "pipe", { NULL }, SPAN_SECONDS, TRAP_ARMS, true, "gb_per_s" },
	{ "file", "file", "file", { NULL }, SPAN_SECONDS, TRAP_ARMS, true, "ops_per_s" },
	{ "idle_select", "idle, buffer select", "idle_select", { NULL }, SPAN_ROUNDS, ALL_ARMS, true, "msgs_per_s" },
	{ "idle_prealloc", "idle, preallocated", "idle_prealloc", { NULL }, SPAN_ROUNDS, "native", true, NULL },
};
_Static_assert(sizeof(suite_workloads) / sizeof(suite_workloads[0]) == WORKLOADS, "WORKLOADS is the table's length");

const struct workload *suite_workload_named(const char *name, size_t *index)
{
	for (size_t i = 0; i < WORKLOADS; i++)
		if (!strcmp(suite_workloads[i].name, name)) {
			*index = i;
			return &suite_workloads[i];
		}
	return NULL;
}
