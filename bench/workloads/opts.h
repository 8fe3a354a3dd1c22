/*
 * Command-line options of a workload, from one table per program:
 *   --name VALUE   or   --name=VALUE
 * Unknown options, missing values, bad numbers and values out of range stop
 * the program with a message naming the option (exit status 2); --help
 * prints the table on stdout and exits 0.
 */
#ifndef BUFSEL_BENCH_OPTS_H
#define BUFSEL_BENCH_OPTS_H

#include <stdbool.h>

enum opt_kind {
	OPT_UINT,   /* unsigned long in [min, max] */
	OPT_DOUBLE, /* double in [min, max] */
	OPT_STRING, /* const char * */
};

struct opt {
	const char *name; /* without the leading "--" */
	enum opt_kind kind;
	void *dst; /* unsigned long *, double * or const char ** */
	double min, max;
	const char *help;
	bool given; /* set by opts_parse */
};

/* Table rows: OPT_U("conns", &x.conns, 1, 60000, "connections"). */
#define OPT_U(n, d, lo, hi, h) \
	{ .name = (n), .kind = OPT_UINT, .dst = (d), .min = (lo), .max = (hi), .help = (h) }
#define OPT_D(n, d, lo, hi, h) \
	{ .name = (n), .kind = OPT_DOUBLE, .dst = (d), .min = (lo), .max = (hi), .help = (h) }
#define OPT_S(n, d, h) { .name = (n), .kind = OPT_STRING, .dst = (d), .help = (h) }

/* Fills each dst that is named on the command line; dst keeps its default otherwise. */
void opts_parse(int argc, char **argv, struct opt *table, unsigned n, const char *summary);

#endif
