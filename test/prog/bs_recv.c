/*
 * RECV and RECVMSG with IOSQE_BUFFER_SELECT, on a TCP pair over 127.0.0.1 and
 * on an AF_UNIX stream socketpair (the same steps on each). A receive binds
 * its buffer only when data is there:
 *  - pending, it holds no buffer: a READ with buffer select on a pipe takes
 *    the group's only buffer while the receive waits, and the receive still
 *    completes with that buffer once it is provided again; a group emptied by
 *    REMOVE while the receive waits gives -ENOBUFS when data arrives;
 *  - an empty or nonexistent group gives -ENOBUFS at once, with no data;
 *  - data: F_BUFFER | bid, F_SOCK_NONEMPTY while more is queued; the length
 *    is min(sqe->len, buffer), 0 meaning the whole buffer;
 *  - EOF, errors (-ECONNRESET, -EFAULT, -ENOTSOCK) and cancel: no F_BUFFER,
 *    the buffer back at the head of the group (shown by the bid the next
 *    selection gets); a buffer provided at address NULL is not selectable
 *    (-ENOBUFS) and stays in the group;
 *  - IORING_RECVSEND_POLL_FIRST: no attempt and no selection until readable;
 *    MSG_DONTWAIT on an idle socket: -EAGAIN, nothing taken; O_NONBLOCK on
 *    the socket changes nothing (the receive waits);
 *  - MSG_PEEK takes a buffer and leaves the bytes queued; MSG_WAITALL fills
 *    one buffer across two sends;
 *  - RECVMSG: msg_iovlen 0 (whole buffer), 1 (iov_len is the length), 2
 *    (-EINVAL), and msg_flags, msg_namelen, msg_controllen as written back,
 *    with a name and SCM_RIGHTS control on AF_UNIX datagrams between two
 *    sockets bound to abstract names.
 * Loopback delivery is waited for (FIONREAD, poll) before a receive that must
 * see all of it. Requests that complete together (a cancel and its target)
 * are printed by user_data.
 */
#include "test/prog/bs_bufs.h"

#include <stddef.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/un.h>

static struct io_uring ring;
static int pip[2]; /* a pipe for READ-with-select probes of a group */
static void *unmapped;

