/*
 * Waits that end before min_complete, as the kernel ends them:
 * - a fired IORING_OP_TIMEOUT ends a wait for several completions (the
 *   kernel counts fired timeouts, not just CQEs);
 * - with EXT_ARG min_wait_usec, once min_wait has passed any CQE in the CQ
 *   ends the wait, including CQEs that were there before it began.
 * - a min_wait longer than the timeout: the wait lasts min_wait.
 * Each on a plain ring and on an SQPOLL ring (whose waits bufsel makes on
 * the shadow CQ).  Times are printed only against bounds far apart.
 */
#include "test/prog/cqe_print.h"

#include <time.h>

#define FEAT_MIN_TIMEOUT (1U << 15)

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void drain(struct io_uring *ring)
{
	struct io_uring_cqe *cqe;
	while (!io_uring_peek_cqe(ring, &cqe)) {
		cqe_print(cqe);
		io_uring_cqe_seen(ring, cqe);
	}
}

static int run(unsigned flags, const char *name)
{
	struct io_uring ring;
	struct io_uring_params p = { .flags = flags };
	if (io_uring_queue_init_params(8, &ring, &p))
		return 1;
	printf("-- %s ring\n", name);

	/* A 50 ms timeout, nothing else: a wait for 3 ends when it fires. */
	struct __kernel_timespec ts = { .tv_sec = 0, .tv_nsec = 50 * 1000000 };
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	io_uring_prep_timeout(sqe, &ts, 0, 0);
	sqe->user_data = 1;
	long long t0 = now_ms();
	int ret = io_uring_submit_and_wait(&ring, 3);
	long long dt = now_ms() - t0;
	/* On an SQPOLL ring the wake-up can come before the TIMEOUT's CQE is
	 * in the CQ (its task work posts it after cq_timeouts moved): the CQE
	 * is waited for, not counted at once. */
	struct io_uring_cqe *tcqe;
	int got = io_uring_wait_cqe(&ring, &tcqe);
	printf("timeout wait: ret=%d cqe %s %s\n", ret, got ? "none" : "there",
	       dt < 2000 ? "short" : "long");
	drain(&ring);

	if (!(p.features & FEAT_MIN_TIMEOUT)) {
		printf("min_wait: not supported\n");
		io_uring_queue_exit(&ring);
		return 0;
	}
	/* Two NOPs already completed; wait for 4 with a 3 s timeout and a
	 * 50 ms min_wait: the kernel returns after min_wait with the 2. */
	for (int i = 0; i < 2; i++) {
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = 10 + (unsigned)i;
	}
	io_uring_submit_and_wait(&ring, 2);
	struct __kernel_timespec lts = { .tv_sec = 3, .tv_nsec = 0 };
	struct io_uring_getevents_arg arg = {
		.sigmask = 0, .sigmask_sz = 8, .pad = 50000, .ts = (unsigned long long)(uintptr_t)&lts,
	};
	t0 = now_ms();
	long r = syscall(__NR_io_uring_enter, ring.ring_fd, 0, 4,
			 IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &arg, sizeof(arg));
	dt = now_ms() - t0;
	printf("min_wait: ret=%ld ready=%u %s\n", r < 0 ? -errno : r, io_uring_cq_ready(&ring),
	       dt < 1500 ? "short" : "long");
	drain(&ring);

	/* Nothing to come, a 20 ms timeout and a 400 ms min_wait: the kernel's
	 * first timer is min_wait, so the wait lasts that long. */
	struct __kernel_timespec sts = { .tv_sec = 0, .tv_nsec = 20 * 1000000 };
	arg.pad = 400000;
	arg.ts = (unsigned long long)(uintptr_t)&sts;
	t0 = now_ms();
	r = syscall(__NR_io_uring_enter, ring.ring_fd, 0, 1,
		    IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &arg, sizeof(arg));
	dt = now_ms() - t0;
	printf("min_wait past the timeout: ret=%ld lasted %s\n", r < 0 ? -errno : r,
	       dt >= 300 ? "min_wait" : "the timeout");
	io_uring_queue_exit(&ring);
	return 0;
}

int main(void)
{
	return run(0, "plain") || run(IORING_SETUP_SQPOLL, "SQPOLL");
}
