/*
 * IOSQE_CQE_SKIP_SUCCESS (5.17): which requests post a CQE despite the
 * flag.  A request that succeeds posts none; one that fails posts its
 * error, and so does a MSG_WAITALL receive that got less than it asked
 * for (req_set_fail clears the skip); a chain's members each by their own
 * result, a cancelled member posting -ECANCELED; a multishot poll refuses
 * the flag; once a skip was seen, a drain fails with -EOPNOTSUPP.  Under
 * BUFSEL_KERNEL older than 5.17 bufsel gives the flag itself (the kernel
 * beneath never sees it): the transcript must be the kernel's.
 */
#include "test/prog/cqe_print.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

static struct io_uring ring;

/* Submits what is queued, then prints every CQE that comes within 50 ms. */
static void submit_print(const char *what)
{
	note("%s: submit %d", what, io_uring_submit(&ring));
	usleep(50000);
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = { 0, 0 };
	struct io_uring_cqe got[32];
	unsigned n = 0;
	while (n < 32 && !io_uring_wait_cqe_timeout(&ring, &cqe, &ts)) {
		got[n++] = *cqe;
		io_uring_cqe_seen(&ring, cqe);
	}
	cqe_print_sorted(got, n);
}

static void nop(unsigned long long ud, unsigned flags)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->flags |= (unsigned char)flags;
	sqe->user_data = ud;
}

int main(void)
{
	int ret = io_uring_queue_init(16, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	note("IORING_FEAT_CQE_SKIP %s", ring.features & IORING_FEAT_CQE_SKIP ? "yes" : "no");

	nop(1, IOSQE_CQE_SKIP_SUCCESS);
	nop(2, 0);
	nop(3, IOSQE_CQE_SKIP_SUCCESS);
	submit_print("three NOPs, the first and last skipped");

	/* The failing READ: at an offset on a socket, -ESPIPE when it is
	 * issued (sock_read_iter), on every kernel.  (A closed fd fails at
	 * submission before 5.18, and breaks a chain there: link_fail.) */
	int bad[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, bad))
		die("socketpair: %s", strerror(errno));
	struct io_uring_sqe *sqe = get_sqe(&ring);
	static char buf[64];
	io_uring_prep_read(sqe, bad[0], buf, sizeof(buf), 5);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	sqe->user_data = 10;
	submit_print("a READ at an offset on a socket");

	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		die("socketpair: %s", strerror(errno));
	if (write(sv[1], "12345678abcd", 12) != 12)
		die("write: %s", strerror(errno));
	sqe = get_sqe(&ring);
	io_uring_prep_recv(sqe, sv[0], buf, 8, MSG_WAITALL);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	sqe->user_data = 20;
	submit_print("a MSG_WAITALL RECV that gets all 8 bytes");
	sqe = get_sqe(&ring);
	io_uring_prep_recv(sqe, sv[0], buf, 8, MSG_WAITALL);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	sqe->user_data = 21;
	shutdown(sv[1], SHUT_WR);
	submit_print("one that gets 4 and then EOF");
	sqe = get_sqe(&ring);
	io_uring_prep_recv(sqe, sv[0], buf, 8, 0);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	sqe->user_data = 22;
	submit_print("a plain RECV at EOF (0 bytes)");

	nop(30, IOSQE_CQE_SKIP_SUCCESS | IOSQE_IO_LINK);
	nop(31, IOSQE_CQE_SKIP_SUCCESS | IOSQE_IO_LINK);
	nop(32, 0);
	submit_print("a chain of three NOPs, the first two skipped");

	sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, bad[0], buf, sizeof(buf), 5);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS | IOSQE_IO_LINK;
	sqe->user_data = 40;
	nop(41, IOSQE_CQE_SKIP_SUCCESS);
	submit_print("a chain: a failing READ, then a NOP, both skipped");

	sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, bad[0], buf, sizeof(buf), 5);
	sqe->flags |= IOSQE_IO_LINK;
	sqe->user_data = 42;
	nop(43, IOSQE_CQE_SKIP_SUCCESS | IOSQE_IO_LINK);
	nop(44, 0);
	submit_print("a chain: a failing READ without the flag, a skipped NOP, a NOP");

	sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, bad[0], buf, sizeof(buf), 5);
	sqe->flags |= IOSQE_IO_LINK | IOSQE_CQE_SKIP_SUCCESS;
	sqe->user_data = 45;
	nop(46, IOSQE_IO_LINK);
	nop(47, 0);
	submit_print("a chain: a failing READ with the flag, two NOPs without");

	nop(48, IOSQE_IO_LINK);
	sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, bad[0], buf, sizeof(buf), 5);
	sqe->flags |= IOSQE_IO_LINK | IOSQE_CQE_SKIP_SUCCESS;
	sqe->user_data = 49;
	nop(150, 0);
	submit_print("a chain: a NOP, a failing READ with the flag, a NOP");

	int pp[2];
	if (pipe(pp))
		die("pipe: %s", strerror(errno));
	if (write(pp[1], "x", 1) != 1)
		die("write: %s", strerror(errno));
	sqe = get_sqe(&ring);
	io_uring_prep_poll_add(sqe, pp[0], POLLIN);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	sqe->user_data = 50;
	submit_print("a POLL_ADD on a readable pipe");
	sqe = get_sqe(&ring);
	io_uring_prep_poll_multishot(sqe, pp[0], POLLIN);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	sqe->user_data = 51;
	submit_print("a multishot POLL_ADD");

	int idle[2];
	if (pipe(idle))
		die("pipe: %s", strerror(errno));
	sqe = get_sqe(&ring);
	io_uring_prep_poll_add(sqe, idle[0], POLLIN);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	sqe->user_data = 52;
	submit_print("a POLL_ADD on an empty pipe");
	sqe = get_sqe(&ring);
	io_uring_prep_poll_remove(sqe, 52);
	sqe->user_data = 53;
	submit_print("its POLL_REMOVE");

	struct __kernel_timespec long_ts = { 10, 0 };
	sqe = get_sqe(&ring);
	io_uring_prep_timeout(sqe, &long_ts, 0, 0);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	sqe->user_data = 54;
	submit_print("a 10 s TIMEOUT");
	sqe = get_sqe(&ring);
	io_uring_prep_timeout_remove(sqe, 54, 0);
	sqe->user_data = 55;
	submit_print("its TIMEOUT_REMOVE");
	close(idle[0]);
	close(idle[1]);

	struct __kernel_timespec ts = { 0, 1000000 };
	sqe = get_sqe(&ring);
	io_uring_prep_timeout(sqe, &ts, 0, 0);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	sqe->user_data = 60;
	submit_print("a TIMEOUT that fires (-ETIME)");

	nop(70, IOSQE_IO_DRAIN);
	nop(71, 0);
	submit_print("a drain after a skip was seen");

	close(sv[0]);
	close(sv[1]);
	close(pp[0]);
	close(pp[1]);
	io_uring_queue_exit(&ring);
	return 0;
}
