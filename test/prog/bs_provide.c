/*
 * IORING_OP_PROVIDE_BUFFERS and IORING_OP_REMOVE_BUFFERS, row by row as
 * Linux 6.18 answers them: success (res 0), each rejected field with its
 * error (-E2BIG, -EINVAL, -EOVERFLOW, -EFAULT, -EOPNOTSUPP for
 * IOSQE_BUFFER_SELECT on the PROVIDE itself), the 65535-buffer cap and how a
 * request that crosses it is cut, duplicate bids, a group that exists but is
 * empty versus one never created (-ENOENT for REMOVE, -ENOBUFS for a
 * selection), ring-mapped groups (-EINVAL), REMOVE's own rejected fields
 * (non-zero addr, len, off, rw_flags, splice_fd_in, ioprio, a count of 0 or
 * 65537, IOSQE_BUFFER_SELECT), REMOVE counting what it removed oldest first
 * and skipping a buffer held by a pending READ; then provide and
 * remove interleaved with selections, showing FIFO order and which bids
 * remain. Every request is submitted alone, so each CQE is printed as reaped.
 */
#include "test/prog/bs_bufs.h"

static struct io_uring ring;

/* A PROVIDE with fields set directly, for the rejected-field rows. */
static int provide_raw(unsigned long long addr, unsigned len, int count, unsigned bgid,
		       unsigned long long bid, unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_provide_buffers(sqe, NULL, (int)len, count, (int)bgid, 0);
	sqe->addr = addr;
	sqe->off = bid;
	return run_one(&ring, sqe, ud, NULL);
}

static struct io_uring_sqe *remove_sqe(unsigned bgid, int count)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_remove_buffers(sqe, count, (int)bgid);
	return sqe;
}

