#define _GNU_SOURCE
#include "preload/mover.h"

#include <errno.h>
#include <linux/futex.h>
#include <linux/io_uring.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>

#include "preload/dispatch.h"
#include "preload/log.h"
#include "preload/ring.h"
#include "preload/ring_io.h"
#include "preload/sys.h"
#include "preload/uaccess.h"

#define KSIGSET_SIZE 8

static void futex_wake_all(_Atomic uint32_t *word)
{
	sys_call6(SYS_futex, (long)word, FUTEX_WAKE_PRIVATE, 0x7fffffff, 0, 0, 0);
}

static void *mover_main(void *arg)
{
	struct ring *r = arg;
	uint64_t sys = 1ULL << (SIGSYS - 1);
	sys_call6(SYS_rt_sigprocmask, SIG_BLOCK, (long)&sys, 0, KSIGSET_SIZE, 0, 0);
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
		int full = complete_ready(r) == r->sh.cq_entries;
		struct timespec ts = { 0, 1000000 };
		sys_call6(SYS_ppoll, (long)pfd, 2, full ? (long)&ts : 0, 0, KSIGSET_SIZE, 0);
	}
	ring_put(r);
	return NULL;
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

	pthread_attr_t attr;
	pthread_t t;
	sigset_t all, saved;
	sigfillset(&all);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, (size_t)64 * 1024);
	/* The mover must never take a signal meant for the program's threads.
	 * SIGSYS stays open here, in the creating thread, for as long as
	 * pthread_create runs (a sanitizer's interceptor makes system calls of
	 * its own, which Syscall User Dispatch traps); the mover closes it
	 * itself. */
	sigdelset(&all, SIGSYS);
	sys_call6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&saved, KSIGSET_SIZE, 0, 0);
	atomic_fetch_add(&r->refs, 1);
	int err = dispatch_create_own(&t, &attr, mover_main, r);
	sys_call6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&saved, 0, KSIGSET_SIZE, 0, 0);
	pthread_attr_destroy(&attr);
	if (err) {
		atomic_fetch_sub(&r->refs, 1);
		return -err;
	}
	r->has_mover = 1;
	return 0;
}

void mover_stop(struct ring *r)
{
	uint64_t one = 1;
	if (r->has_mover && r->mover_wake_fd >= 0)
		sys_write(r->mover_wake_fd, &one, sizeof(one));
}

/* What the program asked for: a sigmask to wait under, and a relative timeout. */
static int wait_args(unsigned flags, const void *argp, size_t argsz, uint64_t *mask,
		     int *has_mask, struct timespec *ts, int *has_ts)
{
	*has_mask = *has_ts = 0;
	if (!argp)
		return 0;
	if (!(flags & IORING_ENTER_EXT_ARG)) {
		if (argsz != KSIGSET_SIZE)
			return -EINVAL;
		*has_mask = 1;
		return copy_from_prog(mask, argp, KSIGSET_SIZE);
	}
	struct io_uring_getevents_arg ga;
	if (argsz != sizeof(ga))
		return -EINVAL;
	if (copy_from_prog(&ga, argp, sizeof(ga)))
		return -EFAULT;
	if (ga.sigmask) {
		if (ga.sigmask_sz != KSIGSET_SIZE)
			return -EINVAL;
		if (copy_from_prog(mask, (void *)(uintptr_t)ga.sigmask, KSIGSET_SIZE))
			return -EFAULT;
		*has_mask = 1;
	}
	if (ga.ts) {
		struct __kernel_timespec kts;
		if (copy_from_prog(&kts, (void *)(uintptr_t)ga.ts, sizeof(kts)))
			return -EFAULT;
		ts->tv_sec = kts.tv_sec;
		ts->tv_nsec = kts.tv_nsec;
		*has_ts = 1;
	}
	return 0;
}

long mover_wait(struct ring *r, unsigned min_complete, unsigned flags, const void *argp,
		size_t argsz)
{
	uint64_t mask, saved;
	int has_mask, has_ts;
	struct timespec ts, end, now;
	long ret = wait_args(flags, argp, argsz, &mask, &has_mask, &ts, &has_ts);
	if (ret)
		return ret;
	if (has_ts) {
		clock_gettime(CLOCK_MONOTONIC, &end);
		end.tv_sec += ts.tv_sec;
		end.tv_nsec += ts.tv_nsec;
		if (end.tv_nsec >= 1000000000) {
			end.tv_sec++;
			end.tv_nsec -= 1000000000;
		}
	}
	if (has_mask) {
		mask &= ~(1ULL << (SIGSYS - 1));
		sys_call6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&mask, (long)&saved, KSIGSET_SIZE, 0, 0);
	}
	for (;;) {
		uint32_t tail = atomic_load(r->sh.cq_tail);
		complete_reap(r);
		if (complete_ready(r) >= min_complete) {
			ret = 0;
			break;
		}
		struct timespec left, *tp = NULL;
		if (has_ts) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			left.tv_sec = end.tv_sec - now.tv_sec;
			left.tv_nsec = end.tv_nsec - now.tv_nsec;
			if (left.tv_nsec < 0) {
				left.tv_sec--;
				left.tv_nsec += 1000000000;
			}
			if (left.tv_sec < 0) {
				ret = -ETIME;
				break;
			}
			tp = &left;
		}
		if (atomic_load(r->sh.cq_tail) != tail)
			continue;
		long w = sys_call6(SYS_futex, (long)r->sh.cq_tail, FUTEX_WAIT_PRIVATE, tail, (long)tp, 0, 0);
		if (w == -EINTR) {
			ret = -EINTR;
			break;
		}
	}
	if (has_mask)
		sys_call6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&saved, 0, KSIGSET_SIZE, 0, 0);
	return ret;
}
