/*
 * One buffer group id of a ring and what sits on it: a legacy group (a deque
 * of buffers), a ring-mapped group (the kernel's, only marked here), or
 * nothing but buffers still out from a group that is gone.  Internal to pool/.
 *
 * Invariants (group_check states them):
 * - the deque is slots[(head + i) & (cap - 1)] for i < count, oldest first;
 *   cap is 0 or a power of two, and slots is NULL exactly when cap is 0;
 * - a legacy group has cap >= count + in_use, so a put-back, which only ever
 *   returns one of in_use, never allocates (pool_putback cannot fail);
 * - only a legacy group holds buffers; count == provided + returned -
 *   removed - selected over its life;
 * - in_use belongs to the id and outlives group lives; peak_in_use >= in_use;
 * - a GROUP_GONE entry exists only while in_use > 0;
 * - enobufs is enobufs_empty + enobufs_capped + enobufs_injected; the
 *   in-use histogram adds up to selected, the bytes-used one to used_count,
 *   and used_count <= consumed;
 * - only a legacy group has a policy, and its rate is within [0, 1].
 *
 * The counters and histograms cost about 700 bytes per group id in use.
 */
#ifndef BUFSEL_POOL_GROUP_H
#define BUFSEL_POOL_GROUP_H

#include <stdint.h>

#include "pool/alloc.h"
#include "pool/pool.h"

/* Past this many slots a group reports -ENOMEM: keeps every count in 32 bits
 * (only reachable through the kernel's put-back-past-the-cap behaviour). */
#define GROUP_SLOTS_MAX (1u << 30)

struct pool_slot {
	uint64_t addr;
	uint32_t len;
	uint16_t bid;
};

enum group_kind {
	GROUP_LEGACY = 1,	/* PROVIDE_BUFFERS created it */
	GROUP_RING,		/* IORING_REGISTER_PBUF_RING took the id */
	GROUP_GONE,		/* no group; in_use > 0 buffers still out */
	GROUP_RING_EMU,		/* a buffer ring bufsel keeps itself (pool/ring.c) */
};

struct group {
	struct pool_slot *slots;
	uint32_t cap, head, count;
	uint32_t in_use, peak_in_use;
	uint16_t bgid;
	uint8_t kind;		/* enum group_kind */
	uint64_t provided, removed, selected, returned, consumed, enobufs;
	uint64_t enobufs_empty, enobufs_capped, enobufs_injected;
	uint64_t waits, wait_ns, used_count, used_bytes;
	uint64_t used_hist[POOL_HIST_BUCKETS], in_use_hist[POOL_HIST_BUCKETS];
	struct pool_policy policy;	/* this life's (policy.c); zero: none */
	/* With a cap: buffers delivered to the program and not yet provided
	 * again (matched by bid), which the cap counts as handed out, as if
	 * the program had provided only cap buffers and kept these. */
	uint32_t held;
	uint64_t *held_bits;		/* one bit per bid, made with the first counted delivery */
	uint32_t peak_out;		/* most in_use + held at once */
	uint32_t peak_size;		/* most count + in_use + held at once */
	uint32_t buf_len;		/* largest buffer length provided (clamped) */
	uint64_t rng;			/* the injection generator's state */
	/* GROUP_RING_EMU: the ring the program fills, as bufsel addresses it
	 * (ring.mem is bufsel's own mapping of an IOU_PBUF_RING_MMAP ring,
	 * which preload/ made and unmaps); the kernel's head, which only
	 * bufsel knows; the tail as last read, to count what was provided. */
	struct pool_ring ring;
	uint16_t ring_head, ring_tail_seen;
	/* GROUP_RING watched for statistics (pool_ring_watch): ring is the
	 * program's view of the kernel's ring (entries NULL until it is
	 * known), ring_head where the kernel's head must be by the CQEs seen. */
	uint8_t watched;
	/* GROUP_GONE after a ring's unregistration: that life's statistics,
	 * kept for the report (1: bufsel's ring, 2: the kernel's, watched)
	 * until the id starts another. */
	uint8_t ended;
	/* A legacy group under POOL_NEWEST_FIRST (pool.h): the deque's tail
	 * is taken first and its head (the group's first buffer) last; an
	 * emptied group has ended until it is provided to again. */
	uint8_t newest_first, vanished;
};

