/*
 * One read of each SQE: a second thread flips the opcode of every SQE slot
 * between PROVIDE_BUFFERS and TIMEOUT while the main thread submits them.
 * Whatever opcode the kernel reads, it reads once: a CQE with res 0 (or 1,
 * before 5.18) is a PROVIDE that added one buffer to group 7 (a TIMEOUT
 * with these fields is -EINVAL), so at the end the group holds exactly as
 * many buffers as there were such CQEs.  An emulation that decides from one read and copies
 * another would let a PROVIDE past it, into a group it never sees.
 */
#include "test/prog/cqe_print.h"

#include <pthread.h>
#include <stdatomic.h>

static struct io_uring ring;
static atomic_int stop, paused, idle;

/* The flipper leaves the SQEs alone while the main thread removes. */
static void pause_flipper(int on)
{
	atomic_store(&paused, on);
	while (on && !atomic_load(&idle))
		;
}
static char buf[16];

static void *flipper(void *arg)
{
	(void)arg;
	unsigned n = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (atomic_load(&paused)) {
			atomic_store(&idle, 1);
			while (atomic_load(&paused) && !atomic_load(&stop))
				;
			atomic_store(&idle, 0);
			continue;
		}
		uint8_t op = (n++ & 1) ? IORING_OP_TIMEOUT : IORING_OP_PROVIDE_BUFFERS;
		for (unsigned i = 0; i < *ring.sq.kring_entries; i++)
			__atomic_store_n(&ring.sq.sqes[i].opcode, op, __ATOMIC_RELAXED);
	}
	return NULL;
}

int main(void)
{
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	pthread_t t;
	if (pthread_create(&t, NULL, flipper, NULL))
		die("pthread_create");
	unsigned provided = 0, failed = 0, other = 0, checked = 0, mismatch = 0;
	for (int i = 0; i < 25000; i++) {
		for (int j = 0; j < 8; j++) {
			struct io_uring_sqe *sqe = get_sqe(&ring);
			io_uring_prep_provide_buffers(sqe, buf, sizeof(buf), 1, 7, 0);
			sqe->user_data = (unsigned long long)i;
		}
		/* The kernel stops after an SQE that fails at submission. */
		for (int sub = 0; sub < 8;) {
			int n = io_uring_submit(&ring);
			if (n <= 0)
				die("submit: %d", n);
			sub += n;
		}
		struct io_uring_cqe c[8];
		reap(&ring, c, 8);
		for (int j = 0; j < 8; j++) {
			/* 5.7-5.17 give a PROVIDE into a group that has
			 * buffers the count it added: 1. */
			if (c[j].res == 0 || c[j].res == 1)
				provided++;
			else if (c[j].res == -EINVAL)
				failed++;
			else
				other++;
		}
		if (provided - checked > 30000) {
			/* Legacy groups hold at most 65,536 buffers: empty it. */
			pause_flipper(1);
			struct io_uring_sqe *sqe = get_sqe(&ring);
			io_uring_prep_remove_buffers(sqe, 65535, 7);
			sqe->user_data = 99999;
			submit_expect(&ring, 1);
			struct io_uring_cqe c1;
			reap(&ring, &c1, 1);
			if (c1.res != (int)(provided - checked))
				mismatch++;
			checked = provided;
			pause_flipper(0);
		}
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_remove_buffers(sqe, 65535, 7);
	sqe->user_data = 99999;
	submit_expect(&ring, 1);
	struct io_uring_cqe c;
	reap(&ring, &c, 1);
	unsigned in_group = c.res > 0 ? (unsigned)c.res : 0;
	if (in_group != provided - checked)
		mismatch++;
	/* Whether the flipper won any race is timing, natively too: stderr. */
	fprintf(stderr, "sqe_race: both opcodes seen: %s\n", provided && failed ? "yes" : "no");
	note("other results: %u", other);
	note("buffers in the group match the PROVIDEs that succeeded: %s",
	     mismatch ? "no" : "yes");
	io_uring_queue_exit(&ring);
	return 0;
}
