/*
 * Flags inside an SQE's own fields, per opcode, under BUFSEL_KERNEL=X.Y.
 * A kernel knows only the flags of its own release: 5.6's preps refuse with
 * -EINVAL what they do not know in a field they check (accept ioprio,
 * timeout and cancel flags, a cancel's len, poll len, SQE flags on a
 * cancel), and ignore fields they never read (send and receive ioprio: a
 * multishot receive is one plain receive there; the upper poll32_events
 * bits; a read's attr_type_mask).  A prep failure completes the request with the
 * error, fails its chain, and the submit goes on.  Natively and under
 * bufsel without BUFSEL_KERNEL the output is the running kernel's;
 * compare.c checks the 5.6 output line by line.
 */
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "test/prog/cqe_print.h"

static struct io_uring ring;
static char bufs[4][16];

static struct io_uring_sqe *sqe_get(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	if (!sqe)
		die("get_sqe");
	return sqe;
}

static void print_cqe(const struct io_uring_cqe *cqe, int fd_res)
{
	if (fd_res && cqe->res >= 0)
		printf("cqe ud=%llu res=fd flags=0x%x\n", (unsigned long long)cqe->user_data, cqe->flags);
	else
		cqe_print(cqe);
}

/* One CQE; an accepted fd is printed as "fd" (numbers differ by who else
 * holds descriptors), and closed. */
static void reap_one(int fd_res)
{
	struct io_uring_cqe *cqe;
	int ret = io_uring_wait_cqe(&ring, &cqe);
	if (ret)
		die("wait_cqe: %d", ret);
	print_cqe(cqe, fd_res);
	if (fd_res && cqe->res >= 0)
		close(cqe->res);
	io_uring_cqe_seen(&ring, cqe);
}

static void submit(int want)
{
	int ret = io_uring_submit(&ring);
	if (ret != want)
		die("submit %d, wanted %d", ret, want);
}

/* Cancels request ud (a poll by POLL_REMOVE, anything else by
 * ASYNC_CANCEL, user_data 99): if the cancel found it, the request's last
 * CQE follows.  The cancel's CQE is printed first, whatever the order. */
static void cancel(__u64 ud, int poll, int fd_res)
{
	struct io_uring_sqe *sqe = sqe_get();
	if (poll)
		io_uring_prep_poll_remove(sqe, ud);
	else
		io_uring_prep_cancel64(sqe, ud, 0);
	sqe->user_data = 99;
	submit(1);
	struct io_uring_cqe c[3];
	unsigned n = 0;
	int got = 0, res = 0, done = 0;
	while (!got || ((res == 0 || res == -EALREADY) && !done)) {
		struct io_uring_cqe *cqe;
		if (n == 3 || io_uring_wait_cqe(&ring, &cqe))
			die("cancel: wait_cqe");
		c[n++] = *cqe;
		if (cqe->user_data == 99) {
			got = 1;
			res = cqe->res;
		} else if (!(cqe->flags & IORING_CQE_F_MORE)) {
			done = 1;
		}
		io_uring_cqe_seen(&ring, cqe);
	}
	for (unsigned i = 0; i < n; i++)
		if (c[i].user_data == 99)
			cqe_print(&c[i]);
	for (unsigned i = 0; i < n; i++)
		if (c[i].user_data != 99)
			print_cqe(&c[i], fd_res);
}

static int listener(struct sockaddr_in *a)
{
	socklen_t len = sizeof(*a);
	int s = socket(AF_INET, SOCK_STREAM, 0);
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0 || bind(s, (struct sockaddr *)a, sizeof(*a)) || listen(s, 8) ||
	    getsockname(s, (struct sockaddr *)a, &len))
		die("listener: %s", strerror(errno));
	return s;
}

static int connect_to(const struct sockaddr_in *a)
{
	int c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (const struct sockaddr *)a, sizeof(*a)))
		die("connect: %s", strerror(errno));
	return c;
}

