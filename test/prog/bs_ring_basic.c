/*
 * Buffer rings (IORING_REGISTER_PBUF_RING), one buffer per request:
 *  - registration errors in the kernel's order (nr_args, the argument, resv,
 *    flags, entries, an id taken, the ring's memory);
 *  - READ and RECV with IOSQE_BUFFER_SELECT take the entry at the head, in
 *    ring order, with bid and flags in the CQE; an empty ring is -ENOBUFS;
 *    entries the program adds later, and the tail wrapping, are seen;
 *  - a RECV pending on an idle socket takes its buffer when data comes; on
 *    an empty ring it fails at once, data or not;
 *  - PROVIDE_BUFFERS and REMOVE_BUFFERS on a ring's id are -EINVAL, a ring
 *    on a legacy group with buffers -EEXIST, on an emptied one it is fine;
 *  - IORING_REGISTER_PBUF_STATUS reports the head; unregistering, and the
 *    errors of both on the wrong kind of id;
 *  - an IOU_PBUF_RING_MMAP ring, mapped at its offset;
 *  - a READ from a pipe takes its entry only with the data: waiting it
 *    holds none, an error leaves it (no F_BUFFER), end of file takes it;
 *    from a regular file, or from io-wq (IOSQE_ASYNC), the entry is taken
 *    at once, error or not; from a pipe's write end it fails at once
 *    (-EBADF), its entry left.
 * Run natively, with the kernel keeping the rings, and with bufsel keeping
 * them (BUFSEL_RINGS=emulate, BUFSEL_KERNEL=5.15): every run prints the same.
 */
#include "test/prog/bs_rings.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/socket.h>

static struct io_uring ring;

static int reg_call(unsigned opcode, void *arg, unsigned nr)
{
	return reg_call_on(ring.ring_fd, opcode, arg, nr);
}

static int reg_ring(uint64_t addr, uint32_t entries, uint16_t bgid, uint16_t flags)
{
	return reg_ring_on(ring.ring_fd, addr, entries, bgid, flags);
}

static int unreg_ring(uint16_t bgid)
{
	return unreg_ring_on(ring.ring_fd, bgid);
}

static void show_status(uint32_t bgid)
{
	show_status_on(ring.ring_fd, bgid);
}

static void read_one(int fd, unsigned len, unsigned bgid, unsigned long long ud, const struct arena *a)
{
	run_one(&ring, prep_read_sel(&ring, fd, len, bgid, 0, 0), ud, a);
}

