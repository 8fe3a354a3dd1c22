/*
 * Programs that hand io_uring bad pointers.  bufsel reads some of what an SQE
 * points to itself (the iovec of a buffer-select READV, the msghdr and its
 * iovec of a RECVMSG) and writes some back (a RECVMSG's msg_flags, namelen
 * and controllen), so a bad pointer must give the kernel's CQE and nothing
 * worse, and the ring must go on working.  Every case runs alone; a page
 * mapped PROT_NONE (never reused, unlike an unmapped hole that a later
 * mapping could fill) stands for memory the program does not own:
 *
 *  - READ into it (no buffer select): -EFAULT, the data stays queued;
 *  - READV whose iovec pointer is bad, and whose iovec is good but points to
 *    bad memory, each with and without buffer select;
 *  - RECVMSG whose msghdr pointer is bad, whose msg_iov is bad, and whose
 *    msg_name is bad, with and without buffer select;
 *  - a RECVMSG waiting for data whose msghdr becomes inaccessible before the
 *    data comes: the kernel writes msg_flags back when it completes;
 *  - PROVIDE_BUFFERS of a range that is not accessible: the kernel takes it
 *    (only the address range is checked), and READ, READV, RECV, RECVMSG,
 *    a multishot RECV and SEND with buffer select then meet it;
 *  - after each group of cases, valid requests on the same ring.
 * Every CQE and the group's state after it are printed.
 */
#include "test/prog/bs_bufs.h"

#include <sys/mman.h>
#include <sys/uio.h>

static struct io_uring ring;
static char *bad;		/* a PROT_NONE page */
static char *edge;		/* the end of a read-write page followed by a PROT_NONE one */
static int pip[2];
static int sa, sb;		/* a SEQPACKET socketpair: sa receives, sb sends */
static struct arena good;	/* group 1: ordinary buffers */
static unsigned long long next_ud = 1;

#define GOOD 1
#define BAD 2

static unsigned long long ud(void)
{
	return next_ud++;
}

static void send_peer(const char *s)
{
	if (send(sb, s, strlen(s), MSG_NOSIGNAL) != (ssize_t)strlen(s))
		die("send: %s", strerror(errno));
}

static void drain_socket(const char *why)
{
	char buf[256];
	ssize_t n = recv(sa, buf, sizeof(buf), MSG_DONTWAIT);
	note("%s: socket holds %zd bytes \"%.*s\"", why, n < 0 ? -(ssize_t)errno : n, n > 0 ? (int)n : 0, buf);
}

static void drain_pipe(const char *why)
{
	char buf[256];
	int fl = fcntl(pip[0], F_GETFL);
	fcntl(pip[0], F_SETFL, fl | O_NONBLOCK);
	ssize_t n = read(pip[0], buf, sizeof(buf));
	fcntl(pip[0], F_SETFL, fl);
	note("%s: pipe holds %zd bytes \"%.*s\"", why, n < 0 ? -(ssize_t)errno : n, n > 0 ? (int)n : 0, buf);
}

/* How many buffers group bgid holds: REMOVE them all and provide them again. */
static void group_size(unsigned bgid, const struct arena *a, const char *why)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_remove_buffers(sqe, 65535, (int)bgid);
	sqe->user_data = ud();
	submit_expect(&ring, 1);
	struct io_uring_cqe c;
	reap(&ring, &c, 1);
	note("%s: group %u held %d buffers", why, bgid, c.res);
	if (a)
		provide(&ring, a, bgid, 0, a->nr, ud());
}

/* A few ordinary requests: the ring is still sound. */
static void still_works(const char *after)
{
	note("still works after %s:", after);
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = ud();
	submit_expect(&ring, 1);
	reap_print(&ring, 1);
	write_all(pip[1], "pipe-ok", 7);
	run_one(&ring, prep_read_sel(&ring, pip[0], 0, GOOD, 0, 0), ud(), &good);
	send_peer("sock-ok");
	wait_queued(sa, 7);
	run_one(&ring, prep_recv_sel(&ring, sa, 0, 0, GOOD, 0), ud(), &good);
	group_size(GOOD, &good, "good group");
}

static struct io_uring_sqe *prep_readv_sel(int fd, const struct iovec *iov, unsigned bgid)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_readv(sqe, fd, iov, 1, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = (__u16)bgid;
	return sqe;
}

static struct io_uring_sqe *prep_recvmsg(const struct msghdr *m, int select, unsigned bgid)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_recvmsg(sqe, sa, (struct msghdr *)m, 0);
	if (select) {
		sqe->flags |= IOSQE_BUFFER_SELECT;
		sqe->buf_group = (__u16)bgid;
	}
	return sqe;
}

