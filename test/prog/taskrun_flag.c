/*
 * IORING_SQ_TASKRUN on a SINGLE_ISSUER | DEFER_TASKRUN ring (liburing's
 * defer-taskrun test_flag): with TASKRUN_FLAG the kernel sets it the moment
 * it queues task work (here from the eventfd write that completes a poll, a
 * system call that is not io_uring's) and clears it when the program's
 * enter runs the work; without TASKRUN_FLAG it never shows.  The flag is
 * printed at each step, read straight from the ring's memory.
 * Then CQ_OVERFLOW: more completions than the CQ holds set it, and reaping
 * everything clears it.
 */
#include "test/prog/cqe_print.h"

#include <poll.h>
#include <sys/eventfd.h>

static unsigned flags(struct io_uring *ring)
{
	return IO_URING_READ_ONCE(*ring->sq.kflags) & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW);
}

static int readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, 0) == 1;
}

static void poll_round(unsigned setup)
{
	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, setup);
	if (ret < 0)
		die("queue_init 0x%x: %s", setup, strerror(-ret));
	note("ring TASKRUN_FLAG=%u: flags after setup 0x%x", !!(setup & IORING_SETUP_TASKRUN_FLAG),
	     flags(&ring));
	int efd = eventfd(0, EFD_NONBLOCK);
	if (efd < 0)
		die("eventfd: %s", strerror(errno));
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_poll_add(sqe, efd, POLLIN);
	sqe->user_data = 1;
	submit_expect(&ring, 1);
	note("after submit: flags 0x%x, readable %d", flags(&ring), readable(efd));
	eventfd_write(efd, 1);
	note("after the eventfd write: readable %d, cq_ready %u, flags 0x%x", readable(efd),
	     io_uring_cq_ready(&ring), flags(&ring));
	/* A peek enters (liburing: when TASKRUN is set) and runs the work. */
	struct io_uring_cqe *cqe = NULL;
	ret = io_uring_peek_cqe(&ring, &cqe);
	note("peek: %d, %s", ret, cqe ? "a cqe" : "none");
	if (cqe) {
		cqe_print(cqe);
		io_uring_cqe_seen(&ring, cqe);
	} else {
		/* Without the flag liburing's peek does not enter: a wait does. */
		ret = io_uring_wait_cqe(&ring, &cqe);
		if (ret)
			die("wait_cqe: %s", strerror(-ret));
		cqe_print(cqe);
		io_uring_cqe_seen(&ring, cqe);
	}
	note("after the completion: flags 0x%x", flags(&ring));
	close(efd);
	io_uring_queue_exit(&ring);
}

static void overflow_round(void)
{
	struct io_uring ring;
	struct io_uring_params p = { .flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
					       IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_CQSIZE,
				     .cq_entries = 4 };
	int ret = io_uring_queue_init_params(4, &ring, &p);
	if (ret < 0)
		die("queue_init cq 4: %s", strerror(-ret));
	for (unsigned i = 0; i < 6; i++) {
		struct io_uring_sqe *sqe = get_sqe(&ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = 100 + i;
		if (i == 3 || i == 5)
			submit_expect(&ring, i == 3 ? 4 : 2);
	}
	/* Completions posted by running the task work: an enter for none. */
	ret = io_uring_get_events(&ring);
	note("6 nops on a CQ of 4: get_events %d, cq_ready %u, flags 0x%x", ret,
	     io_uring_cq_ready(&ring), flags(&ring));
	unsigned n = 0;
	struct io_uring_cqe *cqe;
	while (io_uring_peek_cqe(&ring, &cqe) == 0) {
		cqe_print(cqe);
		io_uring_cqe_seen(&ring, cqe);
		n++;
	}
	note("reaped %u, flags 0x%x", n, flags(&ring));
	io_uring_queue_exit(&ring);
}

int main(void)
{
	unsigned base = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
	poll_round(base | IORING_SETUP_TASKRUN_FLAG);
	poll_round(base);
	overflow_round();
	return 0;
}
