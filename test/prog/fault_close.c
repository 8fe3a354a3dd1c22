/*
 * A ring fd closed behind bufsel's back while requests are in flight: the
 * close is a raw system call (inline `syscall`, as liburing's own
 * io_uring_queue_exit makes it), so no libc hook sees it.  New rings are set
 * up and used afterwards, which is when bufsel looks for rings nobody
 * refers to any more.
 *
 *  - ring A: buffer-select RECVs waiting for data, a buffer-select READ
 *    waiting on a pipe, a held chain and a TIMEOUT; its mappings are
 *    unmapped and its fd closed.  The kernel tears the ring down and cancels
 *    the requests, so data sent afterwards stays in the socket and the pipe;
 *    a new ring B set up after the close works, buffer selection included.
 *  - ring C: registered with IORING_REGISTER_RING_FDS, then its fd closed
 *    while a RECV waits: the registration keeps the ring alive, and liburing
 *    goes on using it through the registered index (submitting, waiting,
 *    reaping) after another ring was set up.
 *  - 200 rings with a RECV each left waiting, closed the same way, with a
 *    ring set up after each: nothing leaks into the program's view (the fd
 *    numbers it is handed stay the same).
 */
#include "test/prog/bs_bufs.h"

#include <sys/mman.h>
#include <sys/syscall.h>

static long raw_close(int fd)
{
	long ret;
	__asm__ volatile("syscall" : "=a"(ret) : "a"((long)SYS_close), "D"((long)fd) : "rcx", "r11", "memory");
	return ret;
}

/* What io_uring_queue_exit does, with the close made inline. */
static void unmap_and_close(struct io_uring *r)
{
	munmap(r->sq.sqes, *r->sq.kring_entries * sizeof(struct io_uring_sqe));
	if (r->cq.ring_ptr && r->cq.ring_ptr != r->sq.ring_ptr)
		munmap(r->cq.ring_ptr, r->cq.ring_sz);
	munmap(r->sq.ring_ptr, r->sq.ring_sz);
	note("raw close of fd %d: %ld", r->ring_fd, raw_close(r->ring_fd));
}

/* Does fd hold data now?  The kernel's ring teardown runs asynchronously:
 * a short wait lets it cancel what it cancels first. */
static void still_queued(const char *what, int fd, int sock)
{
	char buf[64];
	ssize_t n = sock ? recv(fd, buf, sizeof(buf), MSG_DONTWAIT) : read(fd, buf, sizeof(buf));
	note("%s: %zd bytes left for a plain read \"%.*s\"", what, n < 0 ? -(ssize_t)errno : n,
	     n > 0 ? (int)n : 0, buf);
}

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

static void use_new_ring(const char *name, unsigned long long ud)
{
	struct io_uring r;
	int ret = io_uring_queue_init(8, &r, 0);
	if (ret < 0)
		die("%s: queue_init: %s", name, strerror(-ret));
	note("%s: fd %d", name, r.ring_fd);
	struct arena a = arena_new(16, 2);
	provide(&r, &a, 1, 0, 2, ud);
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		die("socketpair: %s", strerror(errno));
	prep_recv_sel(&r, sv[0], 0, 0, 1, ud + 1);
	submit_expect(&r, 1);
	if (send(sv[1], name, strlen(name), 0) < 0)
		die("send: %s", strerror(errno));
	reap_show(&r, 1, &a);
	close(sv[0]);
	close(sv[1]);
	io_uring_queue_exit(&r);
}

