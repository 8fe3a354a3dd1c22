/*
 * io_uring_enter is async-signal-safe natively: a SIGALRM handler (setitimer,
 * every 50 µs) submits on a ring set up before, with its own `syscall`
 * instruction (no libc), while main loops on malloc and free of random sizes.
 * Under bufsel the call traps (or runs through a patched site) inside the
 * handler, so nothing bufsel does for it may use malloc or a lock the
 * interrupted code can hold: glibc would find its heap corrupt and abort.
 *
 * Each handler run provides a buffer and reads into it from a pipe after a
 * linked NOP; every 64th does so on a ring it sets up and closes itself.
 * Duration in seconds from argv[1] (default 2); the output is the same
 * however many times the handler ran.
 */
#define CQE_PRINT_NO_LIBURING
#include "test/prog/cqe_print.h"

#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>

struct ring {
	int fd;
	unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
	void *maps[3];
	size_t lens[3];
};

static struct ring main_ring;
static int pipe_fd[2];
static char bufs[2][64];

static volatile sig_atomic_t runs, bad;
static volatile long bad_ret, bad_ud;

static long enter_inline(int fd, unsigned submit, unsigned wait, unsigned flags)
{
	register long r10 __asm__("r10") = (long)flags;
	register long r8 __asm__("r8") = 0;
	register long r9 __asm__("r9") = 0;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"((long)__NR_io_uring_enter), "D"((long)fd), "S"((long)submit), "d"((long)wait),
			   "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

/* Async-signal-safe: system calls only. */
static int ring_open(struct ring *r)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	r->fd = (int)syscall(__NR_io_uring_setup, 8, &p);
	if (r->fd < 0)
		return -1;
	r->lens[0] = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	r->lens[1] = p.sq_entries * sizeof(struct io_uring_sqe);
	r->lens[2] = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	static const off_t offs[3] = { IORING_OFF_SQ_RING, IORING_OFF_SQES, IORING_OFF_CQ_RING };
	for (int i = 0; i < 3; i++) {
		r->maps[i] = mmap(NULL, r->lens[i], PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, offs[i]);
		if (r->maps[i] == MAP_FAILED)
			return -1;
	}
	char *sq = r->maps[0], *cq = r->maps[2];
	r->sq_tail = (unsigned *)(sq + p.sq_off.tail);
	r->sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
	r->sq_array = (unsigned *)(sq + p.sq_off.array);
	r->sqes = r->maps[1];
	r->cq_head = (unsigned *)(cq + p.cq_off.head);
	r->cq_tail = (unsigned *)(cq + p.cq_off.tail);
	r->cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
	return 0;
}

static void ring_close(struct ring *r)
{
	for (int i = 0; i < 3; i++)
		munmap(r->maps[i], r->lens[i]);
	close(r->fd);
}

static struct io_uring_sqe *sqe_at(struct ring *r, unsigned tail, uint8_t op, uint8_t flags, uint64_t ud)
{
	unsigned idx = tail & *r->sq_mask;
	struct io_uring_sqe *sqe = &r->sqes[idx];
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = op;
	sqe->flags = flags;
	sqe->user_data = ud;
	r->sq_array[idx] = idx;
	return sqe;
}

static void expect(int ok, long got, uint64_t ud)
{
	if (!ok) {
		bad++;
		bad_ret = got;
		bad_ud = (long)ud;
	}
}

/*
 * One buffer provided to group 1, then a NOP linked to a READ that selects
 * it from the pipe (16 bytes written just before): the pool, a held chain
 * and a request slot under bufsel, each made while main may be in malloc.
 */
