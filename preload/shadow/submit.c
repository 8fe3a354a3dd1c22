/*
 * Draining the shadow SQ.  SQEs are copied to the real SQ at the real tail,
 * with an identity SQ array, so a slot is only rewritten once the kernel (or
 * its SQPOLL thread) has consumed it.  What the kernel did not take is put
 * back: the real tail and the shadow head roll back together, so the program
 * sees exactly the SQ state it would see natively, and whatever bufsel did
 * for an SQE the kernel never took is undone.
 *
 * An SQE bufsel must hold back (the rest of a chain behind a receive that
 * waits for data) is "captured": it leaves the shadow SQ like any other but
 * takes no real slot; it belongs to the real slot before it and is consumed,
 * or rolled back, with that slot.
 */
#include "preload/shadow/ring_io.h"

#include <errno.h>
#include <string.h>

#include "preload/select/opdef.h"
#include "preload/shadow/compat.h"
#include "preload/shadow/timeouts.h"

/* The real SQ's array is the identity; a NO_SQARRAY ring has none. */
static inline void real_slot_publish(struct ring *r, unsigned slot)
{
	if (r->rsq_array)
		atomic_store_explicit(&r->rsq_array[slot], slot, memory_order_relaxed);
}

/* The SQ head moves: bufsel's copy, and the one the program sees. */
static void sq_head_set(struct ring *r, unsigned head)
{
	r->x->sq_head = head;
	atomic_store_explicit(r->sh.sq_head, head, memory_order_release);
}

/* Is nothing allocated in the ring (io_queue_deferred: nr_req_allocated ==
 * nr_drained)?  Requests that posted their last CQE are freed, whether or
 * not bufsel has moved that CQE yet. */
static int kernel_idle(struct ring *r)
{
	spin_lock(&r->x->cq_lock);
	unsigned n = atomic_load_explicit(&r->x->kinflight, memory_order_relaxed);
	unsigned tail = atomic_load_explicit(r->rcq_tail, memory_order_acquire);
	for (unsigned head = r->x->rcq_taken; head != tail && n; head++)
		n -= cqe_ends_request(&r->rcqes[head & r->rcq_mask]);
	spin_unlock(&r->x->cq_lock);
	return !n;
}

/*
 * io_init_req's drain rules for the SQE about to be placed.  An SQE that
 * gets to IOSQE_IO_DRAIN's check turns ctx->drain_active on (in a chain
 * also drain_next, which drains the next SQE outside it), whether or not it
 * then fails its prep.  While drain_active is on, every SQE is forced to
 * io-wq through io_drain_req, which releases it at once only if nothing
 * else is allocated in the ring (no SQE before it in the batch, none in
 * flight), and then turns drain_active off unless the SQE drains itself;
 * otherwise it waits, and so does everything after it.  Returns 1 if the
 * kernel forces the SQE async; r->drain_waits: it waits.
 */
static int drain_forces(struct ring *r, const struct place_state *st, const struct io_uring_sqe *src,
			int in_chain)
{
	struct ring_shared *x = r->x;
	int drained = !!(src->flags & IOSQE_IO_DRAIN);
	r->drain_waits = 0;
	if (!drained && !x->drain_active && !x->drain_next)
		return 0;
	if (!opdef_passes_flag_checks(src) || (drained && x->drain_disabled))
		return 0;	/* it fails before the drain rules */
	if (drained) {
		x->drain_active = 1;
		if (in_chain)
			x->drain_next = 1;
	}
	int forced = x->drain_active;
	if (x->drain_next && !in_chain) {
		x->drain_next = 0;
		x->drain_active = 1;
		forced = drained = 1;
	}
	/* A chain meets io_drain_req at its end, as one; one that fails
	 * never does. */
	if (!forced || in_chain || st->chain_fails || r->hooks->submit_error(r, src))
		return forced;
	if (st->copied || !kernel_idle(r))
		r->drain_waits = 1;
	else if (!drained)
		x->drain_active = 0;
	return 1;
}

/* Places one SQE: 1 if it took a real slot, 0 if it was captured, -1 if it
 * must wait (a barrier: the kernel has to see what precedes it first). */
