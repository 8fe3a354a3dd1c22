/*
 * Rings in the program's own memory (IORING_SETUP_NO_MMAP, 6.5): the SQ and
 * CQ rings at cq_off.user_addr, the SQEs at sq_off.user_addr, no mmap at
 * all.  liburing 2.3 has no io_uring_queue_init_mem, so the program drives
 * the ring itself.  What the kernel refuses (no address, one not page
 * aligned, memory it cannot write, an mmap of such a ring), NOPs and a
 * buffer-select READ on it, without an SQ array too; then, with
 * SINGLE_ISSUER | DEFER_TASKRUN: a pipe read's completion shows only in the
 * submitter's wait, another thread may neither submit nor register
 * (-EEXIST).  Under BUFSEL_KERNEL older than 6.5 bufsel's shadow gives
 * these flags (the kernel beneath never sees them): the transcript must be
 * the kernel's.
 */
#include <errno.h>
#include <linux/io_uring.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CQE_PRINT_NO_LIBURING
#include "test/prog/cqe_print.h"

#ifndef IORING_SETUP_NO_MMAP
#define IORING_SETUP_NO_MMAP (1U << 14)
#endif
#ifndef IORING_SETUP_NO_SQARRAY
#define IORING_SETUP_NO_SQARRAY (1U << 16)
#endif

#define MEM_LEN (64 * 1024)

struct raw_ring {
	int fd;
	_Atomic unsigned *sq_tail, *cq_head, *cq_tail;
	unsigned *sq_array;
	unsigned sq_mask, cq_mask, sq_local;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
};

static char *rings_mem, *sqes_mem;