int main(void)
{
	int ret = io_uring_queue_init(16, &ring, 0);
	if (ret)
		die("queue_init: %d", ret);
	struct io_uring_sqe *sqe;
	struct __kernel_timespec ts = { .tv_nsec = 1000000 };

	/* ACCEPT: ioprio is checked (5.5); IORING_ACCEPT_MULTISHOT is 5.19. */
	note("accept multishot, a connection queued");
	struct sockaddr_in a;
	int l = listener(&a);
	int c1 = connect_to(&a);
	sqe = sqe_get();
	io_uring_prep_multishot_accept(sqe, l, NULL, NULL, 0);
	sqe->user_data = 1;
	submit(1);
	reap_one(1);
	cancel(1, 0, 1);
	close(c1);
	close(l);

	/* RECV: 5.6 never reads ioprio, so IORING_RECV_MULTISHOT (6.0) is
	 * one plain receive there: one buffer, no IORING_CQE_F_MORE. */
	note("recv multishot with a provided buffer, 3 bytes queued");
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp))
		die("socketpair");
	sqe = sqe_get();
	io_uring_prep_provide_buffers(sqe, bufs, sizeof(bufs[0]), 4, 1, 0);
	sqe->user_data = 2;
	submit(1);
	reap_one(0);
	if (write(sp[1], "abc", 3) != 3)
		die("write");
	sqe = sqe_get();
	io_uring_prep_recv_multishot(sqe, sp[0], NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 1;
	sqe->user_data = 3;
	submit(1);
	reap_one(0);
	cancel(3, 0, 0);

	/* SEND and RECV with IORING_RECVSEND_POLL_FIRST (5.19): ignored by
	 * 5.6, the same bytes either way. */
	note("send and recv with POLL_FIRST");
	sqe = sqe_get();
	io_uring_prep_send(sqe, sp[1], "defg", 4, 0);
	sqe->ioprio |= IORING_RECVSEND_POLL_FIRST;
	sqe->user_data = 4;
	submit(1);
	reap_one(0);
	char rb[8];
	sqe = sqe_get();
	io_uring_prep_recv(sqe, sp[0], rb, sizeof(rb), 0);
	sqe->ioprio |= IORING_RECVSEND_POLL_FIRST;
	sqe->user_data = 5;
	submit(1);
	reap_one(0);
	close(sp[0]);
	close(sp[1]);

	/* TIMEOUT flags past ABS: refused by 5.6's io_timeout_prep. */
	note("timeout ETIME_SUCCESS, BOOTTIME; timeout update");
	sqe = sqe_get();
	io_uring_prep_timeout(sqe, &ts, 0, IORING_TIMEOUT_ETIME_SUCCESS);
	sqe->user_data = 6;
	submit(1);
	reap_one(0);
	sqe = sqe_get();
	io_uring_prep_timeout(sqe, &ts, 0, IORING_TIMEOUT_BOOTTIME);
	sqe->user_data = 7;
	submit(1);
	reap_one(0);
	/* A prep failure does not end the submit: the NOP behind it goes in. */
	sqe = sqe_get();
	io_uring_prep_timeout_update(sqe, &ts, 1234, 0);
	sqe->user_data = 8;
	sqe = sqe_get();
	io_uring_prep_nop(sqe);
	sqe->user_data = 9;
	submit(2);
	reap_one(0);
	reap_one(0);

	/* The SQE flags come first: an unknown one (CQE_SKIP_SUCCESS, 5.17)
	 * stops the submit before any prep looks at the fields. */
	note("timeout update with CQE_SKIP_SUCCESS, then a NOP");
	sqe = sqe_get();
	io_uring_prep_timeout_update(sqe, &ts, 1234, 0);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	sqe->user_data = 17;
	sqe = sqe_get();
	io_uring_prep_nop(sqe);
	sqe->user_data = 18;
	ret = io_uring_submit(&ring);
	note("submit %d", ret);
	if (ret == 1)
		note("submit the rest %d", io_uring_submit(&ring));
	reap_one(0);
	reap_one(0);

	/* ASYNC_CANCEL: cancel_flags (5.19+) refused, and in 5.6 any SQE
	 * flag: a linked cancel fails and takes its chain with it. */
	note("cancel ANY; cancel with IOSQE_IO_LINK");
	sqe = sqe_get();
	io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
	sqe->user_data = 10;
	submit(1);
	reap_one(0);
	sqe = sqe_get();
	io_uring_prep_cancel64(sqe, 4321, 0);
	sqe->flags |= IOSQE_IO_LINK;
	sqe->user_data = 11;
	sqe = sqe_get();
	io_uring_prep_nop(sqe);
	sqe->user_data = 12;
	submit(2);
	reap_one(0);
	reap_one(0);

	/* POLL_ADD: len must be 0 in 5.6; IORING_POLL_ADD_MULTI is 5.13. */
	note("poll multishot on a pipe with data");
	int p[2];
	if (pipe(p) || write(p[1], "x", 1) != 1)
		die("pipe");
	sqe = sqe_get();
	io_uring_prep_poll_multishot(sqe, p[0], POLLIN);
	sqe->user_data = 13;
	submit(1);
	reap_one(0);
	cancel(13, 1, 0);
	close(p[0]);
	close(p[1]);

	/* Fields 5.6 checks that later kernels gave a meaning, and fields 5.6
	 * never reads that later kernels check: a cancel's len (the opcode to
	 * match, 6.6), the upper poll32_events bits of a POLL_REMOVE (5.13),
	 * a read's attr_type_mask (6.15). */
	note("cancel with len 1; poll remove with upper event bits; read with an unknown attribute");
	sqe = sqe_get();
	io_uring_prep_cancel64(sqe, 4321, 0);
	sqe->len = 1;
	sqe->user_data = 14;
	submit(1);
	reap_one(0);
	sqe = sqe_get();
	io_uring_prep_poll_remove(sqe, 4321);
	sqe->poll32_events = 1u << 20;
	sqe->user_data = 15;
	submit(1);
	reap_one(0);
	if (pipe(p) || write(p[1], "yz", 2) != 2)
		die("pipe");
	sqe = sqe_get();
	io_uring_prep_read(sqe, p[0], rb, sizeof(rb), 0);
	/* attr_type_mask: the second 64 bits after addr3 in newer headers. */
	memcpy((char *)&sqe->addr3 + 8, &(unsigned long long){ 1ull << 63 }, 8);
	sqe->user_data = 16;
	submit(1);
	reap_one(0);
	close(p[0]);
	close(p[1]);

	io_uring_queue_exit(&ring);
	return 0;
}
