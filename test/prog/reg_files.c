/*
 * Registered resources: io_uring_register_files then reads with
 * IOSQE_FIXED_FILE (sqe->fd is a table index, not an fd number, so it must
 * reach the kernel untranslated), an index past the table (-EBADF), a files
 * update that swaps a slot; io_uring_register_buffers then WRITE_FIXED and
 * READ_FIXED, and a fixed read whose range lies outside the registered buffer
 * (-EFAULT). Register return values are printed too.
 */
#include "test/prog/cqe_print.h"

#include <sys/uio.h>
#include <unistd.h>

static struct io_uring ring;

static void one(struct io_uring_sqe *sqe, unsigned long long ud)
{
	sqe->user_data = ud;
	submit_expect(&ring, 1);
	reap_print(&ring, 1);
}

static int temp_file(const char *content)
{
	char path[] = "/tmp/bufsel-reg_files-XXXXXX";
	int fd = mkstemp(path);
	size_t n = strlen(content);
	if (fd < 0 || write(fd, content, n) != (ssize_t)n)
		die("temp file: %s", strerror(errno));
	unlink(path);
	return fd;
}

int main(void)
{
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int f0 = temp_file("first file"), f1 = temp_file("second file"), f2 = temp_file("third");
	char buf[32] = { 0 };
	struct io_uring_sqe *sqe;

	int files[2] = { f0, f1 };
	note("register_files returned %d", io_uring_register_files(&ring, files, 2));
	note("register_files again returned %d", io_uring_register_files(&ring, files, 2));

	note("fixed-file reads of slot 1 and slot 0");
	sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, 1, buf, sizeof(buf) - 1, 0);
	sqe->flags |= IOSQE_FIXED_FILE;
	one(sqe, 1);
	note("slot 1 read \"%s\"", buf);
	memset(buf, 0, sizeof(buf));
	sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, 0, buf, sizeof(buf) - 1, 0);
	sqe->flags |= IOSQE_FIXED_FILE;
	one(sqe, 2);
	note("slot 0 read \"%s\"", buf);

	note("fixed-file read of slot 5 (past the table)");
	sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, 5, buf, 4, 0);
	sqe->flags |= IOSQE_FIXED_FILE;
	one(sqe, 3);

	note("files update puts the third file into slot 0");
	note("register_files_update returned %d", io_uring_register_files_update(&ring, 0, &f2, 1));
	memset(buf, 0, sizeof(buf));
	sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, 0, buf, sizeof(buf) - 1, 0);
	sqe->flags |= IOSQE_FIXED_FILE;
	one(sqe, 4);
	note("slot 0 read \"%s\"", buf);
	note("unregister_files returned %d", io_uring_unregister_files(&ring));

	note("registered buffers");
	static char b0[4096], b1[4096];
	struct iovec iov[2] = { { b0, sizeof(b0) }, { b1, sizeof(b1) } };
	note("register_buffers returned %d", io_uring_register_buffers(&ring, iov, 2));
	memcpy(b0, "written from a fixed buffer", 27);
	sqe = get_sqe(&ring);
	io_uring_prep_write_fixed(sqe, f0, b0, 27, 100, 0);
	one(sqe, 10);
	sqe = get_sqe(&ring);
	io_uring_prep_read_fixed(sqe, f0, b1 + 8, 27, 100, 1);
	one(sqe, 11);
	note("fixed read got \"%.27s\"", b1 + 8);
	sqe = get_sqe(&ring);
	io_uring_prep_read_fixed(sqe, f0, b1 + 4000, 200, 0, 1);
	one(sqe, 12);
	sqe = get_sqe(&ring);
	io_uring_prep_read_fixed(sqe, f0, b1, 10, 0, 7);
	one(sqe, 13);
	note("unregister_buffers returned %d", io_uring_unregister_buffers(&ring));

	close(f0);
	close(f1);
	close(f2);
	io_uring_queue_exit(&ring);
	return 0;
}
