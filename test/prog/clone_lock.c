/*
 * A child made with a raw clone(SIGCHLD) runs no atfork handler, so it
 * inherits bufsel's locks as they were: one thread provides and removes
 * buffers in a loop (bufsel's pool lock, request table, SQ and CQ locks),
 * while main clones children that exit at once through exit(), which runs
 * bufsel's exit report (it reads every pool under its lock).  Natively each
 * child exits at once; a child that spins on a lock its parent's thread
 * held is killed after 10 s and the program fails.
 */
#define _GNU_SOURCE
#include "test/prog/cqe_print.h"

#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#define CHILDREN 300
#define NBUFS 8

static struct io_uring ring;
static atomic_int stop;
static char bufs[NBUFS][64];
static atomic_int fails;

static int run_one(void (*prep)(struct io_uring_sqe *), int want)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	struct io_uring_cqe *cqe;
	prep(sqe);
	if (io_uring_submit_and_wait(&ring, 1) != 1 || io_uring_wait_cqe(&ring, &cqe))
		return -1;
	int ok = cqe->res == want;
	io_uring_cqe_seen(&ring, cqe);
	return ok ? 0 : -1;
}

static void prep_provide(struct io_uring_sqe *sqe)
{
	io_uring_prep_provide_buffers(sqe, bufs, sizeof(bufs[0]), NBUFS, 7, 0);
}

static void prep_remove(struct io_uring_sqe *sqe)
{
	io_uring_prep_remove_buffers(sqe, NBUFS, 7);
}

static void *churn(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		if (run_one(prep_provide, 0) || run_one(prep_remove, NBUFS))
			atomic_fetch_add(&fails, 1);
	return NULL;
}

/*
 * LeakSanitizer asks this at exit.  A cloned child's leak check sees the
 * parent's other threads, cannot stop them, and waits for ever on an
 * allocator lock one of them held when it was cloned (GCC 12's ASan takes
 * none of its locks around a clone): the children leave the check to the
 * parent, as stress_fork's do.  (Unused without ASan.)
 */
static int cloned_child;
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
	return cloned_child;
}

/* 1 if the child exited 0 within 10 s. */
static int reap_child(pid_t pid)
{
	for (int i = 0; i < 10000; i++) {
		int st;
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return WIFEXITED(st) && WEXITSTATUS(st) == 0;
		if (r < 0)
			return 0;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return 0;
}

int main(void)
{
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret)
		die("queue_init: %s", strerror(-ret));
	pthread_t t;
	if (pthread_create(&t, NULL, churn, NULL))
		die("pthread_create");
	int ok = 0;
	for (int i = 0; i < CHILDREN; i++) {
		long pid = syscall(SYS_clone, SIGCHLD, 0L, 0L, 0L, 0L);
		if (pid < 0)
			die("clone: %s", strerror(errno));
		if (pid == 0) {
			cloned_child = 1;
			exit(0);
		}
		ok += reap_child((pid_t)pid);
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	note("%d of %d raw-clone children exited 0", ok, CHILDREN);
	note("provide/remove failures: %d", atomic_load(&fails));
	io_uring_queue_exit(&ring);
	return ok == CHILDREN ? 0 : 1;
}
