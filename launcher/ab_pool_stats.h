/*
 * The pool statistics the bufsel arms of `bufsel ab` wrote in the last
 * round (BUFSEL_STATS), one file per process, read into the arm's groups.
 */
#ifndef BUFSEL_LAUNCHER_AB_POOL_STATS_H
#define BUFSEL_LAUNCHER_AB_POOL_STATS_H

#include "launcher/ab_state.h"

#include <stdint.h>

/* Reads every file of a's statistics directory into a->files and a->groups. */
void ab_read_stats(struct arm *a);
/* peak_out x buf_len, saturated. */
uint64_t ab_held_bytes(const struct group_summary *g);

#endif
