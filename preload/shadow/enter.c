/*
 * io_uring_enter on a shadowed ring.  The submission and the wait are made as
 * separate real enters when both are needed, so the SQ lock (which a rollback
 * of a short submission needs) is never held while the kernel sleeps; the
 * wait asks the kernel for what the shadow CQ still lacks.  Results follow the
 * kernel's io_uring_enter: a short submission skips the wait, the return value
 * is the number submitted if any, else the wait's result, and a wait that ends
 * in an error while completions are ready reports 0.
 */
#include "preload/shadow/compat.h"
#include "preload/shadow/ring_io.h"
#include "preload/shadow/timeouts.h"

#include <errno.h>
#include <sys/syscall.h>
#include <time.h>

#include "preload/shadow/mover.h"
#include "preload/spin.h"
#include "preload/state.h"
#include "preload/sys.h"
#include "preload/uaccess.h"

#define ENTER_SUBMIT_FLAGS (IORING_ENTER_SQ_WAKEUP | IORING_ENTER_SQ_WAIT)

__thread unsigned ring_enter_depth __attribute__((tls_model("initial-exec")));
__thread unsigned ring_kernel_epoch __attribute__((tls_model("initial-exec")));

static long real_enter(struct ring *r, unsigned to_submit, unsigned min_complete, unsigned flags,
		       const void *argp, size_t argsz)
{
	ring_kernel_ran();
	return sys_call6(__NR_io_uring_enter, ring_fd(r), to_submit, min_complete, flags, (long)argp,
			 (long)argsz);
}

/* Returns the number of SQEs the kernel took, or -errno; *wait is cleared
 * when the kernel's rules say this enter must not wait, *ran_tw set when the
 * kernel ran a DEFER_TASKRUN ring's task work after them. */
static long enter_submit(struct ring *r, unsigned to_submit, unsigned flags, const void *argp, size_t argsz,
			 int *wait, int *ran_tw)
{
	int sqpoll = r->setup_flags & IORING_SETUP_SQPOLL;
	struct submit_batch b;
	long ret;

	if (sqpoll && r->has_mover) {
		/* The poller is the program's SQ thread: the enter wakes it and
		 * waits for SQ room as the kernel's does.  The real enter makes
		 * the kernel's checks and gives its answer (to_submit); the
		 * poller wakes the kernel's own thread when it has work for it.
		 * What an awake (or just woken) thread would take at once, the
		 * enter takes itself, so a wait that follows never depends on
		 * the poller being scheduled (under valgrind, whose lock a
		 * thread blocked in io_uring_enter keeps, it could not be); SQEs
		 * published to a sleeping thread no one wakes stay, as natively. */
		ret = real_enter(r, to_submit, 0, 0, NULL, 0);
		if (ret < 0)
			return ret;
		if (flags & IORING_ENTER_SQ_WAKEUP) {
			mover_sq_launch(r);
			mover_sq_wake(r);
		}
		if (!(atomic_load_explicit(r->sh.sq_flags, memory_order_seq_cst) & IORING_SQ_NEED_WAKEUP))
			mover_sq_drain(r);
		if (flags & IORING_ENTER_SQ_WAIT)
			mover_sq_wait(r);
		return ret;
	}
	spin_lock(&r->x->sq_lock);
	submit_prepare(r, to_submit, &b);
	if (sqpoll) {
		/* The SQ thread owns what was published; SQ_WAIT may block. */
		spin_unlock(&r->x->sq_lock);
		return real_enter(r, to_submit, 0, flags & ENTER_SUBMIT_FLAGS, NULL, 0);
	}
	long total = 0;
	/* One enter takes at most what the SQ held when it began
	 * (io_sqring_entries), however many parts bufsel splits it in. */
	unsigned n = b.n;
	/* DEFER_TASKRUN: an enter that waits runs the ring's task work right
	 * after its SQEs (io_run_local_work_locked) and again as its wait
	 * begins, a chain's next link in each pass.  The last part of the
	 * batch carries the program's GETEVENTS, with min_complete 0, so that
	 * both passes come between the same SQEs as natively.  Only if it ends
	 * what the program asked for: a kernel that took fewer SQEs than
	 * to_submit returns at once, its task work not run (a failed chain's
	 * members stay queued there). */
	int tw = (r->setup_flags & IORING_SETUP_DEFER_TASKRUN) && (flags & IORING_ENTER_GETEVENTS);
	for (;;) {
		int getevents = tw && !b.barrier && (unsigned long)total + b.prog == to_submit;
		ret = b.copied ? real_enter(r, b.copied, 0, getevents ? flags & ~ENTER_SUBMIT_FLAGS : 0,
					    getevents ? argp : NULL, getevents ? argsz : 0)
			       : 0;
		*ran_tw = getevents && ret == (long)b.copied && b.copied;
		total += submit_finish(r, &b, ret);
		/* An SQE that must reach the kernel alone ended this part of the
		 * batch: go on with the rest, as one enter does natively.  So
		 * does a SUBMIT_ALL the shadow gives, where the kernel beneath
		 * stopped after an SQE that failed at submission. */
		int go_on = b.barrier && ret == (long)b.copied;
		if ((r->shadowed_flags & IORING_SETUP_SUBMIT_ALL) && ret > 0 && ret < (long)b.copied &&
		    (unsigned long)total < n)
			go_on = 1;
		if (!go_on)
			break;
		/* A receive the kernel ran in that part gave its buffer back, as
		 * natively before the next SQE selects. */
		if (b.st.reap)
			complete_reap(r);
		submit_prepare(r, n - (unsigned)total, &b);
	}
	spin_unlock(&r->x->sq_lock);
	if (total)
		ret = total;
	if (ret < 0 || (unsigned long)ret < to_submit)
		*wait = 0;
	return ret;
}