static void round_trip(struct ring *r, unsigned which)
{
	if (write(pipe_fd[1], "0123456789abcdef", 16) != 16) {
		bad++;
		return;
	}
	unsigned tail = *r->sq_tail;
	struct io_uring_sqe *sqe = sqe_at(r, tail++, IORING_OP_PROVIDE_BUFFERS, 0, 1);
	sqe->fd = 1;
	sqe->addr = (uintptr_t)bufs[which];
	sqe->len = sizeof(bufs[which]);
	sqe->buf_group = 1;
	sqe->off = which;
	sqe_at(r, tail++, IORING_OP_NOP, IOSQE_IO_LINK, 2);
	sqe = sqe_at(r, tail++, IORING_OP_READ, IOSQE_BUFFER_SELECT, 3);
	sqe->fd = pipe_fd[0];
	sqe->len = sizeof(bufs[which]);
	sqe->buf_group = 1;
	__atomic_store_n(r->sq_tail, tail, __ATOMIC_RELEASE);
	long ret = enter_inline(r->fd, 3, 3, IORING_ENTER_GETEVENTS);
	expect(ret == 3, ret, 0);
	unsigned head = *r->cq_head;
	for (unsigned i = 0; i < 3; i++, head++) {
		if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE)) {
			expect(0, -1, 100 + i);
			break;
		}
		const struct io_uring_cqe *cqe = &r->cqes[head & *r->cq_mask];
		if (cqe->user_data == 3)
			expect(cqe->res == 16 && cqe->flags == (IORING_CQE_F_BUFFER | which << IORING_CQE_BUFFER_SHIFT),
			       cqe->res, cqe->user_data);
		else
			expect(cqe->res == 0 && (cqe->user_data == 1 || cqe->user_data == 2), cqe->res,
			       cqe->user_data);
	}
	__atomic_store_n(r->cq_head, head, __ATOMIC_RELEASE);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double end;

/* Most runs use the ring main set up; every 64th sets one up and closes it
 * again inside the handler, so bufsel's setup and teardown run there too.
 * The handler stops the timer once the time is up: on a slow machine (qemu
 * without KVM) a run can take longer than the period, and main, which
 * would stop it, then never runs again. */
static void on_alarm(int sig)
{
	(void)sig;
	int saved = errno;
	if (now() >= end) {
		struct itimerval off = { { 0, 0 }, { 0, 0 } };
		setitimer(ITIMER_REAL, &off, NULL);
	}
	if (runs % 64 == 63) {
		struct ring r;
		if (ring_open(&r))
			expect(0, -errno, 200);
		else
			round_trip(&r, 1);
		ring_close(&r);
	} else {
		round_trip(&main_ring, 0);
	}
	runs++;
	errno = saved;
}

#define SLOTS 256

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2;
	end = now() + secs;
	if (ring_open(&main_ring))
		die("ring: %s", strerror(errno));
	if (pipe(pipe_fd))
		die("pipe: %s", strerror(errno));

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL))
		die("sigaction: %s", strerror(errno));
	struct itimerval it = { { 0, 50 }, { 0, 50 } };
	if (setitimer(ITIMER_REAL, &it, NULL))
		die("setitimer: %s", strerror(errno));

	/* Blocks of every size malloc has a path for (tcache, fastbins, small
	 * and large bins, mmap'd chunks), each filled and checked. */
	static unsigned char *slot[SLOTS];
	static size_t len[SLOTS];
	unsigned seed = 12345;
	unsigned long ops = 0;
	while ((ops & 1023) || now() < end) {
		seed = seed * 1103515245u + 12345u;
		unsigned i = (seed >> 8) % SLOTS, r = seed >> 16;
		if (slot[i]) {
			for (size_t k = 0; k < len[i]; k += 61)
				if (slot[i][k] != (unsigned char)(i + k))
					die("block %u corrupt at %zu", i, k);
			free(slot[i]);
			slot[i] = NULL;
		} else {
			size_t n = r % 8 == 0 ? 1 + r % 300000 : 1 + r % 2048;
			if (!(slot[i] = malloc(n)))
				die("malloc(%zu) failed", n);
			len[i] = n;
			for (size_t k = 0; k < n; k += 61)
				slot[i][k] = (unsigned char)(i + k);
		}
		ops++;
	}
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	for (unsigned i = 0; i < SLOTS; i++)
		free(slot[i]);

	fprintf(stderr, "sig_submit: %d handler runs, %lu malloc/free\n", (int)runs, ops);
	if (bad)
		die("%d bad completions (last: ud %ld res %ld)", (int)bad, bad_ud, bad_ret);
	note("handler ran: %s", runs > 0 ? "yes" : "no");
	note("every provide, linked NOP and buffer-select read completed as expected");
	printf("ok\n");
	ring_close(&main_ring);
	return 0;
}
