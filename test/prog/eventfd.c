/*
 * A registered eventfd: quiet while nothing completes, signalled by inline
 * NOP completions and by a pipe read completing later; silenced by
 * IORING_CQ_EVENTFD_DISABLED written by the program into the CQ ring flags
 * (io_uring_cq_eventfd_toggle), and by unregistering. Under bufsel the
 * program's CQ flags live in the shadow ring and must reach the kernel's.
 * The counter value depends on how completions were batched, so only whether
 * it fired is printed.
 */
#include "test/prog/cqe_print.h"

#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

static struct io_uring ring;
static int efd;

static void check(int want_fired, const char *what)
{
	uint64_t v = 0;
	ssize_t n = read(efd, &v, sizeof(v));
	int fired = n == (ssize_t)sizeof(v) && v > 0;
	if (!fired && !(n < 0 && errno == EAGAIN))
		die("%s: eventfd read %zd: %s", what, n, strerror(errno));
	if (fired != want_fired)
		die("%s: eventfd %s", what, fired ? "fired" : "did not fire");
	note("%s: eventfd %s", what, fired ? "fired" : "quiet");
}

static void nops(unsigned long long ud, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct io_uring_sqe *sqe = get_sqe(&ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = ud + i;
	}
	submit_expect(&ring, (int)n);
	reap_print(&ring, n);
}

int main(void)
{
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (efd < 0)
		die("eventfd: %s", strerror(errno));
	note("eventfd fd %d", efd);
	note("register_eventfd returned %d", io_uring_register_eventfd(&ring, efd));
	check(0, "before any completion");

	nops(1, 3);
	check(1, "after nops");
	note("eventfd fired");

	int p[2];
	char buf[8];
	if (pipe(p) < 0)
		die("pipe: %s", strerror(errno));
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, p[0], buf, sizeof(buf), 0);
	sqe->user_data = 10;
	submit_expect(&ring, 1);
	check(0, "read pending");
	if (write(p[1], "x", 1) != 1)
		die("write: %s", strerror(errno));
	reap_print(&ring, 1);
	check(1, "after pipe read");

	note("cq_eventfd_toggle(false) returned %d", io_uring_cq_eventfd_toggle(&ring, false));
	nops(20, 2);
	check(0, "while disabled");
	note("cq_eventfd_toggle(true) returned %d", io_uring_cq_eventfd_toggle(&ring, true));
	nops(30, 2);
	check(1, "re-enabled");

	note("register again while registered returned %d", io_uring_register_eventfd(&ring, efd));
	note("unregister_eventfd returned %d", io_uring_unregister_eventfd(&ring));
	nops(40, 2);
	check(0, "after unregister");
	note("unregister again returned %d", io_uring_unregister_eventfd(&ring));

	close(p[0]);
	close(p[1]);
	close(efd);
	io_uring_queue_exit(&ring);
	return 0;
}