static struct io_uring_sqe *recvmsg_sel(int fd, struct msghdr *msg, unsigned bgid,
					unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_recvmsg(sqe, fd, msg, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = (__u16)bgid;
	sqe->user_data = ud;
	return sqe;
}

static void print_msghdr(const struct msghdr *m)
{
	note("msg_flags=0x%x msg_namelen=%u msg_controllen=%zu", (unsigned)m->msg_flags,
	     (unsigned)m->msg_namelen, (size_t)m->msg_controllen);
}

/*
 * Every step on one connected stream pair; a is read, b writes. bgid..bgid+9
 * are this pair's groups. Ends with EOF on a.
 */
static void stream_cases(const char *kind, int a, int b, unsigned bgid, unsigned long long ud)
{
	struct io_uring_sqe *sqe;
	note("== %s", kind);

	note("pending RECV holds no buffer: a READ takes the group's only one meanwhile");
	struct arena g0 = arena_new(64, 1);
	provide(&ring, &g0, bgid, 0, 1, ud + 1);
	prep_recv_sel(&ring, a, 0, 0, bgid, ud + 2);
	submit_expect(&ring, 1);
	expect_pending(&ring, "RECV on an idle socket");
	write_all(pip[1], "pipe", 4);
	run_one(&ring, prep_read_sel(&ring, pip[0], 0, bgid, 0, 0), ud + 3, &g0);
	provide(&ring, &g0, bgid, 0, 1, ud + 4);
	send_str(b, "hello");
	reap_show(&ring, 1, &g0);

	note("group emptied while the RECV waits: -ENOBUFS when data arrives");
	provide(&ring, &g0, bgid, 0, 1, ud + 5);
	prep_recv_sel(&ring, a, 0, 0, bgid, ud + 6);
	submit_expect(&ring, 1);
	expect_pending(&ring, "RECV on an idle socket");
	remove_bufs(&ring, bgid, 1, ud + 7);
	send_str(b, "late");
	reap_show(&ring, 1, &g0);
	drain(a, "after -ENOBUFS");

	note("MSG_DONTWAIT on an idle socket: -EAGAIN, the buffer back in the group");
	provide(&ring, &g0, bgid, 0, 1, ud + 90);
	run_one(&ring, prep_recv_sel(&ring, a, 0, MSG_DONTWAIT, bgid, 0), ud + 91, &g0);
	remove_bufs(&ring, bgid, 1, ud + 92);

	note("empty group, no data: -ENOBUFS at once");
	run_one(&ring, prep_recv_sel(&ring, a, 0, 0, bgid, 0), ud + 8, &g0);
	note("group never created: -ENOBUFS at once");
	run_one(&ring, prep_recv_sel(&ring, a, 0, 0, bgid + 9, 0), ud + 9, &g0);

	note("20 bytes queued, buffers of 8: F_SOCK_NONEMPTY while more is queued");
	struct arena g1 = arena_new(8, 16);
	provide(&ring, &g1, bgid + 1, 0, 16, ud + 10);
	send_str(b, "0123456789abcdefghij");
	wait_queued(a, 20);
	run_one(&ring, prep_recv_sel(&ring, a, 0, 0, bgid + 1, 0), ud + 11, &g1);
	run_one(&ring, prep_recv_sel(&ring, a, 0, 0, bgid + 1, 0), ud + 12, &g1);
	run_one(&ring, prep_recv_sel(&ring, a, 0, 0, bgid + 1, 0), ud + 13, &g1);
	note("len 3, then len 100, then sqe->addr set (ignored)");
	send_str(b, "ABCDEFGHIJKLMNOP");
	wait_queued(a, 16);
	run_one(&ring, prep_recv_sel(&ring, a, 3, 0, bgid + 1, 0), ud + 14, &g1);
	run_one(&ring, prep_recv_sel(&ring, a, 100, 0, bgid + 1, 0), ud + 15, &g1);
	sqe = prep_recv_sel(&ring, a, 0, 0, bgid + 1, 0);
	sqe->addr = 0x10;
	run_one(&ring, sqe, ud + 16, &g1);

	note("MSG_PEEK, then a plain RECV of the same bytes");
	send_str(b, "peekaboo");
	wait_queued(a, 8);
	run_one(&ring, prep_recv_sel(&ring, a, 0, MSG_PEEK, bgid + 1, 0), ud + 17, &g1);
	run_one(&ring, prep_recv_sel(&ring, a, 0, 0, bgid + 1, 0), ud + 18, &g1);

	note("MSG_WAITALL, buffer of 16: 6 bytes, then 10 more");
	struct arena g2 = arena_new(16, 4);
	provide(&ring, &g2, bgid + 2, 0, 4, ud + 20);
	send_str(b, "waital");
	wait_queued(a, 6);
	prep_recv_sel(&ring, a, 0, MSG_WAITALL, bgid + 2, ud + 21);
	submit_expect(&ring, 1);
	expect_pending(&ring, "MSG_WAITALL RECV with 6 of 16 bytes");
	send_str(b, "l-the-rest");
	reap_show(&ring, 1, &g2);
	note("MSG_WAITALL, len 8: 4 bytes, then 4 more");
	send_str(b, "1234");
	wait_queued(a, 4);
	prep_recv_sel(&ring, a, 8, MSG_WAITALL, bgid + 2, ud + 22);
	submit_expect(&ring, 1);
	expect_pending(&ring, "MSG_WAITALL RECV with 4 of 8 bytes");
	send_str(b, "5678");
	reap_show(&ring, 1, &g2);

	note("IORING_RECVSEND_POLL_FIRST on an empty group: no selection while idle");
	struct arena g3 = arena_new(16, 4);
	provide(&ring, &g3, bgid + 3, 0, 1, ud + 30);
	remove_bufs(&ring, bgid + 3, 1, ud + 31);
	sqe = prep_recv_sel(&ring, a, 0, 0, bgid + 3, ud + 32);
	sqe->ioprio |= IORING_RECVSEND_POLL_FIRST;
	submit_expect(&ring, 1);
	expect_pending(&ring, "POLL_FIRST RECV on an empty group");
	provide(&ring, &g3, bgid + 3, 1, 1, ud + 33);
	send_str(b, "first");
	reap_show(&ring, 1, &g3);
	note("POLL_FIRST, group empty when data arrives");
	sqe = prep_recv_sel(&ring, a, 0, 0, bgid + 3, ud + 34);
	sqe->ioprio |= IORING_RECVSEND_POLL_FIRST;
	submit_expect(&ring, 1);
	expect_pending(&ring, "POLL_FIRST RECV on an empty group");
	send_str(b, "nobuf");
	reap_show(&ring, 1, &g3);
	drain(a, "after -ENOBUFS");
	note("POLL_FIRST with data already queued");
	provide(&ring, &g3, bgid + 3, 2, 2, ud + 35);
	send_str(b, "ready");
	wait_queued(a, 5);
	sqe = prep_recv_sel(&ring, a, 0, 0, bgid + 3, 0);
	sqe->ioprio |= IORING_RECVSEND_POLL_FIRST;
	run_one(&ring, sqe, ud + 36, &g3);

	note("cancel a pending RECV: no F_BUFFER, nothing taken");
	struct arena g4 = arena_new(16, 4);
	provide(&ring, &g4, bgid + 4, 0, 2, ud + 40);
	prep_recv_sel(&ring, a, 0, 0, bgid + 4, ud + 41);
	submit_expect(&ring, 1);
	expect_pending(&ring, "RECV to cancel");
	sqe = get_sqe(&ring);
	io_uring_prep_cancel64(sqe, ud + 41, 0);
	sqe->user_data = ud + 42;
	submit_expect(&ring, 1);
	reap_show_sorted(&ring, 2, &g4);
	next_bid(&ring, bgid + 4, ud + 43, &g4);

	note("-EFAULT into an unmapped buffer: no F_BUFFER, the buffer back at the head");
	struct arena g5 = arena_new(16, 4);
	sqe = get_sqe(&ring);
	io_uring_prep_provide_buffers(sqe, unmapped, 16, 1, (int)bgid + 5, 0);
	run_one(&ring, sqe, ud + 50, NULL);
	provide(&ring, &g5, bgid + 5, 1, 2, ud + 51);
	send_str(b, "efault");
	wait_queued(a, 6);
	run_one(&ring, prep_recv_sel(&ring, a, 0, 0, bgid + 5, 0), ud + 52, &g5);
	run_one(&ring, prep_recv_sel(&ring, a, 0, 0, bgid + 5, 0), ud + 53, &g5);
	note("remove the head (the unmapped one), then the bytes arrive");
	remove_bufs(&ring, bgid + 5, 1, ud + 54);
	run_one(&ring, prep_recv_sel(&ring, a, 0, 0, bgid + 5, 0), ud + 55, &g5);
	note("a buffer at address NULL: -ENOBUFS, and it stays in the group");
	remove_bufs(&ring, bgid + 5, 65536, ud + 56);
	sqe = get_sqe(&ring);
	io_uring_prep_provide_buffers(sqe, NULL, 16, 1, (int)bgid + 5, 3);
	run_one(&ring, sqe, ud + 57, NULL);
	send_str(b, "queued");
	wait_queued(a, 6);
	run_one(&ring, prep_recv_sel(&ring, a, 0, 0, bgid + 5, 0), ud + 58, &g5);
	remove_bufs(&ring, bgid + 5, 65536, ud + 59);
	provide(&ring, &g5, bgid + 5, 2, 1, ud + 80);
	run_one(&ring, prep_recv_sel(&ring, a, 0, 0, bgid + 5, 0), ud + 81, &g5);

	note("RECVMSG, msg_iovlen 1: iov_len 5 is the length; name buffer given");
	struct arena g6 = arena_new(16, 8);
	provide(&ring, &g6, bgid + 6, 0, 8, ud + 60);
	send_str(b, "recvmsg-data");
	wait_queued(a, 12);
	struct sockaddr_storage name;
	struct iovec iov[2] = { { NULL, 5 }, { NULL, 5 } };
	struct msghdr m = { .msg_name = &name, .msg_namelen = sizeof(name), .msg_iov = iov, .msg_iovlen = 1 };
	run_one(&ring, recvmsg_sel(a, &m, bgid + 6, 0), ud + 61, &g6);
	print_msghdr(&m);
	note("RECVMSG, msg_iovlen 0: the whole buffer");
	m = (struct msghdr){ .msg_iov = iov, .msg_iovlen = 0 };
	run_one(&ring, recvmsg_sel(a, &m, bgid + 6, 0), ud + 62, &g6);
	print_msghdr(&m);
	note("RECVMSG, msg_iovlen 2");
	m = (struct msghdr){ .msg_iov = iov, .msg_iovlen = 2 };
	run_one(&ring, recvmsg_sel(a, &m, bgid + 6, 0), ud + 63, &g6);
	note("RECVMSG with MSG_DONTWAIT on an idle socket: -EAGAIN, nothing taken");
	m = (struct msghdr){ .msg_iov = iov, .msg_iovlen = 1 };
	iov[0].iov_len = 0;
	sqe = recvmsg_sel(a, &m, bgid + 6, 0);
	sqe->msg_flags = MSG_DONTWAIT;
	run_one(&ring, sqe, ud + 68, &g6);
	note("O_NONBLOCK on the socket: the RECV waits all the same");
	if (fcntl(a, F_SETFL, O_NONBLOCK) < 0)
		die("fcntl: %s", strerror(errno));
	prep_recv_sel(&ring, a, 0, 0, bgid + 6, ud + 69);
	submit_expect(&ring, 1);
	expect_pending(&ring, "RECV on an idle O_NONBLOCK socket");
	send_str(b, "nonblock");
	reap_show(&ring, 1, &g6);
	if (fcntl(a, F_SETFL, 0) < 0)
		die("fcntl: %s", strerror(errno));

	note("RECVMSG pending holds no buffer either");
	struct arena g7 = arena_new(16, 1);
	provide(&ring, &g7, bgid + 7, 0, 1, ud + 64);
	m = (struct msghdr){ .msg_iov = iov, .msg_iovlen = 1 };
	iov[0].iov_len = 0;
	recvmsg_sel(a, &m, bgid + 7, ud + 65);
	submit_expect(&ring, 1);
	expect_pending(&ring, "RECVMSG on an idle socket");
	write_all(pip[1], "pipe", 4);
	run_one(&ring, prep_read_sel(&ring, pip[0], 0, bgid + 7, 0, 0), ud + 66, &g7);
	provide(&ring, &g7, bgid + 7, 0, 1, ud + 67);
	send_str(b, "rm-late");
	reap_show(&ring, 1, &g7);
	print_msghdr(&m);

	note("EOF on a pending RECV: no F_BUFFER");
	struct arena g8 = arena_new(16, 4);
	provide(&ring, &g8, bgid + 8, 0, 3, ud + 70);
	prep_recv_sel(&ring, a, 0, 0, bgid + 8, ud + 71);
	submit_expect(&ring, 1);
	expect_pending(&ring, "RECV before shutdown");
	if (shutdown(b, SHUT_WR) < 0)
		die("shutdown: %s", strerror(errno));
	reap_show(&ring, 1, &g8);
	note("RECV and RECVMSG at EOF");
	run_one(&ring, prep_recv_sel(&ring, a, 0, 0, bgid + 8, 0), ud + 72, &g8);
	m = (struct msghdr){ .msg_iov = iov, .msg_iovlen = 1 };
	run_one(&ring, recvmsg_sel(a, &m, bgid + 8, 0), ud + 73, &g8);
	print_msghdr(&m);
	note("the buffer is back at the head");
	next_bid(&ring, bgid + 8, ud + 74, &g8);
	next_bid(&ring, bgid + 8, ud + 75, &g8);
}

/* SO_LINGER 0 makes close() send a reset. */
static void reset(int fd)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };
	if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)) < 0 || close(fd) < 0)
		die("reset: %s", strerror(errno));
}

