/*
 * CQE flags of multishot requests: a multishot POLL_ADD on a pipe posts one
 * CQE per wakeup with IORING_CQE_F_MORE set, the request staying armed; a
 * POLL_REMOVE ends it with a final CQE without F_MORE (-ECANCELED), and a
 * second remove finds nothing (-ENOENT). A one-shot poll posts once, without
 * F_MORE. Each write is reaped before the next, so the CQE count is fixed.
 */
#include "test/prog/cqe_print.h"

#include <poll.h>
#include <unistd.h>

static struct io_uring ring;

static void remove_poll(unsigned long long target, unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_poll_remove(sqe, target);
	sqe->user_data = ud;
	submit_expect(&ring, 1);
}

int main(void)
{
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int p[2];
	if (pipe(p) < 0)
		die("pipe: %s", strerror(errno));
	char buf[16];

	note("multishot poll, three writes");
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_poll_multishot(sqe, p[0], POLLIN);
	sqe->user_data = 1;
	submit_expect(&ring, 1);
	expect_no_cqe(&ring, "armed poll");
	for (unsigned i = 0; i < 3; i++) {
		if (write(p[1], "x", 1) != 1)
			die("write: %s", strerror(errno));
		reap_print(&ring, 1);
		if (read(p[0], buf, sizeof(buf)) != 1)
			die("read: %s", strerror(errno));
	}
	note("poll remove");
	remove_poll(1, 2);
	reap_print_sorted(&ring, 2);
	remove_poll(1, 3);
	reap_print(&ring, 1);

	note("one-shot poll");
	sqe = get_sqe(&ring);
	io_uring_prep_poll_add(sqe, p[0], POLLIN);
	sqe->user_data = 10;
	submit_expect(&ring, 1);
	if (write(p[1], "y", 1) != 1)
		die("write: %s", strerror(errno));
	reap_print(&ring, 1);
	remove_poll(10, 11);
	reap_print(&ring, 1);

	close(p[0]);
	close(p[1]);
	io_uring_queue_exit(&ring);
	return 0;
}
