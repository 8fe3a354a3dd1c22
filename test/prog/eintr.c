/*
 * A signal interrupts a blocked wait: with a SIGUSR1 handler installed
 * without SA_RESTART, io_uring_enter(GETEVENTS) on an empty ring returns
 * -EINTR, and liburing passes it up. Checked through io_uring_wait_cqe,
 * io_uring_submit_and_wait, io_uring_wait_cqe_timeout (EXT_ARG) and the raw
 * syscall. Under bufsel the enter may be emulated inside a SIGSYS handler;
 * the program's signal must still interrupt it and its handler still run.
 * A helper thread keeps signalling until the wait returns, since the first
 * signal may land before the main thread is asleep in the kernel.
 */
#include "test/prog/cqe_print.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

static atomic_int stop;
static atomic_int handled;
static pthread_t main_thread;

static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&handled, 1);
}

static void *signaller(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		usleep(20 * 1000);
		if (!atomic_load(&stop))
			pthread_kill(main_thread, SIGUSR1);
	}
	return NULL;
}

static pthread_t start(void)
{
	pthread_t t;
	atomic_store(&stop, 0);
	if (pthread_create(&t, NULL, signaller, NULL) != 0)
		die("pthread_create");
	return t;
}

static void finish(pthread_t t, const char *what, int ret)
{
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	note("%s returned %d", what, ret);
	if (ret != -EINTR)
		die("%s: wanted -EINTR", what);
}

int main(void)
{
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) < 0)
		die("sigaction: %s", strerror(errno));
	main_thread = pthread_self();
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));

	pthread_t t = start();
	ret = io_uring_wait_cqe(&ring, &cqe);
	finish(t, "io_uring_wait_cqe", ret);

	t = start();
	ret = io_uring_submit_and_wait(&ring, 1);
	finish(t, "io_uring_submit_and_wait", ret);

	struct __kernel_timespec ts = { .tv_sec = 5 };
	t = start();
	ret = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
	finish(t, "io_uring_wait_cqe_timeout", ret);

	t = start();
	ret = (int)syscall(__NR_io_uring_enter, ring.ring_fd, 0, 1, IORING_ENTER_GETEVENTS, NULL, 0);
	finish(t, "raw io_uring_enter", ret < 0 ? -errno : ret);

	note("handler ran %s", atomic_load(&handled) >= 4 ? "every time" : "too rarely");

	note("the ring still works");
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 1;
	submit_expect(&ring, 1);
	reap_print(&ring, 1);
	io_uring_queue_exit(&ring);
	return 0;
}
