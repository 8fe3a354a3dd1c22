/*
 * A ring's legacy buffer groups are one for every process that uses the
 * ring, as the kernel keeps one set per ring: a parent and its fork child
 * share the ring (the struct io_uring in MAP_SHARED memory, as in
 * fork_shared_ring) and see each other's PROVIDE_BUFFERS and selections.
 * Checked, in this order:
 *  - buffers the parent provides after the fork are the ones the child's
 *    buffer-select read and recv get (bid and data);
 *  - a buffer provided before the fork and consumed by the child after it
 *    is gone for the parent too: its read gets -ENOBUFS;
 *  - liburing's buf-ring-upgrade pattern: the child's ring registration
 *    (IORING_REGISTER_PBUF_RING) on a group the parent provided is -EEXIST
 *    while the group holds a buffer, and succeeds once the parent's recv
 *    took the buffer after the fork.
 * The two processes take turns through pipes, so every line is printed in
 * an order the program fixes.
 */
#include "test/prog/cqe_print.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>

static struct io_uring *ring;
static int to_child[2], to_parent[2], data[2], sv[2];
static char bufs[4][16];
static char ring_mem[4096] __attribute__((aligned(4096)));

static struct io_uring_sqe *sqe_get(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	if (!sqe)
		die("no sqe");
	return sqe;
}

/* Submits the one SQE prepared, reaps its CQE and prints it. */
static int run(const char *who)
{
	struct io_uring_cqe *cqe;
	int ret = io_uring_submit_and_wait(ring, 1);
	if (ret != 1)
		die("%s: submit_and_wait returned %d", who, ret);
	ret = io_uring_wait_cqe(ring, &cqe);
	if (ret)
		die("%s: wait_cqe: %s", who, strerror(-ret));
	printf("%s: ", who);
	cqe_print(cqe);
	int res = cqe->res;
	if (res > 0 && (cqe->flags & IORING_CQE_F_BUFFER)) {
		unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
		printf("%s: bid %u holds \"%.*s\"\n", who, bid, res, bufs[bid]);
	}
	io_uring_cqe_seen(ring, cqe);
	return res;
}

static void provide(const char *who, unsigned bid, uint16_t bgid, uint64_t ud)
{
	struct io_uring_sqe *sqe = sqe_get();
	io_uring_prep_provide_buffers(sqe, bufs[bid], sizeof(bufs[bid]), 1, bgid, (int)bid);
	sqe->user_data = ud;
	run(who);
}

static void read_sel(const char *who, uint16_t bgid, uint64_t ud)
{
	struct io_uring_sqe *sqe = sqe_get();
	io_uring_prep_read(sqe, data[0], NULL, sizeof(bufs[0]), 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = bgid;
	sqe->user_data = ud;
	run(who);
}

static void recv_sel(const char *who, uint16_t bgid, uint64_t ud)
{
	struct io_uring_sqe *sqe = sqe_get();
	io_uring_prep_recv(sqe, sv[0], NULL, sizeof(bufs[0]), 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = bgid;
	sqe->user_data = ud;
	run(who);
}

static void put(int fd, const char *s)
{
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		die("write: %s", strerror(errno));
}

static void reg_try(const char *who, uint16_t bgid)
{
	struct io_uring_buf_reg reg = {
		.ring_addr = (uint64_t)(uintptr_t)ring_mem,
		.ring_entries = 8,
		.bgid = bgid,
	};
	int ret = io_uring_register_buf_ring(ring, &reg, 0);
	printf("%s: register buf ring on group %u: %s\n", who, bgid, ret ? strerror(-ret) : "ok");
	if (!ret) {
		ret = io_uring_unregister_buf_ring(ring, bgid);
		printf("%s: unregister: %d\n", who, ret);
	}
}

static void child_main(void)
{
	/* Group 1: the parent provided two buffers after the fork. */
	token_wait(to_child[0]);
	put(data[1], "pipe data");
	read_sel("child", 1, 10);
	put(sv[1], "sock data");
	recv_sel("child", 1, 11);
	/* Group 2: the buffer provided before the fork, consumed here. */
	put(data[1], "last one");
	read_sel("child", 2, 12);
	token_send(to_parent[1]);

	/* Group 3: the parent's buffer is still in it. */
	token_wait(to_child[0]);
	reg_try("child", 3);
	token_send(to_parent[1]);
	/* The parent's recv took it. */
	token_wait(to_child[0]);
	reg_try("child", 3);
	exit(0);
}

int main(void)
{
	ring = mmap(NULL, sizeof(*ring), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ring == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	if (pipe(to_child) || pipe(to_parent) || pipe(data))
		die("pipe: %s", strerror(errno));
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		die("socketpair: %s", strerror(errno));
	int ret = io_uring_queue_init(8, ring, 0);
	if (ret)
		die("queue_init: %s", strerror(-ret));
	provide("parent", 2, 2, 1);
	provide("parent", 3, 3, 2);

	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid)
		child_main();

	provide("parent", 0, 1, 3);
	provide("parent", 1, 1, 4);
	token_send(to_child[1]);
	token_wait(to_parent[0]);

	/* The child consumed group 2's only buffer. */
	put(data[1], "too late");
	read_sel("parent", 2, 20);
	char drain[16];
	if (read(data[0], drain, sizeof(drain)) != 8)
		die("drain");

	/* The buf-ring-upgrade pattern, on group 3. */
	token_send(to_child[1]);
	token_wait(to_parent[0]);
	put(sv[1], "upgrade");
	recv_sel("parent", 3, 21);
	token_send(to_child[1]);

	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		die("child failed");
	printf("parent: child exited 0\n");
	io_uring_queue_exit(ring);
	return 0;
}