/* Each ring its own memory: a closed ring's kernel side goes away later. */
static void fresh_mem(void)
{
	rings_mem = mmap(NULL, MEM_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	sqes_mem = mmap(NULL, MEM_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (rings_mem == MAP_FAILED || sqes_mem == MAP_FAILED)
		die("mmap: %s", strerror(errno));
}

/* -errno, or the fd with *r filled (user_addr in 6.1 headers: resv2). */
static long ring_open(struct raw_ring *r, unsigned entries, unsigned flags, uint64_t rings, uint64_t sqes)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_NO_MMAP | flags;
	p.cq_off.resv2 = rings;
	p.sq_off.resv2 = sqes;
	long fd = syscall(__NR_io_uring_setup, entries, &p);
	if (fd < 0)
		return -errno;
	if (p.cq_off.resv2 != rings || p.sq_off.resv2 != sqes)
		die("user_addr not given back: %llx %llx", (unsigned long long)p.cq_off.resv2,
		    (unsigned long long)p.sq_off.resv2);
	char *m = (char *)(uintptr_t)rings;
	r->fd = (int)fd;
	r->sq_tail = (void *)(m + p.sq_off.tail);
	r->sq_mask = *(unsigned *)(m + p.sq_off.ring_mask);
	r->sq_array = (flags & IORING_SETUP_NO_SQARRAY) ? NULL : (void *)(m + p.sq_off.array);
	r->sq_local = atomic_load(r->sq_tail);
	r->cq_head = (void *)(m + p.cq_off.head);
	r->cq_tail = (void *)(m + p.cq_off.tail);
	r->cq_mask = *(unsigned *)(m + p.cq_off.ring_mask);
	r->cqes = (void *)(m + p.cq_off.cqes);
	r->sqes = (void *)(uintptr_t)sqes;
	note("setup flags 0x%x: sq %u, cq %u, array %s, entries in the ring %u/%u", p.flags, p.sq_entries,
	     p.cq_entries, r->sq_array ? "yes" : "no", *(unsigned *)(m + p.sq_off.ring_entries),
	     *(unsigned *)(m + p.cq_off.ring_entries));
	return fd;
}

static struct io_uring_sqe *sqe_next(struct raw_ring *r, unsigned long long ud, int opcode)
{
	unsigned slot = r->sq_local & r->sq_mask;
	struct io_uring_sqe *sqe = &r->sqes[slot];
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = (unsigned char)opcode;
	sqe->user_data = ud;
	if (r->sq_array)
		r->sq_array[slot] = slot;
	r->sq_local++;
	return sqe;
}

static long submit(struct raw_ring *r, unsigned n, unsigned want, unsigned flags)
{
	atomic_store_explicit(r->sq_tail, r->sq_local, memory_order_release);
	long ret = syscall(__NR_io_uring_enter, r->fd, n, want, flags | (want ? IORING_ENTER_GETEVENTS : 0),
			   NULL, 0);
	return ret < 0 ? -errno : ret;
}

static unsigned cq_ready(struct raw_ring *r)
{
	return atomic_load_explicit(r->cq_tail, memory_order_acquire) - atomic_load(r->cq_head);
}

static void reap_all(struct raw_ring *r)
{
	struct io_uring_cqe got[64];
	unsigned n = 0, head = atomic_load(r->cq_head);
	while (head != atomic_load_explicit(r->cq_tail, memory_order_acquire) && n < 64)
		got[n++] = r->cqes[head++ & r->cq_mask];
	atomic_store_explicit(r->cq_head, head, memory_order_release);
	cqe_print_sorted(got, n);
}

static void refused(const char *what, unsigned flags, uint64_t rings, uint64_t sqes)
{
	struct raw_ring r;
	long fd = ring_open(&r, 4, flags, rings, sqes);
	note("%s: %s", what, fd < 0 ? strerror((int)-fd) : "accepted");
	if (fd >= 0)
		close((int)fd);
}

static void nops_and_read(unsigned flags)
{
	struct raw_ring r;
	fresh_mem();
	long fd = ring_open(&r, 8, flags, (uintptr_t)rings_mem, (uintptr_t)sqes_mem);
	if (fd < 0)
		die("setup NO_MMAP|0x%x: %s", flags, strerror((int)-fd));
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd, IORING_OFF_SQ_RING);
	note("mmap of the rings: %s", m == MAP_FAILED ? strerror(errno) : "mapped");
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd, IORING_OFF_SQES);
	note("mmap of the SQEs: %s", m == MAP_FAILED ? strerror(errno) : "mapped");
	for (unsigned i = 0; i < 3; i++)
		sqe_next(&r, 1 + i, IORING_OP_NOP);
	note("submit 3 NOPs: %ld", submit(&r, 3, 3, 0));
	reap_all(&r);

	/* Several rounds of the ring, with a buffer-select READ in each. */
	static char bufs[4][32];
	struct io_uring_sqe *sqe = sqe_next(&r, 10, IORING_OP_PROVIDE_BUFFERS);
	sqe->addr = (uintptr_t)bufs;
	sqe->len = sizeof(bufs[0]);
	sqe->fd = 4;
	sqe->buf_group = 7;
	note("provide: %ld", submit(&r, 1, 1, 0));
	reap_all(&r);
	int pp[2];
	if (pipe(pp))
		die("pipe: %s", strerror(errno));
	for (unsigned round = 0; round < 4; round++) {
		char msg[16];
		int len = snprintf(msg, sizeof(msg), "round %u", round);
		if (write(pp[1], msg, (size_t)len) != len)
			die("write: %s", strerror(errno));
		sqe = sqe_next(&r, 20 + round, IORING_OP_READ);
		sqe->fd = pp[0];
		sqe->len = 32;
		sqe->flags = IOSQE_BUFFER_SELECT;
		sqe->buf_group = 7;
		for (unsigned i = 0; i < 6; i++)
			sqe_next(&r, 100 + 10 * round + i, IORING_OP_NOP);
		note("round %u: submit %ld", round, submit(&r, 7, 7, 0));
		reap_all(&r);
	}
	close(pp[0]);
	close(pp[1]);
	close(r.fd);
}

static struct raw_ring issuer_ring;

