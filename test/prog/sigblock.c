/*
 * io_uring from threads that block every signal: one blocks with
 * pthread_sigmask, one with a raw rt_sigprocmask syscall; each then runs
 * NOPs and a file read on its own ring. A SIGUSR2 handler installed with a
 * full sa_mask uses a ring from inside the handler, where every signal is
 * blocked too. A trap-based shim depends on SIGSYS being deliverable in all
 * three places, and the program must still see the masks it asked for
 * (SIGUSR1 reads back as blocked). The program's own SIGSYS handler,
 * installed first, must still be the one sigaction reports at the end.
 * The file read may be punted and overtake the NOPs: results print by user_data.
 */
#include "test/prog/cqe_print.h"

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

struct job {
	int raw;
	int fd;
	int usr1_blocked;
	struct io_uring_cqe cqe[4];
	char buf[16];
};

static void on_sigsys(int sig)
{
	(void)sig;
}

static void ring_work(struct job *j, unsigned long long base)
{
	struct io_uring ring;
	if (io_uring_queue_init(4, &ring, 0) < 0)
		die("queue_init in a blocked context");
	for (unsigned i = 0; i < 3; i++) {
		struct io_uring_sqe *sqe = get_sqe(&ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = base + i;
	}
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, j->fd, j->buf, sizeof(j->buf) - 1, 0);
	sqe->user_data = base + 3;
	submit_expect(&ring, 4);
	reap(&ring, j->cqe, 4);
	io_uring_queue_exit(&ring);
}

static void *worker(void *arg)
{
	struct job *j = arg;
	sigset_t all, now;
	sigfillset(&all);
	if (j->raw) {
		if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, NULL, _NSIG / 8) != 0)
			die("rt_sigprocmask: %s", strerror(errno));
	} else if (pthread_sigmask(SIG_BLOCK, &all, NULL) != 0) {
		die("pthread_sigmask");
	}
	ring_work(j, j->raw ? 200 : 100);
	pthread_sigmask(SIG_BLOCK, NULL, &now);
	j->usr1_blocked = sigismember(&now, SIGUSR1);
	return NULL;
}

static struct job in_handler;

static void on_usr2(int sig)
{
	(void)sig;
	ring_work(&in_handler, 300);
}

static void print_job(const char *name, struct job *j)
{
	note("%s", name);
	cqe_print_sorted(j->cqe, 4);
	note("%s read \"%s\"", name, j->buf);
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_sigsys }, old;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL) < 0)
		die("sigaction SIGSYS: %s", strerror(errno));

	char path[] = "/tmp/bufsel-sigblock-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0 || write(fd, "masked", 6) != 6)
		die("temp file: %s", strerror(errno));
	unlink(path);

	struct job jobs[2] = { { .raw = 0, .fd = fd }, { .raw = 1, .fd = fd } };
	pthread_t t[2];
	for (unsigned i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, worker, &jobs[i]) != 0)
			die("pthread_create");
	for (unsigned i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	print_job("pthread_sigmask thread", &jobs[0]);
	note("pthread_sigmask thread: SIGUSR1 blocked %d", jobs[0].usr1_blocked);
	print_job("rt_sigprocmask thread", &jobs[1]);
	note("rt_sigprocmask thread: SIGUSR1 blocked %d", jobs[1].usr1_blocked);

	struct sigaction su = { .sa_handler = on_usr2 };
	sigfillset(&su.sa_mask);
	if (sigaction(SIGUSR2, &su, NULL) < 0)
		die("sigaction SIGUSR2: %s", strerror(errno));
	in_handler.fd = fd;
	raise(SIGUSR2);
	print_job("handler with a full sa_mask", &in_handler);

	if (sigaction(SIGSYS, NULL, &old) < 0)
		die("sigaction query: %s", strerror(errno));
	if (old.sa_handler != on_sigsys)
		die("SIGSYS handler replaced");
	note("sigsys handler kept");
	close(fd);
	return 0;
}
