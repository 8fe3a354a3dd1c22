/*
 * `bufsel ab`: runs one program again and again, natively and under bufsel
 * in turn, and compares what each run cost and what the program reported
 * (docs/performance.md has the command, its output and its JSON).
 */
#ifndef BUFSEL_LAUNCHER_AB_H
#define BUFSEL_LAUNCHER_AB_H

/*
 * argv[0] is "ab", the options and PROGRAM [ARGS...] follow.  Returns the
 * exit status, or exits: 0 every run succeeded; 1 a run failed (or the
 * configuration the bufsel arms would load is bad); 2 a bad command line or
 * a PROGRAM not found; 126 a PROGRAM bufsel cannot be loaded into; 128 + N
 * when signal N (Ctrl-C) stopped it.
 */
int ab_main(int argc, char **argv);

#endif
