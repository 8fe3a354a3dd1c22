/*
 * Moving CQEs from the real CQ to the program's.  Only what fits is moved:
 * the rest stays in the real CQ (and the kernel's own overflow list behind
 * it), so a full shadow CQ loses nothing and the kernel keeps its NODROP
 * bookkeeping; IORING_SQ_CQ_OVERFLOW in the shadow tells the program to enter
 * and make room, exactly as the kernel's flag would.
 *
 * CQEs bufsel makes itself (an emulated request answered in user space, the
 * -ECANCELED of a held chain) wait in r->x->synth, in order, and go first: no
 * real CQE passes them, so the program sees one ordered stream.
 */
#include "preload/shadow/ring_io.h"

#include "preload/heap.h"
#include "preload/shadow/timeouts.h"

#include <stdlib.h>

unsigned complete_ready(const struct ring *r)
{
	const struct shadow *s = &r->sh;
	return atomic_load_explicit(s->cq_tail, memory_order_relaxed) -
	       atomic_load_explicit(s->cq_head, memory_order_acquire);
}

/*
 * The shadow's SQ flags.  Bits bufsel does not compute here have other
 * owners: NEED_WAKEUP on an SQPOLL ring with a poller is that thread's
 * (mover.c), and on a flags_shared ring the whole word is the kernel's, to
 * which bufsel adds only what it owns (ring.h).  Caller holds cq_lock.
 */
static void complete_flags(struct ring *r, unsigned left)
{
	struct shadow *s = &r->sh;
	if (r->flags_shared) {
		/* DEFER_TASKRUN | TASKRUN_FLAG: TASKRUN is the kernel's, set as it
		 * queues task work and cleared as the program's enter runs it;
		 * bufsel's while work a completion released waits for the next
		 * enter, CQ_OVERFLOW while it holds CQEs the shadow had no room for. */
		unsigned want = (r->ready ? IORING_SQ_TASKRUN : 0) | (left ? IORING_SQ_CQ_OVERFLOW : 0);
		unsigned add = want & ~r->x->flags_own, drop = r->x->flags_own & ~want;
		if (add)
			atomic_fetch_or_explicit(s->sq_flags, add, memory_order_release);
		if (drop)
			atomic_fetch_and_explicit(s->sq_flags, ~drop, memory_order_release);
		r->x->flags_own = want;
	} else {
		unsigned real = atomic_load_explicit(r->rsq_flags, memory_order_relaxed);
		/* TASKRUN as the kernel shows it, and always but on DEFER_TASKRUN
		 * rings: a completion that task work posts when the program returns
		 * from any system call (a read, a write) is in the kernel's CQ at
		 * once, and the mover moves it a few microseconds later, so a peek
		 * made right then must be sent in to look (liburing enters when
		 * this flag, or CQ_OVERFLOW, is set).  A DEFER_TASKRUN ring's CQ
		 * fills only inside the program's enters, after which bufsel has
		 * moved everything: there the flag is the kernel's, and bufsel's
		 * while work a completion released waits for the next enter.  With
		 * TASKRUN_FLAG on a ring whose word could not be shared (under
		 * valgrind), nothing wakes bufsel when the kernel sets it: a
		 * program that spins on it would spin for ever, so it is shown
		 * always.  On an SQPOLL ring with a poller the flag is the kernel's alone: the
		 * kernel's SQ thread posts its completions whenever it runs, so
		 * natively too there is no moment a program could count on
		 * finding one, and the poller moves them as it polls; shown
		 * always, it made liburing enter on every submission, which on
		 * an awake SQPOLL ring natively never enters (min-timeout-wait's
		 * 10 ms wait came back up to 5 ms late, its submit taking them). */
		unsigned f = real & IORING_SQ_TASKRUN;
		if (!((r->setup_flags & IORING_SETUP_SQPOLL) && r->has_mover) &&
		    (!(r->setup_flags & IORING_SETUP_DEFER_TASKRUN) || !r->cq_moved || r->ready ||
		     (r->setup_flags & IORING_SETUP_TASKRUN_FLAG)))
			f |= IORING_SQ_TASKRUN;
		if (left || (real & IORING_SQ_CQ_OVERFLOW))
			f |= IORING_SQ_CQ_OVERFLOW;
		/* Without a poller submission always has to reach bufsel, which
		 * then feeds the kernel's SQ thread itself. */
		unsigned keep = 0;
		if (r->setup_flags & IORING_SETUP_SQPOLL) {
			if (r->has_mover)
				keep = IORING_SQ_NEED_WAKEUP;
			else
				f |= IORING_SQ_NEED_WAKEUP;
		}
		unsigned old = atomic_load_explicit(s->sq_flags, memory_order_relaxed);
		while (!atomic_compare_exchange_weak_explicit(s->sq_flags, &old, (old & keep) | f,
							      memory_order_release, memory_order_relaxed))
			;
	}
	atomic_store_explicit(s->cq_overflow,
			      atomic_load_explicit(r->rcq_overflow, memory_order_relaxed) + r->x->cqe_lost,
			      memory_order_relaxed);
}

