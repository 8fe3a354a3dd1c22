/*
 * Bounded waits. On a kernel with IORING_FEAT_EXT_ARG, liburing's
 * io_uring_wait_cqe_timeout passes the timeout to io_uring_enter through
 * IORING_ENTER_EXT_ARG (no TIMEOUT SQE, no extra CQE): -ETIME on an empty
 * ring, 0 when a completion is there or arrives in time; the same for a read
 * pending on a pipe before and after data arrives. Waiting for more CQEs
 * than will come returns 0, not -ETIME, once the timeout expires with some
 * CQEs ready: the kernel reports -ETIME only for an empty CQ.
 * io_uring_submit_and_wait_timeout returns the number submitted.
 */
#include "test/prog/cqe_print.h"

#include <unistd.h>

static struct __kernel_timespec ms30 = { .tv_nsec = 30 * 1000 * 1000 };
static struct __kernel_timespec s5 = { .tv_sec = 5 };

static void timed_reap(struct io_uring *ring, struct __kernel_timespec *ts, const char *what)
{
	struct io_uring_cqe *cqe;
	int ret = io_uring_wait_cqe_timeout(ring, &cqe, ts);
	note("%s: wait_cqe_timeout returned %d", what, ret);
	if (ret == 0) {
		cqe_print(cqe);
		io_uring_cqe_seen(ring, cqe);
	}
}

int main(void)
{
	struct io_uring ring;
	struct io_uring_params p = { 0 };
	int ret = io_uring_queue_init_params(8, &ring, &p);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	note("ext_arg %d", !!(p.features & IORING_FEAT_EXT_ARG));
	int pp[2];
	if (pipe(pp) < 0)
		die("pipe: %s", strerror(errno));

	timed_reap(&ring, &ms30, "empty ring");

	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 1;
	submit_expect(&ring, 1);
	timed_reap(&ring, &ms30, "after a nop");
	timed_reap(&ring, &ms30, "empty again");

	char buf[8];
	sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, pp[0], buf, sizeof(buf), 0);
	sqe->user_data = 2;
	submit_expect(&ring, 1);
	timed_reap(&ring, &ms30, "read pending");
	if (write(pp[1], "abc", 3) != 3)
		die("write: %s", strerror(errno));
	timed_reap(&ring, &s5, "read ready");

	note("wait for 3 when 2 will come");
	for (unsigned i = 0; i < 2; i++) {
		sqe = get_sqe(&ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = 10 + i;
	}
	submit_expect(&ring, 2);
	struct io_uring_cqe *cqe;
	ret = io_uring_wait_cqes(&ring, &cqe, 3, &ms30, NULL);
	note("wait_cqes returned %d, ready %u", ret, io_uring_cq_ready(&ring));
	reap_print(&ring, io_uring_cq_ready(&ring));

	note("submit_and_wait_timeout with a nop");
	sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 20;
	ret = io_uring_submit_and_wait_timeout(&ring, &cqe, 1, &s5, NULL);
	note("submit_and_wait_timeout returned %d", ret);
	reap_print(&ring, 1);

	note("submit_and_wait_timeout for 2 with one nop");
	sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 21;
	ret = io_uring_submit_and_wait_timeout(&ring, &cqe, 2, &ms30, NULL);
	note("submit_and_wait_timeout returned %d, ready %u", ret, io_uring_cq_ready(&ring));
	reap_print(&ring, 1);

	close(pp[0]);
	close(pp[1]);
	io_uring_queue_exit(&ring);
	return 0;
}
