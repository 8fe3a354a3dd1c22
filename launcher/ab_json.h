/*
 * `bufsel ab --json FILE`: every run, the summaries, the ratios and the
 * pool statistics (docs/performance.md), also written when a run failed or
 * a signal stopped ab, with what was done until then.
 */
#ifndef BUFSEL_LAUNCHER_AB_JSON_H
#define BUFSEL_LAUNCHER_AB_JSON_H

/* Writes and closes ab.json; exits with status 1 when that fails. */
void ab_write_json(void);

#endif