/* Can this process read and write the queue of made CQEs?  Not one that
 * outgrew the shared reserve into another process's heap (a ring shared
 * across fork, ring.h): that process moves them.  Caller holds cq_lock. */
static int synth_mine(const struct ring *r)
{
	return !r->x->synth.heap || r->synth_owner;
}

/* Caller holds cq_lock.  Only an allocation failure, with more than the
 * reserve waiting, can lose a CQE; the program is told as the kernel tells
 * of a CQE it had no memory for: the CQ overflow counter goes up. */
void complete_post(struct ring *r, const struct io_uring_cqe *cqe)
{
	struct cqe_queue *q = &r->x->synth;
	if (!synth_mine(r)) {
		r->x->cqe_lost++;
		return;
	}
	if (q->len == q->cap) {
		unsigned cap = q->cap ? q->cap * 2 : CQE_QUEUE_RESERVE;
		struct io_uring_cqe *v = heap_malloc(cap * sizeof(*v), "completion queue");
		if (!v) {
			r->x->cqe_lost++;
			return;
		}
		for (unsigned i = 0; i < q->len; i++)
			v[i] = q->v[(q->head + i) % q->cap];
		if (q->heap)
			heap_free(q->v);
		q->v = v;
		q->cap = cap;
		q->head = 0;
		q->heap = 1;
		r->synth_owner = 1;
	}
	q->v[(q->head + q->len++) % q->cap] = *cqe;
}

/* Moves queued CQEs into the shadow while it has room; returns how many. */
static unsigned synth_flush(struct ring *r, unsigned stail, unsigned space)
{
	struct cqe_queue *q = &r->x->synth;
	unsigned n = 0;
	if (q->len && !synth_mine(r))
		return 0;
	for (; q->len && n < space; n++, q->len--) {
		r->sh.cqes[(stail + n) & r->sh.cq_mask] = q->v[q->head];
		r->cq_from_real[(stail + n) & r->sh.cq_mask] = 0;
		q->head = (q->head + 1) % q->cap;
	}
	if (!q->len && q->heap) {
		/* Back to the shared reserve: any process may post again. */
		heap_free(q->v);
		*q = (struct cqe_queue){ .v = r->synth_reserve, .cap = r->synth_reserve ? CQE_QUEUE_RESERVE : 0 };
		r->synth_owner = 0;
	}
	return n;
}

/* Caller holds cq_lock.  Releases the real slots of what the program
 * consumed; a head the program moved past the tail counts only to it. */
static void publish_head(struct ring *r)
{
	unsigned head = atomic_load_explicit(r->sh.cq_head, memory_order_acquire);
	unsigned tail = atomic_load_explicit(r->sh.cq_tail, memory_order_relaxed);
	unsigned n = head - r->x->sh_released;
	if (n > tail - r->x->sh_released)
		n = tail - r->x->sh_released;
	for (; n && r->x->rcq_held; n--, r->x->sh_released++)
		r->x->rcq_held -= r->cq_from_real[r->x->sh_released & r->sh.cq_mask];
	r->x->sh_released += n;
	if (!r->x->cq_waiters)
		atomic_store_explicit(r->rcq_head, r->x->rcq_taken - r->x->rcq_held, memory_order_release);
}

static unsigned reap_locked(struct ring *r);

void inflight_done(struct ring *r, unsigned n)
{
	unsigned v = atomic_load_explicit(&r->x->kinflight, memory_order_relaxed);
	while (n && !atomic_compare_exchange_weak_explicit(&r->x->kinflight, &v, v > n ? v - n : 0,
							    memory_order_relaxed, memory_order_relaxed))
		;
}

void complete_release(struct ring *r)
{
	if (atomic_load_explicit(r->sh.cq_head, memory_order_relaxed) == r->x->sh_released)
		return;
	spin_lock(&r->x->cq_lock);
	publish_head(r);
	spin_unlock(&r->x->cq_lock);
}

