/*
 * Bad arguments to io_uring_enter and io_uring_register on a live ring: every
 * enter flag alone, the wait arguments (signal mask, EXT_ARG, timeouts) wrong
 * in each way the kernel checks, and every register opcode with empty, NULL
 * and inaccessible arguments.  Each call's result is printed; the ring must work
 * the same afterwards.  Nothing here waits without a timeout.
 */
#include <errno.h>
#include <liburing.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "test/prog/cqe_print.h"

/* Newer than Debian 12's headers (6.1). */
#ifndef IORING_ENTER_ABS_TIMER
#define IORING_ENTER_ABS_TIMER (1U << 5)
#endif
#ifndef IORING_REGISTER_USE_REGISTERED_RING
#define IORING_REGISTER_USE_REGISTERED_RING (1U << 31)
#endif

/* One NOP through the ring, to show it still works. */
static void still_works(struct io_uring *ring, const char *after)
{
	struct io_uring_sqe *sqe = get_sqe(ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 77;
	submit_expect(ring, 1);
	struct io_uring_cqe c;
	reap(ring, &c, 1);
	note("after %s: NOP res=%d ud=%llu", after, c.res, (unsigned long long)c.user_data);
}

int main(void)
{
	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	int fd = ring.ring_fd;
	/* A page no access is allowed to, kept for the whole run: an address
	 * merely unmapped could be mapped again by the next mmap (the
	 * sanitizer's, or bufsel's shadow rings) and then written to. */
	void *hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (hole == MAP_FAILED)
		die("mmap: %s", strerror(errno));

	/* Each flag alone, with nothing to submit and nothing to wait for. */
	for (int bit = 0; bit < 32; bit++) {
		if ((1u << bit) == IORING_ENTER_REGISTERED_RING)
			continue;	/* fd is not an index: below */
		note("enter flags=%#x: %ld", 1u << bit, raw_enter(fd, 0, 0, 1u << bit, NULL, 0));
	}
	note("enter REGISTERED_RING with an unregistered index 0: %ld",
	     raw_enter(0, 0, 0, IORING_ENTER_REGISTERED_RING, NULL, 0));
	note("enter REGISTERED_RING with index 100: %ld",
	     raw_enter(100, 0, 0, IORING_ENTER_REGISTERED_RING, NULL, 0));
	note("enter to_submit=100 with an empty SQ: %ld", raw_enter(fd, 100, 0, 0, NULL, 0));

	/* The wait's arguments.  A completion is queued first so that a check the
	 * kernel makes only when it would sleep cannot hang the program. */
	sigset_t mask;
	sigemptyset(&mask);
	struct __kernel_timespec ts = { .tv_sec = 0, .tv_nsec = 1000000 }, bad_ts = { .tv_sec = -1 };
	struct io_uring_getevents_arg ga;
	const unsigned W = IORING_ENTER_GETEVENTS;
	const unsigned X = IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG;
	struct {
		const char *what;
		unsigned min, flags;
		const void *arg;
		size_t argsz;
		struct io_uring_getevents_arg ga;
	} waits[] = {
		{ "sigmask of the wrong size", 1, W, &mask, 4, { 0 } },
		{ "inaccessible sigmask", 1, W, hole, 8, { 0 } },
		{ "EXT_ARG, no argument", 1, X, NULL, 0, { 0 } },
		{ "EXT_ARG, argsz short", 1, X, &ga, sizeof(ga) - 1, { 0 } },
		{ "EXT_ARG, argsz long", 1, X, &ga, sizeof(ga) + 8, { 0 } },
		{ "EXT_ARG, inaccessible", 1, X, hole, sizeof(ga), { 0 } },
		/* pad is min_wait_usec since 6.12 */
		{ "EXT_ARG, pad set, no timeout", 1, X, &ga, sizeof(ga), { .pad = 10 } },
		{ "EXT_ARG, inaccessible sigmask", 1, X, &ga, sizeof(ga), { .sigmask = (uintptr_t)hole, .sigmask_sz = 8 } },
		{ "EXT_ARG, sigmask of the wrong size", 1, X, &ga, sizeof(ga),
		  { .sigmask = (uintptr_t)&mask, .sigmask_sz = 4 } },
		{ "EXT_ARG, inaccessible timeout", 1, X, &ga, sizeof(ga), { .ts = (uintptr_t)hole } },
		{ "EXT_ARG, negative timeout", 1, X, &ga, sizeof(ga), { .ts = (uintptr_t)&bad_ts } },
		{ "EXT_ARG, ABS_TIMER, timeout in the past", 1, X | IORING_ENTER_ABS_TIMER, &ga, sizeof(ga),
		  { .ts = (uintptr_t)&ts } },
		{ "ABS_TIMER without EXT_ARG", 1, W | IORING_ENTER_ABS_TIMER, NULL, 0, { 0 } },
		{ "pad set with a timeout", 1, X, &ga, sizeof(ga), { .pad = 10, .ts = (uintptr_t)&ts } },
	};
	for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
		struct io_uring_sqe *sqe = get_sqe(&ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = 100 + i;
		io_uring_submit(&ring);
		ga = waits[i].ga;
		long r = raw_enter(fd, 0, waits[i].min, waits[i].flags, waits[i].arg, waits[i].argsz);
		/* What the enter left in the CQ: the NOP, or nothing yet. */
		struct io_uring_cqe c;
		reap(&ring, &c, 1);
		note("wait, %s: %ld (then ud=%llu res=%d)", waits[i].what, r, (unsigned long long)c.user_data, c.res);
	}
	/* Waits that time out: nothing is pending. */
	ga = (struct io_uring_getevents_arg){ .ts = (uintptr_t)&ts };
	note("wait 1 for 1 ms, nothing pending: %ld", raw_enter(fd, 0, 1, X, &ga, sizeof(ga)));
	ga = (struct io_uring_getevents_arg){ .ts = (uintptr_t)&ts, .sigmask = (uintptr_t)&mask, .sigmask_sz = 8 };
	note("the same with a signal mask: %ld", raw_enter(fd, 0, 1, X, &ga, sizeof(ga)));
	still_works(&ring, "the waits");

	/* Every register opcode with nothing, NULL and an inaccessible argument. */
	for (unsigned op = 0; op < 40; op++) {
		/* Ones that succeed with no argument and change the ring are left
		 * to the programs that use them. */
		if (op == IORING_REGISTER_PERSONALITY || op == IORING_UNREGISTER_IOWQ_AFF ||
		    op == IORING_REGISTER_ENABLE_RINGS)
			continue;
		long a = raw_register(fd, op, NULL, 0);
		long b = raw_register(fd, op, NULL, 1);
		long c = raw_register(fd, op, hole, 1);
		note("register op %u: (NULL, 0) %ld, (NULL, 1) %ld, (inaccessible, 1) %ld", op, a, b, c);
	}
	note("register op 9999: %ld", raw_register(fd, 9999, NULL, 0));
	note("register PROBE with 300 ops: %ld", raw_register(fd, IORING_REGISTER_PROBE, hole, 300));
	note("register on a pipe: %ld", raw_register(0, IORING_REGISTER_PROBE, NULL, 0));
	note("register USE_REGISTERED_RING with index 3: %ld",
	     raw_register(3, IORING_REGISTER_PROBE | IORING_REGISTER_USE_REGISTERED_RING, NULL, 0));
	still_works(&ring, "the registers");

	io_uring_queue_exit(&ring);
	return 0;
}
