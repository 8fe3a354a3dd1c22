/*
 * pipe: buffer-selected READs from pipes. A writer thread fills K pipes with
 * writes of --chunk bytes (non-blocking, whichever pipe has room); the
 * io_uring side keeps one READ with IOSQE_BUFFER_SELECT on each pipe, checks
 * the bytes each CQE delivers against the pipe's stream, PROVIDEs the
 * buffer again and READs again. A READ that finds the group empty
 * (-ENOBUFS) is issued again once a PROVIDE completes, or at once when
 * nothing is in flight (waitlist.h).
 *
 * The writer writes for --seconds (after --warmup), or exactly --bytes in
 * all, then closes the pipes; the reader runs to EOF on every pipe and must
 * have read exactly what was written. Prints
 *   bench: gb_per_s=.. ops_per_s=..
 * counted from the end of the warm-up to the last EOF (ops: READ CQEs with
 * data; gb: 10^9 bytes).
 */
#define _GNU_SOURCE
#include "bench/workloads/bench.h"
#include "bench/workloads/opts.h"
#include "bench/workloads/pattern.h"
#include "bench/workloads/ring.h"
#include "bench/workloads/waitlist.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BGID 1
#define STALL_MS 10000

enum kind { K_READ = 1, K_PROVIDE, K_PROVIDE_ALL };

struct pipe_stream {
	int rd, wr;
	uint64_t base;	    /* pattern position of the stream's first byte */
	uint64_t limit;	    /* bytes to write (--bytes), or UINT64_MAX */
	uint64_t written;   /* the writer's */
	uint64_t read;	    /* the reader's */
};

struct pipe_bench {
	unsigned long pipes, chunk, bytes, bufs, buf_len;
	double seconds, warmup;
	struct pipe_stream *p;
	uint64_t t_start;
	struct io_uring ring;
	char *pool;
	struct waitlist wait;
	unsigned long inflight, open_pipes;
	bool measuring;
	uint64_t t_measure, bytes_at, ops_at; /* at the end of the warm-up */
	uint64_t bytes_read, ops;
};

