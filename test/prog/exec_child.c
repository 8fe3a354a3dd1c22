/*
 * fork + exec of a program that uses io_uring, from a parent that already has
 * a ring: the child is this program run again with "child", inheriting the
 * environment (under bufsel it runs under bufsel too, and inherits whatever
 * the parent installed in the kernel, such as a seccomp filter). The child
 * sets up its own ring and prints its CQEs while the parent waits, so the
 * output order is fixed; then the parent uses its ring again. The kernel
 * always creates ring fds close-on-exec, so the child's ring gets the same
 * fd number as the parent's: whatever fd the program is handed for a ring
 * must be close-on-exec too.
 */
#include "test/prog/cqe_print.h"

#include <sys/wait.h>
#include <unistd.h>

static int child(void)
{
	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("child queue_init: %s", strerror(-ret));
	note("child: ring fd %d", ring.ring_fd);
	nops_print(&ring, 100, 4);
	int p[2];
	char buf[8] = { 0 };
	if (pipe(p) < 0 || write(p[1], "exec", 4) != 4)
		die("child pipe: %s", strerror(errno));
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, p[0], buf, sizeof(buf) - 1, 0);
	sqe->user_data = 110;
	submit_expect(&ring, 1);
	reap_print(&ring, 1);
	note("child: read \"%s\"", buf);
	io_uring_queue_exit(&ring);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "child") == 0)
		return child();

	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	note("parent: ring fd %d", ring.ring_fd);
	nops_print(&ring, 1, 3);

	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		char *args[] = { argv[0], "child", NULL };
		execv("/proc/self/exe", args);
		die("execv: %s", strerror(errno));
	}
	int status;
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid: %s", strerror(errno));
	if (WIFSIGNALED(status))
		die("child killed by signal %d", WTERMSIG(status));
	note("parent: child exited %d", WEXITSTATUS(status));
	if (WEXITSTATUS(status) != 0)
		die("child failed");

	nops_print(&ring, 10, 3);
	io_uring_queue_exit(&ring);
	return 0;
}
