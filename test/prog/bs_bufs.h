/*
 * Helpers shared by the bs_ programs, which pin down how the kernel treats
 * legacy provided buffers (IORING_OP_PROVIDE_BUFFERS, IORING_OP_REMOVE_BUFFERS,
 * IOSQE_BUFFER_SELECT) so that an emulation can be compared against it.
 *
 * Buffers live in arenas: buffer bid of an arena sits at base + bid * len, so
 * the bid in a CQE alone says where its bytes are, and show() can print them.
 * Every completion that carries a buffer (IORING_CQE_F_BUFFER) is followed by
 *   note bid=N data="..."
 * with the res bytes the buffer received (none when res <= 0). Long data is
 * printed as its first bytes, its length and an FNV-1a hash, so a wrong byte
 * anywhere still changes the line.
 */
#ifndef BUFSEL_TEST_BS_BUFS_H
#define BUFSEL_TEST_BS_BUFS_H

/* accept4, SOCK_CLOEXEC: the programs include this header first. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "test/prog/cqe_print.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

struct arena {
	char *base;
	unsigned len; /* each buffer's length */
	unsigned nr;  /* bids 0 .. nr-1 */
};

/*
 * Arenas live until exit: the kernel may still own a buffer when a program
 * ends. They stay reachable from here, so that LeakSanitizer (make asan) and
 * memcheck (make valgrind) do not take them for leaks; volatile, or -O2
 * drops the stores to an array nothing reads.
 */
static char *volatile arena_keep[128];
static unsigned arena_nkeep;

/* Filled with '.', so a byte the kernel did not write is visible if printed. */
static inline struct arena arena_new(unsigned len, unsigned nr)
{
	struct arena a = { .base = malloc((size_t)len * nr), .len = len, .nr = nr };
	if (!a.base || arena_nkeep == sizeof(arena_keep) / sizeof(arena_keep[0]))
		die("arena of %u x %u: out of memory", nr, len);
	arena_keep[arena_nkeep++] = a.base;
	memset(a.base, '.', (size_t)len * nr);
	return a;
}

static inline char *arena_buf(const struct arena *a, unsigned bid)
{
	if (bid >= a->nr)
		die("bid %u outside an arena of %u buffers", bid, a->nr);
	return a->base + (size_t)bid * a->len;
}

static inline unsigned cqe_bid(const struct io_uring_cqe *c)
{
	return c->flags >> IORING_CQE_BUFFER_SHIFT;
}

static inline uint32_t fnv1a(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 16777619u;
	return h;
}

/* "note <prefix>data=\"...\"", escaped; long data shortened with length and hash. */
static inline void note_data(const char *prefix, const char *p, int n)
{
	char esc[256];
	size_t k = 0;
	int shown = n > 40 ? 24 : (n > 0 ? n : 0);
	for (int i = 0; i < shown; i++) {
		unsigned char ch = (unsigned char)p[i];
		if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\')
			esc[k++] = (char)ch;
		else
			k += (size_t)snprintf(esc + k, sizeof(esc) - k, "\\x%02x", ch);
	}
	esc[k] = '\0';
	if (shown < n)
		note("%sdata=\"%s\"... len=%d fnv=0x%08x", prefix, esc, n, fnv1a(p, (size_t)n));
	else
		note("%sdata=\"%s\"", prefix, esc);
}

/* Prints a CQE and, if it carries a buffer of a, the bytes that buffer received. */
static inline void show(const struct io_uring_cqe *c, const struct arena *a)
{
	cqe_print(c);
	if (!(c->flags & IORING_CQE_F_BUFFER))
		return;
	char prefix[32];
	snprintf(prefix, sizeof(prefix), "bid=%u ", cqe_bid(c));
	if (!a) {
		note("%s(no arena to show)", prefix);
		return;
	}
	note_data(prefix, arena_buf(a, cqe_bid(c)), c->res);
}

static inline void reap_show(struct io_uring *ring, unsigned n, const struct arena *a)
{
	struct io_uring_cqe c[64];
	if (n > 64)
		die("reap_show: %u > 64", n);
	reap(ring, c, n);
	for (unsigned i = 0; i < n; i++)
		show(&c[i], a);
}

/*
 * Like cqe_cmp_ud, with flags as a last key: completions that share user_data
 * and res (several cancelled requests under one user_data) still sort one way.
 */
