/*
 * Waits bounded by a TIMEOUT SQE, as liburing makes them on kernels without
 * IORING_ENTER_EXT_ARG (before 5.11; here by clearing the feature bit), with
 * a buffer-select RECV (legacy provided buffers) in flight, which bufsel
 * serves with requests of its own.
 *  1. No data: a wait for 8 CQEs ends when the TIMEOUT fires, although the
 *     kernel's CQ gets more than the program sees.
 *  2. Data comes during a wait for 1 (io_uring_wait_cqe_timeout): the wait
 *     ends with the RECV's CQE, well before the TIMEOUT.
 * Prints what liburing returned and the CQEs.
 */
#include "test/prog/cqe_print.h"

#include <pthread.h>
#include <sys/socket.h>
#include <time.h>

#define NBUF 4
#define BUFLEN 64

static char bufs[NBUF][BUFLEN];
static int tx;
static pthread_t writer;

static void recv_select(struct io_uring *ring, int fd, unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(ring);
	io_uring_prep_recv(sqe, fd, NULL, BUFLEN, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 7;
	sqe->user_data = ud;
	submit_expect(ring, 1);
}

/* wait_cqes for 8 with a 200 ms TIMEOUT SQE; prints its result and then
 * every CQE there is. */
static void wait_eight(struct io_uring *ring, const char *what)
{
	struct __kernel_timespec ts = { .tv_sec = 0, .tv_nsec = 200 * 1000 * 1000 };
	struct io_uring_cqe *cqe = NULL;
	int ret = io_uring_wait_cqes(ring, &cqe, 8, &ts, NULL);
	printf("%s: wait_cqes(8) = %d, %u ready\n", what, ret, io_uring_cq_ready(ring));
	while (io_uring_peek_cqe(ring, &cqe) == 0) {
		cqe_print(cqe);
		io_uring_cqe_seen(ring, cqe);
	}
}

int main(void)
{
	struct io_uring ring;
	int sv[2];
	if (io_uring_queue_init(16, &ring, 0) || socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 1;
	ring.features &= ~IORING_FEAT_EXT_ARG;
	tx = sv[1];

	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_provide_buffers(sqe, bufs, BUFLEN, NBUF, 7, 0);
	sqe->user_data = 1;
	submit_expect(&ring, 1);
	reap_print(&ring, 1);

	recv_select(&ring, sv[0], 2);
	wait_eight(&ring, "1");

	/* Data 50 ms into the wait, well inside its 200 ms. */
	if (pthread_create(&writer, NULL, hello_in_50ms, &tx))
		die("pthread_create");
	struct __kernel_timespec ts = { .tv_sec = 2, .tv_nsec = 0 };
	struct io_uring_cqe *cqe = NULL;
	int ret = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
	printf("2: wait_cqe_timeout = %d\n", ret);
	if (ret >= 0 && cqe) {
		cqe_print(cqe);
		io_uring_cqe_seen(&ring, cqe);
	}
	pthread_join(writer, NULL);
	io_uring_queue_exit(&ring);
	return 0;
}
