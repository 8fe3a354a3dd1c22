/*
 * io_recvmsg_prep (RECV and RECVMSG) refuses a non-zero addr2 with -EINVAL
 * before anything else: before the msghdr is read (a bad one would be
 * -EFAULT) and before the file is looked at (a pipe would be -ENOTSOCK).
 * No buffer is taken.
 */
#include "test/prog/bs_bufs.h"

static struct io_uring ring;

int main(void)
{
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int p[2];
	if (pipe(p))
		die("pipe: %s", strerror(errno));
	struct arena g = arena_new(4, 2);
	provide(&ring, &g, 1, 0, 2, 1);

	note("RECV with BUFFER_SELECT on a pipe, addr2 set");
	struct io_uring_sqe *sqe = prep_recv_sel(&ring, p[0], 0, 0, 1, 2);
	sqe->addr2 = 0x1234;
	run_one(&ring, sqe, 2, &g);

	note("RECVMSG with BUFFER_SELECT, msghdr at a bad address, addr2 set");
	sqe = get_sqe(&ring);
	io_uring_prep_recvmsg(sqe, p[0], (struct msghdr *)8, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 1;
	sqe->addr2 = 1;
	run_one(&ring, sqe, 3, &g);

	note("the group keeps both buffers");
	remove_bufs(&ring, 1, 8, 4);
	io_uring_queue_exit(&ring);
	return 0;
}
