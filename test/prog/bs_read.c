/*
 * READ and READV with IOSQE_BUFFER_SELECT on pipes, a socket and a regular
 * file. A READ binds its buffer at the first attempt and keeps it:
 *  - pending on an empty pipe (O_NONBLOCK or not) or an idle socket, it holds
 *    the group's only buffer: a second READ gets -ENOBUFS at once, whether or
 *    not its own fd has data;
 *  - EOF completes with F_BUFFER set and the buffer consumed;
 *  - errors found after selection carry F_BUFFER and consume the buffer:
 *    -EBADF on a write-only fd, -EFAULT into an unmapped buffer, -EAGAIN with
 *    RWF_NOWAIT on an empty pipe, -ECANCELED for a cancelled pending READ,
 *    and -ENOBUFS when the selected buffer was provided at address NULL;
 *  - a bad fd is caught before selection and takes no buffer.
 * Lengths: sqe->len 0 is the whole buffer, a smaller len caps it, a larger
 * one is cut to the buffer; sqe->addr is ignored. READV takes exactly one
 * iovec (0 or 2 is -EINVAL, no buffer taken), whose iov_len, read at
 * submission, is the length. A regular file is read at explicit offsets, at
 * the file position (-1) and with IOSQE_ASYNC.
 * Each step submits and reaps on its own, except the cancel pair, which
 * completes from two contexts and is printed by user_data.
 */
#include "test/prog/bs_bufs.h"

#include <linux/fs.h>
#include <sys/mman.h>
#include <sys/uio.h>

static struct io_uring ring;

static struct io_uring_sqe *readv_sel(int fd, const struct iovec *iov, unsigned nr, unsigned bgid,
				      unsigned long long off, unsigned long long ud)
{
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_readv(sqe, fd, iov, nr, off);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = (__u16)bgid;
	sqe->user_data = ud;
	return sqe;
}

static void pipe_or_die(int p[2])
{
	if (pipe(p) < 0)
		die("pipe: %s", strerror(errno));
}

