/*
 * Shared by the hardened programs (sec_mdwe, sec_wx_filter): io_uring work
 * from liburing's inline system calls (sites bufsel rewrites after their
 * first trap), and the count of mappings that are writable and executable
 * at once, taken afterwards and by a thread that samples /proc/self/maps
 * while the first calls are made.  Natively every count is 0; under bufsel
 * it must be too.
 */
#ifndef BUFSEL_TEST_SEC_WX_H
#define BUFSEL_TEST_SEC_WX_H

#include "test/prog/cqe_print.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* Lines of /proc/self/maps whose permissions have both w and x. */
static inline int wx_count(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	int n = 0;
	if (!f)
		die("/proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		const char *perms = strchr(line, ' ');
		if (perms && perms[1] && perms[2] == 'w' && perms[3] == 'x')
			n++;
	}
	fclose(f);
	return n;
}

static atomic_int wx_stop, wx_seen, wx_samples;

static inline void *wx_sampler(void *arg)
{
	(void)arg;
	while (!atomic_load(&wx_stop) || atomic_load(&wx_samples) == 0) {
		atomic_fetch_add(&wx_seen, wx_count());
		atomic_fetch_add(&wx_samples, 1);
	}
	return NULL;
}

/* Whether mprotect may make a fresh read-write page executable: what the hardening refuses. */
static inline void wx_note_exec_gain(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	note("mprotect to read+exec of a written page: %s",
	     mprotect(p, 4096, PROT_READ | PROT_EXEC) ? strerror(errno) : "allowed");
	void *q = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	note("mmap read+write+exec: %s", q == MAP_FAILED ? strerror(errno) : "allowed");
	munmap(p, 4096);
	if (q != MAP_FAILED)
		munmap(q, 4096);
}

/* NOPs and a provided-buffer read, 20 submits and waits from the same sites. */
static inline void wx_uring_work(const char *who)
{
	pthread_t t;
	atomic_store(&wx_stop, 0);
	atomic_store(&wx_seen, 0);
	atomic_store(&wx_samples, 0);
	if (pthread_create(&t, NULL, wx_sampler, NULL))
		die("pthread_create");
	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("%s: queue_init: %s", who, strerror(-ret));
	nops_print(&ring, 1, 4);
	unsigned ok = 0;
	for (unsigned round = 0; round < 20; round++) {
		for (unsigned i = 0; i < 4; i++) {
			struct io_uring_sqe *sqe = get_sqe(&ring);
			io_uring_prep_nop(sqe);
			sqe->user_data = 100 + i;
		}
		submit_expect(&ring, 4);
		struct io_uring_cqe c[4];
		reap(&ring, c, 4);
		for (unsigned i = 0; i < 4; i++)
			ok += c[i].res == 0;
	}
	note("%s: %u of 80 nops completed with 0", who, ok);

	static char buf[64];
	provided_pipe_read(&ring, buf, sizeof(buf), 3, "hardened");
	note("%s: buffer \"%.8s\"", who, buf);
	io_uring_queue_exit(&ring);

	atomic_store(&wx_stop, 1);
	pthread_join(t, NULL);
	note("%s: writable and executable mappings seen while the calls were made: %d", who, atomic_load(&wx_seen));
	note("%s: writable and executable mappings after them: %d", who, wx_count());
}

/* Runs this program again with "child" (the environment, bufsel's included, goes with it). */
static inline void wx_run_child(void)
{
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		char *args[] = { "/proc/self/exe", "child", NULL };
		execv("/proc/self/exe", args);
		die("execv: %s", strerror(errno));
	}
	int status;
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid: %s", strerror(errno));
	note("child exited %s %d", WIFEXITED(status) ? "with" : "by signal",
	     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

#endif
