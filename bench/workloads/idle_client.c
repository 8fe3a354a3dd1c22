/*
 * idle_client: the load generator of the idle workload (idle.h), started by
 * idle_prealloc or idle_select without bufsel. Opens --conns connections,
 * waits until the server says every receive is pending, then runs --rounds
 * rounds: picks --active distinct connections at random (a fixed sequence
 * from --seed), sends one message of --size bytes on each, and waits for all
 * of them to come back, checking every byte. Reports the messages and the
 * time the rounds took to the server over a pipe, then closes every
 * connection.
 *
 * Plain blocking sends and poll: bufsel's inherited seccomp filter would
 * kill a process that uses io_uring without bufsel.
 */
#define _GNU_SOURCE
#include "bench/workloads/bench.h"
#include "bench/workloads/idle.h"
#include "bench/workloads/net.h"
#include "bench/workloads/opts.h"
#include "bench/workloads/pattern.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define STALL_MS 10000

struct idle_client {
	unsigned long port, conns, active, rounds, size, seed, report_fd, ready_fd;
	int *fd;
	unsigned *perm;	/* connection indices; a round uses the first `active` */
	unsigned *got;	/* bytes echoed so far, per active slot */
	struct pollfd *pfd;
	unsigned char *rx;
	uint64_t rng;
};

static uint64_t next_rand(struct idle_client *c)
{
	c->rng ^= c->rng >> 12;
	c->rng ^= c->rng << 25;
	c->rng ^= c->rng >> 27;
	return c->rng * 2685821657736338717u;
}

/* A partial Fisher-Yates shuffle: the first `active` of perm are a fresh random choice. */
static void pick(struct idle_client *c)
{
	for (unsigned i = 0; i < c->active; i++) {
		unsigned j = i + (unsigned)(next_rand(c) % (c->conns - i));
		unsigned t = c->perm[i];
		c->perm[i] = c->perm[j];
		c->perm[j] = t;
	}
}

static void send_all(int fd, const unsigned char *p, size_t len, unsigned conn)
{
	while (len > 0) {
		ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			die_err(errno, "connection %u: send", conn);
		p += w;
		len -= (size_t)w;
	}
}

static void round_trip(struct idle_client *c, uint64_t round)
{
	pick(c);
	for (unsigned k = 0; k < c->active; k++) {
		unsigned i = c->perm[k];
		send_all(c->fd[i], pattern_at(pattern_pos(i, round)), c->size, i);
		c->got[k] = 0;
		c->pfd[k] = (struct pollfd){ .fd = c->fd[i], .events = POLLIN };
	}
	unsigned left = (unsigned)c->active;
	while (left > 0) {
		int n = poll(c->pfd, c->active, STALL_MS);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die_err(errno, "poll");
		if (n == 0)
			die("round %llu: %u of %lu echoes missing after %d ms", (unsigned long long)round, left, c->active,
			    STALL_MS);
		for (unsigned k = 0; k < c->active; k++) {
			if (!c->pfd[k].revents)
				continue;
			unsigned i = c->perm[k];
			ssize_t r = recv(c->fd[i], c->rx, c->size, MSG_DONTWAIT);
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (r < 0)
				die_err(errno, "connection %u: recv", i);
			if (r == 0)
				die("connection %u: closed by the server in round %llu", i, (unsigned long long)round);
			if (c->got[k] + (size_t)r > c->size)
				die("connection %u: %zd bytes more than the message in round %llu", i, r,
				    (unsigned long long)round);
			char what[80];
			snprintf(what, sizeof(what), "connection %u round %llu bytes %u..%zu", i,
				 (unsigned long long)round, c->got[k], c->got[k] + (size_t)r);
			pattern_check(c->rx, (size_t)r, pattern_pos(i, round) + c->got[k], what);
			c->got[k] += (unsigned)r;
			if (c->got[k] == c->size) {
				c->pfd[k].fd = -1; /* poll skips it from now on */
				left--;
			}
		}
	}
}

int main(int argc, char **argv)
{
	bench_init(argv[0]);
	struct idle_client c = { .conns = 10000, .active = 100, .rounds = 500, .size = 512, .seed = 1 };
	struct opt opts[] = {
		OPT_U("port", &c.port, 1, 65535, "the server's port on 127.0.0.1"),
		OPT_U("report-fd", &c.report_fd, 3, 1 << 20, "the pipe to the server"),
		OPT_U("ready-fd", &c.ready_fd, 3, 1 << 20, "the pipe from the server"),
		OPT_U("conns", &c.conns, 1, 1 << 20, "connections"),
		OPT_U("active", &c.active, 1, 1 << 20, "connections active in each round"),
		OPT_U("rounds", &c.rounds, 1, 1e12, "rounds"),
		OPT_U("size", &c.size, 1, 1 << 20, "bytes per message"),
		OPT_U("seed", &c.seed, 0, 1e19, "seeds the choice of connections"),
	};
	opts_parse(argc, argv, opts, sizeof(opts) / sizeof(opts[0]),
		   "The load generator of build/bench/idle_prealloc and idle_select (which start it).");
	if (!opts[0].given || !opts[1].given || !opts[2].given)
		die("--port, --report-fd and --ready-fd are required (the idle servers start this program)");
	if (c.active > c.conns)
		die("--active %lu is more than --conns %lu", c.active, c.conns);

	pattern_init(c.size);
	nofile_at_least(c.conns + 64);
	c.fd = calloc(c.conns, sizeof(*c.fd));
	c.perm = calloc(c.conns, sizeof(*c.perm));
	c.got = calloc(c.active, sizeof(*c.got));
	c.pfd = calloc(c.active, sizeof(*c.pfd));
	c.rx = malloc(c.size);
	if (!c.fd || !c.perm || !c.got || !c.pfd || !c.rx)
		die("out of memory");
	c.rng = c.seed * 0x9e3779b97f4a7c15u | 1;
	for (unsigned i = 0; i < c.conns; i++) {
		c.fd[i] = net_connect((unsigned)c.port);
		c.perm[i] = i;
	}
	char ready;
	struct pollfd rp = { .fd = (int)c.ready_fd, .events = POLLIN };
	if (poll(&rp, 1, 30000) != 1 || read_full((int)c.ready_fd, &ready, 1) < 0 || ready != 'R')
		die("the server did not say it was ready within 30 s");

	uint64_t t0 = now_ns();
	for (uint64_t r = 0; r < c.rounds; r++)
		round_trip(&c, r);
	struct idle_record rec = { .msgs = c.rounds * c.active, .elapsed_ns = now_ns() - t0 };
	write_full((int)c.report_fd, &rec, sizeof(rec));
	for (unsigned i = 0; i < c.conns; i++)
		close(c.fd[i]);
	close((int)c.report_fd);
	close((int)c.ready_fd);
	free(c.fd);
	free(c.perm);
	free(c.got);
	free(c.pfd);
	free(c.rx);
	return 0;
}
