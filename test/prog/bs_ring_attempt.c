/*
 * The head entry of a buffer ring decides a request's first attempt, data or
 * not, before the request waits for its file:
 *  - a READ from an empty pipe whose head entry is at address 0 fails with
 *    -ENOBUFS, one whose entry lies past the user address space with
 *    -EFAULT, each with the entry left at the head (no F_BUFFER);
 *  - with data there, the same entry past the user address space is still
 *    -EFAULT, and the SQE behind it in the submission runs: the submit
 *    counts both;
 *  - a READ from a regular file with such an entry takes it (committed at
 *    selection): -EFAULT with F_BUFFER;
 *  - an empty entry makes a READ from an empty pipe a read of nothing: res
 *    0 at once, the entry taken;
 *  - a READ at an offset on a socket is -ESPIPE, the entry left;
 *  - a RECV from an idle socket whose head entry is past the user address
 *    space is -EFAULT at once; a RECVMSG whose head entry is at address 0
 *    names it in its -ENOBUFS CQE, yet leaves it at the head;
 *  - a READ that waited keeps the length its first attempt took from the
 *    head entry of that time (4), whichever entry it gets;
 *  - an entry of 2^31 bytes or more: a READ from a regular file reads into
 *    it, names it, and leaves it at the head (the kernel's commit takes the
 *    length for a negative int); a RECVMSG into it on an idle stream socket
 *    ends at once with res 0 (sock_rcvlowat takes the length for a negative
 *    int), and with data there reads it.
 * Run natively, with the kernel keeping the rings, and with bufsel keeping
 * them (BUFSEL_RINGS=emulate, BUFSEL_KERNEL=5.15): every run prints the same.
 */
#include "test/prog/bs_rings.h"

#include <sys/socket.h>

#define ENTRIES 8
#define KERNEL_ADDR 0xffff888000000000ull

static struct io_uring ring;
static struct io_uring_buf_ring *br;

static void show_status(void)
{
	show_status_on(ring.ring_fd, 1);
}

/* One entry at the tail: any address and length, the program's own. */
static void add_raw(uint64_t addr, uint32_t len, unsigned short bid)
{
	io_uring_buf_ring_add(br, (void *)(uintptr_t)addr, len, bid, io_uring_buf_ring_mask(ENTRIES), 0);
	io_uring_buf_ring_advance(br, 1);
}

/* A RECVMSG selecting from the ring, into the iovec mh names. */
static struct io_uring_sqe *prep_recvmsg_sel(int fd, struct msghdr *mh)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_recvmsg(sqe, fd, mh, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 1;
	return sqe;
}

/* Takes the head entry off with a read of one byte, so the next case starts
 * from an entry of its own. */
static void consume_head(int p[2], unsigned long long ud, const struct arena *a)
{
	write_all(p[1], "x", 1);
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 1, 0, 0), ud, a);
}

