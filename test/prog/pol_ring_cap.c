/*
 * The script behind the ring cap test (test/integration/policy.c): a buffer
 * ring of 16 buffers on group 1 and 12 receives pending on 12 idle sockets;
 * then each socket gets 4 bytes, and the 12 CQEs are reaped.  The program
 * gives no buffer back before it has all 12, so natively every receive gets
 * one; with a cap of 8 (BUFSEL_GROUP_1_CAP=8) eight do and four fail with
 * -ENOBUFS.  The CQEs are printed in user_data order, their bids not at all
 * (which receive binds first is the scheduler's), and a last line counts
 * them.
 */
#include "test/prog/bs_rings.h"

#include <sys/socket.h>

#define N 12

static struct io_uring ring;

int main(void)
{
	int ret = io_uring_queue_init(32, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	struct arena a = arena_new(64, 16);
	struct io_uring_buf_ring *br = ring_new(ring.ring_fd, 1, 16);
	ring_add(br, 16, &a, 0, 16);
	int sv[N][2];
	for (int i = 0; i < N; i++) {
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i]) < 0)
			die("socketpair: %s", strerror(errno));
		prep_recv_sel(&ring, sv[i][0], 0, 0, 1, (unsigned long long)i + 1);
	}
	submit_expect(&ring, N);
	expect_pending(&ring, "12 receives on idle sockets");
	for (int i = 0; i < N; i++)
		write_all(sv[i][1], "data", 4);
	struct io_uring_cqe c[N];
	reap(&ring, c, N);
	qsort(c, N, sizeof(c[0]), cqe_cmp_ud);
	int got = 0, enobufs = 0;
	for (int i = 0; i < N; i++) {
		printf("cqe ud=%llu res=%d buffer=%s\n", (unsigned long long)c[i].user_data, c[i].res,
		       yesno(c[i].flags & IORING_CQE_F_BUFFER));
		got += c[i].res == 4;
		enobufs += c[i].res == -ENOBUFS;
	}
	note("%d received, %d -ENOBUFS", got, enobufs);
	io_uring_queue_exit(&ring);
	return 0;
}
