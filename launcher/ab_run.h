/*
 * The runs of `bufsel ab`: the rounds, every arm once per round, and one
 * run of PROGRAM, timed and reaped from outside.
 */
#ifndef BUFSEL_LAUNCHER_AB_RUN_H
#define BUFSEL_LAUNCHER_AB_RUN_H

/*
 * Runs the warm-up rounds and the measured rounds.  A failed run of an
 * --optional arm drops the arm; any other ends ab with status 1, and a
 * signal with 128 + N, after writing the --json file of what was done.
 */
void ab_run_all(void);

#endif
