/*
 * A SEND with IOSQE_BUFFER_SELECT selects through io_buffers_select (6.18),
 * which says -ENOENT for a group that has no list, where the legacy
 * io_buffer_select (READ, RECV) says -ENOBUFS.  An emptied group still has
 * its list: -ENOBUFS.  Plain and bundle SEND alike.
 */
#include "test/prog/bs_bufs.h"

#ifndef IORING_RECVSEND_BUNDLE
#define IORING_RECVSEND_BUNDLE (1U << 4)
#endif

static struct io_uring ring;

static struct io_uring_sqe *send_sel(int fd, unsigned bgid, int bundle)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_send(sqe, fd, NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = (__u16)bgid;
	if (bundle)
		sqe->ioprio |= IORING_RECVSEND_BUNDLE;
	return sqe;
}

int main(void)
{
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		die("socketpair: %s", strerror(errno));
	struct arena g = arena_new(4, 1);

	note("SEND, group 7 never provided");
	run_one(&ring, send_sel(sv[0], 7, 0), 1, NULL);
	note("bundle SEND, group 7 never provided");
	run_one(&ring, send_sel(sv[0], 7, 1), 2, NULL);
	note("READ, group 7 never provided");
	run_one(&ring, prep_read_sel(&ring, sv[1], 0, 7, 0, 3), 3, NULL);

	provide(&ring, &g, 1, 0, 1, 4);
	remove_bufs(&ring, 1, 1, 5);
	note("SEND, group 1 emptied");
	run_one(&ring, send_sel(sv[0], 1, 0), 6, NULL);
	io_uring_queue_exit(&ring);
	return 0;
}
