/*
 * A ring lives while the program maps it, fd or no fd.
 *  A. The program closes the ring fd with a READ in flight and keeps its
 *     mappings: the READ completes when data comes, and its CQE is read
 *     from CQ memory (no enter is possible any more).
 *  B. The program unmaps the ring and closes the fd (io_uring_queue_exit)
 *     with a READ in flight: the ring ends and its READ with it, so data
 *     written afterwards stays in the pipe for read(2).
 *  C. B again, after 1.5 s with no ring at all.
 */
#define _GNU_SOURCE
#include "test/prog/cqe_print.h"

#include <fcntl.h>
#include <time.h>

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static void read_on(struct io_uring *ring, int fd, char *buf, unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(ring);
	io_uring_prep_read(sqe, fd, buf, 16, 0);
	sqe->user_data = ud;
	submit_expect(ring, 1);
}

/*
 * B and C: a READ in flight on a ring the program ends with
 * io_uring_queue_exit; what is written afterwards stays in the pipe.
 */
static void ended_ring_read(const char *label, unsigned long long ud)
{
	static char buf[16];
	struct io_uring ring;
	int p[2];
	if (pipe2(p, O_NONBLOCK) || io_uring_queue_init(4, &ring, 0))
		die("setup: %s", strerror(errno));
	read_on(&ring, p[0], buf, ud);
	io_uring_queue_exit(&ring);
	/* Natively the ring ends at the close.  Under the seccomp filter,
	 * which sees no inline close, bufsel ends it up to 20 ms later
	 * (docs/interception.md), plus the time its thread waits for a CPU:
	 * the write comes well after that. */
	pause_ms(200);
	if (write(p[1], "unmapped", 8) != 8)
		die("write: %s", strerror(errno));
	pause_ms(50);
	char back[16];
	ssize_t n = read(p[0], back, sizeof(back));
	printf("%s: read(2) after the ring ended: %zd \"%.*s\"\n", label, n, n > 0 ? (int)n : 0, back);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	static char buf[16];
	struct io_uring ring;
	int p[2];

	if (pipe(p) || io_uring_queue_init(4, &ring, 0))
		die("setup: %s", strerror(errno));
	read_on(&ring, p[0], buf, 7);
	if (close(ring.ring_fd))
		die("close: %s", strerror(errno));
	if (write(p[1], "mapped", 6) != 6)
		die("write: %s", strerror(errno));
	int got = 0;
	for (int i = 0; i < 5000 && !(got = io_uring_cq_ready(&ring) != 0); i++)
		pause_ms(1);
	printf("A: CQE after close, from memory: %s\n", got ? "yes" : "no");
	if (got) {
		struct io_uring_cqe *cqe = NULL;
		if (io_uring_peek_cqe(&ring, &cqe) == 0) {
			cqe_print(cqe);
			printf("A: data \"%.*s\"\n", cqe->res > 0 ? cqe->res : 0, buf);
			io_uring_cqe_seen(&ring, cqe);
		}
	}
	io_uring_queue_exit(&ring);
	close(p[0]);
	close(p[1]);

	ended_ring_read("B", 8);
	/* The same after 1.5 s without a ring: under the seccomp filter
	 * bufsel's mover then sleeps a second at a time, and a ring set up
	 * in that second must still end within the 20 ms. */
	pause_ms(1500);
	ended_ring_read("C", 9);
	return 0;
}
