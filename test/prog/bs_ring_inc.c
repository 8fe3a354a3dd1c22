/*
 * Incremental buffer rings (IOU_PBUF_RING_INC): an entry is used up in
 * parts, each transfer starting where the last ended, and the CQE says with
 * IORING_CQE_F_BUF_MORE that the entry stays for more (6.18's
 * io_kbuf_inc_commit):
 *  - a READ from a pipe commits what it got; end of file commits nothing
 *    and still reports the buffer, with BUF_MORE;
 *  - an entry used up to the end is done: no BUF_MORE, its len 0 in the
 *    ring, the next transfer takes the next entry;
 *  - with min_left, an entry left with fewer bytes is done;
 *  - a READ from a regular file commits what it mapped (the SQE's length,
 *    or the rest of the entry), whatever it read;
 *  - a multishot RECV posts each CQE on the same entry while it lasts;
 *  - two receives share the entry, one after the other.
 * The ring's entries (addr as an offset into the arena, len) are shown
 * after each step, with the head IORING_REGISTER_PBUF_STATUS reports.
 */
#include "test/prog/bs_rings.h"

#include <fcntl.h>
#include <sys/socket.h>

#ifndef IOU_PBUF_RING_INC
#define IOU_PBUF_RING_INC 2
#endif
#ifndef IORING_CQE_F_BUF_MORE
#define IORING_CQE_F_BUF_MORE (1U << 4)
#endif

static struct io_uring ring;

static struct io_uring_buf_ring *inc_ring(uint16_t bgid, uint32_t entries, uint32_t min_left)
{
	struct io_uring_buf_ring *br = ring_mem(entries);
	io_uring_buf_ring_init(br);
	struct reg r = { .ring_addr = (uintptr_t)br, .ring_entries = entries, .bgid = bgid,
			 .flags = IOU_PBUF_RING_INC, .min_left = min_left };
	int ret = reg_call_on(ring.ring_fd, IORING_REGISTER_PBUF_RING, &r, 1);
	if (ret)
		die("register incremental ring %u: %s", bgid, strerror(-ret));
	return br;
}

static void show_entries(const struct io_uring_buf_ring *br, unsigned n, const struct arena *a, uint16_t bgid)
{
	for (unsigned i = 0; i < n; i++)
		note("entry %u: bid %u at +%lld len %u", i, br->bufs[i].bid,
		     (long long)(br->bufs[i].addr - (uintptr_t)arena_buf(a, 0)), br->bufs[i].len);
	show_status_on(ring.ring_fd, bgid);
}

/* One READ with buffer select, its CQE and the bytes at the entry's place. */
static void read_one(int fd, unsigned len, uint16_t bgid, long long off, uint64_t *at)
{
	prep_read_sel(&ring, fd, len, bgid, (unsigned long long)off, 1);
	submit_expect(&ring, 1);
	struct io_uring_cqe c;
	reap(&ring, &c, 1);
	cqe_print(&c);
	if ((c.flags & IORING_CQE_F_BUFFER) && c.res > 0)
		note_data("read ", (const char *)(uintptr_t)*at, c.res);
	if (c.res > 0)
		*at += (uint64_t)c.res;
}

