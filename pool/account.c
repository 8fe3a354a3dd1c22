/*
 * What a selection and a delivery count, the same in a legacy group and in a
 * ring, bufsel's or the kernel's watched one: the policy's admission and its
 * refusals by reason, in_use and its peaks, the bytes used, and the buffers
 * the program holds (delivered and not yet provided again, one bit per bid),
 * which a cap counts as handed out.  Apart from group.c's deque and ring.c's
 * entries because both of those count through it.
 */
#include "pool/account.h"

#include <errno.h>
#include <string.h>

#include "pool/slots.h"

#define HELD_WORDS (POOL_MAX_BIDS / 64)

void held_free(struct group *g, const struct pool_allocator *a)
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
	slots_trim(g, a);
}
