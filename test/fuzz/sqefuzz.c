/*
 * sqefuzz: for seeds S..S+N-1, one fresh ring per seed and a few rounds of
 * whole SQEs with random bytes in every field, random pointers, chaos
 * writes to the SQ ring and io_uring_enter with random arguments; prints a
 * canonical transcript on stdout (docs/reliability.md, "Whole-SQE fuzzing").
 * Run it natively and under bufsel and compare:
 *   difffuzz --generator sqefuzz [--keep-going] ...
 *
 *   sqefuzz [--seed S] [--count N] [--rounds R] [--verbose]
 *
 * Transcript of one sequence:
 *   seq <seed> setup=<flags> sq=<entries> cq=<entries>
 *   ring-chaos head=<v> | tail=+<d> | array[<i>]=<v>    what the program wrote
 *   enter <k> submit=<n> min=<m> flags=<f> -> <ret> head=+<d>
 *   cqe ud=<i> res=<r> flags=<f> [buf=<bid>]           sorted by ud (see below)
 *   end ops=<sqes written> cqes=<n> bufs=<n>
 * With --verbose, "# sqe <n> @<index>: ..." lines show the bytes of every SQE
 * written and the SQE array slot it went to, and "# reap ..." lines every CQE
 * in the order it was reaped.
 *
 * Everything is a function of the seed: the SQE bytes, the fds (made afresh
 * for each seed, so their numbers repeat), the memory (an arena at a fixed
 * address, refilled for each seed).  What the kernel orders by timing is
 * canonicalised: CQEs are printed at the end of the sequence, sorted by
 * user_data (stable, so a multishot request's CQEs stay in their order).
 *
 * What is never generated, and why (each would make a run harm the machine,
 * the harness, or be nondeterministic):
 *   - opcodes that name paths or make fds (OPENAT*, UNLINKAT, RENAMEAT,
 *     MKDIRAT, SYMLINKAT, LINKAT, SOCKET, ACCEPT, CONNECT, FIXED_FD_INSTALL),
 *     that close or move fds (CLOSE, FILES_UPDATE, SPLICE, TEE, SHUTDOWN),
 *     that write through fds that may be stdout/stderr (WRITE*, SENDMSG*,
 *     SEND_ZC), that change memory or files outside the request's buffers
 *     (MADVISE, FADVISE, FALLOCATE, FTRUNCATE, *XATTR, SYNC_FILE_RANGE),
 *     that wait on time or other rings (TIMEOUT*, LINK_TIMEOUT, POLL_*,
 *     EPOLL_*, FUTEX_*, WAITID, MSG_RING, URING_CMD, READ_MULTISHOT, PIPE,
 *     BIND, LISTEN, RECV_ZC, NOP128/URING_CMD128 and newer);
 *   - fds other than the seed's own and 0..3 (bufsel's own fds sit near the
 *     top of the range);
 *   - SQPOLL, IOPOLL, SQE128/CQE32 and other setup flags whose rings differ;
 *   - a wait with no bound: GETEVENTS with min_complete > 0 always carries a
 *     10 ms EXT_ARG timeout.
 * SEND only goes to the seed's own sockets (the fd field of a SEND is one
 * of them or a bad fd).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <liburing.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef IORING_ENTER_ABS_TIMER
#define IORING_ENTER_ABS_TIMER (1u << 5)
#endif
#ifndef IORING_ENTER_EXT_ARG_REG
#define IORING_ENTER_EXT_ARG_REG (1u << 6)
#endif

#define ARENA_ADDR 0x310000000000ull	/* fixed: clear of seqfuzz's and bufsel's */
#define ARENA_LEN (1u << 20)
#define NOACCESS_LEN (1u << 16)
#define STRUCTS_OFF (ARENA_LEN - 65536)	/* iovecs and msghdrs the SQEs point to */
#define BAD_FD 200
#define MAX_SQES 256
#define MAX_CQES 8192
#define HANG_SECONDS 20		/* one seed longer than this: SIGALRM, a hang */

