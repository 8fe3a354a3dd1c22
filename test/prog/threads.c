/*
 * Rings and threads: four threads, each with its own ring, write and read back
 * their own temp file at the same time; then two threads share one ring under
 * a mutex (each holds it across submit and reap, so every CQE it sees is its
 * own). Threads run concurrently, so nothing is printed until all are joined;
 * results are then printed per thread in a fixed order. Fd numbers are not
 * printed here: which thread opens its file first is up to the scheduler.
 */
#include "test/prog/cqe_print.h"

#include <pthread.h>
#include <unistd.h>

#define OWN 4
#define ROUNDS 8

struct own {
	unsigned id;
	struct io_uring_cqe cqe[2 * ROUNDS];
	char readback[ROUNDS][32];
	const char *err;
};

static void *own_ring(void *arg)
{
	struct own *t = arg;
	struct io_uring ring;
	char path[] = "/tmp/bufsel-threads-XXXXXX";
	int fd = mkstemp(path);
	if (fd >= 0)
		unlink(path);
	if (fd < 0 || io_uring_queue_init(4, &ring, 0) < 0) {
		t->err = "setup failed";
		return NULL;
	}
	char w[32];
	for (unsigned r = 0; r < ROUNDS; r++) {
		snprintf(w, sizeof(w), "thread %u round %u", t->id, r);
		struct io_uring_sqe *sqe = get_sqe(&ring);
		io_uring_prep_write(sqe, fd, w, (unsigned)strlen(w), r * 32);
		sqe->user_data = t->id * 1000 + r * 10;
		sqe->flags |= IOSQE_IO_LINK;
		sqe = get_sqe(&ring);
		io_uring_prep_read(sqe, fd, t->readback[r], (unsigned)strlen(w), r * 32);
		sqe->user_data = t->id * 1000 + r * 10 + 1;
		if (io_uring_submit(&ring) != 2) {
			t->err = "submit failed";
			break;
		}
		reap(&ring, &t->cqe[2 * r], 2);
	}
	io_uring_queue_exit(&ring);
	close(fd);
	return NULL;
}

static struct io_uring shared;
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;

struct sharer {
	unsigned id;
	struct io_uring_cqe cqe[ROUNDS * 3];
};

static void *share_ring(void *arg)
{
	struct sharer *t = arg;
	for (unsigned r = 0; r < ROUNDS; r++) {
		pthread_mutex_lock(&shared_lock);
		for (unsigned i = 0; i < 3; i++) {
			struct io_uring_sqe *sqe = get_sqe(&shared);
			io_uring_prep_nop(sqe);
			sqe->user_data = 50000 + t->id * 1000 + r * 10 + i;
		}
		submit_expect(&shared, 3);
		reap(&shared, &t->cqe[r * 3], 3);
		pthread_mutex_unlock(&shared_lock);
	}
	return NULL;
}

int main(void)
{
	pthread_t th[OWN + 2];
	static struct own own[OWN];
	static struct sharer sh[2];
	int ret = io_uring_queue_init(8, &shared, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));

	for (unsigned i = 0; i < OWN; i++) {
		own[i].id = i + 1;
		if (pthread_create(&th[i], NULL, own_ring, &own[i]) != 0)
			die("pthread_create");
	}
	for (unsigned i = 0; i < 2; i++) {
		sh[i].id = i + 1;
		if (pthread_create(&th[OWN + i], NULL, share_ring, &sh[i]) != 0)
			die("pthread_create");
	}
	for (unsigned i = 0; i < OWN + 2; i++)
		pthread_join(th[i], NULL);

	for (unsigned i = 0; i < OWN; i++) {
		if (own[i].err)
			die("thread %u: %s", own[i].id, own[i].err);
		note("thread %u, own ring", own[i].id);
		cqe_print_sorted(own[i].cqe, 2 * ROUNDS);
		for (unsigned r = 0; r < ROUNDS; r++)
			note("thread %u read \"%s\"", own[i].id, own[i].readback[r]);
	}
	for (unsigned i = 0; i < 2; i++) {
		note("thread %u, shared ring", sh[i].id);
		for (unsigned c = 0; c < ROUNDS * 3; c++)
			cqe_print(&sh[i].cqe[c]);
	}
	io_uring_queue_exit(&shared);
	return 0;
}
