/*
 * The SQ ring's head and tail written by the program, as the kernel takes
 * them: the head is the kernel's own (a program-written head changes
 * nothing, and with nothing to submit the kernel leaves it as written;
 * before 5.16 it wrote its own back over it, as make vm-test shows); a
 * tail far ahead with a huge to_submit submits at most the SQ's entries.
 */
#include "test/prog/cqe_print.h"

int main(void)
{
	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	for (int i = 0; i < 2; i++) {
		struct io_uring_sqe *sqe = get_sqe(&ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = (unsigned long long)i + 1;
	}
	submit_expect(&ring, 2);
	reap_print(&ring, 2);

	note("the program moves the SQ head back by 2 and enters with to_submit 2");
	unsigned head = io_uring_smp_load_acquire(ring.sq.khead);
	io_uring_smp_store_release(ring.sq.khead, head - 2);
	long r = raw_enter(ring.ring_fd, 2, 0, 0, NULL, 0);
	note("enter=%ld head moved by %d", r, (int)(io_uring_smp_load_acquire(ring.sq.khead) - head));
	io_uring_smp_store_release(ring.sq.khead, head);

	note("8 NOPs in the SQEs, the tail 1,000,000 ahead, to_submit 1,000,000");
	for (unsigned i = 0; i < 8; i++) {
		struct io_uring_sqe *sqe = &ring.sq.sqes[i];
		memset(sqe, 0, sizeof(*sqe));
		sqe->opcode = IORING_OP_NOP;
		sqe->user_data = 100 + i;
		if (ring.sq.array)
			ring.sq.array[i] = i;
	}
	io_uring_smp_store_release(ring.sq.ktail, head + 1000000);
	r = raw_enter(ring.ring_fd, 1000000, 0, 0, NULL, 0);
	unsigned nhead = io_uring_smp_load_acquire(ring.sq.khead);
	note("enter=%ld head moved by %u", r, nhead - head);
	reap_print_sorted(&ring, 8);
	return 0;
}
