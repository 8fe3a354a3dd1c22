/*
 * Batches of NOPs: proves the enter return value, CQE order within a batch,
 * IOSQE_IO_DRAIN ordering and IOSQE_CQE_SKIP_SUCCESS suppression all survive
 * the shadow ring. NOPs complete inline in submission order, and a drained
 * request waits for everything before it, so arrival order is printed as is
 * (but for the requests the drain sends to io-wq, sorted).
 * Right after io_uring_submit returns, inline NOP completions are already in
 * the CQ on a ring that never used DRAIN (checked in batch 2); once DRAIN was
 * used, completions go through the defer path and may land a moment later.
 *
 * Batch 5 pins a kernel rule: once any request on a ring used
 * CQE_SKIP_SUCCESS, a later IO_DRAIN request fails with -EOPNOTSUPP (the ring
 * can no longer count completions to drain on), and that failed SQE ends the
 * submit call there.
 */
#include "test/prog/cqe_print.h"

static void nop(struct io_uring *ring, unsigned long long ud, unsigned flags)
{
	struct io_uring_sqe *sqe = get_sqe(ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = ud;
	sqe->flags = (__u8)flags;
}

int main(void)
{
	struct io_uring ring;
	int ret = io_uring_queue_init(32, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));

	note("batch 1: 8 plain");
	for (unsigned i = 0; i < 8; i++)
		nop(&ring, 100 + i, 0);
	submit_expect(&ring, 8);
	reap_print(&ring, 8);

	note("batch 2: several submits, one wait");
	for (unsigned s = 0; s < 3; s++) {
		for (unsigned i = 0; i < 3; i++)
			nop(&ring, 200 + s * 10 + i, 0);
		submit_expect(&ring, 3);
	}
	if (io_uring_cq_ready(&ring) != 9)
		die("cq_ready %u, wanted 9", io_uring_cq_ready(&ring));
	reap_print(&ring, 9);

	note("batch 3: drain in the middle");
	for (unsigned i = 0; i < 6; i++)
		nop(&ring, 300 + i, i == 3 ? IOSQE_IO_DRAIN : 0);
	submit_expect(&ring, 6);
	/* The drain holds 303 until 300-302 are done; while it is active
	 * io_init_req forces 303-305 to io-wq, whose workers finish them in
	 * either order (305 before 304 once in a CI run, natively as much). */
	reap_print(&ring, 3);
	reap_print_sorted(&ring, 3);

	note("batch 4: skip success on even user_data");
	for (unsigned i = 0; i < 8; i++)
		nop(&ring, 400 + i, (i % 2 == 0) ? IOSQE_CQE_SKIP_SUCCESS : 0);
	submit_expect(&ring, 8);
	reap_print(&ring, 4);
	expect_no_cqe(&ring, "batch 4");

	note("batch 5: drain after skip success");
	nop(&ring, 500, 0);
	nop(&ring, 501, IOSQE_IO_DRAIN);
	nop(&ring, 502, 0);
	/* The failed SQE ends the submit on a ring without SUBMIT_ALL; 502 stays queued. */
	note("submit returned %d", io_uring_submit(&ring));
	note("submit returned %d", io_uring_submit(&ring));
	reap_print_sorted(&ring, 3);
	expect_no_cqe(&ring, "batch 5");

	note("batch 6: submit_and_wait");
	for (unsigned i = 0; i < 4; i++)
		nop(&ring, 600 + i, 0);
	ret = io_uring_submit_and_wait(&ring, 4);
	note("submit_and_wait returned %d", ret);
	if (io_uring_cq_ready(&ring) != 4)
		die("cq_ready %u, wanted 4", io_uring_cq_ready(&ring));
	reap_print(&ring, 4);

	io_uring_queue_exit(&ring);
	return 0;
}
