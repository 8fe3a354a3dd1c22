/*
 * The ring closed the way liburing 2.3's io_uring_queue_exit closes it (its
 * mappings unmapped, then an inline close no libc hook sees), and no ring set
 * up afterwards, which is when a shim might look for rings nobody refers to.
 * That close is the ring's last reference, and the kernel releases the ring:
 *  - a READ waiting on a pipe is cancelled: data written afterwards stays in
 *    the pipe, and the read's buffer (kept mapped here, where a program would
 *    have freed or reused it) is never written;
 *  - a registered file goes with it: the write end of a second pipe, which
 *    only the ring's file table holds, is released and the reader sees EOF;
 *  - the ring's io-wq workers exit.
 * Then the ring's fd number is handed out again, to a pipe and (by dup2) to
 * another ring: io_uring_enter and mmap on that number are the new file's.
 */
#define _GNU_SOURCE
#include "test/prog/cqe_print.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static long raw_close(int fd)
{
	long ret;
	__asm__ volatile("syscall" : "=a"(ret) : "a"((long)SYS_close), "D"((long)fd) : "rcx", "r11", "memory");
	return ret;
}

static int iowq_workers(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		die("opendir /proc/self/task: %s", strerror(errno));
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char path[300], comm[64];
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t k = read(fd, comm, sizeof(comm) - 1);
		close(fd);
		if (k > 0 && !strncmp(comm, "iou-wrk-", 8))
			n++;
	}
	closedir(d);
	return n;
}

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

/* Polls for up to 2 s: the kernel's ring teardown runs asynchronously. */
static int eventually(int (*cond)(void *), void *arg)
{
	for (int i = 0; i < 200; i++) {
		if (cond(arg))
			return 1;
		pause_ms(10);
	}
	return 0;
}

static int no_workers(void *arg)
{
	(void)arg;
	return iowq_workers() == 0;
}

static int hung_up(void *arg)
{
	struct pollfd p = { .fd = *(int *)arg, .events = POLLIN };
	return poll(&p, 1, 0) == 1 && (p.revents & POLLHUP);
}

int main(void)
{
	struct io_uring ring;
	int ret = io_uring_queue_init(4, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int data[2], reg[2];
	if (pipe2(data, O_CLOEXEC) || pipe2(reg, O_CLOEXEC))
		die("pipe: %s", strerror(errno));

	/* A worker of the ring's io-wq: a file read forced async. */
	char path[] = "/tmp/bufsel-inline-close-XXXXXX";
	int file = mkstemp(path);
	if (file < 0 || write(file, "0123456789abcdef", 16) != 16)
		die("temporary file: %s", strerror(errno));
	unlink(path);
	char fbuf[16];
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, file, fbuf, sizeof(fbuf), 0);
	sqe->flags |= IOSQE_ASYNC;
	sqe->user_data = 1;
	submit_expect(&ring, 1);
	reap_print(&ring, 1);
	note("io-wq workers before the close: %s", iowq_workers() > 0 ? "some" : "none");

	/* Only the ring holds the second pipe's write end from here on. */
	ret = io_uring_register_files(&ring, &reg[1], 1);
	if (ret < 0)
		die("register_files: %s", strerror(-ret));
	close(reg[1]);

	/* The buffer a program would free after io_uring_queue_exit. */
	unsigned char *buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	memset(buf, 0xaa, 4096);
	sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, data[0], buf, 64, 0);
	sqe->user_data = 2;
	submit_expect(&ring, 1);
	pause_ms(20);
	expect_no_cqe(&ring, "the pipe read before any data");

	munmap(ring.sq.sqes, *ring.sq.kring_entries * sizeof(struct io_uring_sqe));
	if (ring.cq.ring_ptr && ring.cq.ring_ptr != ring.sq.ring_ptr)
		munmap(ring.cq.ring_ptr, ring.cq.ring_sz);
	munmap(ring.sq.ring_ptr, ring.sq.ring_sz);
	note("raw close of the ring: %ld", raw_close(ring.ring_fd));

	note("registered write end released (reader sees EOF): %s",
	     eventually(hung_up, &reg[0]) ? "yes" : "no");
	char out[64];
	memset(out, 0x55, sizeof(out));
	if (write(data[1], out, sizeof(out)) != (ssize_t)sizeof(out))
		die("write: %s", strerror(errno));
	pause_ms(100);
	int touched = 0;
	for (int i = 0; i < 4096; i++)
		touched += buf[i] != 0xaa;
	note("bytes of the read's buffer written after the close: %d", touched);
	if (fcntl(data[0], F_SETFL, O_NONBLOCK) < 0)
		die("fcntl: %s", strerror(errno));
	ssize_t left = read(data[0], out, sizeof(out));
	note("bytes still in the pipe: %zd", left < 0 ? -(ssize_t)errno : left);
	note("io-wq workers gone within 2 s: %s", eventually(no_workers, NULL) ? "yes" : "no");

	int old = ring.ring_fd, p[2];
	if (pipe2(p, O_CLOEXEC))
		die("pipe: %s", strerror(errno));
	note("the ring's number went to a pipe: %s", p[0] == old ? "yes" : "no");
	note("enter on it: %s", strerror(-(int)raw_enter(old, 0, 0, 0, NULL, 0)));
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, old, IORING_OFF_SQ_RING);
	note("mmap of it as a ring: %s", m == MAP_FAILED ? strerror(errno) : "mapped");

	struct io_uring b;
	ret = io_uring_queue_init(8, &b, 0);
	if (ret < 0)
		die("queue_init b: %s", strerror(-ret));
	if (dup2(b.ring_fd, old) != old)
		die("dup2: %s", strerror(errno));
	sqe = get_sqe(&b);
	io_uring_prep_nop(sqe);
	sqe->user_data = 3;
	io_uring_smp_store_release(b.sq.ktail, b.sq.sqe_tail);
	b.sq.sqe_head = b.sq.sqe_tail;
	note("another ring dup2'd to the number: enter submits %ld", raw_enter(old, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0));
	reap_print(&b, 1);
	io_uring_queue_exit(&b);
	return 0;
}
