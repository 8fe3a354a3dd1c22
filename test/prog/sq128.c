/*
 * Big entries: an IORING_SETUP_SQE128 ring (128-byte SQEs, so every SQE index
 * is a 128-byte stride in the SQE array) and an SQE128|CQE32 ring (32-byte
 * CQEs too). bufsel passes these through to the kernel untouched; NOPs and a
 * file read must behave as natively, and a ring-full of NOPs checks that the
 * whole SQE and CQE arrays are laid out with the right stride.
 */
#include "test/prog/cqe_print.h"

#include <unistd.h>

static void run(const char *name, unsigned flags, int fd)
{
	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, flags);
	note("%s: queue_init returned %d", name, ret);
	if (ret < 0)
		die("%s: %s", name, strerror(-ret));

	for (unsigned round = 0; round < 3; round++) {
		for (unsigned i = 0; i < 8; i++) {
			struct io_uring_sqe *sqe = get_sqe(&ring);
			io_uring_prep_nop(sqe);
			sqe->user_data = round * 10 + i;
		}
		submit_expect(&ring, 8);
		reap_print(&ring, 8);
	}

	char buf[16] = { 0 };
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, fd, buf, sizeof(buf) - 1, 0);
	sqe->user_data = 100;
	submit_expect(&ring, 1);
	struct io_uring_cqe *cqe;
	if (io_uring_wait_cqe(&ring, &cqe) < 0)
		die("wait");
	cqe_print(cqe);
	if (flags & IORING_SETUP_CQE32)
		note("big cqe extra words %llu %llu", (unsigned long long)cqe->big_cqe[0],
		     (unsigned long long)cqe->big_cqe[1]);
	io_uring_cqe_seen(&ring, cqe);
	note("read \"%s\"", buf);
	io_uring_queue_exit(&ring);
}

int main(void)
{
	char path[] = "/tmp/bufsel-sq128-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0 || write(fd, "wide entries", 12) != 12)
		die("temp file: %s", strerror(errno));
	unlink(path);
	run("sqe128", IORING_SETUP_SQE128, fd);
	run("sqe128|cqe32", IORING_SETUP_SQE128 | IORING_SETUP_CQE32, fd);
	run("cqe32", IORING_SETUP_CQE32, fd);
	close(fd);
	return 0;
}