static void pointer_cases(void)
{
	char buf[64];
	struct iovec iov;

	note("== READ into an inaccessible buffer");
	write_all(pip[1], "read-fault", 10);
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, pip[0], bad, 16, 0);
	run_one(&ring, sqe, ud(), NULL);
	drain_pipe("after READ -EFAULT");

	note("== READV, iovec pointer inaccessible, no buffer select");
	write_all(pip[1], "readv-fault", 11);
	sqe = get_sqe(&ring);
	io_uring_prep_readv(sqe, pip[0], (struct iovec *)bad, 1, 0);
	run_one(&ring, sqe, ud(), NULL);
	note("== READV, iovec into an inaccessible buffer, no buffer select");
	iov = (struct iovec){ bad, 16 };
	sqe = get_sqe(&ring);
	io_uring_prep_readv(sqe, pip[0], &iov, 1, 0);
	run_one(&ring, sqe, ud(), NULL);
	note("== READV with buffer select, iovec pointer inaccessible");
	run_one(&ring, prep_readv_sel(pip[0], (struct iovec *)bad, GOOD), ud(), &good);
	note("== READV with buffer select, iovec straddling the end of accessible memory");
	run_one(&ring, prep_readv_sel(pip[0], (struct iovec *)(edge - 8), GOOD), ud(), &good);
	note("== READV with buffer select, iovec base inaccessible (ignored: the buffer is selected)");
	iov = (struct iovec){ bad, 4 };
	run_one(&ring, prep_readv_sel(pip[0], &iov, GOOD), ud(), &good);
	drain_pipe("after the READVs");
	still_works("READ and READV faults");

	note("== RECVMSG, msghdr pointer inaccessible");
	send_peer("msghdr-fault");
	wait_queued(sa, 12);
	run_one(&ring, prep_recvmsg((struct msghdr *)bad, 0, 0), ud(), NULL);
	run_one(&ring, prep_recvmsg((struct msghdr *)bad, 1, GOOD), ud(), &good);
	note("== RECVMSG, msg_iov inaccessible");
	struct msghdr m = { .msg_iov = (struct iovec *)bad, .msg_iovlen = 1 };
	run_one(&ring, prep_recvmsg(&m, 0, 0), ud(), NULL);
	run_one(&ring, prep_recvmsg(&m, 1, GOOD), ud(), &good);
	note("== RECVMSG, msg_iov into an inaccessible buffer, no buffer select");
	iov = (struct iovec){ bad, 16 };
	m = (struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1 };
	run_one(&ring, prep_recvmsg(&m, 0, 0), ud(), NULL);
	note("msg_flags=0x%x", (unsigned)m.msg_flags);
	drain_socket("after the RECVMSGs");
	note("== RECVMSG, msg_name inaccessible (the kernel writes the name at completion)");
	send_peer("name-fault");
	wait_queued(sa, 10);
	iov = (struct iovec){ buf, sizeof(buf) };
	m = (struct msghdr){ .msg_name = bad, .msg_namelen = 16, .msg_iov = &iov, .msg_iovlen = 1 };
	run_one(&ring, prep_recvmsg(&m, 0, 0), ud(), NULL);
	note("msg_namelen=%u msg_flags=0x%x", (unsigned)m.msg_namelen, (unsigned)m.msg_flags);
	send_peer("name-fault-select");
	wait_queued(sa, 17);
	m = (struct msghdr){ .msg_name = bad, .msg_namelen = 16 };
	run_one(&ring, prep_recvmsg(&m, 1, GOOD), ud(), &good);
	note("msg_namelen=%u msg_flags=0x%x", (unsigned)m.msg_namelen, (unsigned)m.msg_flags);
	drain_socket("after msg_name faults");
	note("== RECVMSG with buffer select, no msg_name but a msg_namelen of 77");
	send_peer("no-name");
	wait_queued(sa, 7);
	m = (struct msghdr){ .msg_namelen = 77 };
	run_one(&ring, prep_recvmsg(&m, 1, GOOD), ud(), &good);
	note("msg_namelen=%u msg_flags=0x%x", (unsigned)m.msg_namelen, (unsigned)m.msg_flags);
	still_works("RECVMSG faults");
}

/*
 * The kernel writes msg_flags (and namelen, controllen) back to the
 * program's msghdr when a RECVMSG completes.  A msghdr that became
 * inaccessible while the request waited makes that write fail.
 */