int main(void)
{
	int ret = io_uring_queue_init(16, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int p[2];
	if (pipe(p) < 0)
		die("pipe: %s", strerror(errno));
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		die("socketpair: %s", strerror(errno));
	br = ring_new(ring.ring_fd, 1, ENTRIES);
	struct arena a = arena_new(16, 16);

	note("an entry at address 0: READ on an empty pipe");
	add_raw(0, 16, 10);
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 1, 0, 0), 1, &a);
	show_status();
	note("the same with RWF_NOWAIT");
	struct io_uring_sqe *nw = prep_read_sel(&ring, p[0], 0, 1, 0, 0);
	nw->rw_flags = RWF_NOWAIT;
	run_one(&ring, nw, 2, &a);
	show_status();
	note("RECVMSG with data names it and leaves it");
	write_all(sv[1], "msg", 3);
	struct iovec iov = { 0 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	run_one(&ring, prep_recvmsg_sel(sv[0], &mh), 3, &a);
	show_status();
	drain(sv[0], "the RECVMSG's data");
	note("from a regular file it is taken");
	int f = temp_file("regular file contents");
	run_one(&ring, prep_read_sel(&ring, f, 0, 1, 0, 0), 4, &a);
	show_status();

	note("an entry past the user address space: READ on an empty pipe");
	add_raw(KERNEL_ADDR, 16, 11);
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 1, 0, 0), 5, &a);
	show_status();
	note("RECV on an idle socket");
	run_one(&ring, prep_recv_sel(&ring, sv[0], 0, 0, 1, 0), 6, &a);
	show_status();
	note("READ with data, then a NOP, in one submit");
	write_all(p[1], "data", 4);
	prep_read_sel(&ring, p[0], 0, 1, 0, 7);
	struct io_uring_sqe *nop = get_sqe(&ring);
	io_uring_prep_nop(nop);
	nop->user_data = 8;
	note("submit: %d", io_uring_submit(&ring));
	reap_show_sorted(&ring, 2, &a);
	show_status();
	empty_pipe(p[0], "the READ's data");
	note("READ from a regular file takes it");
	run_one(&ring, prep_read_sel(&ring, f, 0, 1, 0, 0), 9, &a);
	show_status();

	note("an empty entry: READ on an empty pipe reads nothing, at once");
	add_raw((uintptr_t)arena_buf(&a, 12), 0, 12);
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 1, 0, 0), 10, &a);
	show_status();

	note("READ at offset 3 on a socket");
	ring_add(br, ENTRIES, &a, 13, 1);
	run_one(&ring, prep_read_sel(&ring, sv[0], 0, 1, 3, 0), 11, &a);
	show_status();
	note("with data there");
	write_all(sv[1], "sock", 4);
	run_one(&ring, prep_read_sel(&ring, sv[0], 0, 1, 3, 0), 12, &a);
	show_status();
	drain(sv[0], "the socket's data");
	consume_head(p, 13, &a);

	note("a READ that waited keeps the length of the entry its attempt saw");
	add_raw((uintptr_t)arena_buf(&a, 1), 4, 1);
	ring_add(br, ENTRIES, &a, 2, 1);
	prep_read_sel(&ring, p[0], 0, 1, 0, 14);
	submit_expect(&ring, 1);
	expect_pending(&ring, "READ on an empty pipe");
	write_all(sv[1], "gone", 4);
	run_one(&ring, prep_recv_sel(&ring, sv[0], 0, 0, 1, 0), 15, &a);
	write_all(p[1], "0123456789", 10);
	reap_show(&ring, 1, &a);
	show_status();
	empty_pipe(p[0], "the rest of the pipe");

	note("an entry of 2^31 bytes and more, READ from a regular file");
	char *big = arena_buf(&a, 3);
	add_raw((uintptr_t)big, 0x80000010u, 3);
	run_one(&ring, prep_read_sel(&ring, f, 0, 1, 0, 0), 16, NULL);
	note("read \"%.*s\"", 12, big);
	show_status();
	note("and again: the same entry");
	memset(big, 0, 16);
	run_one(&ring, prep_read_sel(&ring, f, 8, 1, 8, 0), 17, NULL);
	note("read \"%.*s\"", 8, big);
	show_status();
	note("RECVMSG on an idle stream socket into such an entry ends at once");
	add_raw((uintptr_t)big, 0x80000010u, 4);
	struct iovec whole = { 0 };
	struct msghdr wm = { .msg_iov = &whole, .msg_iovlen = 1 };
	run_one(&ring, prep_recvmsg_sel(sv[0], &wm), 18, NULL);
	show_status();
	note("with data it reads it");
	write_all(sv[1], "stream", 6);
	run_one(&ring, prep_recvmsg_sel(sv[0], &wm), 19, NULL);
	note("read \"%.*s\"", 6, big);
	show_status();

	io_uring_queue_exit(&ring);
	return 0;
}