static int place_one(struct ring *r, struct place_state *st, const struct io_uring_sqe *shared,
		     int sqpoll)
{
	/* The kernel reads each SQE field once; a program thread may be
	 * writing this one now.  Everything below is decided from one copy,
	 * and the compiler may not go back to the shared SQE after it. */
	struct io_uring_sqe copy;
	memcpy(&copy, shared, sizeof(copy));
	__asm__ volatile("" ::: "memory");
	const struct io_uring_sqe *src = &copy;
	int in_chain = st->linked;
	/* BUFSEL_KERNEL: an opcode or flag that kernel lacks fails as there. */
	compat_sqe(&copy, in_chain, compat_kernel() && r->hooks && r->hooks->offers ? r->hooks->offers(r, &copy) : 0);
	st->linked = !!(src->flags & (IOSQE_IO_LINK | IOSQE_IO_HARDLINK));
	int drain_was = r->x->drain_disabled, skip_was = r->x->kernel_skip;
	int active_was = r->x->drain_active, next_was = r->x->drain_next;
	if (opdef_skip_disables_drain(src))
		r->x->drain_disabled = 1;
	int forced = !sqpoll && r->hooks && r->hooks->submit_error && drain_forces(r, st, src, in_chain);
	if (r->undo)
		r->undo[st->copied] = (struct rewrite_undo){ .drain_was = (uint8_t)drain_was,
							    .skip_was = (uint8_t)skip_was,
							    .active_was = (uint8_t)active_was,
							    .next_was = (uint8_t)next_was };
	unsigned slot = (st->real_tail + st->copied) & r->rsq_mask;
	struct io_uring_sqe *sqe = &r->rsqes[slot];
	if (st->chain_fails) {
		/* The kernel fails the whole chain at submission: nothing of it
		 * runs, nothing is held, bufsel acts on none of it. */
		*sqe = *src;
		r->hooks->fail_member(r, sqe, &r->undo[st->copied]);
		if (!st->linked)
			st->chain_fails = 0;
	} else if (st->capture) {
		*sqe = *src;
		int place = r->hooks->hold(r, st->capture, sqe, &r->undo[st->copied]);
		if (!st->linked || place == 2)
			st->capture = NULL;
		if (!place) {
			/* A held SQE takes no real slot: the real SQE before it (the
			 * request that holds it) must not link to whatever unrelated
			 * SQE the kernel sees next. */
			r->rsqes[(st->real_tail + st->copied - 1) & r->rsq_mask].flags &=
				(uint8_t)~(IOSQE_IO_LINK | IOSQE_IO_HARDLINK);
			return 0;
		}
	} else if (r->hooks && r->hooks->wants(src)) {
		/* A barrier inside a chain waits behind a sentinel anyway; handing
		 * the chain's start to the kernel alone would cut the link. */
		int barrier = st->copied && !in_chain && !sqpoll ? r->hooks->barrier(r, src) : 0;
		if (barrier) {
			st->reap = barrier == 2;
			st->linked = in_chain;
			/* not seen by the kernel yet */
			r->x->drain_disabled = drain_was;
			r->x->drain_active = active_was;
			r->x->drain_next = next_was;
			return -1;
		}
		*sqe = *src;
		/* io_queue_sqe_fallback: IOSQE_ASYNC, or the head of a chain
		 * the batch leaves open, is issued from io-wq; so is a drained
		 * SQE (io_init_req forces it async, io_drain_req queues it). */
		r->forced_async = (src->flags & FORCED_ASYNC) || forced;
		r->to_wq = r->forced_async || (!in_chain && st->linked && st->chain_open);
		st->capture = r->hooks->rewrite(r, sqe, &r->undo[st->copied], in_chain);
		if (st->capture && !st->linked)
			st->capture = NULL;
		st->deferred |= r->undo[st->copied].deferred;
	} else {
		*sqe = *src;
		if (r->undo)
			r->undo[st->copied].kind = 0;
	}
	/* io_submit_sqes stops after an SQE that fails at submission and
	 * links no further.  Only a selection deferred to the batch's end can
	 * tell: it would come after the selections of SQEs the kernel never
	 * takes, and keep the buffers they give back (rewrite_deferred). */
	if (st->deferred && !st->linked && !sqpoll && r->hooks && r->hooks->submit_error &&
	    !(r->setup_flags & IORING_SETUP_SUBMIT_ALL))
		st->stops = r->hooks->submit_error(r, src) != 0;
	if (!in_chain)
		r->skip_chain = 0;
	if ((sqe->flags & IOSQE_CQE_SKIP_SUCCESS || ((sqe->flags & IOSQE_IO_DRAIN) && r->x->drain_disabled) ||
	     r->skip_chain) &&
	    r->hooks && r->undo && compat_sqe_skip_shadowed())
		r->hooks->skip(r, sqe, &r->undo[st->copied], in_chain);
	if (sqe->flags & IOSQE_CQE_SKIP_SUCCESS)
		r->x->kernel_skip = 1;
	/* The program's own TIMEOUT, not a stand-in bufsel made of another SQE,
	 * nor one bufsel counts itself (which counts its own firing). */
	if (src->opcode == IORING_OP_TIMEOUT && sqe->opcode == IORING_OP_TIMEOUT && r->undo &&
	    r->undo[st->copied].kind != UNDO_REQ)
		timeouts_submitted(r, sqe->user_data);
	real_slot_publish(r, slot);
	st->copied++;
	return 1;
}

