/*
 * IORING_REGISTER_RESIZE_RINGS (6.13): new SQ and CQ rings for a live ring,
 * which the program then maps again.  First the resizes every kernel refuses
 * (a ring without DEFER_TASKRUN, a NULL argument), then, on a DEFER_TASKRUN
 * ring: bad parameters; growing and shrinking with SQEs not yet submitted and
 * CQEs not yet consumed, which must be in the new rings at the same indices;
 * -EOVERFLOW when they do not fit (the old rings go on); a full CQ with CQEs
 * in the kernel's overflow list; the argument as the kernel writes it back.
 *
 * The ring is driven by hand (its own mappings, raw io_uring_enter) rather
 * than through liburing, whose older versions cannot map a ring again.  It
 * has no SQ array (NO_SQARRAY): 6.18 does not say where a resized ring's
 * array is.
 */
#define CQE_PRINT_NO_LIBURING
#include "test/prog/cqe_print.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mman.h>

#ifndef IORING_SETUP_NO_SQARRAY
#define IORING_SETUP_NO_SQARRAY (1U << 16)
#endif
#ifndef IORING_SETUP_SINGLE_ISSUER
#define IORING_SETUP_SINGLE_ISSUER (1U << 12)
#endif
#ifndef IORING_SETUP_DEFER_TASKRUN
#define IORING_SETUP_DEFER_TASKRUN (1U << 13)
#endif
#define RESIZE_RINGS 33
#define REGISTER_RING_FDS 20
#define USE_REGISTERED_RING (1U << 31)

struct raw_ring {
	int fd;
	void *rings, *old_rings;
	size_t rings_len, old_rings_len;
	struct io_uring_sqe *sqes, *old_sqes;
	size_t sqes_len, old_sqes_len;
	unsigned *sq_head, *sq_tail, *sq_flags, *cq_head, *cq_tail, *cq_overflow;
	unsigned sq_mask, sq_entries, cq_mask, cq_entries;
	struct io_uring_cqe *cqes;
};

static void map_ring(struct raw_ring *r, const struct io_uring_params *p)
{
	r->rings_len = p->cq_off.cqes + p->cq_entries * sizeof(struct io_uring_cqe);
	r->rings = mmap(NULL, r->rings_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
			IORING_OFF_SQ_RING);
	if (r->rings == MAP_FAILED)
		die("mmap rings: %s", strerror(errno));
	r->sqes_len = p->sq_entries * sizeof(struct io_uring_sqe);
	r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
		       IORING_OFF_SQES);
	if (r->sqes == MAP_FAILED)
		die("mmap sqes: %s", strerror(errno));
	char *b = r->rings;
	r->sq_head = (unsigned *)(b + p->sq_off.head);
	r->sq_tail = (unsigned *)(b + p->sq_off.tail);
	r->sq_flags = (unsigned *)(b + p->sq_off.flags);
	r->cq_head = (unsigned *)(b + p->cq_off.head);
	r->cq_tail = (unsigned *)(b + p->cq_off.tail);
	r->cq_overflow = (unsigned *)(b + p->cq_off.overflow);
	r->cqes = (struct io_uring_cqe *)(b + p->cq_off.cqes);
	r->sq_mask = *(unsigned *)(b + p->sq_off.ring_mask);
	r->sq_entries = *(unsigned *)(b + p->sq_off.ring_entries);
	r->cq_mask = *(unsigned *)(b + p->cq_off.ring_mask);
	r->cq_entries = *(unsigned *)(b + p->cq_off.ring_entries);
}

static void unmap_old(struct raw_ring *r)
{
	if (r->old_rings)
		munmap(r->old_rings, r->old_rings_len);
	if (r->old_sqes)
		munmap(r->old_sqes, r->old_sqes_len);
	r->old_rings = r->old_sqes = NULL;
}

