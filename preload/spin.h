/*
 * The per-ring locks.  Held only for the copy of a batch of SQEs or CQEs,
 * never across a system call that can block, so spinning (yielding after a
 * while) beats a futex; and it is safe in the SIGSYS handler, where a mutex
 * owned by the interrupted code could never be released.
 */
#ifndef BUFSEL_PRELOAD_SPIN_H
#define BUFSEL_PRELOAD_SPIN_H

#include <sched.h>
#include <stdatomic.h>

struct spin { atomic_int v; };

static inline void spin_lock(struct spin *s)
{
	for (unsigned spins = 0; atomic_exchange_explicit(&s->v, 1, memory_order_acquire); spins++)
		if (spins > 64)
			sched_yield();
}

/* 1 if taken.  For signal handlers, which must not wait on a lock the
 * code they interrupted may hold. */
static inline int spin_trylock(struct spin *s)
{
	return !atomic_exchange_explicit(&s->v, 1, memory_order_acquire);
}

static inline void spin_unlock(struct spin *s)
{
	atomic_store_explicit(&s->v, 0, memory_order_release);
}

#endif