#ifndef IORING_ENTER_ABS_TIMER
#define IORING_ENTER_ABS_TIMER (1U << 5)
#endif
#ifndef IORING_ENTER_EXT_ARG_REG
#define IORING_ENTER_EXT_ARG_REG (1U << 6)
#endif

/* The program's io_uring_getevents_arg into *ga, when it passed a plain one
 * (EXT_ARG, with a relative timeout and not a registered wait region): 0, or
 * -1 when there is none to read (the argument then goes to the kernel as it
 * is, which judges it). */
static int read_ext_arg(unsigned flags, const void *argp, size_t argsz, struct io_uring_getevents_arg *ga)
{
	if ((flags & (IORING_ENTER_EXT_ARG | IORING_ENTER_ABS_TIMER | IORING_ENTER_EXT_ARG_REG)) !=
		    IORING_ENTER_EXT_ARG ||
	    argsz != sizeof(*ga) || copy_from_prog(ga, argp, sizeof(*ga)))
		return -1;
	return 0;
}

/*
 * min_wait: once min_wait_usec has passed, the kernel's wait ends if the CQ
 * holds any CQE at all.  CQEs already in the shadow are not in the real CQ,
 * so the kernel would not count them: with some ready, the wait is the
 * program's, cut to min_wait (its -ETIME then reads as 0, CQEs being ready).
 * Returns the argument to pass to the kernel: *ga filled, or argp.
 */
static const void *min_wait_arg(unsigned flags, const void *argp, size_t argsz,
				struct io_uring_getevents_arg *ga, struct __kernel_timespec *ts)
{
	if (read_ext_arg(flags, argp, argsz, ga) || !ga->pad)
		return argp;
	uint64_t usec = ga->pad;
	if (ga->ts) {
		struct __kernel_timespec t;
		if (copy_from_prog(&t, (const void *)(uintptr_t)ga->ts, sizeof(t)))
			return argp;
		if (t.tv_sec < 0 || (uint64_t)t.tv_sec * 1000000 + (uint64_t)t.tv_nsec / 1000 < usec)
			return argp;
	}
	ts->tv_sec = (long long)(usec / 1000000);
	ts->tv_nsec = (long long)(usec % 1000000) * 1000;
	ga->ts = (uint64_t)(uintptr_t)ts;
	ga->pad = 0;
	return ga;
}