static uint64_t rng;
static bool verbose;
static unsigned rounds = 4;
static char *arena;

static uint64_t rnext(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t below(uint32_t n)
{
	return (uint32_t)(((rnext() >> 32) * n) >> 32);
}

static bool pct(unsigned p)
{
	return below(100) < p;
}

/* Weighted tables: the buffer-select opcodes most, a few other safe ones. */
static const struct {
	uint8_t op;
	unsigned weight;
} opcodes[] = {
	{ IORING_OP_READ, 14 }, { IORING_OP_READV, 8 }, { IORING_OP_RECV, 12 }, { IORING_OP_RECVMSG, 8 },
	{ IORING_OP_PROVIDE_BUFFERS, 16 }, { IORING_OP_REMOVE_BUFFERS, 6 }, { IORING_OP_SEND, 5 },
	{ IORING_OP_NOP, 8 }, { IORING_OP_ASYNC_CANCEL, 2 }, { IORING_OP_FSYNC, 1 }, { IORING_OP_READ_FIXED, 1 },
	{ 0xff, 1 },		/* unknown opcode (IORING_OP_LAST and beyond) */
};

static const uint8_t sqe_flag_bits[] = {
	IOSQE_FIXED_FILE, IOSQE_IO_DRAIN, IOSQE_IO_LINK, IOSQE_IO_HARDLINK, IOSQE_ASYNC,
	IOSQE_BUFFER_SELECT, IOSQE_CQE_SKIP_SUCCESS,
};

static const unsigned setup_choices[] = {
	0, 0, 0, IORING_SETUP_SUBMIT_ALL, IORING_SETUP_COOP_TASKRUN,
	IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
	IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SINGLE_ISSUER, 
	IORING_SETUP_SINGLE_ISSUER, IORING_SETUP_CLAMP | IORING_SETUP_CQSIZE,
};

struct fds {
	int pipe_r, pipe_w, empty_r, empty_w, st0, st1, dg0, dg1, file;
};

struct cqe_rec {
	uint64_t ud;
	int32_t res;
	uint32_t flags;
	unsigned n;		/* arrival, for a stable sort */
};

static struct cqe_rec cqes[MAX_CQES];
static unsigned ncqe;

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}

static void fds_open(struct fds *f)
{
	int p[2], e[2], s[2], d[2];
	if (pipe2(p, O_CLOEXEC) || pipe2(e, O_CLOEXEC) || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s) ||
	    socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, d)) {
		perror("sqefuzz: fds");
		exit(2);
	}
	*f = (struct fds){ p[0], p[1], e[0], e[1], s[0], s[1], d[0], d[1], -1 };
	for (int i = 0; i < 4; i++)
		fcntl(((int *)f)[2 * i + 1], F_SETFL, O_NONBLOCK);
	char data[1024];
	for (unsigned i = 0; i < sizeof(data); i++)
		data[i] = (char)('a' + i % 26);
	/* Data waiting: a pipe, a stream socket, datagrams both ways. */
	if (write(f->pipe_w, data, 300 + below(700)) < 0 || write(f->st1, data, 200 + below(800)) < 0 ||
	    write(f->st0, data, 100) < 0)
		exit(2);
	for (unsigned k = 0, n = 1 + below(5); k < n; k++)
		if (write(f->dg1, data, 1 + below(200)) < 0 || write(f->dg0, data, 40) < 0)
			exit(2);
	f->file = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (f->file < 0 || write(f->file, data, sizeof(data)) != (ssize_t)sizeof(data) ||
	    lseek(f->file, 0, SEEK_SET) != 0) {
		perror("sqefuzz: temp file");
		exit(2);
	}
}

static void fds_close(struct fds *f)
{
	for (int i = 0; i < 9; i++)
		close(((int *)f)[i]);
}

