/*
 * An IORING_SETUP_SINGLE_ISSUER|IORING_SETUP_DEFER_TASKRUN ring: completions
 * that need task work are only posted when the submitting task enters with
 * GETEVENTS. NOPs, a pipe read made ready by a plain write, file write/read,
 * and io_uring_get_events (enter with GETEVENTS and nothing to wait for).
 * A second thread entering the ring must get -EEXIST (SINGLE_ISSUER): bufsel
 * must not make the kernel see its own thread as the issuer.  Chains of
 * linked NOPs show how many task-work passes an enter makes.  A drain on a
 * chain's member is the kernel's at the member's submission: a skip that
 * turns drains off before the member runs does not fail it.
 */
#include "test/prog/cqe_print.h"

#include <pthread.h>
#include <unistd.h>

static struct io_uring ring;
static int other_ret;

static void *other_thread(void *arg)
{
	(void)arg;
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 99;
	other_ret = io_uring_submit(&ring);
	return NULL;
}

int main(void)
{
	struct io_uring_params p = { .flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN };
	int ret = io_uring_queue_init_params(8, &ring, &p);
	if (ret < 0)
		die("queue_init DEFER_TASKRUN: %s", strerror(-ret));
	int pp[2];
	if (pipe(pp) < 0)
		die("pipe: %s", strerror(errno));
	char path[] = "/tmp/bufsel-defer_taskrun-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		die("mkstemp: %s", strerror(errno));
	unlink(path);

	note("nops");
	for (unsigned i = 0; i < 4; i++) {
		struct io_uring_sqe *sqe = get_sqe(&ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = 1 + i;
	}
	submit_expect(&ring, 4);
	reap_print(&ring, 4);

	note("pipe read completes after a plain write");
	char buf[16] = { 0 };
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, pp[0], buf, sizeof(buf) - 1, 0);
	sqe->user_data = 10;
	submit_expect(&ring, 1);
	if (write(pp[1], "deferred", 8) != 8)
		die("write: %s", strerror(errno));
	note("get_events returned %d", io_uring_get_events(&ring));
	reap_print(&ring, 1);
	note("read got \"%s\"", buf);

	note("file write then linked read");
	sqe = get_sqe(&ring);
	io_uring_prep_write(sqe, fd, "taskrun", 7, 0);
	sqe->user_data = 20;
	sqe->flags |= IOSQE_IO_LINK;
	sqe = get_sqe(&ring);
	memset(buf, 0, sizeof(buf));
	io_uring_prep_read(sqe, fd, buf, sizeof(buf) - 1, 0);
	sqe->user_data = 21;
	ret = io_uring_submit_and_wait(&ring, 2);
	note("submit_and_wait returned %d", ret);
	reap_print_sorted(&ring, 2);
	note("read got \"%s\"", buf);

	note("submit from another thread");
	pthread_t t;
	if (pthread_create(&t, NULL, other_thread, NULL) != 0)
		die("pthread_create");
	pthread_join(t, NULL);
	note("other thread's submit returned %d", other_ret);
	note("owner's submit returned %d", io_uring_submit(&ring));
	reap_print(&ring, 1);

	/* An enter that submits and waits runs the task work twice (after the
	 * SQEs, and as its wait begins), one that only waits once: a chain's
	 * next link comes in each pass. */
	for (unsigned n = 1; n <= 5; n++) {
		for (unsigned i = 0; i < n; i++) {
			sqe = get_sqe(&ring);
			io_uring_prep_nop(sqe);
			sqe->flags |= i + 1 < n ? IOSQE_IO_LINK : 0;
			sqe->user_data = 30 + 10 * n + i;
		}
		ret = io_uring_submit_and_get_events(&ring);
		note("chain of %u linked NOPs: submit_and_get_events returned %d, %u CQEs", n, ret,
		     io_uring_cq_ready(&ring));
		reap_print(&ring, io_uring_cq_ready(&ring));
		io_uring_get_events(&ring);
		note("after get_events: %u CQEs", io_uring_cq_ready(&ring));
		reap_print(&ring, io_uring_cq_ready(&ring));
		io_uring_get_events(&ring);
		io_uring_get_events(&ring);
		reap_print(&ring, io_uring_cq_ready(&ring));
	}

	note("chain: PROVIDE_BUFFERS, drained buffer-select RECV (IOSQE_ASYNC) of a closed fd; then a NOP with "
	     "IOSQE_IO_DRAIN and IOSQE_CQE_SKIP_SUCCESS (drains off, itself -EOPNOTSUPP), a NOP: the RECV "
	     "drained at its submission, and fails at issue (-EBADF)");
	int closed[2];
	if (pipe(closed) < 0)
		die("pipe: %s", strerror(errno));
	close(closed[0]);
	close(closed[1]);
	static char one[16];
	sqe = get_sqe(&ring);
	io_uring_prep_provide_buffers(sqe, one, sizeof(one), 1, 5, 0);
	sqe->user_data = 69;
	sqe = get_sqe(&ring);
	io_uring_prep_provide_buffers(sqe, one, sizeof(one), 1, 6, 0);
	sqe->flags |= IOSQE_IO_LINK;
	sqe->user_data = 70;
	sqe = get_sqe(&ring);
	io_uring_prep_recv(sqe, closed[0], NULL, sizeof(one), 0);
	sqe->flags |= IOSQE_BUFFER_SELECT | IOSQE_IO_DRAIN | IOSQE_ASYNC;
	sqe->buf_group = 5;
	sqe->user_data = 71;
	note("submit returned %d", io_uring_submit(&ring));
	sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->flags |= IOSQE_IO_DRAIN | IOSQE_CQE_SKIP_SUCCESS;
	sqe->user_data = 72;
	note("submit returned %d", io_uring_submit(&ring));
	sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 73;
	note("submit returned %d", io_uring_submit(&ring));
	reap_print_sorted(&ring, 5);

	close(fd);
	close(pp[0]);
	close(pp[1]);
	io_uring_queue_exit(&ring);
	return 0;
}
