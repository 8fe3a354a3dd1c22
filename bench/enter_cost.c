/*
 * enter_cost: what one io_uring round trip costs on each interception path.
 *
 * Build (no Makefile rule; from the project root):
 *   mkdir -p build/bench && cc -O2 -o build/bench/enter_cost bench/enter_cost.c -luring
 *
 * Run:
 *   build/bench/enter_cost [N [variant,...]]
 *     N        iterations per run (default 200000); each variant does N/10
 *              warm-up iterations, then 5 timed runs of N, and prints the median
 *     variant  comma-separated subset of the variants below (default: all)
 *
 * Variants, each printed as one line "variant=<name> ns_per_op=<median> ":
 *   liburing      one NOP per io_uring_submit_and_wait(ring, 1), reaped with
 *                 io_uring_peek_cqe + io_uring_cqe_seen (ring of 8 entries).
 *                 Debian's liburing.so.2 (2.3) enters with an inline `syscall`
 *                 instruction: under bufsel this is the seccomp trap path.
 *   libc_syscall  the same NOP, filled with liburing's inline helpers, but
 *                 submitted with libc syscall(__NR_io_uring_enter, fd, 1, 1,
 *                 IORING_ENTER_GETEVENTS, NULL, 0): under bufsel this is the
 *                 libc hook path (ring of 8 entries).
 *   libc_all      fio style, no liburing: io_uring_setup and io_uring_enter
 *                 through libc syscall(), the SQ ring, CQ ring and SQE array
 *                 mapped with libc mmap(); one NOP per enter (8 entries).  Under
 *                 bufsel every call of this variant, setup included, takes the
 *                 libc hook path and none traps.
 *   batch32       32 NOPs per io_uring_submit_and_wait(ring, 32), reported per
 *                 NOP (ring of 32 entries: 8 cannot hold 32 SQEs).
 *   getppid       getppid() through glibc's wrapper (an inline syscall, not
 *                 trapped): shows what an installed filter adds to every
 *                 system call it does not trap.
 *   dup_close     close(dup(0)), reported per pair: libc close() is hooked by
 *                 bufsel (it must not let the program close bufsel's own fds),
 *                 so this shows what the close hook costs a program that
 *                 opens and closes fds, with or without io_uring.
 *
 * Under valgrind, set ENTER_COST_RUNS=1 to do one run without warm-up, so an
 * instruction count divided by N is the count per operation.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_RUNS 5

static void die(const char *what, int err)
{
	fprintf(stderr, "enter_cost: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void reap(struct io_uring *ring, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct io_uring_cqe *cqe;
		int r = io_uring_peek_cqe(ring, &cqe);
		if (r)
			die("io_uring_peek_cqe", r);
		if (cqe->res != 0)
			die("NOP completion", cqe->res);
		io_uring_cqe_seen(ring, cqe);
	}
}

static struct io_uring_sqe *get_sqe(struct io_uring *ring)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	if (!sqe)
		die("io_uring_get_sqe", EBUSY);
	io_uring_prep_nop(sqe);
	return sqe;
}

/* Returns operations done (NOPs or syscalls). */
static __attribute__((noinline)) unsigned long loop_liburing(struct io_uring *ring, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		get_sqe(ring);
		int r = io_uring_submit_and_wait(ring, 1);
		if (r != 1)
			die("io_uring_submit_and_wait", r < 0 ? r : EIO);
		reap(ring, 1);
	}
	return n;
}

/*
 * What liburing 2.3's io_uring_submit does before it enters: publish the
 * SQEs taken with io_uring_get_sqe by moving the SQ tail.  liburing 2.3 fills
 * the SQ array with the identity at setup; it is written here too so the
 * loop does not depend on that.
 */
static void flush_sq(struct io_uring *ring)
{
	struct io_uring_sq *sq = &ring->sq;
	for (unsigned t = sq->sqe_head; t != sq->sqe_tail; t++)
		sq->array[t & sq->ring_mask] = t & sq->ring_mask;
	sq->sqe_head = sq->sqe_tail;
	io_uring_smp_store_release(sq->ktail, sq->sqe_tail);
}

static __attribute__((noinline)) unsigned long loop_libc_syscall(struct io_uring *ring, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		get_sqe(ring);
		flush_sq(ring);
		long r = syscall(__NR_io_uring_enter, ring->ring_fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0);
		if (r != 1)
			die("syscall(io_uring_enter)", r < 0 ? errno : EIO);
		reap(ring, 1);
	}
	return n;
}

/* The libc_all ring: what fio keeps, mapped the way fio maps it. */
static struct raw_ring {
	int fd;
	unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
	void *sq_map, *sqes_map, *cq_map;
	size_t sq_len, sqes_len, cq_len;
} raw;

