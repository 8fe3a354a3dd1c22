/*
 * The text `bufsel report` prints: a line per buffer group, a legend, and
 * the recommendation for each group with its total.
 */
#ifndef BUFSEL_LAUNCHER_REPORT_TEXT_H
#define BUFSEL_LAUNCHER_REPORT_TEXT_H

#include "launcher/report_load.h"
#include "launcher/report_options.h"

#include <stdio.h>

void report_print(FILE *out, const struct stats *st, const struct options *o);

#endif
