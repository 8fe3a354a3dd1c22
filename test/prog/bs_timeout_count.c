/*
 * TIMEOUTs with a completion count (sqe->off), on a ring where bufsel
 * answers some SQEs itself (PROVIDE_BUFFERS) and serves a buffer-select
 * RECV with requests of its own whose CQEs the program never sees.  The
 * kernel counts the CQEs the program gets; so must the count.
 *  1. PROVIDE_BUFFERS and a TIMEOUT for 1 completion in one submission: the
 *     TIMEOUT completes with 0 at once, after the PROVIDE's CQE.
 *  2. A TIMEOUT for 2, then a NOP, then a PROVIDE: 0 after the PROVIDE.
 *  3. A buffer-select RECV and a TIMEOUT for 1, data 50 ms later: the RECV's
 *     CQE, then the TIMEOUT's 0.
 *  4. A TIMEOUT for 3 that gets 1: -ETIME after 100 ms.
 *  5. TIMEOUT_REMOVE of a counting TIMEOUT by user_data: 0 and -ECANCELED
 *     (sorted: which comes first is the kernel's, tmo_remove_order).
 *  6. A counting TIMEOUT with IOSQE_CQE_SKIP_SUCCESS reaches its count: no
 *     CQE, and a TIMEOUT_REMOVE then finds nothing (-ENOENT).
 *  7. liburing's io_uring_submit_and_wait_timeout without EXT_ARG (a 100 ms
 *     TIMEOUT for 1 beside a PROVIDE), then, 150 ms later, a wait for a
 *     NOP: the TIMEOUT completed with the PROVIDE, so the wait gets the NOP.
 * Prints the CQEs in the order the ring delivered them, but for 5.
 */
#include "test/prog/cqe_print.h"

#include <pthread.h>
#include <sys/socket.h>
#include <time.h>

#define BUFLEN 64

static char bufs[16][BUFLEN];
static int tx;

static void provide(struct io_uring *ring, unsigned bid, unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(ring);
	io_uring_prep_provide_buffers(sqe, bufs[bid], BUFLEN, 1, 7, (int)bid);
	sqe->user_data = ud;
}

static void timeout(struct io_uring *ring, struct __kernel_timespec *ts, unsigned count,
		    unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(ring);
	io_uring_prep_timeout(sqe, ts, count, 0);
	sqe->user_data = ud;
}

static void nop(struct io_uring *ring, unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = ud;
}

static void timeout_remove(struct io_uring *ring, unsigned long long target, unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(ring);
	io_uring_prep_timeout_remove(sqe, target, 0);
	sqe->user_data = ud;
	submit_expect(ring, 1);
}

/* What a liburing wait call returned, and its CQE if it gave one. */
static void wait_print(struct io_uring *ring, const char *what, int ret, struct io_uring_cqe *cqe)
{
	printf("7: %s = %d\n", what, ret);
	if (ret >= 0 && cqe) {
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
	tx = sv[1];
	struct __kernel_timespec long_ts = { .tv_sec = 5, .tv_nsec = 0 };
	struct __kernel_timespec short_ts = { .tv_sec = 0, .tv_nsec = 100 * 1000 * 1000 };

	note("1: PROVIDE and a TIMEOUT for 1 in one submission");
	provide(&ring, 0, 1);
	timeout(&ring, &long_ts, 1, 2);
	submit_expect(&ring, 2);
	reap_print(&ring, 2);

	note("2: TIMEOUT for 2, NOP, PROVIDE");
	timeout(&ring, &long_ts, 2, 3);
	submit_expect(&ring, 1);
	nop(&ring, 4);
	submit_expect(&ring, 1);
	provide(&ring, 1, 5);
	submit_expect(&ring, 1);
	reap_print(&ring, 3);

	note("3: a buffer-select RECV and a TIMEOUT for 1");
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_recv(sqe, sv[0], NULL, BUFLEN, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 7;
	sqe->user_data = 6;
	timeout(&ring, &long_ts, 1, 7);
	submit_expect(&ring, 2);
	pthread_t writer;
	if (pthread_create(&writer, NULL, hello_in_50ms, &tx))
		die("pthread_create");
	reap_print(&ring, 2);
	pthread_join(writer, NULL);

	note("4: a TIMEOUT for 3 that gets 1");
	timeout(&ring, &short_ts, 3, 8);
	nop(&ring, 9);
	submit_expect(&ring, 2);
	reap_print(&ring, 2);

	note("5: TIMEOUT_REMOVE of a counting TIMEOUT");
	timeout(&ring, &long_ts, 1, 10);
	submit_expect(&ring, 1);
	timeout_remove(&ring, 10, 11);
	reap_print_sorted(&ring, 2);	/* their order is the kernel's: tmo_remove_order */

	note("6: a counting TIMEOUT with CQE_SKIP_SUCCESS");
	timeout(&ring, &long_ts, 1, 12);
	ring.sq.sqes[(ring.sq.sqe_tail - 1) & ring.sq.ring_mask].flags |= IOSQE_CQE_SKIP_SUCCESS;
	submit_expect(&ring, 1);
	nop(&ring, 13);
	submit_expect(&ring, 1);
	reap_print(&ring, 1);
	timeout_remove(&ring, 12, 14);
	reap_print(&ring, 1);

	note("7: submit_and_wait_timeout without EXT_ARG, then a later wait");
	ring.features &= ~IORING_FEAT_EXT_ARG;
	provide(&ring, 2, 15);
	struct io_uring_cqe *cqe = NULL;
	int ret = io_uring_submit_and_wait_timeout(&ring, &cqe, 1, &short_ts, NULL);
	wait_print(&ring, "submit_and_wait_timeout", ret, cqe);
	struct timespec pause = { 0, 150 * 1000 * 1000 };
	nanosleep(&pause, NULL);
	nop(&ring, 16);
	submit_expect(&ring, 1);
	ret = io_uring_wait_cqe_timeout(&ring, &cqe, &long_ts);
	wait_print(&ring, "wait_cqe_timeout", ret, cqe);
	io_uring_queue_exit(&ring);
	return 0;
}