unsigned complete_reap(struct ring *r)
{
	spin_lock(&r->x->cq_lock);
	return reap_locked(r);
}

unsigned complete_reap_follow(struct ring *r)
{
	/* A receive the mover is issuing right now (followup_busy) was
	 * natively done before this call: its CQE must be there when it
	 * returns.  The mover issues under sq_lock. */
	if (atomic_load_explicit(&r->x->followup_busy, memory_order_acquire)) {
		spin_lock(&r->x->sq_lock);
		spin_unlock(&r->x->sq_lock);
	}
	unsigned n = complete_reap(r);
	/* What is issued may complete at once and release more. */
	for (int rounds = 0; r->hooks && r->ready && rounds < 64; rounds++) {
		r->hooks->followup(r, 0);
		n += complete_reap(r);
	}
	return n;
}

unsigned complete_try_reap(struct ring *r)
{
	return spin_trylock(&r->x->cq_lock) ? reap_locked(r) : 0;
}

/* Releases cq_lock. */
static unsigned reap_locked(struct ring *r)
{
	struct shadow *s = &r->sh;
	unsigned rhead = r->x->rcq_taken;
	unsigned avail = atomic_load_explicit(r->rcq_tail, memory_order_acquire) - rhead;
	unsigned stail = atomic_load_explicit(s->cq_tail, memory_order_relaxed);
	/* A head the program moved past the tail makes the CQ full, as the
	 * kernel counts it, not roomier than it is. */
	unsigned queued = stail - atomic_load_explicit(s->cq_head, memory_order_acquire);
	unsigned space = s->cq_entries - (queued < s->cq_entries ? queued : s->cq_entries);
	unsigned taken = 0, done = 0, posted = synth_flush(r, stail, space);

	while (taken < avail && !r->x->synth.len) {
		const struct io_uring_cqe *src = &r->rcqes[(rhead + taken) & r->rcq_mask];
		/* Order is kept: what follows another process's CQE waits
		 * with it for that process to move it. */
		if (r->hooks && r->hooks->foreign && r->hooks->foreign(r, src))
			break;
		if (posted == space) {
			/* The program's CQ is full, and the kernel goes on
			 * completing: bufsel's own steps run (a multishot
			 * stream learns that its next CQE finds no room), and
			 * the first CQE for the program waits in the overflow
			 * queue, which ends this reap. */
			if (!r->hooks)
				break;
			struct io_uring_cqe c = *src;
			taken++;
			done += cqe_ends_request(src);
			if (atomic_load_explicit(&r->x->tmo_n, memory_order_relaxed))
				timeouts_completed(r, &c);
			if (r->hooks->complete(r, &c))
				complete_post(r, &c);
			continue;
		}
		struct io_uring_cqe *dst = &s->cqes[(stail + posted) & s->cq_mask];
		*dst = *src;
		taken++;
		done += cqe_ends_request(src);
		if (atomic_load_explicit(&r->x->tmo_n, memory_order_relaxed))
			timeouts_completed(r, dst);
		if (!r->hooks || r->hooks->complete(r, dst)) {
			r->cq_from_real[(stail + posted) & s->cq_mask] = 1;
			r->x->rcq_held++;
			posted++;
		}
		posted += synth_flush(r, stail + posted, space - posted);
	}
	/* A TIMEOUT counted to its end goes after the CQEs that ended it, as
	 * the kernel flushes timeouts as it commits its CQ (they may have been
	 * moved by another process sharing the ring: the count is the shadow
	 * tail's, which both share). */
	if (r->counting && r->hooks) {
		r->hooks->counted(r, stail + posted - atomic_load_explicit(&r->x->cq_timeouts, memory_order_relaxed));
		posted += synth_flush(r, stail + posted, space - posted);
	}
	atomic_store_explicit(s->cq_tail, stail + posted, memory_order_release);
	if (posted)
		atomic_store_explicit(&r->posted_ns, now_ns(), memory_order_relaxed);
	r->x->rcq_taken = rhead + taken;
	inflight_done(r, done);
	publish_head(r);
	complete_flags(r, avail - taken + r->x->synth.len);
	spin_unlock(&r->x->cq_lock);
	return posted;
}

