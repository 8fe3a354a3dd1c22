/*
 * A dup() of the ring fd is the same ring: SQEs prepared through liburing and
 * published in the SQ ring are submitted with a raw io_uring_enter on the
 * duplicate, a file table is registered through the duplicate and then used
 * through the original, and the ring keeps working after the duplicate is
 * closed. A shim that only recognises the fd number it handed out sends the
 * duplicate's calls straight to the kernel, with its own SQ never read.
 */
#include "test/prog/cqe_print.h"

#include <sys/syscall.h>
#include <unistd.h>

/* What io_uring_submit does before entering: make the prepared SQEs visible. */
static unsigned publish(struct io_uring *ring)
{
	unsigned n = ring->sq.sqe_tail - ring->sq.sqe_head;
	ring->sq.sqe_head = ring->sq.sqe_tail;
	io_uring_smp_store_release(ring->sq.ktail, ring->sq.sqe_tail);
	return n;
}

static int enter(int fd, unsigned to_submit, unsigned min_complete, unsigned flags)
{
	int ret = (int)syscall(__NR_io_uring_enter, fd, to_submit, min_complete, flags, NULL, 0);
	return ret < 0 ? -errno : ret;
}

int main(void)
{
	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int d = dup(ring.ring_fd);
	if (d < 0)
		die("dup: %s", strerror(errno));
	note("ring fd %d, dup %d", ring.ring_fd, d);
	char path[] = "/tmp/bufsel-dup_fd-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0 || write(fd, "through the duplicate", 21) != 21)
		die("temp file: %s", strerror(errno));
	unlink(path);

	note("four nops entered through the duplicate");
	for (unsigned i = 0; i < 4; i++) {
		struct io_uring_sqe *sqe = get_sqe(&ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = 1 + i;
	}
	unsigned n = publish(&ring);
	note("enter(dup, %u, 4, GETEVENTS) returned %d", n, enter(d, n, 4, IORING_ENTER_GETEVENTS));
	note("cq ready %u", io_uring_cq_ready(&ring));
	reap_print(&ring, 4);

	note("a file read entered through the duplicate");
	char buf[32] = { 0 };
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, fd, buf, sizeof(buf) - 1, 0);
	sqe->user_data = 10;
	n = publish(&ring);
	note("enter(dup, %u, 1, GETEVENTS) returned %d", n, enter(d, n, 1, IORING_ENTER_GETEVENTS));
	reap_print(&ring, 1);
	note("read \"%s\"", buf);

	note("files registered through the duplicate, used through the original");
	ret = (int)syscall(__NR_io_uring_register, d, IORING_REGISTER_FILES, &fd, 1);
	note("register(dup, FILES) returned %d", ret < 0 ? -errno : ret);
	memset(buf, 0, sizeof(buf));
	sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, 0, buf, 7, 4);
	sqe->flags |= IOSQE_FIXED_FILE;
	sqe->user_data = 20;
	submit_expect(&ring, 1);
	reap_print(&ring, 1);
	note("fixed read \"%s\"", buf);

	note("duplicate closed, the original still works");
	close(d);
	note("enter(closed dup) returned %d", enter(d, 0, 0, 0));
	sqe = get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 30;
	submit_expect(&ring, 1);
	reap_print(&ring, 1);

	close(fd);
	io_uring_queue_exit(&ring);
	return 0;
}
