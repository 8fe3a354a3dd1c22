/*
 * A timed wait for several completions of a buffer-select multishot RECV
 * (legacy provided buffers) ends when they are there, not at the timeout.
 * bufsel serves such a receive with requests of its own whose CQEs the
 * program never sees; a wait that asked the kernel for as many CQEs as the
 * program wants could only end at its timeout, and a wait made in several
 * rounds must not restart the program's timeout each round.
 * Another thread sends four messages 5 ms apart; the wait asks for 4 with a
 * 3 s timeout.  Times are printed only against bounds far apart.
 */
#include "test/prog/cqe_print.h"

#include <pthread.h>
#include <sys/socket.h>
#include <time.h>

#define NBUF 8
#define BUFLEN 64

static int tx;

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void *sender(void *arg)
{
	(void)arg;
	for (int i = 0; i < 4; i++) {
		struct timespec ts = { 0, 5 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		char msg[8];
		int n = snprintf(msg, sizeof(msg), "msg%d", i);
		if (send(tx, msg, (size_t)n, 0) != n)
			return (void *)1;
	}
	return NULL;
}

int main(void)
{
	static char bufs[NBUF][BUFLEN];
	struct io_uring ring;
	int sv[2];
	if (io_uring_queue_init(8, &ring, 0) || socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv))
		return 1;
	tx = sv[1];

	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_provide_buffers(sqe, bufs, BUFLEN, NBUF, 7, 0);
	sqe->user_data = 1;
	submit_expect(&ring, 1);
	reap_print(&ring, 1);

	sqe = get_sqe(&ring);
	io_uring_prep_recv_multishot(sqe, sv[0], NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 7;
	sqe->user_data = 2;
	submit_expect(&ring, 1);

	pthread_t t;
	pthread_create(&t, NULL, sender, NULL);
	struct __kernel_timespec ts = { .tv_sec = 3, .tv_nsec = 0 };
	struct io_uring_cqe *cqe;
	long long t0 = now_ms();
	int ret = io_uring_wait_cqes(&ring, &cqe, 4, &ts, NULL);
	long long dt = now_ms() - t0;
	pthread_join(t, NULL);
	printf("wait for 4: ret=%d ready=%u %s\n", ret, io_uring_cq_ready(&ring),
	       dt < 1500 ? "when they came" : "at the timeout");
	unsigned head, n = 0;
	io_uring_for_each_cqe(&ring, head, cqe) {
		cqe_print(cqe);
		if (cqe->flags & IORING_CQE_F_BUFFER)
			printf("  data %.*s\n", cqe->res, bufs[cqe->flags >> IORING_CQE_BUFFER_SHIFT]);
		n++;
	}
	io_uring_cq_advance(&ring, n);
	io_uring_queue_exit(&ring);
	return 0;
}
