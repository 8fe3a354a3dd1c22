/*
 * file: buffer-selected READs from a regular file in the page cache. Creates
 * a temporary file (--file-mb MiB, unlinked at once, synced so that no
 * writeback runs during the measurement), reads it through once, which both
 * warms the cache and checks it, then keeps --qd READs with
 * IOSQE_BUFFER_SELECT in flight at pseudo-random --block aligned offsets
 * (a fixed sequence from --seed). Each CQE must deliver the whole block, and
 * its bytes must be the file's at that offset; the buffer is PROVIDEd again
 * and the next READ issued behind it. A READ that finds the group empty
 * (-ENOBUFS) is issued again, same offset, once a PROVIDE completes (or at
 * once when nothing is in flight: waitlist.h).
 *
 * Measures for --seconds after --warmup, or exactly --ops READs after it.
 * Prints
 *   bench: ops_per_s=.. gb_per_s=..
 */
#define _GNU_SOURCE
#include "bench/workloads/bench.h"
#include "bench/workloads/opts.h"
#include "bench/workloads/pattern.h"
#include "bench/workloads/ring.h"
#include "bench/workloads/waitlist.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BGID 1
/* The file is written and read through in pieces of this size. */
#define PIECE 65536u

enum kind { K_READ = 1, K_PROVIDE, K_PROVIDE_ALL };
enum phase { WARMUP, MEASURE, DRAIN };

struct file_bench {
	unsigned long file_mb, block, qd, ops, bufs, buf_len, seed;
	double seconds, warmup;
	const char *dir;
	int fd;
	uint64_t nblocks, rng;
	struct io_uring ring;
	char *pool;
	struct waitlist wait;
	unsigned long inflight, reading;
	enum phase phase;
	uint64_t t_start, t_measure, t_end;
	uint64_t issued, done; /* READs of the measurement */
};

static uint64_t next_block(struct file_bench *f)
{
	/* xorshift64*: a fixed sequence of offsets for a seed, whatever the timing. */
	f->rng ^= f->rng >> 12;
	f->rng ^= f->rng << 25;
	f->rng ^= f->rng >> 27;
	return (f->rng * 2685821657736338717u) % f->nblocks;
}

static void make_file(struct file_bench *f)
{
	char path[4096];
	if (snprintf(path, sizeof(path), "%s/bufsel-bench-file-XXXXXX", f->dir) >= (int)sizeof(path))
		die("--dir is too long");
	f->fd = mkostemp(path, O_CLOEXEC);
	if (f->fd < 0)
		die_err(errno, "create a file in %s", f->dir);
	if (unlink(path) < 0)
		die_err(errno, "unlink %s", path);
	uint64_t size = (uint64_t)f->file_mb << 20;
	for (uint64_t off = 0; off < size; off += PIECE)
		if (pwrite(f->fd, pattern_at(off), PIECE, (off_t)off) != (ssize_t)PIECE)
			die_err(errno ? errno : ENOSPC, "write %s at %llu", path, (unsigned long long)off);
	if (fdatasync(f->fd) < 0)
		die_err(errno, "fdatasync");
	char *piece = malloc(PIECE);
	if (!piece)
		die("out of memory");
	for (uint64_t off = 0; off < size; off += PIECE) {
		if (pread(f->fd, piece, PIECE, (off_t)off) != (ssize_t)PIECE)
			die_err(errno ? errno : EIO, "read back %s at %llu", path, (unsigned long long)off);
		pattern_check(piece, PIECE, off, "the file as read back");
	}
	free(piece);
	f->nblocks = size / f->block;
}

static bool may_issue(const struct file_bench *f)
{
	return f->phase == WARMUP || (f->phase == MEASURE && (f->ops == 0 || f->issued < f->ops));
}

static void arm_read(struct file_bench *f, uint32_t block)
{
	struct io_uring_sqe *sqe = ring_sqe(&f->ring);
	io_uring_prep_read(sqe, f->fd, NULL, (unsigned)f->block, block * (uint64_t)f->block);
	io_uring_sqe_set_data64(sqe, ring_ud(K_READ, block));
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = BGID;
	f->inflight++;
	f->reading++;
}

