/*
 * idle_prealloc: the idle workload (idle.h) with a plain RECV into a
 * dedicated buffer per connection. All of them are allocated up front, and
 * every one is tied to its pending receive: held_peak_bufs counts the
 * receives pending at once (each holds its buffer), which is every
 * connection once all are accepted.
 */
#include "bench/workloads/bench.h"
#include "bench/workloads/idle.h"

#include <stdlib.h>
#include <string.h>

static char *conn_buf(struct idle *s, int fd)
{
	return s->pool + (size_t)s->by_fd[fd].idx * s->buf_len;
}

static void setup(struct idle *s)
{
	s->buffer_bytes = (uint64_t)s->conns * s->buf_len;
	if (posix_memalign((void **)&s->pool, 4096, s->buffer_bytes))
		die("%lu buffers of %lu bytes: out of memory", s->conns, s->buf_len);
	memset(s->pool, 0, s->buffer_bytes);
}

static void arm_recv(struct idle *s, int fd)
{
	struct io_uring_sqe *sqe = ring_sqe(&s->ring);
	io_uring_prep_recv(sqe, fd, conn_buf(s, fd), s->buf_len, 0);
	io_uring_sqe_set_data64(sqe, ring_ud(IK_RECV, (unsigned)fd));
	s->inflight++;
	idle_held(s, 1);
}

static char *take(struct idle *s, int fd, const struct io_uring_cqe *cqe)
{
	if (cqe->flags & IORING_CQE_F_BUFFER)
		die("fd %d: a plain RECV completed with IORING_CQE_F_BUFFER", fd);
	idle_held(s, -1);
	return conn_buf(s, fd);
}

static void give_back(struct idle *s, int fd)
{
	(void)s;
	(void)fd;
}

static void teardown(struct idle *s)
{
	(void)s;
}

static const struct idle_style prealloc = {
	.name = "a dedicated buffer per connection (plain RECV)",
	.setup = setup,
	.arm_recv = arm_recv,
	.take = take,
	.give_back = give_back,
	.teardown = teardown,
};

int main(int argc, char **argv)
{
	return idle_main(argc, argv, &prealloc);
}