static void print_params(const char *what, long ret, const struct io_uring_params *p)
{
	note("%s: %ld (sq %u cq %u flags 0x%x features 0x%x wq_fd %u sq array %u cq offsets %s)", what, ret,
	     p->sq_entries, p->cq_entries, p->flags, p->features, p->wq_fd, p->sq_off.array,
	     p->cq_off.cqes && p->cq_off.tail != p->cq_off.head ? "set" : "unset");
}

/*
 * The resize as liburing makes it: the call, then the new rings mapped, then
 * the old ones unmapped (here only after one more look at them: they stay
 * the program's memory until it unmaps them).
 */
static long resize_ex(struct raw_ring *r, unsigned sq, unsigned cq, unsigned flags, int by_index)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	p.sq_entries = sq;
	p.cq_entries = cq;
	p.flags = flags;
	p.features = 0x1234;
	p.wq_fd = 77;
	p.sq_off.array = 4321;
	long ret = by_index ? raw_register(by_index - 1, RESIZE_RINGS | USE_REGISTERED_RING, &p, 1)
			    : raw_register(r->fd, RESIZE_RINGS, &p, 1);
	char what[64];
	snprintf(what, sizeof(what), "resize to sq %u cq %u flags 0x%x", sq, cq, flags);
	print_params(what, ret, &p);
	if (ret)
		return ret;
	r->old_rings = r->rings;
	r->old_rings_len = r->rings_len;
	r->old_sqes = r->sqes;
	r->old_sqes_len = r->sqes_len;
	map_ring(r, &p);
	/* The old mapping is still readable memory. */
	volatile unsigned touch = *(volatile unsigned *)r->old_rings;
	(void)touch;
	unmap_old(r);
	note("  mapped: sq %u (head %u tail %u) cq %u (head %u tail %u)", r->sq_entries, *r->sq_head,
	     *r->sq_tail, r->cq_entries, *r->cq_head, *r->cq_tail);
	return ret;
}

static long resize(struct raw_ring *r, unsigned sq, unsigned cq, unsigned flags)
{
	return resize_ex(r, sq, cq, flags, 0);
}

/* Queues n NOPs in the SQ without submitting them. */
static void queue_nops(struct raw_ring *r, unsigned n, unsigned long long ud)
{
	unsigned tail = *r->sq_tail;
	for (unsigned i = 0; i < n; i++) {
		struct io_uring_sqe *sqe = &r->sqes[(tail + i) & r->sq_mask];
		memset(sqe, 0, sizeof(*sqe));
		sqe->opcode = IORING_OP_NOP;
		sqe->user_data = ud + i;
	}
	__atomic_store_n(r->sq_tail, tail + n, __ATOMIC_RELEASE);
}

static void submit(struct raw_ring *r, unsigned n, unsigned wait)
{
	long ret = raw_enter(r->fd, n, wait, wait ? IORING_ENTER_GETEVENTS : 0, NULL, 0);
	note("  submit %u: %ld", n, ret);
}

/* Prints and consumes every CQE the program's CQ holds. */
static void drain_cq(struct raw_ring *r, const char *when)
{
	unsigned head = *r->cq_head, tail = __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE);
	note("  CQ %s: %u CQEs, overflow %u, CQ_OVERFLOW flag %u", when, tail - head, *r->cq_overflow,
	     !!(__atomic_load_n(r->sq_flags, __ATOMIC_ACQUIRE) & IORING_SQ_CQ_OVERFLOW));
	for (; head != tail; head++)
		cqe_print(&r->cqes[head & r->cq_mask]);
	__atomic_store_n(r->cq_head, head, __ATOMIC_RELEASE);
}

/* A legacy PROVIDE_BUFFERS of one buffer (bid) to group 7. */
static void queue_provide(struct raw_ring *r, void *buf, unsigned len, unsigned bid, unsigned long long ud)
{
	unsigned tail = *r->sq_tail;
	struct io_uring_sqe *sqe = &r->sqes[tail & r->sq_mask];
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_PROVIDE_BUFFERS;
	sqe->fd = 1;
	sqe->addr = (unsigned long)buf;
	sqe->len = len;
	sqe->off = bid;
	sqe->buf_group = 7;
	sqe->user_data = ud;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
}

