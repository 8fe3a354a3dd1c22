/*
 * One ring used by a parent and its fork child at once, as liburing's
 * across-fork test does: the struct io_uring sits in MAP_SHARED memory, so
 * both processes share liburing's view of the ring as they share the
 * kernel's ring.  Checked, in this order:
 *  - SQEs prepared before the fork and not yet submitted: the child submits
 *    them, and reaps them with a CQE posted before the fork;
 *  - CQEs of one batch reaped alternately by the two processes;
 *  - the parent blocked in a wait while the child submits what it waits
 *    for, and the other way round;
 *  - a buffer-select read the parent submits after the fork, whose CQE
 *    the child waits for and reaps (bufsel answers it from the parent's
 *    request table, whichever process moves it);
 *  - the parent going on alone after the child exits, and after a child
 *    killed while it waited in the kernel (for many times its CQ's size);
 *  - a second child whose parent has closed the ring (so nothing of the
 *    parent's moves its completions): a TIMEOUT's CQE still appears in its
 *    CQ while it spins on the CQ memory without entering the kernel.
 * The two processes take turns through pipes, so every line is printed in
 * an order the program fixes.
 */
#include "test/prog/cqe_print.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

static struct io_uring *ring;
static int to_child[2], to_parent[2];

static void nop(uint64_t ud)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	if (!sqe)
		die("no sqe");
	io_uring_prep_nop(sqe);
	sqe->user_data = ud;
}

/* quiet: the other process is waiting for this, and prints first. */
static void submit_as(const char *who, unsigned want, int quiet)
{
	int ret = io_uring_submit(ring);
	if (ret != (int)want)
		die("%s: submit returned %d, expected %u", who, ret, want);
	if (!quiet)
		printf("%s: submitted %d\n", who, ret);
}

static void submit(const char *who, unsigned want)
{
	submit_as(who, want, 0);
}

static void take(const char *who)
{
	struct io_uring_cqe *cqe;
	int ret = io_uring_wait_cqe(ring, &cqe);
	if (ret)
		die("%s: wait_cqe: %s", who, strerror(-ret));
	printf("%s: ", who);
	cqe_print(cqe);
	io_uring_cqe_seen(ring, cqe);
}

static void child_main(void)
{
	/* The parent prepared two SQEs before the fork; a third CQE waits. */
	printf("child: sq ready %u, cq ready %u\n", io_uring_sq_ready(ring), io_uring_cq_ready(ring));
	submit("child", 2);
	for (int i = 0; i < 3; i++)
		take("child");
	token_send(to_parent[1]);

	/* Alternate reaping: the child takes the first, third and fifth. */
	token_wait(to_child[0]);
	for (int i = 0; i < 3; i++) {
		take("child");
		token_send(to_parent[1]);
		token_wait(to_child[0]);
	}

	/* The parent waits in the kernel; submit once it is there. */
	usleep(50000);
	nop(20);
	submit_as("child", 1, 1);
	token_wait(to_child[0]);

	/* The child waits; the parent submits. */
	token_send(to_parent[1]);
	take("child");
	token_send(to_parent[1]);

	/* The parent's buffer-select read, submitted after the fork, is
	 * answered by the parent's bookkeeping, whoever moves and reaps it. */
	token_wait(to_child[0]);
	take("child");
	printf("child: cq ready %u, exiting\n", io_uring_cq_ready(ring));
	exit(0);
}

/* The second child: its parent has closed the ring, and the child spins on
 * the CQ for a TIMEOUT's completion without a system call. */