/* The real slots tail+from .. tail+to-1 in kinflight: counted before the
 * kernel sees them (a reaper may take their CQEs before the enter
 * returns), taken off again if it does not take them. */
static unsigned inflight_count(const struct ring *r, unsigned tail, unsigned from, unsigned to)
{
	unsigned n = 0;
	for (unsigned i = from; i < to; i++)
		n += !(r->rsqes[(tail + i) & r->rsq_mask].flags & IOSQE_CQE_SKIP_SUCCESS);
	return n;
}

/* Selections that wait for the end of the batch (rewrite_deferred), in
 * SQE order: the real slots from..to-1 past tail. */
static void select_deferred(struct ring *r, unsigned tail, unsigned from, unsigned to)
{
	if (!r->hooks || !r->hooks->deferred)
		return;
	for (unsigned i = from; i < to; i++)
		if (r->undo[i].deferred)
			r->hooks->deferred(r, &r->rsqes[(tail + i) & r->rsq_mask], &r->undo[i]);
}

/* SQ array entry i of the batch: an SQE index, or >= sq_entries if invalid. */
static unsigned sq_index(const struct shadow *s, unsigned head, unsigned i)
{
	return s->lay.no_sqarray ? (head + i) & s->sq_mask
				 : atomic_load_explicit(&s->sq_array[(head + i) & s->sq_mask], memory_order_relaxed);
}

/* How far ahead bufsel looks for the members of a chain. */
#define CHAIN_AHEAD 32

/*
 * A chain the kernel fails at submission (a member fails io_init_req or its
 * prep: the kernel then fails every member, and runs none) must not have its
 * head run by bufsel before the kernel sees the rest.  Copies the chain
 * starting at batch entry i (up to n, the batch's end, as the kernel's
 * assembly stops there) into ahead[]: the SQEs are read once, from these
 * copies.  Returns how many were copied; *fails: some member fails.
 */
static unsigned chain_ahead(struct ring *r, unsigned head, unsigned i, unsigned n,
			    struct io_uring_sqe *ahead, int *fails, int *open)
{
	const struct shadow *s = &r->sh;
	unsigned k = 0;
	*fails = 0;
	*open = 0;
	/* io_init_req turns drains off at a member with IOSQE_CQE_SKIP_SUCCESS,
	 * before it checks that member's drain and those of the rest. */
	int drain_was = r->x->drain_disabled;
	while (k < CHAIN_AHEAD) {
		unsigned idx = i + k < n ? sq_index(s, head, i + k) : s->sq_entries;
		if (idx >= s->sq_entries) {
			/* The batch ends with the chain still linking: the kernel
			 * hands its head to io-wq (io_submit_state_end). */
			*open = 1;
			break;
		}
		memcpy(&ahead[k], &s->sqes[idx], sizeof(ahead[k]));
		__asm__ volatile("" ::: "memory");
		if (opdef_skip_disables_drain(&ahead[k]))
			r->x->drain_disabled = 1;
		*fails |= r->hooks->submit_error(r, &ahead[k]) != 0;
		if (!(ahead[k++].flags & (IOSQE_IO_LINK | IOSQE_IO_HARDLINK)))
			break;
	}
	r->x->drain_disabled = drain_was;
	return k;
}

/*
 * A probe behind the SQEs placed so far is taken only if the kernel went
 * through all of them.  Not behind an open chain (the probe would join it),
 * nor without a real slot for it.  1 if placed.
 */
