/*
 * The report `bufsel ab` prints on stdout: each arm's spread of every
 * measure, each bufsel arm's ratios to native, and the pool statistics.
 */
#ifndef BUFSEL_LAUNCHER_AB_PRINT_H
#define BUFSEL_LAUNCHER_AB_PRINT_H

void ab_print_report(void);

#endif