static inline int cqe_cmp_full(const void *a, const void *b)
{
	const struct io_uring_cqe *x = a, *y = b;
	int c = cqe_cmp_ud(a, b);
	if (c)
		return c;
	return x->flags < y->flags ? -1 : x->flags > y->flags;
}

/* For batches whose completion order the kernel does not fix: by user_data. */
static inline void reap_show_sorted(struct io_uring *ring, unsigned n, const struct arena *a)
{
	struct io_uring_cqe c[64];
	if (n > 64)
		die("reap_show_sorted: %u > 64", n);
	reap(ring, c, n);
	qsort(c, n, sizeof(c[0]), cqe_cmp_full);
	for (unsigned i = 0; i < n; i++)
		show(&c[i], a);
}

/* Bids first .. first+count-1 of the arena, into group bgid. */
static inline void prep_provide_arena(struct io_uring_sqe *sqe, const struct arena *a,
				      unsigned bgid, unsigned first, unsigned count)
{
	io_uring_prep_provide_buffers(sqe, arena_buf(a, first), (int)a->len, (int)count,
				      (int)bgid, (int)first);
}

/* Submits one SQE alone, reaps and prints its CQE; returns res. */
static inline int run_one(struct io_uring *ring, struct io_uring_sqe *sqe,
			  unsigned long long ud, const struct arena *a)
{
	struct io_uring_cqe c;
	sqe->user_data = ud;
	submit_expect(ring, 1);
	reap(ring, &c, 1);
	show(&c, a);
	return c.res;
}

static inline int provide(struct io_uring *ring, const struct arena *a, unsigned bgid,
			  unsigned first, unsigned count, unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(ring);
	prep_provide_arena(sqe, a, bgid, first, count);
	return run_one(ring, sqe, ud, NULL);
}

static inline int remove_bufs(struct io_uring *ring, unsigned bgid, unsigned count,
			      unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(ring);
	io_uring_prep_remove_buffers(sqe, (int)count, (int)bgid);
	return run_one(ring, sqe, ud, NULL);
}

/* A READ with buffer select: len 0 asks for the whole buffer. */
static inline struct io_uring_sqe *prep_read_sel(struct io_uring *ring, int fd, unsigned len,
						 unsigned bgid, unsigned long long off,
						 unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(ring);
	io_uring_prep_read(sqe, fd, NULL, len, off);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = (__u16)bgid;
	sqe->user_data = ud;
	return sqe;
}

static inline struct io_uring_sqe *prep_recv_sel(struct io_uring *ring, int fd, unsigned len,
						 int msg_flags, unsigned bgid,
						 unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(ring);
	io_uring_prep_recv(sqe, fd, NULL, len, msg_flags);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = (__u16)bgid;
	sqe->user_data = ud;
	return sqe;
}

/*
 * Which bid the group hands out next, shown without disturbing sockets: a
 * READ with buffer select on a pipe that holds one byte. The buffer it takes
 * is consumed, as any completed read's is.
 */
static inline int next_bid(struct io_uring *ring, unsigned bgid, unsigned long long ud,
			   const struct arena *a)
{
	int p[2];
	if (pipe(p) < 0 || write(p[1], "#", 1) != 1)
		die("pipe: %s", strerror(errno));
	struct io_uring_cqe c;
	prep_read_sel(ring, p[0], 0, bgid, 0, ud);
	submit_expect(ring, 1);
	reap(ring, &c, 1);
	show(&c, a);
	close(p[0]);
	close(p[1]);
	return (c.flags & IORING_CQE_F_BUFFER) ? (int)cqe_bid(&c) : c.res;
}

static inline void write_all(int fd, const void *p, size_t n)
{
	const char *s = p;
	while (n > 0) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("write fd %d: %s", fd, w < 0 ? strerror(errno) : "wrote 0");
		s += w;
		n -= (size_t)w;
	}
}

/*
 * Waits until fd has at least n bytes queued for reading, so that a receive
 * issued next finds all of them (and F_SOCK_NONEMPTY is decided by them), not
 * whatever part loopback delivered so far.
 */
static inline void wait_queued(int fd, int n)
{
	for (int tries = 0; tries < 500; tries++) {
		int q = 0;
		if (ioctl(fd, FIONREAD, &q) < 0)
			die("FIONREAD fd %d: %s", fd, strerror(errno));
		if (q >= n)
			return;
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		poll(&pfd, 1, 10);
	}
	die("fd %d: %d bytes never arrived", fd, n);
}

