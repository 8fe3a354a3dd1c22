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
 * Then the other side: a wait on the closed fd made long after the
 * completion came (the program had every chance to see it) is the kernel's
 * -EBADF, not a wait that bufsel ends.
 */
#include "test/prog/cqe_print.h"

#include <pthread.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
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

	struct io_uring ring;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		die("socketpair: %s", strerror(errno));
	int ret = io_uring_queue_init(4, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	char buf[16];
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_recv(sqe, sv[0], buf, sizeof(buf), 0);
	sqe->user_data = 8;
	if (io_uring_submit(&ring) != 1)
		die("submit");
	if (write(sv[1], "late", 4) != 4)
		die("send: %s", strerror(errno));
	struct timespec ts = { 0, 100 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	if (close(ring.ring_fd))
		die("close of the ring fd: %s", strerror(errno));
	long lret = syscall(__NR_io_uring_enter, ring.ring_fd, 0, 1, IORING_ENTER_GETEVENTS, NULL, 0);
	note("a wait on the closed fd 100 ms after the completion came: %ld (%s)", lret,
	     lret < 0 ? strerror(errno) : "ok");
	printf("cq ready %u\n", io_uring_cq_ready(&ring));
	io_uring_queue_exit(&ring);
	close(sv[0]);
	close(sv[1]);
	return bad ? 1 : 0;
}
