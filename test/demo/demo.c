/*
 * An ordinary liburing program for `make demo`: it knows nothing of bufsel.
 * It writes a temporary file, hands io_uring a group of buffers with
 * IORING_OP_PROVIDE_BUFFERS, reads the file back with reads that let the
 * kernel pick a buffer (IOSQE_BUFFER_SELECT), plus a few NOPs, and prints
 * every CQE with the buffer id it carries.  Completions are printed in user_data order,
 * not arrival order, so a native run and a run under bufsel print the same
 * lines whenever the rings behave the same.
 */
#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FILE_SIZE 10000
#define CHUNK 4096
#define NREADS 4	/* the last two are short and empty: the file ends first */
#define NNOPS 2
#define GROUP 7
#define PROVIDE_UD 99

struct result {
	unsigned long long user_data;
	int res;
	unsigned flags;
};

static unsigned char pattern(size_t i)
{
	return (unsigned char)('a' + i % 26);
}

static int by_user_data(const void *a, const void *b)
{
	const struct result *x = a, *y = b;
	return (x->user_data > y->user_data) - (x->user_data < y->user_data);
}

int main(void)
{
	static unsigned char file[FILE_SIZE], bufs[NREADS][CHUNK];
	struct result results[NREADS + NNOPS + 1];
	struct io_uring ring;
	char path[] = "/tmp/bufsel-demo-XXXXXX";
	int fd, ret, bad = 0;

	fd = mkstemp(path);
	if (fd < 0) {
		perror("demo: mkstemp");
		return 1;
	}
	unlink(path);
	for (size_t i = 0; i < FILE_SIZE; i++)
		file[i] = pattern(i);
	if (write(fd, file, FILE_SIZE) != FILE_SIZE) {
		perror("demo: write");
		return 1;
	}

	ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0) {
		fprintf(stderr, "demo: io_uring_queue_init: %s\n", strerror(-ret));
		return 1;
	}
	printf("demo: file of %d bytes, %d buffers of %d bytes provided as group %d, %d reads, %d nops\n",
	       FILE_SIZE, NREADS, CHUNK, GROUP, NREADS, NNOPS);

	struct io_uring_sqe *psqe = io_uring_get_sqe(&ring);
	io_uring_prep_provide_buffers(psqe, bufs, CHUNK, NREADS, GROUP, 0);
	io_uring_sqe_set_data64(psqe, PROVIDE_UD);
	for (int i = 0; i < NNOPS; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data64(sqe, 100 + i);
	}
	for (int i = 0; i < NREADS; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
		io_uring_prep_read(sqe, fd, NULL, CHUNK, (unsigned long long)i * CHUNK);
		sqe->flags |= IOSQE_BUFFER_SELECT;
		sqe->buf_group = GROUP;
		io_uring_sqe_set_data64(sqe, 1 + i);
	}
	ret = io_uring_submit(&ring);
	printf("demo: submitted %d sqes\n", ret);
	if (ret != NREADS + NNOPS + 1) {
		fprintf(stderr, "demo: io_uring_submit: %s\n", ret < 0 ? strerror(-ret) : "short submit");
		return 1;
	}

	for (int n = 0; n < NREADS + NNOPS + 1; n++) {
		struct io_uring_cqe *cqe;
		ret = io_uring_wait_cqe(&ring, &cqe);
		if (ret < 0) {
			fprintf(stderr, "demo: io_uring_wait_cqe: %s\n", strerror(-ret));
			return 1;
		}
		results[n] = (struct result){ cqe->user_data, cqe->res, cqe->flags };
		io_uring_cqe_seen(&ring, cqe);
	}
	qsort(results, NREADS + NNOPS + 1, sizeof(results[0]), by_user_data);

	for (int n = 0; n < NREADS + NNOPS + 1; n++) {
		struct result *r = &results[n];
		if (r->user_data == PROVIDE_UD) {
			printf("cqe user_data=%llu (provide buffers) res=%d flags=0x%x\n", r->user_data, r->res,
			       r->flags);
			bad |= r->res != 0;
			continue;
		}
		if (r->user_data >= 100) {
			printf("cqe user_data=%llu (nop)    res=%d flags=0x%x\n", r->user_data, r->res, r->flags);
			bad |= r->res != 0;
			continue;
		}
		size_t i = (size_t)(r->user_data - 1), off = i * CHUNK;
		int want = off >= FILE_SIZE ? 0 : FILE_SIZE - off < CHUNK ? (int)(FILE_SIZE - off) : CHUNK;
		unsigned bid = r->flags >> IORING_CQE_BUFFER_SHIFT;
		int same = (r->flags & IORING_CQE_F_BUFFER) && bid < NREADS && r->res == want &&
			   !memcmp(bufs[bid], file + off, (size_t)want);
		printf("cqe user_data=%llu (read %zu) res=%d flags=0x%x buffer %u, data %s\n", r->user_data, i,
		       r->res, r->flags, bid, same ? "matches the file" : "DIFFERS");
		bad |= !same;
	}

	io_uring_queue_exit(&ring);
	close(fd);
	printf("demo: %s\n", bad ? "FAILED" : "ok");
	return bad;
}
