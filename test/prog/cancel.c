/*
 * ASYNC_CANCEL: by user_data of a pending pipe read (cancel 0, read
 * -ECANCELED), of a user_data nobody uses (-ENOENT), of a request that already
 * completed (-ENOENT), and by fd with IORING_ASYNC_CANCEL_ALL, whose result is
 * the number of requests cancelled. The program's user_data values and fd
 * numbers are what the kernel must see for these to match.
 * A cancel and its target complete from different contexts, so each batch is
 * printed by user_data.
 */
#include "test/prog/cqe_print.h"

#include <unistd.h>

static struct io_uring ring;

static void pipe_read(int fd, char *buf, unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, fd, buf, 8, 0);
	sqe->user_data = ud;
}

static void cancel(unsigned long long target, unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_cancel64(sqe, target, 0);
	sqe->user_data = ud;
}

int main(void)
{
	int ret = io_uring_queue_init(16, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int p[2];
	if (pipe(p) < 0)
		die("pipe: %s", strerror(errno));
	char b1[8], b2[8], b3[8];

	note("cancel a pending read by user_data");
	pipe_read(p[0], b1, 1);
	submit_expect(&ring, 1);
	expect_no_cqe(&ring, "pending read");
	cancel(1, 2);
	submit_expect(&ring, 1);
	reap_print_sorted(&ring, 2);

	note("cancel a user_data nobody uses");
	cancel(424242, 3);
	submit_expect(&ring, 1);
	reap_print(&ring, 1);

	note("cancel a read that already completed");
	if (write(p[1], "x", 1) != 1)
		die("write: %s", strerror(errno));
	pipe_read(p[0], b1, 4);
	submit_expect(&ring, 1);
	reap_print(&ring, 1);
	cancel(4, 5);
	submit_expect(&ring, 1);
	reap_print(&ring, 1);

	note("cancel all reads on one fd");
	pipe_read(p[0], b1, 10);
	pipe_read(p[0], b2, 11);
	pipe_read(p[0], b3, 12);
	submit_expect(&ring, 3);
	expect_no_cqe(&ring, "three pending reads");
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_cancel_fd(sqe, p[0], IORING_ASYNC_CANCEL_ALL);
	sqe->user_data = 13;
	submit_expect(&ring, 1);
	reap_print_sorted(&ring, 4);

	note("cancel by fd when nothing is pending on it");
	sqe = get_sqe(&ring);
	io_uring_prep_cancel_fd(sqe, p[0], 0);
	sqe->user_data = 14;
	submit_expect(&ring, 1);
	reap_print(&ring, 1);

	close(p[0]);
	close(p[1]);
	io_uring_queue_exit(&ring);
	return 0;
}
