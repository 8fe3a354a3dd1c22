/*
 * Reaping without waiting, as busy-polling programs do: a pipe read made
 * ready by write(2), then only io_uring_peek_cqe in a loop. Natively the
 * completion runs as task work when write returns, so peek sees it without
 * the program calling io_uring_enter; a shadow CQ only fills if bufsel makes
 * liburing's peek enter (or moves completions by itself). NOPs reaped with
 * io_uring_peek_batch_cqe after a submit follow the same path.
 * Loops are bounded (2 s) so a completion that never shows fails the test.
 */
#include "test/prog/cqe_print.h"

#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int p[2];
	if (pipe(p) < 0)
		die("pipe: %s", strerror(errno));

	note("peek loop on a pipe read");
	char buf[8] = { 0 };
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, p[0], buf, sizeof(buf) - 1, 0);
	sqe->user_data = 1;
	submit_expect(&ring, 1);
	expect_no_cqe(&ring, "read before write");
	if (write(p[1], "spin", 4) != 4)
		die("write: %s", strerror(errno));
	struct io_uring_cqe *cqe;
	double end = now() + 2;
	while ((ret = io_uring_peek_cqe(&ring, &cqe)) == -EAGAIN && now() < end)
		;
	if (ret < 0)
		die("peek never saw the read: %d", ret);
	cqe_print(cqe);
	io_uring_cqe_seen(&ring, cqe);
	note("read \"%s\"", buf);

	note("peek_batch after submitting nops");
	for (unsigned i = 0; i < 5; i++) {
		sqe = get_sqe(&ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = 10 + i;
	}
	submit_expect(&ring, 5);
	struct io_uring_cqe *batch[8];
	unsigned got = 0;
	end = now() + 2;
	while (got < 5 && now() < end) {
		unsigned n = io_uring_peek_batch_cqe(&ring, batch, 8);
		for (unsigned i = 0; i < n; i++)
			cqe_print(batch[i]);
		io_uring_cq_advance(&ring, n);
		got += n;
	}
	note("peek_batch collected %u", got);
	if (got != 5)
		die("wanted 5 completions");

	io_uring_queue_exit(&ring);
	close(p[0]);
	close(p[1]);
	return 0;
}
