/*
 * The deque of one legacy group and the operations of kbuf.c on it: provide
 * appends at the tail in bid order, selection and removal take the head, a
 * put-back goes to the head.  The deque is one array used as a ring, so every
 * one of those is O(1) per buffer and a group costs memory in proportion to
 * the buffers it holds plus those out of it; the array is sized for both (see
 * group.h), and shrinks to twice what it needs once three quarters of it are
 * unused, so that a group that once held 65535 buffers does not keep 1 MiB
 * for ever and one that hovers near a size does not reallocate back and forth.
 */
#include "pool/group.h"

#include <errno.h>
#include <string.h>

/* Small enough that 65536 one-buffer groups stay cheap; below it, doubling
 * would reallocate at each of a group's first few buffers. */
#define GROUP_MIN_CAP 4u

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t c = GROUP_MIN_CAP;
	while (c < n)
		c <<= 1;
	return c;
}

static uint32_t mask(const struct group *g)
{
	return g->cap - 1;
}

/* Moves the deque into an array of newcap slots (0 frees it), oldest first. */
static int resize(struct group *g, uint32_t newcap, const struct pool_allocator *a)
{
	struct pool_slot *ns = NULL;
	if (newcap) {
		ns = pool_alloc(a, (size_t)newcap * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		uint32_t first = g->cap ? g->cap - g->head : 0;
		if (first > g->count)
			first = g->count;
		if (first)
			memcpy(ns, g->slots + g->head, (size_t)first * sizeof(*ns));
		if (g->count > first)
			memcpy(ns + first, g->slots, (size_t)(g->count - first) * sizeof(*ns));
	}
	pool_free(a, g->slots, (size_t)g->cap * sizeof(*g->slots));
	g->slots = ns;
	g->cap = newcap;
	g->head = 0;
	return 0;
}

static int reserve(struct group *g, uint64_t need, const struct pool_allocator *a)
{
	if (need > GROUP_SLOTS_MAX)
		return -ENOMEM;
	if (need <= g->cap)
		return 0;
	return resize(g, pow2_at_least((uint32_t)need), a);
}

/* Shrinking is an economy, not a duty: a failed allocation keeps the larger
 * array, which is still correct. */
static void trim(struct group *g, const struct pool_allocator *a)
{
	uint32_t need = g->count + g->in_use;
	if (!g->cap || need > g->cap / 4)
		return;
	uint32_t newcap = need ? pow2_at_least(2 * need) : 0;
	if (newcap < g->cap)
		(void)resize(g, newcap, a);
}

#define HELD_WORDS (POOL_MAX_BIDS / 64)

static void held_free(struct group *g, const struct pool_allocator *a)
{
	pool_free(a, g->held_bits, HELD_WORDS * sizeof(uint64_t));
	g->held_bits = NULL;
	g->held = 0;
}

/* A capped delivery: the program now holds the buffer.  Without memory for
 * the bitmap the buffer is simply not counted (the cap then binds less). */
static void held_mark(struct group *g, uint16_t bid, const struct pool_allocator *a)
{
	if (!g->held_bits) {
		g->held_bits = pool_alloc(a, HELD_WORDS * sizeof(uint64_t));
		if (!g->held_bits)
			return;
		memset(g->held_bits, 0, HELD_WORDS * sizeof(uint64_t));
	}
	uint64_t bit = 1ULL << (bid % 64);
	if (!(g->held_bits[bid / 64] & bit)) {
		g->held_bits[bid / 64] |= bit;
		g->held++;
	}
}

/* Provided again: the program gave the buffer back. */
void held_clear(struct group *g, uint16_t bid)
{
	uint64_t bit = 1ULL << (bid % 64);
	if (g->held_bits && (g->held_bits[bid / 64] & bit)) {
		g->held_bits[bid / 64] &= ~bit;
		g->held--;
	}
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
	int ret = reserve(g, g->in_use, a);
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
	int ret = reserve(g, (uint64_t)g->count + g->in_use + k, a);
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
	trim(g, a);
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
	trim(g, a);
	return k;
}

int group_unremove(struct group *g, const struct pool_slot *kept, uint32_t k, const struct pool_allocator *a)
{
	/* reserve may move the deque: the head is read after it. */
	int ret = reserve(g, (uint64_t)g->count + g->in_use + k, a);
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

static int refuse(struct group *g, uint64_t *reason, int count)
{
	if (count) {
		(*reason)++;
		g->enobufs++;
	}
	return -ENOBUFS;
}

int group_admit(struct group *g, int empty, int count)
{
	/* The kernel's own reason first; the policy only narrows what is left. */
	if (empty)
		return refuse(g, &g->enobufs_empty, count);
	if (g->policy.cap && (uint64_t)g->in_use + g->held >= g->policy.cap)
		return refuse(g, &g->enobufs_capped, count);
	if (policy_inject(g))
		return refuse(g, &g->enobufs_injected, count);
	return 0;
}

void group_took(struct group *g, uint64_t addr, uint32_t len, uint16_t bid, struct pool_buf *out)
{
	if (g->policy.max_len && len > g->policy.max_len)
		len = g->policy.max_len;
	*out = (struct pool_buf){ .addr = addr, .len = len, .bid = bid, .bgid = g->bgid };
	g->selected++;
	if (++g->in_use > g->peak_in_use)
		g->peak_in_use = g->in_use;
	if (g->in_use + g->held > g->peak_out)
		g->peak_out = g->in_use + g->held;
	g->in_use_hist[pool_hist_bucket(g->in_use)]++;
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

void group_delivered(struct group *g, int64_t used)
{
	g->in_use--;
	g->consumed++;
	if (used >= 0) {
		g->used_count++;
		g->used_bytes += (uint64_t)used;
		g->used_hist[pool_hist_bucket((uint32_t)used)]++;
	}
}

void group_consume(struct group *g, uint16_t bid, int64_t used, const struct pool_allocator *a)
{
	if (!group_reported(g)) {
		g->in_use--;
		return;
	}
	group_delivered(g, used);
	if (g->policy.cap || g->policy.track_held)
		held_mark(g, bid, a);
	trim(g, a);
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