/*
 * The program's relative timeout, less what the wait took so far, for a
 * wait made in several real enters: *ga filled (ts pointing at *ts), or
 * argp as it was when there is nothing to carry; *up set once the time is up.
 */
static const void *left_arg(unsigned flags, const void *argp, size_t argsz, const struct timespec *start,
			    struct io_uring_getevents_arg *ga, struct __kernel_timespec *ts, int *up)
{
	*up = 0;
	struct __kernel_timespec t;
	if (read_ext_arg(flags, argp, argsz, ga) || !ga->ts ||
	    copy_from_prog(&t, (const void *)(uintptr_t)ga->ts, sizeof(t)) || t.tv_sec < 0)
		return argp;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	long long left = (long long)t.tv_sec * 1000000000LL + t.tv_nsec -
			 ((long long)(now.tv_sec - start->tv_sec) * 1000000000LL + (now.tv_nsec - start->tv_nsec));
	if (left <= 0) {
		*up = 1;
		return argp;
	}
	ts->tv_sec = left / 1000000000LL;
	ts->tv_nsec = left % 1000000000LL;
	ga->ts = (uint64_t)(uintptr_t)ts;
	return ga;
}

static long enter_wait(struct ring *r, unsigned min_complete, unsigned flags, const void *argp,
		       size_t argsz, int ran_tw)
{
	struct io_uring_getevents_arg lga;
	struct __kernel_timespec lts;
	struct timespec start;
	int rounds = 0;
	struct io_uring_getevents_arg ga;
	struct __kernel_timespec mts;
	/* What completed by now is in the CQ when the kernel's enter returns,
	 * even when the CQ already held enough. */
	complete_reap_follow(r);
	unsigned ready = complete_ready(r);
	/* The kernel's wait ends when a TIMEOUT completes after it began. */
	unsigned fired = timeouts_fired(r);
	long ret;
	/* min_complete 0 still enters: it is how DEFER_TASKRUN work gets run.
	 * A completion bufsel consumes itself does not count for the program,
	 * so the wait goes on until the shadow has what was asked. */
	int early = 0;
	/* The kernel's wait also ends early for min_wait, and for a TIMEOUT
	 * that fired; bufsel sees the program's fire (timeouts_fired), except
	 * past those it tracks, and a timer of bufsel's own (a counting
	 * TIMEOUT's, still in the kernel after its count) must not end the
	 * program's wait. */
	struct io_uring_getevents_arg pga;
	int plain = !read_ext_arg(flags, argp, argsz, &pga);
	int old_arg = compat_ext_arg_before_min_wait();
	if (old_arg && plain && pga.pad)
		return -EINVAL;
	int kernel_early = (plain && pga.pad) ||
			   atomic_load_explicit(&r->x->tmo_n, memory_order_relaxed) >= TMO_TRACKED;
	if (ready && min_complete && ready < min_complete)
		argp = min_wait_arg(flags, argp, argsz, &ga, &mts);
	do {
		if (min_complete && ready >= min_complete) {
			/* The kernel reads an EXT_ARG argument before it looks at
			 * the CQ: a bad one fails even with completions ready
			 * (a bad timeout only since 6.12). */
			if (!(flags & IORING_ENTER_EXT_ARG) || (old_arg && plain))
				return 0;
			ret = real_enter(r, 0, 0, flags & ~ENTER_SUBMIT_FLAGS, argp, argsz);
			complete_reap_follow(r);
			return ret < 0 ? ret : 0;
		}
		if (!min_complete) {
			/* The submission's enter made this one's pass already. */
			ret = ran_tw ? 0 : real_enter(r, 0, 0, flags & ~ENTER_SUBMIT_FLAGS, argp, argsz);
		} else {
			/* A CQE bufsel consumes (a poll standing in for a receive)
			 * counts in the kernel's wait, and what it releases reaches
			 * the kernel only once the wait is over: while requests of
			 * bufsel's are live, the kernel is asked for one CQE at a
			 * time, and later rounds get what is left of the timeout.
			 * So it is while a TIMEOUT of the program's is pending: the
			 * real wait begins after the program's, and a TIMEOUT that
			 * fires in between (natively after the wait began, so
			 * ending it) must still end it: its CQE must be enough. */
			int one = __atomic_load_n(&r->reqs.live, __ATOMIC_RELAXED) != 0 ||
				  atomic_load_explicit(&r->x->tmo_n, memory_order_relaxed) != 0;
			int up = 0;
			/* The wait's clock starts with its first round. */
			if (!rounds)
				clock_gettime(CLOCK_MONOTONIC, &start);
			const void *arg = rounds++ ? left_arg(flags, argp, argsz, &start, &lga, &lts, &up) : argp;
			if (up) {
				ret = -ETIME;
				break;
			}
			unsigned target = 0, want = complete_wait_begin(r, min_complete, one, fired, &target);
			ret = 0;
			if (want) {
				/* Only a wait for one new CQE: a wait for several may
				 * sleep through one, which must not wait for it to
				 * reach the shadow. */
				if (one)
					atomic_fetch_add_explicit(&r->enter_waits_any, 1, memory_order_seq_cst);
				ret = real_enter(r, 0, want, flags & ~ENTER_SUBMIT_FLAGS, arg, argsz);
				if (one)
					atomic_fetch_sub_explicit(&r->enter_waits_any, 1, memory_order_seq_cst);
				early = kernel_early && ret >= 0 &&
					(int)(atomic_load_explicit(r->rcq_tail, memory_order_acquire) - target) < 0;
				complete_wait_end(r);
			}
		}
		complete_reap_follow(r);
		ready = complete_ready(r);
		if (timeouts_fired(r) != fired)
			early = 1;
	} while (ret >= 0 && !early && min_complete && ready < min_complete);
	if (ret < 0 && ready)
		ret = 0;
	return ret;
}