static int pick_fd(const struct fds *f, bool send)
{
	const int rd[] = { f->pipe_r, f->empty_r, f->st0, f->dg0, f->file, f->pipe_w, BAD_FD, 0, 3, -1 };
	const int sd[] = { f->st0, f->st1, f->dg0, f->dg1, BAD_FD, -1 };
	if (send)
		return sd[below(sizeof(sd) / sizeof(sd[0]))];
	return pct(3) ? (int)below(4) : rd[below(sizeof(rd) / sizeof(rd[0]))];
}

/* A pointer: valid (in the arena), NULL, PROT_NONE, kernel, misaligned, junk. */
static uint64_t pick_addr(bool structs)
{
	uint64_t base = (uint64_t)(uintptr_t)arena;
	switch (below(12)) {
	case 0: return 0;
	case 1: return base + ARENA_LEN + below(NOACCESS_LEN);	/* PROT_NONE */
	case 2: return 0xffff888000000000ull + below(1u << 20);	/* kernel */
	case 3: return base + 1 + below(7) + (uint64_t)below(4096) * 8;	/* misaligned */
	case 4: return rnext();
	case 5: return base + ARENA_LEN - below(64);			/* runs into PROT_NONE */
	default:
		if (structs)
			return base + STRUCTS_OFF + (uint64_t)below(64) * 128;
		return base + (uint64_t)below(STRUCTS_OFF / 64) * 64;
	}
}

static uint32_t pick_len(void)
{
	switch (below(6)) {
	case 0: return 0;
	case 1: return (uint32_t)rnext();
	case 2: return 1 + below(4);
	default: return 1 + below(256);
	}
}

/* The iovecs and msghdrs the structs area holds: mostly sane, some not. */
static void fill_structs(void)
{
	for (unsigned k = 0; k < 64; k++) {
		char *p = arena + STRUCTS_OFF + k * 128;
		if (k % 2 == 0) {
			struct iovec *v = (struct iovec *)p;
			for (int i = 0; i < 4; i++)
				v[i] = (struct iovec){ (void *)(uintptr_t)(pct(80) ? (uint64_t)(uintptr_t)arena +
									  below(STRUCTS_OFF / 64) * 64 : pick_addr(false)),
						       pct(80) ? below(512) : pick_len() };
		} else {
			struct msghdr *m = (struct msghdr *)p;
			memset(m, 0, sizeof(*m));
			m->msg_iov = (struct iovec *)(arena + STRUCTS_OFF + (k - 1) * 128);
			m->msg_iovlen = pct(70) ? 1 : below(4);
			if (pct(40)) {
				m->msg_name = arena + STRUCTS_OFF - 8192 + k * 64;
				m->msg_namelen = pct(70) ? 16 : (socklen_t)rnext();
			}
			if (pct(30)) {
				m->msg_control = arena + STRUCTS_OFF - 16384 + k * 64;
				m->msg_controllen = pct(70) ? 32 : (size_t)(uint32_t)rnext();
			}
			if (pct(10))
				m->msg_iov = (struct iovec *)(uintptr_t)pick_addr(false);
		}
	}
}

static uint8_t pick_opcode(void)
{
	unsigned total = 0;
	for (size_t i = 0; i < sizeof(opcodes) / sizeof(opcodes[0]); i++)
		total += opcodes[i].weight;
	unsigned r = below(total);
	for (size_t i = 0; i < sizeof(opcodes) / sizeof(opcodes[0]); i++) {
		if (r < opcodes[i].weight)
			return opcodes[i].op == 0xff ? (uint8_t)(IORING_OP_LAST + 8 + below(100)) : opcodes[i].op;
		r -= opcodes[i].weight;
	}
	return IORING_OP_NOP;
}

/* About half the SQEs are clean: only the fields their opcode reads are
 * set, to sane values, so requests get past the prep checks and reach the
 * buffer code; the rest keep random bytes wherever the opcode ignores them. */
