/*
 * fork with a live ring: the parent sets up a ring (with a read pending on a
 * pipe) and forks; the child, which inherits the mapping and the fd, sets up
 * a ring of its own, uses it, and exits; the parent waits for the child, then
 * completes its pending read and keeps using its ring. The child prints only
 * while the parent is blocked in waitpid, so the output order is fixed.
 */
#include "test/prog/cqe_print.h"

#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int p[2];
	if (pipe(p) < 0)
		die("pipe: %s", strerror(errno));
	note("parent ring fd %d, pipe %d %d", ring.ring_fd, p[0], p[1]);
	nops_print(&ring, 1, 2);

	char buf[16] = { 0 };
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, p[0], buf, sizeof(buf) - 1, 0);
	sqe->user_data = 10;
	submit_expect(&ring, 1);

	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		struct io_uring child;
		ret = io_uring_queue_init(8, &child, 0);
		if (ret < 0)
			die("child queue_init: %s", strerror(-ret));
		note("child ring fd %d", child.ring_fd);
		nops_print(&child, 100, 3);
		int fd = dup(0);
		note("child's next fd %d", fd);
		io_uring_queue_exit(&child);
		exit(0);
	}
	int status;
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid: %s", strerror(errno));
	note("child exited %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("child failed");

	expect_no_cqe(&ring, "parent's pending read");
	if (write(p[1], "after fork", 10) != 10)
		die("write: %s", strerror(errno));
	reap_print(&ring, 1);
	note("parent read \"%s\"", buf);
	nops_print(&ring, 20, 2);

	io_uring_queue_exit(&ring);
	return 0;
}
