/*
 * TCP over 127.0.0.1 driven by the ring: ACCEPT pending until a plain
 * connect(2) arrives (its result is the new fd number, compared), SEND/RECV
 * in both directions, a RECV pending until the peer sends, then SHUTDOWN of
 * the peer's write side through the ring and a RECV that returns 0.
 */
#include "test/prog/cqe_print.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

static struct io_uring ring;

static void one(struct io_uring_sqe *sqe, unsigned long long ud)
{
	sqe->user_data = ud;
	submit_expect(&ring, 1);
}

int main(void)
{
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));

	int ls = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = 0 };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t sl = sizeof(sa);
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, 4) < 0 ||
	    getsockname(ls, (struct sockaddr *)&sa, &sl) < 0)
		die("listen socket: %s", strerror(errno));
	note("listen fd %d", ls);

	struct sockaddr_in peer = { 0 };
	socklen_t peerlen = sizeof(peer);
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_accept(sqe, ls, (struct sockaddr *)&peer, &peerlen, 0);
	one(sqe, 1);
	expect_no_cqe(&ring, "accept before connect");

	int cs = socket(AF_INET, SOCK_STREAM, 0);
	if (cs < 0 || connect(cs, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect: %s", strerror(errno));
	note("client fd %d", cs);
	struct io_uring_cqe c;
	reap(&ring, &c, 1);
	cqe_print(&c);
	int as = c.res;
	if (as < 0)
		die("accept: %s", strerror(-as));
	note("peer is loopback: %d, addrlen %u", peer.sin_addr.s_addr == htonl(INADDR_LOOPBACK),
	     (unsigned)peerlen);

	note("client sends, server receives");
	char rbuf[64] = { 0 };
	sqe = get_sqe(&ring);
	io_uring_prep_send(sqe, cs, "hello server", 12, 0);
	sqe->flags |= IOSQE_IO_LINK;
	sqe->user_data = 2;
	sqe = get_sqe(&ring);
	io_uring_prep_recv(sqe, as, rbuf, sizeof(rbuf), 0);
	sqe->user_data = 3;
	submit_expect(&ring, 2);
	reap_print_sorted(&ring, 2);
	note("server got \"%s\"", rbuf);

	note("client recv pending, then server sends");
	memset(rbuf, 0, sizeof(rbuf));
	sqe = get_sqe(&ring);
	io_uring_prep_recv(sqe, cs, rbuf, sizeof(rbuf), 0);
	one(sqe, 4);
	expect_no_cqe(&ring, "recv before send");
	sqe = get_sqe(&ring);
	io_uring_prep_send(sqe, as, "hello client", 12, 0);
	one(sqe, 5);
	reap_print_sorted(&ring, 2);
	note("client got \"%s\"", rbuf);

	note("client shuts down writing, server recv returns 0");
	sqe = get_sqe(&ring);
	io_uring_prep_recv(sqe, as, rbuf, sizeof(rbuf), 0);
	one(sqe, 6);
	sqe = get_sqe(&ring);
	io_uring_prep_shutdown(sqe, cs, SHUT_WR);
	one(sqe, 7);
	reap_print_sorted(&ring, 2);

	note("send on the shut-down side fails");
	sqe = get_sqe(&ring);
	io_uring_prep_send(sqe, cs, "x", 1, MSG_NOSIGNAL);
	one(sqe, 8);
	reap_print(&ring, 1);

	close(as);
	close(cs);
	close(ls);
	io_uring_queue_exit(&ring);
	return 0;
}
