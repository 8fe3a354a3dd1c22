/*
 * Link semantics: a failing member of an IOSQE_IO_LINK chain cancels the rest
 * (-ECANCELED); a short read counts as a failure for the chain; a member that
 * fails at submit time (bad opcode) cancels the chain too; IOSQE_IO_HARDLINK
 * keeps the chain going past a failure; before 5.18 a closed fd fails at
 * submit time too, and its chain with it. Members of a chain complete in chain
 * order, but failure and cancellation CQEs may be posted in either order, so
 * each chain is printed by user_data.
 */
#include "test/prog/cqe_print.h"

#include <fcntl.h>
#include <unistd.h>

static struct io_uring ring;

static void nop(unsigned long long ud, unsigned flags)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = ud;
	sqe->flags |= (__u8)flags;
}

static void rd(int fd, void *buf, unsigned len, unsigned long long ud, unsigned flags)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, fd, buf, len, 0);
	sqe->user_data = ud;
	sqe->flags |= (__u8)flags;
}

int main(void)
{
	int ret = io_uring_queue_init(16, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	char path[] = "/tmp/bufsel-link_fail-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0 || write(fd, "0123456789", 10) != 10)
		die("temp file: %s", strerror(errno));
	unlink(path);
	char buf[64];
	/* A stale descriptor: a number this program owned and closed. */
	int bad = dup(fd);
	if (bad < 0 || close(bad) < 0)
		die("dup: %s", strerror(errno));

	note("chain: nop, read of a closed fd, nop, nop");
	nop(1, IOSQE_IO_LINK);
	rd(bad, buf, 4, 2, IOSQE_IO_LINK);
	nop(3, IOSQE_IO_LINK);
	nop(4, 0);
	submit_expect(&ring, 4);
	reap_print_sorted(&ring, 4);

	note("chain: short read breaks the link");
	rd(fd, buf, 10, 10, IOSQE_IO_LINK);
	rd(fd, buf, 64, 11, IOSQE_IO_LINK);
	nop(12, 0);
	submit_expect(&ring, 3);
	reap_print_sorted(&ring, 3);

	note("hardlink: nop, bad read, nop all run");
	nop(20, IOSQE_IO_HARDLINK);
	rd(bad, buf, 4, 21, IOSQE_IO_HARDLINK);
	nop(22, 0);
	submit_expect(&ring, 3);
	reap_print_sorted(&ring, 3);

	note("hardlink then soft link after the failure");
	rd(bad, buf, 4, 30, IOSQE_IO_HARDLINK);
	rd(bad, buf, 4, 31, IOSQE_IO_LINK);
	nop(32, 0);
	submit_expect(&ring, 3);
	reap_print_sorted(&ring, 3);

	note("chain with an invalid opcode in the middle");
	nop(40, IOSQE_IO_LINK);
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->opcode = 250;
	sqe->user_data = 41;
	sqe->flags |= IOSQE_IO_LINK;
	nop(42, 0);
	nop(43, 0);
	note("submit returned %d", io_uring_submit(&ring));
	reap_print_sorted(&ring, 4);

	note("a link flag on the last SQE of a submit does not join the next submit");
	nop(50, IOSQE_IO_LINK);
	submit_expect(&ring, 1);
	rd(bad, buf, 4, 51, 0);
	submit_expect(&ring, 1);
	reap_print_sorted(&ring, 2);

	close(fd);
	io_uring_queue_exit(&ring);
	return 0;
}
