/*
 * Regular-file I/O through the ring: OPENAT (the fd number the kernel picks is
 * printed, and must match natively and under bufsel), positioned writes and
 * reads, WRITEV/READV, offset -1 (current file position), reads at EOF, a read
 * on a write-only fd (-EBADF), FSYNC and CLOSE, then an OPENAT that reuses the
 * freed fd number. Independent operations in one submit may be punted to
 * io-wq and finish in any order, so those batches are printed by user_data.
 */
#include "test/prog/cqe_print.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

static struct io_uring ring;

static int one(struct io_uring_sqe *sqe, unsigned long long ud)
{
	struct io_uring_cqe c;
	sqe->user_data = ud;
	submit_expect(&ring, 1);
	reap(&ring, &c, 1);
	cqe_print(&c);
	return c.res;
}

static char path[] = "/tmp/bufsel-file_rw-XXXXXX";

/* die() exits: the file goes on every path out. */
static void remove_path(void)
{
	unlink(path);
}

int main(void)
{
	int tmp = mkstemp(path);
	if (tmp < 0)
		die("mkstemp: %s", strerror(errno));
	atexit(remove_path);
	close(tmp);
	int ret = io_uring_queue_init(16, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));

	note("openat rdwr");
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_openat(sqe, AT_FDCWD, path, O_RDWR, 0);
	int fd = one(sqe, 1);
	if (fd < 0)
		die("openat: %s", strerror(-fd));

	note("three positioned writes");
	static char w[3][4096];
	for (unsigned i = 0; i < 3; i++) {
		memset(w[i], 'a' + i, sizeof(w[i]));
		sqe = get_sqe(&ring);
		io_uring_prep_write(sqe, fd, w[i], sizeof(w[i]), i * 4096);
		sqe->user_data = 10 + i;
	}
	submit_expect(&ring, 3);
	reap_print_sorted(&ring, 3);

	note("three positioned reads, last one short at EOF");
	static char r[3][4096];
	for (unsigned i = 0; i < 3; i++) {
		sqe = get_sqe(&ring);
		io_uring_prep_read(sqe, fd, r[i], i == 2 ? 4096 : 4000, i * 4096 + (i == 2 ? 96 : 0));
		sqe->user_data = 20 + i;
	}
	submit_expect(&ring, 3);
	reap_print_sorted(&ring, 3);
	for (unsigned i = 0; i < 3; i++)
		if (memcmp(r[i], w[i], 4000) != 0)
			die("read %u: wrong data", i);
	note("reads match writes");

	note("writev then linked readv");
	char v0[] = "hello ", v1[] = "vectored ", v2[] = "world";
	struct iovec wv[3] = { { v0, 6 }, { v1, 9 }, { v2, 5 } };
	char r0[8] = { 0 }, r1[13] = { 0 };
	struct iovec rv[2] = { { r0, 7 }, { r1, 12 } };
	sqe = get_sqe(&ring);
	io_uring_prep_writev(sqe, fd, wv, 3, 100);
	sqe->user_data = 30;
	sqe->flags |= IOSQE_IO_LINK;
	sqe = get_sqe(&ring);
	io_uring_prep_readv(sqe, fd, rv, 2, 100);
	sqe->user_data = 31;
	submit_expect(&ring, 2);
	reap_print_sorted(&ring, 2);
	note("readv got \"%s\" \"%s\"", r0, r1);

	note("read at end of file, then from the file position");
	char buf[64] = { 0 };
	sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, fd, buf, sizeof(buf), 3 * 4096);
	one(sqe, 40);
	if (lseek(fd, 100, SEEK_SET) != 100)
		die("lseek: %s", strerror(errno));
	sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, fd, buf, 20, -1);
	one(sqe, 41);
	note("position read \"%.20s\", file offset now %lld", buf, (long long)lseek(fd, 0, SEEK_CUR));

	note("fsync");
	sqe = get_sqe(&ring);
	io_uring_prep_fsync(sqe, fd, 0);
	one(sqe, 50);

	note("read on a write-only fd, close it, reopen");
	sqe = get_sqe(&ring);
	io_uring_prep_openat(sqe, AT_FDCWD, path, O_WRONLY, 0);
	int wfd = one(sqe, 60);
	if (wfd < 0)
		die("openat wronly: %s", strerror(-wfd));
	sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, wfd, buf, 10, 0);
	one(sqe, 61);
	sqe = get_sqe(&ring);
	io_uring_prep_close(sqe, wfd);
	one(sqe, 62);
	sqe = get_sqe(&ring);
	io_uring_prep_openat(sqe, AT_FDCWD, path, O_RDONLY, 0);
	one(sqe, 63);
	sqe = get_sqe(&ring);
	io_uring_prep_openat(sqe, AT_FDCWD, "/nonexistent/bufsel", O_RDONLY, 0);
	one(sqe, 64);

	io_uring_queue_exit(&ring);
	return 0;
}
