/*
 * A ring of one SQ entry (two CQ entries) on legacy provided buffers: the
 * smallest ring bufsel shadows.  Its completions that bufsel posts itself
 * (a bundle SEND's CQEs, one per buffer) go through the ring's reserve of
 * CQEs, which must be laid out for a CQE's alignment whatever the SQ size
 * (a sanitizer build checks that).
 */
#include "test/prog/bs_bufs.h"

#ifndef IORING_RECVSEND_BUNDLE
#define IORING_RECVSEND_BUNDLE (1U << 4)
#endif

int main(void)
{
	struct io_uring ring;
	int ret = io_uring_queue_init(1, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int a, b;
	tcp_pair(&a, &b);
	struct arena g = arena_new(8, 2);
	memcpy(arena_buf(&g, 0), "01234567", 8);
	memcpy(arena_buf(&g, 1), "abcdefgh", 8);
	provide(&ring, &g, 1, 0, 2, 1);
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_send(sqe, a, NULL, 0, 0);
	sqe->ioprio |= IORING_RECVSEND_BUNDLE;
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 1;
	sqe->user_data = 2;
	submit_expect(&ring, 1);
	reap_print(&ring, 2);
	char buf[16];
	unsigned got = 0;
	while (got < 16) {
		ssize_t n = recv(b, buf + got, 16 - got, 0);
		if (n <= 0)
			die("recv: %s", strerror(errno));
		got += (unsigned)n;
	}
	note_data("peer got", buf, 16);
	note("a read on the empty group: -ENOBUFS");
	int p[2];
	if (pipe(p))
		die("pipe: %s", strerror(errno));
	if (write(p[1], "x", 1) != 1)
		die("write: %s", strerror(errno));
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 1, 0, 3), 3, &g);
	io_uring_queue_exit(&ring);
	return 0;
}
