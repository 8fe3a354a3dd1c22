/*
 * The deque of one legacy group and the operations of kbuf.c on it: provide
 * appends at the tail in bid order, selection and removal take the head, a
 * put-back goes to the head.  The deque is one array used as a ring, so every
 * one of those is O(1) per buffer and a group costs memory in proportion to
 * the buffers it holds plus those out of it (the array's sizing is
 * slots.c's; what a selection and a delivery count, account.c's).
 */
#include "pool/group.h"

#include <errno.h>
#include <string.h>

#include "pool/account.h"
#include "pool/slots.h"

static uint32_t mask(const struct group *g)
{
	return g->cap - 1;
}

void group_begin(struct group *g, enum group_kind k)
{
	g->kind = (uint8_t)k;
	g->provided = g->removed = g->selected = 0;
	g->returned = g->consumed = g->enobufs = 0;
	g->enobufs_empty = g->enobufs_capped = g->enobufs_injected = 0;
	g->waits = g->wait_ns = g->used_count = g->used_bytes = 0;
	memset(g->used_hist, 0, sizeof(g->used_hist));
	memset(g->in_use_hist, 0, sizeof(g->in_use_hist));
	g->policy = (struct pool_policy){ 0 };
	g->rng = 0;
	g->peak_in_use = g->in_use;
	g->peak_out = g->in_use + g->held;
	g->peak_size = g->count + g->in_use + g->held;
	g->buf_len = 0;
	g->watched = 0;
	g->ended = 0;
}

int group_begin_legacy(struct group *g, const struct pool_allocator *a)
{
	int ret = slots_reserve(g, g->in_use, a);
	if (!ret)
		group_begin(g, GROUP_LEGACY);
	return ret;
}

void group_release(struct group *g, const struct pool_allocator *a)
{
	held_free(g, a);
	pool_free(a, g->slots, (size_t)g->cap * sizeof(*g->slots));
	g->slots = NULL;
	g->cap = g->head = g->count = 0;
}

int group_add(struct group *g, const struct pool_provide *r, const struct pool_allocator *a)
{
	uint32_t n = (uint32_t)r->nbufs, k = n;

	/* io_add_buffers stops when the list holds exactly USHRT_MAX.  A list
	 * pushed past it by put-backs (which do not check) takes whole requests
	 * until removals bring it back to exactly USHRT_MAX. */
	if (g->count <= POOL_GROUP_CAP && n > POOL_GROUP_CAP - g->count)
		k = POOL_GROUP_CAP - g->count;
	if (!k)
		return -EOVERFLOW;
	int ret = slots_reserve(g, (uint64_t)g->count + g->in_use + k, a);
	if (ret)
		return ret;

	uint32_t len = r->len < POOL_MAX_RW_COUNT ? r->len : POOL_MAX_RW_COUNT;
	uint32_t tail = g->head + g->count;
	for (uint32_t i = 0; i < k; i++) {
		struct pool_slot *s = &g->slots[(tail + i) & mask(g)];
		/* The next address steps by the unclamped length, as in the kernel. */
		s->addr = r->addr + (uint64_t)i * r->len;
		s->len = len;
		s->bid = (uint16_t)(r->off + i);
		if (g->held)
			held_clear(g, s->bid);
	}
	g->count += k;
	g->vanished = 0;
	/* cppcheck 2.10 wrongly takes len for less than 1 after the clamp above. */
	// cppcheck-suppress knownConditionTrueFalse
	if (len > g->buf_len)
		g->buf_len = len;
	if ((uint64_t)g->count + g->in_use + g->held > g->peak_size)
		g->peak_size = g->count + g->in_use + g->held;
	g->provided += k;
	return 0;
}

void group_unadd(struct group *g, uint32_t k, const struct pool_allocator *a)
{
	if (k > g->count)
		k = g->count;
	if (k > g->provided)
		k = (uint32_t)g->provided;
	g->count -= k;
	g->provided -= k;
	slots_trim(g, a);
}

/* Newest first, a removal of fewer than all skips the group's first buffer
 * (slots[head]), the list head it was in the kernel: it moves up by k. */
static uint32_t skips_first(const struct group *g, uint32_t k)
{
	return g->newest_first && k < g->count;
}

uint32_t group_remove(struct group *g, uint32_t nbufs, struct pool_slot *kept, const struct pool_allocator *a)
{
	uint32_t k = nbufs < g->count ? nbufs : g->count;
	if (!k)
		return 0;
	uint32_t skip = skips_first(g, k);
	for (uint32_t i = 0; kept && i < k; i++)
		kept[i] = g->slots[(g->head + skip + i) & mask(g)];
	if (skip)
		g->slots[(g->head + k) & mask(g)] = g->slots[g->head];
	g->head = (g->head + k) & mask(g);
	g->count -= k;
	g->removed += k;
	if (g->newest_first && !g->count)
		g->vanished = 1;
	slots_trim(g, a);
	return k;
}

int group_unremove(struct group *g, const struct pool_slot *kept, uint32_t k, const struct pool_allocator *a)
{
	/* reserve may move the deque: the head is read after it. */
	int ret = slots_reserve(g, (uint64_t)g->count + g->in_use + k, a);
	if (ret)
		return ret;
	/* Undone, the removal skipped the first buffer if it would now. */
	uint32_t skip = g->newest_first && g->count;
	g->head = (g->head - k) & mask(g);
	if (skip)
		g->slots[g->head] = g->slots[(g->head + k) & mask(g)];
	for (uint32_t i = 0; i < k; i++)
		g->slots[(g->head + skip + i) & mask(g)] = kept[i];
	g->count += k;
	g->removed -= k;
	g->vanished = 0;
	return 0;
}


