/*
 * The per-ring locks.  Held only for the copy of a batch of SQEs or CQEs,
 * never across a system call that can block, so spinning (yielding after a
 * while) beats a futex; and it is safe in the SIGSYS handler, where a mutex
 * owned by the interrupted code could never be released.
 *
 * A lock holds its owner's thread id, which covers the two ways a waiter
 * could otherwise spin for ever:
 *  - a process made with a raw clone (no atfork handler runs) inherits a
 *    lock some other thread of its parent held: that thread is not in the
 *    child, so a waiter that has spun a while asks the kernel whether the
 *    owner is a thread of this process (tgkill with signal 0) and takes the
 *    lock over if not;
 *  - a signal handler that re-enters bufsel on the thread that holds the
 *    lock: the owner is suspended under the waiter and can never let go,
 *    so the lock is taken again, recursively.
 *
 * A shared lock lives in memory a fork shares (a ring's struct ring_shared):
 * its owner may be a live thread of another process that uses the same
 * ring, which will let go, so it is waited for; only an owner that is no
 * thread of any process (it died holding the lock: its process was killed)
 * is taken over.  A fork child that finds such a lock held by the parent's
 * thread that was mid-copy at the fork simply waits for it.
 *
 * A thread counts the locks it holds (spin_held), so that a signal landing
 * meanwhile waits for the last to be let go (intercept/sigdefer.c): its
 * handler may use io_uring on a ring of its own, whose lock this thread may
 * hold on that ring's behalf (a completion moved for another ring), and it
 * would find that ring's state half changed.  The count is raised before the
 * lock is tried and lowered after it is let go, so no instruction of a held
 * lock is outside it.
 */
#ifndef BUFSEL_PRELOAD_SPIN_H
#define BUFSEL_PRELOAD_SPIN_H

#include <stdatomic.h>
#include <stdint.h>

struct spin {
	atomic_int v;		/* owner's tid; 0: free */
	int depth;		/* times the owner re-took it from a signal handler */
	int shared;		/* in memory other processes may map (above) */
};

/* The calling thread's id, cached; 0 until first asked for. */
extern __thread int spin_tid __attribute__((tls_model("initial-exec")));
/* Locks this thread holds or is taking, and the signals (bit sig - 1) that
 * landed meanwhile, blocked until the count is back to 0. */
extern __thread unsigned spin_held __attribute__((tls_model("initial-exec")));
extern __thread uint64_t spin_deferred __attribute__((tls_model("initial-exec")));

int spin_tid_fetch(void);
void spin_lock_slow(struct spin *s, int me);
void spin_deliver_deferred(void);

/* The count is read by signal handlers on this thread: the compiler must
 * not move it across the lock word's accesses. */
static inline void spin_hold(void)
{
	spin_held++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline void spin_drop(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (!--spin_held && spin_deferred)
		spin_deliver_deferred();
}

static inline int spin_self(void)
{
	int t = spin_tid;
	return t ? t : spin_tid_fetch();
}

static inline void spin_lock(struct spin *s)
{
	int me = spin_self(), free_v = 0;
	spin_hold();
	if (!atomic_compare_exchange_strong_explicit(&s->v, &free_v, me, memory_order_acquire,
						     memory_order_relaxed))
		spin_lock_slow(s, me);
}

/* 1 if taken; never recursive.  For signal handlers, which must not wait
 * on a lock the code they interrupted may hold. */
static inline int spin_trylock(struct spin *s)
{
	int free_v = 0, me = spin_self();
	spin_hold();
	if (atomic_compare_exchange_strong_explicit(&s->v, &free_v, me, memory_order_acquire, memory_order_relaxed))
		return 1;
	spin_drop();
	return 0;
}

static inline void spin_unlock(struct spin *s)
{
	if (s->depth)
		s->depth--;
	else
		atomic_store_explicit(&s->v, 0, memory_order_release);
	spin_drop();
}

/* Is tid no thread of any process any more (its process died)? */
int spin_tid_gone(int tid);

/* In a fork child: the cached id is the parent thread's. */
void spin_after_fork(void);

#endif
