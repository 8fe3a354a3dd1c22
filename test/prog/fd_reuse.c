/*
 * A ring's fd number handed out again to a new ring: ring A (4 entries) is
 * dup'ed, its first fd closed, and ring B (256 entries) gets that number back
 * from the kernel.  B must be B: its own rings mapped at that number, a batch
 * larger than A's SQ accepted, its own completions.  A lives on behind the dup
 * and still works through it.  A shim that files rings by fd number and keeps
 * A under the old one maps A's 4-entry shadow for B, and setup fails.
 */
#include "test/prog/cqe_print.h"

#include <sys/syscall.h>
#include <unistd.h>

int main(void)
{
	struct io_uring a, b;
	int ret = io_uring_queue_init(4, &a, 0);
	if (ret < 0)
		die("queue_init a: %s", strerror(-ret));
	int d = dup(a.ring_fd);
	if (d < 0)
		die("dup: %s", strerror(errno));
	int first = a.ring_fd;
	if (syscall(SYS_close, first) != 0)
		die("close: %s", strerror(errno));
	/* A is reached through its dup from here on. */
	a.ring_fd = a.enter_ring_fd = d;

	ret = io_uring_queue_init(256, &b, 0);
	if (ret < 0)
		die("queue_init b: %s", strerror(-ret));
	note("a's first fd %d, its dup %d; b got fd %d: %s", first, d, b.ring_fd,
	     b.ring_fd == first ? "the same number" : "another number");
	note("b: sq %u entries", b.sq.ring_entries);
	nops_print(&b, 1000, 100);
	note("a, through the dup");
	nops_print(&a, 1, 3);
	note("b again");
	nops_print(&b, 2000, 3);

	io_uring_queue_exit(&b);
	io_uring_queue_exit(&a);
	return 0;
}