static void child2_main(void)
{
	token_wait(to_child[0]);
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct __kernel_timespec ts = { .tv_sec = 0, .tv_nsec = 20000000 };
	io_uring_prep_timeout(sqe, &ts, 0, 0);
	sqe->user_data = 50;
	submit("child2", 1);
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	unsigned ready = 0;
	do {
		ready = io_uring_cq_ready(ring);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (!ready && (now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < 3000000000L);
	printf("child2: %u ready without entering\n", ready);
	if (ready)
		take("child2");
	exit(0);
}

/* io_uring_queue_exit, with libc's munmap and close: liburing's own may
 * close with an inline system call, which nobody but the kernel sees. */
static void close_ring(void)
{
	munmap(ring->sq.sqes, ring->sq.ring_entries * sizeof(struct io_uring_sqe));
	if (ring->cq.ring_ptr != ring->sq.ring_ptr)
		munmap(ring->cq.ring_ptr, ring->cq.ring_sz);
	munmap(ring->sq.ring_ptr, ring->sq.ring_sz);
	if (close(ring->ring_fd))
		die("close: %s", strerror(errno));
}

static void child_done(pid_t pid, const char *who)
{
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		die("%s failed", who);
	printf("parent: %s exited 0\n", who);
}

int main(void)
{
	ring = mmap(NULL, sizeof(*ring), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ring == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	if (pipe(to_child) || pipe(to_parent))
		die("pipe: %s", strerror(errno));
	int ret = io_uring_queue_init(16, ring, 0);
	if (ret)
		die("queue_init: %s", strerror(-ret));

	/* One CQE posted before the fork, two SQEs waiting in the SQ. */
	nop(1);
	submit("parent", 1);
	nop(2);
	nop(3);
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0)
		child_main();

	token_wait(to_parent[0]);
	printf("parent: sq ready %u, cq ready %u\n", io_uring_sq_ready(ring), io_uring_cq_ready(ring));

	/* A batch reaped by turns: child, parent, child, ... */
	for (uint64_t ud = 10; ud < 16; ud++)
		nop(ud);
	submit("parent", 6);
	token_send(to_child[1]);
	for (int i = 0; i < 3; i++) {
		token_wait(to_parent[0]);
		take("parent");
		token_send(to_child[1]);
	}

	/* Wait for what the child submits while this wait is in the kernel. */
	take("parent");
	token_send(to_child[1]);

	/* And submit what the child waits for. */
	token_wait(to_parent[0]);
	usleep(50000);
	nop(21);
	submit_as("parent", 1, 1);

	/* A legacy buffer group and a buffer-select read on an empty pipe;
	 * the child waits for its CQE, the parent writes the data. */
	static char bufs[4][64];
	int pfd[2];
	if (pipe(pfd))
		die("pipe: %s", strerror(errno));
	token_wait(to_parent[0]);
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	io_uring_prep_provide_buffers(sqe, bufs, sizeof(bufs[0]), 4, 7, 0);
	sqe->user_data = 59;
	submit("parent", 1);
	take("parent");
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_read(sqe, pfd[0], NULL, sizeof(bufs[0]), 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 7;
	sqe->user_data = 60;
	submit("parent", 1);
	token_send(to_child[1]);
	usleep(50000);
	if (write(pfd[1], "shared", 6) != 6)
		die("write: %s", strerror(errno));
	child_done(pid, "child");
	for (int b = 0; b < 4; b++)
		if (bufs[b][0])
			printf("parent: buffer %d holds \"%.6s\"\n", b, bufs[b]);

	/* Alone again: the ring goes on. */
	nop(40);
	nop(41);
	submit("parent", 2);
	take("parent");
	take("parent");

	/* A child killed while it waits in the kernel: the ring goes on for
	 * the parent, through many times its CQ's size. */
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		struct io_uring_cqe *cqe;
		token_send(to_parent[1]);
		io_uring_wait_cqe(ring, &cqe);
		_exit(1);
	}
	token_wait(to_parent[0]);
	usleep(50000);
	kill(pid, SIGKILL);
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFSIGNALED(status))
		die("child3 was not killed");
	printf("parent: child3 killed in its wait\n");
	unsigned seen = 0;
	for (int round = 0; round < 40; round++) {
		for (int i = 0; i < 8; i++)
			nop(100 + (uint64_t)round * 8 + (uint64_t)i);
		if (io_uring_submit(ring) != 8)
			die("parent: round %d: short submit", round);
		for (int i = 0; i < 8; i++) {
			struct io_uring_cqe *cqe;
			if (io_uring_wait_cqe(ring, &cqe))
				die("parent: round %d: wait failed", round);
			seen += cqe->user_data == 100 + (uint64_t)round * 8 + (uint64_t)i && cqe->res == 0;
			io_uring_cqe_seen(ring, cqe);
		}
	}
	printf("parent: %u of 320 NOPs completed in order after child3\n", seen);

	/* A second child keeps the ring after the parent closes it. */
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0)
		child2_main();
	close_ring();
	printf("parent: ring closed\n");
	token_send(to_child[1]);
	child_done(pid, "child2");
	return 0;
}
