/*
 * No liburing, the way fio drives io_uring: io_uring_setup, io_uring_enter
 * and io_uring_register through libc syscall(), and the SQ ring, the SQE
 * array and the CQ ring each mapped with libc mmap() at their own offsets
 * (even when IORING_FEAT_SINGLE_MMAP would allow one mapping). NOPs, a read,
 * a registered file read; then munmap and close, as fio does at exit.
 */
#define CQE_PRINT_NO_LIBURING
#include "test/prog/cqe_print.h"

#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static int ring_fd;
static unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
static struct io_uring_sqe *sqes;
static struct io_uring_cqe *cqes;
static unsigned tail;

static struct io_uring_sqe *next_sqe(uint8_t op, unsigned long long ud)
{
	unsigned idx = tail & *sq_mask;
	struct io_uring_sqe *sqe = &sqes[idx];
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = op;
	sqe->user_data = ud;
	sq_array[idx] = idx;
	tail++;
	return sqe;
}

static void submit_wait(unsigned n)
{
	__atomic_store_n(sq_tail, tail, __ATOMIC_RELEASE);
	long ret = syscall(__NR_io_uring_enter, ring_fd, n, n, IORING_ENTER_GETEVENTS, NULL, 0);
	if (ret != (long)n)
		die("io_uring_enter returned %ld (%s), wanted %u", ret, strerror(errno), n);
	unsigned head = *cq_head;
	for (unsigned i = 0; i < n; i++) {
		if (head == __atomic_load_n(cq_tail, __ATOMIC_ACQUIRE))
			die("completion %u of %u missing", i + 1, n);
		cqe_print(&cqes[head & *cq_mask]);
		head++;
	}
	__atomic_store_n(cq_head, head, __ATOMIC_RELEASE);
}

int main(void)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	ring_fd = (int)syscall(__NR_io_uring_setup, 8, &p);
	if (ring_fd < 0)
		die("io_uring_setup: %s", strerror(errno));
	note("ring fd %d sq %u cq %u", ring_fd, p.sq_entries, p.cq_entries);

	size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t sqe_len = p.sq_entries * sizeof(struct io_uring_sqe);
	size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	char *sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring_fd, IORING_OFF_SQ_RING);
	sqes = mmap(NULL, sqe_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring_fd, IORING_OFF_SQES);
	char *cq = mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring_fd, IORING_OFF_CQ_RING);
	if (sq == MAP_FAILED || sqes == MAP_FAILED || cq == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	sq_tail = (unsigned *)(sq + p.sq_off.tail);
	sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
	sq_array = (unsigned *)(sq + p.sq_off.array);
	cq_head = (unsigned *)(cq + p.cq_off.head);
	cq_tail = (unsigned *)(cq + p.cq_off.tail);
	cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
	cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
	tail = *sq_tail;
	note("ring entries sq %u cq %u", *(unsigned *)(sq + p.sq_off.ring_entries),
	     *(unsigned *)(cq + p.cq_off.ring_entries));

	note("nops");
	for (unsigned i = 0; i < 5; i++)
		next_sqe(IORING_OP_NOP, 1 + i);
	submit_wait(5);

	char path[] = "/tmp/bufsel-raw_syscall-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0 || write(fd, "no liburing here", 16) != 16)
		die("temp file: %s", strerror(errno));
	unlink(path);

	note("read");
	char buf[32] = { 0 };
	struct io_uring_sqe *sqe = next_sqe(IORING_OP_READ, 10);
	sqe->fd = fd;
	sqe->addr = (uintptr_t)buf;
	sqe->len = sizeof(buf) - 1;
	submit_wait(1);
	note("read \"%s\"", buf);

	note("registered file read");
	long ret = syscall(__NR_io_uring_register, ring_fd, IORING_REGISTER_FILES, &fd, 1);
	note("register FILES returned %ld", ret < 0 ? -errno : ret);
	memset(buf, 0, sizeof(buf));
	sqe = next_sqe(IORING_OP_READ, 20);
	sqe->fd = 0;
	sqe->flags = IOSQE_FIXED_FILE;
	sqe->addr = (uintptr_t)buf;
	sqe->len = 8;
	sqe->off = 3;
	submit_wait(1);
	note("read \"%s\"", buf);

	if (munmap(sqes, sqe_len) || munmap(cq, cq_len) || munmap(sq, sq_len))
		die("munmap: %s", strerror(errno));
	close(ring_fd);
	close(fd);
	return 0;
}
