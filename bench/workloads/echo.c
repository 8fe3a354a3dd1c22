/*
 * echo: a TCP echo server on 127.0.0.1 in the classic provided-buffer style,
 * the loop of liburing's io_uring-udp and of the well-known "io_uring echo
 * server with provided buffers":
 *
 *   RECV with IOSQE_BUFFER_SELECT from one group; on its CQE, SEND the bytes
 *   straight from the selected buffer (again for the rest after a short
 *   send); when the SEND is complete, PROVIDE_BUFFERS that one buffer again
 *   (its bid) and RECV again. A RECV that finds the group empty (-ENOBUFS)
 *   waits for the next PROVIDE to complete and is issued again (at once when
 *   the program holds no buffer: waitlist.h).
 *
 * The load comes from build/bench/echo_client, started next to this program
 * without bufsel: N connections, one message in flight on each. The client
 * measures throughput and round-trip latency; this process measures its own
 * CPU time between the client's START and END records, and prints
 *   bench: msgs_per_s=.. p50_us=.. p90_us=.. p99_us=.. p999_us=.. server_cpu_us_per_msg=..
 * Every echoed byte is checked by the client; at the end every buffer must be
 * back in the group (ring_check_group).
 */
#define _GNU_SOURCE
#include "bench/workloads/bench.h"
#include "bench/workloads/echo.h"
#include "bench/workloads/net.h"
#include "bench/workloads/opts.h"
#include "bench/workloads/ring.h"
#include "bench/workloads/waitlist.h"
#include "bench/workloads/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BGID 1
#define ACCEPTS_IN_FLIGHT 16

enum kind { K_ACCEPT = 1, K_RECV, K_SEND, K_PROVIDE, K_PROVIDE_ALL, K_RECORD };

/* What a connection's buffer holds while it is echoed. */
struct sconn {
	unsigned bid, off, len;
};

struct echo {
	unsigned long conns, size, messages, bufs, buf_len;
	double seconds, warmup;
	struct io_uring ring;
	int listen_fd;
	char *pool;
	struct sconn *by_fd;
	unsigned long nfd;
	struct waitlist wait;
	struct ring_record rec;
	struct echo_record in;
	unsigned long accepted, accepting, closed, inflight;
	unsigned long held, held_peak, recvs;
	double cpu_start, cpu_end;
	struct echo_record result;
	bool started, ended;
};

static struct io_uring_sqe *sqe_counted(struct echo *s)
{
	s->inflight++;
	return ring_sqe(&s->ring);
}

static void arm_recv(struct echo *s, int fd)
{
	struct io_uring_sqe *sqe = sqe_counted(s);
	io_uring_prep_recv(sqe, fd, NULL, s->buf_len, 0);
	io_uring_sqe_set_data64(sqe, ring_ud(K_RECV, (unsigned)fd));
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = BGID;
}

static void arm_send(struct echo *s, int fd)
{
	struct sconn *c = &s->by_fd[fd];
	struct io_uring_sqe *sqe = sqe_counted(s);
	io_uring_prep_send(sqe, fd, s->pool + (size_t)c->bid * s->buf_len + c->off, c->len - c->off, MSG_NOSIGNAL);
	io_uring_sqe_set_data64(sqe, ring_ud(K_SEND, (unsigned)fd));
}

static void arm_provide(struct echo *s, unsigned bid)
{
	s->inflight++;
	ring_provide(&s->ring, s->pool + (size_t)bid * s->buf_len, (unsigned)s->buf_len, 1, BGID, bid,
		     ring_ud(K_PROVIDE, bid));
}

