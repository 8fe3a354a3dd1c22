/*
 * Multishot receive (IORING_RECV_MULTISHOT in sqe->ioprio) on legacy provided
 * buffers, over TCP on 127.0.0.1: one request posts a stream of CQEs, each
 * F_BUFFER | F_MORE with its own bid (plus F_SOCK_NONEMPTY while more is
 * queued), sqe->len capping each; the stream ends with a CQE without F_MORE:
 *  - -ENOBUFS when the group runs dry with data still queued (at once), or,
 *    if the socket was empty when the last buffer went, when data arrives;
 *  - EOF: res 0 without a buffer for RECV (F_SOCK_NONEMPTY set on TCP), but
 *    for RECVMSG a CQE with a buffer holding only the recvmsg_out header;
 *  - -ECANCELED from ASYNC_CANCEL.
 * MSG_DONTWAIT on an idle socket ends it at once with -EAGAIN. MSG_WAITALL
 * and a missing IOSQE_BUFFER_SELECT are -EINVAL. RECVMSG
 * multishot puts struct io_uring_recvmsg_out before the name and payload in
 * every buffer, and res counts all of it; its fields are printed, over TCP
 * and over AF_UNIX datagrams from a sender bound to an abstract name (the
 * name, and MSG_TRUNC with payloadlen the bytes that fitted).
 * Data is sent only while the request is armed and idle, or queued in full
 * before it is armed, so the split into CQEs depends on sizes, not timing.
 */
#include "test/prog/bs_bufs.h"

#include <stddef.h>
#include <sys/un.h>

static struct io_uring ring;

