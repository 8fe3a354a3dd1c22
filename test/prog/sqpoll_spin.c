/*
 * An SQPOLL ring whose completions are collected by reading CQ memory alone
 * (io_uring_cq_ready, io_uring_for_each_cqe), with no system call between
 * submit and reap: fio's sqthread_poll mode. Natively the kernel's poller
 * thread posts the CQEs; under a shadow ring they appear only if bufsel moves
 * completions without being entered.
 * The wait is bounded (2 s) so completions that never show fail the test.
 */
#include "test/prog/cqe_print.h"

#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
	struct io_uring ring;
	struct io_uring_params p = { .flags = IORING_SETUP_SQPOLL, .sq_thread_idle = 1000 };
	int ret = io_uring_queue_init_params(8, &ring, &p);
	if (ret < 0)
		die("queue_init SQPOLL: %s", strerror(-ret));
	for (unsigned round = 0; round < 3; round++) {
		for (unsigned i = 0; i < 4; i++) {
			struct io_uring_sqe *sqe = get_sqe(&ring);
			io_uring_prep_nop(sqe);
			sqe->user_data = 10 * (round + 1) + i;
		}
		submit_expect(&ring, 4);
		double end = now() + 2;
		while (io_uring_cq_ready(&ring) < 4 && now() < end)
			;
		if (io_uring_cq_ready(&ring) < 4)
			die("round %u: only %u of 4 completions appeared", round, io_uring_cq_ready(&ring));
		struct io_uring_cqe *cqe, got[4];
		unsigned head, n = 0;
		io_uring_for_each_cqe(&ring, head, cqe) {
			if (n < 4)
				got[n++] = *cqe;
		}
		io_uring_cq_advance(&ring, 4);
		/* The poller may punt or batch; order within a round is not the point. */
		cqe_print_sorted(got, 4);
	}
	io_uring_queue_exit(&ring);
	return 0;
}