static void issue(struct file_bench *f)
{
	if (f->phase == MEASURE)
		f->issued++;
	arm_read(f, (uint32_t)next_block(f));
}

static void on_read(void *ctx, unsigned block, const struct io_uring_cqe *cqe)
{
	struct file_bench *f = ctx;
	bool buf = cqe->flags & IORING_CQE_F_BUFFER;
	unsigned bid = ring_cqe_bid(cqe);
	uint64_t off = block * (uint64_t)f->block;
	f->reading--;
	if (cqe->res == -ENOBUFS && !buf) {
		if (f->inflight > 0) {
			waitlist_push(&f->wait, (int)block);
			f->reading++; /* still to be done */
		} else {
			waitlist_retry(&f->wait);
			arm_read(f, block);
		}
		return;
	}
	if (cqe->res < 0)
		die_err(cqe->res, "READ of %lu bytes at %llu", f->block, (unsigned long long)off);
	if (!buf)
		die("READ at %llu: %d bytes without IORING_CQE_F_BUFFER", (unsigned long long)off, cqe->res);
	if (bid >= f->bufs)
		die("READ at %llu got bid %u, the group has bids 0..%lu", (unsigned long long)off, bid, f->bufs - 1);
	if ((unsigned long)cqe->res != f->block)
		die("READ at %llu: %d bytes, expected %lu", (unsigned long long)off, cqe->res, f->block);
	char what[64];
	snprintf(what, sizeof(what), "READ at %llu (bid %u)", (unsigned long long)off, bid);
	pattern_check(f->pool + (size_t)bid * f->buf_len, f->block, off, what);
	if (f->phase == MEASURE)
		f->done++;
	ring_provide(&f->ring, f->pool + (size_t)bid * f->buf_len, (unsigned)f->buf_len, 1, BGID, bid,
		     ring_ud(K_PROVIDE, bid));
	f->inflight++;
	if (may_issue(f))
		issue(f);
}

static void on_provide(void *ctx, unsigned bid, const struct io_uring_cqe *cqe)
{
	struct file_bench *f = ctx;
	if (cqe->res != 0)
		die_err(cqe->res, "provide buffer %u", bid);
	int block;
	if (waitlist_pop(&f->wait, &block)) {
		f->reading--;
		arm_read(f, (uint32_t)block);
	}
}

static void advance_phase(struct file_bench *f, uint64_t now)
{
	if (f->phase == WARMUP && now - f->t_start >= (uint64_t)(f->warmup * 1e9)) {
		f->phase = MEASURE;
		f->t_measure = now;
		/* READs in flight began in the warm-up: counted as measured when they complete. */
		f->done = 0;
		f->issued = f->reading;
	}
	if (f->phase == MEASURE &&
	    (f->ops ? f->done >= f->ops : now - f->t_measure >= (uint64_t)(f->seconds * 1e9))) {
		f->phase = DRAIN;
		f->t_end = now;
	}
}

static void on_provide_all(void *ctx, unsigned arg, const struct io_uring_cqe *cqe)
{
	struct file_bench *f = ctx;
	(void)arg;
	if (cqe->res != 0)
		die_err(cqe->res, "provide %lu buffers of %lu bytes", f->bufs, f->buf_len);
}

static ring_handler *const handlers[] = {
	[K_READ] = on_read,
	[K_PROVIDE] = on_provide,
	[K_PROVIDE_ALL] = on_provide_all,
};

static void run(struct file_bench *f)
{
	f->t_start = now_ns();
	advance_phase(f, f->t_start);
	for (unsigned i = 0; i < f->qd && may_issue(f); i++)
		issue(f);
	while (f->inflight > 0) {
		ring_reap(&f->ring, handlers, sizeof(handlers) / sizeof(handlers[0]), f, &f->inflight);
		int block;
		if (f->inflight == 0 && waitlist_pop(&f->wait, &block)) {
			f->reading--;
			arm_read(f, (uint32_t)block); /* no PROVIDE is coming (waitlist.h) */
		}
		advance_phase(f, now_ns());
	}
}

