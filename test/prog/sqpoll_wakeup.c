/*
 * What an SQPOLL program sees of its SQ thread: IORING_SQ_NEED_WAKEUP and
 * IORING_ENTER_SQ_WAIT (liburing's sqpoll-sleep and sqwait).
 *  - The thread starts asleep: NEED_WAKEUP shows soon after setup.
 *  - A submit wakes it; it then polls the SQ for sq_thread_idle (200 ms)
 *    after its last work, and NEED_WAKEUP is clear all that time: SQEs the
 *    program publishes then complete with no system call at all.
 *  - Once idle it sets NEED_WAKEUP (checked within generous bounds, as
 *    liburing's tests check it) and uses no CPU while it sleeps.
 *  - A full SQ published while it sleeps, then one enter with SQ_WAKEUP and
 *    SQ_WAIT: the enter returns with room in the program's SQ.
 *  - A completion that comes while it sleeps shows without an enter and
 *    wakes it (natively the kernel runs it as task work in that thread).
 *  - IORING_SQ_TASKRUN never shows (no TASKRUN_FLAG).
 * Times are never printed, only whether they fall inside the bounds.
 */
#include "test/prog/cqe_print.h"

#include <time.h>

#define IDLE_MS 200

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static unsigned need_wakeup(struct io_uring *ring)
{
	return !!(IO_URING_READ_ONCE(*ring->sq.kflags) & IORING_SQ_NEED_WAKEUP);
}

/* Seconds until NEED_WAKEUP shows, polling every 100 us; -1 after limit s. */
static double until_asleep(struct io_uring *ring, double limit)
{
	double start = now();
	while (now() - start < limit) {
		if (need_wakeup(ring))
			return now() - start;
		usleep(100);
	}
	return -1;
}

/* Publishes the SQEs got so far without io_uring_submit (which would enter
 * when NEED_WAKEUP is set). */
static void publish(struct io_uring *ring)
{
	io_uring_smp_store_release(ring->sq.ktail, ring->sq.sqe_tail);
}

/* io_uring_enter through libc's syscall(), with nothing to submit. */
static int enter(struct io_uring *ring, unsigned flags)
{
	long ret = syscall(__NR_io_uring_enter, ring->ring_fd, 0, 0, flags, NULL, 0);
	return ret < 0 ? -errno : (int)ret;
}

static void reap_n(struct io_uring *ring, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct io_uring_cqe *cqe;
		int ret = io_uring_wait_cqe(ring, &cqe);
		if (ret)
			die("wait_cqe: %s", strerror(-ret));
		cqe_print(cqe);
		io_uring_cqe_seen(ring, cqe);
	}
}

int main(void)
{
	struct io_uring ring;
	struct io_uring_params p = { .flags = IORING_SETUP_SQPOLL, .sq_thread_idle = IDLE_MS };
	int ret = io_uring_queue_init_params(4, &ring, &p);
	if (ret < 0)
		die("queue_init SQPOLL: %s", strerror(-ret));

	double t = until_asleep(&ring, 2);
	note("asleep after setup: %s", t >= 0 ? "yes" : "no");

	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 1;
	submit_expect(&ring, 1);
	reap_n(&ring, 1);
	note("need_wakeup right after the first completion: %u", need_wakeup(&ring));

	/* Awake: published SQEs are taken without an enter. */
	for (unsigned i = 0; i < 3; i++) {
		sqe = get_sqe(&ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = 10 + i;
	}
	publish(&ring);
	double end = now() + 2;
	while (io_uring_cq_ready(&ring) < 3 && now() < end)
		;
	note("completions without an enter: %u", io_uring_cq_ready(&ring));
	reap_n(&ring, io_uring_cq_ready(&ring));
	/* Without TASKRUN_FLAG the kernel never shows IORING_SQ_TASKRUN;
	 * liburing's submit enters when it does, which an awake SQ thread
	 * never needs. */
	note("taskrun shown: %u", !!(IO_URING_READ_ONCE(*ring.sq.kflags) & IORING_SQ_TASKRUN));

	t = until_asleep(&ring, 3);
	note("asleep after %d ms idle, within [%d, %d] ms: %s", IDLE_MS, IDLE_MS / 2, 5 * IDLE_MS,
	     t >= IDLE_MS / 2 / 1e3 && t <= 5 * IDLE_MS / 1e3 ? "yes" : "no");

	/* Asleep: no CPU (the kernel's thread counts in the process too). */
	double c0 = cpu_now();
	usleep(300 * 1000);
	double used = cpu_now() - c0;
	note("cpu while asleep under 30 ms: %s", used < 0.03 ? "yes" : "no");
	note("still asleep: %u", need_wakeup(&ring));

	/* Asleep, a full SQ published: nothing is taken until a wake-up. */
	for (unsigned i = 0; i < 4; i++) {
		sqe = get_sqe(&ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = 20 + i;
	}
	note("get_sqe on a full SQ: %s", io_uring_get_sqe(&ring) ? "an sqe" : "NULL");
	publish(&ring);
	usleep(50 * 1000);
	note("space left while asleep: %u", io_uring_sq_space_left(&ring));
	ret = enter(&ring, IORING_ENTER_SQ_WAKEUP | IORING_ENTER_SQ_WAIT);
	note("enter SQ_WAKEUP|SQ_WAIT: %d", ret);
	note("space after the wait: %s", io_uring_sq_space_left(&ring) > 0 ? "some" : "none");
	note("get_sqe after the wait: %s", io_uring_get_sqe(&ring) ? "an sqe" : "NULL");
	/* The SQE just got is given back unused: an empty SQE is not published. */
	ring.sq.sqe_tail--;
	reap_n(&ring, 4);
	note("need_wakeup after the wake-up: %u", need_wakeup(&ring));

	/* SQ_WAIT with room returns at once. */
	ret = enter(&ring, IORING_ENTER_SQ_WAIT);
	note("enter SQ_WAIT with room: %d", ret);

	/* A completion that comes while it sleeps (task work natively) is
	 * in the CQ without an enter, and leaves the thread awake. */
	int fds[2];
	if (pipe(fds))
		die("pipe: %s", strerror(errno));
	static char buf[8];
	sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, fds[0], buf, sizeof(buf), 0);
	sqe->user_data = 30;
	submit_expect(&ring, 1);
	t = until_asleep(&ring, 3);
	note("asleep with a read pending: %s", t >= 0 ? "yes" : "no");
	if (write(fds[1], "wake", 4) != 4)
		die("write: %s", strerror(errno));
	end = now() + 2;
	while (io_uring_cq_ready(&ring) < 1 && now() < end)
		;
	note("completion without an enter: %u", io_uring_cq_ready(&ring));
	usleep(20 * 1000);
	note("need_wakeup after it: %u", need_wakeup(&ring));
	reap_n(&ring, 1);
	close(fds[0]);
	close(fds[1]);
	io_uring_queue_exit(&ring);
	return 0;
}
