/*
 * idle_select: the idle workload (idle.h) with RECV + IOSQE_BUFFER_SELECT
 * from one group of --bufs buffers (256 by default, more than the 100
 * connections active at once). A receive holds no buffer while its
 * connection is idle; the buffer it gets is PROVIDEd again once its bytes
 * are echoed. A receive that finds the group empty (-ENOBUFS) is issued
 * again when a PROVIDE completes, or at once when the program holds no
 * buffer (waitlist.h). held_peak_bufs counts, from the CQEs, the
 * most buffers delivered and not yet provided back at once.
 */
#include "bench/workloads/bench.h"
#include "bench/workloads/idle.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BGID 1

static void setup(struct idle *s)
{
	s->buffer_bytes = (uint64_t)s->bufs * s->buf_len;
	if (posix_memalign((void **)&s->pool, 4096, s->buffer_bytes))
		die("%lu buffers of %lu bytes: out of memory", s->bufs, s->buf_len);
	memset(s->pool, 0, s->buffer_bytes);
	ring_provide(&s->ring, s->pool, (unsigned)s->buf_len, (unsigned)s->bufs, BGID, 0,
		     ring_ud(IK_PROVIDE_ALL, 0));
	s->inflight++;
}

static void arm_recv(struct idle *s, int fd)
{
	struct io_uring_sqe *sqe = ring_sqe(&s->ring);
	io_uring_prep_recv(sqe, fd, NULL, s->buf_len, 0);
	io_uring_sqe_set_data64(sqe, ring_ud(IK_RECV, (unsigned)fd));
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = BGID;
	s->inflight++;
}

static char *take(struct idle *s, int fd, const struct io_uring_cqe *cqe)
{
	if (!(cqe->flags & IORING_CQE_F_BUFFER))
		return NULL;
	unsigned bid = ring_cqe_bid(cqe);
	if (bid >= s->bufs)
		die("fd %d: a receive got bid %u, the group has bids 0..%lu", fd, bid, s->bufs - 1);
	s->by_fd[fd].bid = bid;
	idle_held(s, 1);
	return s->pool + (size_t)bid * s->buf_len;
}

static void give_back(struct idle *s, int fd)
{
	unsigned bid = s->by_fd[fd].bid;
	ring_provide(&s->ring, s->pool + (size_t)bid * s->buf_len, (unsigned)s->buf_len, 1, BGID, bid,
		     ring_ud(IK_PROVIDE, bid));
	s->inflight++;
}

static void enobufs(struct idle *s, int fd)
{
	if (s->held > 0) {
		waitlist_push(&s->wait, fd);
	} else {
		waitlist_retry(&s->wait);
		arm_recv(s, fd);
	}
}

static void provided(struct idle *s, unsigned bid, int res)
{
	if (res != 0)
		die_err(res, "provide buffer %u", bid);
	idle_held(s, -1);
	int fd;
	if (waitlist_pop(&s->wait, &fd))
		arm_recv(s, fd);
	while (s->held == 0 && waitlist_pop(&s->wait, &fd))
		arm_recv(s, fd);
}

static void teardown(struct idle *s)
{
	ring_check_group(&s->ring, BGID, (unsigned)s->bufs);
}

static const struct idle_style select_style = {
	.name = "IOSQE_BUFFER_SELECT from a group of provided buffers",
	.setup = setup,
	.arm_recv = arm_recv,
	.take = take,
	.give_back = give_back,
	.enobufs = enobufs,
	.provided = provided,
	.teardown = teardown,
};

int main(int argc, char **argv)
{
	return idle_main(argc, argv, &select_style);
}
