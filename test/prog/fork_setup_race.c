/*
 * A process sets up a ring and forks at once; the fork child allocates
 * memory (setenv, malloc) and exits.  Natively io_uring_setup starts no
 * thread of the program's, so such a child is the child of a
 * single-threaded process.  bufsel starts one (its completion mover) inside
 * setup: a fork that copies a thread in the middle of starting copies the
 * locks it holds, and with an allocator that does not take its locks around
 * fork (ASan's in GCC 12) the child would wait for ever on its first malloc.
 * Each round is a fresh process, so each has a mover of its own to start.
 */
#include "test/prog/cqe_print.h"

#include <stdlib.h>
#include <sys/wait.h>

#define ROUNDS 200

static int round_once(void)
{
	struct io_uring ring;
	if (io_uring_queue_init(4, &ring, 0))
		return 1;
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		for (int i = 0; i < 20; i++) {
			char v[16];
			snprintf(v, sizeof(v), "%d", i);
			setenv("FORK_SETUP_RACE", v, 1);
			free(malloc(64 + (size_t)i * 40));
		}
		_exit(0);
	}
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	io_uring_queue_exit(&ring);
	return 0;
}

int main(void)
{
	unsigned ok = 0;
	for (int i = 0; i < ROUNDS; i++) {
		pid_t pid = fork();
		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (pid == 0)
			_exit(round_once());
		int status;
		if (waitpid(pid, &status, 0) != pid)
			die("waitpid: %s", strerror(errno));
		ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
	}
	printf("%u of %d rounds: ring set up, forked, child allocated and exited\n", ok, ROUNDS);
	/* And one ring of its own, whose NOP the exit report counts. */
	struct io_uring ring;
	if (io_uring_queue_init(4, &ring, 0))
		die("queue_init");
	nops_print(&ring, 1, 1);
	io_uring_queue_exit(&ring);
	return 0;
}
