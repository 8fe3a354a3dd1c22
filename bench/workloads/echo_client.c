/*
 * echo_client: the load generator of build/bench/echo, started by it without
 * bufsel. Opens N connections to the server, keeps exactly one message in
 * flight on each (closed loop: send, wait for the whole echo, check every
 * byte, send the next), times each round trip, and after a warm-up measures
 * for a fixed time or a fixed number of messages. Then lets the messages in
 * flight come back, reports to the server over the pipe and closes.
 *
 * Plain non-blocking sockets and epoll: bufsel's inherited seccomp filter
 * would kill a process that uses io_uring without bufsel.
 */
#include "bench/workloads/bench.h"
#include "bench/workloads/echo.h"
#include "bench/workloads/latency.h"
#include "bench/workloads/net.h"
#include "bench/workloads/opts.h"
#include "bench/workloads/pattern.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* A generator that sees nothing happen for this long gives up. */
#define STALL_MS 10000

enum phase { WARMUP, MEASURE, DRAIN };

struct conn {
	int fd;
	uint64_t seq;	  /* the message in flight */
	unsigned sent, got;
	bool busy;	  /* a message is in flight */
	bool counted;	  /* ... and it was sent during the measurement */
	bool want_out;	  /* EPOLLOUT registered: the send was short */
	uint64_t t_send;
};

struct echo_client {
	unsigned long port, conns, size, messages, report_fd;
	double seconds, warmup;
	struct conn *c;
	int ep;
	enum phase phase;
	uint64_t t_start, t_measure, t_end;
	uint64_t issued, done; /* messages of the measurement */
	unsigned busy;
	struct latency lat;
	unsigned char *rx;
};