/* A read of fd into a buffer of group 7. */
static void queue_read_select(struct raw_ring *r, int fd, unsigned long long ud)
{
	unsigned tail = *r->sq_tail;
	struct io_uring_sqe *sqe = &r->sqes[tail & r->sq_mask];
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_READ;
	sqe->fd = fd;
	sqe->len = 64;
	sqe->off = -1ULL;
	sqe->flags = IOSQE_BUFFER_SELECT;
	sqe->buf_group = 7;
	sqe->user_data = ud;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
}

/*
 * Completions of every kind across a resize: PROVIDE_BUFFERS (which bufsel
 * answers itself) past a full CQ, a buffer-select read's CQE not consumed,
 * and one still waiting for data when the rings change.
 */
static void provided_buffers(struct raw_ring *r)
{
	static char bufs[6][64];
	int pfd[2];
	if (pipe(pfd))
		die("pipe: %s", strerror(errno));
	note("legacy provided buffers:");
	resize(r, 4, 4, IORING_SETUP_CQSIZE);
	for (unsigned i = 0; i < 4; i++)
		queue_provide(r, bufs[i], 64, i, 800 + i);
	submit(r, 4, 0);
	queue_provide(r, bufs[4], 64, 4, 804);
	queue_provide(r, bufs[5], 64, 5, 805);
	submit(r, 2, 0);
	raw_enter(r->fd, 0, 0, IORING_ENTER_GETEVENTS, NULL, 0);
	note("  CQ: %u CQEs, CQ_OVERFLOW flag %u", *r->cq_tail - *r->cq_head,
	     !!(*r->sq_flags & IORING_SQ_CQ_OVERFLOW));
	resize(r, 4, 16, IORING_SETUP_CQSIZE);
	raw_enter(r->fd, 0, 6, IORING_ENTER_GETEVENTS, NULL, 0);
	drain_cq(r, "after an enter");

	if (write(pfd[1], "hello", 5) != 5)
		die("write");
	queue_read_select(r, pfd[0], 810);
	submit(r, 1, 1);
	queue_read_select(r, pfd[0], 811);
	submit(r, 1, 0);
	resize(r, 8, 32, IORING_SETUP_CQSIZE);
	if (write(pfd[1], "world!", 6) != 6)
		die("write");
	raw_enter(r->fd, 0, 2, IORING_ENTER_GETEVENTS, NULL, 0);
	drain_cq(r, "after the data came");
	note("  buffers: \"%.5s\" \"%.6s\"", bufs[0], bufs[1]);
	close(pfd[0]);
	close(pfd[1]);
}

/*
 * Another thread keeps entering a ring of its own while this one resizes:
 * every enter of a ring also moves other rings' completions, reading them
 * without waiting for the resize, which must neither crash nor lose a CQE.
 */
static atomic_int stop_other, other_started;

