/*
 * Many threads reach the same io_uring call sites at the same moment: the
 * first to trap rewrites the site while the others are about to execute it,
 * are spinning at it, or are inside the system call it makes.  Each thread
 * has its own ring, waits at a barrier, then submits NOPs one at a time,
 * alternating io_uring_submit_and_wait and io_uring_submit + wait_cqe so
 * both of liburing's enter sites are hit; every CQE must carry the expected
 * user_data and result.  Only the totals are printed.
 */
#include "test/prog/cqe_print.h"

#include <pthread.h>

#define THREADS 8
#define ROUNDS 3000

static pthread_barrier_t start;

struct worker {
	unsigned id;
	unsigned long ok;
	const char *err;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	struct io_uring ring;
	if (io_uring_queue_init(8, &ring, 0) < 0) {
		w->err = "setup failed";
		pthread_barrier_wait(&start);
		return NULL;
	}
	pthread_barrier_wait(&start);
	for (unsigned r = 0; r < ROUNDS && !w->err; r++) {
		struct io_uring_sqe *sqe = get_sqe(&ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = (uint64_t)w->id << 32 | r;
		struct io_uring_cqe *cqe;
		int ret;
		if (r & 1) {
			ret = io_uring_submit_and_wait(&ring, 1);
			if (ret == 1)
				ret = io_uring_peek_cqe(&ring, &cqe);
		} else {
			ret = io_uring_submit(&ring);
			if (ret == 1)
				ret = io_uring_wait_cqe(&ring, &cqe);
		}
		if (ret < 0)
			w->err = "enter failed";
		else if (cqe->user_data != ((uint64_t)w->id << 32 | r) || cqe->res != 0)
			w->err = "wrong completion";
		else
			w->ok++;
		if (!w->err)
			io_uring_cqe_seen(&ring, cqe);
	}
	io_uring_queue_exit(&ring);
	return NULL;
}

int main(void)
{
	pthread_t t[THREADS];
	struct worker w[THREADS];
	pthread_barrier_init(&start, NULL, THREADS);
	for (unsigned i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .id = i };
		if (pthread_create(&t[i], NULL, work, &w[i]))
			die("pthread_create");
	}
	int bad = 0;
	for (unsigned i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		printf("thread %u: %lu of %u nops completed%s%s\n", i, w[i].ok, ROUNDS, w[i].err ? ": " : "",
		       w[i].err ? w[i].err : "");
		bad |= w[i].err != NULL;
	}
	return bad;
}