static struct io_uring_sqe *recv_multi(int fd, unsigned len, int msg_flags, unsigned bgid,
				       unsigned long long ud)
{
	struct io_uring_sqe *sqe = prep_recv_sel(&ring, fd, len, msg_flags, bgid, ud);
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

	note("armed on an idle socket, 20 bytes arrive, buffers of 8");
	struct arena g1 = arena_new(8, 4);
	provide(&ring, &g1, 1, 0, 4, 1);
	recv_multi(a, 0, 0, 1, 2);
	submit_expect(&ring, 1);
	expect_pending(&ring, "multishot RECV");
	send_str(b, "0123456789abcdefghij");
	reap_show(&ring, 3, &g1);
	expect_pending(&ring, "multishot RECV after 3 CQEs");
	note("2 more bytes take the last buffer, the socket is empty again");
	send_str(b, "XY");
	reap_show(&ring, 1, &g1);
	expect_pending(&ring, "multishot RECV with the group empty");
	note("data arrives with the group empty: the stream ends with -ENOBUFS");
	send_str(b, "more");
	reap_until_last(&ring, &g1, NULL);
	drain(a, "after -ENOBUFS");

	note("group of 2, 20 bytes already queued: ends at once with -ENOBUFS");
	struct arena g2 = arena_new(8, 2);
	provide(&ring, &g2, 2, 0, 2, 10);
	send_str(b, "0123456789abcdefghij");
	wait_queued(a, 20);
	recv_multi(a, 0, 0, 2, 11);
	submit_expect(&ring, 1);
	reap_until_last(&ring, &g2, NULL);
	drain(a, "after -ENOBUFS");

	note("sqe->len 5 caps each CQE, buffers of 8");
	struct arena g3 = arena_new(8, 8);
	provide(&ring, &g3, 3, 0, 8, 20);
	recv_multi(a, 5, 0, 3, 21);
	submit_expect(&ring, 1);
	expect_pending(&ring, "multishot RECV, len 5");
	send_str(b, "abcdefghijkl");
	reap_show(&ring, 3, &g3);
	note("cancel: the last CQE is -ECANCELED without F_MORE");
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_cancel64(sqe, 21, 0);
	sqe->user_data = 22;
	submit_expect(&ring, 1);
	reap(&ring, c, 2);
	cqe_print_sorted(c, 2);
	note("the remaining buffers are untouched");
	remove_bufs(&ring, 3, 65536, 23);

	note("MSG_DONTWAIT on an idle socket: one CQE, -EAGAIN, no F_MORE");
	struct arena g9 = arena_new(8, 2);
	provide(&ring, &g9, 9, 0, 2, 25);
	run_one(&ring, recv_multi(a, 0, MSG_DONTWAIT, 9, 0), 26, &g9);
	remove_bufs(&ring, 9, 65536, 27);

	note("MSG_WAITALL");
	struct arena g4 = arena_new(8, 8);
	provide(&ring, &g4, 4, 0, 8, 30);
	run_one(&ring, recv_multi(a, 0, MSG_WAITALL, 4, 0), 31, &g4);
	note("without IOSQE_BUFFER_SELECT");
	char plain[8];
	sqe = get_sqe(&ring);
	io_uring_prep_recv_multishot(sqe, a, plain, sizeof(plain), 0);
	run_one(&ring, sqe, 32, NULL);

	note("RECVMSG multishot over TCP, buffers of 32: 16-byte header, then payload");
	struct arena g5 = arena_new(32, 8);
	provide(&ring, &g5, 5, 0, 8, 40);
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
		note("bid=%u recvmsg_out namelen=%u controllen=%u payloadlen=%u flags=0x%x", cqe_bid(&c[0]),
		     o->namelen, o->controllen, o->payloadlen, o->flags);
		note_data("payload ", io_uring_recvmsg_payload(o, &mh),
			  (int)io_uring_recvmsg_payload_length(o, c[0].res, &mh));
	}
	expect_pending(&ring, "multishot RECVMSG after 2 CQEs");

	note("EOF ends RECVMSG multishot");
	if (shutdown(b, SHUT_WR) < 0)
		die("shutdown: %s", strerror(errno));
	reap_until_last(&ring, &g5, &mh);

	note("RECV multishot armed after data and FIN are both queued");
	int a2, b2;
	tcp_pair(&a2, &b2);
	send_str(b2, "bye");
	if (shutdown(b2, SHUT_WR) < 0)
		die("shutdown: %s", strerror(errno));
	wait_poll(a2, POLLRDHUP);
	struct arena g6 = arena_new(8, 4);
	provide(&ring, &g6, 6, 0, 4, 50);
	recv_multi(a2, 0, 0, 6, 51);
	submit_expect(&ring, 1);
	reap_until_last(&ring, &g6, NULL);
	note("the buffers EOF did not use are still in the group");
	remove_bufs(&ring, 6, 65536, 52);

	note("RECVMSG multishot on AF_UNIX datagrams: name and truncation");
	struct sockaddr_un ra = { .sun_family = AF_UNIX }, sa = { .sun_family = AF_UNIX };
	int rn = snprintf(ra.sun_path + 1, sizeof(ra.sun_path) - 1, "bufsel-bs_multishot-r-%010d",
			  (int)getpid());
	int sn = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "bufsel-bs_multishot-s-%010d",
			  (int)getpid());
	socklen_t rlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)rn);
	socklen_t slen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)sn);
	int r = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (r < 0 || s < 0 || bind(r, (struct sockaddr *)&ra, rlen) < 0 ||
	    bind(s, (struct sockaddr *)&sa, slen) < 0)
		die("unix dgram sockets: %s", strerror(errno));
	struct arena g7 = arena_new(160, 3);
	provide(&ring, &g7, 7, 0, 3, 60);
	struct msghdr dmh = { .msg_namelen = sizeof(struct sockaddr_un) };
	sqe = get_sqe(&ring);
	io_uring_prep_recvmsg_multishot(sqe, r, &dmh, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 7;
	sqe->user_data = 61;
	submit_expect(&ring, 1);
	expect_pending(&ring, "multishot RECVMSG on a datagram socket");
	static const char *const dgrams[] = { "short", "a-datagram-longer-than-the-room-left-after-the-name" };
	for (int i = 0; i < 2; i++) {
		if (sendto(s, dgrams[i], strlen(dgrams[i]), 0, (struct sockaddr *)&ra, rlen) < 0)
			die("sendto: %s", strerror(errno));
		reap(&ring, c, 1);
		cqe_print(&c[0]);
		char *buf = arena_buf(&g7, cqe_bid(&c[0]));
		struct io_uring_recvmsg_out *o = io_uring_recvmsg_validate(buf, c[0].res, &dmh);
		if (!o)
			die("recvmsg_out does not fit in res %d", c[0].res);
		note("bid=%u recvmsg_out namelen=%u controllen=%u payloadlen=%u flags=0x%x", cqe_bid(&c[0]),
		     o->namelen, o->controllen, o->payloadlen, o->flags);
		note("name is the sender's: %s",
		     yesno(o->namelen == slen && !memcmp(io_uring_recvmsg_name(o), &sa, slen)));
		note_data("payload ", io_uring_recvmsg_payload(o, &dmh),
			  (int)io_uring_recvmsg_payload_length(o, c[0].res, &dmh));
	}
	note("cancel it");
	sqe = get_sqe(&ring);
	io_uring_prep_cancel64(sqe, 61, 0);
	sqe->user_data = 62;
	submit_expect(&ring, 1);
	reap(&ring, c, 2);
	cqe_print_sorted(c, 2);

	close(r);
	close(s);
	close(a);
	close(b);
	close(a2);
	close(b2);
	io_uring_queue_exit(&ring);
	return 0;
}
