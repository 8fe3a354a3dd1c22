/*
 * Many idle receives, few buffers, and every peer closes at once.  The
 * kernel selects a buffer and receives in one step, so each receive meets
 * end of file with a buffer that goes straight back to the group: 300
 * receives on a group of 16 all complete with res 0, none with -ENOBUFS,
 * although far more than 16 are ready at the same moment.  Then data on
 * 12 of 40 fresh sockets: all 12 get a buffer with their bytes.
 * Only counts and the bytes are printed (which bid serves which socket
 * depends on wake-up order).
 */
#include "test/prog/bs_bufs.h"

#include <sys/socket.h>

#define WAVE 300
#define NBUF 16
#define BLEN 64
#define BGID 5

static void provide_all(struct io_uring *ring, struct arena *a)
{
	struct io_uring_sqe *sqe = get_sqe(ring);
	io_uring_prep_provide_buffers(sqe, a->base, BLEN, NBUF, BGID, 0);
	sqe->user_data = 1;
	submit_expect(ring, 1);
	struct io_uring_cqe c;
	reap(ring, &c, 1);
	if (c.res != 0)
		die("provide: %d", c.res);
}

static void arm(struct io_uring *ring, int fd, uint64_t ud)
{
	struct io_uring_sqe *sqe = get_sqe(ring);
	io_uring_prep_recv(sqe, fd, NULL, BLEN, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = BGID;
	sqe->user_data = ud;
}

int main(void)
{
	struct io_uring ring;
	struct io_uring_params p = { .flags = IORING_SETUP_CQSIZE, .cq_entries = 1024 };
	if (io_uring_queue_init_params(512, &ring, &p) < 0)
		die("queue_init");
	struct arena a = arena_new(BLEN, NBUF);
	provide_all(&ring, &a);

	int sv[WAVE][2];
	for (unsigned i = 0; i < WAVE; i++) {
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i]))
			die("socketpair");
		arm(&ring, sv[i][0], 100 + i);
	}
	submit_expect(&ring, WAVE);
	expect_no_cqe(&ring, "idle receives");
	for (unsigned i = 0; i < WAVE; i++)
		close(sv[i][1]);
	unsigned eof = 0, enobufs = 0, other = 0, with_buf = 0;
	for (unsigned i = 0; i < WAVE; i++) {
		struct io_uring_cqe c;
		reap(&ring, &c, 1);
		if (c.flags & IORING_CQE_F_BUFFER)
			with_buf++;
		if (c.res == 0)
			eof++;
		else if (c.res == -ENOBUFS)
			enobufs++;
		else
			other++;
	}
	printf("wave of %u closes: eof=%u enobufs=%u other=%u with_buffer=%u\n", WAVE, eof, enobufs, other,
	       with_buf);
	for (unsigned i = 0; i < WAVE; i++)
		close(sv[i][0]);

	/* Every buffer is still in the group: 12 receives with data all get one. */
	enum { FRESH = 40, LIVE = 12 };
	for (unsigned i = 0; i < FRESH; i++) {
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i]))
			die("socketpair");
		arm(&ring, sv[i][0], 1000 + i);
	}
	submit_expect(&ring, FRESH);
	for (unsigned i = 0; i < LIVE; i++) {
		char msg[32];
		int n = snprintf(msg, sizeof(msg), "message %u", i * 3);
		if (write(sv[i * 3][1], msg, (size_t)n) != n)
			die("write");
	}
	struct io_uring_cqe got[LIVE];
	reap(&ring, got, LIVE);
	qsort(got, LIVE, sizeof(got[0]), cqe_cmp_ud);
	for (unsigned i = 0; i < LIVE; i++) {
		const struct io_uring_cqe *c = &got[i];
		if (c->res <= 0 || !(c->flags & IORING_CQE_F_BUFFER))
			die("ud %llu: res %d flags %#x", (unsigned long long)c->user_data, c->res, c->flags);
		printf("ud=%llu res=%d buffer: %.*s\n", (unsigned long long)c->user_data, c->res, c->res,
		       arena_buf(&a, cqe_bid(c)));
	}
	for (unsigned i = 0; i < FRESH; i++) {
		close(sv[i][1]);
		close(sv[i][0]);
	}
	io_uring_queue_exit(&ring);
	return 0;
}
