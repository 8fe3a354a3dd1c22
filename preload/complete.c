/*
 * Moving CQEs from the real CQ to the program's.  Only what fits is moved:
 * the rest stays in the real CQ (and the kernel's own overflow list behind
 * it), so a full shadow CQ loses nothing and the kernel keeps its NODROP
 * bookkeeping; IORING_SQ_CQ_OVERFLOW in the shadow tells the program to enter
 * and make room, exactly as the kernel's flag would.
 */
#include "preload/ring_io.h"

unsigned complete_ready(const struct ring *r)
{
	const struct shadow *s = &r->sh;
	return atomic_load_explicit(s->cq_tail, memory_order_relaxed) -
	       atomic_load_explicit(s->cq_head, memory_order_acquire);
}

static void complete_flags(struct ring *r, unsigned left)
{
	struct shadow *s = &r->sh;
	unsigned real = atomic_load_explicit(r->rsq_flags, memory_order_relaxed);
	/* TASKRUN is shown unless a mover fills the shadow by itself:
	 * completions land in the real CQ while the program is not in the
	 * kernel, and liburing only looks for them when this flag (or
	 * CQ_OVERFLOW) asks it to enter. */
	unsigned f = r->has_mover ? 0 : IORING_SQ_TASKRUN;
	if (left || (real & IORING_SQ_CQ_OVERFLOW))
		f |= IORING_SQ_CQ_OVERFLOW;
	/* Submission always has to reach bufsel, which feeds the SQ thread. */
	if (r->setup_flags & IORING_SETUP_SQPOLL)
		f |= IORING_SQ_NEED_WAKEUP;
	atomic_store_explicit(s->sq_flags, f, memory_order_release);
	atomic_store_explicit(s->cq_overflow, atomic_load_explicit(r->rcq_overflow, memory_order_relaxed),
			      memory_order_relaxed);
}

unsigned complete_reap(struct ring *r)
{
	struct shadow *s = &r->sh;
	spin_lock(&r->cq_lock);
	unsigned rhead = atomic_load_explicit(r->rcq_head, memory_order_relaxed);
	unsigned avail = atomic_load_explicit(r->rcq_tail, memory_order_acquire) - rhead;
	unsigned stail = atomic_load_explicit(s->cq_tail, memory_order_relaxed);
	unsigned space = s->cq_entries - (stail - atomic_load_explicit(s->cq_head, memory_order_acquire));
	unsigned taken = 0, posted = 0;

	for (; taken < avail && posted < space; taken++) {
		struct io_uring_cqe *dst = &s->cqes[(stail + posted) & s->cq_mask];
		*dst = r->rcqes[(rhead + taken) & r->rcq_mask];
		if (!r->hooks || r->hooks->complete(r, dst))
			posted++;
	}
	atomic_store_explicit(s->cq_tail, stail + posted, memory_order_release);
	atomic_store_explicit(r->rcq_head, rhead + taken, memory_order_release);
	complete_flags(r, avail - taken);
	spin_unlock(&r->cq_lock);
	return posted;
}

void complete_sync_cq_flags(struct ring *r)
{
	unsigned f = atomic_load_explicit(r->sh.cq_flags, memory_order_relaxed);
	if (r->rcq_flags && atomic_load_explicit(r->rcq_flags, memory_order_relaxed) != f)
		atomic_store_explicit(r->rcq_flags, f, memory_order_relaxed);
}