static void vanishing_msghdr(int select)
{
	note("== RECVMSG %s buffer select waiting for data; its msghdr becomes inaccessible",
	     select ? "with" : "without");
	char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	static char data[64];
	static struct iovec iov = { data, sizeof(data) };
	struct msghdr *m = (struct msghdr *)page;
	*m = (struct msghdr){ .msg_iov = select ? NULL : &iov, .msg_iovlen = select ? 0 : 1 };
	unsigned long long u = ud();
	struct io_uring_sqe *sqe = prep_recvmsg(m, select, GOOD);
	sqe->user_data = u;
	submit_expect(&ring, 1);
	expect_pending(&ring, "RECVMSG on an idle socket");
	if (mprotect(page, 4096, PROT_NONE) < 0)
		die("mprotect: %s", strerror(errno));
	send_peer("late-data");
	reap_show(&ring, 1, &good);
	drain_socket("after the RECVMSG");
	if (mprotect(page, 4096, PROT_READ) < 0)
		die("mprotect: %s", strerror(errno));
	note("msg_flags=0x%x", (unsigned)m->msg_flags);
	munmap(page, 4096);
	group_size(GOOD, &good, "good group");
}

/* The 4 buffers of 64 on the inaccessible page, into group BAD. */
static void provide_bad(void)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_provide_buffers(sqe, bad, 64, 4, BAD, 0);
	run_one(&ring, sqe, ud(), NULL);
}

/* What the last case left in group BAD, then the group full again. */
static void refill_bad_group(void)
{
	group_size(BAD, NULL, "bad group");
	provide_bad();
}

static void inaccessible_group(void)
{
	struct io_uring_sqe *sqe;
	note("== PROVIDE_BUFFERS of an inaccessible range: 4 buffers of 64 in group %d", BAD);
	provide_bad();

	note("READ with buffer select");
	write_all(pip[1], "into-bad", 8);
	run_one(&ring, prep_read_sel(&ring, pip[0], 0, BAD, 0, 0), ud(), NULL);
	drain_pipe("after READ");
	refill_bad_group();

	note("READV with buffer select");
	write_all(pip[1], "readv-bad", 9);
	struct iovec iov = { NULL, 32 };
	run_one(&ring, prep_readv_sel(pip[0], &iov, BAD), ud(), NULL);
	drain_pipe("after READV");
	refill_bad_group();

	note("RECV with buffer select, data there");
	send_peer("recv-bad");
	wait_queued(sa, 8);
	run_one(&ring, prep_recv_sel(&ring, sa, 0, 0, BAD, 0), ud(), NULL);
	drain_socket("after RECV");
	note("RECV with buffer select, waiting for data");
	prep_recv_sel(&ring, sa, 0, 0, BAD, ud());
	submit_expect(&ring, 1);
	expect_pending(&ring, "RECV on an idle socket");
	send_peer("late-recv-bad");
	reap_show(&ring, 1, NULL);
	drain_socket("after RECV");
	refill_bad_group();

	note("RECVMSG with buffer select");
	send_peer("recvmsg-bad");
	wait_queued(sa, 11);
	struct msghdr m = { 0 };
	run_one(&ring, prep_recvmsg(&m, 1, BAD), ud(), NULL);
	note("msg_flags=0x%x", (unsigned)m.msg_flags);
	drain_socket("after RECVMSG");
	refill_bad_group();

	note("multishot RECV with buffer select");
	send_peer("multi-bad");
	wait_queued(sa, 9);
	sqe = get_sqe(&ring);
	io_uring_prep_recv_multishot(sqe, sa, NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = BAD;
	run_one(&ring, sqe, ud(), NULL);
	drain_socket("after multishot RECV");
	refill_bad_group();

	note("SEND with buffer select");
	sqe = get_sqe(&ring);
	io_uring_prep_send(sqe, sb, NULL, 0, MSG_NOSIGNAL);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = BAD;
	run_one(&ring, sqe, ud(), NULL);
	drain_socket("after SEND");
	group_size(BAD, NULL, "bad group");
	still_works("an inaccessible group");
}

int main(void)
{
	int ret = io_uring_queue_init(16, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	bad = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (bad == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	edge = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (edge == MAP_FAILED || mprotect(edge + 4096, 4096, PROT_NONE) < 0)
		die("mmap: %s", strerror(errno));
	edge += 4096;
	int sv[2];
	if (pipe(pip) < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		die("pipe/socketpair: %s", strerror(errno));
	sa = sv[0];
	sb = sv[1];
	good = arena_new(32, 4);
	provide(&ring, &good, GOOD, 0, 4, ud());

	pointer_cases();
	vanishing_msghdr(0);
	vanishing_msghdr(1);
	still_works("vanishing msghdrs");
	inaccessible_group();
	io_uring_queue_exit(&ring);
	return 0;
}
