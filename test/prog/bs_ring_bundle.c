/*
 * Bundles (IORING_RECVSEND_BUNDLE) on buffer rings, over TCP on 127.0.0.1:
 * one RECV or SEND over several ring entries in a row, one CQE whose res
 * counts the bytes and whose bid is the first entry's (the program counts
 * the entries from the lengths).  6.18's rules (io_recv_buf_select,
 * io_ring_buffers_peek, io_recv_finish, io_send_finish):
 *  - a RECV without a length maps one entry, and if it filled it and more
 *    is queued, maps again for what is queued (once), stopping before an
 *    entry the rest would not fill;
 *  - a length maps entries up to it; the first entry alone is cut to it,
 *    in the ring (its len rewritten), a later one is left;
 *  - mapping the ring's last entry ends the bundle; an empty ring is
 *    -ENOBUFS;
 *  - a SEND maps every entry (or up to its length) and sends them in one
 *    go; if entries are left it posts with F_MORE and goes on with the
 *    rest, without the length.
 * How many entries a mapping without a length may take depends on the
 * iovec array the kernel's message cache hands the request: the one the
 * last bundle that grew one left (3 entries here, from the second case on),
 * which bufsel follows.  The cases run in one order, one request at a time,
 * on their own rings, so results depend on sizes only.
 */
#include "test/prog/bs_rings.h"

#include <sys/ioctl.h>
#include <sys/socket.h>

#ifndef IORING_RECVSEND_BUNDLE
#define IORING_RECVSEND_BUNDLE (1U << 4)
#endif

static struct io_uring ring;
static uint16_t next_bgid = 1;

static struct io_uring_sqe *recv_bundle(int fd, unsigned len, unsigned bgid, unsigned long long ud)
{
	struct io_uring_sqe *sqe = prep_recv_sel(&ring, fd, len, 0, bgid, ud);
	sqe->ioprio |= IORING_RECVSEND_BUNDLE;
	return sqe;
}

static struct io_uring_sqe *send_bundle(int fd, unsigned len, unsigned bgid, unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_send(sqe, fd, NULL, len, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = (__u16)bgid;
	sqe->ioprio |= IORING_RECVSEND_BUNDLE;
	sqe->user_data = ud;
	return sqe;
}

static int queued(int fd)
{
	int n = 0;
	if (ioctl(fd, FIONREAD, &n))
		die("FIONREAD: %s", strerror(errno));
	return n;
}

/* What is still queued, read off: "" when nothing is. */
static void drain_left(int fd)
{
	char buf[256];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n < 0 && errno != EAGAIN)
		die("recv: %s", strerror(errno));
	note("still queued: \"%.*s\"", n > 0 ? (int)n : 0, buf);
}

/* Every CQE that comes within 200 ms, until one without F_MORE. */
static void reap_quiet(const struct arena *g)
{
	for (;;) {
		struct io_uring_cqe *c;
		struct __kernel_timespec ts = { .tv_nsec = 200 * 1000 * 1000 };
		int ret = io_uring_wait_cqe_timeout(&ring, &c, &ts);
		if (ret == -ETIME)
			return;
		if (ret)
			die("wait_cqe: %s", strerror(-ret));
		struct io_uring_cqe copy = *c;
		io_uring_cqe_seen(&ring, c);
		show(&copy, g);
		if (!(copy.flags & IORING_CQE_F_MORE))
			return;
	}
}

/* A ring of nr entries of len bytes each, bids 0..nr-1 published in order. */
static struct io_uring_buf_ring *bundle_ring(struct arena *a, unsigned len, unsigned nr, unsigned entries,
					     uint16_t *bgid)
{
	*a = arena_new(len, nr);
	*bgid = next_bgid++;
	struct io_uring_buf_ring *br = ring_new(ring.ring_fd, *bgid, entries);
	ring_add(br, entries, a, 0, nr);
	return br;
}

/* One bundle RECV on data already queued: its CQE, what is left queued. */
static void recv_case(int a, int b, const char *data, unsigned len, unsigned bufs, unsigned nr,
		      unsigned entries)
{
	struct arena g;
	uint16_t bgid;
	struct io_uring_buf_ring *br = bundle_ring(&g, bufs, nr, entries, &bgid);
	note("%zu bytes queued, RECV bundle len %u, %u entries of %u", strlen(data), len, nr, bufs);
	send_str(b, data);
	wait_queued(a, (int)strlen(data));
	recv_bundle(a, len, bgid, 1);
	submit_expect(&ring, 1);
	reap_show(&ring, 1, &g);
	note("left queued: %d; entry 0 len %u", queued(a), br->bufs[0].len);
	show_status_on(ring.ring_fd, bgid);
	drain_left(a);
}

