/*
 * IORING_OP_MSG_RING between two shadowed rings: the kernel posts the message
 * into the target's real CQ, where no request of bufsel's stands behind it,
 * and it must reach the program's CQ as it is (user_data and res from the
 * sender's SQE).  Also a message to an fd that is not a ring, and one that
 * waits in a chain behind a buffer-select READ.
 */
#include <liburing.h>
#include <string.h>
#include <unistd.h>

#include "test/prog/cqe_print.h"

int main(void)
{
	struct io_uring a, b;
	if (io_uring_queue_init(8, &a, 0) || io_uring_queue_init(8, &b, 0))
		die("queue_init");
	for (int i = 0; i < 3; i++) {
		struct io_uring_sqe *sqe = get_sqe(&a);
		io_uring_prep_msg_ring(sqe, b.ring_fd, 100 + i, 0x5000 + i, 0);
		sqe->user_data = 1 + i;
	}
	submit_expect(&a, 3);
	note("sender:");
	reap_print(&a, 3);
	note("target:");
	reap_print(&b, 3);

	struct io_uring_sqe *sqe = get_sqe(&a);
	io_uring_prep_msg_ring(sqe, 0, 1, 2, 0);
	sqe->user_data = 9;
	submit_expect(&a, 1);
	note("to stdin:");
	reap_print(&a, 1);

	/* PROVIDE -> READ (buffer select, data there) -> MSG_RING, linked. */
	static char buf[32];
	int pfd[2];
	if (pipe(pfd) || write(pfd[1], "chained", 7) != 7)
		die("pipe");
	sqe = get_sqe(&a);
	io_uring_prep_provide_buffers(sqe, buf, sizeof(buf), 1, 4, 0);
	sqe->user_data = 20;
	sqe->flags |= IOSQE_IO_LINK;
	sqe = get_sqe(&a);
	io_uring_prep_read(sqe, pfd[0], NULL, 7, 0);	/* a short read would cut the chain */
	sqe->flags |= IOSQE_BUFFER_SELECT | IOSQE_IO_LINK;
	sqe->buf_group = 4;
	sqe->user_data = 21;
	sqe = get_sqe(&a);
	io_uring_prep_msg_ring(sqe, b.ring_fd, 7, 0x6000, 0);
	sqe->user_data = 22;
	submit_expect(&a, 3);
	note("chain:");
	reap_print(&a, 3);
	note("target after the chain:");
	reap_print(&b, 1);
	note("buffer holds \"%.7s\"", buf);
	io_uring_queue_exit(&a);
	io_uring_queue_exit(&b);
	return 0;
}