static void *other_ring(void *arg)
{
	(void)arg;
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	struct raw_ring o = { .fd = (int)syscall(__NR_io_uring_setup, 4, &p) };
	if (o.fd < 0)
		die("setup: %s", strerror(errno));
	map_ring(&o, &p);
	unsigned long n = 0;
	unsigned *array = (unsigned *)((char *)o.rings + p.sq_off.array);
	while (!atomic_load(&stop_other)) {
		unsigned tail = *o.sq_tail;
		struct io_uring_sqe *sqe = &o.sqes[tail & o.sq_mask];
		memset(sqe, 0, sizeof(*sqe));
		sqe->opcode = IORING_OP_NOP;
		array[tail & o.sq_mask] = tail & o.sq_mask;
		__atomic_store_n(o.sq_tail, tail + 1, __ATOMIC_RELEASE);
		if (raw_enter(o.fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) != 1)
			die("other ring: enter");
		__atomic_store_n(o.cq_head, __atomic_load_n(o.cq_tail, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
		n++;
		atomic_store(&other_started, 1);
	}
	munmap(o.rings, o.rings_len);
	munmap(o.sqes, o.sqes_len);
	close(o.fd);
	return (void *)n;
}

static void resize_while_other_enters(struct raw_ring *r)
{
	pthread_t t;
	if (pthread_create(&t, NULL, other_ring, NULL))
		die("pthread_create");
	/* Both threads in their loops from the start: where every resize
	 * fails at once (a kernel without them), the loop below would
	 * otherwise end before the other thread ran, or not. */
	while (!atomic_load(&other_started))
		sched_yield();
	unsigned resized = 0, bad = 0, cqes = 0;
	unsigned long long next = 1000;
	for (unsigned i = 0; i < 1000; i++) {
		queue_nops(r, 3, 1000 + 3ULL * i);
		if (raw_enter(r->fd, 3, 3, IORING_ENTER_GETEVENTS, NULL, 0) != 3)
			die("enter");
		struct io_uring_params p;
		memset(&p, 0, sizeof(p));
		p.sq_entries = i & 1 ? 8 : 4;
		p.cq_entries = i & 1 ? 32 : 8;
		p.flags = IORING_SETUP_CQSIZE;
		if (raw_register(r->fd, RESIZE_RINGS, &p, 1) == 0) {
			munmap(r->rings, r->rings_len);
			munmap(r->sqes, r->sqes_len);
			map_ring(r, &p);
			resized++;
		}
		unsigned head = *r->cq_head, tail = __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE);
		for (; head != tail; head++, cqes++)
			bad += r->cqes[head & r->cq_mask].user_data != next++;
		__atomic_store_n(r->cq_head, head, __ATOMIC_RELEASE);
	}
	atomic_store(&stop_other, 1);
	void *n;
	pthread_join(t, &n);
	note("resizes while another thread enters: %u of 1000, %u CQEs, %u out of order, the other ring %s",
	     resized, cqes, bad, n ? "ran" : "did not run");
}

static void refused_without_defer(void)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	int fd = (int)syscall(__NR_io_uring_setup, 8, &p);
	if (fd < 0)
		die("setup: %s", strerror(errno));
	struct io_uring_params rp;
	memset(&rp, 0, sizeof(rp));
	rp.sq_entries = 16;
	rp.cq_entries = 64;
	rp.flags = IORING_SETUP_CQSIZE;
	print_params("resize without DEFER_TASKRUN", raw_register(fd, RESIZE_RINGS, &rp, 1), &rp);
	note("resize with a NULL argument: %ld", raw_register(fd, RESIZE_RINGS, NULL, 1));
	close(fd);
}

static void bad_params(struct raw_ring *r)
{
	note("bad parameters:");
	resize(r, 8, 16, IORING_SETUP_SQPOLL);
	resize(r, 0, 0, 0);
	resize(r, 65536, 0, 0);
	resize(r, 16, 8, IORING_SETUP_CQSIZE);
	resize(r, 16, 0, IORING_SETUP_CQSIZE);
	resize(r, 16, 1U << 20, IORING_SETUP_CQSIZE);
	note("  NULL: %ld, two arguments: %ld, a bad pointer: %ld", raw_register(r->fd, RESIZE_RINGS, NULL, 1),
	     raw_register(r->fd, RESIZE_RINGS, r->sqes, 2), raw_register(r->fd, RESIZE_RINGS, (void *)8, 1));
	/* The kernel writes the argument back: one it cannot write fails the
	 * resize, and nothing changes. */
	struct io_uring_params *ro = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ro == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	ro->sq_entries = 16;
	mprotect(ro, 4096, PROT_READ);
	note("  read-only argument: %ld", raw_register(r->fd, RESIZE_RINGS, ro, 1));
	munmap(ro, 4096);
}

