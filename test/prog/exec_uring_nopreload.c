/*
 * A process that used io_uring execs programs that use io_uring and shared
 * populated file mappings WITHOUT bufsel (LD_PRELOAD removed from their
 * environment, as a setuid program, a static binary or a cleaned environment
 * would run): nothing bufsel installed may outlive the exec, so each must run
 * exactly as natively.  This program run again as "child" sets up a ring,
 * runs NOPs and maps a file MAP_SHARED|MAP_POPULATE at offset 0 (the ring
 * offset); python3 maps a file the same way with its mmap module.  Each
 * child's output goes to the same stdout while the parent waits.
 */
#include "test/prog/cqe_print.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int child(void)
{
	char path[] = "/tmp/bufsel-exec_uring-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0 || write(fd, "mapped file", 11) != 11)
		die("child: temp file: %s", strerror(errno));
	unlink(path);
	char *m = mmap(NULL, 4096, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (m == MAP_FAILED)
		die("child: mmap: %s", strerror(errno));
	note("child: mapped '%.11s'", m);
	munmap(m, 4096);
	close(fd);

	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("child: queue_init: %s", strerror(-ret));
	nops_print(&ring, 200, 3);
	io_uring_queue_exit(&ring);
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
	fflush(stdout);
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

static const char python_map[] =
	"import mmap, os, tempfile\n"
	"f = tempfile.TemporaryFile()\n"
	"f.write(b'mapped file'.ljust(4096, b'.'))\n"
	"f.flush()\n"
	"m = mmap.mmap(f.fileno(), 4096, flags=mmap.MAP_SHARED | getattr(mmap, 'MAP_POPULATE', 0x8000))\n"
	"print('note python: mapped', bytes(m[:11]).decode(), flush=True)\n"
	"m.close()\n";

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "child") == 0)
		return child();

	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	nops_print(&ring, 100, 3);

	char *self[] = { "/proc/self/exe", "child", NULL };
	run(self, "io_uring child");
	if (access("/usr/bin/python3", X_OK) == 0) {
		char *py[] = { "/usr/bin/python3", "-c", (char *)python_map, NULL };
		run(py, "python child");
	} else {
		note("python: mapped mapped file");	/* what it prints */
		note("python child ok");
	}

	nops_print(&ring, 300, 1);
	io_uring_queue_exit(&ring);
	return 0;
}
