/*
 * bufsel report [--margin PCT] [--percentile P] [--plot OUT.svg|OUT.png] STATS.json
 *
 * The statistics say how a program used each buffer group; the question a
 * user brings is how many buffers of what length it should provide.  The
 * answer here: as many as were ever out at once plus a margin, each as long
 * as the P-th percentile of the bytes a delivery used; and what that would
 * save against what the group had.
 *
 * The pieces: the command line (report_options.c), reading the file
 * (report_load.c), the recommendation (report_advice.c), the text
 * (report_text.c) and the plot (report_plot.c).
 */
#define _GNU_SOURCE
#include "launcher/report.h"

#include "launcher/json.h"
#include "launcher/report_load.h"
#include "launcher/report_options.h"
#include "launcher/report_plot.h"
#include "launcher/report_text.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_BAD_FILE 1

int report_run(int argc, char **argv, FILE *out, FILE *err)
{
	struct options o;
	int status = report_parse_args(argc, argv, &o, out, err);
	if (status >= 0)
		return status;

	char *text = NULL, problem[512];
	size_t len = 0;
	struct json_doc doc;
	struct stats st;
	if (report_read_file(o.file, &text, &len, problem, sizeof(problem))) {
		fprintf(err, "bufsel: report: %s: %s\n", o.file, problem);
		return EXIT_BAD_FILE;
	}
	if (json_parse(&doc, text, len, problem, sizeof(problem))) {
		fprintf(err, "bufsel: report: %s: not JSON: %s\n", o.file, problem);
		free(text);
		return EXIT_BAD_FILE;
	}
	if (report_load(&st, &doc, problem, sizeof(problem))) {
		fprintf(err, "bufsel: report: %s: %s\n", o.file, problem);
		report_stats_free(&st);
		json_free(&doc);
		free(text);
		return EXIT_BAD_FILE;
	}
	json_free(&doc);
	free(text);

	report_print(out, &st, &o);
	status = 0;
	if (fflush(out) || ferror(out)) {
		fprintf(err, "bufsel: report: writing the report: %s\n", strerror(errno));
		status = EXIT_BAD_FILE;
	} else if (o.plot && report_plot(&st, &o, err)) {
		status = EXIT_BAD_FILE;
	}
	report_stats_free(&st);
	return status;
}

int report_main(int argc, char **argv)
{
	return report_run(argc, argv, stdout, stderr);
}
