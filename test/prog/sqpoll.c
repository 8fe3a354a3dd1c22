/*
 * An IORING_SETUP_SQPOLL ring: the kernel thread, not io_uring_enter, consumes
 * the SQ. NOPs, positioned file writes and a read-back, reaped with
 * io_uring_wait_cqe; between batches the program sleeps past sq_thread_idle so
 * the poller goes to sleep and the next submit must wake it
 * (IORING_SQ_NEED_WAKEUP). With a shadow SQ nothing reaches the kernel unless
 * bufsel moves it, which is the point of this test.
 * The poller may punt file writes to io-wq, so batches print by user_data.
 */
#include "test/prog/cqe_print.h"

#include <unistd.h>

int main(void)
{
	struct io_uring ring;
	struct io_uring_params p = { .flags = IORING_SETUP_SQPOLL, .sq_thread_idle = 10 };
	int ret = io_uring_queue_init_params(8, &ring, &p);
	if (ret < 0)
		die("queue_init SQPOLL: %s", strerror(-ret));
	note("sq_entries %u cq_entries %u", p.sq_entries, p.cq_entries);
	char path[] = "/tmp/bufsel-sqpoll-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		die("mkstemp: %s", strerror(errno));
	unlink(path);
	note("file fd %d", fd);

	static char w[4][512];
	for (unsigned round = 0; round < 3; round++) {
		note("round %u: 2 nops, 4 writes", round);
		for (unsigned i = 0; i < 2; i++) {
			struct io_uring_sqe *sqe = get_sqe(&ring);
			io_uring_prep_nop(sqe);
			sqe->user_data = round * 100 + i;
		}
		for (unsigned i = 0; i < 4; i++) {
			memset(w[i], '0' + (int)(round * 4 + i), sizeof(w[i]));
			struct io_uring_sqe *sqe = get_sqe(&ring);
			io_uring_prep_write(sqe, fd, w[i], sizeof(w[i]), (round * 4 + i) * 512);
			sqe->user_data = round * 100 + 10 + i;
		}
		submit_expect(&ring, 6);
		reap_print_sorted(&ring, 6);
		usleep(30 * 1000);
	}

	note("read everything back");
	static char r[12 * 512];
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, fd, r, sizeof(r), 0);
	sqe->user_data = 1000;
	submit_expect(&ring, 1);
	reap_print(&ring, 1);
	for (unsigned i = 0; i < 12; i++)
		for (unsigned j = 0; j < 512; j++)
			if (r[i * 512 + j] != (char)('0' + i))
				die("byte %u of block %u is wrong", j, i);
	note("contents match");

	close(fd);
	io_uring_queue_exit(&ring);
	return 0;
}
