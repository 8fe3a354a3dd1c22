/*
 * The program's TIMEOUT requests in flight, for waits that must end when one
 * completes as the kernel's do (preload/shadow/timeouts.c).  Only rings bufsel
 * rewrites track them: only those wait in rounds.
 */
#ifndef BUFSEL_PRELOAD_TIMEOUTS_H
#define BUFSEL_PRELOAD_TIMEOUTS_H

#include <stdint.h>

#include "preload/shadow/ring.h"

/* A TIMEOUT SQE with this user_data went into the real SQ. */
void timeouts_submitted(struct ring *r, uint64_t user_data);
/* ... and the kernel did not take it after all. */
void timeouts_not_taken(struct ring *r, uint64_t user_data);
/* A real CQE is being moved: counts it in r->x->cq_timeouts if it is one of
 * theirs.  Cheap to skip while r->x->tmo_n is 0. */
void timeouts_completed(struct ring *r, const struct io_uring_cqe *cqe);

static inline unsigned timeouts_fired(struct ring *r)
{
	return atomic_load_explicit(&r->x->cq_timeouts, memory_order_acquire);
}

#endif
