/*
 * A read that cannot complete at submit time: READ on an empty pipe stays
 * pending (no CQE, even after a bounded wait), completes when data is written
 * with plain write(2), and a read larger than the data returns what is there.
 * Then a pending read completes with 0 when the write end is closed.
 */
#include "test/prog/cqe_print.h"

#include <unistd.h>

static void expect_pending(struct io_uring *ring, const char *what)
{
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = { .tv_sec = 0, .tv_nsec = 50 * 1000 * 1000 };
	int ret = io_uring_wait_cqe_timeout(ring, &cqe, &ts);
	if (ret != -ETIME)
		die("%s: wait returned %d, wanted -ETIME", what, ret);
	note("%s: still pending", what);
}

int main(void)
{
	struct io_uring ring;
	int p[2];
	if (pipe(p) < 0)
		die("pipe: %s", strerror(errno));
	note("pipe fds %d %d", p[0], p[1]);
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));

	char buf[64] = { 0 };
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, p[0], buf, sizeof(buf), 0);
	sqe->user_data = 1;
	submit_expect(&ring, 1);
	expect_pending(&ring, "read on empty pipe");

	if (write(p[1], "ping", 4) != 4)
		die("write: %s", strerror(errno));
	reap_print(&ring, 1);
	note("read got \"%s\"", buf);

	note("two reads queued, one write of 10 bytes");
	char a[6] = { 0 }, b[6] = { 0 };
	sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, p[0], a, 5, 0);
	sqe->user_data = 2;
	sqe->flags |= IOSQE_IO_LINK;
	sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, p[0], b, 5, 0);
	sqe->user_data = 3;
	submit_expect(&ring, 2);
	expect_pending(&ring, "linked reads");
	if (write(p[1], "abcdefghij", 10) != 10)
		die("write: %s", strerror(errno));
	reap_print_sorted(&ring, 2);
	note("reads got \"%s\" \"%s\"", a, b);

	note("pending read, then the write end is closed");
	sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, p[0], buf, sizeof(buf), 0);
	sqe->user_data = 4;
	submit_expect(&ring, 1);
	expect_pending(&ring, "read before close");
	close(p[1]);
	reap_print(&ring, 1);

	io_uring_queue_exit(&ring);
	close(p[0]);
	return 0;
}
