/*
 * A multishot POLL on a CQ of 2 that the program does not reap while 8
 * events fire: the kernel's CQ overflows and ends the multishot (its last
 * CQE without IORING_CQE_F_MORE) where the program's CQ is full.  Under
 * bufsel a CQE moved into the shadow keeps its real slot until the program
 * consumes it, so the kernel's CQ is full at the same point; were slots
 * given back on the move, the real and shadow CQs together would hold
 * twice as many and the multishot would run on.  The CQEs are reaped with
 * io_uring_peek_cqe only, as liburing's poll-mshot-overflow does.
 */
#include "test/prog/cqe_print.h"

#include <poll.h>

int main(void)
{
	struct io_uring_params p = { .flags = IORING_SETUP_CQSIZE, .cq_entries = 2 };
	struct io_uring ring;
	int fds[2], tmp = 0;
	if (io_uring_queue_init_params(2, &ring, &p) || pipe(fds))
		return 1;
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_poll_multishot(sqe, fds[0], POLLIN);
	sqe->user_data = 1;
	submit_expect(&ring, 1);
	for (int i = 0; i < 8; i++)
		if (write(fds[1], &tmp, sizeof(tmp)) != sizeof(tmp) || read(fds[0], &tmp, sizeof(tmp)) != sizeof(tmp))
			return 1;
	struct io_uring_cqe *cqe;
	unsigned n = 0;
	while (!io_uring_peek_cqe(&ring, &cqe)) {
		cqe_print(cqe);
		io_uring_cqe_seen(&ring, cqe);
		n++;
	}
	printf("%u CQEs, overflow counter %u\n", n, *ring.cq.koverflow);
	io_uring_queue_exit(&ring);
	return 0;
}
