#define _GNU_SOURCE
#include "preload/mover.h"

#include <errno.h>
#include <linux/futex.h>
#include <linux/io_uring.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>

#include "preload/dispatch.h"
#include "preload/log.h"
#include "preload/ring.h"
#include "preload/ring_io.h"
#include "preload/state.h"
#include "preload/stats.h"
#include "preload/sys.h"
#include "preload/uaccess.h"

#define KSIGSET_SIZE 8

static void futex_wake_all(_Atomic uint32_t *word)
{
	sys_call6(SYS_futex, (long)word, FUTEX_WAKE_PRIVATE, 0x7fffffff, 0, 0, 0);
}

/* A mover takes no signal meant for the program's threads, SIGSYS last;
 * and from here on a fork may copy it. */
static void block_sigsys(void)
{
	atomic_fetch_sub_explicit(&bufsel.threads_starting, 1, memory_order_release);
	uint64_t sys = 1ULL << (SIGSYS - 1);
	sys_call6(SYS_rt_sigprocmask, SIG_BLOCK, (long)&sys, 0, KSIGSET_SIZE, 0, 0);
}

static void *mover_main(void *arg)
{
	struct ring *r = arg;
	block_sigsys();
	struct pollfd pfd[2] = { { .fd = r->priv_fd, .events = POLLIN },
				 { .fd = r->mover_wake_fd, .events = POLLIN } };
	while (atomic_load_explicit(&r->live, memory_order_acquire)) {
		unsigned before = atomic_load(r->sh.cq_tail);
		complete_reap(r);
		for (int rounds = 0; r->hooks && r->ready && rounds < 64; rounds++) {
			r->hooks->followup(r);
			complete_reap(r);
		}
		if (atomic_load(r->sh.cq_tail) != before)
			futex_wake_all(r->sh.cq_tail);
		/* A full shadow leaves the real ring readable: wait for the program
		 * to make room rather than spin on it. */
		int full = complete_ready(r) == r->sh.cq_entries || r->cq_waiters;
		struct timespec ts = { 0, 1000000 };
		sys_call6(SYS_ppoll, (long)pfd, 2, full ? (long)&ts : 0, 0, KSIGSET_SIZE, 0);
	}
	ring_put(r);
	return NULL;
}

/* Starts a detached bufsel thread that takes no signal meant for the
 * program's threads; it holds whatever reference arg stands for. */
static int start_thread(void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	pthread_t t;
	sigset_t all, saved;
	sigfillset(&all);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, (size_t)64 * 1024);
	/* SIGSYS stays open here, in the creating thread, for as long as
	 * pthread_create runs (a sanitizer's interceptor makes system calls of
	 * its own, which Syscall User Dispatch traps); the thread closes it
	 * itself (block_sigsys). */
	sigdelset(&all, SIGSYS);
	sys_call6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&saved, KSIGSET_SIZE, 0, 0);
	atomic_fetch_add_explicit(&bufsel.threads_starting, 1, memory_order_relaxed);
	int err = dispatch_create_own(&t, &attr, fn, arg);
	if (err)
		atomic_fetch_sub_explicit(&bufsel.threads_starting, 1, memory_order_relaxed);
	sys_call6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&saved, 0, KSIGSET_SIZE, 0, 0);
	pthread_attr_destroy(&attr);
	return -err;
}

int mover_start(struct ring *r)
{
	r->mover_wake_fd = -1;
	int low = (int)sys_call3(SYS_eventfd2, 0, EFD_CLOEXEC | EFD_NONBLOCK, 0);
	if (low < 0)
		return low;
	r->mover_wake_fd = sys_dupfd_high(low);
	sys_close(low);
	if (r->mover_wake_fd < 0)
		return r->mover_wake_fd;

	atomic_fetch_add(&r->refs, 1);
	int err = start_thread(mover_main, r);
	if (err) {
		atomic_fetch_sub(&r->refs, 1);
		return err;
	}
	r->has_mover = 1;
	return 0;
}

/*
 * The process's mover.  Natively a completion lands in the CQ while the
 * program runs (task work interrupts it, io-wq posts directly): a program
 * may spin on the CQ without ever entering.  One thread sleeps on every
 * such ring at once (epoll, edge-triggered: a shadow that is full, or a
 * waiter that holds the real head back, leaves the real CQ readable, and
 * the mover must not spin on it) and moves what arrives.  It never submits:
 * a SINGLE_ISSUER ring takes SQEs from one task only, and a receive it
 * issued would take its data from the socket before its CQE is in the
 * shadow, a moment a program that polls the socket can see (natively both
 * happen before the system call that brought the data returns).  What a
 * completion releases is issued by the program's next enter, which
 * IORING_SQ_TASKRUN asks for.  Epoll holds no reference to a ring's file, so the program's
 * last close still ends the ring; a ring is named by slot and serial, so a
 * stale event finds nothing.
 */
