/*
 * Draining the shadow SQ.  SQEs are copied to the real SQ at the real tail,
 * with an identity SQ array, so a slot is only rewritten once the kernel (or
 * its SQPOLL thread) has consumed it.  What the kernel did not take is put
 * back: the real tail and the shadow head roll back together, so the program
 * sees exactly the SQ state it would see natively, and whatever bufsel did
 * for an SQE the kernel never took is undone.
 */
#include "preload/ring_io.h"

void submit_prepare(struct ring *r, unsigned to_submit, struct submit_batch *b)
{
	struct shadow *s = &r->sh;
	unsigned head = atomic_load_explicit(s->sq_head, memory_order_relaxed);
	unsigned avail = atomic_load_explicit(s->sq_tail, memory_order_acquire) - head;
	unsigned rtail = atomic_load_explicit(r->rsq_tail, memory_order_relaxed);
	unsigned rspace = r->rsq_entries - (rtail - atomic_load_explicit(r->rsq_head, memory_order_acquire));
	int sqpoll = r->setup_flags & IORING_SETUP_SQPOLL;
	/* An SQPOLL kernel takes everything published, whatever to_submit says. */
	unsigned n = sqpoll || to_submit > avail ? avail : to_submit;

	if (n > rspace)
		n = rspace;
	*b = (struct submit_batch){ .wanted = to_submit, .sh_head = head, .real_tail = rtail };
	for (unsigned i = 0; i < n; i++) {
		unsigned idx = atomic_load_explicit(&s->sq_array[(head + i) & s->sq_mask], memory_order_relaxed);
		if (idx >= s->sq_entries) {
			b->dropped = 1;
			break;
		}
		unsigned slot = (rtail + b->copied) & r->rsq_mask;
		struct io_uring_sqe *sqe = &r->rsqes[slot];
		*sqe = s->sqes[idx];
		if (sqe->flags & IOSQE_CQE_SKIP_SUCCESS)
			r->drain_disabled = 1;
		if (r->hooks && r->hooks->wants(sqe)) {
			if (b->copied && !sqpoll && r->hooks->barrier(sqe)) {
				b->barrier = 1;
				break;
			}
			r->hooks->rewrite(r, sqe, &r->undo[b->copied]);
		} else if (r->undo) {
			r->undo[b->copied].kind = 0;
		}
		if (sqe->flags & IOSQE_CQE_SKIP_SUCCESS)
			r->kernel_skip = 1;
		atomic_store_explicit(&r->rsq_array[slot], slot, memory_order_relaxed);
		b->copied++;
	}
	atomic_store_explicit(r->rsq_tail, rtail + b->copied, memory_order_release);
	if (sqpoll) {
		/* The SQ thread owns what we published; the batch is done now. */
		unsigned consumed = b->copied + (unsigned)b->dropped;
		if (b->dropped)
			atomic_fetch_add(s->sq_dropped, 1);
		atomic_store_explicit(s->sq_head, head + consumed, memory_order_release);
	}
}

void submit_finish(struct ring *r, const struct submit_batch *b, long kret)
{
	struct shadow *s = &r->sh;
	if (r->setup_flags & IORING_SETUP_SQPOLL)
		return;
	unsigned taken = (unsigned)(atomic_load_explicit(r->rsq_head, memory_order_acquire) - b->real_tail);
	if (taken > b->copied)
		taken = b->copied;
	atomic_store_explicit(r->rsq_tail, b->real_tail + taken, memory_order_release);
	if (r->hooks)
		for (unsigned i = b->copied; i-- > taken;)
			r->hooks->undo(r, &r->undo[i]);
	unsigned consumed = taken;
	/* The kernel consumes an invalid index in the same pass that stops at it. */
	if (b->dropped && taken == b->copied && kret >= 0) {
		atomic_fetch_add(s->sq_dropped, 1);
		consumed++;
	}
	atomic_store_explicit(s->sq_head, b->sh_head + consumed, memory_order_release);
}
