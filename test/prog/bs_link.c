/*
 * Links, drains, link timeouts and CQE skipping through and after
 * buffer-select requests:
 *  - RECV(select) -> WRITE: the WRITE runs once the receive has data (a
 *    receive shorter than its buffer is no failure);
 *  - READ(select) -> WRITE: a read that fills its length keeps the chain, a
 *    short one cancels the rest (-ECANCELED);
 *  - -ENOBUFS fails the link like any error; IOSQE_IO_HARDLINK goes on;
 *  - PROVIDE and REMOVE inside a chain take effect before the next member
 *    selects; a PROVIDE or REMOVE that fails (at submission or at issue)
 *    cancels the rest;
 *  - IOSQE_IO_DRAIN: a PROVIDE marked drain waits for the pending READ that
 *    holds the group's only buffer, and the READ after it selects the buffer
 *    the PROVIDE added; a READ marked drain selects only once the pending READ
 *    completed (here from an empty group), and a PROVIDE submitted after it
 *    waits for both;
 *  - IORING_OP_LINK_TIMEOUT on a pending RECV (-ECANCELED without F_BUFFER,
 *    -ETIME), on a pending READ (-ECANCELED with F_BUFFER) and on a RECV that
 *    gets data in time (the timeout is -ECANCELED);
 *  - IOSQE_CQE_SKIP_SUCCESS on PROVIDE and on buffer-select READ and RECV: no
 *    CQE on success, the buffer consumed all the same; a failure still posts,
 *    and for a READ a short read is a failure (it posts, with its buffer).
 * Members of a chain complete in chain order, but a failure and the
 * cancellations it causes may be posted in any order, so each chain is
 * printed by user_data.
 */
#include "test/prog/bs_bufs.h"

static struct io_uring ring;

static void nop(unsigned long long ud, unsigned flags)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = ud;
	sqe->flags |= (__u8)flags;
}

static void wr(int fd, const char *s, unsigned long long ud, unsigned flags)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_write(sqe, fd, s, (unsigned)strlen(s), 0);
	sqe->user_data = ud;
	sqe->flags |= (__u8)flags;
}

static void pv(const struct arena *a, unsigned bgid, unsigned first, unsigned count,
	       unsigned long long ud, unsigned flags)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	prep_provide_arena(sqe, a, bgid, first, count);
	sqe->user_data = ud;
	sqe->flags |= (__u8)flags;
}

static void rm(unsigned bgid, unsigned count, unsigned long long ud, unsigned flags)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_remove_buffers(sqe, (int)count, (int)bgid);
	sqe->user_data = ud;
	sqe->flags |= (__u8)flags;
}

static void link_timeout(struct __kernel_timespec *ts, unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_link_timeout(sqe, ts, 0);
	sqe->user_data = ud;
}

/* Bytes written to the pipe by WRITE members, read back with read(2). */
static void show_pipe(int fd)
{
	char buf[64];
	ssize_t n = read(fd, buf, sizeof(buf));
	note("pipe holds \"%.*s\"", n > 0 ? (int)n : 0, buf);
}