/* The buffer a legacy group's next selection takes (count > 0); oldest: one
 * made as the kernels with FIFO groups make it (POOL_SEL_OLDEST). */
static inline const struct pool_slot *group_next(const struct group *g, int oldest)
{
	uint32_t at = g->newest_first && !oldest ? g->head + g->count - 1 : g->head;
	return &g->slots[at & (g->cap - 1)];
}

/* Is the id a buffer ring, the kernel's or bufsel's?  Both refuse
 * PROVIDE_BUFFERS and REMOVE_BUFFERS and a second registration. */
static inline int group_is_ring(const struct group *g)
{
	return g->kind == GROUP_RING || g->kind == GROUP_RING_EMU;
}

/* The legacy groups and the emulated rings: those bufsel selects from. */
static inline int group_selects(const struct group *g)
{
	return g->kind == GROUP_LEGACY || g->kind == GROUP_RING_EMU;
}

/* The groups with statistics: those bufsel selects from and the kernel's
 * rings it watches. */
static inline int group_reported(const struct group *g)
{
	return group_selects(g) || (g->kind == GROUP_RING && g->watched) || (g->kind == GROUP_GONE && g->ended);
}

/* Starts a new life of kind k on the id: fresh counters, no policy, in_use
 * kept. */
void group_begin(struct group *g, enum group_kind k);
/* Starts a legacy group's life with room for the id's buffers still out:
 * 0, or -ENOMEM with nothing changed. */
int group_begin_legacy(struct group *g, const struct pool_allocator *a);
/* Frees the deque's memory (the group must hold no buffers). */
void group_release(struct group *g, const struct pool_allocator *a);

/* A validated PROVIDE on a legacy group: 0, -EOVERFLOW or -ENOMEM. */
int group_add(struct group *g, const struct pool_provide *r, const struct pool_allocator *a);
/* Takes the last k added (at most all held) back off the tail of a legacy
 * group, as if they had never been provided. */
void group_unadd(struct group *g, uint32_t k, const struct pool_allocator *a);
/* Removes up to nbufs from the head of a legacy group; returns how many.
 * kept (or NULL): room for that many, which get the removed slots in order. */
uint32_t group_remove(struct group *g, uint32_t nbufs, struct pool_slot *kept, const struct pool_allocator *a);
/* Puts k slots group_remove kept back at the head, in their order, as if
 * the removal had never been: 0, or -ENOMEM with nothing changed. */
int group_unremove(struct group *g, const struct pool_slot *kept, uint32_t k, const struct pool_allocator *a);
/* The next buffer of a legacy group (group_next), its len clamped to the
 * policy's max_len: 0 or -ENOBUFS (empty, capped or injected, in that
 * order). */
int group_select(struct group *g, struct pool_buf *out, int count, int oldest);
/* One of in_use comes back (the caller checked in_use > 0): if legacy, to
 * the end its selection took it from (the head, or the newest end under
 * POOL_NEWEST_FIRST), else dropped. */
void group_putback(struct group *g, const struct pool_buf *b);

/* Buffers a selection could take now, as last seen. */
uint32_t group_available(const struct group *g);
void group_stats(const struct group *g, struct pool_group_stats *out);
void group_hist(const struct group *g, struct pool_group_hist *out);

/* ring.c: an emulated ring's selection, put-back, and what it holds. */
int ring_select(struct group *g, struct pool_buf *out, int count);
int ring_bundle(struct group *g, struct pool_bundle *b, struct pool_buf *out);
int ring_commit(struct group *g, const struct pool_buf *bufs, uint16_t n, uint32_t used,
		const struct pool_allocator *a);
void ring_putback(struct group *g, const struct pool_buf *b);
uint32_t ring_available(const struct group *g);
int ring_peek(const struct group *g, struct pool_buf *out);
int ring_check(const struct group *g);

/* policy.c: gives a legacy group its policy (normalised) and seeds its
 * generator from (seed, bgid). */
void policy_apply(struct group *g, const struct pool_policy *pol);
/* One draw: 1 if this selection is to fail -ENOBUFS. */
int policy_inject(struct group *g);
/* 0 or -EUCLEAN. */
int policy_check(const struct group *g);
/* 0 or -EUCLEAN. */
int group_check(const struct group *g, uint16_t bgid);

#endif