int main(int argc, char **argv)
{
	bench_init(argv[0]);
	const char *tmp = getenv("TMPDIR");
	struct file_bench f = {
		.file_mb = 64, .block = 4096, .qd = 32, .seconds = 2, .warmup = 0.2, .seed = 1,
		.dir = tmp && *tmp ? tmp : "/tmp",
	};
	struct opt opts[] = {
		OPT_U("file-mb", &f.file_mb, 1, 1 << 20, "size of the temporary file in MiB"),
		OPT_U("block", &f.block, 1, PIECE, "bytes per READ, and the offsets' alignment"),
		OPT_U("qd", &f.qd, 1, 65536, "READs in flight"),
		OPT_D("seconds", &f.seconds, 0.001, 3600, "measure for this long"),
		OPT_U("ops", &f.ops, 0, 1e15, "measure exactly this many READs instead (0: by time)"),
		OPT_D("warmup", &f.warmup, 0, 3600, "seconds of READs before measuring"),
		OPT_U("bufs", &f.bufs, 1, 65536, "buffers in the group (default: qd)"),
		OPT_U("buf-len", &f.buf_len, 1, 1 << 24, "bytes per buffer (default: block)"),
		OPT_U("seed", &f.seed, 1, 1e19, "seeds the sequence of offsets"),
		OPT_S("dir", &f.dir, "where the temporary file is made"),
	};
	opts_parse(argc, argv, opts, sizeof(opts) / sizeof(opts[0]),
		   "Buffer-selected READs at random offsets of a file in the page cache, every byte checked.\n"
		   "Prints: bench: ops_per_s= gb_per_s=");
	if (!f.bufs)
		f.bufs = f.qd > 65536 ? 65536 : f.qd;
	if (!f.buf_len)
		f.buf_len = f.block;
	if (f.buf_len < f.block)
		die("--buf-len %lu is shorter than --block %lu: every READ must get a whole block", f.buf_len, f.block);
	if (((uint64_t)f.file_mb << 20) / f.block > UINT32_MAX || ((uint64_t)f.file_mb << 20) % f.block)
		die("--file-mb %lu must be a multiple of --block %lu, with at most 2^32 blocks", f.file_mb, f.block);
	f.rng = f.seed;

	pattern_init(PIECE);
	make_file(&f);
	if (posix_memalign((void **)&f.pool, 4096, f.bufs * f.buf_len))
		die("out of memory");
	memset(f.pool, 0, f.bufs * f.buf_len);
	unsigned cq = 1024;
	while (cq < 4 * f.qd && cq < 65536)
		cq *= 2;
	ring_init(&f.ring, f.qd < 256 ? 256 : (unsigned)(f.qd > 4096 ? 4096 : f.qd), cq);
	ring_provide(&f.ring, f.pool, (unsigned)f.buf_len, (unsigned)f.bufs, BGID, 0, ring_ud(K_PROVIDE_ALL, 0));
	f.inflight++;
	run(&f);
	ring_check_group(&f.ring, BGID, (unsigned)f.bufs);
	if (f.done == 0)
		die("no READ was measured");
	double secs = (double)(f.t_end - f.t_measure) / 1e9;
	printf("file: file_mb=%lu block=%lu qd=%lu bufs=%lu buf_len=%lu reads=%llu enobufs=%lu (%lu issued again at once) "
	       "dir=%s\n",
	       f.file_mb, f.block, f.qd, f.bufs, f.buf_len, (unsigned long long)f.done, f.wait.total, f.wait.at_once,
	       f.dir);
	printf("bench: ops_per_s=%.1f gb_per_s=%.4f\n", (double)f.done / secs,
	       (double)f.done * (double)f.block / secs / 1e9);

	close(f.fd);
	io_uring_queue_exit(&f.ring);
	waitlist_free(&f.wait);
	free(f.pool);
	return 0;
}
