/*
 * IORING_REGISTER_RESIZE_RINGS (6.13): new SQ and CQ rings for a live ring,
 * which the program then maps again.  Without an argument: the resizes every
 * kernel refuses (a ring without DEFER_TASKRUN, bad parameters), each ring
 * still working after.  With "defer": a resize the kernel accepts on a
 * DEFER_TASKRUN ring; bufsel refuses it (its shadow cannot follow), so this
 * part's output differs by design and compare.c checks each side on its own.
 */
#include <errno.h>
#include <liburing.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "test/prog/cqe_print.h"

#define RESIZE_RINGS 33

static long resize(int fd, unsigned sq, unsigned cq, unsigned flags)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	p.sq_entries = sq;
	p.cq_entries = cq;
	p.flags = flags;
	long r = syscall(__NR_io_uring_register, fd, RESIZE_RINGS, &p, 1);
	return r < 0 ? -errno : r;
}

static void nops(struct io_uring *ring, const char *after)
{
	for (int i = 0; i < 3; i++) {
		struct io_uring_sqe *sqe = get_sqe(ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = 10 + i;
	}
	submit_expect(ring, 3);
	note("after %s:", after);
	reap_print(ring, 3);
}

int main(int argc, char **argv)
{
	struct io_uring ring;
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	bool defer = argc > 1 && !strcmp(argv[1], "defer");
	if (defer)
		p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
	int ret = io_uring_queue_init_params(8, &ring, &p);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	if (!defer) {
		note("resize without DEFER_TASKRUN: %ld", resize(ring.ring_fd, 16, 64, IORING_SETUP_CQSIZE));
		nops(&ring, "that");
		note("resize with a NULL argument: %ld",
		     syscall(__NR_io_uring_register, ring.ring_fd, RESIZE_RINGS, NULL, 1) < 0 ? -errno : 0L);
		nops(&ring, "that");
	} else {
		long r = resize(ring.ring_fd, 16, 64, IORING_SETUP_CQSIZE);
		note("resize on a DEFER_TASKRUN ring: %ld", r);
		/* A resized ring must be mapped again, which liburing 2.3 cannot do. */
		if (r == 0)
			return 0;
		nops(&ring, "the refused resize");
	}
	io_uring_queue_exit(&ring);
	return 0;
}
