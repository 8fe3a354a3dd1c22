/*
 * IORING_OP_ASYNC_CANCEL and IORING_REGISTER_SYNC_CANCEL finding pending
 * buffer-select requests among plain ones: by user_data, by user_data with
 * IORING_ASYNC_CANCEL_ALL (several requests sharing one user_data), with
 * IORING_ASYNC_CANCEL_ANY (alone and with ALL), by fd with
 * IORING_ASYNC_CANCEL_FD (alone, with ALL, and with FD_FIXED for a
 * registered file), and a user_data or fd nothing uses (-ENOENT, or 0 with
 * ALL). A cancel's res is 0 when it looked for one request and found it, and
 * the number cancelled with ALL or ANY (ANY cancels every request).
 * A cancelled RECV holds no buffer (no F_BUFFER); a cancelled READ had bound
 * one at its first attempt (F_BUFFER). A cancel and its targets complete from
 * different contexts, so each batch is printed sorted by user_data, then res,
 * then flags (requests sharing a user_data differ in flags).
 */
#include "test/prog/bs_bufs.h"

static struct io_uring ring;
static struct arena g;
static int a[3], b[3], p[2];
static char plain[4][16];

static void recv_plain(int fd, char *buf, unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_recv(sqe, fd, buf, 16, 0);
	sqe->user_data = ud;
}

static void read_plain(int fd, char *buf, unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, fd, buf, 16, 0);
	sqe->user_data = ud;
}

static void cancel_ud(unsigned long long target, unsigned flags, unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_cancel64(sqe, target, (int)flags);
	sqe->user_data = ud;
}

static void cancel_fd(int fd, unsigned flags, unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_cancel_fd(sqe, fd, flags);
	sqe->user_data = ud;
}

static int sync_cancel(unsigned long long target, int fd, unsigned flags)
{
	struct io_uring_sync_cancel_reg reg;
	memset(&reg, 0, sizeof(reg));
	reg.addr = target;
	reg.fd = fd;
	reg.flags = flags;
	reg.timeout.tv_sec = -1;
	reg.timeout.tv_nsec = -1;
	return io_uring_register_sync_cancel(&ring, &reg);
}

