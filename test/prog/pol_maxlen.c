/*
 * The script behind the max_len tests (test/integration/policy.c): selected
 * buffers of 16 bytes, with 80 bytes queued in a pipe and 16 in a socket.
 * Natively every request gets what it asks for, up to the buffer; under
 * BUFSEL_GROUP_1_MAX_LEN=5 at most 5 bytes, the next bytes of the stream.
 *  - READ len 16, twice, and len 0 (the whole buffer);
 *  - READ len 3, below the limit: 3 bytes either way;
 *  - READV with iov_len 16;
 *  - RECV len 0 on an AF_UNIX stream socket, whose F_SOCK_NONEMPTY says
 *    whether bytes stayed queued.
 * The pipe and the socket are never drained, so nothing here waits.
 */
#include "test/prog/bs_bufs.h"

#include <sys/uio.h>

static struct io_uring ring;

int main(void)
{
	int ret = io_uring_queue_init(16, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int p[2], sv[2];
	if (pipe(p) < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		die("pipe/socketpair: %s", strerror(errno));
	write_all(p[1], "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+/<>()[]{}!?=~;:,.", 80);
	write_all(sv[1], "socket-data-0123", 16);

	note("group 1: 8 buffers of 16");
	struct arena a = arena_new(16, 8);
	provide(&ring, &a, 1, 0, 8, 1);
	note("READ len 16, twice");
	run_one(&ring, prep_read_sel(&ring, p[0], 16, 1, 0, 0), 2, &a);
	run_one(&ring, prep_read_sel(&ring, p[0], 16, 1, 0, 0), 3, &a);
	note("READ len 0: the whole buffer");
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 1, 0, 0), 4, &a);
	note("READ len 3");
	run_one(&ring, prep_read_sel(&ring, p[0], 3, 1, 0, 0), 5, &a);
	note("READV iov_len 16");
	struct iovec iov = { NULL, 16 };
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_readv(sqe, p[0], &iov, 1, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 1;
	run_one(&ring, sqe, 6, &a);
	note("RECV len 0 on a socket holding 16 bytes");
	run_one(&ring, prep_recv_sel(&ring, sv[0], 0, 0, 1, 0), 7, &a);

	close(p[0]);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
	io_uring_queue_exit(&ring);
	return 0;
}
