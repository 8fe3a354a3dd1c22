/*
 * The slow path of preload/spin.h: waiting, and what to do when waiting
 * would never end.  System calls here go through bufsel's gate when sys.o
 * is linked (under Syscall User Dispatch a bare `syscall` in bufsel's text
 * would trap), and are bare `syscall` instructions in the unit tests, which
 * link the ring copy paths without sys.o: errno stays untouched either way
 * (this runs in the SIGSYS handler).
 */
#include "preload/spin.h"

#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>

__thread int spin_tid __attribute__((tls_model("initial-exec")));
__thread unsigned spin_held __attribute__((tls_model("initial-exec")));
__thread uint64_t spin_deferred __attribute__((tls_model("initial-exec")));

long sys_call6(long nr, long a1, long a2, long a3, long a4, long a5, long a6) __attribute__((weak));

static long raw4(long nr, long a1, long a2, long a3, long a4)
{
	if (sys_call6)
		return sys_call6(nr, a1, a2, a3, a4, 0, 0);
	long ret;
	register long r10 __asm__("r10") = a4;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}

static long raw3(long nr, long a1, long a2, long a3)
{
	return raw4(nr, a1, a2, a3, 0);
}

/* The signals put off while this thread held a lock were queued again and
 * blocked (sigdefer.c): opening them delivers them here, with no lock held,
 * as natively a signal is delivered when a system call returns. */
void spin_deliver_deferred(void)
{
	uint64_t m = spin_deferred;
	spin_deferred = 0;
	raw4(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&m, 0, sizeof(m));
}

int spin_tid_fetch(void)
{
	return spin_tid = (int)raw3(SYS_gettid, 0, 0, 0);
}

void spin_after_fork(void)
{
	spin_tid = 0;
}

/* Is tid a thread of this process?  A child made with a raw clone has a
 * new pid, and none of its parent's other threads. */
static int in_process(int tid)
{
	long pid = raw3(SYS_getpid, 0, 0, 0);
	return raw3(SYS_tgkill, pid, tid, 0) != -ESRCH;
}

/* Is tid a thread of any process (kill reaches a task by any thread's id;
 * EPERM: one this process may not signal, which exists all the same)? */
static int alive_anywhere(int tid)
{
	return raw3(SYS_kill, tid, 0, 0) != -ESRCH;
}

int spin_tid_gone(int tid)
{
	return !alive_anywhere(tid);
}

#define SPINS_BEFORE_YIELD	64
#define YIELDS_PER_CHECK	64
/* Most waits end within a few yields (the owner makes a system call or two
 * under the lock): asking who the owner is costs three system calls, so not
 * before this many. */
#define YIELDS_BEFORE_CHECK	8

void spin_lock_slow(struct spin *s, int me)
{
	for (unsigned spins = 0;; spins++) {
		int owner = atomic_load_explicit(&s->v, memory_order_relaxed);
		if (!owner) {
			if (atomic_compare_exchange_weak_explicit(&s->v, &owner, me, memory_order_acquire,
								  memory_order_relaxed))
				return;
			continue;
		}
		if (spins < SPINS_BEFORE_YIELD)
			continue;
		if ((spins - SPINS_BEFORE_YIELD) % YIELDS_PER_CHECK == YIELDS_BEFORE_CHECK) {
			/* The cached id may be the parent's (a raw clone runs no
			 * atfork handler): ask once it matters. */
			int real = spin_tid_fetch();
			if (owner == real || owner == me) {
				/* A signal handler on the owner's own thread. */
				s->depth++;
				return;
			}
			me = real;
			if (!in_process(owner) && (!s->shared || !alive_anywhere(owner)) &&
			    atomic_compare_exchange_strong_explicit(&s->v, &owner, me, memory_order_acquire,
								    memory_order_relaxed)) {
				s->depth = 0;
				return;
			}
		}
		raw3(SYS_sched_yield, 0, 0, 0);
	}
}