static void gen_sqe(struct io_uring_sqe *sqe, unsigned idx, const struct fds *f, const uint16_t groups[4],
		    bool force_provide)
{
	bool clean = force_provide || pct(55);
	uint64_t raw[8];
	for (int i = 0; i < 8; i++)
		raw[i] = rnext();
	memcpy(sqe, raw, sizeof(*sqe));
	uint8_t op = force_provide ? IORING_OP_PROVIDE_BUFFERS : pick_opcode();
	bool is_prov = op == IORING_OP_PROVIDE_BUFFERS || op == IORING_OP_REMOVE_BUFFERS;
	sqe->opcode = op;
	uint8_t fl = 0;
	for (size_t i = 0; i < sizeof(sqe_flag_bits); i++)
		if (pct(sqe_flag_bits[i] == IOSQE_BUFFER_SELECT ? (is_prov ? 5 : 60) : sqe_flag_bits[i] == IOSQE_ASYNC || sqe_flag_bits[i] == IOSQE_IO_DRAIN ? 2 : 8))
			fl |= sqe_flag_bits[i];
	sqe->flags = pct(2) ? (uint8_t)rnext() : fl;
	sqe->ioprio = pct(75) ? 0 : pct(50) ? (uint16_t)(1u << below(4)) : (uint16_t)rnext();
	sqe->personality = pct(90) ? 0 : (uint16_t)rnext();
	sqe->buf_group = pct(80) ? groups[below(4)] : (uint16_t)rnext();
	sqe->user_data = (uint64_t)idx | (pct(30) ? (rnext() & 0x0000ffffffff0000ull) : 0);
	uint64_t *tail64 = (uint64_t *)((char *)sqe + 48);
	if (pct(92))
		tail64[0] = 0;	/* addr3 / attr_ptr */
	if (pct(92))
		tail64[1] = 0;	/* attr_type_mask */
	else if (pct(50))
		tail64[1] = 1;	/* IORING_RW_ATTR_FLAG_PI */
	if (pct(85))
		sqe->splice_fd_in = 0;
	if (pct(80))
		sqe->rw_flags = pct(70) ? 0 : (int)(1u << below(32));
	if (op == IORING_OP_PROVIDE_BUFFERS) {
		sqe->fd = pct(85) ? (int)(1 + below(8)) : (int)rnext();	/* nbufs */
		sqe->addr = pct(70) ? (uint64_t)(uintptr_t)arena + below(STRUCTS_OFF / 2) : pick_addr(false);
		sqe->len = pct(80) ? 1 + below(128) : pick_len();
		sqe->off = pct(80) ? below(16) : (pct(50) ? 65535 - below(4) : rnext());
	} else if (op == IORING_OP_REMOVE_BUFFERS) {
		sqe->fd = pct(85) ? (int)(1 + below(8)) : (int)rnext();
		sqe->addr = pct(85) ? 0 : rnext();
		sqe->len = pct(85) ? 0 : pick_len();
		sqe->off = pct(85) ? 0 : rnext();
	} else if (op == IORING_OP_ASYNC_CANCEL) {
		sqe->fd = pick_fd(f, false);
		sqe->addr = pct(60) ? below(MAX_SQES) : rnext();
		sqe->len = 0;
		sqe->rw_flags = pct(50) ? 0 : (int)(1u << below(8));
		sqe->off = 0;
	} else {
		bool send = op == IORING_OP_SEND;
		sqe->fd = pct(95) ? pick_fd(f, send) : (send ? BAD_FD : (int)(0x10000 + below(1u << 30)));
		bool vec = op == IORING_OP_READV || op == IORING_OP_RECVMSG;
		sqe->addr = pct(25) ? 0 : pick_addr(vec);
		sqe->len = vec ? (pct(80) ? below(4) + (op == IORING_OP_READV) : pick_len()) : pick_len();
		sqe->off = pct(60) ? 0 : pct(50) ? (uint64_t)-1 : pct(50) ? below(2048) : rnext();
		if (op == IORING_OP_RECV || op == IORING_OP_RECVMSG || send)
			sqe->msg_flags = pct(70) ? MSG_DONTWAIT * (uint32_t)pct(30) : (uint32_t)rnext();
	}
	if (clean) {
		sqe->flags &= (uint8_t)~(IOSQE_FIXED_FILE | (is_prov ? IOSQE_BUFFER_SELECT : 0));
		sqe->ioprio = op == IORING_OP_RECV || op == IORING_OP_RECVMSG ? (uint16_t)(pct(20) * IORING_RECV_MULTISHOT) : 0;
		sqe->personality = 0;
		sqe->splice_fd_in = 0;
		memset((char *)sqe + 48, 0, 16);
		if (op != IORING_OP_RECV && op != IORING_OP_RECVMSG && op != IORING_OP_SEND && op != IORING_OP_ASYNC_CANCEL)
			sqe->rw_flags = 0;
		else if (op != IORING_OP_ASYNC_CANCEL)
			sqe->msg_flags &= MSG_DONTWAIT | MSG_PEEK | MSG_TRUNC | MSG_WAITALL;
		if (op == IORING_OP_RECV || op == IORING_OP_RECVMSG || op == IORING_OP_SEND || is_prov)
			sqe->off = is_prov ? below(16) : 0;
		if (force_provide) {
			sqe->fd = (int)(4 + below(13));	/* enough buffers to select from */
			sqe->buf_group = groups[below(2)];
			sqe->flags = 0;
		}
	}
	/* A fd the program does not own but the kernel may write to: never. */
	if (op == IORING_OP_SEND && (sqe->fd == 1 || sqe->fd == 2))
		sqe->fd = BAD_FD;
}

