/*
 * The command line of `bufsel report`, read into struct options for the
 * files that compute and print the report.  Percentages are kept in
 * millionths, read exactly from their decimal text.
 */
#ifndef BUFSEL_LAUNCHER_REPORT_OPTIONS_H
#define BUFSEL_LAUNCHER_REPORT_OPTIONS_H

#include <stdint.h>
#include <stdio.h>

#define MICRO 1000000u			/* percentages are kept in millionths */

struct options {
	uint64_t margin;	/* percent, in millionths */
	uint64_t percentile;	/* in millionths */
	const char *plot;	/* output file, or NULL */
	const char *file;
};

int report_parse_args(int argc, char **argv, struct options *o, FILE *out, FILE *err);

#endif