#define MOVER_BATCH 16

static void *process_mover_main(void *arg)
{
	int ep = (int)(long)arg;
	struct epoll_event ev[MOVER_BATCH];
	block_sigsys();
	for (;;) {
		long n = sys_call6(SYS_epoll_pwait, ep, (long)ev, MOVER_BATCH, -1, 0, 0);
		if (n == -EBADF || n == -EINVAL)
			return NULL;	/* the program closed it after all: stop */
		for (long i = 0; i < n; i++) {
			struct ring *r = ring_get_slot((unsigned)ev[i].data.u64, (unsigned)(ev[i].data.u64 >> 32));
			if (!r)
				continue;
			complete_reap(r);
			ring_put(r);
		}
	}
}

/* The epoll fd of a running mover, or -errno; starts it once. */
static int process_mover(void)
{
	int st = atomic_load_explicit(&bufsel.mover_state, memory_order_acquire);
	while (st == 0 || st == 1) {
		if (st == 0 && atomic_compare_exchange_strong(&bufsel.mover_state, &st, 1)) {
			int low = (int)sys_call3(SYS_epoll_create1, EPOLL_CLOEXEC, 0, 0);
			int ep = low < 0 ? low : sys_dupfd_high(low);
			if (low >= 0)
				sys_close(low);
			int err = ep < 0 ? ep : start_thread(process_mover_main, (void *)(long)ep);
			if (err && ep >= 0)
				sys_close(ep);
			bufsel.mover_epfd = err ? -1 : ep;
			st = err ? err : 2;
			atomic_store_explicit(&bufsel.mover_state, st, memory_order_release);
			break;
		}
		sys_call6(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
		st = atomic_load_explicit(&bufsel.mover_state, memory_order_acquire);
	}
	return st == 2 ? bufsel.mover_epfd : st;
}

int mover_watch(struct ring *r)
{
	int ep = process_mover();
	if (ep < 0)
		return ep;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET,
				  .data.u64 = (uint64_t)r->serial << 32 | ring_slot(r) };
	long err = sys_call6(SYS_epoll_ctl, ep, EPOLL_CTL_ADD, ring_fd(r), (long)&ev, 0, 0);
	if (err)
		return (int)err;
	r->cq_moved = 1;
	return 0;
}

/* The parent's mover is not in the child, and its epoll instance is the
 * parent's: the child starts its own for the rings it makes, and the rings
 * it inherited go back to moving on enter. */
static void unwatch(int fd, struct ring *r, int *first)
{
	(void)fd;
	(void)first;
	if (!(r->setup_flags & IORING_SETUP_DEFER_TASKRUN))
		r->cq_moved = 0;
}

/*
 * A thread that is starting may hold locks of the thread library or of a
 * sanitizer's runtime (ASan's allocator and thread registry, which GCC 12's
 * runtime does not take around fork): a fork child, which has no such thread,
 * would then wait for ever on its first malloc.  Natively io_uring_setup
 * starts no thread of the program's, and a program may fork right after it,
 * so a fork waits until bufsel's threads run their own code.
 */
void mover_before_fork(void)
{
	while (atomic_load_explicit(&bufsel.threads_starting, memory_order_acquire) > 0)
		sys_call6(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
}

void mover_after_fork(void)
{
	if (atomic_load(&bufsel.mover_state) == 2)
		sys_close(bufsel.mover_epfd);
	bufsel.mover_epfd = -1;
	atomic_store(&bufsel.mover_state, 0);
	ring_for_each_live(unwatch, -1, NULL);
}

/*
 * Entering the kernel runs the task's pending work for every ring, so a
 * completion of another ring is in that ring's CQ when the enter returns
 * (a ring polled by another, a linked pair across rings): move it now, as
 * the mover would a little later.  Likewise give back the real slots of
 * what the program consumed there, on which the kernel ring's readiness
 * (a poll of its fd) depends.
 */
static void reap_other(int fd, struct ring *r, int *first)
{
	(void)first;
	/* A ring inherited over fork is the parent's to move (it shares the
	 * shadow and the real ring), unless the child enters it itself. */
	if (fd != (int)ring_slot(r) && r->fork_gen == stats_fork_gen() &&
	    (atomic_load_explicit(r->rcq_tail, memory_order_acquire) != r->rcq_taken ||
	     atomic_load_explicit(r->sh.cq_head, memory_order_relaxed) != r->sh_released))
		complete_try_reap(r);
}

void mover_reap_others(struct ring *r)
{
	ring_for_each_live(reap_other, (int)ring_slot(r), NULL);
}

void mover_stop(struct ring *r)
{
	uint64_t one = 1;
	if (r->has_mover && r->mover_wake_fd >= 0)
		sys_write(r->mover_wake_fd, &one, sizeof(one));
}
