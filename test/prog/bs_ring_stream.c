/*
 * How multishot streams on buffer rings end and pace themselves (6.18):
 *  - READ_MULTISHOT on a pipe reads each write apart when the writes come
 *    while the program does something else (task work runs between them);
 *  - READ_MULTISHOT on a regular file is -EBADFD;
 *  - its first attempt is made at submission, data or not, on the head
 *    entry (a ring's or a legacy group's): an entry at address 0 is
 *    -ENOBUFS, one past the user address space -EFAULT, an empty one a
 *    read of nothing (res 0, the stream ends), a pipe's write end -EBADF;
 *    none names or takes the entry;
 *  - a later step that meets an entry at address 0 ends the stream with
 *    -ENOBUFS, the entry left where it was (io_kbuf_recycle), so a READ
 *    after it meets it again;
 *  - a stream whose next CQE finds the program's CQ full ends with that
 *    CQE, without F_MORE (it overflows);
 *  - a multishot RECV's byte limit (optlen) ends the stream with the CQE
 *    that reaches it, a bundle's mapping capped by what is left of it.
 * Writes are 20 ms apart, with the program asleep, so the split into CQEs
 * depends on sizes, not timing.
 */
#include "test/prog/bs_rings.h"

#include <fcntl.h>
#include <sys/socket.h>

#ifndef IORING_OP_READ_MULTISHOT
#define IORING_OP_READ_MULTISHOT 49
#endif
#ifndef IORING_RECVSEND_BUNDLE
#define IORING_RECVSEND_BUNDLE (1U << 4)
#endif

static struct io_uring_sqe *read_multi(struct io_uring *ring, int fd, unsigned bgid, unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(ring);
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_READ_MULTISHOT;
	sqe->fd = fd;
	sqe->off = (uint64_t)-1;
	sqe->flags = IOSQE_BUFFER_SELECT;
	sqe->buf_group = (__u16)bgid;
	sqe->user_data = ud;
	return sqe;
}

/* One entry at the ring's tail, whatever its address and length. */
static void add_raw(struct io_uring_buf_ring *br, uint32_t entries, uint64_t addr, uint32_t len,
		    unsigned short bid)
{
	io_uring_buf_ring_add(br, (void *)(uintptr_t)addr, len, bid, io_uring_buf_ring_mask(entries), 0);
	io_uring_buf_ring_advance(br, 1);
}

/* Legacy buffers, one PROVIDE_BUFFERS each, at any address. */
static void provide_raw(struct io_uring *ring, uint64_t addr, unsigned len, unsigned bgid, unsigned bid)
{
	struct io_uring_sqe *sqe = get_sqe(ring);
	io_uring_prep_provide_buffers(sqe, (void *)(uintptr_t)addr, (int)len, 1, (int)bgid, (int)bid);
	run_one(ring, sqe, 100 + bid, NULL);
}

/*
 * READ_MULTISHOT's first attempt on a head entry that fails it, on an idle
 * pipe and with data there: the CQE comes at submission.
 */
static void first_attempt_case(struct io_uring *ring, uint64_t addr, uint32_t len, int write_end,
			       unsigned long long ud, const struct arena *g)
{
	struct io_uring_buf_ring *br = ring_new(ring->ring_fd, 6, 4);
	add_raw(br, 4, addr, len, 1);
	ring_add(br, 4, g, 2, 1);
	int p[2];
	if (pipe(p))
		die("pipe: %s", strerror(errno));
	for (int data = 0; data < 2; data++) {
		if (data)
			write_all(p[1], "xy", 2);
		note("  %s", data ? "with data there" : "on an idle pipe");
		read_multi(ring, p[write_end], 6, ud + (unsigned long long)data);
		submit_expect(ring, 1);
		reap_show(ring, 1, g);
		show_status_on(ring->ring_fd, 6);
	}
	empty_pipe(p[0], "the pipe");
	close(p[0]);
	close(p[1]);
	unreg_ring_on(ring->ring_fd, 6);
}

/* Writes each message apart, 20 ms after the last, without entering. */
static void write_apart(int fd, const char *const *msgs, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		usleep(20 * 1000);
		write_all(fd, msgs[i], strlen(msgs[i]));
	}
	usleep(20 * 1000);
}

static void reap_stream(struct io_uring *ring, const struct arena *a)
{
	for (int i = 0; i < 64; i++) {
		struct io_uring_cqe c;
		reap(ring, &c, 1);
		show(&c, a);
		if (!(c.flags & IORING_CQE_F_MORE))
			return;
	}
	die("the stream did not end within 64 CQEs");
}

static struct io_uring_sqe *recv_limited(struct io_uring *ring, int fd, unsigned bgid, uint32_t limit,
					 int bundle, unsigned long long ud)
{
	struct io_uring_sqe *sqe = prep_recv_sel(ring, fd, 0, 0, bgid, ud);
	sqe->ioprio |= IORING_RECV_MULTISHOT | (bundle ? IORING_RECVSEND_BUNDLE : 0);
	memcpy((char *)sqe + 44, &limit, sizeof(limit));	/* optlen */
	return sqe;
}

/* 30 bytes queued on a, a multishot RECV limited to 20 on a ring of 8
 * entries of 8 (bgid), its stream, and what is left queued. */
static void limited_case(struct io_uring *ring, int a, int b, unsigned bgid, int bundle)
{
	struct arena g = arena_new(8, 8);
	struct io_uring_buf_ring *br = ring_new(ring->ring_fd, (uint16_t)bgid, 8);
	ring_add(br, 8, &g, 0, 8);
	send_str(b, "0123456789abcdefghijklmnopqrst");
	wait_queued(a, 30);
	recv_limited(ring, a, bgid, 20, bundle, bgid);
	submit_expect(ring, 1);
	reap_stream(ring, &g);
	drain(a, "after the limit");
}