int main(void)
{
	int ret = io_uring_queue_init(16, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	struct arena a1 = arena_new(16, 8);
	unsigned long long a1addr = (unsigned long long)(uintptr_t)a1.base;
	struct io_uring_sqe *sqe;

	note("provide: success is res 0");
	provide(&ring, &a1, 1, 0, 4, 1);

	note("provide: count 0 and 65537");
	provide_raw(a1addr, 16, 0, 1, 0, 2);
	provide_raw(a1addr, 16, 65537, 1, 0, 3);
	note("provide: len 0");
	provide_raw(a1addr, 0, 1, 1, 0, 4);
	note("provide: first bid 65536");
	provide_raw(a1addr, 16, 1, 1, 65536, 5);
	note("provide: first bid 65535 with 2 buffers, then with 1");
	provide_raw(a1addr, 16, 2, 2, 65535, 6);
	provide_raw(a1addr, 16, 1, 2, 65535, 7);
	note("provide: addr + len * count wraps");
	provide_raw(0xfffffffffffff000ULL, 0x2000, 1, 1, 0, 8);
	note("provide: range in the kernel half of the address space");
	provide_raw(0xffff800000000000ULL, 4096, 1, 1, 0, 9);
	note("provide: addr NULL is only range-checked");
	provide_raw(0, 4096, 1, 3, 0, 10);
	remove_bufs(&ring, 3, 1, 11);

	note("provide: non-zero ioprio, rw_flags, splice_fd_in");
	sqe = get_sqe(&ring);
	prep_provide_arena(sqe, &a1, 1, 4, 1);
	sqe->ioprio = 1;
	run_one(&ring, sqe, 12, NULL);
	sqe = get_sqe(&ring);
	prep_provide_arena(sqe, &a1, 1, 4, 1);
	sqe->rw_flags = 1;
	run_one(&ring, sqe, 13, NULL);
	sqe = get_sqe(&ring);
	prep_provide_arena(sqe, &a1, 1, 4, 1);
	sqe->splice_fd_in = 1;
	run_one(&ring, sqe, 14, NULL);
	note("provide: IOSQE_BUFFER_SELECT on the PROVIDE itself");
	sqe = get_sqe(&ring);
	prep_provide_arena(sqe, &a1, 1, 4, 1);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	run_one(&ring, sqe, 15, NULL);
	note("group 1 still holds only the first four");
	remove_bufs(&ring, 1, 65536, 16);

	/*
	 * One-byte buffers keep the 65536-buffer requests small; REMOVE's res
	 * shows how many a group really held.
	 */
	struct arena cap = arena_new(1, 65536);
	note("cap: 65536 at once");
	provide(&ring, &cap, 10, 0, 65536, 20);
	remove_bufs(&ring, 10, 65536, 21);
	note("cap: 65000, then 1000 more crossing the cap");
	provide(&ring, &cap, 10, 0, 65000, 22);
	provide(&ring, &cap, 10, 0, 1000, 23);
	remove_bufs(&ring, 10, 65536, 24);
	note("cap: 65535, then 1 more");
	provide(&ring, &cap, 10, 0, 65535, 25);
	provide(&ring, &cap, 10, 0, 1, 26);
	remove_bufs(&ring, 10, 65536, 27);

	note("duplicate bids: bid 5 twice, at two addresses");
	struct arena dx = arena_new(8, 6), dy = arena_new(8, 6);
	provide(&ring, &dx, 4, 5, 1, 30);
	provide(&ring, &dy, 4, 5, 1, 31);
	int p[2];
	if (pipe(p) < 0)
		die("pipe: %s", strerror(errno));
	write_all(p[1], "first", 5);
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 4, 0, 0), 32, &dx);
	write_all(p[1], "second", 6);
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 4, 0, 0), 33, &dy);
	note("first address holds \"%.8s\", second \"%.8s\"", arena_buf(&dx, 5), arena_buf(&dy, 5));

	note("remove: fields that must be zero");
	struct arena a6 = arena_new(16, 8);
	provide(&ring, &a6, 6, 0, 8, 40);
	sqe = remove_sqe(6, 1);
	sqe->addr = 1;
	run_one(&ring, sqe, 41, NULL);
	sqe = remove_sqe(6, 1);
	sqe->len = 1;
	run_one(&ring, sqe, 42, NULL);
	sqe = remove_sqe(6, 1);
	sqe->off = 1;
	run_one(&ring, sqe, 43, NULL);
	sqe = remove_sqe(6, 1);
	sqe->rw_flags = 1;
	run_one(&ring, sqe, 44, NULL);
	sqe = remove_sqe(6, 1);
	sqe->splice_fd_in = 1;
	run_one(&ring, sqe, 45, NULL);
	note("remove: count 0 and 65537");
	run_one(&ring, remove_sqe(6, 0), 46, NULL);
	run_one(&ring, remove_sqe(6, 65537), 47, NULL);
	note("remove: IOSQE_BUFFER_SELECT on the REMOVE itself");
	sqe = remove_sqe(6, 1);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 6;
	run_one(&ring, sqe, 48, NULL);
	note("remove: non-zero ioprio");
	sqe = remove_sqe(6, 1);
	sqe->ioprio = 1;
	run_one(&ring, sqe, 49, NULL);
	note("remove: 2 of what is left, oldest first; the next selection shows which");
	remove_bufs(&ring, 6, 2, 50);
	next_bid(&ring, 6, 51, &a6);
	note("remove: more than present");
	remove_bufs(&ring, 6, 100, 52);

	note("group life: emptied group still exists");
	struct arena a5 = arena_new(16, 2);
	provide(&ring, &a5, 5, 0, 2, 60);
	remove_bufs(&ring, 5, 2, 61);
	remove_bufs(&ring, 5, 1, 62);
	next_bid(&ring, 5, 63, &a5);
	note("group never created: remove, then a selection");
	remove_bufs(&ring, 77, 1, 64);
	next_bid(&ring, 78, 65, NULL);
	note("a failed remove did not create the group");
	remove_bufs(&ring, 77, 1, 66);

	note("ring-mapped group: provide and remove");
	struct io_uring_buf_ring *br;
	if (posix_memalign((void **)&br, 4096, 4096))
		die("posix_memalign failed");
	memset(br, 0, 4096);
	struct io_uring_buf_reg reg = { .ring_addr = (unsigned long)br, .ring_entries = 8, .bgid = 20 };
	note("register buffer ring on group 20: %d", io_uring_register_buf_ring(&ring, &reg, 0));
	provide(&ring, &a1, 20, 0, 1, 70);
	remove_bufs(&ring, 20, 1, 71);
	note("unregister: %d", io_uring_unregister_buf_ring(&ring, 20));
	free(br);

	note("a pending READ holds its buffer: remove skips it");
	struct arena a7 = arena_new(16, 2);
	provide(&ring, &a7, 7, 0, 2, 80);
	int q[2];
	if (pipe(q) < 0)
		die("pipe: %s", strerror(errno));
	prep_read_sel(&ring, q[0], 0, 7, 0, 81);
	submit_expect(&ring, 1);
	expect_pending(&ring, "READ on an empty pipe");
	remove_bufs(&ring, 7, 65536, 82);
	write_all(q[1], "late", 4);
	reap_show(&ring, 1, &a7);
	remove_bufs(&ring, 7, 65536, 83);

	note("interleaved: FIFO selection, removal from the head, re-provide at the tail");
	struct arena a8 = arena_new(16, 16);
	provide(&ring, &a8, 8, 0, 4, 90);
	next_bid(&ring, 8, 91, &a8);
	provide(&ring, &a8, 8, 10, 2, 92);
	remove_bufs(&ring, 8, 1, 93);
	next_bid(&ring, 8, 94, &a8);
	next_bid(&ring, 8, 95, &a8);
	next_bid(&ring, 8, 96, &a8);
	provide(&ring, &a8, 8, 0, 1, 97);
	next_bid(&ring, 8, 98, &a8);
	next_bid(&ring, 8, 99, &a8);
	next_bid(&ring, 8, 100, &a8);
	remove_bufs(&ring, 8, 1, 101);
	note("provide after the group ran dry, two at once, then select both");
	provide(&ring, &a8, 8, 14, 2, 102);
	next_bid(&ring, 8, 103, &a8);
	next_bid(&ring, 8, 104, &a8);

	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
	io_uring_queue_exit(&ring);
	return 0;
}
