/*
 * Programs that misuse the ring itself, the memory bufsel shadows and the
 * arguments of the three system calls it intercepts.  Each must get what the
 * kernel gives, and the ring (or a fresh one) must go on working:
 *
 *  - an SQ array entry out of range: the kernel drops it (sq.kdropped), the
 *    submission stops there, the next one goes on after it;
 *  - an SQ tail far ahead of the head: the kernel takes at most the SQ size
 *    per enter and reads the same slots again; to_submit beyond what is
 *    there takes only what is there;
 *  - a CQ head moved past the tail: the kernel sees a full CQ and keeps
 *    completions back until the head is sane again;
 *  - io_uring_enter with a bad EXT_ARG pointer, a bad sigmask pointer and a
 *    wrong argument size, with and without completions ready;
 *  - io_uring_setup with unreadable and with unwritable params;
 *  - io_uring_register with bad pointers (files, buffer ring, probe,
 *    synchronous cancel, ring fds).
 * All of it through libc's syscall() (bufsel's hook path) except where
 * liburing's inline calls are the point.
 */
#include "test/prog/bs_bufs.h"

#include <sys/mman.h>
#include <sys/syscall.h>

static char *bad;	/* PROT_NONE */
static char *ro;	/* PROT_READ */

/* Every CQE now in the CQ, by hand (liburing's view may be out of step). */
static unsigned drain_cq(struct io_uring *ring, const char *what)
{
	unsigned head = IO_URING_READ_ONCE(*ring->cq.khead), n = 0;
	unsigned tail = io_uring_smp_load_acquire(ring->cq.ktail);
	struct io_uring_cqe c[256];
	for (; head != tail && n < 256; head++)
		c[n++] = ring->cq.cqes[head & *ring->cq.kring_mask];
	io_uring_smp_store_release(ring->cq.khead, head);
	note("%s: %u CQEs", what, n);
	cqe_print_sorted(c, n);
	return n;
}

static void nop_slots(struct io_uring *ring, unsigned long long base)
{
	for (unsigned i = 0; i < *ring->sq.kring_entries; i++) {
		struct io_uring_sqe *sqe = &ring->sq.sqes[i];
		memset(sqe, 0, sizeof(*sqe));
		sqe->opcode = IORING_OP_NOP;
		sqe->user_data = base + i;
		ring->sq.array[i] = i;
	}
}

static void sq_cases(void)
{
	struct io_uring ring;
	struct io_uring_params p = { 0 };
	int ret = io_uring_queue_init_params(4, &ring, &p);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	unsigned entries = *ring.sq.kring_entries, head = *ring.sq.khead;
	note("== SQ array entry out of range (sq %u, cq %u)", p.sq_entries, p.cq_entries);
	nop_slots(&ring, 10);
	ring.sq.array[(head + 1) & *ring.sq.kring_mask] = 1000;
	io_uring_smp_store_release(ring.sq.ktail, head + 3);
	note("raw_enter(3) returned %ld", raw_enter(ring.ring_fd, 3, 0, 0, NULL, 0));
	note("sq head moved by %u, dropped %u", *ring.sq.khead - head, *ring.sq.kdropped);
	note("raw_enter(2) returned %ld", raw_enter(ring.ring_fd, 2, 0, 0, NULL, 0));
	note("sq head moved by %u, dropped %u", *ring.sq.khead - head, *ring.sq.kdropped);
	drain_cq(&ring, "after the dropped entry");

	note("== SQ tail %u entries ahead of the head, SQ of %u", 3 * entries, entries);
	head = *ring.sq.khead;
	nop_slots(&ring, 20);
	io_uring_smp_store_release(ring.sq.ktail, head + 3 * entries);
	for (unsigned k = 0; k < 3; k++) {
		note("raw_enter(%u) returned %ld", 3 * entries, raw_enter(ring.ring_fd, 3 * entries, 0, 0, NULL, 0));
		note("sq head moved by %u", *ring.sq.khead - head);
		drain_cq(&ring, "after it");
	}
	note("== to_submit beyond what is there");
	head = *ring.sq.khead;
	nop_slots(&ring, 30);
	io_uring_smp_store_release(ring.sq.ktail, head + 2);
	note("raw_enter(%u) returned %ld", entries, raw_enter(ring.ring_fd, entries, 0, 0, NULL, 0));
	note("sq head moved by %u", *ring.sq.khead - head);
	drain_cq(&ring, "after it");
	note("raw_enter(1) with nothing published returned %ld", raw_enter(ring.ring_fd, 1, 0, 0, NULL, 0));
	io_uring_queue_exit(&ring);
}

