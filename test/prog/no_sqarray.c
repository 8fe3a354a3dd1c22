/*
 * A ring set up with IORING_SETUP_NO_SQARRAY (6.6), as liburing 2.6 and later
 * do by default: no SQ index array, the SQE for SQ position n is slot
 * n & mask.  liburing 2.3 cannot drive such a ring, so this program maps and
 * fills it itself, the way newer liburing does: sq_off.array is 0 and the
 * SQ ring is sized as the CQ ring (one mapping).  Buffer selection on it:
 * PROVIDE_BUFFERS, READ from a pipe, a RECV that waits for its data, a
 * chain, and enough batches to go round the ring several times.
 */
#include <errno.h>
#include <linux/io_uring.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CQE_PRINT_NO_LIBURING
#include "test/prog/cqe_print.h"

#ifndef IORING_SETUP_NO_SQARRAY
#define IORING_SETUP_NO_SQARRAY (1U << 16)
#endif

struct raw_ring {
	int fd;
	_Atomic unsigned *sq_tail, *cq_head, *cq_tail;
	unsigned sq_mask, cq_mask, sq_local;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
};

static void ring_open(struct raw_ring *r, unsigned entries)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_NO_SQARRAY;
	r->fd = (int)syscall(__NR_io_uring_setup, entries, &p);
	if (r->fd < 0)
		die("setup: %s", strerror(errno));
	note("setup: sq %u, cq %u, sq_off.array %u", p.sq_entries, p.cq_entries, p.sq_off.array);
	if (!(p.features & IORING_FEAT_SINGLE_MMAP))
		die("no IORING_FEAT_SINGLE_MMAP");
	size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	size_t len = sq_len > cq_len ? sq_len : cq_len;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
	if (m == MAP_FAILED)
		die("mmap rings: %s", strerror(errno));
	r->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
	if (r->sqes == MAP_FAILED)
		die("mmap sqes: %s", strerror(errno));
	r->sq_tail = (void *)(m + p.sq_off.tail);
	r->sq_mask = *(unsigned *)(m + p.sq_off.ring_mask);
	r->sq_local = atomic_load(r->sq_tail);
	r->cq_head = (void *)(m + p.cq_off.head);
	r->cq_tail = (void *)(m + p.cq_off.tail);
	r->cq_mask = *(unsigned *)(m + p.cq_off.ring_mask);
	r->cqes = (void *)(m + p.cq_off.cqes);
}

static struct io_uring_sqe *sqe_next(struct raw_ring *r, unsigned long long ud, int opcode)
{
	struct io_uring_sqe *sqe = &r->sqes[r->sq_local++ & r->sq_mask];
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = (unsigned char)opcode;
	sqe->user_data = ud;
	return sqe;
}

/* Publishes what sqe_next filled, submits it, and waits for want CQEs. */
static void submit_wait(struct raw_ring *r, unsigned n, unsigned want)
{
	atomic_store_explicit(r->sq_tail, r->sq_local, memory_order_release);
	long ret = syscall(__NR_io_uring_enter, r->fd, n, want, want ? IORING_ENTER_GETEVENTS : 0, NULL, 0);
	if (ret != (long)n)
		die("enter: %ld (%s), wanted %u", ret, ret < 0 ? strerror(errno) : "short", n);
}

static void reap_print_raw(struct raw_ring *r, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		unsigned head = atomic_load_explicit(r->cq_head, memory_order_relaxed);
		while (atomic_load_explicit(r->cq_tail, memory_order_acquire) == head)
			if (syscall(__NR_io_uring_enter, r->fd, 0, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0 &&
			    errno != EINTR)
				die("wait: %s", strerror(errno));
		struct io_uring_cqe c = r->cqes[head & r->cq_mask];
		atomic_store_explicit(r->cq_head, head + 1, memory_order_release);
		cqe_print(&c);
	}
}

int main(void)
{
	struct raw_ring r;
	ring_open(&r, 8);
	int pfd[2], sv[2];
	if (pipe(pfd) || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		die("pipe/socketpair: %s", strerror(errno));
	static char bufs[8][16];

	/* Provide 8 buffers of 16 bytes, group 3; read from the pipe with one. */
	struct io_uring_sqe *sqe = sqe_next(&r, 1, IORING_OP_PROVIDE_BUFFERS);
	sqe->fd = 8;
	sqe->addr = (unsigned long)bufs;
	sqe->len = sizeof(bufs[0]);
	sqe->buf_group = 3;
	sqe->off = 0;
	if (write(pfd[1], "pipe-data", 9) != 9)
		die("write");
	sqe = sqe_next(&r, 2, IORING_OP_READ);
	sqe->fd = pfd[0];
	sqe->flags = IOSQE_BUFFER_SELECT;
	sqe->buf_group = 3;
	sqe->len = 16;
	submit_wait(&r, 2, 2);
	reap_print_raw(&r, 2);
	note("bid 0 holds \"%.9s\"", bufs[0]);

	/* A RECV that waits: its buffer is chosen when the data comes. */
	sqe = sqe_next(&r, 3, IORING_OP_RECV);
	sqe->fd = sv[0];
	sqe->flags = IOSQE_BUFFER_SELECT;
	sqe->buf_group = 3;
	submit_wait(&r, 1, 0);
	if (write(sv[1], "late", 4) != 4)
		die("send");
	reap_print_raw(&r, 1);

	/* Rounds of 5: NOP -> (link) READ with buffer select -> NOP, and two NOPs
	 * on their own, so the SQ wraps several times. */
	for (int round = 0; round < 12; round++) {
		char msg[8];
		int len = snprintf(msg, sizeof(msg), "r%02d", round);
		if (write(pfd[1], msg, (size_t)len) != len)
			die("write");
		if (round % 2 == 0) {
			/* Give back a buffer so the group never runs dry. */
			sqe = sqe_next(&r, 100 + round, IORING_OP_PROVIDE_BUFFERS);
			sqe->fd = 1;
			sqe->addr = (unsigned long)bufs[1 + round / 2 % 7];
			sqe->len = sizeof(bufs[0]);
			sqe->buf_group = 3;
			sqe->off = 1 + round / 2 % 7;
		} else {
			sqe = sqe_next(&r, 100 + round, IORING_OP_NOP);
		}
		sqe->flags |= IOSQE_IO_LINK;
		sqe = sqe_next(&r, 200 + round, IORING_OP_READ);
		sqe->fd = pfd[0];
		sqe->flags = IOSQE_BUFFER_SELECT | IOSQE_IO_LINK;
		sqe->buf_group = 3;
		sqe->len = 3;
		sqe = sqe_next(&r, 300 + round, IORING_OP_NOP);
		sqe_next(&r, 400 + round, IORING_OP_NOP);
		sqe_next(&r, 500 + round, IORING_OP_NOP);
		submit_wait(&r, 5, 5);
		reap_print_raw(&r, 5);
	}
	close(r.fd);
	return 0;
}
