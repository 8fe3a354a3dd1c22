/*
 * One pass through every place where bufsel allocates memory for a ring, in
 * a fixed order, printing every CQE (by user_data within each step):
 *
 *   the first PROVIDE_BUFFERS (the ring's pool, its group, the buffer list),
 *   a READ with buffer select (the request table), a RECVMSG with buffer
 *   select that finds its data and one that waits for it (bufsel's copy of
 *   the msghdr, made at submission or when the data comes), a chain held
 *   behind a waiting RECV (the held SQEs), the same chain cancelled (the
 *   CQEs bufsel makes itself), a multishot RECV (its steps are such CQEs
 *   too), 260 READs waiting at once (a second chunk of requests), and a
 *   chain of 100 cancelled (more CQEs of bufsel's own than it keeps room
 *   for without allocating).
 *
 * Natively and under bufsel the output is the same (compare.c).  Under
 * BUFSEL_FAIL_ALLOC=N the Nth of those allocations fails; the program then
 * must still exit normally with one CQE for every request (each printed
 * once), or a CQ overflow counter that counts the ones missing, and the
 * failure must show as an error in the CQE of the request that needed the
 * memory (test/integration/faults.c).  So nothing here ends the program
 * over an unexpected result: a missing CQE is printed as such after a
 * bounded wait.
 */
#include "test/prog/bs_bufs.h"

#include <sys/uio.h>

#define MANY 260

#define LONG_CHAIN 100

static struct io_uring ring, big;

static int byte_cmp(const void *a, const void *b)
{
	return *(const unsigned char *)a - *(const unsigned char *)b;
}

/*
 * Up to n CQEs of r, each waited for at most a second; printed by user_data.
 * pooled: reads that waited together on one file, whose bytes are shown
 * together, sorted, not per buffer: which of them takes which byte is the
 * order the kernel wakes them in, and Linux 5.10 reads a pipe in io-wq,
 * whose workers take the bytes in any order (natively too).
 */
static void reap_show_from(struct io_uring *r, unsigned n, const struct arena *a, bool pooled)
{
	static struct io_uring_cqe c[MANY + 8];
	static char bytes[MANY + 1];
	unsigned got = 0, nbytes = 0;
	while (got < n) {
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = { .tv_sec = 1 };
		int ret = io_uring_wait_cqe_timeout(r, &cqe, &ts);
		if (ret < 0) {
			note("missing: %u of %u CQEs did not come (%d)", n - got, n, ret);
			break;
		}
		c[got++] = *cqe;
		io_uring_cqe_seen(r, cqe);
	}
	qsort(c, got, sizeof(c[0]), cqe_cmp_full);
	for (unsigned i = 0; i < got; i++) {
		if (!pooled) {
			show(&c[i], a);
			continue;
		}
		cqe_print(&c[i]);
		if ((c[i].flags & IORING_CQE_F_BUFFER) && c[i].res > 0 && nbytes + (unsigned)c[i].res <= MANY) {
			memcpy(bytes + nbytes, arena_buf(a, cqe_bid(&c[i])), (size_t)c[i].res);
			nbytes += (unsigned)c[i].res;
		}
	}
	if (pooled) {
		qsort(bytes, nbytes, 1, byte_cmp);
		bytes[nbytes] = 0;
		note("%u bytes read, sorted: %s", nbytes, bytes);
	}
}

static void reap_show_n(unsigned n, const struct arena *a)
{
	reap_show_from(&ring, n, a, false);
}

static void submit_n(unsigned n)
{
	int ret = io_uring_submit(&ring);
	if (ret != (int)n)
		note("submit returned %d, wanted %u", ret, n);
}

static void provide_n(const struct arena *a, unsigned bgid, unsigned first, unsigned n, unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	prep_provide_arena(sqe, a, bgid, first, n);
	sqe->user_data = ud;
	submit_n(1);
	reap_show_n(1, NULL);
}