/* Can the kernel poll fd (file_can_poll)?  epoll refuses a file it cannot
 * poll with EPERM; a bad fd is not issued at all. */
static bool fd_pollable(int fd)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN };
	bool ok = ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0 || errno != EPERM;
	if (ep >= 0)
		close(ep);
	return ok;
}

/* An SQE the kernel issues from io-wq; last: the last the submission took.
 * A send or receive with IORING_RECVSEND_POLL_FIRST on a file the kernel
 * cannot poll goes there too: io_arm_poll_handler gives up on it. */
static bool sqe_to_iowq(const struct io_uring_sqe *q, bool last)
{
	bool sr = q->opcode == IORING_OP_RECV || q->opcode == IORING_OP_RECVMSG || q->opcode == IORING_OP_SEND ||
		  q->opcode == IORING_OP_SENDMSG;
	return (q->flags & (IOSQE_ASYNC | IOSQE_IO_DRAIN)) || q->opcode == IORING_OP_FSYNC ||
	       (last && (q->flags & (IOSQE_IO_LINK | IOSQE_IO_HARDLINK))) ||
	       (sr && (q->ioprio & IORING_RECVSEND_POLL_FIRST) && !(q->flags & IOSQE_FIXED_FILE) &&
		!fd_pollable(q->fd));
}

/* Whether the SQEs the kernel took between two heads include one it issues
 * from io-wq: IOSQE_ASYNC, a drain (io_init_req forces requests async while
 * one is active), FSYNC, or a chain still linking at the end of the
 * submission (io_submit_state_end).  Judged on what the kernel read through
 * the SQ array, not on the order the SQEs were written in: two array
 * entries may name one SQE, and an SQE may be overwritten before it is
 * taken.  A head that moved implausibly far (the program wrote it) gives no
 * range: then any SQE of the array counts. */
static bool took_iowq(const struct io_uring *ring, unsigned from, unsigned to, bool has_array)
{
	unsigned entries = *ring->sq.kring_entries, mask = *ring->sq.kring_mask;
	if (to - from > 4 * entries) {
		for (unsigned i = 0; i < entries; i++)
			if (sqe_to_iowq(&ring->sq.sqes[i], true))
				return true;
		return false;
	}
	for (unsigned h = from; h != to; h++) {
		unsigned idx = has_array ? ring->sq.array[h & mask] : h & mask;
		if (idx >= entries)
			continue;	/* dropped by the kernel */
		if (sqe_to_iowq(&ring->sq.sqes[idx], h + 1 == to))
			return true;
	}
	return false;
}