static void pending_then_closed(void)
{
	struct io_uring a;
	int ret = io_uring_queue_init(8, &a, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	note("ring A: fd %d", a.ring_fd);
	struct arena bufs = arena_new(16, 8);
	provide(&a, &bufs, 1, 0, 8, 1);
	int s1[2], s2[2], pip[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, s1) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, s2) < 0 || pipe2(pip, O_CLOEXEC) < 0)
		die("socketpair/pipe: %s", strerror(errno));
	prep_recv_sel(&a, s1[0], 0, 0, 1, 2);
	prep_read_sel(&a, pip[0], 0, 1, 0, 3);
	struct io_uring_sqe *sqe = prep_recv_sel(&a, s2[0], 0, 0, 1, 4);
	sqe->flags |= IOSQE_IO_LINK;
	sqe = get_sqe(&a);
	io_uring_prep_nop(sqe);
	sqe->user_data = 5;
	struct __kernel_timespec ts = { .tv_sec = 30 };
	sqe = get_sqe(&a);
	io_uring_prep_timeout(sqe, &ts, 0, 0);
	sqe->user_data = 6;
	submit_expect(&a, 5);
	expect_no_cqe(&a, "ring A");
	unmap_and_close(&a);

	use_new_ring("ring B", 10);
	pause_ms(100);
	if (send(s1[1], "for-A-1", 7, 0) != 7 || send(s2[1], "for-A-2", 7, 0) != 7)
		die("send: %s", strerror(errno));
	write_all(pip[1], "for-A-3", 7);
	pause_ms(50);
	still_queued("socket of A's first RECV", s1[0], 1);
	still_queued("socket of A's chain", s2[0], 1);
	still_queued("pipe of A's READ", pip[0], 0);
	close(s1[0]);
	close(s1[1]);
	close(s2[0]);
	close(s2[1]);
	close(pip[0]);
	close(pip[1]);
}

static void registered_then_closed(void)
{
	struct io_uring c;
	int ret = io_uring_queue_init(8, &c, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	note("ring C: register_ring_fd %d", io_uring_register_ring_fd(&c));
	struct arena bufs = arena_new(16, 4);
	provide(&c, &bufs, 1, 0, 4, 20);
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		die("socketpair: %s", strerror(errno));
	prep_recv_sel(&c, sv[0], 0, 0, 1, 21);
	submit_expect(&c, 1);
	expect_pending(&c, "ring C's RECV");
	note("raw close of ring C's fd: %ld", raw_close(c.ring_fd));
	use_new_ring("ring D", 30);
	note("ring C through its registered index:");
	if (send(sv[1], "registered", 10, 0) != 10)
		die("send: %s", strerror(errno));
	reap_show(&c, 1, &bufs);
	provide(&c, &bufs, 1, 0, 1, 22);
	if (send(sv[1], "again", 5, 0) != 5)
		die("send: %s", strerror(errno));
	wait_queued(sv[0], 5);
	run_one(&c, prep_recv_sel(&c, sv[0], 0, 0, 1, 0), 23, &bufs);
	struct io_uring_sqe *sqe = get_sqe(&c);
	io_uring_prep_nop(sqe);
	sqe->user_data = 24;
	submit_expect(&c, 1);
	reap_print(&c, 1);
	note("unregister_ring_fd %d", io_uring_unregister_ring_fd(&c));
	munmap(c.sq.sqes, *c.sq.kring_entries * sizeof(struct io_uring_sqe));
	munmap(c.sq.ring_ptr, c.sq.ring_sz);
	close(sv[0]);
	close(sv[1]);
}

static void many(void)
{
	int first = -1, same = 1;
	struct arena bufs = arena_new(16, 1);
	for (unsigned i = 0; i < 200; i++) {
		struct io_uring r;
		int ret = io_uring_queue_init(4, &r, 0);
		if (ret < 0)
			die("cycle %u: queue_init: %s", i, strerror(-ret));
		if (first < 0)
			first = r.ring_fd;
		same &= r.ring_fd == first;
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
			die("socketpair: %s", strerror(errno));
		struct io_uring_sqe *sqe = get_sqe(&r);
		prep_provide_arena(sqe, &bufs, 1, 0, 1);
		prep_recv_sel(&r, sv[0], 0, 0, 1, 2);
		submit_expect(&r, 2);
		munmap(r.sq.sqes, *r.sq.kring_entries * sizeof(struct io_uring_sqe));
		munmap(r.sq.ring_ptr, r.sq.ring_sz);
		raw_close(r.ring_fd);
		close(sv[0]);
		close(sv[1]);
	}
	note("200 rings closed raw with a RECV pending: every new ring got fd %d: %s", first, yesno(same));
	use_new_ring("after them", 40);
}

int main(void)
{
	pending_then_closed();
	registered_then_closed();
	many();
	return 0;
}
