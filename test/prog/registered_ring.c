/*
 * A registered ring fd: after io_uring_register_ring_fd, liburing enters with
 * IORING_ENTER_REGISTERED_RING and passes an index into the task's ring table
 * instead of an fd, so the fd argument no longer identifies the ring. NOPs,
 * a pipe read waited on, and a timed wait (EXT_ARG) go through that path; then
 * the ring is unregistered and used through its fd again.
 */
#include "test/prog/cqe_print.h"

#include <unistd.h>

int main(void)
{
	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int p[2];
	if (pipe(p) < 0)
		die("pipe: %s", strerror(errno));

	note("register_ring_fd returned %d", io_uring_register_ring_fd(&ring));
	note("enter_ring_fd (the table index) %d", ring.enter_ring_fd);
	nops_print(&ring, 1, 3);

	char buf[8] = { 0 };
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, p[0], buf, sizeof(buf) - 1, 0);
	sqe->user_data = 10;
	submit_expect(&ring, 1);
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = { .tv_nsec = 30 * 1000 * 1000 };
	note("timed wait on the pending read returned %d", io_uring_wait_cqe_timeout(&ring, &cqe, &ts));
	if (write(p[1], "reg", 3) != 3)
		die("write: %s", strerror(errno));
	reap_print(&ring, 1);
	note("read \"%s\"", buf);
	note("submit_and_wait for one nop");
	sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 20;
	note("submit_and_wait returned %d", io_uring_submit_and_wait(&ring, 1));
	reap_print(&ring, 1);

	note("register_ring_fd again returned %d", io_uring_register_ring_fd(&ring));
	note("unregister_ring_fd returned %d", io_uring_unregister_ring_fd(&ring));
	note("unregister_ring_fd again returned %d", io_uring_unregister_ring_fd(&ring));
	note("enter_ring_fd back to the fd %d", ring.enter_ring_fd == ring.ring_fd);
	nops_print(&ring, 30, 2);

	close(p[0]);
	close(p[1]);
	io_uring_queue_exit(&ring);
	return 0;
}
