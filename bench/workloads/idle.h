/*
 * The idle workload: many TCP connections, few active. The load generator
 * (idle_client.c, run without bufsel) opens --conns connections, then in
 * each of --rounds rounds sends one message on --active connections picked at
 * random and waits for all of them to be echoed back. Two servers do the same
 * job and differ only in where a receive's memory comes from:
 *
 *   idle_prealloc  a plain RECV into a buffer of its own per connection;
 *   idle_select    a RECV with IOSQE_BUFFER_SELECT from a small group
 *                  (PROVIDE_BUFFERS), each buffer provided again once its
 *                  bytes are echoed.
 *
 * idle_server.c is the server both share; a `struct idle_style` says how
 * receives get their buffers. Each prints
 *   bench: msgs_per_s=.. buffer_bytes_allocated=.. held_peak_bufs=.. held_peak_bytes=..
 */
#ifndef BUFSEL_BENCH_IDLE_H
#define BUFSEL_BENCH_IDLE_H

#include "bench/workloads/ring.h"
#include "bench/workloads/waitlist.h"

#include <stdbool.h>
#include <stdint.h>

/* The generator's report, over a pipe, once its rounds are done. */
struct idle_record {
	uint64_t msgs;
	uint64_t elapsed_ns;
};

enum idle_kind { IK_ACCEPT = 1, IK_RECV, IK_SEND, IK_PROVIDE, IK_PROVIDE_ALL, IK_RECORD };

struct idle_conn {
	unsigned idx;	/* in accept order: the prealloc buffer's index */
	unsigned bid;	/* the selected buffer holding the message */
	char *buf;	/* a copy of the message, being echoed */
	unsigned len, off;
};

struct idle;

struct idle_style {
	const char *name;
	/* Allocates the receive buffers (and provides them); sets buffer_bytes. */
	void (*setup)(struct idle *s);
	void (*arm_recv)(struct idle *s, int fd);
	/* A receive completed with a buffer or none: the buffer that holds res bytes, or NULL. */
	char *(*take)(struct idle *s, int fd, const struct io_uring_cqe *cqe);
	/* The program is done with the buffer take() returned. */
	void (*give_back)(struct idle *s, int fd);
	/* A receive found the group empty: NULL where that cannot happen. */
	void (*enobufs)(struct idle *s, int fd);
	/* A PROVIDE of one buffer completed: NULL where there are none. */
	void (*provided)(struct idle *s, unsigned bid, int res);
	void (*teardown)(struct idle *s);
};

struct idle {
	const struct idle_style *style;
	unsigned long conns, active, rounds, size, bufs, buf_len, seed;
	struct io_uring ring;
	int listen_fd, ready_fd;
	struct idle_conn *by_fd;
	unsigned long nfd;
	char *pool;
	uint64_t buffer_bytes;
	struct waitlist wait;
	struct ring_record rec;
	struct idle_record result;
	bool ended;
	unsigned long accepted, accepting, closed, inflight;
	/* Buffers out of the program's hands, as each style counts them. */
	unsigned long held, held_peak;
};

static inline void idle_held(struct idle *s, long delta)
{
	s->held += (unsigned long)delta;
	if (s->held > s->held_peak)
		s->held_peak = s->held;
}

/* Runs the whole benchmark with a style; returns main's exit status. */
int idle_main(int argc, char **argv, const struct idle_style *style);

#endif
