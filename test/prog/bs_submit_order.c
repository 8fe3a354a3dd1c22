/*
 * Where a submission stops, and what an SQE bufsel acts on answers, when the
 * kernel's prep checks fail: each line is the kernel's (6.18).
 * - io_recvmsg_prep checks the ioprio flags and optlen before the file is
 *   looked at (-EINVAL, not -ENOTSOCK), and such an SQE stops the batch;
 *   io_send_setup checks a SEND's destination address length.
 * - A chain a member of which fails at prep fails whole at submission: its
 *   PROVIDE_BUFFERS head never runs (-ECANCELED, the group stays empty),
 *   also when the failing member is one the kernel runs (ASYNC_CANCEL).
 * - An invalid SQ array index behind an SQE that stops the batch is not
 *   consumed (the kernel never gets there).
 * - A buffer-select READ on a closed fd with a garbage address fails on the
 *   fd at issue (-EBADF), not on the address; a fixed-file index past the
 *   ring's table is -EBADF before a buffer is selected, and takes none.
 * - io_prep_rw reads a PI attribute at prep (-EFAULT at NULL); io_init_req
 *   checks the personality before PROVIDE_BUFFERS' own prep.
 * - A SEND takes a legacy buffer whole (io_buffers_select): len caps nothing.
 * - A READ on the ring's own fd polls the ring (io_file_supports_nowait:
 *   io_uring_poll is readable while the CQ the program sees is not empty),
 *   so with the CQ reaped it waits, on a DEFER_TASKRUN ring too, and fails
 *   with -EINVAL (a buffer consumed) once a CQE is there.
 * - A multishot receive issued from io-wq (IOSQE_ASYNC, or the head of a
 *   chain the batch leaves open: io_queue_sqe_fallback) on a file that
 *   cannot poll fails with -EBADFD (io_wq_submit_work), not -ENOTSOCK (a
 *   drained one too: io_init_req forces it to io-wq); on
 *   a pipe it polls first, and fails with -ENOTSOCK when data comes; on
 *   the ring's own fd (neither O_NONBLOCK nor FMODE_NOWAIT) it is one
 *   attempt, -ENOTSOCK at once.
 *   It polls before any attempt: on an idle socket with no such group, with
 *   MSG_DONTWAIT too, it waits, and fails with -ENOBUFS when data comes.
 * - IOSQE_CQE_SKIP_SUCCESS turns IOSQE_IO_DRAIN off for the ring only on an
 *   SQE past io_init_req's opcode, flag and buffer-select checks: after a
 *   NOP with it and an unknown flag, or with BUFFER_SELECT, a drained
 *   PROVIDE_BUFFERS still runs; after a NOP with it, it fails with
 *   -EOPNOTSUPP.
 * - A chain fails whole when a member the kernel runs fails its prep: a
 *   READ or RECV whose range is not the user's, a READV whose iovec cannot
 *   be read or has a negative length, a RECVMSG whose msghdr cannot be read
 *   or has too many iovecs, a SEND whose length is negative as an int
 *   (-EFAULT, -EINVAL, -EMSGSIZE): its
 *   PROVIDE_BUFFERS head never runs, and the batch stops there.
 * - io_msg_copy_hdr never reads msg_flags: a msghdr whose last word lies in
 *   an inaccessible page is no fault (a buffer-select RECVMSG on a group
 *   that does not exist is -ENOBUFS).
 * - A receive with IORING_RECVSEND_POLL_FIRST polls only on a file that
 *   can poll and, issued from io-wq, only with IOSQE_ASYNC
 *   (io_wq_submit_work's needs_poll); as the head of a chain the batch
 *   leaves open, or on a file that cannot poll (inline too), its first
 *   attempt's -EAGAIN is final, no buffer taken.
 * - SQEs after one that stops the batch are not consumed, and nothing of
 *   theirs happens: a buffer-select READ with IOSQE_CQE_SKIP_SUCCESS there
 *   takes no buffer and turns drains off only when it is submitted.
 * - A MSG_WAITALL RECV whose datagram is cut to the buffer fails (io_recv
 *   checks MSG_TRUNC): with IOSQE_CQE_SKIP_SUCCESS it posts its CQE, the
 *   bytes copied and the buffer.
 * - A multishot RECV on a datagram socket retries at once after a CQE: a
 *   group it emptied ends it with -ENOBUFS, though a PROVIDE_BUFFERS behind
 *   it in the same batch refills the group a moment later.
 * - A REMOVE_BUFFERS behind a chain that fails at prep posts its CQE with
 *   the batch's, before the chain's members (io_fail_links runs them as
 *   task work); a drained PROVIDE_BUFFERS with IOSQE_BUFFER_SELECT once
 *   drains are off fails with -EOPNOTSUPP, and a SEND with POLL_FIRST and
 *   MSG_DONTWAIT with -EAGAIN before it selects a buffer.
 * - A drained multishot RECV that waits holds every later request: the
 *   drain is the kernel's to keep, not only the receive's first step.
 * - A chain member with IOSQE_CQE_SKIP_SUCCESS turns drains off for the
 *   members after it: a drained one fails the chain at submission.
 * - A request issued from io-wq selects its buffer when a worker issues it,
 *   after the submitting task went through the rest of the batch: an
 *   IOSQE_ASYNC READ leaves the group's first buffer to an inline READ
 *   behind it, and finds the buffer a PROVIDE_BUFFERS behind it gave.
 * - A REMOVE_BUFFERS that takes buffers behind a chain that fails at issue
 *   posts its CQE with the batch, before the chain's cancelled members.
 * - A drain on a chain's member drains the chain's head and sends it to
 *   io-wq (io_init_drain), whose worker runs the members after it: a SEND
 *   with IORING_RECVSEND_POLL_FIRST there fails with -EAGAIN.
 * - An IOSQE_ASYNC READ selects after the batch, which ends at an SQE that
 *   fails at prep: a READ behind that SQE, not taken, leaves the group's
 *   first buffer to the worker.
 * - An SQE that gets to io_init_req's drain check turns the ring's drain on
 *   even if its prep fails; the next SQE, forced to io-wq, is released at
 *   once when nothing else is in flight, and turns the drain off: a READ
 *   behind it runs inline and selects first.
 * - A receive the kernel runs inline gives a buffer it got no data into
 *   back before the next SQE selects (a fault on the buffer, an end of
 *   file): a READ behind it in the batch takes that buffer.
 * - A PROVIDE_BUFFERS or REMOVE_BUFFERS the kernel issues from io-wq (with
 *   IOSQE_ASYNC, or released at once from a drain an SQE before it left on)
 *   acts after the batch: a READ behind the PROVIDE_BUFFERS finds its group
 *   empty, and the REMOVE_BUFFERS removes what a PROVIDE_BUFFERS behind it
 *   gave.
 * - On a DEFER_TASKRUN ring an enter that takes fewer SQEs than to_submit
 *   returns at once, GETEVENTS or not: a failed chain's member, whose CQE
 *   io_fail_links posts from task work, is there only after the next
 *   enter that waits.
 */
