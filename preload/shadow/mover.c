#define _GNU_SOURCE
#include "preload/shadow/mover.h"

#include <errno.h>
#include <linux/futex.h>
#include <linux/io_uring.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>

#include "preload/intercept/dispatch.h"
#include "preload/log.h"
#include "preload/select/req.h"
#include "preload/shadow/mover_pass.h"
#include "preload/shadow/ring.h"
#include "preload/shadow/ring_io.h"
#include "preload/state.h"
#include "preload/stats.h"
#include "preload/sys.h"
#include "preload/uaccess.h"
#include "preload/valgrind.h"

#define KSIGSET_SIZE 8

/* The shadow is shared memory, which a forked child maps too: a waiter
 * there may use either kind of futex, and each kind wakes only its own. */
static void futex_wake_all(_Atomic uint32_t *word)
{
	sys_call6(SYS_futex, (long)word, FUTEX_WAKE_PRIVATE, 0x7fffffff, 0, 0, 0);
	sys_call6(SYS_futex, (long)word, FUTEX_WAKE, 0x7fffffff, 0, 0, 0);
}

/* A mover takes no signal meant for the program's threads, SIGSYS last;
 * and from here on a fork may copy it. */
static void block_sigsys(void)
{
	atomic_fetch_sub_explicit(&bufsel.threads_starting, 1, memory_order_release);
	uint64_t sys = 1ULL << (SIGSYS - 1);
	sys_call6(SYS_rt_sigprocmask, SIG_BLOCK, (long)&sys, 0, KSIGSET_SIZE, 0, 0);
}

/*
 * The SQPOLL poller, bufsel's stand-in for the kernel's SQ thread
 * (io_sq_thread): the program publishes SQEs in the shadow and reads
 * completions from it without entering, for as long as IORING_SQ_NEED_WAKEUP
 * is clear.  Awake, it polls the shadow SQ tail and the real CQ, moving what
 * it finds; after sq_thread_idle of neither it sets NEED_WAKEUP, looks at the
 * SQ once more (the program may have published just before seeing the flag:
 * then it stays awake), and sleeps, using no CPU, until an enter with
 * IORING_ENTER_SQ_WAKEUP writes its eventfd.  Like the kernel's thread it
 * starts asleep.  A completion that arrives while it sleeps is moved at once
 * and, as task work that runs in the kernel's SQ thread would, wakes it.
 * The kernel's own SQ thread is woken the same way when bufsel publishes to
 * a real SQ it sleeps on.
 */
/* Has the program published SQEs the thread has not taken?  (With the
 * real SQ full as well it stays awake: the kernel's thread never sleeps on
 * SQEs, so room comes soon, and nothing would wake this one for it.) */
static int sq_pending(struct ring *r)
{
	return atomic_load_explicit(r->sh.sq_tail, memory_order_acquire) !=
	       __atomic_load_n(&r->x->sq_head, __ATOMIC_RELAXED);
}

/* Moves what the program published to the real SQ; returns the number of
 * shadow SQEs consumed. */
static unsigned sq_poll(struct ring *r)
{
	struct shadow *s = &r->sh;
	if (!sq_pending(r))
		return 0;
	struct submit_batch b;
	spin_lock(&r->x->sq_lock);
	unsigned head = r->x->sq_head;
	submit_prepare(r, 0, &b);
	unsigned consumed = r->x->sq_head - head;
	spin_unlock(&r->x->sq_lock);
	if (b.copied) {
		/* The kernel's thread sets its flag, then looks at the tail once
		 * more: publish, then look at the flag (liburing's order). */
		atomic_thread_fence(memory_order_seq_cst);
		if (atomic_load_explicit(r->rsq_flags, memory_order_relaxed) & IORING_SQ_NEED_WAKEUP)
			sys_call6(__NR_io_uring_enter, ring_fd(r), 0, 0, IORING_ENTER_SQ_WAKEUP, 0, 0);
	}
	if (consumed) {
		atomic_thread_fence(memory_order_seq_cst);
		if (atomic_load_explicit(s->sq_waiters, memory_order_relaxed))
			sys_call6(SYS_futex, (long)s->sq_head, FUTEX_WAKE, 0x7fffffff, 0, 0, 0);
	}
	return consumed;
}

