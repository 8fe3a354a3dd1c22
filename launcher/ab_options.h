/*
 * The command line of `bufsel ab`: its options, the arms they name, and
 * --help, read into ab (ab_state.h).  A bad command line exits with status 2
 * from here; a good one leaves ab ready for PROGRAM to be found.
 */
#ifndef BUFSEL_LAUNCHER_AB_OPTIONS_H
#define BUFSEL_LAUNCHER_AB_OPTIONS_H

/* Returns the index of PROGRAM in argv; -h and --help print and exit 0. */
int ab_parse_options(int argc, char **argv);

#endif