int main(void)
{
	int ret = io_uring_queue_init(32, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int in[2], out[2];
	if (pipe(in) < 0 || pipe(out) < 0 || fcntl(out[0], F_SETFL, O_NONBLOCK) < 0)
		die("pipe: %s", strerror(errno));
	int a, b;
	tcp_pair(&a, &b);
	struct arena g1 = arena_new(16, 32);
	struct __kernel_timespec ms30 = { .tv_nsec = 30 * 1000 * 1000 };
	struct __kernel_timespec s5 = { .tv_sec = 5 };

	note("RECV(select) -> WRITE, data arrives later, 4 bytes into a buffer of 16");
	provide(&ring, &g1, 1, 0, 32, 1);
	prep_recv_sel(&ring, a, 0, 0, 1, 2)->flags |= IOSQE_IO_LINK;
	wr(out[1], "after-recv", 3, 0);
	submit_expect(&ring, 2);
	expect_pending(&ring, "RECV -> WRITE");
	if (send(b, "ping", 4, 0) != 4)
		die("send: %s", strerror(errno));
	reap_show_sorted(&ring, 2, &g1);
	show_pipe(out[0]);

	note("READ(select, len 5) -> WRITE, 5 bytes queued: the chain holds");
	write_all(in[1], "12345", 5);
	prep_read_sel(&ring, in[0], 5, 1, 0, 10)->flags |= IOSQE_IO_LINK;
	wr(out[1], "after-read", 11, 0);
	submit_expect(&ring, 2);
	reap_show_sorted(&ring, 2, &g1);
	show_pipe(out[0]);
	note("READ(select, len 0) -> WRITE -> NOP, 5 bytes into a buffer of 16: short");
	write_all(in[1], "12345", 5);
	prep_read_sel(&ring, in[0], 0, 1, 0, 12)->flags |= IOSQE_IO_LINK;
	wr(out[1], "not-written", 13, IOSQE_IO_LINK);
	nop(14, 0);
	submit_expect(&ring, 3);
	reap_show_sorted(&ring, 3, &g1);
	show_pipe(out[0]);

	note("-ENOBUFS fails the link: READ(select) on an empty group -> NOP -> NOP");
	write_all(in[1], "x", 1);
	prep_read_sel(&ring, in[0], 0, 2, 0, 20)->flags |= IOSQE_IO_LINK;
	nop(21, IOSQE_IO_LINK);
	nop(22, 0);
	submit_expect(&ring, 3);
	reap_show_sorted(&ring, 3, &g1);
	note("RECV(select) on an empty group, data queued -> NOP");
	if (send(b, "queued", 6, 0) != 6)
		die("send: %s", strerror(errno));
	wait_queued(a, 6);
	prep_recv_sel(&ring, a, 0, 0, 2, 23)->flags |= IOSQE_IO_LINK;
	nop(24, 0);
	submit_expect(&ring, 2);
	reap_show_sorted(&ring, 2, &g1);
	char junk[64];
	if (recv(a, junk, sizeof(junk), 0) != 6)
		die("recv: %s", strerror(errno));

	note("IOSQE_IO_HARDLINK: -ENOBUFS, then a short read, the chain goes on");
	prep_read_sel(&ring, in[0], 0, 2, 0, 30)->flags |= IOSQE_IO_HARDLINK;
	prep_read_sel(&ring, in[0], 0, 1, 0, 31)->flags |= IOSQE_IO_HARDLINK;
	nop(32, 0);
	submit_expect(&ring, 3);
	reap_show_sorted(&ring, 3, &g1);

	note("NOP -> PROVIDE -> READ(select): the READ selects what the chain provided");
	struct arena g3 = arena_new(16, 4);
	write_all(in[1], "chained", 7);
	nop(40, IOSQE_IO_LINK);
	pv(&g3, 3, 2, 1, 41, IOSQE_IO_LINK);
	prep_read_sel(&ring, in[0], 0, 3, 0, 42);
	submit_expect(&ring, 3);
	reap_show_sorted(&ring, 3, &g3);
	note("PROVIDE -> REMOVE -> READ(select): removed before the READ selects");
	write_all(in[1], "gone", 4);
	pv(&g3, 3, 0, 2, 43, IOSQE_IO_LINK);
	rm(3, 2, 44, IOSQE_IO_LINK);
	prep_read_sel(&ring, in[0], 0, 3, 0, 45);
	submit_expect(&ring, 3);
	reap_show_sorted(&ring, 3, &g3);

	note("failing PROVIDE in a chain, rejected at submission (len 0)");
	nop(50, IOSQE_IO_LINK);
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_provide_buffers(sqe, g3.base, 0, 1, 3, 0);
	sqe->user_data = 51;
	sqe->flags |= IOSQE_IO_LINK;
	prep_read_sel(&ring, in[0], 0, 3, 0, 52)->flags |= IOSQE_IO_LINK;
	nop(53, 0);
	note("submit returned %d", io_uring_submit(&ring));
	reap_show_sorted(&ring, 4, &g3);
	note("failing PROVIDE in a chain, at issue (group at its 65535 cap)");
	struct arena cap = arena_new(1, 65536);
	provide(&ring, &cap, 4, 0, 65535, 54);
	nop(55, IOSQE_IO_LINK);
	pv(&cap, 4, 0, 1, 56, IOSQE_IO_LINK);
	prep_read_sel(&ring, in[0], 0, 3, 0, 57);
	submit_expect(&ring, 3);
	reap_show_sorted(&ring, 3, &g3);
	remove_bufs(&ring, 4, 65536, 58);
	note("failing REMOVE in a chain (group never created)");
	rm(99, 1, 59, IOSQE_IO_LINK);
	prep_read_sel(&ring, in[0], 0, 3, 0, 60);
	submit_expect(&ring, 2);
	reap_show_sorted(&ring, 2, &g3);
	note("the pipe still holds what the cancelled READs did not take");
	ssize_t n = read(in[0], junk, sizeof(junk));
	note("read %zd bytes: \"%.*s\"", n, n > 0 ? (int)n : 0, junk);

	note("IOSQE_IO_DRAIN: READ holds the only buffer; PROVIDE(drain) and READ wait for it");
	struct arena g5 = arena_new(16, 8);
	provide(&ring, &g5, 5, 0, 1, 70);
	int q[2];
	if (pipe(q) < 0)
		die("pipe: %s", strerror(errno));
	write_all(q[1], "q-data", 6);
	prep_read_sel(&ring, in[0], 0, 5, 0, 71);
	pv(&g5, 5, 7, 1, 72, IOSQE_IO_DRAIN);
	prep_read_sel(&ring, q[0], 0, 5, 0, 73);
	submit_expect(&ring, 3);
	expect_pending(&ring, "READ, PROVIDE(drain), READ");
	write_all(in[1], "p-data", 6);
	reap_show_sorted(&ring, 3, &g5);
	note("READ(select, drain) waits for a pending READ, a later PROVIDE waits for both");
	provide(&ring, &g5, 5, 1, 1, 74);
	write_all(q[1], "drained", 7);
	prep_read_sel(&ring, in[0], 0, 5, 0, 75);
	prep_read_sel(&ring, q[0], 0, 5, 0, 76)->flags |= IOSQE_IO_DRAIN;
	submit_expect(&ring, 2);
	expect_pending(&ring, "READ, READ(drain)");
	pv(&g5, 5, 3, 1, 77, 0);
	submit_expect(&ring, 1);
	expect_pending(&ring, "READ, READ(drain), PROVIDE");
	write_all(in[1], "release", 7);
	reap_show_sorted(&ring, 3, &g5);
	next_bid(&ring, 5, 78, &g5);
	char rest[16];
	n = read(q[0], rest, sizeof(rest));
	note("the drained READ left %zd bytes in its pipe", n);

	note("LINK_TIMEOUT fires on a pending RECV(select)");
	struct arena g6 = arena_new(16, 4);
	provide(&ring, &g6, 6, 0, 4, 80);
	prep_recv_sel(&ring, a, 0, 0, 6, 81)->flags |= IOSQE_IO_LINK;
	link_timeout(&ms30, 82);
	submit_expect(&ring, 2);
	reap_show_sorted(&ring, 2, &g6);
	next_bid(&ring, 6, 83, &g6);
	note("LINK_TIMEOUT fires on a pending READ(select)");
	prep_read_sel(&ring, in[0], 0, 6, 0, 84)->flags |= IOSQE_IO_LINK;
	link_timeout(&ms30, 85);
	submit_expect(&ring, 2);
	reap_show_sorted(&ring, 2, &g6);
	next_bid(&ring, 6, 86, &g6);
	note("RECV(select) gets data before its LINK_TIMEOUT");
	provide(&ring, &g6, 6, 0, 3, 87);
	prep_recv_sel(&ring, a, 0, 0, 6, 88)->flags |= IOSQE_IO_LINK;
	link_timeout(&s5, 89);
	submit_expect(&ring, 2);
	expect_pending(&ring, "RECV with a 5 s link timeout");
	if (send(b, "in-time", 7, 0) != 7)
		die("send: %s", strerror(errno));
	reap_show_sorted(&ring, 2, &g6);

	note("IOSQE_CQE_SKIP_SUCCESS on PROVIDE: only the NOP after it posts");
	struct arena g7 = arena_new(16, 8);
	pv(&g7, 7, 0, 4, 90, IOSQE_CQE_SKIP_SUCCESS);
	nop(91, 0);
	submit_expect(&ring, 2);
	reap_show(&ring, 1, &g7);
	expect_no_cqe(&ring, "after the NOP");
	note("a failing PROVIDE with CQE_SKIP_SUCCESS still posts");
	sqe = get_sqe(&ring);
	io_uring_prep_provide_buffers(sqe, g7.base, 0, 1, 7, 0);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	run_one(&ring, sqe, 92, &g7);
	note("READ(select, len 7) with CQE_SKIP_SUCCESS, 7 bytes: no CQE, buffer consumed");
	write_all(in[1], "skipped", 7);
	prep_read_sel(&ring, in[0], 7, 7, 0, 93)->flags |= IOSQE_CQE_SKIP_SUCCESS;
	nop(94, 0);
	submit_expect(&ring, 2);
	reap_show(&ring, 1, &g7);
	expect_no_cqe(&ring, "after the NOP");
	note("bid 0 holds \"%.7s\"", arena_buf(&g7, 0));
	note("READ(select, len 0) with CQE_SKIP_SUCCESS, 5 bytes: a short read posts");
	write_all(in[1], "short", 5);
	sqe = prep_read_sel(&ring, in[0], 0, 7, 0, 0);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	run_one(&ring, sqe, 95, &g7);
	note("RECV(select) with CQE_SKIP_SUCCESS, data queued");
	if (send(b, "skip-recv", 9, 0) != 9)
		die("send: %s", strerror(errno));
	wait_queued(a, 9);
	prep_recv_sel(&ring, a, 0, 0, 7, 96)->flags |= IOSQE_CQE_SKIP_SUCCESS;
	nop(97, 0);
	submit_expect(&ring, 2);
	reap_show(&ring, 1, &g7);
	expect_no_cqe(&ring, "after the NOP");
	note("bid 2 holds \"%.9s\"", arena_buf(&g7, 2));
	next_bid(&ring, 7, 98, &g7);
	note("READ(select) with CQE_SKIP_SUCCESS on the empty group still posts -ENOBUFS");
	write_all(in[1], "y", 1);
	sqe = prep_read_sel(&ring, in[0], 0, 7, 0, 0);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	run_one(&ring, sqe, 99, &g7);
	note("PROVIDE(skip) -> READ(select) in one chain");
	pv(&g7, 7, 5, 1, 100, IOSQE_CQE_SKIP_SUCCESS | IOSQE_IO_LINK);
	prep_read_sel(&ring, in[0], 0, 7, 0, 101);
	submit_expect(&ring, 2);
	reap_show(&ring, 1, &g7);
	expect_no_cqe(&ring, "after the chain");

	close(a);
	close(b);
	io_uring_queue_exit(&ring);
	return 0;
}