static void *other_thread(void *arg)
{
	(void)arg;
	sqe_next(&issuer_ring, 99, IORING_OP_NOP);
	note("other thread: submit %ld", submit(&issuer_ring, 1, 0, 0));
	issuer_ring.sq_local--;	/* not taken: the slot is the owner's again */
	long ret = syscall(__NR_io_uring_enter, issuer_ring.fd, 0, 1, IORING_ENTER_GETEVENTS, NULL, 0);
	note("other thread: wait %s", ret < 0 ? strerror(errno) : "returned");
	unsigned arg2[2] = { 0, 0 };
	ret = syscall(__NR_io_uring_register, issuer_ring.fd, IORING_REGISTER_IOWQ_MAX_WORKERS, arg2, 2);
	note("other thread: register %s", ret < 0 ? strerror(errno) : "done");
	return NULL;
}

static void single_issuer(void)
{
	fresh_mem();
	long fd = ring_open(&issuer_ring, 8, IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
			    (uintptr_t)rings_mem, (uintptr_t)sqes_mem);
	if (fd < 0)
		die("setup SINGLE_ISSUER|DEFER_TASKRUN: %s", strerror((int)-fd));
	int pp[2];
	if (pipe(pp))
		die("pipe: %s", strerror(errno));
	char buf[16] = { 0 };
	struct io_uring_sqe *sqe = sqe_next(&issuer_ring, 1, IORING_OP_READ);
	sqe->fd = pp[0];
	sqe->addr = (uintptr_t)buf;
	sqe->len = sizeof(buf) - 1;
	note("submit a pipe read: %ld", submit(&issuer_ring, 1, 0, 0));
	if (write(pp[1], "deferred", 8) != 8)
		die("write: %s", strerror(errno));
	usleep(20000);
	note("after the write, before a wait: %u CQEs", cq_ready(&issuer_ring));
	sqe_next(&issuer_ring, 2, IORING_OP_NOP);
	note("submit a NOP without waiting: %ld, %u CQEs", submit(&issuer_ring, 1, 0, 0), cq_ready(&issuer_ring));
	long ret = syscall(__NR_io_uring_enter, issuer_ring.fd, 0, 0, IORING_ENTER_GETEVENTS, NULL, 0);
	note("enter GETEVENTS: %ld, %u CQEs", ret, cq_ready(&issuer_ring));
	reap_all(&issuer_ring);
	note("read \"%s\"", buf);

	pthread_t t;
	if (pthread_create(&t, NULL, other_thread, NULL))
		die("pthread_create");
	pthread_join(t, NULL);
	sqe_next(&issuer_ring, 3, IORING_OP_NOP);
	note("owner: submit %ld", submit(&issuer_ring, 1, 1, 0));
	reap_all(&issuer_ring);
	close(pp[0]);
	close(pp[1]);
	close(issuer_ring.fd);
}

int main(void)
{
	fresh_mem();
	char *ro = mmap(NULL, MEM_LEN, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ro == MAP_FAILED)
		die("mmap: %s", strerror(errno));

	refused("rings at 0", 0, 0, (uintptr_t)sqes_mem);
	refused("SQEs at 0", 0, (uintptr_t)rings_mem, 0);
	refused("rings not page aligned", 0, (uintptr_t)rings_mem + 64, (uintptr_t)sqes_mem);
	refused("SQEs not page aligned", 0, (uintptr_t)rings_mem, (uintptr_t)sqes_mem + 64);
	refused("rings read-only", 0, (uintptr_t)ro, (uintptr_t)sqes_mem);
	refused("SQEs read-only", 0, (uintptr_t)rings_mem, (uintptr_t)ro);
	refused("DEFER_TASKRUN alone", IORING_SETUP_DEFER_TASKRUN, (uintptr_t)rings_mem, (uintptr_t)sqes_mem);
	refused("DEFER_TASKRUN with SQPOLL",
		IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_SQPOLL,
		(uintptr_t)rings_mem, (uintptr_t)sqes_mem);

	nops_and_read(0);
	nops_and_read(IORING_SETUP_NO_SQARRAY);
	nops_and_read(IORING_SETUP_COOP_TASKRUN);
	single_issuer();
	return 0;
}
