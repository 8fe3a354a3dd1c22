/*
 * Running out of resources the kernel accounts per process, with a ring
 * already in use:
 *
 *  - RLIMIT_NOFILE reached mid-run: OPENAT, SOCKET and ACCEPT through the
 *    ring fail with -EMFILE while a buffer-select RECV still works (it needs
 *    no fd); io_uring_setup with no fd left fails with -EMFILE; with exactly
 *    one fd left it succeeds natively (a ring needs one fd), and the new
 *    ring must then work, buffer selection included; once fds are free
 *    again ACCEPT takes the lowest one;
 *  - RLIMIT_MEMLOCK in a child that is not privileged: Linux 6.18 charges
 *    a ring's memory to it, so at 0 setup fails with -ENOMEM; at 64 KiB a
 *    ring of 64 entries fits, legacy provided buffers work (they are not
 *    pinned), and IORING_REGISTER_BUFFERS of 64 KiB more fails with -ENOMEM.
 */
#include "test/prog/bs_bufs.h"

#include <sys/resource.h>
#include <sys/wait.h>

#define NOFILE_LIMIT 64

static struct io_uring ring;
static int spare[2];	/* a pipe made while fds were plenty */

static void run_print(struct io_uring_sqe *sqe, unsigned long long ud)
{
	struct io_uring_cqe c;
	sqe->user_data = ud;
	submit_expect(&ring, 1);
	reap(&ring, &c, 1);
	cqe_print(&c);
	if (c.res >= 0 && (ud == 3 || ud == 13))
		close(c.res);
}

/* A second ring: a NOP, and a READ from a group of its own. */
static void use_ring(struct io_uring *r, unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(r);
	io_uring_prep_nop(sqe);
	sqe->user_data = ud;
	submit_expect(r, 1);
	reap_print(r, 1);
	struct arena a = arena_new(16, 2);
	provide(r, &a, 9, 0, 2, ud + 1);
	write_all(spare[1], "second-ring", 11);
	run_one(r, prep_read_sel(r, spare[0], 0, 9, 0, 0), ud + 2, &a);
}

static void nofile(void)
{
	int ls, client = -1, sv[2];
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, 4) < 0 ||
	    getsockname(ls, (struct sockaddr *)&sa, &sl) < 0)
		die("listen: %s", strerror(errno));
	client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (client < 0 || connect(client, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect: %s", strerror(errno));
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		die("socketpair: %s", strerror(errno));
	struct arena a = arena_new(32, 4);
	provide(&ring, &a, 1, 0, 4, 1);

	struct rlimit rl = { NOFILE_LIMIT, NOFILE_LIMIT };
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		die("setrlimit: %s", strerror(errno));
	int fds[NOFILE_LIMIT], n = 0, fd;
	while ((fd = dup(0)) >= 0)
		fds[n++] = fd;
	note("RLIMIT_NOFILE %d reached after %d more fds (dup: %s)", NOFILE_LIMIT, n, strerror(errno));

	note("OPENAT, SOCKET, ACCEPT through the ring:");
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_openat(sqe, AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC, 0);
	run_print(sqe, 3);
	sqe = get_sqe(&ring);
	io_uring_prep_socket(sqe, AF_UNIX, SOCK_DGRAM, 0, 0);
	run_print(sqe, 4);
	sqe = get_sqe(&ring);
	io_uring_prep_accept(sqe, ls, NULL, NULL, SOCK_CLOEXEC);
	run_print(sqe, 5);
	note("a buffer-select RECV needs no fd:");
	if (send(sv[1], "no-fd-needed", 12, 0) != 12)
		die("send: %s", strerror(errno));
	run_one(&ring, prep_recv_sel(&ring, sv[0], 0, 0, 1, 0), 6, &a);

	struct io_uring second;
	int ret = io_uring_queue_init(4, &second, 0);
	note("io_uring_queue_init with no fd left: %d", ret);
	if (ret == 0)
		die("a ring without an fd");
	close(fds[--n]);
	ret = io_uring_queue_init(4, &second, 0);
	note("io_uring_queue_init with one fd left: %d", ret);
	if (ret == 0) {
		note("its fd %d", second.ring_fd);
		use_ring(&second, 20);
		note("dup with the ring open: %d", dup(0));
		io_uring_queue_exit(&second);
	}
	note("with the second ring gone, dup: %d", (fd = dup(0)));
	if (fd >= 0)
		close(fd);

	note("two fds free again, a low and a high one: ACCEPT takes the low one");
	close(fds[0]);
	close(fds[--n]);
	sqe = get_sqe(&ring);
	io_uring_prep_accept(sqe, ls, NULL, NULL, SOCK_CLOEXEC);
	run_print(sqe, 13);
	while (n > 1)
		close(fds[--n]);
	rl.rlim_cur = rl.rlim_max = 1024;
	setrlimit(RLIMIT_NOFILE, &rl);
	close(client);
	close(ls);
	close(sv[0]);
	close(sv[1]);
}

static void memlock(void)
{
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		struct rlimit rl = { 0, 64 * 1024 };
		if (setrlimit(RLIMIT_MEMLOCK, &rl) < 0)
			die("setrlimit: %s", strerror(errno));
		if (getuid() == 0 && setresuid(65534, 65534, 65534) < 0)
			die("setresuid: %s", strerror(errno));
		struct io_uring r;
		int ret = io_uring_queue_init(64, &r, 0);
		note("child: unprivileged, RLIMIT_MEMLOCK 0: io_uring_queue_init(64): %d", ret);
		if (ret == 0)
			io_uring_queue_exit(&r);
		rl.rlim_cur = 64 * 1024;
		if (setrlimit(RLIMIT_MEMLOCK, &rl) < 0)
			die("setrlimit: %s", strerror(errno));
		ret = io_uring_queue_init(64, &r, 0);
		note("child: RLIMIT_MEMLOCK 64 KiB: io_uring_queue_init(64): %d", ret);
		if (ret < 0)
			exit(1);
		use_ring(&r, 30);
		static char big[65536];
		struct iovec iov = { big, sizeof(big) };
		note("child: register 64 KiB of buffers: %d", io_uring_register_buffers(&r, &iov, 1));
		io_uring_queue_exit(&r);
		exit(0);
	}
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		die("child failed");
}

int main(void)
{
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	if (pipe2(spare, O_CLOEXEC) < 0)
		die("pipe: %s", strerror(errno));
	nofile();
	memlock();
	note("the first ring still works");
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 40;
	submit_expect(&ring, 1);
	reap_print(&ring, 1);
	io_uring_queue_exit(&ring);
	return 0;
}
