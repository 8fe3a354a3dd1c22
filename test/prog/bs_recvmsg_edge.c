/*
 * Multishot RECVMSG on legacy provided buffers, at its edges:
 *  - a UDP datagram larger than the buffer, received with MSG_TRUNC: the
 *    header's payloadlen says the datagram's length, the result counts only
 *    what fitted (header + name + payload room), never past the buffer;
 *  - msg_namelen + msg_controllen + the header wrapping, or a negative
 *    namelen: -EOVERFLOW at prep, no buffer taken.
 */
#include "test/prog/bs_bufs.h"

#include <limits.h>

static struct io_uring ring;

static struct io_uring_sqe *recvmsg_multi(int fd, struct msghdr *mh, int flags, unsigned bgid,
					  unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_recvmsg_multishot(sqe, fd, mh, (unsigned)flags);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = (__u16)bgid;
	sqe->user_data = ud;
	return sqe;
}

static void udp_pair(int *rx, int *tx)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(addr);
	*rx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	*tx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (*rx < 0 || *tx < 0 || bind(*rx, (struct sockaddr *)&addr, sizeof(addr)) ||
	    getsockname(*rx, (struct sockaddr *)&addr, &len) ||
	    connect(*tx, (struct sockaddr *)&addr, sizeof(addr)))
		die("udp: %s", strerror(errno));
}

int main(void)
{
	int ret = io_uring_queue_init(16, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int rx, tx;
	udp_pair(&rx, &tx);

	note("36-byte buffers, 16-byte header, no name: a 40-byte datagram with MSG_TRUNC");
	struct arena g = arena_new(36, 4);
	provide(&ring, &g, 1, 0, 4, 1);
	char big[40];
	for (unsigned i = 0; i < sizeof(big); i++)
		big[i] = (char)('a' + i % 26);
	if (send(tx, big, sizeof(big), 0) != (ssize_t)sizeof(big))
		die("send: %s", strerror(errno));
	struct msghdr mh = { 0 };
	recvmsg_multi(rx, &mh, MSG_TRUNC, 1, 2);
	submit_expect(&ring, 1);
	struct io_uring_cqe c;
	reap(&ring, &c, 1);
	cqe_print(&c);
	if (c.flags & IORING_CQE_F_BUFFER) {
		struct io_uring_recvmsg_out *o = (void *)arena_buf(&g, cqe_bid(&c));
		note("payloadlen=%u flags_trunc=%d namelen=%u controllen=%u", o->payloadlen,
		     !!(o->flags & MSG_TRUNC), o->namelen, o->controllen);
		note_data("payload", (char *)(o + 1), c.res - (int)sizeof(*o));
	}
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_cancel64(sqe, 2, 0);
	sqe->user_data = 3;
	submit_expect(&ring, 1);
	reap_print_sorted(&ring, 2);

	note("namelen + controllen + header wrap: -EOVERFLOW, no buffer taken");
	struct msghdr wrap = { .msg_namelen = 64, .msg_controllen = (size_t)-32 };
	recvmsg_multi(rx, &wrap, 0, 1, 10);
	submit_expect(&ring, 1);
	reap_print(&ring, 1);
	note("the sum past INT_MAX: -EOVERFLOW");
	struct msghdr huge = { .msg_namelen = 16, .msg_controllen = INT_MAX };
	recvmsg_multi(rx, &huge, 0, 1, 11);
	submit_expect(&ring, 1);
	reap_print(&ring, 1);
	note("a negative namelen: -EOVERFLOW");
	struct msghdr neg = { .msg_namelen = (socklen_t)-8 };
	recvmsg_multi(rx, &neg, 0, 1, 12);
	submit_expect(&ring, 1);
	reap_print(&ring, 1);
	note("the group still holds its 3 buffers");
	remove_bufs(&ring, 1, 8, 13);
	io_uring_queue_exit(&ring);
	return 0;
}
