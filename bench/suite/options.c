/*
 * Parsing the suite's options (options.h).  A bad value stops the suite
 * before anything has run, with one line naming the option; --help and a
 * usage error print the same text, to stdout and stderr.
 */
#define _GNU_SOURCE
#include "bench/suite/options.h"

#include "bench/suite/state.h"
#include "bench/suite/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(int status)
{
	fputs("Usage: suite [--quick] [--runs N] [--warmup N] [--seconds S] [--idle-rounds R]\n"
	      "             [--bufsel PATH] [--progs DIR] [--out DIR]\n"
	      "Runs the benchmark workloads through bufsel ab and writes DIR/latest.{json,md,svg}\n"
	      "(docs/performance.md). Defaults: 5 runs after 1 warm-up, 1.5 s, 1000 idle rounds;\n"
	      "--quick: 3 runs, no warm-up, 0.5 s, 200 idle rounds, fewer echo configurations;\n"
	      "--bufsel build/bufsel, --progs build/bench, --out bench/results.\n",
	      status ? stderr : stdout);
	exit(status);
}

static unsigned parse_count(const char *opt, const char *s, unsigned min)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end || !*s || v < min || v > 10000 || *s == '-')
		suite_die("%s: '%s' is not a whole number in %u..10000", opt, s, min);
	return (unsigned)v;
}

void suite_parse(int argc, char **argv)
{
	const char *runs = NULL, *warmup = NULL;
	suite_S.set.bufsel = "build/bufsel";
	suite_S.set.progs = "build/bench";
	suite_S.set.out = "bench/results";
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			usage(0);
		if (!strcmp(a, "--quick")) {
			suite_S.set.quick = true;
			continue;
		}
		const char **slot = !strcmp(a, "--runs")	  ? &runs
				    : !strcmp(a, "--warmup")	  ? &warmup
				    : !strcmp(a, "--seconds")	  ? &suite_S.set.seconds
				    : !strcmp(a, "--idle-rounds") ? &suite_S.set.idle_rounds
				    : !strcmp(a, "--bufsel")	  ? &suite_S.set.bufsel
				    : !strcmp(a, "--progs")	  ? &suite_S.set.progs
				    : !strcmp(a, "--out")	  ? &suite_S.set.out
								  : NULL;
		if (!slot || !v || !*v)
			usage(2);
		*slot = v;
		i++;
	}
	suite_S.set.runs = runs ? parse_count("--runs", runs, 1) : suite_S.set.quick ? 3 : 5;
	suite_S.set.warmup = warmup ? parse_count("--warmup", warmup, 0) : suite_S.set.quick ? 0 : 1;
	if (!suite_S.set.seconds)
		suite_S.set.seconds = suite_S.set.quick ? "0.5" : "1.5";
	if (!suite_S.set.idle_rounds)
		suite_S.set.idle_rounds = suite_S.set.quick ? "200" : "1000";
	char *end;
	double secs = strtod(suite_S.set.seconds, &end);
	if (*end || !(secs > 0))
		suite_die("--seconds: '%s' is not a positive number", suite_S.set.seconds);
	parse_count("--idle-rounds", suite_S.set.idle_rounds, 1);
}