int main(void)
{
	refused_without_defer();

	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_NO_SQARRAY;
	struct raw_ring r = { .fd = (int)syscall(__NR_io_uring_setup, 8, &p) };
	if (r.fd < 0)
		die("setup: %s", strerror(errno));
	map_ring(&r, &p);
	note("setup: sq %u cq %u", r.sq_entries, r.cq_entries);

	bad_params(&r);

	note("grow with 2 CQEs unconsumed and 3 SQEs unsubmitted:");
	queue_nops(&r, 2, 100);
	submit(&r, 2, 2);
	queue_nops(&r, 3, 1);
	resize(&r, 16, 32, IORING_SETUP_CQSIZE);
	drain_cq(&r, "after the resize");
	submit(&r, 3, 3);
	drain_cq(&r, "after submitting them");

	note("indices past the new size (head and tail go on counting):");
	for (int round = 0; round < 3; round++) {
		queue_nops(&r, 7, 200 + 10 * round);
		submit(&r, 7, 7);
		drain_cq(&r, "now");
	}
	queue_nops(&r, 2, 300);
	submit(&r, 2, 2);
	queue_nops(&r, 3, 310);

	note("shrink below what is pending: -EOVERFLOW, the rings stay");
	resize(&r, 2, 4, IORING_SETUP_CQSIZE);	/* 3 SQEs > 2 */
	resize(&r, 4, 1, IORING_SETUP_CQSIZE);	/* CQ smaller than the SQ */
	queue_nops(&r, 3, 320);
	resize(&r, 8, 8, IORING_SETUP_CQSIZE);	/* 6 SQEs fit, and 2 CQEs */
	submit(&r, 6, 6);
	resize(&r, 8, 4, IORING_SETUP_CQSIZE);	/* CQ smaller than the SQ */
	resize(&r, 4, 4, IORING_SETUP_CQSIZE);	/* 8 CQEs > 4 */
	drain_cq(&r, "after the refused resizes");

	note("shrink with a CQE and an SQE pending:");
	queue_nops(&r, 1, 400);
	submit(&r, 1, 1);
	queue_nops(&r, 1, 401);
	resize(&r, 2, 4, IORING_SETUP_CQSIZE);
	drain_cq(&r, "after the resize");
	submit(&r, 1, 1);
	drain_cq(&r, "after submitting it");

	note("a full CQ with CQEs in the kernel's overflow list:");
	queue_nops(&r, 2, 500);
	submit(&r, 2, 0);
	queue_nops(&r, 2, 502);
	submit(&r, 2, 0);
	queue_nops(&r, 2, 504);
	submit(&r, 2, 0);
	raw_enter(r.fd, 0, 0, IORING_ENTER_GETEVENTS, NULL, 0);
	note("  CQ: %u CQEs, CQ_OVERFLOW flag %u", *r.cq_tail - *r.cq_head,
	     !!(*r.sq_flags & IORING_SQ_CQ_OVERFLOW));
	resize(&r, 2, 2, IORING_SETUP_CQSIZE);	/* 4 CQEs > 2 */
	resize(&r, 4, 16, IORING_SETUP_CQSIZE);
	note("  CQ_OVERFLOW flag after the resize %u", !!(*r.sq_flags & IORING_SQ_CQ_OVERFLOW));
	raw_enter(r.fd, 0, 6, IORING_ENTER_GETEVENTS, NULL, 0);
	drain_cq(&r, "after an enter");

	provided_buffers(&r);

	note("through a registered ring index, back to the default CQ size:");
	struct io_uring_rsrc_update up = { .offset = -1U, .data = (unsigned long long)r.fd };
	long idx = raw_register(r.fd, REGISTER_RING_FDS, &up, 1);
	note("  registered: %ld", idx);
	if (idx == 1) {
		queue_nops(&r, 2, 600);
		submit(&r, 2, 2);
		resize_ex(&r, 8, 0, 0, (int)up.offset + 1);
		drain_cq(&r, "after the resize");
	}
	resize_while_other_enters(&r);

	queue_nops(&r, 8, 700);
	submit(&r, 8, 8);
	drain_cq(&r, "at the end");

	munmap(r.rings, r.rings_len);
	munmap(r.sqes, r.sqes_len);
	close(r.fd);
	return 0;
}