#include "test/prog/bs_bufs.h"

#include <sys/ioctl.h>
#include <sys/mman.h>

static struct io_uring ring;

static struct io_uring_sqe *recv_sel(int fd, unsigned bgid, unsigned ioprio, unsigned long long ud)
{
	struct io_uring_sqe *sqe = prep_recv_sel(&ring, fd, 0, 0, bgid, ud);
	sqe->ioprio = (__u16)ioprio;
	return sqe;
}

static void nop(unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = ud;
}

/* A NOP with more SQE flags (nop_cqes: the CQEs it gives), then a drained
 * PROVIDE_BUFFERS of bid into group 7: did the NOP turn drains off? */
static void drain_after_nop(const struct arena *g, uint8_t flags, unsigned long long nop_ud, unsigned nop_cqes,
			    unsigned bid, unsigned long long ud)
{
	nop(nop_ud);
	struct io_uring_sqe *sqe = &ring.sq.sqes[(ring.sq.sqe_tail - 1) & *ring.sq.kring_mask];
	sqe->flags |= flags;
	submit_expect(&ring, 1);
	if (nop_cqes)
		reap_show(&ring, nop_cqes, NULL);
	sqe = get_sqe(&ring);
	prep_provide_arena(sqe, g, 7, bid, 1);
	sqe->flags |= IOSQE_IO_DRAIN;
	run_one(&ring, sqe, ud, NULL);
}

/* A drained REMOVE_BUFFERS that fails its prep (off set), alone: the kernel's
 * drain is on after it. */
static void drain_left_on(unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_remove_buffers(sqe, 1, 27);
	sqe->off = 1;
	sqe->flags |= IOSQE_IO_DRAIN;
	sqe->user_data = ud;
	submit_expect(&ring, 1);
	reap_show(&ring, 1, NULL);
}

/* In one batch, buffer-select READs of group bgid on pipes a and b (each
 * with data), the first with more SQE flags: which buffer does each get? */
static void read_pair(const int a[2], const int b[2], const struct arena *w, unsigned bgid, uint8_t first_flags,
		      unsigned long long ud)
{
	write_all(a[1], "first", 5);
	write_all(b[1], "second", 6);
	prep_read_sel(&ring, a[0], 0, bgid, 0, ud)->flags |= first_flags;
	prep_read_sel(&ring, b[0], 0, bgid, 0, ud + 1);
	submit_expect(&ring, 2);
	reap_show_sorted(&ring, 2, w);
}

static void show_submit(const char *what)
{
	unsigned head0 = *ring.sq.khead;
	int ret = io_uring_submit(&ring);
	note("%s: submit %d, head +%u, dropped %u", what, ret, *ring.sq.khead - head0, *ring.sq.kdropped);
}