int main(void)
{
	int ret = io_uring_queue_init(16, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int p[2];
	pipe_or_die(p);

	note("group 1 has one buffer; a READ pending on an empty pipe holds it");
	struct arena a1 = arena_new(32, 1);
	provide(&ring, &a1, 1, 0, 1, 1);
	prep_read_sel(&ring, p[0], 0, 1, 0, 2);
	submit_expect(&ring, 1);
	expect_pending(&ring, "READ on an empty pipe");
	note("a second READ on the same group");
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 1, 0, 0), 3, &a1);
	write_all(p[1], "hello", 5);
	reap_show(&ring, 1, &a1);

	note("data already there");
	provide(&ring, &a1, 1, 0, 1, 4);
	write_all(p[1], "world!", 6);
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 1, 0, 0), 5, &a1);

	note("EOF: F_BUFFER set, the buffer consumed");
	struct arena a2 = arena_new(16, 4);
	provide(&ring, &a2, 2, 0, 4, 10);
	int e[2];
	pipe_or_die(e);
	close(e[1]);
	run_one(&ring, prep_read_sel(&ring, e[0], 0, 2, 0, 0), 11, &a2);
	note("a READ pending when the write end closes");
	int f[2];
	pipe_or_die(f);
	prep_read_sel(&ring, f[0], 0, 2, 0, 12);
	submit_expect(&ring, 1);
	expect_pending(&ring, "READ before close");
	close(f[1]);
	reap_show(&ring, 1, &a2);
	next_bid(&ring, 2, 13, &a2);

	note("error after selection: READ on the write end of a pipe");
	run_one(&ring, prep_read_sel(&ring, p[1], 0, 2, 0, 0), 14, &a2);
	note("the group is now empty");
	next_bid(&ring, 2, 15, &a2);

	note("error after selection: -EFAULT into a buffer that is not mapped");
	void *none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (none == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	struct arena a3 = arena_new(16, 8);
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_provide_buffers(sqe, none, 16, 1, 3, 6);
	run_one(&ring, sqe, 19, NULL);
	write_all(p[1], "fault", 5);
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 3, 0, 0), 20, &a3);
	note("a buffer at address NULL: the selection itself fails");
	sqe = get_sqe(&ring);
	io_uring_prep_provide_buffers(sqe, NULL, 16, 1, 3, 7);
	run_one(&ring, sqe, 21, NULL);
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 3, 0, 0), 22, &a3);
	note("the bytes stayed in the pipe; the next buffer gets them");
	provide(&ring, &a3, 3, 0, 2, 23);
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 3, 0, 0), 24, &a3);

	note("bad fd before selection: no buffer taken");
	int bad = dup(p[0]);
	if (bad < 0 || close(bad) < 0)
		die("dup: %s", strerror(errno));
	run_one(&ring, prep_read_sel(&ring, bad, 0, 3, 0, 0), 25, &a3);
	run_one(&ring, prep_read_sel(&ring, -1, 0, 3, 0, 0), 26, &a3);
	next_bid(&ring, 3, 27, &a3);

	note("cancel a pending READ: -ECANCELED with F_BUFFER");
	provide(&ring, &a3, 3, 2, 2, 30);
	prep_read_sel(&ring, p[0], 0, 3, 0, 31);
	submit_expect(&ring, 1);
	expect_pending(&ring, "READ to cancel");
	sqe = get_sqe(&ring);
	io_uring_prep_cancel64(sqe, 31, 0);
	sqe->user_data = 32;
	submit_expect(&ring, 1);
	reap_show_sorted(&ring, 2, &a3);
	note("the cancelled READ's buffer is consumed");
	next_bid(&ring, 3, 33, &a3);

	note("lengths: 20 bytes queued, buffers of 16");
	struct arena a4 = arena_new(16, 8);
	provide(&ring, &a4, 4, 0, 8, 40);
	write_all(p[1], "ABCDEFGHIJKLMNOPQRST", 20);
	note("len 0: the whole buffer");
	run_one(&ring, prep_read_sel(&ring, p[0], 0, 4, 0, 0), 41, &a4);
	note("len 3: smaller than the buffer");
	run_one(&ring, prep_read_sel(&ring, p[0], 3, 4, 0, 0), 42, &a4);
	note("len 100: larger than the buffer, one byte left");
	run_one(&ring, prep_read_sel(&ring, p[0], 100, 4, 0, 0), 43, &a4);
	write_all(p[1], "abcdefghijklmnopqrst", 20);
	run_one(&ring, prep_read_sel(&ring, p[0], 100, 4, 0, 0), 44, &a4);
	note("sqe->addr is ignored");
	sqe = prep_read_sel(&ring, p[0], 0, 4, 0, 0);
	sqe->addr = 0x10;
	run_one(&ring, sqe, 45, &a4);

	note("READV: iovcnt 0 and 2, no buffer taken");
	struct arena a5 = arena_new(16, 8);
	provide(&ring, &a5, 5, 0, 8, 50);
	struct iovec iov[2] = { { NULL, 5 }, { NULL, 5 } };
	write_all(p[1], "0123456789abcdefghij", 20);
	run_one(&ring, readv_sel(p[0], iov, 0, 5, 0, 0), 51, &a5);
	run_one(&ring, readv_sel(p[0], iov, 2, 5, 0, 0), 52, &a5);
	note("READV: iov_len 5 is the length, iov_base is ignored");
	run_one(&ring, readv_sel(p[0], iov, 1, 5, 0, 0), 53, &a5);
	note("READV: iov_len 0 is the whole buffer");
	iov[0].iov_len = 0;
	run_one(&ring, readv_sel(p[0], iov, 1, 5, 0, 0), 54, &a5);
	note("READV: iov_len 64 is cut to the buffer");
	iov[0].iov_len = 64;
	write_all(p[1], "0123456789abcdefghij", 20);
	run_one(&ring, readv_sel(p[0], iov, 1, 5, 0, 0), 55, &a5);
	note("READV: the iovec is read at submission, not when data arrives");
	int g[2];
	pipe_or_die(g);
	struct iovec late = { NULL, 4 };
	readv_sel(g[0], &late, 1, 5, 0, 56);
	submit_expect(&ring, 1);
	expect_pending(&ring, "READV on an empty pipe");
	late.iov_len = 16;
	write_all(g[1], "0123456789", 10);
	reap_show(&ring, 1, &a5);

	note("O_NONBLOCK on the pipe: the READ waits all the same, holding its buffer");
	struct arena a8 = arena_new(16, 2);
	provide(&ring, &a8, 8, 0, 1, 80);
	int nb[2];
	pipe_or_die(nb);
	if (fcntl(nb[0], F_SETFL, O_NONBLOCK) < 0)
		die("fcntl: %s", strerror(errno));
	prep_read_sel(&ring, nb[0], 0, 8, 0, 81);
	submit_expect(&ring, 1);
	expect_pending(&ring, "READ on an empty O_NONBLOCK pipe");
	run_one(&ring, prep_read_sel(&ring, nb[0], 0, 8, 0, 0), 82, &a8);
	write_all(nb[1], "nonblock", 8);
	reap_show(&ring, 1, &a8);
	note("RWF_NOWAIT on an empty pipe: -EAGAIN with F_BUFFER, the buffer consumed");
	provide(&ring, &a8, 8, 0, 2, 83);
	sqe = prep_read_sel(&ring, nb[0], 0, 8, 0, 0);
	sqe->rw_flags = RWF_NOWAIT;
	run_one(&ring, sqe, 84, &a8);
	next_bid(&ring, 8, 85, &a8);
	close(nb[0]);
	close(nb[1]);

	note("a READ pending on a socket holds its buffer too");
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		die("socketpair: %s", strerror(errno));
	struct arena a7 = arena_new(16, 1);
	provide(&ring, &a7, 7, 0, 1, 70);
	prep_read_sel(&ring, sv[0], 0, 7, 0, 71);
	submit_expect(&ring, 1);
	expect_pending(&ring, "READ on an idle socket");
	note("a second READ, on the other end, which has data");
	write_all(sv[0], "back", 4);
	run_one(&ring, prep_read_sel(&ring, sv[1], 0, 7, 0, 0), 72, &a7);
	write_all(sv[1], "sock", 4);
	reap_show(&ring, 1, &a7);
	close(sv[0]);
	close(sv[1]);

	note("regular file: 20 bytes, buffers of 16");
	char path[] = "/tmp/bufsel-bs_read-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		die("mkstemp: %s", strerror(errno));
	unlink(path);
	write_all(fd, "0123456789abcdefghij", 20);
	if (lseek(fd, 0, SEEK_SET) != 0)
		die("lseek: %s", strerror(errno));
	struct arena a6 = arena_new(16, 16);
	provide(&ring, &a6, 6, 0, 16, 60);
	note("offset 0, len 0");
	run_one(&ring, prep_read_sel(&ring, fd, 0, 6, 0, 0), 61, &a6);
	note("offset 10, len 4");
	run_one(&ring, prep_read_sel(&ring, fd, 4, 6, 10, 0), 62, &a6);
	note("offset 18: two bytes to EOF");
	run_one(&ring, prep_read_sel(&ring, fd, 0, 6, 18, 0), 63, &a6);
	note("offset 100: past EOF");
	run_one(&ring, prep_read_sel(&ring, fd, 0, 6, 100, 0), 64, &a6);
	note("offset -1: the file position, twice");
	run_one(&ring, prep_read_sel(&ring, fd, 4, 6, (unsigned long long)-1, 0), 65, &a6);
	run_one(&ring, prep_read_sel(&ring, fd, 4, 6, (unsigned long long)-1, 0), 66, &a6);
	note("file position now %ld", (long)lseek(fd, 0, SEEK_CUR));
	note("IOSQE_ASYNC, offset 4, len 3");
	sqe = prep_read_sel(&ring, fd, 3, 6, 4, 0);
	sqe->flags |= IOSQE_ASYNC;
	run_one(&ring, sqe, 69, &a6);
	note("READV at offset 12, iov_len 6");
	struct iovec fiov = { NULL, 6 };
	run_one(&ring, readv_sel(fd, &fiov, 1, 6, 12, 0), 67, &a6);
	note("bids left in group 6");
	remove_bufs(&ring, 6, 65536, 68);

	close(fd);
	close(p[0]);
	close(p[1]);
	close(e[0]);
	close(f[0]);
	close(g[0]);
	close(g[1]);
	io_uring_queue_exit(&ring);
	return 0;
}
