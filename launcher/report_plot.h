/*
 * `bufsel report --plot`: every group's in-use and bytes-used histograms,
 * drawn by gnuplot into an SVG or PNG file.
 */
#ifndef BUFSEL_LAUNCHER_REPORT_PLOT_H
#define BUFSEL_LAUNCHER_REPORT_PLOT_H

#include "launcher/report_load.h"
#include "launcher/report_options.h"

#include <stdbool.h>
#include <stdio.h>

/* Whether s ends in suffix, ignoring case, with something before it. */
bool report_ends_with(const char *s, const char *suffix);
/* Draws o->plot: 0, or -1 with the problem on err. */
int report_plot(const struct stats *st, const struct options *o, FILE *err);

#endif
