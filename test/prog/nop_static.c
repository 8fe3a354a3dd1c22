/*
 * NOPs and a file read from a program with liburing.a linked in: the
 * io_uring syscalls and ring mmaps are inline syscall instructions in the
 * executable's own text, not in liburing.so, so only a syscall-level trap
 * sees them. (Built by the Makefile's *_static rule.)
 */
#include "test/prog/cqe_print.h"

#include <unistd.h>

int main(void)
{
	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	note("ring fd %d", ring.ring_fd);

	for (unsigned i = 0; i < 6; i++) {
		struct io_uring_sqe *sqe = get_sqe(&ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = 1 + i;
		if (i == 2)
			sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	}
	submit_expect(&ring, 6);
	reap_print(&ring, 5);

	char path[] = "/tmp/bufsel-nop_static-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0 || write(fd, "static liburing", 15) != 15)
		die("temp file: %s", strerror(errno));
	unlink(path);
	char buf[32] = { 0 };
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, fd, buf, sizeof(buf) - 1, 7);
	sqe->user_data = 10;
	submit_expect(&ring, 1);
	reap_print(&ring, 1);
	note("read \"%s\"", buf);

	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = { .tv_nsec = 20 * 1000 * 1000 };
	note("timed wait on an empty ring returned %d", io_uring_wait_cqe_timeout(&ring, &cqe, &ts));

	close(fd);
	io_uring_queue_exit(&ring);
	return 0;
}
