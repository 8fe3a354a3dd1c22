/*
 * A process under bufsel (which installs its seccomp filter) execs a child
 * in which bufsel cannot initialise: lib/occupy_trampoline.so, whose
 * constructor runs before bufsel's, takes the trampoline's fixed page.  The filter inherited from
 * the parent still traps the child's io_uring calls and its shared populated
 * file mappings; the child must not die of it (SIGSYS, exit 159).  It maps a
 * file MAP_SHARED|MAP_POPULATE at offset 0 and checks its contents, then
 * tries a ring: natively it gets one and runs NOPs; under a bufsel that
 * could not initialise the inherited filter leaves no way to the kernel's
 * io_uring, so io_uring_setup fails with -ENOSYS as on a kernel without it.
 * Which of the two happened goes to stderr (security.c checks it); stdout
 * holds what must hold either way.
 */
#include "test/prog/cqe_print.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static int child(void)
{
	char path[] = "/tmp/bufsel-init_fail-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0 || write(fd, "mapped file", 11) != 11)
		die("child: temp file: %s", strerror(errno));
	unlink(path);
	char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (m == MAP_FAILED)
		die("child: mmap: %s", strerror(errno));
	if (memcmp(m, "mapped file", 11) != 0)
		die("child: mmap: wrong contents");
	munmap(m, 4096);
	close(fd);
	note("child: shared populated mapping ok");

	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret == -ENOSYS) {
		fprintf(stderr, "init_fail child: io_uring_queue_init: -ENOSYS\n");
	} else if (ret < 0) {
		die("child: queue_init: %s", strerror(-ret));
	} else {
		for (unsigned i = 0; i < 4; i++) {
			struct io_uring_sqe *sqe = get_sqe(&ring);
			io_uring_prep_nop(sqe);
			sqe->user_data = 100 + i;
		}
		if (io_uring_submit(&ring) != 4)
			die("child: submit");
		for (unsigned i = 0; i < 4; i++) {
			struct io_uring_cqe *cqe;
			if (io_uring_wait_cqe(&ring, &cqe) || cqe->res != 0 || cqe->user_data != 100 + i)
				die("child: nop %u", i);
			io_uring_cqe_seen(&ring, cqe);
		}
		io_uring_queue_exit(&ring);
		fprintf(stderr, "init_fail child: 4 NOPs completed\n");
	}
	note("child: done");
	return 0;
}

/* LD_PRELOAD for the child: whatever was there, then the occupying library,
 * whose constructor ld.so runs first (preloads initialise in reverse order). */
static void set_child_preload(void)
{
	static char lib[PATH_MAX], val[2 * PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", lib, sizeof(lib) - 64);
	if (n <= 0)
		die("readlink: %s", strerror(errno));
	lib[n] = 0;
	strcpy(strrchr(lib, '/'), "/lib/occupy_trampoline.so");
	const char *cur = getenv("LD_PRELOAD");
	snprintf(val, sizeof(val), "%s%s%s", cur ? cur : "", cur && *cur ? ":" : "", lib);
	setenv("LD_PRELOAD", val, 1);
#ifdef __SANITIZE_ADDRESS__
	/* In an ASan build the executable links the ASan runtime, and a
	 * preloaded library now comes before it in the initial list, which the
	 * runtime refuses unless told that the order is intended. */
	static char opts[1024];
	const char *o = getenv("ASAN_OPTIONS");
	snprintf(opts, sizeof(opts), "%s%sverify_asan_link_order=0", o ? o : "", o && *o ? ":" : "");
	setenv("ASAN_OPTIONS", opts, 1);
#endif
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "child") == 0)
		return child();

	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	nops_print(&ring, 1, 3);

	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		set_child_preload();
		execl("/proc/self/exe", argv[0], "child", (char *)NULL);
		die("execl: %s", strerror(errno));
	}
	int status;
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid: %s", strerror(errno));
	if (WIFSIGNALED(status))
		die("child: killed by signal %d", WTERMSIG(status));
	if (WEXITSTATUS(status) != 0)
		die("child: exit status %d", WEXITSTATUS(status));
	note("child ok");

	nops_print(&ring, 10, 1);
	io_uring_queue_exit(&ring);
	return 0;
}