int main(void)
{
	struct io_uring ring;
	int ret = io_uring_queue_init(16, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	const char *const msgs[] = { "first message", "second", "the third one", "4th" };

	note("READ_MULTISHOT on a pipe, four writes apart, a ring of 8 entries of 32");
	{
		struct arena g = arena_new(32, 8);
		struct io_uring_buf_ring *br = ring_new(ring.ring_fd, 1, 8);
		ring_add(br, 8, &g, 0, 8);
		int p[2];
		if (pipe(p))
			die("pipe: %s", strerror(errno));
		read_multi(&ring, p[0], 1, 1);
		submit_expect(&ring, 1);
		write_apart(p[1], msgs, 4);
		reap_show(&ring, 4, &g);
		expect_pending(&ring, "READ_MULTISHOT");
		close(p[1]);
		reap_stream(&ring, &g);
		close(p[0]);
	}

	note("READ_MULTISHOT on a regular file");
	{
		struct arena g = arena_new(32, 2);
		struct io_uring_buf_ring *br = ring_new(ring.ring_fd, 2, 2);
		ring_add(br, 2, &g, 0, 2);
		int fd = temp_file("data");
		read_multi(&ring, fd, 2, 2);
		submit_expect(&ring, 1);
		reap_stream(&ring, &g);
		show_status_on(ring.ring_fd, 2);
		close(fd);
	}
	io_uring_queue_exit(&ring);

	note("a CQ of 4 and six writes apart: the fifth CQE ends the stream");
	{
		struct io_uring_params p = { .flags = IORING_SETUP_CQSIZE, .cq_entries = 4 };
		ret = io_uring_queue_init_params(2, &ring, &p);
		if (ret < 0)
			die("queue_init_params: %s", strerror(-ret));
		struct arena g = arena_new(32, 8);
		struct io_uring_buf_ring *br = ring_new(ring.ring_fd, 3, 8);
		ring_add(br, 8, &g, 0, 8);
		int pp[2];
		if (pipe(pp))
			die("pipe: %s", strerror(errno));
		read_multi(&ring, pp[0], 3, 3);
		submit_expect(&ring, 1);
		const char *const six[] = { "m1", "m2", "m3", "m4", "m5", "m6" };
		write_apart(pp[1], six, 6);
		reap_stream(&ring, &g);
		char rest[16];
		ssize_t n = read(pp[0], rest, sizeof(rest));
		note("left in the pipe: \"%.*s\"", n > 0 ? (int)n : 0, rest);
		close(pp[0]);
		close(pp[1]);
		io_uring_queue_exit(&ring);
	}

	ret = io_uring_queue_init(16, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	{
		struct arena g = arena_new(32, 6);
		note("READ_MULTISHOT's first attempt: an entry at address 0");
		first_attempt_case(&ring, 0, 32, 0, 20, &g);
		note("an entry past the user address space");
		first_attempt_case(&ring, 0xffff888000000000ull, 32, 0, 22, &g);
		note("an empty entry");
		first_attempt_case(&ring, (uintptr_t)arena_buf(&g, 1), 0, 0, 24, &g);
		note("a pipe's write end");
		first_attempt_case(&ring, (uintptr_t)arena_buf(&g, 1), 32, 1, 26, &g);

		note("a later step meets an entry at address 0");
		struct io_uring_buf_ring *br = ring_new(ring.ring_fd, 7, 4);
		ring_add(br, 4, &g, 0, 1);
		add_raw(br, 4, 0, 32, 1);
		ring_add(br, 4, &g, 2, 1);
		int p[2];
		if (pipe(p))
			die("pipe: %s", strerror(errno));
		read_multi(&ring, p[0], 7, 28);
		submit_expect(&ring, 1);
		const char *const two[] = { "one", "two" };
		write_apart(p[1], two, 2);
		reap_stream(&ring, &g);
		show_status_on(ring.ring_fd, 7);
		note("a READ after it meets the entry again");
		run_one(&ring, prep_read_sel(&ring, p[0], 32, 7, (uint64_t)-1, 29), 29, &g);
		show_status_on(ring.ring_fd, 7);
		unreg_ring_on(ring.ring_fd, 7);

		note("a legacy group: a buffer at address 0 at submission, then a READ");
		provide_raw(&ring, 0, 32, 8, 1);
		provide_raw(&ring, (uintptr_t)arena_buf(&g, 2), 32, 8, 2);
		read_multi(&ring, p[0], 8, 30);
		submit_expect(&ring, 1);
		reap_show(&ring, 1, &g);
		run_one(&ring, prep_read_sel(&ring, p[0], 32, 8, (uint64_t)-1, 31), 31, &g);
		note("and at a later step");
		provide_raw(&ring, (uintptr_t)arena_buf(&g, 3), 32, 8, 3);
		provide_raw(&ring, 0, 32, 8, 4);
		provide_raw(&ring, (uintptr_t)arena_buf(&g, 5), 32, 8, 5);
		read_multi(&ring, p[0], 8, 32);
		submit_expect(&ring, 1);
		write_apart(p[1], two, 2);
		reap_stream(&ring, &g);
		run_one(&ring, prep_read_sel(&ring, p[0], 32, 8, (uint64_t)-1, 33), 33, &g);
		empty_pipe(p[0], "the pipe");
		close(p[0]);
		close(p[1]);
	}

	int a, b;
	tcp_pair(&a, &b);
	note("multishot RECV with a limit of 20 bytes, 30 queued, entries of 8");
	limited_case(&ring, a, b, 4, 0);
	note("the same as a bundle");
	limited_case(&ring, a, b, 5, 1);
	close(a);
	close(b);
	io_uring_queue_exit(&ring);
	return 0;
}
