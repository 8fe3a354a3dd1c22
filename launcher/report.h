/*
 * `bufsel report`: reads the statistics file a program wrote under bufsel
 * (BUFSEL_STATS=PATH, docs/stats-schema.md), prints a table of its buffer
 * groups and a sizing recommendation for each, and with --plot draws the
 * groups' histograms with gnuplot.
 */
#ifndef BUFSEL_LAUNCHER_REPORT_H
#define BUFSEL_LAUNCHER_REPORT_H

#include <stdio.h>

/*
 * argv[0] is "report", the options and the file follow.  Writes the report
 * to out and problems to err; returns the exit status: 0, 1 when the file
 * cannot be read or is not a statistics file or the plot fails, 2 for a bad
 * command line.
 */
int report_run(int argc, char **argv, FILE *out, FILE *err);

/* report_run() on stdout and stderr. */
int report_main(int argc, char **argv);

#endif