int main(void)
{
	int ret = io_uring_queue_init(16, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));

	note("pipe, a ring of 2 entries of 64");
	{
		struct arena g = arena_new(64, 2);
		struct io_uring_buf_ring *br = inc_ring(1, 2, 0);
		ring_add(br, 2, &g, 0, 2);
		int p[2];
		if (pipe(p))
			die("pipe: %s", strerror(errno));
		uint64_t at = (uintptr_t)arena_buf(&g, 0);
		write_all(p[1], "0123456789", 10);
		read_one(p[0], 0, 1, -1, &at);
		show_entries(br, 2, &g, 1);
		write_all(p[1], "abcdefghijklmnopqrst", 20);
		read_one(p[0], 0, 1, -1, &at);
		show_entries(br, 2, &g, 1);
		note("34 bytes use the entry up");
		write_all(p[1], "ABCDEFGHIJKLMNOPQRSTUVWXYZ01234567", 34);
		read_one(p[0], 0, 1, -1, &at);
		show_entries(br, 2, &g, 1);
		note("the next entry; then end of file");
		at = (uintptr_t)arena_buf(&g, 1);
		write_all(p[1], "xyz", 3);
		read_one(p[0], 0, 1, -1, &at);
		close(p[1]);
		read_one(p[0], 0, 1, -1, &at);
		show_entries(br, 2, &g, 1);
		close(p[0]);
	}

	note("min_left 16: an entry of 64 left with 14 is done");
	{
		struct arena g = arena_new(64, 2);
		struct io_uring_buf_ring *br = inc_ring(2, 2, 16);
		ring_add(br, 2, &g, 0, 2);
		int p[2];
		if (pipe(p))
			die("pipe: %s", strerror(errno));
		uint64_t at = (uintptr_t)arena_buf(&g, 0);
		write_all(p[1], "0123456789abcdefghijklmnopqrstuvwxyz0123456789ABCD", 50);
		read_one(p[0], 0, 2, -1, &at);
		show_entries(br, 2, &g, 2);
		close(p[0]);
		close(p[1]);
	}

	note("regular file: what the READ mapped is committed");
	{
		struct arena g = arena_new(64, 2);
		struct io_uring_buf_ring *br = inc_ring(3, 2, 0);
		ring_add(br, 2, &g, 0, 2);
		int fd = temp_file("filedata-0123456789");
		uint64_t at = (uintptr_t)arena_buf(&g, 0);
		read_one(fd, 8, 3, 0, &at);
		show_entries(br, 2, &g, 3);
		at = br->bufs[0].addr;
		read_one(fd, 0, 3, 8, &at);
		show_entries(br, 2, &g, 3);
		close(fd);
	}

	note("multishot RECV over TCP, one entry of 64");
	{
		struct arena g = arena_new(64, 1);
		struct io_uring_buf_ring *br = inc_ring(4, 1, 0);
		ring_add(br, 1, &g, 0, 1);
		int a, b;
		tcp_pair(&a, &b);
		struct io_uring_sqe *sqe = prep_recv_sel(&ring, a, 0, 0, 4, 5);
		sqe->ioprio |= IORING_RECV_MULTISHOT;
		submit_expect(&ring, 1);
		expect_pending(&ring, "multishot RECV");
		uint64_t at = (uintptr_t)arena_buf(&g, 0);
		const char *parts[] = { "first-part", "second-part-longer", "third" };
		for (unsigned i = 0; i < 3; i++) {
			send_str(b, parts[i]);
			struct io_uring_cqe c;
			reap(&ring, &c, 1);
			cqe_print(&c);
			if (c.res > 0) {
				note_data("recv ", (const char *)(uintptr_t)at, c.res);
				at += (uint64_t)c.res;
			}
		}
		show_entries(br, 1, &g, 4);
		note("the rest of the entry and more: it is used up, then -ENOBUFS");
		send_str(b, "0123456789012345678901234567890123456789");
		reap_until_last(&ring, &g, NULL);
		show_entries(br, 1, &g, 4);
		close(a);
		close(b);
	}
	note("two RECVs on one entry, data on both sockets: one after the other, in parts");
	{
		struct arena g = arena_new(64, 1);
		struct io_uring_buf_ring *br = inc_ring(5, 1, 0);
		ring_add(br, 1, &g, 0, 1);
		int a1, b1, a2, b2;
		tcp_pair(&a1, &b1);
		tcp_pair(&a2, &b2);
		prep_recv_sel(&ring, a1, 0, 0, 5, 6);
		prep_recv_sel(&ring, a2, 0, 0, 5, 7);
		submit_expect(&ring, 2);
		expect_pending(&ring, "two RECVs");
		send_str(b1, "AAAA");
		send_str(b2, "BBBBBB");
		struct io_uring_cqe c[2];
		reap(&ring, c, 2);
		qsort(c, 2, sizeof(c[0]), cqe_cmp_full);
		for (unsigned i = 0; i < 2; i++)
			cqe_print(&c[i]);
		const char *p = arena_buf(&g, 0);
		/* Which socket's data came first is the scheduler's; that the
		 * two follow each other in the entry is the rule. */
		note("the entry holds both, one after the other: %s",
		     yesno(!memcmp(p, "AAAABBBBBB", 10) || !memcmp(p, "BBBBBBAAAA", 10)));
		show_entries(br, 1, &g, 5);
		close(a1);
		close(b1);
		close(a2);
		close(b2);
	}
	io_uring_queue_exit(&ring);
	return 0;
}