/*
 * The kernel refuses an enter with a flag it does not know before it looks at
 * anything else, but bufsel answers many enters without one (nothing to
 * submit, completions already there): it asks the kernel once per new set of
 * flags, with no ring (-EINVAL: a flag is unknown; -EBADF: all are known).
 */
bool enter_flags_valid(unsigned flags)
{
	flags &= ~IORING_ENTER_REGISTERED_RING;	/* the caller resolved it; its check needs a real index */
	unsigned ok = atomic_load_explicit(&bufsel.enter_flags_ok, memory_order_relaxed);
	if (!(flags & ~ok))
		return true;
	if (sys_call6(__NR_io_uring_enter, -1, 0, 0, flags, 0, 0) == -EINVAL)
		return false;
	atomic_fetch_or_explicit(&bufsel.enter_flags_ok, flags, memory_order_relaxed);
	return true;
}

static long enter_ring(struct ring *r, unsigned to_submit, unsigned min_complete, unsigned flags,
		       const void *argp, size_t argsz)
{
	int sqpoll = r->setup_flags & IORING_SETUP_SQPOLL;
	int wait = !!(flags & IORING_ENTER_GETEVENTS);
	long ret = 0;

	/* A SINGLE_ISSUER the shadow gives: another task may neither submit
	 * (io_uring_add_tctx_node) nor wait on a DEFER_TASKRUN ring
	 * (io_allowed_run_tw), as the kernel's own says. */
	if (r->issuer_tid && !sqpoll && r->issuer_tid != spin_self() &&
	    (to_submit || (wait && (r->setup_flags & IORING_SETUP_DEFER_TASKRUN))))
		return -EEXIST;

	if (atomic_load_explicit(&r->inherited, memory_order_relaxed))
		mover_adopt(r);
	/* The mover's sign that the program is here (a plain store: an
	 * increment lost to another thread's enter still changes it). */
	atomic_store_explicit(&r->enters, atomic_load_explicit(&r->enters, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	complete_prune_waiters(r);

	/* The program's CQ flags (IORING_CQ_EVENTFD_DISABLED) are its to set
	 * and the kernel's to read: carry them over on every way in. */
	complete_sync_cq_flags(r);
	/* What the program consumed on other rings is given back first: a
	 * request submitted now may poll one of their fds. */
	mover_reap_others(r);
	complete_release(r);
	/* An enter runs the task work already queued before its SQEs: a
	 * receive whose data came before it gets that data, not a request
	 * submitted now.  (DEFER_TASKRUN: only a wait runs it.) */
	if (r->hooks && !sqpoll && !(r->setup_flags & IORING_SETUP_DEFER_TASKRUN) &&
	    __atomic_load_n(&r->reqs.live, __ATOMIC_RELAXED))
		complete_reap_follow(r);
	int ran_tw = 0;
	r->enter_tw = (r->setup_flags & IORING_SETUP_DEFER_TASKRUN) && wait && to_submit;
	if (to_submit || sqpoll) {
		ret = enter_submit(r, to_submit, flags, argp, argsz, &wait, &ran_tw);
		if (ret < 0)
			wait = 0;
		r->enter_tw &= wait;	/* a short submission returns before its task work */
	}
	if (wait) {
		long w = enter_wait(r, min_complete, flags, argp, argsz, ran_tw);
		if (!ret)
			ret = w;
	} else if (!(r->shadowed_flags & IORING_SETUP_DEFER_TASKRUN)) {
		/* (A DEFER_TASKRUN the shadow gives posts only in waits, as
		 * the kernel's runs its task work only there.) */
		complete_reap_follow(r);
	}
	r->enter_tw = 0;
	mover_reap_others(r);
	atomic_store_explicit(&r->enter_cq_tail, atomic_load_explicit(r->sh.cq_tail, memory_order_relaxed),
			      memory_order_relaxed);
	return ret;
}

long ring_enter(struct ring *r, unsigned to_submit, unsigned min_complete, unsigned flags,
		const void *argp, size_t argsz)
{
	ring_enter_depth++;
	ring_kernel_ran();
	long ret = enter_ring(r, to_submit, min_complete, flags, argp, argsz);
	ring_kernel_ran();
	ring_enter_depth--;
	return ret;
}

/*
 * A program may close its ring fd and go on reaping through its mapping,
 * which keeps the ring: natively the kernel still posts into the program's
 * CQ, and a completion it posted is there when the program looks.  In the
 * shadow it waits for the mover, which runs only after the thread the
 * completion's task work ran in is back in user space; that thread, finding
 * its CQ short, enters on the fd it no longer has (socket's recv thread, whose
 * sender closes the ring's number while the receive completes).  The wait
 * it makes is answered as the look it would have made natively: bufsel moves
 * what the kernel posted and, if the shadow then holds the wait's CQEs, some
 * of them come since the program's last enter on the ring (so without its
 * help) and fresh (moved by this call, or within CLOSED_FD_FRESH_NS before
 * it: after the program looked), returns 0 where the kernel said -EBADF.
 * A submission, a wait still short, or one on CQEs the program has had for
 * longer keeps -EBADF.
 */
/* Between a look at the CQ and the enter that follows it: a preempted
 * thread is off the CPU for a scheduler tick or two (4 ms at HZ=250). */
#define CLOSED_FD_FRESH_NS 10000000ull	/* 10 ms */

long enter_closed_fd(int fd, unsigned to_submit, unsigned min_complete, unsigned flags, long kret)
{
	if (to_submit || !min_complete || !(flags & IORING_ENTER_GETEVENTS) ||
	    (flags & IORING_ENTER_REGISTERED_RING))
		return kret;
	struct ring *r = ring_get_closed(fd);
	if (!r)
		return kret;
	unsigned moved = complete_reap_follow(r);
	unsigned ready = complete_ready(r);
	unsigned unhelped = atomic_load_explicit(r->sh.cq_tail, memory_order_relaxed) -
			    atomic_load_explicit(&r->enter_cq_tail, memory_order_relaxed);
	uint64_t age = now_ns() - atomic_load_explicit(&r->posted_ns, memory_order_relaxed);
	ring_put(r);
	/* Only CQEs the program could not yet have seen: moved by this call,
	 * or just before it (between its look at the CQ and its enter). */
	int fresh = moved || age < CLOSED_FD_FRESH_NS;
	return unhelped && fresh && ready >= min_complete ? 0 : kret;
}