/* A SEND bundle of len from b over three entries of 8 holding data (24
 * bytes), every CQE of it, and what a received. */
static void send_case(int a, int b, const char *data, unsigned len, unsigned long long ud)
{
	struct arena g;
	uint16_t bgid;
	bundle_ring(&g, 8, 3, 4, &bgid);
	for (unsigned i = 0; i < 3; i++)
		memcpy(arena_buf(&g, i), data + 8 * i, 8);
	send_bundle(b, len, bgid, ud);
	submit_expect(&ring, 1);
	reap_until_last(&ring, NULL, NULL);
	wait_queued(a, 24);
	drain(a, "what the SEND bundle sent");
	show_status_on(ring.ring_fd, bgid);
}

int main(void)
{
	int ret = io_uring_queue_init(16, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int a, b;
	tcp_pair(&a, &b);

	recv_case(a, b, "0123456789abcdefghij", 0, 8, 8, 8);
	recv_case(a, b, "0123456789abcdefghijklmnopqrstuvwxyzABCD", 30, 8, 8, 8);
	recv_case(a, b, "0123456789abcdefghij", 5, 8, 8, 8);
	recv_case(a, b, "0123456789abcdefghijklmnopqrstuvwxyzABCD", 0, 8, 2, 2);
	recv_case(a, b, "0123456789abcdefghijklmnop", 24, 8, 8, 8);
	recv_case(a, b, "0123", 0, 8, 4, 4);

	note("an empty ring: -ENOBUFS");
	{
		struct arena g;
		uint16_t bgid;
		bundle_ring(&g, 8, 0, 4, &bgid);
		send_str(b, "abc");
		wait_queued(a, 3);
		recv_bundle(a, 0, bgid, 2);
		submit_expect(&ring, 1);
		reap_show(&ring, 1, &g);
		drain(a, "after -ENOBUFS");
	}

	note("armed on an idle socket, 20 bytes arrive: the bundle as if queued");
	{
		struct arena g;
		uint16_t bgid;
		bundle_ring(&g, 8, 8, 8, &bgid);
		recv_bundle(a, 0, bgid, 3);
		submit_expect(&ring, 1);
		expect_pending(&ring, "RECV bundle");
		send_str(b, "0123456789abcdefghij");
		reap_show(&ring, 1, &g);
		show_status_on(ring.ring_fd, bgid);
		drain_left(a);
	}

	note("multishot RECV bundle, armed on an idle socket, a ring of 8 entries of 8");
	{
		struct arena g;
		uint16_t bgid;
		bundle_ring(&g, 8, 8, 8, &bgid);
		struct io_uring_sqe *sqe = recv_bundle(a, 0, bgid, 7);
		sqe->ioprio |= IORING_RECV_MULTISHOT;
		submit_expect(&ring, 1);
		expect_pending(&ring, "multishot RECV bundle");
		note("20 bytes arrive");
		send_str(b, "0123456789abcdefghij");
		reap_quiet(&g);
		note("10 bytes arrive");
		send_str(b, "klmnopqrst");
		reap_quiet(&g);
		note("40 bytes arrive: the bundle that maps the last entries ends the stream");
		send_str(b, "0123456789abcdefghijklmnopqrstuvwxyzABCD");
		reap_quiet(&g);
		show_status_on(ring.ring_fd, bgid);
		drain_left(a);
	}

	note("SEND bundle: every entry in one send");
	send_case(a, b, "AAAAAAAABBBBBBBBCCCCCCCC", 0, 4);
	note("SEND bundle len 12 over 3 entries of 8: one entry, then the rest");
	send_case(a, b, "DDDDDDDDEEEEEEEEFFFFFFFF", 12, 5);
	note("SEND bundle on an empty ring: -ENOBUFS");
	{
		struct arena g;
		uint16_t bgid;
		bundle_ring(&g, 8, 0, 4, &bgid);
		send_bundle(b, 0, bgid, 6);
		submit_expect(&ring, 1);
		reap_until_last(&ring, NULL, NULL);
	}
	close(a);
	close(b);
	io_uring_queue_exit(&ring);
	return 0;
}
