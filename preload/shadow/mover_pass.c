/*
 * A mover's passes over a ring, and the release's wait for them.  A pass
 * (a reap, the follow-ups it releases, an SQ poll) is counted in the ring's
 * mover_pass; the close that ends the ring (ring.c) stops the ring's movers
 * here and waits for the count to drop.  Apart from mover.c, which runs the
 * passes, so that the ring table can stop a mover without needing it.
 */
#define _GNU_SOURCE
#include "preload/shadow/mover_pass.h"

#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>

#include "preload/shadow/ring.h"
#include "preload/sys.h"

/* The ring a mover on this thread is in a pass over. */
static __thread struct ring *pass_ring __attribute__((tls_model("initial-exec")));

/*
 * A pass over a live ring (a reap, the follow-ups it releases, an SQ poll):
 * counted before live is looked at, as mover_stop clears live before it
 * looks at the count, so one of the two sees the other.  0: not live.
 */
int mover_pass_begin(struct ring *r)
{
	atomic_fetch_add_explicit(&r->mover_pass, 1, memory_order_seq_cst);
	if (!atomic_load_explicit(&r->live, memory_order_seq_cst)) {
		atomic_fetch_sub_explicit(&r->mover_pass, 1, memory_order_seq_cst);
		return 0;
	}
	pass_ring = r;
	return 1;
}

void mover_pass_end(struct ring *r)
{
	pass_ring = NULL;
	atomic_fetch_sub_explicit(&r->mover_pass, 1, memory_order_seq_cst);
}

void mover_pass_leave(void)
{
	pass_ring = NULL;
}

void mover_stop(struct ring *r)
{
	uint64_t one = 1;
	if (r->has_mover && r->mover_wake_fd >= 0)
		sys_write(r->mover_wake_fd, &one, sizeof(one));
	/* The close that ended the ring returns only once no mover touches
	 * what the program owns: the kernel pins a buffer ring's pages, so a
	 * program may unmap them right after.  A mover releasing the ring
	 * itself does not wait for itself; nor, past a bound, for a pass
	 * that waits on a lock this thread holds (a close from a signal
	 * handler). */
	if (pass_ring == r)
		return;
	struct timespec nap = { 0, 100000 };
	for (int i = 0; i < 1000 && atomic_load_explicit(&r->mover_pass, memory_order_seq_cst); i++)
		sys_call6(SYS_nanosleep, (long)&nap, 0, 0, 0, 0, 0);
}
