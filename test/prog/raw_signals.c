/*
 * System calls a program (or a runtime such as a sanitizer's, or Go's) makes
 * with its own `syscall` instructions, outside libc, around a ring: under
 * Syscall User Dispatch each of them traps, and bufsel must answer as the
 * kernel would (docs/interception.md, the table under Syscall User
 * Dispatch).  A handler installed by a raw rt_sigaction with a restorer of
 * the program's own (its rt_sigreturn traps); raw rt_sigprocmask blocking a
 * signal and SIGSYS, with ring NOPs while SIGSYS is "blocked"; a raw fork
 * whose child uses a ring; and, in a thread of its own, a raw vfork (a clone
 * that shares memory: it cannot run inside a signal handler).  stdout is the
 * same natively and under bufsel, whichever trap.
 */
#include "test/prog/cqe_print.h"

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static long raw6(long nr, long a1, long a2, long a3, long a4)
{
	register long r10 __asm__("r10") = a4;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}

/* The program's own restorer, as runtimes without libc have. */
void raw_restorer(void);
__asm__(".text\n"
	".globl raw_restorer\n"
	".type raw_restorer, @function\n"
	"raw_restorer:\n"
	"	mov $15, %eax\n"
	"	syscall\n"
	"	hlt\n"
	".size raw_restorer, .-raw_restorer\n");

struct ksigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	unsigned long mask;
};

static volatile sig_atomic_t got;

static void on_usr1(int sig)
{
	(void)sig;
	got++;
}

static unsigned long bit(int sig)
{
	return 1UL << (sig - 1);
}

static unsigned long raw_mask(int how, unsigned long set)
{
	unsigned long old = 0;
	long r = raw6(SYS_rt_sigprocmask, how, (long)&set, (long)&old, 8);
	if (r)
		die("raw rt_sigprocmask: %ld", r);
	return old;
}

static void *vfork_thread(void *arg)
{
	(void)arg;
	long pid = raw6(SYS_vfork, 0, 0, 0, 0);
	if (pid == 0)
		raw6(SYS_exit, 7, 0, 0, 0);
	int status;
	if (pid < 0 || waitpid((pid_t)pid, &status, 0) != pid)
		die("raw vfork: %ld", pid);
	note("raw vfork: child exit %d", WEXITSTATUS(status));
	return NULL;
}

int main(void)
{
	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	nops_print(&ring, 100, 2);

	/* A handler with the program's own restorer. */
	struct ksigaction act = { on_usr1, 0x04000000 /* SA_RESTORER */, raw_restorer, 0 }, old;
	long r = raw6(SYS_rt_sigaction, SIGUSR1, (long)&act, (long)&old, 8);
	if (r)
		die("raw rt_sigaction: %ld", r);
	for (int i = 0; i < 3; i++)
		raise(SIGUSR1);
	note("own restorer: handler ran %d times", (int)got);

	/* Raw mask changes: USR1 stays pending while blocked. */
	unsigned long was = raw_mask(SIG_BLOCK, bit(SIGUSR1) | bit(SIGSYS));
	sigset_t cur;
	sigprocmask(SIG_BLOCK, NULL, &cur);
	note("raw block: USR1 %d SYSS %d, before: USR1 %d", sigismember(&cur, SIGUSR1), sigismember(&cur, SIGSYS),
	     !!(was & bit(SIGUSR1)));
	raise(SIGUSR1);
	note("blocked: handler ran %d times", (int)got);
	nops_print(&ring, 200, 2);
	unsigned long now = raw_mask(SIG_UNBLOCK, bit(SIGUSR1) | bit(SIGSYS));
	note("raw unblock: handler ran %d times, old mask had USR1 %d SYS %d", (int)got, !!(now & bit(SIGUSR1)),
	     !!(now & bit(SIGSYS)));

	/* A raw fork: the child uses a ring of its own. */
	fflush(stdout);
	long pid = raw6(SYS_fork, 0, 0, 0, 0);
	if (pid == 0) {
		struct io_uring child;
		if (io_uring_queue_init(4, &child, 0) < 0)
			_exit(3);
		nops_print(&child, 300, 2);
		io_uring_queue_exit(&child);
		fflush(stdout);
		_exit(0);
	}
	int status;
	if (pid < 0 || waitpid((pid_t)pid, &status, 0) != pid)
		die("raw fork: %ld", pid);
	note("raw fork: child exit %d", WEXITSTATUS(status));

	pthread_t t;
	if (pthread_create(&t, NULL, vfork_thread, NULL) || pthread_join(t, NULL))
		die("pthread");
	nops_print(&ring, 400, 2);
	io_uring_queue_exit(&ring);
	return 0;
}