int group_select(struct group *g, struct pool_buf *out, int count, int oldest)
{
	int ret = group_admit(g, !g->count, count);
	if (ret)
		return ret;
	int newest = g->newest_first && !oldest;
	const struct pool_slot *s = group_next(g, oldest);
	group_took(g, s->addr, s->len, s->bid, out);
	out->oldest = (uint8_t)!!oldest;
	if (!newest)
		g->head = (g->head + 1) & mask(g);
	g->count--;
	if (newest && !g->count)
		g->vanished = 1;
	return 0;
}

void group_putback(struct group *g, const struct pool_buf *b)
{
	g->in_use--;
	if (g->kind == GROUP_RING_EMU)
		ring_putback(g, b);
	if (g->kind != GROUP_LEGACY)
		return;
	/* cap >= count + in_use held before the decrement, so there is room.
	 * It goes where the next selection takes from. */
	int newest = g->newest_first && !b->oldest;
	if (!newest)
		g->head = (g->head - 1) & mask(g);
	g->slots[newest ? (g->head + g->count) & mask(g) : g->head] = (struct pool_slot){
		.addr = b->addr,
		.len = b->len < POOL_MAX_RW_COUNT ? b->len : POOL_MAX_RW_COUNT,
		.bid = b->bid,
	};
	g->count++;
	g->returned++;
	g->vanished = 0;
}


uint32_t group_available(const struct group *g)
{
	/* A ring's tail as bufsel last read it: the program's memory may be
	 * gone by the time statistics are written. */
	return g->kind == GROUP_RING_EMU || g->watched ? (uint16_t)(g->ring_tail_seen - g->ring_head) : g->count;
}

void group_stats(const struct group *g, struct pool_group_stats *out)
{
	*out = (struct pool_group_stats){
		.provided = g->provided, .removed = g->removed, .selected = g->selected,
		.returned = g->returned, .consumed = g->consumed, .enobufs = g->enobufs,
		.available = group_available(g),
		.in_use = g->in_use, .peak_in_use = g->peak_in_use,
		.enobufs_empty = g->enobufs_empty, .enobufs_capped = g->enobufs_capped,
		.enobufs_injected = g->enobufs_injected,
		.waits = g->waits, .wait_ns = g->wait_ns,
		.used_count = g->used_count, .used_bytes = g->used_bytes,
		.policy = g->policy,
		.held = g->held, .peak_out = g->peak_out,
		.size = group_available(g) + g->in_use + g->held, .peak_size = g->peak_size,
		.buf_len = g->buf_len,
	};
}

void group_hist(const struct group *g, struct pool_group_hist *out)
{
	memcpy(out->used, g->used_hist, sizeof(out->used));
	memcpy(out->in_use, g->in_use_hist, sizeof(out->in_use));
}

static uint64_t hist_sum(const uint64_t *h)
{
	uint64_t n = 0;
	for (unsigned b = 0; b < POOL_HIST_BUCKETS; b++)
		n += h[b];
	return n;
}

int group_check(const struct group *g, uint16_t bgid)
{
	if (g->bgid != bgid)
		return -EUCLEAN;
	if (g->kind != GROUP_LEGACY && g->kind != GROUP_RING && g->kind != GROUP_GONE &&
	    g->kind != GROUP_RING_EMU)
		return -EUCLEAN;
	if ((g->kind == GROUP_RING_EMU && !g->ring.entries) ||
	    (g->ring.entries && g->kind != GROUP_RING_EMU && !(g->kind == GROUP_RING && g->watched)))
		return -EUCLEAN;
	if ((g->watched && g->kind != GROUP_RING) || (g->ended && g->kind != GROUP_GONE))
		return -EUCLEAN;
	if ((g->cap & (g->cap - 1)) || (g->cap && g->cap < GROUP_MIN_CAP) ||
	    g->cap > GROUP_SLOTS_MAX || !g->slots != !g->cap)
		return -EUCLEAN;
	if (g->head >= (g->cap ? g->cap : 1) || g->count > g->cap)
		return -EUCLEAN;
	if (g->peak_in_use < g->in_use)
		return -EUCLEAN;
	if (g->enobufs != g->enobufs_empty + g->enobufs_capped + g->enobufs_injected ||
	    hist_sum(g->in_use_hist) != g->selected || hist_sum(g->used_hist) != g->used_count ||
	    g->used_count > g->consumed || g->in_use_hist[0])
		return -EUCLEAN;
	if (policy_check(g))
		return -EUCLEAN;
	if (g->kind == GROUP_RING_EMU)
		return ring_check(g) ||
		       (uint16_t)(g->provided + g->returned - g->selected) !=
			       (uint16_t)(g->ring_tail_seen - g->ring_head)
			       ? -EUCLEAN : 0;
	if (g->kind != GROUP_LEGACY)
		return g->cap || (g->kind == GROUP_GONE && !g->in_use && !g->ended) ? -EUCLEAN : 0;
	if ((uint64_t)g->count + g->in_use > g->cap)
		return -EUCLEAN;
	if (g->provided + g->returned < g->removed + g->selected ||
	    g->provided + g->returned - g->removed - g->selected != g->count)
		return -EUCLEAN;
	for (uint32_t i = 0; i < g->count; i++)
		if (g->slots[(g->head + i) & mask(g)].len > POOL_MAX_RW_COUNT)
			return -EUCLEAN;
	return 0;
}