static int enter(int fd, unsigned submit, unsigned min, unsigned flags, const void *arg, size_t argsz)
{
	long r = syscall(__NR_io_uring_enter, fd, submit, min, flags, arg, argsz);
	return r < 0 ? -errno : (int)r;
}

static void reap(struct io_uring *ring)
{
	unsigned head = *ring->cq.khead, tail = __atomic_load_n(ring->cq.ktail, __ATOMIC_ACQUIRE);
	for (; head != tail; head++) {
		struct io_uring_cqe *c = &ring->cq.cqes[head & ring->cq.ring_mask];
		if (ncqe < MAX_CQES)
			cqes[ncqe] = (struct cqe_rec){ c->user_data, c->res, c->flags, ncqe };
		if (verbose)
			out("# reap ud=0x%llx res=%d flags=0x%x\n", (unsigned long long)c->user_data, c->res,
			    c->flags);
		ncqe++;
	}
	__atomic_store_n(ring->cq.khead, head, __ATOMIC_RELEASE);
}

static int by_ud(const void *a, const void *b)
{
	const struct cqe_rec *x = a, *y = b;
	if (x->ud != y->ud)
		return x->ud < y->ud ? -1 : 1;
	return x->n < y->n ? -1 : x->n > y->n;
}

/* Waits for io-wq work at the end of a sequence, at most (each up to 10 ms). */
#define QUIET_WAITS 32

/* A bounded wait: GETEVENTS with min > 0 always gets a 10 ms timeout. */
static int enter_bounded(struct io_uring *ring, unsigned submit, unsigned min, unsigned flags)
{
	struct __kernel_timespec ts = { .tv_nsec = 10 * 1000 * 1000 };
	struct io_uring_getevents_arg arg = { .ts = (uint64_t)(uintptr_t)&ts };
	if ((flags & IORING_ENTER_GETEVENTS) && min) {
		flags = (flags | IORING_ENTER_EXT_ARG) & ~(IORING_ENTER_EXT_ARG_REG | IORING_ENTER_ABS_TIMER);
		return enter(ring->ring_fd, submit, min, flags, &arg, sizeof(arg));
	}
	flags &= ~(IORING_ENTER_EXT_ARG | IORING_ENTER_EXT_ARG_REG);
	return enter(ring->ring_fd, submit, min, flags, NULL, 0);
}

