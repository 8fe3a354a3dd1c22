/*
 * Multishot RECV and RECVMSG on buffer rings, over TCP on 127.0.0.1: one
 * request posts a CQE per ring entry it fills (F_BUFFER | F_MORE, the bid in
 * ring order, sqe->len capping each), and the stream ends without F_MORE:
 *  - -ENOBUFS once data comes and the ring is empty, at once if the data
 *    was already queued; the entries the program adds back are used again;
 *  - EOF: res 0 without a buffer;
 *  - -ECANCELED from ASYNC_CANCEL, the ring's remaining entries untouched
 *    (IORING_REGISTER_PBUF_STATUS shows the head);
 * and RECVMSG multishot lays out struct io_uring_recvmsg_out before the
 * payload in each ring buffer.  Data is sent only while the request is armed
 * and idle, or queued in full before it is armed, so the split into CQEs
 * depends on sizes, not timing.
 */
#include "test/prog/bs_rings.h"

#include <sys/socket.h>

static struct io_uring ring;

static struct io_uring_sqe *recv_multi(int fd, unsigned len, unsigned bgid, unsigned long long ud)
{
	struct io_uring_sqe *sqe = prep_recv_sel(&ring, fd, len, 0, bgid, ud);
	sqe->ioprio |= IORING_RECV_MULTISHOT;
	return sqe;
}

int main(void)
{
	int ret = io_uring_queue_init(16, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int a, b;
	tcp_pair(&a, &b);
	struct io_uring_cqe c[4];

	note("armed on an idle socket, 20 bytes arrive, a ring of 4 buffers of 8");
	struct arena g1 = arena_new(8, 4);
	struct io_uring_buf_ring *r1 = ring_new(ring.ring_fd, 1, 4);
	ring_add(r1, 4, &g1, 0, 4);
	recv_multi(a, 0, 1, 2);
	submit_expect(&ring, 1);
	expect_pending(&ring, "multishot RECV");
	send_str(b, "0123456789abcdefghij");
	reap_show(&ring, 3, &g1);
	expect_pending(&ring, "multishot RECV after 3 CQEs");
	note("2 more bytes take the last entry; the program gives two back");
	send_str(b, "XY");
	reap_show(&ring, 1, &g1);
	ring_add(r1, 4, &g1, 0, 2);
	send_str(b, "0123456789");
	reap_show(&ring, 2, &g1);
	expect_pending(&ring, "multishot RECV with the ring empty");
	note("data arrives with the ring empty: the stream ends with -ENOBUFS");
	send_str(b, "more");
	reap_until_last(&ring, &g1, NULL);
	drain(a, "after -ENOBUFS");
	show_status_on(ring.ring_fd, 1);

	note("a ring of 2, 20 bytes already queued: ends at once with -ENOBUFS");
	struct arena g2 = arena_new(8, 2);
	struct io_uring_buf_ring *r2 = ring_new(ring.ring_fd, 2, 2);
	ring_add(r2, 2, &g2, 0, 2);
	send_str(b, "0123456789abcdefghij");
	wait_queued(a, 20);
	recv_multi(a, 0, 2, 11);
	submit_expect(&ring, 1);
	reap_until_last(&ring, &g2, NULL);
	drain(a, "after -ENOBUFS");

	note("sqe->len 5 caps each CQE; then a cancel");
	struct arena g3 = arena_new(8, 8);
	struct io_uring_buf_ring *r3 = ring_new(ring.ring_fd, 3, 8);
	ring_add(r3, 8, &g3, 0, 8);
	recv_multi(a, 5, 3, 21);
	submit_expect(&ring, 1);
	expect_pending(&ring, "multishot RECV, len 5");
	send_str(b, "abcdefghijkl");
	reap_show(&ring, 3, &g3);
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_cancel64(sqe, 21, 0);
	sqe->user_data = 22;
	submit_expect(&ring, 1);
	reap(&ring, c, 2);
	cqe_print_sorted(c, 2);
	show_status_on(ring.ring_fd, 3);

	note("RECVMSG multishot, buffers of 32: the header, then the payload");
	struct arena g5 = arena_new(32, 8);
	struct io_uring_buf_ring *r5 = ring_new(ring.ring_fd, 5, 8);
	ring_add(r5, 8, &g5, 0, 8);
	struct msghdr mh = { 0 };
	sqe = get_sqe(&ring);
	io_uring_prep_recvmsg_multishot(sqe, a, &mh, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 5;
	sqe->user_data = 41;
	submit_expect(&ring, 1);
	expect_pending(&ring, "multishot RECVMSG");
	send_str(b, "the-payload-of-twenty-eight!");
	for (int i = 0; i < 2; i++) {
		reap(&ring, c, 1);
		cqe_print(&c[0]);
		struct io_uring_recvmsg_out *o = io_uring_recvmsg_validate(arena_buf(&g5, cqe_bid(&c[0])),
									   c[0].res, &mh);
		if (!o)
			die("recvmsg_out does not fit in res %d", c[0].res);
		note("bid=%u payloadlen=%u", cqe_bid(&c[0]), o->payloadlen);
		note_data("payload ", io_uring_recvmsg_payload(o, &mh),
			  (int)io_uring_recvmsg_payload_length(o, c[0].res, &mh));
	}
	expect_pending(&ring, "multishot RECVMSG after 2 CQEs");
	note("EOF ends it");
	if (shutdown(b, SHUT_WR) < 0)
		die("shutdown: %s", strerror(errno));
	reap_until_last(&ring, &g5, &mh);
	show_status_on(ring.ring_fd, 5);

	note("multishot RECV after EOF");
	recv_multi(a, 0, 3, 50);
	submit_expect(&ring, 1);
	reap_until_last(&ring, &g3, NULL);
	show_status_on(ring.ring_fd, 3);
	io_uring_queue_exit(&ring);
	return 0;
}