static void tcp_reset_cases(void)
{
	note("== tcp reset");
	int a, b;
	struct arena g = arena_new(16, 4);
	provide(&ring, &g, 40, 0, 4, 400);
	note("RECV pending when the peer resets");
	tcp_pair(&a, &b);
	prep_recv_sel(&ring, a, 0, 0, 40, 401);
	submit_expect(&ring, 1);
	expect_pending(&ring, "RECV before the reset");
	reset(b);
	reap_show(&ring, 1, &g);
	next_bid(&ring, 40, 402, &g);
	close(a);
	note("RECV after the reset arrived");
	tcp_pair(&a, &b);
	reset(b);
	wait_poll(a, POLLERR | POLLHUP);
	run_one(&ring, prep_recv_sel(&ring, a, 0, 0, 40, 0), 403, &g);
	next_bid(&ring, 40, 404, &g);
	close(a);
}

static void unix_name(struct sockaddr_un *sa, socklen_t *len, const char *role)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	/* Abstract, with the pid at a fixed width: unique per run, same length every run. */
	int n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "bufsel-bs_recv-%s-%010d", role,
			 (int)getpid());
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static void dgram_cases(void)
{
	note("== unix datagrams: RECVMSG with name and control");
	struct sockaddr_un ra, sa;
	socklen_t rlen, slen;
	unix_name(&ra, &rlen, "r");
	unix_name(&sa, &slen, "s");
	int r = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (r < 0 || s < 0 || bind(r, (struct sockaddr *)&ra, rlen) < 0 ||
	    bind(s, (struct sockaddr *)&sa, slen) < 0)
		die("unix dgram sockets: %s", strerror(errno));
	note("sender name length %u", (unsigned)slen);
	struct arena g = arena_new(16, 8);
	provide(&ring, &g, 50, 0, 8, 500);

	/* Each datagram carries one descriptor: the read end of a fresh pipe. */
	for (int step = 0; step < 3; step++) {
		int fds[2];
		if (pipe(fds) < 0)
			die("pipe: %s", strerror(errno));
		static const char *const payload[] = { "with-fd", "a-datagram-longer-than-16-bytes",
						       "small-control" };
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(int))];
		} ctl;
		memset(&ctl, 0, sizeof(ctl));
		struct iovec siov = { (void *)payload[step], strlen(payload[step]) };
		struct msghdr sm = { .msg_name = &ra, .msg_namelen = rlen, .msg_iov = &siov, .msg_iovlen = 1,
				     .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b) };
		struct cmsghdr *c = CMSG_FIRSTHDR(&sm);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fds[0], sizeof(int));
		if (sendmsg(s, &sm, 0) < 0)
			die("sendmsg: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);

		note(step == 0	 ? "datagram with a descriptor"
		     : step == 1 ? "datagram longer than the buffer"
				 : "control buffer too small for the descriptor");
		struct sockaddr_un from;
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(int)) + 16];
		} rctl;
		memset(&from, 0, sizeof(from));
		memset(&rctl, 0, sizeof(rctl));
		struct iovec riov = { NULL, 0 };
		struct msghdr m = { .msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &riov,
				    .msg_iovlen = 1, .msg_control = rctl.b,
				    .msg_controllen = step == 2 ? sizeof(struct cmsghdr) : sizeof(rctl.b) };
		run_one(&ring, recvmsg_sel(r, &m, 50, 0), 501 + (unsigned)step, &g);
		print_msghdr(&m);
		note("name is the sender's: %s",
		     yesno(m.msg_namelen == slen && !memcmp(&from, &sa, slen)));
		for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
			int got = -1;
			if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS)
				memcpy(&got, CMSG_DATA(h), sizeof(int));
			note("cmsg level=%d type=%d len=%zu fd=%d", h->cmsg_level, h->cmsg_type,
			     (size_t)h->cmsg_len, got);
			if (got >= 0)
				close(got);
		}
	}
	close(r);
	close(s);
}

int main(void)
{
	int ret = io_uring_queue_init(16, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	if (pipe(pip) < 0)
		die("pipe: %s", strerror(errno));
	unmapped = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (unmapped == MAP_FAILED)
		die("mmap: %s", strerror(errno));

	int a, b;
	tcp_pair(&a, &b);
	stream_cases("tcp over 127.0.0.1", a, b, 10, 1000);
	close(a);
	close(b);

	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		die("socketpair: %s", strerror(errno));
	stream_cases("unix stream socketpair", sv[0], sv[1], 20, 2000);
	close(sv[0]);
	close(sv[1]);

	note("RECV on a pipe");
	struct arena g = arena_new(16, 2);
	provide(&ring, &g, 30, 0, 2, 300);
	write_all(pip[1], "not-a-socket", 12);
	run_one(&ring, prep_recv_sel(&ring, pip[0], 0, 0, 30, 0), 301, &g);
	next_bid(&ring, 30, 302, &g);
	char junk[32];
	if (read(pip[0], junk, sizeof(junk)) != 12)
		die("pipe drain");

	tcp_reset_cases();
	dgram_cases();

	io_uring_queue_exit(&ring);
	return 0;
}