int main(void)
{
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int sv[2], p[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) || pipe(p))
		die("socketpair/pipe: %s", strerror(errno));
	write_all(sv[1], "hello", 5);
	struct arena g = arena_new(16, 4);

	note("NOP, RECV on a pipe with ioprio 0x8, NOP: the RECV fails at prep and stops the batch");
	nop(1);
	recv_sel(p[0], 1, 0x8, 2);
	nop(3);
	show_submit("batch");
	reap_show_sorted(&ring, 2, NULL);
	show_submit("rest");
	reap_show(&ring, 1, NULL);

	note("RECV with optlen, RECVMSG bundle, SEND with a 200-byte address");
	struct io_uring_sqe *sqe = recv_sel(sv[0], 1, 0, 4);
	sqe->splice_fd_in = 1;
	run_one(&ring, sqe, 4, NULL);
	struct msghdr mh = { 0 };
	sqe = get_sqe(&ring);
	io_uring_prep_recvmsg(sqe, p[0], &mh, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 1;
	sqe->ioprio = 1U << 4;
	run_one(&ring, sqe, 5, NULL);
	struct sockaddr_storage ss = { 0 };
	sqe = get_sqe(&ring);
	io_uring_prep_send(sqe, sv[0], NULL, 0, 0);
	io_uring_prep_send_set_addr(sqe, (const struct sockaddr *)&ss, 200);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 1;
	run_one(&ring, sqe, 6, NULL);

	note("PROVIDE_BUFFERS linked to a RECV that fails at prep: neither runs");
	sqe = get_sqe(&ring);
	prep_provide_arena(sqe, &g, 1, 0, 4);
	sqe->flags |= IOSQE_IO_LINK;
	sqe->user_data = 7;
	recv_sel(sv[0], 1, 0x8, 8);
	show_submit("chain");
	reap_show_sorted(&ring, 2, NULL);
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 1, 0, 9), 9, NULL);

	note("RECV that fails at prep, then an invalid SQ array entry");
	unsigned tail = *ring.sq.ktail;
	recv_sel(p[0], 1, 0x8, 10);
	nop(11);
	unsigned slot = (tail + 1) & *ring.sq.kring_mask;
	unsigned keep = ring.sq.array[slot];
	ring.sq.array[slot] = 1000;
	show_submit("array");
	reap_show(&ring, 1, NULL);
	ring.sq.array[slot] = keep;
	io_uring_sqe_set_data64(&ring.sq.sqes[keep], 11);
	show_submit("after");
	reap_show(&ring, 1, NULL);

	provide(&ring, &g, 2, 0, 2, 12);
	note("buffer-select READ on a closed fd, garbage address");
	sqe = prep_read_sel(&ring, 200, 0, 2, 0, 13);
	sqe->addr = 0x6c82d87d9e8068d4ULL;
	run_one(&ring, sqe, 13, NULL);
	note("buffer-select READ and RECV on fixed file 5, no file table");
	sqe = prep_read_sel(&ring, 5, 0, 2, 0, 14);
	sqe->flags |= IOSQE_FIXED_FILE;
	run_one(&ring, sqe, 14, NULL);
	sqe = recv_sel(5, 2, 0, 15);
	sqe->flags |= IOSQE_FIXED_FILE;
	run_one(&ring, sqe, 15, NULL);
	note("the group still has both buffers");
	run_one(&ring, prep_recv_sel(&ring, sv[0], 0, 0, 2, 16), 16, &g);
	write_all(sv[1], "again", 5);
	run_one(&ring, prep_recv_sel(&ring, sv[0], 0, 0, 2, 17), 17, &g);

	note("buffer-select READ with a PI attribute at NULL, then a NOP: -EFAULT at prep stops the batch");
	sqe = prep_read_sel(&ring, p[0], 0, 2, 0, 18);
	uint64_t pi = 1;	/* attr_type_mask = IORING_RW_ATTR_FLAG_PI, attr_ptr (addr3) = NULL */
	memcpy((char *)sqe + 56, &pi, sizeof(pi));
	nop(19);
	show_submit("pi");
	reap_show(&ring, 1, NULL);
	show_submit("rest");
	reap_show(&ring, 1, NULL);

	note("PROVIDE_BUFFERS with an unregistered personality and a huge count: the personality first");
	sqe = get_sqe(&ring);
	prep_provide_arena(sqe, &g, 3, 0, 1);
	sqe->fd = 1 << 30;
	sqe->personality = 77;
	run_one(&ring, sqe, 20, NULL);

	note("PROVIDE_BUFFERS linked to an ASYNC_CANCEL with a flag the kernel lacks, then a NOP");
	sqe = get_sqe(&ring);
	prep_provide_arena(sqe, &g, 5, 0, 1);
	sqe->flags |= IOSQE_IO_LINK;
	sqe->user_data = 23;
	sqe = get_sqe(&ring);
	io_uring_prep_cancel64(sqe, 0x1234, 0x80);
	sqe->user_data = 24;
	nop(25);
	show_submit("cancel chain");
	reap_show_sorted(&ring, 2, NULL);
	show_submit("rest");
	reap_show(&ring, 1, NULL);
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 5, 0, 26), 26, NULL);

	note("SEND of len 1 from a selected 16-byte legacy buffer: the whole buffer goes");
	provide(&ring, &g, 4, 2, 1, 21);
	memcpy(arena_buf(&g, 2), "0123456789abcdef", 16);
	sqe = get_sqe(&ring);
	io_uring_prep_send(sqe, sv[1], NULL, 1, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 4;
	run_one(&ring, sqe, 22, NULL);
	char got[32];
	ssize_t n = read(sv[0], got, sizeof(got));
	note("received %zd bytes", n);
	io_uring_queue_exit(&ring);

	ret = io_uring_queue_init(8, &ring, IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SINGLE_ISSUER);
	if (ret < 0)
		die("queue_init defer: %s", strerror(-ret));
	note("DEFER_TASKRUN ring: NOP reaped, then buffer-select READ and plain READ on the ring's own fd");
	provide(&ring, &g, 1, 0, 2, 27);
	nop(28);
	submit_expect(&ring, 1);
	reap_show(&ring, 1, NULL);
	prep_read_sel(&ring, ring.ring_fd, 0, 1, 0, 29);
	submit_expect(&ring, 1);
	expect_pending(&ring, "buffer-select READ on the ring fd");
	sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, ring.ring_fd, got, sizeof(got), 0);
	sqe->user_data = 30;
	submit_expect(&ring, 1);
	expect_pending(&ring, "READ on the ring fd");
	note("a NOP's CQE makes the ring readable: both READs fail");
	nop(31);
	submit_expect(&ring, 1);
	io_uring_get_events(&ring);	/* the READs' poll task work, with the NOP's CQE unreaped */
	reap_show_sorted(&ring, 3, NULL);
	io_uring_queue_exit(&ring);

	ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	provide(&ring, &g, 6, 0, 2, 32);
	int tf = open("/tmp", O_TMPFILE | O_RDWR, 0600);
	if (tf < 0)
		die("O_TMPFILE: %s", strerror(errno));
	write_all(tf, "abc", 3);
	note("multishot RECV and RECVMSG on a regular file: inline, linked at the batch's end, IOSQE_ASYNC, "
	     "IOSQE_IO_DRAIN");
	for (int k = 0; k < 8; k++) {
		if (k & 1) {
			sqe = get_sqe(&ring);
			io_uring_prep_recvmsg(sqe, tf, &mh, 0);
			sqe->flags |= IOSQE_BUFFER_SELECT;
			sqe->buf_group = 6;
		} else {
			sqe = prep_recv_sel(&ring, tf, 0, 0, 6, 0);
		}
		sqe->ioprio = IORING_RECV_MULTISHOT;
		sqe->flags |= k >= 6 ? IOSQE_IO_DRAIN : k >= 4 ? IOSQE_ASYNC : k >= 2 ? IOSQE_IO_LINK : 0;
		run_one(&ring, sqe, k < 6 ? 33 + (unsigned)k : 96 + (unsigned)k, NULL);
	}
	note("multishot RECV on an empty pipe with IOSQE_ASYNC: it polls, then fails when data comes");
	sqe = prep_recv_sel(&ring, p[0], 0, 0, 6, 39);
	sqe->ioprio = IORING_RECV_MULTISHOT;
	sqe->flags |= IOSQE_ASYNC;
	submit_expect(&ring, 1);
	expect_pending(&ring, "multishot RECV on a pipe from io-wq");
	write_all(p[1], "x", 1);
	reap_show(&ring, 1, NULL);
	note("multishot RECV on the ring's own fd with IOSQE_ASYNC: one attempt, -ENOTSOCK at once");
	sqe = prep_recv_sel(&ring, ring.ring_fd, 0, 0, 6, 170);
	sqe->ioprio = IORING_RECV_MULTISHOT;
	sqe->flags |= IOSQE_ASYNC;
	run_one(&ring, sqe, 170, NULL);
	note("the group still has both buffers");
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 6, 0, 40), 40, &g);
	run_one(&ring, prep_read_sel(&ring, tf, 0, 6, 0, 41), 41, &g);

	note("NOP with CQE_SKIP_SUCCESS and an unknown flag, then a drained PROVIDE_BUFFERS");
	drain_after_nop(&g, IOSQE_CQE_SKIP_SUCCESS | 0x80, 42, 1, 0, 43);
	note("NOP with CQE_SKIP_SUCCESS and BUFFER_SELECT, then a drained PROVIDE_BUFFERS");
	drain_after_nop(&g, IOSQE_CQE_SKIP_SUCCESS | IOSQE_BUFFER_SELECT, 46, 1, 2, 47);
	note("NOP with CQE_SKIP_SUCCESS alone, then a drained PROVIDE_BUFFERS");
	drain_after_nop(&g, IOSQE_CQE_SKIP_SUCCESS, 44, 0, 1, 45);
	note("drains off, a PROVIDE_BUFFERS with IOSQE_BUFFER_SELECT and IOSQE_IO_DRAIN, alone and linking "
	     "at the batch's end: -EOPNOTSUPP either way");
	for (uint8_t link = 0; link <= IOSQE_IO_LINK; link += IOSQE_IO_LINK) {
		sqe = get_sqe(&ring);
		prep_provide_arena(sqe, &g, 7, 3, 1);
		sqe->flags |= IOSQE_BUFFER_SELECT | IOSQE_IO_DRAIN | link;
		run_one(&ring, sqe, link ? 101 : 93, NULL);
	}
	io_uring_queue_exit(&ring);

	ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	struct iovec bad_iov = { .iov_base = got, .iov_len = (size_t)-2 };
	static const char *const bad_member[] = {
		"READ into a kernel address", "READV with an unreadable iovec", "READV with a negative length",
		"RECV into a kernel address", "RECVMSG with an unreadable msghdr",
		"RECVMSG with 2000 iovecs", "SEND with a negative length",
	};
	struct msghdr many = { .msg_iov = &bad_iov, .msg_iovlen = 2000 };
	for (int k = 0; k < 7; k++) {
		unsigned long long ud = k < 6 ? 46 + 3 * (unsigned)k : 104;
		note("PROVIDE_BUFFERS linked to a %s, then a NOP", bad_member[k]);
		sqe = get_sqe(&ring);
		prep_provide_arena(sqe, &g, 8, 0, 1);
		sqe->flags |= IOSQE_IO_LINK;
		sqe->user_data = ud;
		sqe = get_sqe(&ring);
		if (k == 0)
			io_uring_prep_read(sqe, p[0], (void *)0xffff888000001000ULL, 16, 0);
		else if (k < 3)
			io_uring_prep_readv(sqe, p[0], k == 1 ? (struct iovec *)8 : &bad_iov, 1, 0);
		else if (k == 3)
			io_uring_prep_recv(sqe, sv[0], (void *)0xffff888000001000ULL, 16, 0);
		else if (k < 6)
			io_uring_prep_recvmsg(sqe, sv[0], k == 4 ? (struct msghdr *)8 : &many, 0);
		else
			io_uring_prep_send(sqe, sv[0], got, 0x98987590u, 0);
		sqe->user_data = ud + 1;
		nop(ud + 2);
		show_submit("chain");
		reap_show_sorted(&ring, 2, NULL);
		show_submit("rest");
		reap_show(&ring, 1, NULL);
	}
	note("group 8 is empty");
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 8, 0, 65), 65, NULL);
	note("buffer-select RECVMSG, msg_flags in a PROT_NONE page, no such group");
	char *pages = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pages == MAP_FAILED || mprotect(pages + 4096, 4096, PROT_NONE))
		die("mmap: %s", strerror(errno));
	memset(pages + 4096 - 48, 0, 48);
	sqe = get_sqe(&ring);
	io_uring_prep_recvmsg(sqe, sv[0], (struct msghdr *)(pages + 4096 - 48), 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 99;
	run_one(&ring, sqe, 66, NULL);

	note("multishot RECV from io-wq on an idle socket, group 98 never provided: it polls first");
	sqe = prep_recv_sel(&ring, sv[0], 0, 0, 98, 73);
	sqe->ioprio = IORING_RECV_MULTISHOT;
	sqe->flags |= IOSQE_ASYNC;
	submit_expect(&ring, 1);
	expect_pending(&ring, "multishot RECV, IOSQE_ASYNC, idle socket, no group");
	write_all(sv[1], "z", 1);
	reap_show(&ring, 1, NULL);
	if (read(sv[0], got, sizeof(got)) < 0)
		die("read: %s", strerror(errno));
	note("the same with MSG_DONTWAIT, the head of a chain the batch leaves open");
	sqe = prep_recv_sel(&ring, sv[0], 0, MSG_DONTWAIT, 98, 74);
	sqe->ioprio = IORING_RECV_MULTISHOT;
	sqe->flags |= IOSQE_IO_LINK;
	submit_expect(&ring, 1);
	expect_pending(&ring, "multishot RECV, MSG_DONTWAIT, open chain, idle socket, no group");
	write_all(sv[1], "z", 1);
	reap_show(&ring, 1, NULL);
	if (read(sv[0], got, sizeof(got)) < 0)
		die("read: %s", strerror(errno));
	nop(75);
	submit_expect(&ring, 1);
	reap_show(&ring, 1, NULL);
	note("multishot RECV from io-wq on an empty pipe, no group: -ENOTSOCK when data comes");
	sqe = prep_recv_sel(&ring, p[0], 0, MSG_DONTWAIT, 98, 76);
	sqe->ioprio = IORING_RECV_MULTISHOT;
	sqe->flags |= IOSQE_ASYNC;
	submit_expect(&ring, 1);
	expect_pending(&ring, "multishot RECV, IOSQE_ASYNC, empty pipe, no group");
	write_all(p[1], "y", 1);
	reap_show(&ring, 1, NULL);
	io_uring_queue_exit(&ring);

	ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int es[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, es))
		die("socketpair: %s", strerror(errno));
	provide(&ring, &g, 9, 0, 2, 67);
	note("RECV with POLL_FIRST from io-wq: linked at the batch's end on an empty socket, "
	     "and with IOSQE_ASYNC on a regular file");
	sqe = recv_sel(es[0], 9, IORING_RECVSEND_POLL_FIRST, 68);
	sqe->flags |= IOSQE_IO_LINK;
	run_one(&ring, sqe, 68, NULL);
	sqe = recv_sel(tf, 9, IORING_RECVSEND_POLL_FIRST, 69);
	sqe->flags |= IOSQE_ASYNC;
	run_one(&ring, sqe, 69, NULL);
	note("RECV with POLL_FIRST on a regular file, inline: the file cannot poll");
	run_one(&ring, recv_sel(tf, 9, IORING_RECVSEND_POLL_FIRST, 72), 72, NULL);
	note("RECVMSG with POLL_FIRST linked at the batch's end on an empty socket");
	struct iovec one = { 0 };
	struct msghdr mh2 = { .msg_iov = &one, .msg_iovlen = 1 };
	sqe = get_sqe(&ring);
	io_uring_prep_recvmsg(sqe, es[0], &mh2, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT | IOSQE_IO_LINK;
	sqe->buf_group = 9;
	sqe->ioprio = IORING_RECVSEND_POLL_FIRST;
	run_one(&ring, sqe, 70, NULL);
	note("RECV with POLL_FIRST and IOSQE_ASYNC on an empty socket: it polls, and receives when data comes");
	sqe = recv_sel(es[0], 9, IORING_RECVSEND_POLL_FIRST, 71);
	sqe->flags |= IOSQE_ASYNC;
	submit_expect(&ring, 1);
	expect_pending(&ring, "RECV with POLL_FIRST from io-wq on a socket");
	write_all(es[1], "hi", 2);
	reap_show(&ring, 1, &g);
	close(es[0]);
	close(es[1]);
	close(tf);
	io_uring_queue_exit(&ring);

	ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	provide(&ring, &g, 10, 0, 3, 80);
	note("a batch the kernel stops at a failing RECV, before the ring's first IOSQE_CQE_SKIP_SUCCESS "
	     "(a buffer-select READ failing at issue): it is untouched, and its turn comes in the next");
	recv_sel(p[0], 10, 0x8, 81);
	sqe = prep_read_sel(&ring, sv[0], 0, 10, 0, 82);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	sqe->rw_flags = 0x08000000;	/* no RWF_ flag: -EOPNOTSUPP at issue, a buffer taken */
	show_submit("batch");
	reap_show(&ring, 1, NULL);
	show_submit("rest");
	reap_show(&ring, 1, NULL);
	note("its skip flag turned drains off then, not before: a drained PROVIDE_BUFFERS fails");
	sqe = get_sqe(&ring);
	prep_provide_arena(sqe, &g, 10, 3, 1);
	sqe->flags |= IOSQE_IO_DRAIN;
	run_one(&ring, sqe, 83, NULL);
	note("and the group's head is the next bid");
	write_all(sv[1], "ok", 2);
	run_one(&ring, prep_read_sel(&ring, sv[0], 2, 10, 0, 84), 84, &g);

	note("RECV with MSG_WAITALL and IOSQE_CQE_SKIP_SUCCESS on datagrams into a 16-byte buffer: "
	     "one of 40 bytes is cut and fails (a CQE), one of 16 succeeds (none), one of 5 is short and fails");
	int dg[2];
	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, dg))
		die("socketpair: %s", strerror(errno));
	provide(&ring, &g, 11, 0, 3, 85);
	static const char long_msg[40] = "a datagram longer than the buffer is";
	write_all(dg[1], long_msg, sizeof(long_msg));
	write_all(dg[1], "exactly 16 bytes", 16);
	write_all(dg[1], "short", 5);
	for (int i = 0; i < 3; i++) {
		sqe = prep_recv_sel(&ring, dg[0], 0, MSG_WAITALL, 11, 86 + (unsigned)i);
		sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	}
	nop(89);
	submit_expect(&ring, 4);
	reap_show(&ring, 3, &g);

	note("multishot RECV on datagrams with one buffer, and a PROVIDE behind it in the batch: "
	     "the retry after the first datagram finds the group empty (-ENOBUFS), the PROVIDE comes after");
	provide(&ring, &g, 12, 0, 1, 90);
	write_all(dg[1], "one", 3);
	write_all(dg[1], "two", 3);
	sqe = prep_recv_sel(&ring, dg[0], 0, 0, 12, 91);
	sqe->ioprio = IORING_RECV_MULTISHOT;
	sqe = get_sqe(&ring);
	prep_provide_arena(sqe, &g, 12, 1, 1);
	sqe->user_data = 92;
	submit_expect(&ring, 2);
	reap_show_sorted(&ring, 3, &g);
	close(dg[0]);
	close(dg[1]);

	note("a chain that fails at prep, then a REMOVE_BUFFERS of a group with no buffer, in one batch: "
	     "the chain's head and the REMOVE post with the batch, the chain's member after (task work)");
	sqe = recv_sel(p[0], 13, 0x8, 94);
	sqe->flags |= IOSQE_IO_LINK;
	nop(95);
	sqe = get_sqe(&ring);
	io_uring_prep_remove_buffers(sqe, 1, 13);
	sqe->user_data = 96;
	submit_expect(&ring, 3);
	reap_show(&ring, 3, NULL);

	note("SEND with IORING_RECVSEND_POLL_FIRST and MSG_DONTWAIT: -EAGAIN before any buffer is selected, "
	     "the group's buffer is still there for the next SEND, and a group that does not exist is no error");
	provide(&ring, &g, 14, 0, 1, 97);
	memcpy(arena_buf(&g, 0), "0123456789abcdef", 16);
	for (unsigned bgid = 14; bgid <= 15; bgid++) {
		sqe = get_sqe(&ring);
		io_uring_prep_send(sqe, sv[1], NULL, 0, MSG_DONTWAIT);
		sqe->flags |= IOSQE_BUFFER_SELECT;
		sqe->buf_group = (__u16)bgid;
		sqe->ioprio = IORING_RECVSEND_POLL_FIRST;
		run_one(&ring, sqe, 84 + bgid, NULL);
	}
	sqe = get_sqe(&ring);
	io_uring_prep_send(sqe, sv[1], NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 14;
	run_one(&ring, sqe, 100, NULL);
	io_uring_queue_exit(&ring);

	for (int k = 0; k < 2; k++) {
		ret = io_uring_queue_init(8, &ring, 0);
		if (ret < 0)
			die("queue_init: %s", strerror(-ret));
		note("a drained multishot RECV that waits (on %s), then a buffer-select READ on a group that "
		     "does not exist and a NOP: both wait behind it", k ? "an idle socket" : "a pipe's write end");
		provide(&ring, &g, 16, 0, 1, 107);
		int idle[2];
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, idle))
			die("socketpair: %s", strerror(errno));
		sqe = prep_recv_sel(&ring, k ? idle[0] : p[1], 0, 0, 16, 108);
		sqe->ioprio = IORING_RECV_MULTISHOT;
		sqe->flags |= IOSQE_IO_DRAIN;
		submit_expect(&ring, 1);
		prep_read_sel(&ring, sv[0], 0, 17, 0, 109);
		nop(110);
		submit_expect(&ring, 2);
		expect_pending(&ring, "READ and NOP behind the drain");
		io_uring_queue_exit(&ring);
		close(idle[0]);
		close(idle[1]);
	}

	ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	note("a chain: PROVIDE_BUFFERS with IOSQE_CQE_SKIP_SUCCESS, then a drained PROVIDE_BUFFERS, then a NOP: "
	     "the first member turned drains off, the second fails (-EOPNOTSUPP), the chain with it, the batch stops");
	sqe = get_sqe(&ring);
	prep_provide_arena(sqe, &g, 18, 0, 1);
	sqe->flags |= IOSQE_IO_LINK | IOSQE_CQE_SKIP_SUCCESS;
	sqe->user_data = 111;
	sqe = get_sqe(&ring);
	prep_provide_arena(sqe, &g, 18, 1, 1);
	sqe->flags |= IOSQE_IO_DRAIN;
	sqe->user_data = 112;
	nop(113);
	show_submit("chain");
	reap_show(&ring, 1, NULL);	/* the skip hides the cancelled head's CQE */
	show_submit("rest");
	reap_show(&ring, 1, NULL);
	note("group 18 is empty");
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 18, 0, 114), 114, NULL);
	io_uring_queue_exit(&ring);

	ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int a[2], b[2];
	if (pipe(a) || pipe(b))
		die("pipe: %s", strerror(errno));
	struct arena w = arena_new(8, 8);
	note("a READ with IOSQE_ASYNC, then an inline READ, in one batch: the inline one takes the first buffer "
	     "(a worker selects after the batch)");
	provide(&ring, &w, 19, 0, 2, 115);
	read_pair(a, b, &w, 19, IOSQE_ASYNC, 116);
	note("a READ with IOSQE_ASYNC on an empty group, then a PROVIDE_BUFFERS to it: the READ gets the buffer");
	write_all(a[1], "later", 5);
	prep_read_sel(&ring, a[0], 0, 20, 0, 118)->flags |= IOSQE_ASYNC;
	sqe = get_sqe(&ring);
	prep_provide_arena(sqe, &w, 20, 2, 1);
	sqe->user_data = 119;
	submit_expect(&ring, 2);
	reap_show_sorted(&ring, 2, &w);

	note("a READ_FIXED with no registered buffer linked to a REMOVE_BUFFERS, then a REMOVE_BUFFERS of 2 of "
	     "a group's 3, in one batch: the READ fails at issue, the second REMOVE posts with the batch, "
	     "the first, cancelled, after it (task work)");
	provide(&ring, &w, 23, 0, 3, 127);
	sqe = get_sqe(&ring);
	io_uring_prep_read_fixed(sqe, a[0], arena_buf(&w, 0), 4, 0, 0);
	sqe->flags |= IOSQE_IO_LINK;
	sqe->user_data = 128;
	sqe = get_sqe(&ring);
	io_uring_prep_remove_buffers(sqe, 1, 23);
	sqe->user_data = 129;
	sqe = get_sqe(&ring);
	io_uring_prep_remove_buffers(sqe, 2, 23);
	sqe->user_data = 130;
	submit_expect(&ring, 3);
	reap_show(&ring, 3, NULL);
	note("group 23 has bid 2 left");
	write_all(a[1], "left", 4);
	run_one(&ring, prep_read_sel(&ring, a[0], 0, 23, 0, 131), 131, &w);
	run_one(&ring, prep_read_sel(&ring, a[0], 0, 23, 0, 132), 132, &w);

	note("a chain: NOP, SEND with IORING_RECVSEND_POLL_FIRST, then a drained buffer-select READ: the drain "
	     "sends the chain's head to io-wq, whose worker runs the SEND too and fails it with -EAGAIN, "
	     "the READ cancelled, its buffer left");
	provide(&ring, &w, 24, 3, 1, 133);
	write_all(a[1], "drained", 7);
	nop(134);
	sqe = &ring.sq.sqes[(ring.sq.sqe_tail - 1) & *ring.sq.kring_mask];
	sqe->flags |= IOSQE_IO_LINK;
	sqe = get_sqe(&ring);
	io_uring_prep_send(sqe, sv[0], "poll", 4, 0);
	sqe->ioprio = IORING_RECVSEND_POLL_FIRST;
	sqe->flags |= IOSQE_IO_LINK;
	sqe->user_data = 135;
	prep_read_sel(&ring, a[0], 0, 24, 0, 136)->flags |= IOSQE_IO_DRAIN;
	submit_expect(&ring, 3);
	reap_show(&ring, 3, &w);
	note("group 24 still has bid 3");
	run_one(&ring, prep_read_sel(&ring, a[0], 0, 24, 0, 137), 137, &w);

	note("a READ with IOSQE_ASYNC, a RECV that fails at prep (the batch stops there), an inline READ: the "
	     "worker selects after the batch, and the READ the kernel did not take leaves it the first buffer");
	provide(&ring, &w, 25, 4, 2, 138);
	write_all(a[1], "first", 5);
	prep_read_sel(&ring, a[0], 0, 25, 0, 139)->flags |= IOSQE_ASYNC;
	recv_sel(a[0], 25, 0x8, 140);
	prep_read_sel(&ring, a[0], 0, 25, 0, 141);
	show_submit("stop");
	reap_show_sorted(&ring, 2, &w);
	write_all(a[1], "second", 6);
	show_submit("rest");
	reap_show(&ring, 1, &w);

	note("a drained REMOVE_BUFFERS that fails at prep leaves the kernel's drain on: the next READ goes to io-wq "
	     "(it selects after the batch), which turns the drain off, and the READ behind it runs inline first");
	provide(&ring, &w, 27, 6, 2, 150);
	drain_left_on(151);
	write_all(a[1], "0123456789abcdef", 16);
	prep_read_sel(&ring, a[0], 0, 27, 0, 152);
	prep_read_sel(&ring, a[0], 0, 27, 0, 153);
	submit_expect(&ring, 2);
	reap_show_sorted(&ring, 2, &w);

	note("a PROVIDE_BUFFERS with IOSQE_ASYNC, then a READ from its group, in one batch: the worker provides "
	     "after the batch, and the READ finds the group empty");
	write_all(a[1], "xyz", 3);
	sqe = get_sqe(&ring);
	prep_provide_arena(sqe, &w, 28, 2, 3);
	sqe->flags |= IOSQE_ASYNC;
	sqe->user_data = 154;
	prep_read_sel(&ring, a[0], 0, 28, 0, 155);
	submit_expect(&ring, 2);
	reap_show_sorted(&ring, 2, &w);
	int left = 0;
	if (ioctl(a[0], FIONREAD, &left) || (left && read(a[0], got, (size_t)left) != left))
		die("pipe: %s", strerror(errno));
	note("left in the pipe: %d", left);
	note("group 28 holds: %d", remove_bufs(&ring, 28, 10, 156));

	note("a drained REMOVE_BUFFERS that fails at prep leaves the drain on; a REMOVE_BUFFERS of group 29, "
	     "released to io-wq at once, then a PROVIDE_BUFFERS of it inline: the worker removes what it gave");
	drain_left_on(157);
	sqe = get_sqe(&ring);
	io_uring_prep_remove_buffers(sqe, 2, 29);
	sqe->user_data = 158;
	sqe = get_sqe(&ring);
	prep_provide_arena(sqe, &w, 29, 5, 3);
	sqe->user_data = 159;
	submit_expect(&ring, 2);
	reap_show_sorted(&ring, 2, NULL);
	note("group 29 holds: %d", remove_bufs(&ring, 29, 10, 160));

	note("a RECV whose buffer faults (a datagram waiting), then a READ from the same group, in one batch: "
	     "the RECV gives its buffer back before the READ selects, and the READ faults on it too");
	int d[2];
	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, d))
		die("socketpair: %s", strerror(errno));
	char *guard = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (guard == MAP_FAILED || mprotect(guard + 4096, 4096, PROT_NONE))
		die("mmap: %s", strerror(errno));
	sqe = get_sqe(&ring);
	io_uring_prep_provide_buffers(sqe, guard + 4096, 16, 1, 26, 0);
	run_one(&ring, sqe, 144, NULL);
	sqe = get_sqe(&ring);
	io_uring_prep_provide_buffers(sqe, guard, 16, 1, 26, 1);
	run_one(&ring, sqe, 145, NULL);
	write_all(d[1], "dgram", 5);
	write_all(a[1], "piped", 5);
	recv_sel(d[0], 26, 0, 146);
	prep_read_sel(&ring, a[0], 0, 26, 0, 147);
	submit_expect(&ring, 2);
	reap_show_sorted(&ring, 2, NULL);
	note("the datagram is gone: %s", yesno(recv(d[0], got, sizeof(got), MSG_DONTWAIT) < 0));
	note("a RECV at end of file, then a READ from the same group: the READ takes the buffer the RECV gave back");
	int e[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, e))
		die("socketpair: %s", strerror(errno));
	shutdown(e[1], SHUT_WR);
	recv_sel(e[0], 26, 0, 148);
	prep_read_sel(&ring, a[0], 0, 26, 0, 149);
	submit_expect(&ring, 2);
	reap_show_sorted(&ring, 2, NULL);
	note("piped bytes: %s", guard);
	io_uring_queue_exit(&ring);

	ret = io_uring_queue_init(8, &ring, IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SINGLE_ISSUER);
	if (ret < 0)
		die("queue_init defer: %s", strerror(-ret));
	note("DEFER_TASKRUN ring: a chain of a NOP and a RECV that fails at prep, entered with GETEVENTS and "
	     "to_submit 4: the kernel takes 2 and returns, its task work (the RECV's CQE) not run");
	nop(142);
	sqe = &ring.sq.sqes[(ring.sq.sqe_tail - 1) & *ring.sq.kring_mask];
	sqe->flags |= IOSQE_IO_LINK;
	recv_sel(a[0], 25, 0x8, 143);
	__atomic_store_n(ring.sq.ktail, ring.sq.sqe_tail, __ATOMIC_RELEASE);
	ring.sq.sqe_head = ring.sq.sqe_tail;
	note("enter: %ld", raw_enter(ring.ring_fd, 4, 0, IORING_ENTER_GETEVENTS, NULL, 0));
	unsigned ready = io_uring_cq_ready(&ring);
	note("ready: %u", ready);
	reap_show(&ring, ready, NULL);
	note("get_events: %d", io_uring_get_events(&ring));
	ready = io_uring_cq_ready(&ring);
	note("ready: %u", ready);
	reap_show(&ring, ready, NULL);
	io_uring_queue_exit(&ring);
	return 0;
}