int main(void)
{
	int ret = io_uring_queue_init(32, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	for (int i = 0; i < 3; i++)
		tcp_pair(&a[i], &b[i]);
	if (pipe(p) < 0)
		die("pipe: %s", strerror(errno));
	g = arena_new(16, 16);
	provide(&ring, &g, 1, 0, 16, 1);

	note("by user_data: RECV(select), RECV, READ, READ(select) pending");
	prep_recv_sel(&ring, a[0], 0, 0, 1, 10);
	recv_plain(a[1], plain[0], 11);
	read_plain(p[0], plain[1], 12);
	prep_read_sel(&ring, p[0], 0, 1, 0, 13);
	submit_expect(&ring, 4);
	expect_pending(&ring, "four requests");
	cancel_ud(10, 0, 14);
	submit_expect(&ring, 1);
	reap_show_sorted(&ring, 2, &g);
	cancel_ud(13, 0, 15);
	submit_expect(&ring, 1);
	reap_show_sorted(&ring, 2, &g);
	cancel_ud(11, 0, 16);
	cancel_ud(12, 0, 17);
	submit_expect(&ring, 2);
	reap_show_sorted(&ring, 4, &g);

	note("IORING_ASYNC_CANCEL_ALL: four requests share user_data 20");
	prep_recv_sel(&ring, a[0], 0, 0, 1, 20);
	prep_recv_sel(&ring, a[1], 0, 0, 1, 20);
	prep_read_sel(&ring, p[0], 0, 1, 0, 20);
	recv_plain(a[2], plain[0], 20);
	submit_expect(&ring, 4);
	expect_pending(&ring, "four requests");
	cancel_ud(20, IORING_ASYNC_CANCEL_ALL, 21);
	submit_expect(&ring, 1);
	reap_show_sorted(&ring, 5, &g);

	note("IORING_ASYNC_CANCEL_ANY with one request pending");
	prep_recv_sel(&ring, a[0], 0, 0, 1, 30);
	submit_expect(&ring, 1);
	expect_pending(&ring, "RECV(select)");
	cancel_ud(0, IORING_ASYNC_CANCEL_ANY, 31);
	submit_expect(&ring, 1);
	reap_show_sorted(&ring, 2, &g);
	note("IORING_ASYNC_CANCEL_ANY alone with two pending");
	prep_recv_sel(&ring, a[0], 0, 0, 1, 36);
	recv_plain(a[1], plain[0], 37);
	submit_expect(&ring, 2);
	expect_pending(&ring, "two RECVs");
	cancel_ud(0, IORING_ASYNC_CANCEL_ANY, 38);
	submit_expect(&ring, 1);
	reap_show_sorted(&ring, 3, &g);
	note("IORING_ASYNC_CANCEL_ANY | ALL with three pending");
	prep_recv_sel(&ring, a[0], 0, 0, 1, 32);
	prep_read_sel(&ring, p[0], 0, 1, 0, 33);
	read_plain(p[0], plain[1], 34);
	submit_expect(&ring, 3);
	expect_pending(&ring, "three requests");
	cancel_ud(0, IORING_ASYNC_CANCEL_ANY | IORING_ASYNC_CANCEL_ALL, 35);
	submit_expect(&ring, 1);
	reap_show_sorted(&ring, 4, &g);

	note("IORING_ASYNC_CANCEL_FD: one RECV(select) on each of two sockets");
	prep_recv_sel(&ring, a[1], 0, 0, 1, 40);
	prep_recv_sel(&ring, a[2], 0, 0, 1, 41);
	submit_expect(&ring, 2);
	expect_pending(&ring, "two RECVs");
	cancel_fd(a[1], 0, 42);
	submit_expect(&ring, 1);
	reap_show_sorted(&ring, 2, &g);
	note("IORING_ASYNC_CANCEL_FD | ALL on the pipe: READ(select), READ; the RECV stays");
	prep_read_sel(&ring, p[0], 0, 1, 0, 43);
	read_plain(p[0], plain[2], 44);
	submit_expect(&ring, 2);
	expect_pending(&ring, "two READs and a RECV");
	cancel_fd(p[0], IORING_ASYNC_CANCEL_ALL, 45);
	submit_expect(&ring, 1);
	reap_show_sorted(&ring, 3, &g);
	expect_no_cqe(&ring, "RECV 41 after the pipe cancel");
	note("the RECV left pending still gets its data");
	if (send(b[2], "still-here", 10, 0) != 10)
		die("send: %s", strerror(errno));
	reap_show(&ring, 1, &g);

	note("IORING_ASYNC_CANCEL_FD_FIXED: RECV(select) on registered file 0");
	ret = io_uring_register_files(&ring, &a[0], 1);
	if (ret < 0)
		die("register_files: %s", strerror(-ret));
	struct io_uring_sqe *sqe = prep_recv_sel(&ring, 0, 0, 0, 1, 50);
	sqe->flags |= IOSQE_FIXED_FILE;
	submit_expect(&ring, 1);
	expect_pending(&ring, "RECV(select) on a fixed file");
	cancel_fd(0, IORING_ASYNC_CANCEL_FD_FIXED, 51);
	submit_expect(&ring, 1);
	reap_show_sorted(&ring, 2, &g);

	note("nothing to cancel: unknown user_data, idle fd");
	cancel_ud(424242, 0, 60);
	submit_expect(&ring, 1);
	reap_show(&ring, 1, &g);
	cancel_fd(a[1], 0, 61);
	submit_expect(&ring, 1);
	reap_show(&ring, 1, &g);
	cancel_fd(a[1], IORING_ASYNC_CANCEL_ALL, 62);
	submit_expect(&ring, 1);
	reap_show(&ring, 1, &g);

	note("IORING_REGISTER_SYNC_CANCEL by user_data: RECV(select)");
	prep_recv_sel(&ring, a[0], 0, 0, 1, 70);
	submit_expect(&ring, 1);
	expect_pending(&ring, "RECV(select)");
	note("sync cancel returned %d", sync_cancel(70, -1, 0));
	reap_show(&ring, 1, &g);
	note("sync cancel by user_data: READ(select)");
	prep_read_sel(&ring, p[0], 0, 1, 0, 71);
	submit_expect(&ring, 1);
	expect_pending(&ring, "READ(select)");
	note("sync cancel returned %d", sync_cancel(71, -1, 0));
	reap_show(&ring, 1, &g);
	note("sync cancel by fd with ALL: RECV(select) and RECV on one socket");
	prep_recv_sel(&ring, a[1], 0, 0, 1, 72);
	recv_plain(a[1], plain[3], 73);
	submit_expect(&ring, 2);
	expect_pending(&ring, "two RECVs");
	note("sync cancel returned %d", sync_cancel(0, a[1], IORING_ASYNC_CANCEL_FD | IORING_ASYNC_CANCEL_ALL));
	reap_show_sorted(&ring, 2, &g);
	note("sync cancel of an unknown user_data returned %d", sync_cancel(424242, -1, 0));

	note("the buffers the cancelled READs bound are gone; the rest remain");
	remove_bufs(&ring, 1, 65536, 80);

	for (int i = 0; i < 3; i++) {
		close(a[i]);
		close(b[i]);
	}
	close(p[0]);
	close(p[1]);
	io_uring_queue_exit(&ring);
	return 0;
}