static int place_probe(struct ring *r, struct submit_batch *b, unsigned rspace)
{
	unsigned slot = (b->st.real_tail + b->st.copied) & r->rsq_mask;
	if (!r->hooks || !b->st.copied || b->st.copied >= rspace || b->st.capture ||
	    (r->rsqes[(slot - 1) & r->rsq_mask].flags & (IOSQE_IO_LINK | IOSQE_IO_HARDLINK)))
		return 0;
	struct rewrite_undo *u = &r->undo[b->st.copied];
	*u = (struct rewrite_undo){ .drain_was = (uint8_t)r->x->drain_disabled, .skip_was = (uint8_t)r->x->kernel_skip };
	if (r->hooks->probe(r, &r->rsqes[slot], u))
		return 0;
	real_slot_publish(r, slot);
	b->st.copied++;
	if (r->prog_end)
		r->prog_end[b->st.copied - 1] = b->prog;
	return 1;
}

void submit_prepare(struct ring *r, unsigned to_submit, struct submit_batch *b)
{
	struct io_uring_sqe ahead[CHAIN_AHEAD];
	unsigned ahead_from = 0, ahead_n = 0;
	struct shadow *s = &r->sh;
	/* The kernel's SQ head is its own (cached_sq_head): what the program
	 * writes to the visible one changes nothing. */
	unsigned head = r->x->sq_head;
	unsigned avail = atomic_load_explicit(s->sq_tail, memory_order_acquire) - head;
	/* io_sqring_entries: never more than the SQ holds, however far the
	 * tail is ahead, so SQEs bufsel holds back are bounded as the SQ is. */
	if (avail > s->sq_entries)
		avail = s->sq_entries;
	unsigned rtail = atomic_load_explicit(r->rsq_tail, memory_order_relaxed);
	unsigned rspace = r->rsq_entries - (rtail - atomic_load_explicit(r->rsq_head, memory_order_acquire));
	int sqpoll = r->setup_flags & IORING_SETUP_SQPOLL;
	/* An SQPOLL kernel takes everything published, whatever to_submit says. */
	unsigned n = sqpoll || to_submit > avail ? avail : to_submit;

	*b = (struct submit_batch){ .wanted = to_submit, .sh_head = head, .real_tail = rtail,
				    .empty = !n, .n = n };
	if (n && r->hooks) {
		/* Natively the kernel's CQ already holds what bufsel has not
		 * moved yet: a TIMEOUT of this batch does not count those. */
		spin_lock(&r->x->cq_lock);
		r->cq_seq0 = ring_cq_seq(r) + (atomic_load_explicit(r->rcq_tail, memory_order_acquire) - r->x->rcq_taken);
		spin_unlock(&r->x->cq_lock);
	}
	b->st.real_tail = rtail;
	r->batch_recvs = NULL;
	for (unsigned i = 0; i < n; i++) {
		unsigned idx = sq_index(s, head, i);
		if (idx >= s->sq_entries) {
			b->dropped = 1;
			/* The kernel consumes the invalid entry only if it gets
			 * there: not if it stops at an SQE before it that fails
			 * at submission. */
			b->probed = place_probe(r, b, rspace);
			break;
		}
		if (b->st.copied == rspace && !b->st.capture)
			break;
		const struct io_uring_sqe *src = &s->sqes[idx];
		if (i - ahead_from < ahead_n) {
			src = &ahead[i - ahead_from];
		} else if (!b->st.linked && r->hooks && r->hooks->submit_error &&
			   (((const volatile struct io_uring_sqe *)src)->flags &
			    (IOSQE_IO_LINK | IOSQE_IO_HARDLINK))) {
			/* A glance at the link bits; the copies below decide. */
			int fails, open;
			ahead_from = i;
			ahead_n = chain_ahead(r, head, i, n, ahead, &fails, &open);
			b->st.chain_fails = fails;
			b->st.chain_open = open;
			src = &ahead[0];
		}
		int placed = place_one(r, &b->st, src, sqpoll);
		if (placed < 0) {
			b->barrier = 1;
			/* The kernel stops after an SQE that fails at submission,
			 * and then so must bufsel. */
			place_probe(r, b, rspace);
			break;
		}
		b->prog++;
		/* A captured SQE goes with the real slot before it. */
		if (r->prog_end && b->st.copied)
			r->prog_end[b->st.copied - 1] = b->prog;
		if (b->st.stops)
			break;
	}
	b->copied = b->st.copied;
	select_deferred(r, rtail, 0, b->copied);
	atomic_fetch_add_explicit(&r->x->kinflight, inflight_count(r, rtail, 0, b->copied), memory_order_relaxed);
	atomic_store_explicit(r->rsq_tail, rtail + b->copied, memory_order_release);
	if (sqpoll && n) {
		/* The SQ thread owns what we published; the batch is done now. */
		unsigned consumed = b->prog + (unsigned)b->dropped;
		if (b->dropped)
			atomic_fetch_add(s->sq_dropped, 1);
		sq_head_set(r, head + consumed);
	}
}

