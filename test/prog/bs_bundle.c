/*
 * A bundle SEND (IORING_RECVSEND_BUNDLE) on a legacy provided-buffer group,
 * over TCP on 127.0.0.1: 6.18 sends one legacy buffer per pass and posts a
 * CQE for each, IORING_CQE_F_MORE on all but the one whose selection
 * emptied the group; the peer gets the buffers' bytes in bid order.  On an
 * empty group the bundle ends at once with -ENOBUFS; a bundle without
 * IOSQE_BUFFER_SELECT is -EINVAL.  A link behind the bundle runs after it.
 */
#include "test/prog/bs_bufs.h"

#ifndef IORING_RECVSEND_BUNDLE
#define IORING_RECVSEND_BUNDLE (1U << 4)
#endif

static struct io_uring ring;

static struct io_uring_sqe *send_bundle(int fd, unsigned bgid, int select, unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_send(sqe, fd, NULL, 0, 0);
	sqe->ioprio |= IORING_RECVSEND_BUNDLE;
	if (select)
		sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = (__u16)bgid;
	sqe->user_data = ud;
	return sqe;
}

static void peer_read(int fd, unsigned n)
{
	char buf[256];
	unsigned got = 0;
	while (got < n) {
		ssize_t r = recv(fd, buf + got, n - got, 0);
		if (r <= 0)
			die("recv: %s", strerror(errno));
		got += (unsigned)r;
	}
	note_data("peer got", buf, (int)got);
}

int main(void)
{
	int ret = io_uring_queue_init(16, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int a, b;
	tcp_pair(&a, &b);

	note("8 buffers of 16 bytes: 8 CQEs, F_MORE on the first 7");
	struct arena g = arena_new(16, 8);
	for (unsigned i = 0; i < 8; i++)
		memset(arena_buf(&g, i), 'A' + (int)i, 16);
	provide(&ring, &g, 1, 0, 8, 1);
	send_bundle(a, 1, 1, 2);
	submit_expect(&ring, 1);
	for (int i = 0; i < 8; i++)
		reap_print(&ring, 1);
	peer_read(b, 128);

	note("the group is empty now: -ENOBUFS at once");
	send_bundle(a, 1, 1, 3);
	submit_expect(&ring, 1);
	reap_print(&ring, 1);

	note("no IOSQE_BUFFER_SELECT: -EINVAL");
	send_bundle(a, 1, 0, 4);
	submit_expect(&ring, 1);
	reap_print(&ring, 1);

	note("3 buffers, a NOP linked behind the bundle runs after its last CQE");
	provide(&ring, &g, 2, 0, 3, 5);
	send_bundle(a, 2, 1, 6)->flags |= IOSQE_IO_LINK;
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 7;
	submit_expect(&ring, 2);
	reap_print(&ring, 4);
	peer_read(b, 48);
	io_uring_queue_exit(&ring);
	return 0;
}
