/*
 * A process that used io_uring execs programs WITHOUT bufsel (LD_PRELOAD
 * removed from their environment). They inherit whatever bufsel left in the
 * kernel, which for a seccomp filter means forever, with no handler to catch
 * a trap. Ordinary things such children do must not kill them: this program
 * run again as "child" closes every fd from 3 to 1024 (close() per fd, then a
 * raw SYS_close loop), and maps a regular file MAP_SHARED and MAP_PRIVATE at
 * offset 0, through a low fd and through fd 1000; /bin/sh starts, sets its
 * signal handling and runs a command. The parent checks each exit status.
 */
#include "test/prog/cqe_print.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void check_map(int fd, int flags, const char *what)
{
	char *m = mmap(NULL, 4096, PROT_READ, flags, fd, 0);
	if (m == MAP_FAILED)
		die("child: mmap %s: %s", what, strerror(errno));
	if (memcmp(m, "mapped file", 11) != 0)
		die("child: mmap %s: wrong contents", what);
	munmap(m, 4096);
}

static int child(void)
{
	for (int fd = 3; fd <= 1024; fd++)
		close(fd);
	for (int fd = 3; fd <= 1024; fd++)
		syscall(SYS_close, fd);
	char path[] = "/tmp/bufsel-exec_nopreload-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0 || write(fd, "mapped file", 11) != 11)
		die("child: temp file: %s", strerror(errno));
	unlink(path);
	if (dup2(fd, 1000) != 1000)
		die("child: dup2: %s", strerror(errno));
	check_map(fd, MAP_SHARED, "shared");
	check_map(fd, MAP_PRIVATE, "private");
	check_map(1000, MAP_SHARED, "shared via fd 1000");
	check_map(1000, MAP_PRIVATE, "private via fd 1000");
	close(1000);
	close(fd);
	return 0;
}

static char **env_without_preload(void)
{
	static char *env[1024];
	size_t n = 0;
	for (char **e = environ; *e && n < 1023; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) != 0)
			env[n++] = *e;
	env[n] = NULL;
	return env;
}

static void run(char *const argv[], const char *what)
{
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		execve(argv[0], argv, env_without_preload());
		die("execve %s: %s", argv[0], strerror(errno));
	}
	int status;
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid: %s", strerror(errno));
	if (WIFSIGNALED(status))
		die("%s: killed by signal %d", what, WTERMSIG(status));
	if (WEXITSTATUS(status) != 0)
		die("%s: exit status %d", what, WEXITSTATUS(status));
	note("%s ok", what);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "child") == 0)
		return child();

	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	for (unsigned i = 0; i < 3; i++) {
		struct io_uring_sqe *sqe = get_sqe(&ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = 1 + i;
	}
	submit_expect(&ring, 3);
	reap_print(&ring, 3);

	char *self[] = { "/proc/self/exe", "child", NULL };
	run(self, "child");
	char *sh[] = { "/bin/sh", "-c", "trap 'exit 3' USR1; exec 9>&-; i=0; while [ $i -lt 3 ]; do i=$((i+1)); done; exit 0", NULL };
	run(sh, "shell");

	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 10;
	submit_expect(&ring, 1);
	reap_print(&ring, 1);
	io_uring_queue_exit(&ring);
	return 0;
}
