/*
 * The order of a TIMEOUT_REMOVE's CQE and the removed TIMEOUT's.  Before
 * 5.18 io_timeout_cancel posts the TIMEOUT's -ECANCELED at once, inside the
 * removal, so it comes first; since, task work posts it after the
 * removal's 0.  A TIMEOUT with a completion count is bufsel's to count (the
 * kernel gets its timer under a tag), so bufsel has the order to keep: the
 * kernel's on a real kernel, the one BUFSEL_KERNEL names in the simulation
 * (kernel510 holds it to Linux 5.10's).  Also a removal of a TIMEOUT that
 * already fired: -ENOENT, alone.
 */
#include "test/prog/cqe_print.h"

static void timeout(struct io_uring *ring, struct __kernel_timespec *ts, unsigned count,
		    unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(ring);
	io_uring_prep_timeout(sqe, ts, count, 0);
	sqe->user_data = ud;
	submit_expect(ring, 1);
}

static void timeout_remove(struct io_uring *ring, unsigned long long target, unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(ring);
	io_uring_prep_timeout_remove(sqe, target, 0);
	sqe->user_data = ud;
	submit_expect(ring, 1);
}

int main(void)
{
	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	struct __kernel_timespec long_ts = { 10, 0 }, short_ts = { 0, 10000000 };

	note("a counting TIMEOUT, removed");
	timeout(&ring, &long_ts, 1, 10);
	timeout_remove(&ring, 10, 11);
	reap_print(&ring, 2);

	note("a counting TIMEOUT for 2, removed");
	timeout(&ring, &long_ts, 2, 20);
	timeout_remove(&ring, 20, 21);
	reap_print(&ring, 2);

	note("a TIMEOUT that fired, then its removal");
	timeout(&ring, &short_ts, 1, 30);
	reap_print(&ring, 1);
	timeout_remove(&ring, 30, 31);
	reap_print(&ring, 1);

	io_uring_queue_exit(&ring);
	return 0;
}
