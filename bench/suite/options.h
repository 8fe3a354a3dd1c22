/*
 * The suite's command line, into the settings of the suite's state, with
 * the defaults of make bench and of make bench-quick.
 */
#ifndef BUFSEL_BENCH_SUITE_OPTIONS_H
#define BUFSEL_BENCH_SUITE_OPTIONS_H

void suite_parse(int argc, char **argv);

#endif
