/*
 * The control: a program that never touches io_uring but does the ordinary
 * things a syscall-level shim might catch by mistake: shared and private file
 * mappings at offset 0, a close() of every fd from 3 to 1024, signal mask and
 * handler changes (including SIGSYS), fork and wait. Loaded under bufsel it
 * must behave exactly as natively and report no rings.
 */
#include "test/prog/cqe_print.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t got;

static void on_usr1(int sig)
{
	(void)sig;
	got = 1;
}

int main(void)
{
	char path[] = "/tmp/bufsel-no_uring-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0 || write(fd, "plain file", 10) != 10)
		die("temp file: %s", strerror(errno));
	unlink(path);
	note("file fd %d", fd);

	char *s = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (s == MAP_FAILED || p == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	s[0] = 'P';
	p[1] = 'X';
	char back[11] = { 0 };
	if (pread(fd, back, 10, 0) != 10)
		die("pread: %s", strerror(errno));
	note("file now \"%s\", private view \"%.10s\"", back, p);
	munmap(s, 4096);
	munmap(p, 4096);

	struct sigaction sa = { .sa_handler = on_usr1 }, old;
	sigfillset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) < 0 || sigaction(SIGSYS, &sa, &old) < 0)
		die("sigaction: %s", strerror(errno));
	note("SIGSYS default before %d", old.sa_handler == SIG_DFL);
	sigset_t all, now;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	raise(SIGUSR1);
	note("handler ran while blocked %d", (int)got);
	sigprocmask(SIG_UNBLOCK, &all, &now);
	note("handler ran after unblock %d, SIGUSR1 was blocked %d", (int)got, sigismember(&now, SIGUSR1));

	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		note("child runs");
		_exit(7);
	}
	int status;
	waitpid(pid, &status, 0);
	note("child exit %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);

	/* How many were open depends on what the caller leaked to us: not printed. */
	for (int i = 3; i <= 1024; i++)
		close(i);
	note("closed fds 3 to 1024");
	return 0;
}
