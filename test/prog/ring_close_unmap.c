/*
 * A ring closed while its multishot receive is busy, then its buffer ring
 * unmapped at once, as liburing's tests do (io_uring_queue_exit, which
 * closes with an inline system call no libc hook sees, then munmap): the
 * kernel pinned the ring's pages, so the program may.  A writer thread keeps
 * data coming on the socket, so completions are in flight at the close.
 * 200 rounds; each prints nothing, the run its count.  Under bufsel nothing
 * may touch the unmapped ring after the close returns (it crashed there).
 */
#include "test/prog/bs_rings.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#define ROUNDS 200
#define ENTRIES 8
#define BUFLEN 64

static atomic_int writing;

static void *writer(void *arg)
{
	int fd = *(int *)arg;
	char msg[16] = "0123456789abcdef";
	while (atomic_load(&writing))
		if (send(fd, msg, sizeof(msg), MSG_DONTWAIT) < 0 && errno != EAGAIN)
			break;
	return NULL;
}

static void round_once(void)
{
	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	struct io_uring_buf_ring *br = ring_new(ring.ring_fd, 1, ENTRIES);
	char *bufs = mmap(NULL, ENTRIES * BUFLEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (bufs == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	for (unsigned i = 0; i < ENTRIES; i++)
		io_uring_buf_ring_add(br, bufs + i * BUFLEN, BUFLEN, (unsigned short)i, io_uring_buf_ring_mask(ENTRIES),
				      (int)i);
	io_uring_buf_ring_advance(br, ENTRIES);
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		die("socketpair: %s", strerror(errno));
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_recv_multishot(sqe, sv[0], NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 1;
	submit_expect(&ring, 1);
	atomic_store(&writing, 1);
	pthread_t t;
	if (pthread_create(&t, NULL, writer, &sv[1]))
		die("pthread_create");
	/* Some completions first: the receive is running when the ring goes. */
	struct io_uring_cqe *cqe;
	for (int seen = 0; seen < 3; seen++) {
		ret = io_uring_wait_cqe(&ring, &cqe);
		if (ret < 0)
			die("wait: %s", strerror(-ret));
		io_uring_cqe_seen(&ring, cqe);
	}
	io_uring_queue_exit(&ring);
	munmap(br, 4096);
	munmap(bufs, ENTRIES * BUFLEN);
	atomic_store(&writing, 0);
	pthread_join(t, NULL);
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	for (int i = 0; i < ROUNDS; i++)
		round_once();
	note("%d rounds", ROUNDS);
	return 0;
}