/* Waits until fd polls with any of the events (bounded: 5 s). */
static inline void wait_poll(int fd, short events)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int ret;
	do
		ret = poll(&pfd, 1, 5000);
	while (ret < 0 && errno == EINTR);
	if (ret != 1)
		die("fd %d: events 0x%x never came", fd, events);
}

/*
 * Nothing completes within a short wait. The wait only makes an early CQE
 * likely to be seen; what the program relies on is that the later steps
 * complete the request with the result they print.  On a kernel without
 * IORING_FEAT_EXT_ARG (before 5.11, or BUFSEL_KERNEL=5.6) liburing 2.3 waits
 * with a TIMEOUT SQE of its own and, when that fires, returns the number of
 * SQEs it submitted with no CQE instead of -ETIME.
 */
static inline void expect_pending(struct io_uring *ring, const char *what)
{
	struct io_uring_cqe *cqe = NULL;
	struct __kernel_timespec ts = { .tv_nsec = 30 * 1000 * 1000 };
	int ret = io_uring_wait_cqe_timeout(ring, &cqe, &ts);
	int timed_out = ret == -ETIME || (ret > 0 && !cqe && !(ring->features & IORING_FEAT_EXT_ARG));
	if (!timed_out)
		die("%s: wanted no completion, wait returned %d (ud=%llu res=%d flags=0x%x)", what, ret,
		    ret == 0 ? (unsigned long long)cqe->user_data : 0ULL, ret == 0 ? cqe->res : 0,
		    ret == 0 ? cqe->flags : 0);
	note("%s: pending", what);
}

/* A connected TCP pair on 127.0.0.1: *a is the accepted end, *b the client. */
static inline void tcp_pair(int *a, int *b)
{
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t sl = sizeof(sa);
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, 1) < 0 ||
	    getsockname(ls, (struct sockaddr *)&sa, &sl) < 0)
		die("listen: %s", strerror(errno));
	*b = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*b < 0 || connect(*b, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect: %s", strerror(errno));
	*a = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
	if (*a < 0)
		die("accept: %s", strerror(errno));
	close(ls);
}

/* For check lines: "note ... yes". */
static inline const char *yesno(int b)
{
	return b ? "yes" : "no";
}

/* Sends all of s on a stream socket. */
static inline void send_str(int fd, const char *s)
{
	if (send(fd, s, strlen(s), MSG_NOSIGNAL) != (ssize_t)strlen(s))
		die("send: %s", strerror(errno));
}

/* Reads what a receive left queued, with a plain non-blocking recv. */
static inline void drain(int fd, const char *why)
{
	char buf[256];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n < 0)
		die("drain: %s", strerror(errno));
	note("%s: %zd bytes still queued, \"%.*s\"", why, n, (int)n, buf);
}

/* Empties a pipe (64 bytes at most) and says what was left in it; an
 * empty pipe is 0 bytes, not a wait. */
static inline void empty_pipe(int fd, const char *why)
{
	char left[64];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n = poll(&p, 1, 0) == 1 ? read(fd, left, sizeof(left)) : 0;
	if (n < 0)
		die("read: %s", strerror(errno));
	note("%s: %zd bytes left, \"%.*s\"", why, n, (int)n, left);
}

/* Reaps CQEs of one multishot request until the one without F_MORE; with
 * mh, a buffer's recvmsg_out header and payload are shown. */
static inline void reap_until_last(struct io_uring *ring, const struct arena *a, const struct msghdr *mh)
{
	for (int i = 0; i < 64; i++) {
		struct io_uring_cqe c;
		reap(ring, &c, 1);
		if (!mh || !(c.flags & IORING_CQE_F_BUFFER)) {
			show(&c, a);
		} else {
			cqe_print(&c);
			char *buf = arena_buf(a, cqe_bid(&c));
			struct io_uring_recvmsg_out *o =
				io_uring_recvmsg_validate(buf, c.res, (struct msghdr *)mh);
			if (!o)
				die("recvmsg_out does not fit in res %d", c.res);
			note("bid=%u recvmsg_out namelen=%u controllen=%u payloadlen=%u flags=0x%x",
			     cqe_bid(&c), o->namelen, o->controllen, o->payloadlen, o->flags);
			unsigned plen = io_uring_recvmsg_payload_length(o, c.res, (struct msghdr *)mh);
			note_data("payload ", io_uring_recvmsg_payload(o, (struct msghdr *)mh), (int)plen);
		}
		if (!(c.flags & IORING_CQE_F_MORE))
			return;
	}
	die("multishot did not end within 64 CQEs");
}

#endif