static struct io_uring_sqe *recvmsg_sel(int fd, struct msghdr *m, unsigned bgid, unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_recvmsg(sqe, fd, m, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = (__u16)bgid;
	sqe->user_data = ud;
	return sqe;
}

int main(void)
{
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int pip[2], sv[2];
	if (pipe(pip) < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		die("pipe/socketpair: %s", strerror(errno));
	struct arena g1 = arena_new(16, 16);

	note("== PROVIDE_BUFFERS: the pool, group 1, 16 buffers");
	provide_n(&g1, 1, 0, 16, 1);

	note("== READ with buffer select");
	write_all(pip[1], "read", 4);
	prep_read_sel(&ring, pip[0], 0, 1, 0, 2);
	submit_n(1);
	reap_show_n(1, &g1);

	note("== RECVMSG with buffer select, data there");
	struct msghdr m = { 0 };
	send_str(sv[1], "recvmsg-now");
	wait_queued(sv[0], 11);
	recvmsg_sel(sv[0], &m, 1, 3);
	submit_n(1);
	reap_show_n(1, &g1);

	note("== RECVMSG with buffer select, waiting for data");
	struct msghdr m2 = { 0 };
	recvmsg_sel(sv[0], &m2, 1, 4);
	submit_n(1);
	send_str(sv[1], "recvmsg-later");
	reap_show_n(1, &g1);

	note("== a chain held behind a waiting RECV: RECV -> NOP -> NOP -> NOP -> NOP -> NOP");
	struct io_uring_sqe *sqe = prep_recv_sel(&ring, sv[0], 0, 0, 1, 10);
	sqe->flags |= IOSQE_IO_LINK;
	for (unsigned i = 0; i < 5; i++) {
		sqe = get_sqe(&ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = 11 + i;
		if (i < 4)
			sqe->flags |= IOSQE_IO_LINK;
	}
	submit_n(6);
	send_str(sv[1], "chain");
	reap_show_n(6, &g1);

	note("== the same chain, its RECV cancelled: bufsel's own -ECANCELED CQEs");
	sqe = prep_recv_sel(&ring, sv[0], 0, 0, 1, 20);
	sqe->flags |= IOSQE_IO_LINK;
	for (unsigned i = 0; i < 5; i++) {
		sqe = get_sqe(&ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = 21 + i;
		if (i < 4)
			sqe->flags |= IOSQE_IO_LINK;
	}
	submit_n(6);
	sqe = get_sqe(&ring);
	io_uring_prep_cancel64(sqe, 20, 0);
	sqe->user_data = 26;
	submit_n(1);
	reap_show_n(7, &g1);

	note("== a multishot RECV with 5 messages queued, then its socket shut down");
	for (unsigned i = 0; i < 5; i++) {
		char msg[16];
		snprintf(msg, sizeof(msg), "multi-%u", i);
		send_str(sv[1], msg);
	}
	wait_queued(sv[0], 5 * 7);
	sqe = get_sqe(&ring);
	io_uring_prep_recv_multishot(sqe, sv[0], NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 1;
	sqe->user_data = 30;
	submit_n(1);
	/* Until the stream's last CQE (no IORING_CQE_F_MORE): the shutdown
	 * ends it once the queued messages are in. */
	for (unsigned k = 0;; k++) {
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = { .tv_sec = 1 };
		if (k == 5)
			shutdown(sv[1], SHUT_WR);
		if ((ret = io_uring_wait_cqe_timeout(&ring, &cqe, &ts)) < 0) {
			note("missing: the multishot RECV's stream did not end (%d)", ret);
			break;
		}
		struct io_uring_cqe c = *cqe;
		io_uring_cqe_seen(&ring, cqe);
		show(&c, &g1);
		if (!(c.flags & IORING_CQE_F_MORE))
			break;
	}

	note("== %u READs with buffer select waiting at once, group 2 of %u buffers", MANY, MANY);
	struct arena g2 = arena_new(1, MANY);
	provide_n(&g2, 2, 0, MANY, 40);
	int p2[2];
	if (pipe(p2) < 0)
		die("pipe: %s", strerror(errno));
	for (unsigned i = 0; i < MANY; i++) {
		prep_read_sel(&ring, p2[0], 1, 2, 0, 1000 + i);
		if (i % 8 == 7 || i == MANY - 1)
			submit_n(i % 8 + 1);
	}
	char bytes[MANY];
	for (unsigned i = 0; i < MANY; i++)
		bytes[i] = (char)('a' + i % 26);
	write_all(p2[1], bytes, MANY);
	reap_show_from(&ring, MANY, &g2, true);

	note("== a RECV with %u NOPs linked behind it, cancelled: more of bufsel's own CQEs than it keeps room for", LONG_CHAIN - 1);
	ret = io_uring_queue_init(LONG_CHAIN, &big, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	struct arena g3 = arena_new(16, 1);
	sqe = get_sqe(&big);
	prep_provide_arena(sqe, &g3, 3, 0, 1);
	sqe->user_data = 60;
	if (io_uring_submit(&big) != 1)
		note("submit failed");
	reap_show_from(&big, 1, NULL, false);
	int lv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, lv) < 0)
		die("socketpair: %s", strerror(errno));
	sqe = prep_recv_sel(&big, lv[0], 0, 0, 3, 100);
	sqe->flags |= IOSQE_IO_LINK;
	for (unsigned i = 1; i < LONG_CHAIN; i++) {
		sqe = get_sqe(&big);
		io_uring_prep_nop(sqe);
		sqe->user_data = 100 + i;
		if (i < LONG_CHAIN - 1)
			sqe->flags |= IOSQE_IO_LINK;
	}
	if ((ret = io_uring_submit(&big)) != LONG_CHAIN)
		note("submit returned %d", ret);
	sqe = get_sqe(&big);
	io_uring_prep_cancel64(sqe, 100, 0);
	sqe->user_data = 99;
	if (io_uring_submit(&big) != 1)
		note("submit failed");
	reap_show_from(&big, LONG_CHAIN + 1, &g3, false);
	note("big ring: CQ overflow counter %u", IO_URING_READ_ONCE(*big.cq.koverflow));
	io_uring_queue_exit(&big);

	note("== what the groups hold at the end");
	sqe = get_sqe(&ring);
	io_uring_prep_remove_buffers(sqe, 65535, 1);
	sqe->user_data = 50;
	sqe = get_sqe(&ring);
	io_uring_prep_remove_buffers(sqe, 65535, 2);
	sqe->user_data = 51;
	submit_n(2);
	reap_show_n(2, NULL);
	note("CQ overflow counter %u", IO_URING_READ_ONCE(*ring.cq.koverflow));
	io_uring_queue_exit(&ring);
	return 0;
}
