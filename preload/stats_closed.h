/*
 * Statistics of rings that are gone, kept for the report, and which rings
 * a process reports (stats_closed.c).
 */
#ifndef BUFSEL_PRELOAD_STATS_CLOSED_H
#define BUFSEL_PRELOAD_STATS_CLOSED_H

#include <stddef.h>

#include "preload/spin.h"

struct ring;

/* Rendered statistics of rings that are gone, oldest first. */
struct stats_closed_ring {
	struct stats_closed_ring *next;
	size_t len;
	char text[];
};

void stats_ring_closed(struct ring *r);	/* before its pool is destroyed */
void stats_after_fork(void);	/* in the child: its pools are its parent's copies */
unsigned stats_fork_gen(void);	/* stamped on a ring at setup */

/* Whether statistics are wanted at all, and on stderr ("-"). */
int stats_wanted(void);
int stats_to_stderr(void);
/* r is this process's to report: made since the last fork, with a pool. */
int stats_ours(const struct ring *r);
/* Locks l; inside the SIGUSR2 report only tries (0: held elsewhere). */
int stats_take(struct spin *l);
void stats_set_in_signal(int on);
/* The list, under its lock (stats_closed_lock: 0 when it could not be taken). */
int stats_closed_lock(void);
void stats_closed_unlock(void);
const struct stats_closed_ring *stats_closed_head(void);

#endif