unsigned complete_wait_begin(struct ring *r, unsigned min_complete, int one, unsigned fired, unsigned *target)
{
	spin_lock(&r->x->cq_lock);
	unsigned ready = complete_ready(r), want = 0;
	/* A reap counts a fired TIMEOUT under cq_lock: one counted before
	 * this point is seen here, one taken after it is still in the real
	 * CQ as the kernel counts it (the head waits for the waiters). */
	if (ready < min_complete && timeouts_fired(r) == fired) {
		r->x->cq_waiters++;
		int me = spin_self();
		for (unsigned i = 0; i < RING_WAITERS_TRACKED; i++)
			if (!r->x->waiter_tid[i]) {
				r->x->waiter_tid[i] = me;
				break;
			}
		unsigned head = atomic_load_explicit(r->rcq_head, memory_order_relaxed);
		unsigned unreleased = r->x->rcq_taken - head;
		want = unreleased + (one ? 1 : min_complete - ready);
		/* The kernel clamps it to the CQ size as well. */
		if (want > r->rcq_entries)
			want = r->rcq_entries;
		*target = head + want;
	}
	spin_unlock(&r->x->cq_lock);
	return want;
}

void complete_wait_end(struct ring *r)
{
	spin_lock(&r->x->cq_lock);
	int me = spin_self();
	for (unsigned i = 0; i < RING_WAITERS_TRACKED; i++)
		if (r->x->waiter_tid[i] == me) {
			r->x->waiter_tid[i] = 0;
			break;
		}
	if (r->x->cq_waiters)
		r->x->cq_waiters--;
	publish_head(r);
	spin_unlock(&r->x->cq_lock);
}

void complete_prune_waiters(struct ring *r)
{
	if (!__atomic_load_n(&r->x->forked, __ATOMIC_RELAXED) ||
	    !__atomic_load_n(&r->x->cq_waiters, __ATOMIC_RELAXED))
		return;
	spin_lock(&r->x->cq_lock);
	unsigned gone = 0;
	for (unsigned i = 0; i < RING_WAITERS_TRACKED; i++) {
		int tid = r->x->waiter_tid[i];
		if (tid && spin_tid_gone(tid)) {
			r->x->waiter_tid[i] = 0;
			gone++;
		}
	}
	if (gone) {
		r->x->cq_waiters = r->x->cq_waiters > gone ? r->x->cq_waiters - gone : 0;
		publish_head(r);
	}
	spin_unlock(&r->x->cq_lock);
}

void complete_sync_cq_flags(struct ring *r)
{
	unsigned f = atomic_load_explicit(r->sh.cq_flags, memory_order_relaxed);
	if (r->rcq_flags && atomic_load_explicit(r->rcq_flags, memory_order_relaxed) != f)
		atomic_store_explicit(r->rcq_flags, f, memory_order_relaxed);
}

unsigned complete_resize_pending(struct ring *r)
{
	publish_head(r);
	return atomic_load_explicit(r->sh.cq_tail, memory_order_relaxed) -
	       atomic_load_explicit(r->sh.cq_head, memory_order_acquire);
}

/*
 * As io_register_resize_rings copies the CQ: every CQE the program has not
 * consumed goes to the same index in the new ring (index & its mask), head
 * and tail keep their values, and so do the overflow counter and the CQ
 * flags.  Whether a shadow slot holds a real CQE's place moves with it; the
 * queue of CQEs bufsel made moves from the old scratch reserve to the new.
 */
void complete_resize_move(struct ring *r, struct shadow *ns, uint8_t *from_real,
			  struct io_uring_cqe *reserve)
{
	struct shadow *s = &r->sh;
	unsigned head = atomic_load_explicit(s->cq_head, memory_order_acquire);
	unsigned tail = atomic_load_explicit(s->cq_tail, memory_order_relaxed);
	for (unsigned i = head; i != tail; i++) {
		ns->cqes[i & ns->cq_mask] = s->cqes[i & s->cq_mask];
		from_real[i & ns->cq_mask] = r->cq_from_real[i & s->cq_mask];
	}
	atomic_store_explicit(ns->cq_head, head, memory_order_relaxed);
	atomic_store_explicit(ns->cq_tail, tail, memory_order_relaxed);
	atomic_store_explicit(ns->cq_overflow, atomic_load_explicit(s->cq_overflow, memory_order_relaxed),
			      memory_order_relaxed);
	atomic_store_explicit(ns->cq_flags, atomic_load_explicit(s->cq_flags, memory_order_relaxed),
			      memory_order_relaxed);
	r->cq_from_real = from_real;
	struct cqe_queue *q = &r->x->synth;
	r->synth_reserve = reserve;
	if (!q->heap) {
		for (unsigned i = 0; i < q->len; i++)
			reserve[i] = q->v[(q->head + i) % q->cap];
		q->v = reserve;
		q->head = 0;
	}
}
