/*
 * Moving work across the shadow: submit.c drains the program's SQEs into the
 * real SQ, complete.c moves the kernel's CQEs into the program's CQ, enter.c
 * is io_uring_enter built from the two.
 */
#ifndef BUFSEL_PRELOAD_RING_IO_H
#define BUFSEL_PRELOAD_RING_IO_H

#include <stdbool.h>

#include "preload/shadow/ring.h"

/* Where one drain pass stands (shared by program batches and held chains). */
struct place_state {
	unsigned real_tail;	/* real tail at the start */
	unsigned copied;	/* real slots filled */
	int linked;		/* the SQE before had IO_LINK or IO_HARDLINK */
	void *capture;		/* a request taking the rest of the current chain */
	int chain_fails;	/* the current chain fails at submission (submit_prepare) */
	int chain_open;		/* the current chain still links at the batch's end */
	int deferred;		/* a selection waits for the batch's end (rewrite_deferred) */
	int stops;		/* the kernel stops the batch after the SQE just placed */
	int reap;		/* a barrier that needs the CQEs of what precedes it */
};

struct submit_batch {
	struct place_state st;
	unsigned prog;		/* program SQEs taken from the shadow SQ */
	unsigned copied;	/* SQEs placed in the real SQ */
	unsigned wanted;	/* what the program asked for (non-SQPOLL) */
	unsigned n;		/* what the kernel would take: wanted, capped by the SQ */
	int dropped;		/* an invalid SQ array index ended the batch */
	int probed;		/* a probe follows the batch's last SQE (place_probe) */
	unsigned sh_head;	/* shadow head before the batch */
	unsigned real_tail;	/* real tail before the batch */
	int barrier;		/* stopped before an SQE that must go to the kernel alone */
	int empty;		/* nothing to submit: the kernel leaves the SQ head alone */
};

/* Caller holds r->x->sq_lock for both. */
void submit_prepare(struct ring *r, unsigned to_submit, struct submit_batch *b);
/* Returns how many program SQEs the kernel's answer consumed. */
unsigned submit_finish(struct ring *r, const struct submit_batch *b, long kret);
/* Places SQEs bufsel held back into the real SQ (caller holds sq_lock and
 * enters the kernel after): the number of real slots, or -EBUSY. */
int submit_held(struct ring *r, const struct io_uring_sqe *first, const struct io_uring_sqe *rest,
		unsigned n);

/* A request's last CQE: the kernel frees the request as it posts it. */
static inline unsigned cqe_ends_request(const struct io_uring_cqe *cqe)
{
	return !(cqe->flags & IORING_CQE_F_MORE);
}
/* n requests of kinflight are over (their last CQE, or the kernel never took
 * them); never below 0: an SQE with IOSQE_CQE_SKIP_SUCCESS that failed was
 * never counted. */
void inflight_done(struct ring *r, unsigned n);
/* Moves every CQE that fits; returns the number moved.  Takes r->x->cq_lock. */
unsigned complete_reap(struct ring *r);
/* complete_reap, then issues what those completions released (a receive
 * whose data came, a held chain), which must reach the kernel before anyone
 * waits for it, and moves what that completes in turn.  Outside sq_lock. */
unsigned complete_reap_follow(struct ring *r);
/* Gives the kernel back the real slots of what the program consumed: the
 * kernel reads the program's CQ head whenever it looks (io_uring_poll on
 * the ring's own fd, overflow), so a request about to be issued must see
 * the CQ as empty as the program left it.  Takes r->x->cq_lock. */
void complete_release(struct ring *r);
/* Has the kernel's CQ something bufsel has not moved, or the program
 * consumed something whose real slot bufsel has not given back? */
static inline bool complete_pending(const struct ring *r)
{
	return atomic_load_explicit(r->rcq_tail, memory_order_acquire) != r->x->rcq_taken ||
	       atomic_load_explicit(r->sh.cq_head, memory_order_relaxed) != r->x->sh_released;
}
/* The same unless another reaper (or the code a signal interrupted) holds
 * cq_lock: then nothing, the holder moves what there is. */
unsigned complete_try_reap(struct ring *r);
unsigned complete_ready(const struct ring *r);
void complete_sync_cq_flags(struct ring *r);
/*
 * Around a wait in the kernel for CQEs the shadow lacks: begin returns the
 * min_complete to pass to the kernel, or 0 when the shadow already holds
 * min_complete (then there is no wait, and no end).  *target is the real CQ
 * tail the kernel waits for: a wait that returns 0 before the tail got there
 * ended for another reason (a fired timeout, min_wait), as the program's
 * own wait would have.  one: ask the kernel for a single new CQE only.
 * fired: the program's fired TIMEOUTs when its wait began (timeouts_fired);
 * one that fired since ends the wait, and begin returns 0.  Take cq_lock.
 */
unsigned complete_wait_begin(struct ring *r, unsigned min_complete, int one, unsigned fired, unsigned *target);
void complete_wait_end(struct ring *r);
/* A ring shared across fork: waiters whose process died (killed in their
 * wait) stop holding the real CQ head back.  Takes cq_lock; costs nothing
 * on a ring no fork shared, or with no waiter. */
void complete_prune_waiters(struct ring *r);
/* A resize (resize.c), caller holding cq_lock: the CQEs the program has
 * not consumed (after giving back the real slots of those it has), and
 * their move into the new shadow ns, from_real and reserve being the new
 * scratch's. */
unsigned complete_resize_pending(struct ring *r);
void complete_resize_move(struct ring *r, struct shadow *ns, uint8_t *from_real,
			  struct io_uring_cqe *reserve);
/* Queues a CQE bufsel made itself; caller holds r->x->cq_lock. */
void complete_post(struct ring *r, const struct io_uring_cqe *cqe);

/* False when the kernel would refuse these io_uring_enter flags (-EINVAL). */
bool enter_flags_valid(unsigned flags);
long ring_enter(struct ring *r, unsigned to_submit, unsigned min_complete, unsigned flags,
		const void *argp, size_t argsz);
/*
 * This thread's program enters in progress, and a count that changes
 * whenever the kernel may have run something of the program's since: an
 * enter begins or ends, or bufsel hands the kernel SQEs (ring_kernel_ran).
 * While both stay the same nothing but the program's other threads can
 * have opened or closed an fd, which natively races the same way, so an
 * answer about an fd may be kept (select/fd.c): a batch of 32 READs on one
 * file asks whether it is open once, not 32 times.
 */
extern __thread unsigned ring_enter_depth __attribute__((tls_model("initial-exec")));
extern __thread unsigned ring_kernel_epoch __attribute__((tls_model("initial-exec")));

static inline void ring_kernel_ran(void)
{
	ring_kernel_epoch++;
}
/* The kernel answered -EBADF to an enter on fd: kret, or 0 for a wait the
 * completions bufsel had yet to move make up (enter.c). */
long enter_closed_fd(int fd, unsigned to_submit, unsigned min_complete, unsigned flags, long kret);

#endif