static void send_more(struct echo_client *e, unsigned i)
{
	struct conn *c = &e->c[i];
	const unsigned char *msg = pattern_at(pattern_pos(i, c->seq));
	while (c->sent < e->size) {
		ssize_t w = send(c->fd, msg + c->sent, e->size - c->sent, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			break;
		if (w < 0)
			die_err(errno, "connection %u: send", i);
		c->sent += (unsigned)w;
	}
	bool want_out = c->sent < e->size;
	if (want_out != c->want_out) {
		struct epoll_event ev = { .events = EPOLLIN | (want_out ? EPOLLOUT : 0), .data.u32 = i };
		if (epoll_ctl(e->ep, EPOLL_CTL_MOD, c->fd, &ev) < 0)
			die_err(errno, "epoll_ctl");
		c->want_out = want_out;
	}
}

static bool may_issue(const struct echo_client *e)
{
	if (e->phase == DRAIN)
		return false;
	return e->phase == WARMUP || e->messages == 0 || e->issued < e->messages;
}

static void issue(struct echo_client *e, unsigned i, uint64_t now)
{
	struct conn *c = &e->c[i];
	c->seq++;
	c->sent = c->got = 0;
	c->busy = true;
	c->t_send = now;
	e->busy++;
	c->counted = e->phase == MEASURE;
	e->issued += c->counted;
	send_more(e, i);
}

static void start_measuring(struct echo_client *e, uint64_t now)
{
	struct echo_record r = { .kind = ECHO_START, .conns = (uint32_t)e->conns };
	write_full((int)e->report_fd, &r, sizeof(r));
	e->phase = MEASURE;
	e->t_measure = now;
}

static void stop_measuring(struct echo_client *e, uint64_t now)
{
	e->phase = DRAIN;
	e->t_end = now;
}

static void received(struct echo_client *e, unsigned i, uint64_t now)
{
	struct conn *c = &e->c[i];
	for (;;) {
		ssize_t r = recv(c->fd, e->rx, e->size, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			return;
		if (r < 0)
			die_err(errno, "connection %u: recv", i);
		if (r == 0)
			die("connection %u: closed by the server with %u of %lu bytes of message %llu echoed", i,
			    c->got, e->size, (unsigned long long)c->seq);
		if (!c->busy || c->got + (unsigned)r > c->sent) {
			die("connection %u: %zd bytes echoed that were never sent (message %llu, %u sent, %u echoed)",
			    i, r, (unsigned long long)c->seq, c->sent, c->got);
		}
		char what[96];
		snprintf(what, sizeof(what), "connection %u message %llu bytes %u..%u", i,
			 (unsigned long long)c->seq, c->got, c->got + (unsigned)r);
		pattern_check(e->rx, (size_t)r, pattern_pos(i, c->seq) + c->got, what);
		c->got += (unsigned)r;
		if (c->got < e->size)
			continue;
		c->busy = false;
		e->busy--;
		if (e->phase == MEASURE && c->counted) {
			latency_add(&e->lat, now - c->t_send);
			e->done++;
			if (e->messages && e->done == e->messages)
				stop_measuring(e, now);
		}
		if (may_issue(e))
			issue(e, i, now);
		return;
	}
}

static void advance_phase(struct echo_client *e, uint64_t now)
{
	if (e->phase == WARMUP && now - e->t_start >= (uint64_t)(e->warmup * 1e9))
		start_measuring(e, now);
	if (e->phase == MEASURE && e->messages == 0 && now - e->t_measure >= (uint64_t)(e->seconds * 1e9))
		stop_measuring(e, now);
}

int main(int argc, char **argv)
{
	bench_init(argv[0]);
	struct echo_client e = { .conns = 64, .size = 64, .seconds = 2, .warmup = 0.3 };
	struct opt opts[] = {
		OPT_U("port", &e.port, 1, 65535, "the server's port on 127.0.0.1"),
		OPT_U("report-fd", &e.report_fd, 3, 1 << 20, "the pipe to the server"),
		OPT_U("conns", &e.conns, 1, 1 << 20, "connections"),
		OPT_U("size", &e.size, 1, 1 << 20, "bytes per message"),
		OPT_D("seconds", &e.seconds, 0.001, 3600, "measure for this long"),
		OPT_U("messages", &e.messages, 0, 1e12, "measure this many messages instead (0: by time)"),
		OPT_D("warmup", &e.warmup, 0, 3600, "seconds before measuring"),
	};
	opts_parse(argc, argv, opts, sizeof(opts) / sizeof(opts[0]),
		   "The load generator of build/bench/echo (which starts it).");
	if (!opts[0].given || !opts[1].given)
		die("--port and --report-fd are required (build/bench/echo starts this program)");

	pattern_init(e.size);
	nofile_at_least(e.conns + 64);
	e.c = calloc(e.conns, sizeof(*e.c));
	e.rx = malloc(e.size);
	e.ep = epoll_create1(EPOLL_CLOEXEC);
	if (!e.c || !e.rx)
		die("out of memory");
	if (e.ep < 0)
		die_err(errno, "epoll_create1");
	for (unsigned i = 0; i < e.conns; i++) {
		e.c[i].fd = net_connect((unsigned)e.port);
		if (fcntl(e.c[i].fd, F_SETFL, O_NONBLOCK) < 0)
			die_err(errno, "fcntl O_NONBLOCK");
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = i };
		if (epoll_ctl(e.ep, EPOLL_CTL_ADD, e.c[i].fd, &ev) < 0)
			die_err(errno, "epoll_ctl");
	}

	e.t_start = now_ns();
	e.phase = WARMUP;
	advance_phase(&e, e.t_start);
	for (unsigned i = 0; i < e.conns && may_issue(&e); i++)
		issue(&e, i, now_ns());

	unsigned max_ev = e.conns < 1024 ? (unsigned)e.conns : 1024;
	struct epoll_event *evs = calloc(max_ev, sizeof(*evs));
	if (!evs)
		die("out of memory");
	while (e.phase != DRAIN || e.busy > 0) {
		int n = epoll_wait(e.ep, evs, (int)max_ev, STALL_MS);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die_err(errno, "epoll_wait");
		if (n == 0)
			die("no echo for %d ms (%u messages in flight)", STALL_MS, e.busy);
		uint64_t now = now_ns();
		for (int k = 0; k < n; k++) {
			unsigned i = evs[k].data.u32;
			if (evs[k].events & EPOLLOUT)
				send_more(&e, i);
			if (evs[k].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
				received(&e, i, now);
		}
		advance_phase(&e, now);
	}

	struct echo_record r = {
		.kind = ECHO_END,
		.conns = (uint32_t)e.conns,
		.msgs = e.done,
		.elapsed_ns = e.t_end - e.t_measure,
		.p50_ns = latency_percentile(&e.lat, 50),
		.p90_ns = latency_percentile(&e.lat, 90),
		.p99_ns = latency_percentile(&e.lat, 99),
		.p999_ns = latency_percentile(&e.lat, 99.9),
	};
	write_full((int)e.report_fd, &r, sizeof(r));
	for (unsigned i = 0; i < e.conns; i++)
		close(e.c[i].fd);
	close(e.ep);
	close((int)e.report_fd);
	free(evs);
	free(e.c);
	free(e.rx);
	return 0;
}
