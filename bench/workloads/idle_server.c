/*
 * The server of the idle workload (idle.h), shared by idle_prealloc and
 * idle_select: accepts the generator's connections, keeps one receive
 * pending on each, echoes what arrives with SEND from the buffer that got it
 * and receives again; the style decides where receive buffers come from and
 * counts the buffers out of the program's hands.
 */
#define _GNU_SOURCE
#include "bench/workloads/idle.h"
#include "bench/workloads/bench.h"
#include "bench/workloads/net.h"
#include "bench/workloads/opts.h"
#include "bench/workloads/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ACCEPTS_IN_FLIGHT 16

static void arm_accept(struct idle *s)
{
	struct io_uring_sqe *sqe = ring_sqe(&s->ring);
	io_uring_prep_accept(sqe, s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	io_uring_sqe_set_data64(sqe, ring_ud(IK_ACCEPT, 0));
	s->inflight++;
	s->accepting++;
}

static void arm_send(struct idle *s, int fd)
{
	struct idle_conn *c = &s->by_fd[fd];
	struct io_uring_sqe *sqe = ring_sqe(&s->ring);
	io_uring_prep_send(sqe, fd, c->buf + c->off, c->len - c->off, MSG_NOSIGNAL);
	io_uring_sqe_set_data64(sqe, ring_ud(IK_SEND, (unsigned)fd));
	s->inflight++;
}

static void on_accept(void *ctx, unsigned arg, const struct io_uring_cqe *cqe)
{
	struct idle *s = ctx;
	int res = cqe->res;
	(void)arg;
	s->accepting--;
	if (res < 0)
		die_err(res, "accept");
	if ((unsigned long)res >= s->nfd)
		die("accepted fd %d, beyond the %lu the server expected", res, s->nfd);
	if (s->accepted == s->conns)
		die("more than %lu connections", s->conns);
	s->by_fd[res] = (struct idle_conn){ .idx = (unsigned)s->accepted++ };
	net_nodelay(res);
	s->style->arm_recv(s, res);
	if (s->accepted + s->accepting < s->conns)
		arm_accept(s);
	if (s->accepted < s->conns)
		return;
	/* Every receive is with the kernel before the generator starts its rounds. */
	int ret = io_uring_submit(&s->ring);
	if (ret < 0)
		die_err(ret, "io_uring_submit");
	write_full(s->ready_fd, "R", 1);
	close(s->ready_fd);
	s->ready_fd = -1;
}

static void on_recv(void *ctx, unsigned arg, const struct io_uring_cqe *cqe)
{
	struct idle *s = ctx;
	int fd = (int)arg;
	if (cqe->res == -ENOBUFS && !(cqe->flags & IORING_CQE_F_BUFFER) && s->style->enobufs) {
		s->style->enobufs(s, fd);
		return;
	}
	char *buf = s->style->take(s, fd, cqe);
	if (cqe->res < 0)
		die_err(cqe->res, "fd %d: recv", fd);
	if (cqe->res == 0) {
		if (buf)
			s->style->give_back(s, fd);
		close(fd);
		s->closed++;
		return;
	}
	if (!buf)
		die("fd %d: recv of %d bytes without a buffer", fd, cqe->res);
	if ((unsigned long)cqe->res > s->buf_len)
		die("fd %d: recv of %d bytes into a buffer of %lu", fd, cqe->res, s->buf_len);
	struct idle_conn *c = &s->by_fd[fd];
	/* The reply goes out of a copy, so the receive buffer goes back at once:
	 * what the figure counts is receive buffers, held only while a message
	 * is being looked at, not while its reply waits for the socket. */
	c->buf = malloc((size_t)cqe->res);
	if (!c->buf)
		die("fd %d: no memory for a reply of %d bytes", fd, cqe->res);
	memcpy(c->buf, buf, (size_t)cqe->res);
	s->style->give_back(s, fd);
	c->len = (unsigned)cqe->res;
	c->off = 0;
	arm_send(s, fd);
}

static void on_send(void *ctx, unsigned arg, const struct io_uring_cqe *cqe)
{
	struct idle *s = ctx;
	int fd = (int)arg, res = cqe->res;
	struct idle_conn *c = &s->by_fd[fd];
	if (res <= 0)
		die_err(res ? res : -EPIPE, "fd %d: send of %u bytes", fd, c->len - c->off);
	if ((unsigned)res > c->len - c->off)
		die("fd %d: send reported %d bytes, %u were asked", fd, res, c->len - c->off);
	c->off += (unsigned)res;
	if (c->off < c->len) {
		arm_send(s, fd);
		return;
	}
	free(c->buf);
	c->buf = NULL;
	s->style->arm_recv(s, fd);
}

static void on_record(void *ctx, unsigned arg, const struct io_uring_cqe *cqe)
{
	struct idle *s = ctx;
	(void)arg;
	if (ring_record_cqe(&s->ring, &s->rec, cqe->res))
		s->ended = true;
	else
		s->inflight++; /* re-armed for the rest */
}

static void on_provide(void *ctx, unsigned bid, const struct io_uring_cqe *cqe)
{
	struct idle *s = ctx;
	if (!s->style->provided)
		die("a PROVIDE completion (bid %u, res %d), but %s provides no buffers", bid, cqe->res, bench_name());
	s->style->provided(s, bid, cqe->res);
}

static void on_provide_all(void *ctx, unsigned arg, const struct io_uring_cqe *cqe)
{
	struct idle *s = ctx;
	(void)arg;
	if (cqe->res != 0)
		die_err(cqe->res, "provide %lu buffers of %lu bytes", s->bufs, s->buf_len);
}

static ring_handler *const handlers[] = {
	[IK_ACCEPT] = on_accept,
	[IK_RECV] = on_recv,
	[IK_SEND] = on_send,
	[IK_PROVIDE] = on_provide,
	[IK_PROVIDE_ALL] = on_provide_all,
	[IK_RECORD] = on_record,
};

static void serve(struct idle *s)
{
	while (!(s->ended && s->closed == s->conns && s->inflight == 0))
		ring_reap(&s->ring, handlers, sizeof(handlers) / sizeof(handlers[0]), s, &s->inflight);
}

static pid_t start_client(struct idle *s, unsigned port, int report_wr, int ready_rd)
{
	char a[7][24];
	snprintf(a[0], sizeof(a[0]), "%u", port);
	snprintf(a[1], sizeof(a[1]), "%lu", s->conns);
	snprintf(a[2], sizeof(a[2]), "%lu", s->active);
	snprintf(a[3], sizeof(a[3]), "%lu", s->rounds);
	snprintf(a[4], sizeof(a[4]), "%lu", s->size);
	snprintf(a[5], sizeof(a[5]), "%d", report_wr);
	snprintf(a[6], sizeof(a[6]), "%d", ready_rd);
	char seed[24];
	snprintf(seed, sizeof(seed), "%lu", s->seed);
	char *argv[] = { NULL, "--port", a[0], "--conns", a[1], "--active", a[2], "--rounds", a[3], "--size",
			 a[4], "--report-fd", a[5], "--ready-fd", a[6], "--seed", seed, NULL };
	int keep[] = { report_wr, ready_rd };
	return spawn_sibling("idle_client", argv, keep, 2);
}

int idle_main(int argc, char **argv, const struct idle_style *style)
{
	bench_init(argv[0]);
	struct idle s = {
		.style = style, .conns = 10000, .active = 100, .rounds = 500, .size = 512, .bufs = 256,
		.buf_len = 4096, .seed = 1, .ready_fd = -1,
	};
	struct opt opts[] = {
		OPT_U("conns", &s.conns, 1, 60000, "connections, each with a receive pending"),
		OPT_U("active", &s.active, 1, 60000, "connections that get a message in each round"),
		OPT_U("rounds", &s.rounds, 1, 1e9, "rounds"),
		OPT_U("size", &s.size, 1, 1 << 20, "bytes per message"),
		OPT_U("bufs", &s.bufs, 1, 65536, "buffers in the group (idle_select)"),
		OPT_U("buf-len", &s.buf_len, 1, 1 << 24, "bytes per receive buffer"),
		OPT_U("seed", &s.seed, 0, 1e19, "seeds the generator's choice of connections"),
	};
	char summary[512];
	snprintf(summary, sizeof(summary),
		 "Idle connections, few active, echoed by a server whose receives use %s.\n"
		 "Prints: bench: msgs_per_s= buffer_bytes_allocated= held_peak_bufs= held_peak_bytes=",
		 style->name);
	opts_parse(argc, argv, opts, sizeof(opts) / sizeof(opts[0]), summary);
	if (s.active > s.conns)
		die("--active %lu is more than --conns %lu", s.active, s.conns);

	s.nfd = s.conns + 256;
	nofile_at_least(s.nfd);
	unsigned port;
	s.listen_fd = net_listen((int)s.conns, &port);
	int rep[2], rdy[2];
	if (pipe2(rep, O_CLOEXEC) < 0 || pipe2(rdy, O_CLOEXEC) < 0)
		die_err(errno, "pipe");
	pid_t client = start_client(&s, port, rep[1], rdy[0]);
	close(rep[1]);
	close(rdy[0]);
	s.ready_fd = rdy[1];

	unsigned cq = 4096;
	while (cq < 2 * s.conns + 256 && cq < 65536)
		cq *= 2;
	ring_init(&s.ring, 1024, cq);
	s.by_fd = calloc(s.nfd, sizeof(*s.by_fd));
	if (!s.by_fd)
		die("out of memory");
	struct idle_record in;
	s.rec = (struct ring_record){
		.fd = rep[0], .buf = &in, .len = sizeof(in), .user_data = ring_ud(IK_RECORD, 0),
	};
	style->setup(&s);
	ring_record_arm(&s.ring, &s.rec);
	s.inflight++;
	for (unsigned i = 0; i < ACCEPTS_IN_FLIGHT && s.accepting < s.conns; i++)
		arm_accept(&s);
	serve(&s);
	s.result = in;
	style->teardown(&s);
	spawn_wait(client, "idle_client");

	if (s.result.msgs != s.active * s.rounds || s.result.elapsed_ns == 0)
		die("the generator reports %llu messages in %llu ns, expected %lu", (unsigned long long)s.result.msgs,
		    (unsigned long long)s.result.elapsed_ns, s.active * s.rounds);
	printf("%s: conns=%lu active=%lu rounds=%lu size=%lu buf_len=%lu enobufs=%lu (%lu issued again at once)\n",
	       bench_name(), s.conns, s.active, s.rounds, s.size, s.buf_len, s.wait.total, s.wait.at_once);
	printf("bench: msgs_per_s=%.1f buffer_bytes_allocated=%llu held_peak_bufs=%lu held_peak_bytes=%llu\n",
	       (double)s.result.msgs * 1e9 / (double)s.result.elapsed_ns, (unsigned long long)s.buffer_bytes,
	       s.held_peak, (unsigned long long)s.held_peak * s.buf_len);

	close(s.listen_fd);
	close(rep[0]);
	io_uring_queue_exit(&s.ring);
	waitlist_free(&s.wait);
	free(s.by_fd);
	free(s.pool);
	return 0;
}