int main(void)
{
	int ret = io_uring_queue_init(16, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int p[2];
	if (pipe(p) < 0)
		die("pipe: %s", strerror(errno));

	note("registration errors");
	void *m = ring_mem(4);
	struct reg bad = { .ring_addr = (uintptr_t)m, .ring_entries = 4, .bgid = 1 };
	note("nr_args 2: %d", reg_call(IORING_REGISTER_PBUF_RING, &bad, 2));
	note("no argument: %d", reg_call(IORING_REGISTER_PBUF_RING, NULL, 1));
	note("argument unmapped: %d", reg_call(IORING_REGISTER_PBUF_RING, (void *)8, 1));
	bad.resv[1] = 1;
	note("resv: %d", reg_call(IORING_REGISTER_PBUF_RING, &bad, 1));
	note("unknown flag: %d", reg_ring((uintptr_t)m, 4, 1, 0x80));
	struct reg ml = { .ring_addr = (uintptr_t)m, .ring_entries = 4, .bgid = 1, .min_left = 32 };
	note("min_left without IOU_PBUF_RING_INC: %d", reg_call(IORING_REGISTER_PBUF_RING, &ml, 1));
	ml.min_left = 0;
	ml.resv[4] = 1;
	note("the last resv word: %d", reg_call(IORING_REGISTER_PBUF_RING, &ml, 1));
	note("0 entries: %d", reg_ring((uintptr_t)m, 0, 1, 0));
	note("3 entries: %d", reg_ring((uintptr_t)m, 3, 1, 0));
	note("65536 entries: %d", reg_ring((uintptr_t)m, 65536, 1, 0));
	note("address 0: %d", reg_ring(0, 4, 1, 0));
	note("address not page aligned: %d", reg_ring((uintptr_t)m + 16, 4, 1, 0));
	void *gone = ring_mem(4);
	munmap(gone, 4096);
	note("memory unmapped: %d", reg_ring((uintptr_t)gone, 4, 1, 0));

	note("a ring of 4 on group 1, two buffers in it");
	struct io_uring_buf_ring *br = m;
	io_uring_buf_ring_init(br);
	note("register: %d", reg_ring((uintptr_t)m, 4, 1, 0));
	note("again: %d", reg_ring((uintptr_t)m, 4, 1, 0));
	struct arena a = arena_new(8, 8);
	ring_add(br, 4, &a, 0, 2);
	show_status(1);
	write_all(p[1], "abcdefghijklmnop", 16);
	read_one(p[0], 0, 1, 1, &a);
	read_one(p[0], 3, 1, 2, &a);
	note("the ring is empty");
	read_one(p[0], 0, 1, 3, &a);
	show_status(1);
	note("two more, then wrap the ring twice");
	ring_add(br, 4, &a, 2, 2);
	read_one(p[0], 0, 1, 4, &a);
	for (unsigned i = 0; i < 6; i++) {
		ring_add(br, 4, &a, 4 + (i % 4), 1);
		write_all(p[1], "0123456789", 10);
		read_one(p[0], 0, 1, 10 + i, &a);
	}
	show_status(1);

	note("PROVIDE_BUFFERS and REMOVE_BUFFERS on a ring's id");
	struct arena l = arena_new(8, 4);
	provide(&ring, &l, 1, 0, 1, 20);
	remove_bufs(&ring, 1, 1, 21);

	note("a RECV pending on an idle socket");
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		die("socketpair: %s", strerror(errno));
	prep_recv_sel(&ring, sv[0], 0, 0, 1, 30);
	submit_expect(&ring, 1);
	expect_pending(&ring, "RECV on an idle socket");
	write_all(sv[1], "ring!", 5);
	reap_show(&ring, 1, &a);
	note("the ring empty: the RECV fails at once");
	run_one(&ring, prep_recv_sel(&ring, sv[0], 0, 0, 1, 0), 31, &a);
	write_all(sv[1], "late", 4);
	ring_add(br, 4, &a, 0, 1);
	write_all(sv[1], "again", 5);
	run_one(&ring, prep_recv_sel(&ring, sv[0], 0, 0, 1, 0), 32, &a);

	note("legacy groups and rings on one id");
	provide(&ring, &l, 2, 0, 2, 40);
	void *m2 = ring_mem(2);
	io_uring_buf_ring_init(m2);
	note("ring on a legacy group with buffers: %d", reg_ring((uintptr_t)m2, 2, 2, 0));
	remove_bufs(&ring, 2, 2, 41);
	note("ring on an emptied legacy group: %d", reg_ring((uintptr_t)m2, 2, 2, 0));
	provide(&ring, &l, 3, 0, 1, 42);
	note("unregister a legacy group: %d", unreg_ring(3));
	show_status(3);
	show_status(4);
	note("unregister a group that is not there: %d", unreg_ring(4));
	struct reg um = { .bgid = 2, .min_left = 7 };
	note("unregister with min_left set: %d", reg_call(IORING_UNREGISTER_PBUF_RING, &um, 1));
	um.min_left = 0;
	um.flags = 1;
	note("unregister with a flag: %d", reg_call(IORING_UNREGISTER_PBUF_RING, &um, 1));
	note("unregister 2: %d", unreg_ring(2));
	note("again: %d", unreg_ring(2));
	read_one(p[0], 0, 2, 43, &a);

	note("a ring bufsel or the kernel maps (IOU_PBUF_RING_MMAP)");
	note("register: %d", reg_ring(0, 8, 5, RING_MMAP));
	errno = 0;
	void *bad_map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, ring.ring_fd,
			     (off_t)(OFF_PBUF_RING | (6ULL << OFF_PBUF_SHIFT)));
	note("mmap of a group without a ring: %s", bad_map == MAP_FAILED ? strerror(errno) : "mapped");
	struct io_uring_buf_ring *mr = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
					    ring.ring_fd, (off_t)(OFF_PBUF_RING | (5ULL << OFF_PBUF_SHIFT)));
	if (mr == MAP_FAILED)
		die("mmap of the ring: %s", strerror(errno));
	note("tail at start %u", mr->tail);
	ring_add(mr, 8, &a, 0, 3);
	read_one(p[0], 0, 5, 50, &a);
	read_one(p[0], 0, 5, 51, &a);
	show_status(5);
	note("unregister 5: %d", unreg_ring(5));
	read_one(p[0], 0, 5, 52, &a);

	note("a READ waiting on an empty pipe holds no entry; a READ with data takes it");
	int q[2];
	if (pipe(q) < 0)
		die("pipe: %s", strerror(errno));
	ring_add(br, 4, &a, 1, 1);
	prep_read_sel(&ring, q[0], 0, 1, 0, 61);
	submit_expect(&ring, 1);
	expect_pending(&ring, "READ on an empty pipe");
	show_status(1);
	write_all(p[1], "data", 4);
	read_one(p[0], 0, 1, 62, &a);
	ring_add(br, 4, &a, 2, 1);
	write_all(q[1], "late", 4);
	reap_show(&ring, 1, &a);
	show_status(1);
	note("the ring empty: a READ on an empty pipe fails at once");
	read_one(q[0], 0, 1, 63, &a);

	note("errors: from a pipe the entry stays, from a file it is taken");
	char *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ro == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	io_uring_buf_ring_add(br, ro, 64, 7, io_uring_buf_ring_mask(4), 0);
	io_uring_buf_ring_advance(br, 1);
	write_all(p[1], "abc", 3);
	read_one(p[0], 0, 1, 64, &a);
	show_status(1);
	int f = open("/proc/self/exe", O_RDONLY);
	if (f < 0)
		die("open: %s", strerror(errno));
	note("from a file");
	run_one(&ring, prep_read_sel(&ring, f, 0, 1, 0, 0), 65, NULL);
	show_status(1);
	note("end of file on a pipe takes the entry");
	ring_add(br, 4, &a, 3, 1);
	close(q[1]);
	read_one(q[0], 0, 1, 66, &a);
	show_status(1);
	note("RWF_NOWAIT on an empty pipe");
	char drained[8];
	if (read(p[0], drained, sizeof(drained)) != 3)
		die("read: %s", strerror(errno));
	ring_add(br, 4, &a, 4, 1);
	struct io_uring_sqe *nw = prep_read_sel(&ring, p[0], 0, 1, 0, 0);
	nw->rw_flags = RWF_NOWAIT;
	run_one(&ring, nw, 67, &a);
	show_status(1);
	note("IOSQE_ASYNC on an empty pipe, then data");
	ring_add(br, 4, &a, 5, 1);
	struct io_uring_sqe *as = prep_read_sel(&ring, p[0], 0, 1, 0, 68);
	as->flags |= IOSQE_ASYNC;
	submit_expect(&ring, 1);
	expect_pending(&ring, "READ with IOSQE_ASYNC on an empty pipe");
	show_status(1);
	write_all(p[1], "async", 5);
	reap_show(&ring, 1, &a);
	show_status(1);
	note("a READ of a pipe's write end fails at once, its entry left");
	ring_add(br, 4, &a, 6, 1);
	run_one(&ring, prep_read_sel(&ring, p[1], 0, 1, 0, 0), 69, &a);
	show_status(1);

	note("unregister 1: %d", unreg_ring(1));
	read_one(p[0], 0, 1, 60, &a);
	io_uring_queue_exit(&ring);
	return 0;
}