/* Undo entries from .. to-1: SQEs the kernel takes. */
static void commit_placed(struct ring *r, unsigned from, unsigned to)
{
	if (r->hooks && r->hooks->commit)
		for (unsigned i = from; i < to; i++)
			r->hooks->commit(r, &r->undo[i]);
}

unsigned submit_finish(struct ring *r, const struct submit_batch *b, long kret)
{
	struct shadow *s = &r->sh;
	if (r->setup_flags & IORING_SETUP_SQPOLL) {
		commit_placed(r, 0, b->copied);
		return b->prog;
	}
	unsigned taken = (unsigned)(atomic_load_explicit(r->rsq_head, memory_order_acquire) - b->real_tail);
	if (taken > b->copied)
		taken = b->copied;
	atomic_store_explicit(r->rsq_tail, b->real_tail + taken, memory_order_release);
	inflight_done(r, inflight_count(r, b->real_tail, taken, b->copied));
	if (r->hooks) {
		commit_placed(r, 0, taken);
		for (unsigned i = b->copied; i-- > taken;) {
			const struct io_uring_sqe *sqe = &r->rsqes[(b->real_tail + i) & r->rsq_mask];
			if (sqe->opcode == IORING_OP_TIMEOUT && atomic_load_explicit(&r->x->tmo_n, memory_order_relaxed))
				timeouts_not_taken(r, sqe->user_data);
			r->hooks->undo(r, &r->undo[i]);
			/* The kernel never saw it: its skip and drain rules did
			 * not apply (reverse order: the first one's state stays). */
			r->x->drain_disabled = r->undo[i].drain_was;
			r->x->kernel_skip = r->undo[i].skip_was;
			r->x->drain_active = r->undo[i].active_was;
			r->x->drain_next = r->undo[i].next_was;
		}
	}
	unsigned consumed = taken && r->prog_end ? r->prog_end[taken - 1] : taken;
	/* The kernel consumes an invalid index in the same pass that stops at it. */
	if (b->dropped && taken == b->copied && (kret >= 0 || b->probed)) {
		atomic_fetch_add(s->sq_dropped, 1);
		sq_head_set(r, b->sh_head + consumed + 1);
		return consumed;
	}
	if (!b->empty || (b->wanted && r->commits_empty_sq))
		sq_head_set(r, b->sh_head + consumed);
	return consumed;
}

int submit_held(struct ring *r, const struct io_uring_sqe *first, const struct io_uring_sqe *rest,
		unsigned n)
{
	unsigned rtail = atomic_load_explicit(r->rsq_tail, memory_order_relaxed);
	unsigned rspace = r->rsq_entries - (rtail - atomic_load_explicit(r->rsq_head, memory_order_acquire));
	struct place_state st = { .real_tail = rtail };
	if (n + !!first > rspace)
		return -EBUSY;
	if (first && first->opcode != 0xff) {
		/* Already rewritten: it goes in as it is, heading the chain. */
		unsigned slot = rtail & r->rsq_mask;
		r->rsqes[slot] = *first;
		real_slot_publish(r, slot);
		st.copied = 1;
		st.linked = !!(first->flags & (IOSQE_IO_LINK | IOSQE_IO_HARDLINK));
	}
	unsigned placed_from = st.copied;
	for (unsigned i = 0; i < n; i++)
		if (place_one(r, &st, &rest[i], 1) < 0)
			return -EBUSY;
	select_deferred(r, rtail, placed_from, st.copied);
	atomic_fetch_add_explicit(&r->x->kinflight, inflight_count(r, rtail, 0, st.copied), memory_order_relaxed);
	commit_placed(r, 0, st.copied);
	atomic_store_explicit(r->rsq_tail, rtail + st.copied, memory_order_release);
	return (int)st.copied;
}