static void arm_accept(struct echo *s)
{
	struct io_uring_sqe *sqe = sqe_counted(s);
	io_uring_prep_accept(sqe, s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	io_uring_sqe_set_data64(sqe, ring_ud(K_ACCEPT, 0));
	s->accepting++;
}

static void arm_record(struct echo *s)
{
	s->inflight++;
	ring_record_arm(&s->ring, &s->rec);
}

static void on_accept(void *ctx, unsigned arg, const struct io_uring_cqe *cqe)
{
	struct echo *s = ctx;
	int fd = cqe->res;
	(void)arg;
	s->accepting--;
	if (fd < 0)
		die_err(fd, "accept");
	if ((unsigned long)fd >= s->nfd)
		die("accepted fd %d, beyond the %lu the server expected", fd, s->nfd);
	if (++s->accepted > s->conns)
		die("more than %lu connections", s->conns);
	net_nodelay(fd);
	arm_recv(s, fd);
	if (s->accepted + s->accepting < s->conns)
		arm_accept(s);
}

static void on_recv(void *ctx, unsigned arg, const struct io_uring_cqe *cqe)
{
	struct echo *s = ctx;
	int fd = (int)arg, res = cqe->res;
	bool buf = cqe->flags & IORING_CQE_F_BUFFER;
	unsigned bid = ring_cqe_bid(cqe);
	if (res == -ENOBUFS && !buf) {
		if (s->held > 0) {
			waitlist_push(&s->wait, fd);
		} else {
			waitlist_retry(&s->wait);
			arm_recv(s, fd);
		}
		return;
	}
	if (buf) {
		if (bid >= s->bufs)
			die("fd %d: a receive got bid %u, the group has bids 0..%lu", fd, bid, s->bufs - 1);
		if (++s->held > s->held_peak)
			s->held_peak = s->held;
	}
	if (res < 0)
		die_err(res, "fd %d: recv", fd);
	if (res == 0) {
		if (buf)
			arm_provide(s, bid);
		close(fd);
		s->closed++;
		return;
	}
	if (!buf)
		die("fd %d: recv of %d bytes without IORING_CQE_F_BUFFER", fd, res);
	if ((unsigned long)res > s->buf_len)
		die("fd %d: recv of %d bytes into a buffer of %lu", fd, res, s->buf_len);
	s->recvs++;
	s->by_fd[fd] = (struct sconn){ .bid = bid, .len = (unsigned)res };
	arm_send(s, fd);
}

static void on_send(void *ctx, unsigned arg, const struct io_uring_cqe *cqe)
{
	struct echo *s = ctx;
	int fd = (int)arg, res = cqe->res;
	struct sconn *c = &s->by_fd[fd];
	if (res <= 0)
		die_err(res ? res : -EPIPE, "fd %d: send of %u bytes", fd, c->len - c->off);
	if ((unsigned)res > c->len - c->off)
		die("fd %d: send reported %d bytes, %u were asked", fd, res, c->len - c->off);
	c->off += (unsigned)res;
	if (c->off < c->len) {
		arm_send(s, fd);
		return;
	}
	arm_provide(s, c->bid);
	arm_recv(s, fd);
}

static void on_provide(void *ctx, unsigned bid, const struct io_uring_cqe *cqe)
{
	struct echo *s = ctx;
	if (cqe->res != 0)
		die_err(cqe->res, "provide buffer %u", bid);
	s->held--;
	int fd;
	if (waitlist_pop(&s->wait, &fd))
		arm_recv(s, fd);
	while (s->held == 0 && waitlist_pop(&s->wait, &fd))
		arm_recv(s, fd);
}

static void on_provide_all(void *ctx, unsigned arg, const struct io_uring_cqe *cqe)
{
	struct echo *s = ctx;
	(void)arg;
	if (cqe->res != 0)
		die_err(cqe->res, "provide %lu buffers of %lu bytes", s->bufs, s->buf_len);
}

static void on_record(void *ctx, unsigned arg, const struct io_uring_cqe *cqe)
{
	struct echo *s = ctx;
	(void)arg;
	if (!ring_record_cqe(&s->ring, &s->rec, cqe->res)) {
		s->inflight++; /* re-armed for the rest */
		return;
	}
	if (s->in.kind == ECHO_START && !s->started) {
		s->cpu_start = cpu_us();
		s->started = true;
		arm_record(s);
	} else if (s->in.kind == ECHO_END && s->started && !s->ended) {
		s->cpu_end = cpu_us();
		s->result = s->in;
		s->ended = true;
	} else {
		die("unexpected record %u from the load generator", s->in.kind);
	}
}

static ring_handler *const handlers[] = {
	[K_ACCEPT] = on_accept,
	[K_RECV] = on_recv,
	[K_SEND] = on_send,
	[K_PROVIDE] = on_provide,
	[K_PROVIDE_ALL] = on_provide_all,
	[K_RECORD] = on_record,
};

static void serve(struct echo *s)
{
	while (!(s->ended && s->closed == s->conns && s->inflight == 0))
		ring_reap(&s->ring, handlers, sizeof(handlers) / sizeof(handlers[0]), s, &s->inflight);
}

int main(int argc, char **argv)
{
	bench_init(argv[0]);
	struct echo s = { .conns = 64, .size = 64, .seconds = 2, .warmup = 0.3 };
	struct opt opts[] = {
		OPT_U("conns", &s.conns, 1, 60000, "connections"),
		OPT_U("size", &s.size, 1, 1 << 20, "bytes per message"),
		OPT_D("seconds", &s.seconds, 0.001, 3600, "measure for this long"),
		OPT_U("messages", &s.messages, 0, 1e12,
		  "measure exactly this many messages instead (0: by time)"),
		OPT_D("warmup", &s.warmup, 0, 3600, "seconds of load before measuring"),
		OPT_U("bufs", &s.bufs, 1, 65536, "buffers in the group (default: conns, at least 16)"),
		OPT_U("buf-len", &s.buf_len, 1, 1 << 24, "bytes per buffer (default: size)"),
	};
	opts_parse(argc, argv, opts, sizeof(opts) / sizeof(opts[0]),
		   "TCP echo server on 127.0.0.1: RECV with IOSQE_BUFFER_SELECT, SEND from the buffer, PROVIDE it\n"
		   "again; driven by build/bench/echo_client (one message in flight per connection).\n"
		   "Prints: bench: msgs_per_s= p50_us= p90_us= p99_us= p999_us= server_cpu_us_per_msg=");
	if (!s.bufs)
		s.bufs = s.conns < 16 ? 16 : s.conns > 65536 ? 65536 : s.conns;
	if (!s.buf_len)
		s.buf_len = s.size;

	s.nfd = s.conns + 256;
	nofile_at_least(s.nfd);
	unsigned port;
	s.listen_fd = net_listen((int)s.conns, &port);

	int rep[2];
	if (pipe2(rep, O_CLOEXEC) < 0)
		die_err(errno, "pipe");
	char a_port[16], a_fd[16], a_conns[24], a_size[24], a_sec[32], a_msgs[24], a_warm[32];
	snprintf(a_port, sizeof(a_port), "%u", port);
	snprintf(a_fd, sizeof(a_fd), "%d", rep[1]);
	snprintf(a_conns, sizeof(a_conns), "%lu", s.conns);
	snprintf(a_size, sizeof(a_size), "%lu", s.size);
	snprintf(a_sec, sizeof(a_sec), "%.17g", s.seconds);
	snprintf(a_msgs, sizeof(a_msgs), "%lu", s.messages);
	snprintf(a_warm, sizeof(a_warm), "%.17g", s.warmup);
	char *cargv[] = { NULL, "--port", a_port, "--report-fd", a_fd, "--conns", a_conns, "--size", a_size,
			  "--seconds", a_sec, "--messages", a_msgs, "--warmup", a_warm, NULL };
	pid_t client = spawn_sibling("echo_client", cargv, &rep[1], 1);
	close(rep[1]);

	unsigned cq = 4096;
	while (cq < 4 * s.conns + 64 && cq < 65536)
		cq *= 2;
	ring_init(&s.ring, 1024, cq);
	if (posix_memalign((void **)&s.pool, 4096, s.bufs * s.buf_len))
		die("a pool of %lu x %lu bytes: out of memory", s.bufs, s.buf_len);
	memset(s.pool, 0, s.bufs * s.buf_len);
	s.by_fd = calloc(s.nfd, sizeof(*s.by_fd));
	if (!s.by_fd)
		die("out of memory");
	s.rec = (struct ring_record){
		.fd = rep[0], .buf = &s.in, .len = sizeof(s.in), .user_data = ring_ud(K_RECORD, 0),
	};

	s.inflight++;
	ring_provide(&s.ring, s.pool, (unsigned)s.buf_len, (unsigned)s.bufs, BGID, 0, ring_ud(K_PROVIDE_ALL, 0));
	arm_record(&s);
	for (unsigned i = 0; i < ACCEPTS_IN_FLIGHT && s.accepting < s.conns; i++)
		arm_accept(&s);
	serve(&s);
	ring_check_group(&s.ring, BGID, (unsigned)s.bufs);
	spawn_wait(client, "echo_client");

	const struct echo_record *r = &s.result;
	if (r->msgs == 0 || r->elapsed_ns == 0)
		die("the load generator measured no message (%llu in %llu ns)", (unsigned long long)r->msgs,
		    (unsigned long long)r->elapsed_ns);
	printf("echo: conns=%lu size=%lu bufs=%lu buf_len=%lu recvs=%lu enobufs=%lu (%lu issued again at once) "
	       "held_peak=%lu\n",
	       s.conns, s.size, s.bufs, s.buf_len, s.recvs, s.wait.total, s.wait.at_once, s.held_peak);
	printf("bench: msgs_per_s=%.1f p50_us=%.2f p90_us=%.2f p99_us=%.2f p999_us=%.2f server_cpu_us_per_msg=%.3f\n",
	       (double)r->msgs * 1e9 / (double)r->elapsed_ns, r->p50_ns / 1e3, r->p90_ns / 1e3, r->p99_ns / 1e3,
	       r->p999_ns / 1e3, (s.cpu_end - s.cpu_start) / (double)r->msgs);

	close(s.listen_fd);
	close(rep[0]);
	io_uring_queue_exit(&s.ring);
	waitlist_free(&s.wait);
	free(s.pool);
	free(s.by_fd);
	return 0;
}