static void run_seed(uint64_t seed)
{
	rng = seed * 0x2545f4914f6cdd1dull + 0x5deece66dull;
	ncqe = 0;
	memset(arena, 0, STRUCTS_OFF);
	for (unsigned i = 0; i < STRUCTS_OFF; i += 64)
		arena[i] = (char)i;
	fill_structs();
	unsigned setup = setup_choices[below(sizeof(setup_choices) / sizeof(setup_choices[0]))];
	unsigned sq = 1u << below(7);
	struct io_uring_params p = { .flags = setup | IORING_SETUP_CQSIZE, .cq_entries = 4096 };
	struct io_uring ring;
	out("seq %llu setup=0x%x sq=%u\n", (unsigned long long)seed, p.flags, sq);
	fflush(stdout);	/* a crash or a hang names this seed */
	alarm(HANG_SECONDS);
	int ret = io_uring_queue_init_params(sq, &ring, &p);
	if (ret < 0) {
		out("setup -> %d\nend ops=0 cqes=0 bufs=0\n", ret);
		return;
	}
	struct fds f;
	fds_open(&f);
	uint16_t groups[4] = { (uint16_t)below(4), (uint16_t)below(4), 65535, (uint16_t)rnext() };
	bool has_array = true;	/* NO_SQARRAY: liburing 2.3 cannot map such a ring */
	unsigned sq_entries = *ring.sq.kring_entries, mask = *ring.sq.kring_mask;
	unsigned tail = *ring.sq.ktail, nsqes = 0, nbuf = 0;
	unsigned head0 = *ring.sq.khead, kh_prev = head0;
	bool async_work = false;
	/* Every slot of the SQE array starts as the seed's bytes, not as what the
	 * previous ring left: whatever the kernel reads is reproducible. */
	for (unsigned i = 0; i < sq_entries; i++)
		for (int w = 0; w < 8; w++)
			((uint64_t *)&ring.sq.sqes[i])[w] = rnext();
	for (unsigned r = 0; r < rounds; r++) {
		unsigned n = 1 + below(sq_entries < 8 ? sq_entries : 8);
		for (unsigned k = 0; k < n && nsqes < MAX_SQES - 1; k++) {
			unsigned slot = tail & mask;
			struct io_uring_sqe *sqe = &ring.sq.sqes[has_array ? (slot + below(2)) & mask : slot];
			gen_sqe(sqe, 1 + nsqes, &f, groups, r == 0 && k < 3);
			if (has_array)
				ring.sq.array[slot] = (unsigned)(sqe - ring.sq.sqes);
			if (verbose) {
				const uint8_t *b = (const uint8_t *)sqe;
				out("# sqe %u @%u:", 1 + nsqes, (unsigned)(sqe - ring.sq.sqes));
				for (int i = 0; i < 64; i++)
					out("%s%02x", i % 8 ? "" : " ", b[i]);
				out("\n");
			}
			nsqes++;
			tail++;
		}
		/* SQ ring chaos, now and then. */
		unsigned tail_pub = tail;
		if (pct(6)) {
			unsigned v = pct(50) ? *ring.sq.khead + below(2 * sq_entries) - sq_entries : (unsigned)rnext();
			out("ring-chaos head=%+d\n", (int)(v - *ring.sq.khead));
			__atomic_store_n(ring.sq.khead, v, __ATOMIC_RELEASE);
		}
		if (pct(5)) {
			unsigned d = pct(50) ? sq_entries + below(4 * sq_entries) : (unsigned)rnext();
			out("ring-chaos tail=+%u\n", d);
			tail_pub = tail + d;
		}
		if (has_array && pct(5)) {
			unsigned i = below(sq_entries), v = pct(50) ? sq_entries + below(100) : (unsigned)rnext();
			out("ring-chaos array[%u]=%u\n", i, v);
			ring.sq.array[i] = v;
		}
		__atomic_store_n(ring.sq.ktail, tail_pub, __ATOMIC_RELEASE);
		unsigned submit = pct(70) ? n : pct(40) ? below(2 * sq_entries) : pct(50) ? (unsigned)rnext() : 0;
		unsigned min = pct(60) ? 0 : below(4);
		unsigned flags = pct(60) ? IORING_ENTER_GETEVENTS : pct(50) ? 0 : below(1u << 8);
		int er = enter_bounded(&ring, submit, min, flags);
		unsigned kh = __atomic_load_n(ring.sq.khead, __ATOMIC_ACQUIRE);
		async_work |= took_iowq(&ring, kh_prev, kh, has_array);
		kh_prev = kh;
		out("enter %u submit=%u min=%u flags=0x%x -> %d head=%+d\n", r, submit, min, flags, er,
		    (int)(kh - head0));
		/* The program's view of the SQ is whatever the kernel consumed. */
		if (tail_pub != tail || (int)(tail - kh) > (int)sq_entries || (int)(tail - kh) < 0)
			tail = kh;
		__atomic_store_n(ring.sq.ktail, tail, __ATOMIC_RELEASE);
		reap(&ring);
	}
	/* io-wq work (took_iowq) ends on the scheduler's time: wait until the
	 * ring has been quiet for 10 ms, so that all of it is in the
	 * transcript.  A fixed number of waits cut a drain's requests, which
	 * the kernel issues one io-wq hop after another, wherever the
	 * scheduler had got to. */
	for (unsigned i = 0; async_work && i < QUIET_WAITS; i++) {
		reap(&ring);
		if (enter_bounded(&ring, 0, 1, IORING_ENTER_GETEVENTS) < 0)
			break;
	}
	reap(&ring);
	/* The transcript ends here.  Requests still pending are cancelled and
	 * their CQEs drained but not shown: which of them a cancel finds before
	 * it runs (a drained request behind a receive that never completes, a
	 * request in io-wq) is the scheduler's choice, natively too. */
	unsigned shown = ncqe < MAX_CQES ? ncqe : MAX_CQES;
	unsigned kh = __atomic_load_n(ring.sq.khead, __ATOMIC_ACQUIRE);
	tail = kh;
	struct io_uring_sqe *c = &ring.sq.sqes[tail & mask];
	memset(c, 0, sizeof(*c));
	c->opcode = IORING_OP_ASYNC_CANCEL;
	c->fd = -1;
	c->cancel_flags = IORING_ASYNC_CANCEL_ANY;
	c->user_data = 0xfffffffffull;
	if (has_array)
		ring.sq.array[tail & mask] = tail & mask;
	__atomic_store_n(ring.sq.ktail, tail + 1, __ATOMIC_RELEASE);
	int er = enter_bounded(&ring, 1, 0, IORING_ENTER_GETEVENTS);
	(void)er;
	/* Up to 100 ms for the cancel's CQE (behind a drain, or io-wq work). */
	for (int i = 0; i < 10; i++) {
		unsigned seen = ncqe;
		reap(&ring);
		bool found = false;
		for (unsigned k = seen; k < ncqe && k < MAX_CQES; k++)
			found |= cqes[k].ud == 0xfffffffffull;
		if (found)
			break;
		enter_bounded(&ring, 0, 1, IORING_ENTER_GETEVENTS);
	}
	for (int i = 0; i < 3; i++) {
		reap(&ring);
		enter_bounded(&ring, 0, 0, IORING_ENTER_GETEVENTS);
	}
	reap(&ring);
	qsort(cqes, shown, sizeof(cqes[0]), by_ud);
	for (unsigned i = 0; i < shown; i++) {
		const struct cqe_rec *q = &cqes[i];
		bool buf = q->flags & IORING_CQE_F_BUFFER;
		nbuf += buf;
		if (buf)
			out("cqe ud=0x%llx res=%d flags=0x%x buf=%u\n", (unsigned long long)q->ud, q->res,
			    q->flags & 0xffff, q->flags >> 16);
		else
			out("cqe ud=0x%llx res=%d flags=0x%x\n", (unsigned long long)q->ud, q->res, q->flags);
	}
	out("end ops=%u cqes=%u bufs=%u\n", nsqes, shown, nbuf);
	io_uring_queue_exit(&ring);
	fds_close(&f);
	alarm(0);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' }, { "count", required_argument, NULL, 'n' },
		{ "rounds", required_argument, NULL, 'r' }, { "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long seed = 1, count = 1;
	for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
		switch (c) {
		case 's': seed = strtoull(optarg, NULL, 10); break;
		case 'n': count = strtoull(optarg, NULL, 10); break;
		case 'r': rounds = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'v': verbose = true; break;
		default:
			fprintf(stderr, "usage: sqefuzz [--seed S] [--count N] [--rounds R] [--verbose]\n");
			return 2;
		}
	}
	static char outbuf[1 << 20];
	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
	if (fcntl(BAD_FD, F_GETFD) >= 0) {
		fprintf(stderr, "sqefuzz: fd %d is open; it must not be\n", BAD_FD);
		return 2;
	}
	const int mf = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE;
	arena = mmap((void *)(uintptr_t)ARENA_ADDR, ARENA_LEN, PROT_READ | PROT_WRITE, mf, -1, 0);
	void *none = mmap((void *)(uintptr_t)(ARENA_ADDR + ARENA_LEN), NOACCESS_LEN, PROT_NONE, mf, -1, 0);
	if (arena != (void *)(uintptr_t)ARENA_ADDR || none != (void *)(uintptr_t)(ARENA_ADDR + ARENA_LEN)) {
		perror("sqefuzz: mmap");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	for (unsigned long long i = 0; i < count; i++)
		run_seed(seed + i);
	return 0;
}