/* Moves completions and issues what they released: 1 if there was any. */
static int cq_poll(struct ring *r, int force)
{
	if (!force && !complete_pending(r) && !r->ready)
		return 0;
	unsigned before = atomic_load(r->sh.cq_tail);
	complete_reap_follow(r);
	if (atomic_load(r->sh.cq_tail) == before)
		return 0;
	futex_wake_all(r->sh.cq_tail);
	return 1;
}

/* Sleeps until woken (1) or the ring is gone (0); moves completions that
 * come meanwhile (and a completion wakes it). */
static int sq_sleep(struct ring *r)
{
	struct epoll_event ev[2];
	for (;;) {
		/* A full shadow leaves the real ring's CQEs where they are, and
		 * the program makes room without a system call: look every
		 * millisecond while it is full.  Otherwise only an edge of the
		 * ring (a new CQE) or the eventfd wakes it: a program blocked in
		 * a wait costs nothing here (the wait reaps for itself). */
		int full = complete_ready(r) == r->sh.cq_entries;
		long n = sys_call6(SYS_epoll_pwait, r->mover_ep, (long)ev, 2, full ? 1 : -1, 0, 0);
		if (!atomic_load_explicit(&r->live, memory_order_acquire))
			return 0;
		int woken = 0;
		for (long i = 0; i < n; i++)
			woken |= ev[i].data.u32 == 1;
		if (cq_poll(r, n > 0 || full) || woken)
			return 1;
	}
}

/*
 * Behind the poller the kernel's SQ thread spins too (the program's idle,
 * setup.c), and on a machine with two CPUs two spinners leave none for the
 * program's threads: a wake-up waited a scheduler tick (4 ms) for a CPU.
 * So the poller spins, yielding, only for POLLER_SPIN_NS after its last
 * work, and naps POLLER_NAP_NS at a time for the rest of the idle: an SQE
 * published after a quiet spell waits up to a nap to be seen.
 */
#define POLLER_SPIN_NS	(1000 * 1000ULL)
#define POLLER_NAP_NS	20000