static void *writer(void *arg)
{
	struct pipe_bench *b = arg;
	uint64_t stop = b->bytes ? UINT64_MAX : b->t_start + (uint64_t)((b->warmup + b->seconds) * 1e9);
	struct pollfd *pfd = calloc(b->pipes, sizeof(*pfd));
	unsigned *idx = calloc(b->pipes, sizeof(*idx));
	if (!pfd || !idx)
		die("writer: out of memory");
	for (;;) {
		unsigned n = 0;
		bool timeout = now_ns() >= stop;
		for (unsigned i = 0; i < b->pipes; i++) {
			struct pipe_stream *s = &b->p[i];
			if (s->wr < 0)
				continue;
			if (timeout || s->written == s->limit) {
				close(s->wr);
				s->wr = -1;
				continue;
			}
			pfd[n] = (struct pollfd){ .fd = s->wr, .events = POLLOUT };
			idx[n++] = i;
		}
		if (n == 0)
			break;
		int r = poll(pfd, n, STALL_MS);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die_err(errno, "writer: poll");
		if (r == 0)
			die("writer: no pipe had room for %d ms", STALL_MS);
		for (unsigned k = 0; k < n; k++) {
			if (!pfd[k].revents)
				continue;
			struct pipe_stream *s = &b->p[idx[k]];
			uint64_t want = b->chunk;
			if (s->limit - s->written < want)
				want = s->limit - s->written;
			ssize_t w = write(s->wr, pattern_at(s->base + s->written), want);
			if (w < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (w < 0)
				die_err(errno, "writer: pipe %u", idx[k]);
			s->written += (uint64_t)w;
		}
	}
	free(pfd);
	free(idx);
	return NULL;
}

static void arm_read(struct pipe_bench *b, unsigned i)
{
	struct io_uring_sqe *sqe = ring_sqe(&b->ring);
	io_uring_prep_read(sqe, b->p[i].rd, NULL, (unsigned)b->buf_len, (uint64_t)-1);
	io_uring_sqe_set_data64(sqe, ring_ud(K_READ, i));
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = BGID;
	b->inflight++;
}

static void give_back(struct pipe_bench *b, unsigned bid)
{
	ring_provide(&b->ring, b->pool + (size_t)bid * b->buf_len, (unsigned)b->buf_len, 1, BGID, bid,
		     ring_ud(K_PROVIDE, bid));
	b->inflight++;
}

static void on_read(void *ctx, unsigned i, const struct io_uring_cqe *cqe)
{
	struct pipe_bench *b = ctx;
	struct pipe_stream *s = &b->p[i];
	bool buf = cqe->flags & IORING_CQE_F_BUFFER;
	unsigned bid = ring_cqe_bid(cqe);
	if (cqe->res == -ENOBUFS && !buf) {
		if (b->inflight > 0) {
			waitlist_push(&b->wait, (int)i);
		} else {
			waitlist_retry(&b->wait);
			arm_read(b, i);
		}
		return;
	}
	if (buf && bid >= b->bufs)
		die("pipe %u: a READ got bid %u, the group has bids 0..%lu", i, bid, b->bufs - 1);
	if (cqe->res < 0)
		die_err(cqe->res, "pipe %u: READ", i);
	if (cqe->res == 0) {
		if (buf)
			give_back(b, bid);
		b->open_pipes--;
		return;
	}
	if (!buf)
		die("pipe %u: READ of %d bytes without IORING_CQE_F_BUFFER", i, cqe->res);
	if ((unsigned long)cqe->res > b->buf_len)
		die("pipe %u: READ of %d bytes into a buffer of %lu", i, cqe->res, b->buf_len);
	char what[80];
	snprintf(what, sizeof(what), "pipe %u bytes %llu..%llu (bid %u)", i, (unsigned long long)s->read,
		 (unsigned long long)s->read + (unsigned)cqe->res, bid);
	pattern_check(b->pool + (size_t)bid * b->buf_len, (size_t)cqe->res, s->base + s->read, what);
	s->read += (unsigned)cqe->res;
	b->bytes_read += (unsigned)cqe->res;
	b->ops++;
	give_back(b, bid);
	arm_read(b, i);
}

static void on_provide(void *ctx, unsigned bid, const struct io_uring_cqe *cqe)
{
	struct pipe_bench *b = ctx;
	if (cqe->res != 0)
		die_err(cqe->res, "provide buffer %u", bid);
	int i;
	if (waitlist_pop(&b->wait, &i))
		arm_read(b, (unsigned)i);
}

static void on_provide_all(void *ctx, unsigned arg, const struct io_uring_cqe *cqe)
{
	struct pipe_bench *b = ctx;
	(void)arg;
	if (cqe->res != 0)
		die_err(cqe->res, "provide %lu buffers of %lu bytes", b->bufs, b->buf_len);
}

static ring_handler *const handlers[] = {
	[K_READ] = on_read,
	[K_PROVIDE] = on_provide,
	[K_PROVIDE_ALL] = on_provide_all,
};

static void run(struct pipe_bench *b)
{
	while (b->open_pipes > 0 || b->inflight > 0) {
		ring_reap(&b->ring, handlers, sizeof(handlers) / sizeof(handlers[0]), b, &b->inflight);
		int i;
		if (b->inflight == 0 && waitlist_pop(&b->wait, &i))
			arm_read(b, (unsigned)i); /* no PROVIDE is coming (waitlist.h) */
		if (!b->measuring && now_ns() - b->t_start >= (uint64_t)(b->warmup * 1e9)) {
			b->measuring = true;
			b->t_measure = now_ns();
			b->bytes_at = b->bytes_read;
			b->ops_at = b->ops;
		}
	}
}

int main(int argc, char **argv)
{
	bench_init(argv[0]);
	struct pipe_bench b = { .pipes = 4, .chunk = 4096, .seconds = 2, .warmup = 0.2 };
	struct opt opts[] = {
		OPT_U("pipes", &b.pipes, 1, 4096, "pipes, one READ in flight on each"),
		OPT_U("chunk", &b.chunk, 1, 1 << 20, "bytes per write"),
		OPT_D("seconds", &b.seconds, 0.001, 3600, "measure for this long"),
		OPT_U("bytes", &b.bytes, 0, 1e15, "write exactly this many bytes in all instead (0: by time)"),
		OPT_D("warmup", &b.warmup, 0, 3600, "seconds not measured at the start"),
		OPT_U("bufs", &b.bufs, 1, 65536, "buffers in the group (default: 2 x pipes)"),
		OPT_U("buf-len", &b.buf_len, 1, 1 << 24, "bytes per buffer, the READ length (default: chunk)"),
	};
	opts_parse(argc, argv, opts, sizeof(opts) / sizeof(opts[0]),
		   "Buffer-selected READs from pipes fed by a writer thread, every byte checked.\n"
		   "Prints: bench: gb_per_s= ops_per_s=");
	if (!b.bufs)
		b.bufs = 2 * b.pipes > 65536 ? 65536 : 2 * b.pipes;
	if (!b.buf_len)
		b.buf_len = b.chunk;

	pattern_init(b.chunk > b.buf_len ? b.chunk : b.buf_len);
	nofile_at_least(2 * b.pipes + 64);
	b.p = calloc(b.pipes, sizeof(*b.p));
	if (posix_memalign((void **)&b.pool, 4096, b.bufs * b.buf_len) || !b.p)
		die("out of memory");
	memset(b.pool, 0, b.bufs * b.buf_len);
	for (unsigned i = 0; i < b.pipes; i++) {
		int fds[2];
		if (pipe2(fds, O_CLOEXEC) < 0)
			die_err(errno, "pipe");
		if (fcntl(fds[1], F_SETFL, O_NONBLOCK) < 0)
			die_err(errno, "fcntl O_NONBLOCK");
		b.p[i] = (struct pipe_stream){
			.rd = fds[0],
			.wr = fds[1],
			.base = pattern_pos(i, 0),
			.limit = b.bytes ? b.bytes / b.pipes + (i < b.bytes % b.pipes) : UINT64_MAX,
		};
	}
	ring_init(&b.ring, 256, 1024 > 4 * b.pipes ? 1024 : (unsigned)(4 * b.pipes));
	ring_provide(&b.ring, b.pool, (unsigned)b.buf_len, (unsigned)b.bufs, BGID, 0, ring_ud(K_PROVIDE_ALL, 0));
	b.inflight++;
	b.open_pipes = b.pipes;
	for (unsigned i = 0; i < b.pipes; i++)
		arm_read(&b, i);

	b.t_start = now_ns();
	pthread_t w;
	int err = pthread_create(&w, NULL, writer, &b);
	if (err)
		die_err(err, "pthread_create");
	run(&b);
	uint64_t t_end = now_ns();
	err = pthread_join(w, NULL);
	if (err)
		die_err(err, "pthread_join");

	uint64_t total = 0;
	for (unsigned i = 0; i < b.pipes; i++) {
		struct pipe_stream *s = &b.p[i];
		if (s->read != s->written)
			die("pipe %u: %llu bytes written, %llu read", i, (unsigned long long)s->written,
			    (unsigned long long)s->read);
		if (b.bytes && s->written != s->limit)
			die("pipe %u: %llu bytes written, %llu asked", i, (unsigned long long)s->written,
			    (unsigned long long)s->limit);
		total += s->read;
		close(s->rd);
	}
	ring_check_group(&b.ring, BGID, (unsigned)b.bufs);
	if (!b.measuring || b.ops == b.ops_at)
		die("nothing was measured: the whole run (%llu bytes) fell in the %g s warm-up",
		    (unsigned long long)total, b.warmup);
	double secs = (double)(t_end - b.t_measure) / 1e9;
	printf("pipe: pipes=%lu chunk=%lu bufs=%lu buf_len=%lu bytes=%llu reads=%llu enobufs=%lu (%lu issued again at "
	       "once)\n",
	       b.pipes, b.chunk, b.bufs, b.buf_len, (unsigned long long)total, (unsigned long long)b.ops, b.wait.total,
	       b.wait.at_once);
	printf("bench: gb_per_s=%.4f ops_per_s=%.1f\n", (double)(b.bytes_read - b.bytes_at) / secs / 1e9,
	       (double)(b.ops - b.ops_at) / secs);

	io_uring_queue_exit(&b.ring);
	waitlist_free(&b.wait);
	free(b.pool);
	free(b.p);
	return 0;
}
