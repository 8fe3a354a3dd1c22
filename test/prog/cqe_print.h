/*
 * Output helpers shared by the integration programs.
 *
 * The runner compares a program's stdout natively and under bufsel byte for
 * byte, so everything printed here must be a pure function of the operations
 * performed: CQE fields, fd numbers the kernel hands out, deterministic checks.
 * Never print addresses, pids, timings or anything the scheduler decides.
 *
 * stdout is switched to line buffering before main: each line reaches the pipe
 * as soon as it ends, so nothing is duplicated by fork() or lost by exec/_exit.
 *
 * A program that uses no liburing defines CQE_PRINT_NO_LIBURING before
 * including this file; it then gets the kernel's struct definitions only.
 */
#ifndef BUFSEL_TEST_CQE_PRINT_H
#define BUFSEL_TEST_CQE_PRINT_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifdef CQE_PRINT_NO_LIBURING
#include <linux/io_uring.h>
#else
#include <liburing.h>
#endif

__attribute__((constructor)) static void cqe_print_stdio_init(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
}

static inline void cqe_print(const struct io_uring_cqe *cqe)
{
	printf("cqe ud=%llu res=%d flags=0x%x\n", (unsigned long long)cqe->user_data,
	       cqe->res, cqe->flags);
}

__attribute__((noreturn, format(printf, 1, 2)))
static inline void die(const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* One deterministic check line: "note <text>". */
__attribute__((format(printf, 1, 2)))
static inline void note(const char *fmt, ...)
{
	va_list ap;
	char line[512];
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	printf("note %s\n", line);
}

static inline int cqe_cmp_ud(const void *a, const void *b)
{
	const struct io_uring_cqe *x = a, *y = b;
	if (x->user_data != y->user_data)
		return x->user_data < y->user_data ? -1 : 1;
	return x->res < y->res ? -1 : x->res > y->res;
}

/* For batches whose completion order the kernel does not fix. */
static inline void cqe_print_sorted(struct io_uring_cqe *cqes, unsigned n)
{
	qsort(cqes, n, sizeof(*cqes), cqe_cmp_ud);
	for (unsigned i = 0; i < n; i++)
		cqe_print(&cqes[i]);
}

/* The io_uring system calls through libc, -errno on failure, for the
 * programs that pass what liburing would refuse to. */
static inline long raw_enter(int fd, unsigned to_submit, unsigned min, unsigned flags, const void *arg,
			     size_t argsz)
{
	long ret = syscall(__NR_io_uring_enter, fd, to_submit, min, flags, arg, argsz);
	return ret < 0 ? -errno : ret;
}

static inline long raw_register(int fd, unsigned op, const void *arg, unsigned nr)
{
	long ret = syscall(__NR_io_uring_register, fd, op, arg, nr);
	return ret < 0 ? -errno : ret;
}

/* One byte through a pipe: the turns of two processes or threads. */
static inline void token_send(int fd)
{
	if (write(fd, "x", 1) != 1)
		die("pipe write: %s", strerror(errno));
}

static inline void token_wait(int fd)
{
	char c;
	if (read(fd, &c, 1) != 1)
		die("pipe read: %s", strerror(errno));
}

/* A thread's body: "hello" to the fd *arg points at, 50 ms after it starts
 * (data that comes while the program waits). */
static inline void *hello_in_50ms(void *arg)
{
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	if (write(*(const int *)arg, "hello", 5) != 5)
		die("write: %s", strerror(errno));
	return NULL;
}

#ifndef CQE_PRINT_NO_LIBURING
/*
 * Waits for n CQEs, copying each out before marking it seen (the slot may be
 * reused by the kernel right after). Only the 16-byte CQE is copied: on a CQE32
 * ring the extra words carry nothing for the operations used here.
 */
static inline void reap(struct io_uring *ring, struct io_uring_cqe *out, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct io_uring_cqe *cqe;
		int ret = io_uring_wait_cqe(ring, &cqe);
		if (ret < 0)
			die("wait_cqe %u/%u: %s", i + 1, n, strerror(-ret));
		out[i] = *cqe;
		io_uring_cqe_seen(ring, cqe);
	}
}

/* Reaps n CQEs and prints them in the order the ring delivered them. */
static inline void reap_print(struct io_uring *ring, unsigned n)
{
	struct io_uring_cqe c[64];
	if (n > 64)
		die("reap_print: %u > 64", n);
	reap(ring, c, n);
	for (unsigned i = 0; i < n; i++)
		cqe_print(&c[i]);
}

/* Reaps n CQEs of concurrently completing operations and prints them by user_data. */
static inline void reap_print_sorted(struct io_uring *ring, unsigned n)
{
	struct io_uring_cqe c[64];
	if (n > 64)
		die("reap_print_sorted: %u > 64", n);
	reap(ring, c, n);
	cqe_print_sorted(c, n);
}

static inline struct io_uring_sqe *get_sqe(struct io_uring *ring)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	if (!sqe)
		die("SQ full");
	return sqe;
}

/* Submits and checks that the kernel consumed exactly want SQEs. */
static inline void submit_expect(struct io_uring *ring, int want)
{
	int ret = io_uring_submit(ring);
	if (ret != want)
		die("submit returned %d, wanted %d", ret, want);
}

/* Submits n NOPs with user_data ud, ud+1, ... and prints their CQEs. */
static inline void nops_print(struct io_uring *ring, unsigned long long ud, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct io_uring_sqe *sqe = get_sqe(ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = ud + i;
	}
	submit_expect(ring, (int)n);
	for (unsigned done = 0; done < n;) {
		unsigned k = n - done < 64 ? n - done : 64;
		reap_print(ring, k);
		done += k;
	}
}

/* Provides buf (len bytes) as buffer 0 of group bgid, then READs what a
 * pipe holds (data, written first) with buffer select: prints both CQEs
 * (user_data 200 and 201). */
static inline void provided_pipe_read(struct io_uring *ring, char *buf, unsigned len, unsigned short bgid,
				      const char *data)
{
	int p[2];
	size_t n = strlen(data);
	if (pipe(p) || write(p[1], data, n) != (ssize_t)n)
		die("pipe: %s", strerror(errno));
	struct io_uring_sqe *sqe = get_sqe(ring);
	io_uring_prep_provide_buffers(sqe, buf, (int)len, 1, bgid, 0);
	sqe->user_data = 200;
	submit_expect(ring, 1);
	reap_print(ring, 1);
	sqe = get_sqe(ring);
	io_uring_prep_read(sqe, p[0], NULL, len, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = bgid;
	sqe->user_data = 201;
	submit_expect(ring, 1);
	reap_print(ring, 1);
	close(p[0]);
	close(p[1]);
}

/* Asserts that nothing is pending in the CQ right now (without waiting). */
static inline void expect_no_cqe(struct io_uring *ring, const char *what)
{
	struct io_uring_cqe *cqe;
	int ret = io_uring_peek_cqe(ring, &cqe);
	if (ret != -EAGAIN)
		die("%s: unexpected completion (peek %d, ud=%llu res=%d)", what, ret,
		    ret == 0 ? (unsigned long long)cqe->user_data : 0ULL,
		    ret == 0 ? cqe->res : 0);
}
#endif

#endif
