/*
 * Completions that reach the CQ while the program is not in io_uring_enter,
 * read the way liburing's own tests read them: CQ memory only, no system
 * call that could let bufsel in, no look at IORING_SQ_TASKRUN.
 *  - another thread writes to a pipe a READ waits on: natively task work
 *    interrupts the spinning thread and posts the CQE;
 *  - a NOP submitted on one ring completes a POLL_ADD another ring has on
 *    the first ring's fd: natively that CQE is in the second ring's CQ when
 *    the submit returns;
 *  - a buffer-select RECV (legacy provided buffers) another thread's send
 *    completes, while this one spins: bufsel's thread receives it;
 * (IORING_SQ_TASKRUN is not printed: the kernel never sets it on these
 * rings, bufsel shows it on every ring but DEFER_TASKRUN ones, README.)
 * Loops are bounded (3 s): a completion that never shows fails the test.
 */
#include "test/prog/cqe_print.h"

#include <poll.h>
#include <sys/socket.h>
#include <pthread.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CQ memory only: io_uring_cq_ready reads the tail, nothing else. */
static int spin_for(struct io_uring *ring, unsigned want, double secs)
{
	double end = now() + secs;
	while (io_uring_cq_ready(ring) < want)
		if (now() > end)
			return -1;
	return 0;
}

static void print_all(struct io_uring *ring, const char *what)
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;
	io_uring_for_each_cqe(ring, head, cqe) {
		printf("%s: ", what);
		cqe_print(cqe);
		n++;
	}
	io_uring_cq_advance(ring, n);
}

static int pipe_w, sock_w;

static void *late_writer(void *arg)
{
	int fd = *(int *)arg;
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	if (write(fd, "data", 4) != 4)
		return (void *)1;
	return NULL;
}

int main(void)
{
	struct io_uring a, b;
	char buf[16];
	int p[2];
	if (io_uring_queue_init(8, &a, 0) || io_uring_queue_init(8, &b, 0) || pipe(p))
		return 1;
	pipe_w = p[1];

	/* 1: a READ another thread completes, while this one spins. */
	struct io_uring_sqe *sqe = io_uring_get_sqe(&a);
	io_uring_prep_read(sqe, p[0], buf, sizeof(buf), 0);
	sqe->user_data = 1;
	if (io_uring_submit(&a) != 1)
		return 1;
	pthread_t t;
	pthread_create(&t, NULL, late_writer, &pipe_w);
	int seen = !spin_for(&a, 1, 3.0);
	pthread_join(t, NULL);
	printf("read completed by another thread's write, seen without entering: %s\n",
	       seen ? "yes" : "no");
	if (seen)
		print_all(&a, "ring a");

	/* 2: ring b polls ring a's fd; a NOP on ring a completes the poll. */
	sqe = io_uring_get_sqe(&b);
	io_uring_prep_poll_add(sqe, a.ring_fd, POLLIN);
	sqe->user_data = 2;
	if (io_uring_submit(&b) != 1)
		return 1;
	printf("ring b before the NOP: %u ready\n", io_uring_cq_ready(&b));
	sqe = io_uring_get_sqe(&a);
	io_uring_prep_nop(sqe);
	sqe->user_data = 3;
	if (io_uring_submit(&a) != 1)
		return 1;
	/* No spinning here: natively the CQE is there when submit returns. */
	printf("ring b right after ring a's submit: %u ready\n", io_uring_cq_ready(&b));
	spin_for(&b, 1, 3.0);
	spin_for(&a, 1, 3.0);
	print_all(&b, "ring b");
	print_all(&a, "ring a");

	/* 3: a buffer-select RECV another thread's send completes. */
	static char bufs[2][16];
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 1;
	sock_w = sv[1];
	sqe = io_uring_get_sqe(&a);
	io_uring_prep_provide_buffers(sqe, bufs, sizeof(bufs[0]), 2, 5, 0);
	sqe->user_data = 4;
	sqe = io_uring_get_sqe(&a);
	io_uring_prep_recv(sqe, sv[0], NULL, sizeof(bufs[0]), 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 5;
	sqe->user_data = 5;
	if (io_uring_submit(&a) != 2)
		return 1;
	pthread_create(&t, NULL, late_writer, &sock_w);
	seen = !spin_for(&a, 2, 3.0);
	pthread_join(t, NULL);
	printf("buffer-select recv completed by another thread's send, seen without entering: %s\n",
	       seen ? "yes" : "no");
	print_all(&a, "ring a");

	io_uring_queue_exit(&b);
	io_uring_queue_exit(&a);
	return 0;
}