static void raw_init(unsigned entries)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	raw.fd = (int)syscall(__NR_io_uring_setup, entries, &p);
	if (raw.fd < 0)
		die("syscall(io_uring_setup)", errno);
	raw.sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	raw.sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
	raw.cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	raw.sq_map = mmap(NULL, raw.sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, raw.fd,
			  IORING_OFF_SQ_RING);
	raw.sqes_map = mmap(NULL, raw.sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
			    raw.fd, IORING_OFF_SQES);
	raw.cq_map = mmap(NULL, raw.cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, raw.fd,
			  IORING_OFF_CQ_RING);
	if (raw.sq_map == MAP_FAILED || raw.sqes_map == MAP_FAILED || raw.cq_map == MAP_FAILED)
		die("mmap(ring)", errno);
	char *sq = raw.sq_map, *cq = raw.cq_map;
	raw.sq_tail = (unsigned *)(sq + p.sq_off.tail);
	raw.sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
	raw.sq_array = (unsigned *)(sq + p.sq_off.array);
	raw.cq_head = (unsigned *)(cq + p.cq_off.head);
	raw.cq_tail = (unsigned *)(cq + p.cq_off.tail);
	raw.cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
	raw.cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
	raw.sqes = raw.sqes_map;
}

static void raw_exit(void)
{
	munmap(raw.sqes_map, raw.sqes_len);
	munmap(raw.cq_map, raw.cq_len);
	munmap(raw.sq_map, raw.sq_len);
	close(raw.fd);
}

static __attribute__((noinline)) unsigned long loop_libc_all(struct io_uring *ring, unsigned long n)
{
	(void)ring;
	for (unsigned long i = 0; i < n; i++) {
		unsigned tail = *raw.sq_tail, idx = tail & *raw.sq_mask;
		io_uring_prep_nop(&raw.sqes[idx]);
		raw.sq_array[idx] = idx;
		io_uring_smp_store_release(raw.sq_tail, tail + 1);
		long r = syscall(__NR_io_uring_enter, raw.fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0);
		if (r != 1)
			die("syscall(io_uring_enter)", r < 0 ? errno : EIO);
		unsigned head = *raw.cq_head;
		if (head == io_uring_smp_load_acquire(raw.cq_tail))
			die("libc_all: completion missing", EIO);
		if (raw.cqes[head & *raw.cq_mask].res != 0)
			die("NOP completion", raw.cqes[head & *raw.cq_mask].res);
		io_uring_smp_store_release(raw.cq_head, head + 1);
	}
	return n;
}

static __attribute__((noinline)) unsigned long loop_batch32(struct io_uring *ring, unsigned long n)
{
	unsigned long batches = (n + 31) / 32;
	for (unsigned long b = 0; b < batches; b++) {
		for (int i = 0; i < 32; i++)
			get_sqe(ring);
		int r = io_uring_submit_and_wait(ring, 32);
		if (r != 32)
			die("io_uring_submit_and_wait(32)", r < 0 ? r : EIO);
		reap(ring, 32);
	}
	return batches * 32;
}

static __attribute__((noinline)) unsigned long loop_getppid(struct io_uring *ring, unsigned long n)
{
	(void)ring;
	for (unsigned long i = 0; i < n; i++)
		if (getppid() < 0)
			die("getppid", errno);
	return n;
}

static __attribute__((noinline)) unsigned long loop_dup_close(struct io_uring *ring, unsigned long n)
{
	(void)ring;
	for (unsigned long i = 0; i < n; i++)
		if (close(dup(0)) < 0)
			die("close(dup(0))", errno);
	return n;
}

struct variant {
	const char *name;
	unsigned entries;	/* 0: no liburing ring */
	int raw;		/* 1: the libc_all ring instead */
	unsigned long (*loop)(struct io_uring *, unsigned long);
};

static const struct variant variants[] = {
	{ "liburing", 8, 0, loop_liburing },
	{ "libc_syscall", 8, 0, loop_libc_syscall },
	{ "libc_all", 0, 1, loop_libc_all },
	{ "batch32", 32, 0, loop_batch32 },
	{ "getppid", 0, 0, loop_getppid },
	{ "dup_close", 0, 0, loop_dup_close },
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int wanted(const char *list, const char *name)
{
	if (!list)
		return 1;
	size_t len = strlen(name);
	for (const char *p = list; *p;) {
		const char *end = strchr(p, ',');
		size_t l = end ? (size_t)(end - p) : strlen(p);
		if (l == len && !strncmp(p, name, len))
			return 1;
		p += l + (end ? 1 : 0);
	}
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 200000;
	const char *only = argc > 2 ? argv[2] : NULL;
	const char *runs_env = getenv("ENTER_COST_RUNS");
	int runs = runs_env ? atoi(runs_env) : MAX_RUNS;
	if (runs < 1 || runs > MAX_RUNS)
		runs = MAX_RUNS;
	int warm = runs == MAX_RUNS;
	if (!n)
		n = 1;

	for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
		const struct variant *var = &variants[v];
		if (!wanted(only, var->name))
			continue;
		struct io_uring ring;
		if (var->entries) {
			int r = io_uring_queue_init(var->entries, &ring, 0);
			if (r)
				die("io_uring_queue_init", r);
		}
		if (var->raw)
			raw_init(8);
		if (warm)
			var->loop(&ring, n / 10 ? n / 10 : 1);
		double ns[MAX_RUNS];
		for (int i = 0; i < runs; i++) {
			double t0 = now_ns();
			unsigned long ops = var->loop(&ring, n);
			ns[i] = (now_ns() - t0) / (double)ops;
		}
		qsort(ns, (size_t)runs, sizeof(ns[0]), cmp_double);
		printf("variant=%s ns_per_op=%.1f \n", var->name, ns[runs / 2]);
		fflush(stdout);
		if (var->entries)
			io_uring_queue_exit(&ring);
		if (var->raw)
			raw_exit();
	}
	return 0;
}