static void *mover_main(void *arg)
{
	struct ring *r = arg;
	block_sigsys();
	uint64_t idle = (uint64_t)(r->sq_idle_ms ? r->sq_idle_ms : 1000) * 1000000ULL;
	uint64_t last, drain;
	/* valgrind runs one thread at a time, and one that yields in a loop
	 * can keep the others from ever running: there it naps instead. */
	int nap = valgrind_running() != 0;
	struct timespec nap_ts = { 0, nap ? 100000 : POLLER_NAP_NS };
	/* Naps end when asked, not up to 50 us later. */
	sys_call6(SYS_prctl, PR_SET_TIMERSLACK, 1, 0, 0, 0, 0);
	/* It starts asleep, as the kernel's thread does: setup showed
	 * NEED_WAKEUP, and an enter may already have taken it back (and
	 * written the eventfd) before this thread ran. */
	if ((atomic_load_explicit(r->sh.sq_flags, memory_order_seq_cst) & IORING_SQ_NEED_WAKEUP) &&
	    !sq_sleep(r))
		goto out;
	atomic_fetch_and_explicit(r->sh.sq_flags, ~(unsigned)IORING_SQ_NEED_WAKEUP, memory_order_seq_cst);
	last = now_ns();
	while (atomic_load_explicit(&r->live, memory_order_acquire)) {
		uint64_t t = now_ns();
		if (!mover_pass_begin(r))
			break;
		int moved = sq_poll(r) | cq_poll(r, 0);
		mover_pass_end(r);
		if (moved)
			last = t;
		if (t - last < idle) {
			if (nap || t - last > POLLER_SPIN_NS)
				sys_call6(SYS_nanosleep, (long)&nap_ts, 0, 0, 0, 0, 0);
			else
				sys_call6(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
			continue;
		}
		/* A wake-up meant for an earlier sleep is spent; one written from
		 * here on, after the flag, stays in the eventfd. */
		while (sys_call3(SYS_read, r->mover_wake_fd, (long)&drain, sizeof(drain)) > 0)
			;
		if (!atomic_load_explicit(&r->live, memory_order_acquire))
			break;
		atomic_fetch_or_explicit(r->sh.sq_flags, IORING_SQ_NEED_WAKEUP, memory_order_seq_cst);
		atomic_thread_fence(memory_order_seq_cst);
		int sleep = !sq_pending(r);
		if (sleep && !sq_sleep(r))
			break;
		atomic_fetch_and_explicit(r->sh.sq_flags, ~(unsigned)IORING_SQ_NEED_WAKEUP,
					  memory_order_seq_cst);
		last = now_ns();
	}
out:
	ring_put(r);
	return NULL;
}

void mover_sq_drain(struct ring *r)
{
	sq_poll(r);
}

void mover_sq_wake(struct ring *r)
{
	uint64_t one = 1;
	/* The thread shows itself awake from the moment it is woken, before
	 * anything it then does can be seen (the enter drains the SQ next). */
	if (r->has_mover && (atomic_fetch_and_explicit(r->sh.sq_flags, ~(unsigned)IORING_SQ_NEED_WAKEUP,
						       memory_order_seq_cst) &
			     IORING_SQ_NEED_WAKEUP))
		sys_write(r->mover_wake_fd, &one, sizeof(one));
}

/*
 * IORING_ENTER_SQ_WAIT (io_sqpoll_wait_sq): until the program's SQ is not
 * full, as the kernel reads it (the visible tail and head), or a signal.
 * The futex is a shared one: a forked child's enter waits on a shadow its
 * parent's poller drains.
 */
void mover_sq_wait(struct ring *r)
{
	struct shadow *s = &r->sh;
	for (;;) {
		unsigned head = atomic_load_explicit(s->sq_head, memory_order_acquire);
		if (atomic_load_explicit(s->sq_tail, memory_order_acquire) - head != s->sq_entries)
			return;
		atomic_fetch_add_explicit(s->sq_waiters, 1, memory_order_seq_cst);
		long err = sys_call6(SYS_futex, (long)s->sq_head, FUTEX_WAIT, head, 0, 0, 0);
		atomic_fetch_sub_explicit(s->sq_waiters, 1, memory_order_relaxed);
		if (err == -EINTR)
			return;
	}
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

/* A new fd at a high number (the program's numbering is left as native). */
static int high_fd(long low)
{
	if (low < 0)
		return (int)low;
	int fd = sys_dupfd_high((int)low);
	sys_close((int)low);
	return fd;
}

int mover_start(struct ring *r)
{
	r->mover_wake_fd = high_fd(sys_call3(SYS_eventfd2, 0, EFD_CLOEXEC | EFD_NONBLOCK, 0));
	if (r->mover_wake_fd < 0)
		return r->mover_wake_fd;
	r->mover_ep = high_fd(sys_call3(SYS_epoll_create1, EPOLL_CLOEXEC, 0, 0));
	if (r->mover_ep < 0)
		return r->mover_ep;
	struct epoll_event wake = { .events = EPOLLIN, .data.u32 = 1 };
	struct epoll_event cq = { .events = EPOLLIN | EPOLLET, .data.u32 = 0 };
	long err = sys_call6(SYS_epoll_ctl, r->mover_ep, EPOLL_CTL_ADD, r->mover_wake_fd, (long)&wake, 0, 0);
	if (!err)
		err = sys_call6(SYS_epoll_ctl, r->mover_ep, EPOLL_CTL_ADD, ring_fd(r), (long)&cq, 0, 0);
	if (err)
		return (int)err;
	r->has_mover = 1;
	return 0;
}

/*
 * The poller's thread starts at the program's first IORING_ENTER_SQ_WAKEUP
 * (it starts asleep, so until then it has nothing to do), and only once the
 * kernel's SQ thread has taken what that enter brought: natively the SQ
 * thread (made at setup) and the io-wq workers its first SQEs make are the
 * process's next tasks, and programs find them by pid (liburing's wq-aff).
 * If the thread cannot start, the ring goes back to submitting in each
 * enter, with NEED_WAKEUP always shown.
 */
void mover_sq_launch(struct ring *r)
{
	int zero = 0;
	if (!r->has_mover || !atomic_compare_exchange_strong(&r->poller_started, &zero, 1))
		return;
	sq_poll(r);
	for (int i = 0; i < 20000 && atomic_load_explicit(r->rsq_head, memory_order_acquire) !=
					     atomic_load_explicit(r->rsq_tail, memory_order_relaxed); i++)
		sys_call6(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
	atomic_fetch_add(&r->refs, 1);
	int err = start_thread(mover_main, r);
	if (!err)
		return;
	atomic_fetch_sub(&r->refs, 1);
	log_once(BUFSEL_LOG_WARN, ONCE_NO_MOVER, "SQPOLL ring: no poller thread (%s): every submission enters",
		 log_errname(err));
	r->has_mover = 0;
	complete_reap(r);
}

/*
 * The process's mover.  Natively a completion lands in the CQ while the
 * program runs (task work interrupts it, io-wq posts directly): a program
 * may spin on the CQ without ever entering.  One thread sleeps on every
 * such ring at once (epoll, edge-triggered: a shadow that is full, or a
 * waiter that holds the real head back, leaves the real CQ readable, and
 * the mover must not spin on it) and moves what arrives.  A receive whose
 * poll saw data, with nothing chained behind it, it issues too, as the
 * kernel's task work would have received it: liburing's waits bounded by a
 * TIMEOUT SQE (kernels without IORING_ENTER_EXT_ARG) peek before they enter
 * and, finding nothing, wait again without their timeout.  It issues under
 * sq_lock with followup_busy set, so an enter that comes meanwhile waits
 * for it and finds the CQE, as natively the receive was done before that
 * enter.  Other work a completion releases (a multishot receive's next
 * step, a held chain) waits for the program's next enter, which
 * IORING_SQ_TASKRUN asks for; and nothing is issued on a SINGLE_ISSUER ring,
 * which takes SQEs from one task only, nor through an fd number that no
 * longer names the ring (the program closed it unseen).  Epoll holds no reference to a ring's file, so the program's
 * last close still ends the ring; a ring is named by slot and serial, so a
 * stale event finds nothing.
 */
#define MOVER_BATCH 16

/*
 * Under the seccomp filter the mover also looks for rings the program
 * closed unseen: a pinned ring (a kernel without IORING_SETUP_NO_MMAP)
 * lives on bufsel's fd and mappings, and natively the program's last close
 * and unmap end it at once.  Every CLOSE_LOOK_MS while such a ring is live,
 * every CLOSE_IDLE_MS while none is; a pinned ring set up, or a ring's
 * completion, while idle brings the next look within CLOSE_LOOK_MS (a ring
 * set up and closed in an idle second, its READ never completing, lived on
 * up to that second: close_mapped on the real 5.10), and completions coming
 * all the time do not put looks off.
 */
#define CLOSE_LOOK_MS	20
#define CLOSE_IDLE_MS	1000
#define MS		1000000ull
#define MOVER_WAKE	UINT64_MAX	/* the wake eventfd's epoll data; no ring's */
/* How long a watch left off for a busy program stays off before the mover
 * looks again: a completion the program does not enter for waits at most
 * about twice this (it must have entered within the last period). */
#define MOVER_RECHECK_MS 1
#define WATCH_EVENTS (EPOLLIN | EPOLLET | EPOLLONESHOT)

static uint64_t watch_data(const struct ring *r)
{
	return (uint64_t)r->serial << 32 | ring_slot(r);
}

/* Mover thread only.  The earliest recheck of a watch left off; 0: none. */
static uint64_t next_recheck;

/* The kernel's ring polls readable: CQEs it counts unconsumed (bufsel
 * takes them without giving back their slots while a thread waits, or
 * leaves them while the program's CQ is full), or CQEs in its overflow. */
static int kernel_cq_readable(const struct ring *r)
{
	return atomic_load_explicit(r->rcq_tail, memory_order_acquire) !=
		       atomic_load_explicit(r->rcq_head, memory_order_relaxed) ||
	       (r->rsq_flags && (atomic_load_explicit(r->rsq_flags, memory_order_relaxed) & IORING_SQ_CQ_OVERFLOW));
}

static void recheck_at(uint64_t ns)
{
	if (!next_recheck || ns < next_recheck)
		next_recheck = ns;
}

static void recheck_later(struct ring *r, uint64_t now)
{
	r->mover_recheck_ns = now + MOVER_RECHECK_MS * MS;
	recheck_at(r->mover_recheck_ns);
}

/*
 * After a wake-up (the watch in ep is off; passed: the mover has just been
 * over the ring or left it to a waiter) or at a recheck: arms the watch
 * again if the program has not entered since the last look, else leaves it
 * off for another period.  Arming on a ring that polls readable wakes the
 * mover at once: right after a pass that is CQEs it could not move, and
 * the watch stays off instead of turning the mover round and round; at a
 * recheck it is the pass they wait for.
 */
static void watch_again(int ep, struct ring *r, uint64_t now, int passed)
{
	unsigned e = atomic_load_explicit(&r->enters, memory_order_relaxed);
	if (e != r->mover_enters_seen || (passed && kernel_cq_readable(r))) {
		r->mover_enters_seen = e;
		recheck_later(r, now);
		return;
	}
	struct epoll_event ev = { .events = WATCH_EVENTS, .data.u64 = watch_data(r) };
	r->mover_recheck_ns = 0;
	r->mover_armed = 1;
	/* A failure: the ring's file has left the epoll, the ring is going. */
	if (sys_call6(SYS_epoll_ctl, ep, EPOLL_CTL_MOD, ring_fd(r), (long)&ev, 0, 0))
		r->mover_armed = 0;
}

static void recheck_one(int ep, struct ring *r, int *unused)
{
	(void)unused;
	if (r->mover_armed || !r->mover_recheck_ns)
		return;
	uint64_t now = now_ns();
	if (now >= r->mover_recheck_ns)
		watch_again(ep, r, now, 0);
	else
		recheck_at(r->mover_recheck_ns);
}

static void recheck_watches(int ep)
{
	next_recheck = 0;
	ring_for_each_live(recheck_one, ep, NULL);
}

/* The next look's period: idle is published before the rings are looked
 * at, so a ring set up during the look either is seen or wakes the mover
 * (mover_watch). */
static int close_look(void)
{
	atomic_store_explicit(&bufsel.mover_idle, 1, memory_order_seq_cst);
	if (!ring_look_for_closes())
		return CLOSE_IDLE_MS;
	atomic_store_explicit(&bufsel.mover_idle, 0, memory_order_relaxed);
	return CLOSE_LOOK_MS;
}

static void *process_mover_main(void *arg)
{
	int ep = (int)(long)arg;
	struct epoll_event ev[MOVER_BATCH];
	block_sigsys();
	int look = ring_closes_unseen() ? CLOSE_LOOK_MS : -1;
	uint64_t next_look = now_ns() + CLOSE_LOOK_MS * MS;
	for (;;) {
		int wait = -1;
		if (look > 0 || next_recheck) {
			uint64_t t = now_ns(), until = look > 0 ? next_look : next_recheck;
			if (next_recheck && next_recheck < until)
				until = next_recheck;
			wait = t >= until ? 0 : (int)((until - t + MS - 1) / MS);
		}
		long n = sys_call6(SYS_epoll_pwait, ep, (long)ev, MOVER_BATCH, wait, 0, 0);
		if (n == -EBADF || n == -EINVAL)
			return NULL;	/* the program closed it after all: stop */
		if (next_recheck && now_ns() >= next_recheck)
			recheck_watches(ep);
		if (look > 0) {
			uint64_t t = now_ns();
			if (t >= next_look) {
				look = close_look();
				next_look = t + (uint64_t)look * MS;
			} else if (n > 0 && look == CLOSE_IDLE_MS) {
				look = CLOSE_LOOK_MS;
				next_look = t + CLOSE_LOOK_MS * MS;
			}
		}
		for (long i = 0; i < n; i++) {
			if (ev[i].data.u64 == MOVER_WAKE) {
				uint64_t v;
				sys_call3(SYS_read, bufsel.mover_wakefd, (long)&v, sizeof(v));
				continue;	/* the look came with it, above */
			}
			struct ring *r = ring_get_slot((unsigned)ev[i].data.u64, (unsigned)(ev[i].data.u64 >> 32));
			if (!r)
				continue;
			r->mover_armed = 0;
			/* The waiter moves it (ring.h, enter_waits_any); had it
			 * stopped waiting before the CQE came, its count is down
			 * by now, as it drops before the waiter's own reap. */
			if (atomic_load_explicit(&r->enter_waits_any, memory_order_seq_cst)) {
				watch_again(ep, r, now_ns(), 1);
				ring_put(r);
				continue;
			}
			if (!mover_pass_begin(r)) {
				ring_put(r);
				continue;
			}
			complete_prune_waiters(r);
			complete_reap(r);
			if (r->hooks && r->ready && !(r->setup_flags & IORING_SETUP_SINGLE_ISSUER) &&
			    ring_fd_names(r)) {
				atomic_store_explicit(&r->x->followup_busy, 1, memory_order_release);
				for (int rounds = 0; r->ready && rounds < 64; rounds++) {
					r->hooks->followup(r, 1);
					complete_reap(r);
				}
				atomic_store_explicit(&r->x->followup_busy, 0, memory_order_release);
			}
			watch_again(ep, r, now_ns(), 1);
			mover_pass_leave();
			ring_put_ending_pass(r);
		}
	}
}

/* Under the seccomp filter, the eventfd that wakes the mover in ep. */
static int wake_fd(int ep)
{
	bufsel.mover_wakefd = -1;
	if (!ring_closes_unseen())
		return 0;
	int fd = high_fd(sys_call3(SYS_eventfd2, 0, EFD_CLOEXEC | EFD_NONBLOCK, 0));
	if (fd < 0)
		return fd;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = MOVER_WAKE };
	long err = sys_call6(SYS_epoll_ctl, ep, EPOLL_CTL_ADD, fd, (long)&ev, 0, 0);
	if (err) {
		sys_close(fd);
		return (int)err;
	}
	bufsel.mover_wakefd = fd;
	return 0;
}

/* The epoll fd of a running mover, or -errno; starts it once. */
static int process_mover(void)
{
	int st = atomic_load_explicit(&bufsel.mover_state, memory_order_acquire);
	while (st == 0 || st == 1) {
		if (st == 0 && atomic_compare_exchange_strong(&bufsel.mover_state, &st, 1)) {
			atomic_store_explicit(&bufsel.mover_starter, spin_self(), memory_order_relaxed);
			int ep = high_fd(sys_call3(SYS_epoll_create1, EPOLL_CLOEXEC, 0, 0));
			int err = ep < 0 ? ep : wake_fd(ep);
			if (!err)
				err = start_thread(process_mover_main, (void *)(long)ep);
			if (err && ep >= 0)
				sys_close(ep);
			if (err && bufsel.mover_wakefd >= 0)
				sys_close(bufsel.mover_wakefd);
			if (err)
				bufsel.mover_wakefd = -1;
			bufsel.mover_epfd = err ? -1 : ep;
			st = err ? err : 2;
			atomic_store_explicit(&bufsel.mover_state, st, memory_order_release);
			break;
		}
		/* A signal handler that sets up a ring while its own thread is
		 * starting the mover would wait for itself: this ring goes
		 * without (its CQEs move on enter). */
		if (st == 1 && atomic_load_explicit(&bufsel.mover_starter, memory_order_relaxed) == spin_self())
			return -EDEADLK;
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
	struct epoll_event ev = { .events = WATCH_EVENTS, .data.u64 = watch_data(r) };
	/* Armed before the file is in the epoll, where the mover may see it. */
	r->mover_armed = 1;
	r->mover_recheck_ns = 0;
	r->mover_enters_seen = atomic_load_explicit(&r->enters, memory_order_relaxed);
	long err = sys_call6(SYS_epoll_ctl, ep, EPOLL_CTL_ADD, ring_fd(r), (long)&ev, 0, 0);
	if (err) {
		r->mover_armed = 0;
		return (int)err;
	}
	r->cq_moved = 1;
	r->watch_ep = ep;
	/* A pinned ring lives on bufsel's fd after the program's unseen close:
	 * the idle mover must look for it from now on, not in a second. */
	if (!r->unpinned && bufsel.mover_wakefd >= 0 &&
	    atomic_exchange_explicit(&bufsel.mover_idle, 0, memory_order_seq_cst)) {
		uint64_t one = 1;
		sys_call3(SYS_write, bufsel.mover_wakefd, (long)&one, sizeof(one));
	}
	return 0;
}

/*
 * The parent's mover is not in the child, and its epoll instance is the
 * parent's: the child starts its own for the rings it makes.  A ring it
 * inherited shares its bookkeeping (ring.h, struct ring_shared) and its
 * shadow with the parent, whose mover goes on moving its completions into
 * both; the child's own mover watches it too from the child's first enter
 * on it (mover_adopt), so that the child does not depend on the parent
 * living.  A child that never uses an inherited ring (it execs, exits or
 * makes rings of its own) starts no thread for it, and never moves its
 * completions, which may be its parent's emulated requests (README).
 */
static void unwatch(int fd, struct ring *r, int *first)
{
	(void)fd;
	(void)first;
	r->watch_ep = -1;
	r->mover_armed = 0;
	r->mover_recheck_ns = 0;	/* the child's mover has no watch of it to arm */
	if (!(r->setup_flags & IORING_SETUP_DEFER_TASKRUN))
		r->cq_moved = 0;
	atomic_store_explicit(&r->inherited, 1, memory_order_relaxed);
}

void mover_adopt(struct ring *r)
{
	int one = 1;
	if (!atomic_compare_exchange_strong(&r->inherited, &one, 0))
		return;
	/* SQPOLL: the parent's poller is the ring's SQ thread, as the
	 * kernel's is (README known limits); DEFER_TASKRUN: no mover. */
	if (r->setup_flags & (IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SQPOLL))
		return;
	int err = mover_watch(r);
	if (err)
		log_once(BUFSEL_LOG_WARN, ONCE_NO_MOVER, "ring fd %d: no completion mover (%s): completions move only when the program enters",
			 r->prog_fd, log_errname(err));
	complete_reap(r);	/* the flags of a ring with a mover */
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
	if (atomic_load(&bufsel.mover_state) == 2) {
		sys_close(bufsel.mover_epfd);
		if (bufsel.mover_wakefd >= 0)
			sys_close(bufsel.mover_wakefd);
	}
	bufsel.mover_epfd = bufsel.mover_wakefd = -1;
	atomic_store(&bufsel.mover_idle, 0);
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
	 * shadow, the real ring and bufsel's bookkeeping of both), unless the
	 * child entered it itself (mover_adopt). */
	if (fd != (int)ring_slot(r) && !atomic_load_explicit(&r->inherited, memory_order_relaxed) &&
	    complete_pending(r))
		complete_try_reap(r);
}

void mover_reap_others(struct ring *r)
{
	ring_for_each_live(reap_other, (int)ring_slot(r), NULL);
}