static void cq_cases(void)
{
	struct io_uring ring;
	int ret = io_uring_queue_init(4, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	note("== CQ head moved 4 past the tail");
	unsigned tail = *ring.cq.ktail;
	io_uring_smp_store_release(ring.cq.khead, tail + 4);
	for (unsigned i = 0; i < 2; i++) {
		struct io_uring_sqe *sqe = get_sqe(&ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = 40 + i;
	}
	note("submit returned %d", io_uring_submit(&ring));
	note("raw_enter(GETEVENTS, 1) returned %ld", raw_enter(ring.ring_fd, 0, 1, IORING_ENTER_GETEVENTS, NULL, 0));
	note("cq tail moved by %u, IORING_SQ_CQ_OVERFLOW %d", *ring.cq.ktail - tail,
	     !!(IO_URING_READ_ONCE(*ring.sq.kflags) & IORING_SQ_CQ_OVERFLOW));
	note("the head put back");
	io_uring_smp_store_release(ring.cq.khead, tail);
	note("raw_enter(GETEVENTS, 2) returned %ld", raw_enter(ring.ring_fd, 0, 2, IORING_ENTER_GETEVENTS, NULL, 0));
	drain_cq(&ring, "after it");
	note("koverflow %u", *ring.cq.koverflow);

	note("== io_uring_enter arguments");
	struct io_uring_getevents_arg ga = { 0 };
	unsigned x = IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG;
	note("EXT_ARG inaccessible, CQ empty: %ld", raw_enter(ring.ring_fd, 0, 1, x, bad, sizeof(ga)));
	note("EXT_ARG size 3: %ld", raw_enter(ring.ring_fd, 0, 1, x, &ga, 3));
	ga.sigmask = (uint64_t)(uintptr_t)bad;
	ga.sigmask_sz = 8;
	note("EXT_ARG sigmask inaccessible: %ld", raw_enter(ring.ring_fd, 0, 1, x, &ga, sizeof(ga)));
	ga = (struct io_uring_getevents_arg){ .ts = (uint64_t)(uintptr_t)bad };
	note("EXT_ARG timespec inaccessible: %ld", raw_enter(ring.ring_fd, 0, 1, x, &ga, sizeof(ga)));
	note("sigmask inaccessible: %ld", raw_enter(ring.ring_fd, 0, 1, IORING_ENTER_GETEVENTS, bad, 8));
	note("sigmask size 3: %ld", raw_enter(ring.ring_fd, 0, 1, IORING_ENTER_GETEVENTS, ro, 3));
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 50;
	note("submit returned %d", io_uring_submit(&ring));
	note("with a CQE ready:");
	note("EXT_ARG inaccessible: %ld", raw_enter(ring.ring_fd, 0, 1, x, bad, sizeof(ga)));
	note("EXT_ARG size 3: %ld", raw_enter(ring.ring_fd, 0, 1, x, &ga, 3));
	note("sigmask inaccessible: %ld", raw_enter(ring.ring_fd, 0, 1, IORING_ENTER_GETEVENTS, bad, 8));
	note("submit and EXT_ARG inaccessible:");
	sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 51;
	io_uring_smp_store_release(ring.sq.ktail, *ring.sq.ktail + 1);
	ring.sq.sqe_head = ring.sq.sqe_tail;
	note("raw_enter(1, 1, EXT_ARG inaccessible): %ld", raw_enter(ring.ring_fd, 1, 1, x, bad, sizeof(ga)));
	drain_cq(&ring, "after the enters");
	io_uring_queue_exit(&ring);
}

static void setup_cases(void)
{
	note("== io_uring_setup with bad params");
	long fd = syscall(__NR_io_uring_setup, 4, bad);
	note("params inaccessible: %ld", fd < 0 ? -errno : fd);
	memset(ro, 0, 4096);
	mprotect(ro, 4096, PROT_READ);
	fd = syscall(__NR_io_uring_setup, 4, ro);
	note("params read-only: %ld", fd < 0 ? -errno : fd);
	int probe = dup(0);
	note("the next fd is %d", probe);
	close(probe);
	struct io_uring ring;
	int ret = io_uring_queue_init(4, &ring, 0);
	note("a ring after that: %d", ret < 0 ? ret : 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));

	note("== io_uring_register with bad pointers");
	note("REGISTER_FILES: %ld", raw_register(ring.ring_fd, IORING_REGISTER_FILES, bad, 1));
	note("REGISTER_PBUF_RING: %ld", raw_register(ring.ring_fd, IORING_REGISTER_PBUF_RING, bad, 1));
	note("UNREGISTER_PBUF_RING: %ld", raw_register(ring.ring_fd, IORING_UNREGISTER_PBUF_RING, bad, 1));
	note("REGISTER_PROBE: %ld", raw_register(ring.ring_fd, IORING_REGISTER_PROBE, bad, 8));
	note("REGISTER_SYNC_CANCEL: %ld", raw_register(ring.ring_fd, IORING_REGISTER_SYNC_CANCEL, bad, 1));
	note("REGISTER_RING_FDS: %ld", raw_register(ring.ring_fd, IORING_REGISTER_RING_FDS, bad, 1));
	note("UNREGISTER_RING_FDS: %ld", raw_register(ring.ring_fd, IORING_UNREGISTER_RING_FDS, bad, 1));
	note("REGISTER_BUFFERS: %ld", raw_register(ring.ring_fd, IORING_REGISTER_BUFFERS, bad, 1));

	note("the ring still works");
	int pip[2];
	if (pipe(pip) < 0)
		die("pipe: %s", strerror(errno));
	struct arena a = arena_new(16, 2);
	provide(&ring, &a, 1, 0, 2, 60);
	write_all(pip[1], "still-ok", 8);
	run_one(&ring, prep_read_sel(&ring, pip[0], 0, 1, 0, 0), 61, &a);
	io_uring_queue_exit(&ring);
}

int main(void)
{
	bad = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ro = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (bad == MAP_FAILED || ro == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	sq_cases();
	cq_cases();
	setup_cases();
	return 0;
}
