/*
 * A ring whose fd another thread closes while the ring is still mapped: the
 * mapping keeps the ring, and the kernel goes on posting completions into the
 * program's CQ.  One thread waits for a receive; the other sends its data,
 * closes the ring's fd and only then lets the first go on (liburing's socket
 * test does the same by accident: its sender closes a direct descriptor's
 * index, which is the receiver's ring fd).  Natively the completion is in the
 * CQ before the waiter looks, so io_uring_wait_cqe finds it without entering;
 * under bufsel it must too, or the wait's enter on the closed fd fails with
 * -EBADF.  Each round uses a new ring, set up when the previous one's fd
 * number is free again.
 */
#include "test/prog/cqe_print.h"

#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#define ROUNDS 200

struct round {
	struct io_uring ring;
	int sv[2];
	int go[2];
	int closed;
};

static void *sender(void *arg)
{
	struct round *rd = arg;
	if (write(rd->sv[1], "hello", 5) != 5)
		die("send: %s", strerror(errno));
	rd->closed = close(rd->ring.ring_fd);
	if (write(rd->go[1], "g", 1) != 1)
		die("go: %s", strerror(errno));
	return NULL;
}

int main(void)
{
	unsigned ok = 0, bad = 0;
	for (int i = 0; i < ROUNDS; i++) {
		struct round rd = { 0 };
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, rd.sv) || pipe(rd.go))
			die("socketpair/pipe: %s", strerror(errno));
		int ret = io_uring_queue_init(4, &rd.ring, 0);
		if (ret < 0)
			die("queue_init: %s", strerror(-ret));
		char buf[16] = { 0 };
		struct io_uring_sqe *sqe = get_sqe(&rd.ring);
		io_uring_prep_recv(sqe, rd.sv[0], buf, sizeof(buf), 0);
		sqe->user_data = 7;
		if (io_uring_submit(&rd.ring) != 1)
			die("submit");
		pthread_t t;
		if (pthread_create(&t, NULL, sender, &rd))
			die("pthread_create");
		char g;
		if (read(rd.go[0], &g, 1) != 1)
			die("go: %s", strerror(errno));
		struct io_uring_cqe *cqe = NULL;
		ret = io_uring_wait_cqe(&rd.ring, &cqe);
		if (!ret && cqe->user_data == 7 && cqe->res == 5 && !memcmp(buf, "hello", 5)) {
			ok++;
			io_uring_cqe_seen(&rd.ring, cqe);
		} else if (bad++ < 3) {
			note("round %d: wait_cqe %d (%s), res %d", i, ret, ret ? strerror(-ret) : "ok",
			     ret ? 0 : cqe->res);
		}
		pthread_join(t, NULL);
		if (rd.closed)
			die("close of the ring fd: %s", strerror(errno));
		/* Unmaps the ring; its close of the number already closed fails. */
		io_uring_queue_exit(&rd.ring);
		close(rd.sv[0]);
		close(rd.sv[1]);
		close(rd.go[0]);
		close(rd.go[1]);
	}
	note("%d rounds: the receive's 5 bytes found by wait_cqe in %u, not in %u", ROUNDS, ok, bad);
	return bad ? 1 : 0;
}
