/*
 * CQ overflow without loss (IORING_FEAT_NODROP): a ring with a 4-entry CQ
 * gets 16 NOPs in four submits and no reaping. The kernel parks what does
 * not fit, raises IORING_SQ_CQ_OVERFLOW in the SQ flags, and hands the
 * backlog over, in order, as the program frees CQ space; the dropped counter
 * (*cq.koverflow) stays 0 because nothing was dropped. A shadow ring has to
 * reproduce all of that, including the flag the program can see.
 */
#include "test/prog/cqe_print.h"

int main(void)
{
	struct io_uring ring;
	struct io_uring_params p = { .flags = IORING_SETUP_CQSIZE, .cq_entries = 4 };
	int ret = io_uring_queue_init_params(4, &ring, &p);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	note("sq %u cq %u nodrop %d", p.sq_entries, p.cq_entries, !!(p.features & IORING_FEAT_NODROP));

	int overflow_seen = 0;
	for (unsigned s = 0; s < 4; s++) {
		for (unsigned i = 0; i < 4; i++) {
			struct io_uring_sqe *sqe = get_sqe(&ring);
			io_uring_prep_nop(sqe);
			sqe->user_data = 1 + s * 4 + i;
		}
		note("submit %u returned %d", s, io_uring_submit(&ring));
		if (IO_URING_READ_ONCE(*ring.sq.kflags) & IORING_SQ_CQ_OVERFLOW)
			overflow_seen = 1;
	}
	note("cq ready before reaping %u", io_uring_cq_ready(&ring));
	note("IORING_SQ_CQ_OVERFLOW seen %d", overflow_seen);

	/* Bounded waits: a lost completion must fail the test, not hang it. */
	struct io_uring_cqe got[32];
	unsigned n = 0;
	for (;;) {
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = { .tv_nsec = 200 * 1000 * 1000 };
		ret = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
		if (ret == -ETIME)
			break;
		if (ret < 0)
			die("wait: %s", strerror(-ret));
		if (n == 32)
			die("more than 32 completions");
		got[n++] = *cqe;
		io_uring_cqe_seen(&ring, cqe);
	}
	note("reaped %u", n);
	for (unsigned i = 0; i < n; i++)
		cqe_print(&got[i]);
	note("koverflow %u", IO_URING_READ_ONCE(*ring.cq.koverflow));
	note("IORING_SQ_CQ_OVERFLOW still set %d",
	     !!(IO_URING_READ_ONCE(*ring.sq.kflags) & IORING_SQ_CQ_OVERFLOW));
	if (n != 16)
		die("reaped %u completions, wanted 16", n);
	for (unsigned i = 0; i < n; i++)
		if (got[i].user_data != i + 1 || got[i].res != 0)
			die("completion %u out of order", i);

	note("the ring still works");
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 100;
	submit_expect(&ring, 1);
	reap_print(&ring, 1);
	io_uring_queue_exit(&ring);
	return 0;
}
