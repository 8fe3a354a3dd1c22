/*
 * The memory of a legacy group's deque: one array of slots, a power of two,
 * sized for the buffers the group holds plus those out of it (see group.h),
 * and shrunk to twice what it needs once three quarters of it are unused, so
 * that a group that once held 65535 buffers does not keep 1 MiB for ever and
 * one that hovers near a size does not reallocate back and forth.  Apart
 * from group.c's deque so that a delivery (account.c) can shrink it too.
 */
#include "pool/slots.h"

#include <errno.h>
#include <string.h>

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t c = GROUP_MIN_CAP;
	while (c < n)
		c <<= 1;
	return c;
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

int slots_reserve(struct group *g, uint64_t need, const struct pool_allocator *a)
{
	if (need > GROUP_SLOTS_MAX)
		return -ENOMEM;
	if (need <= g->cap)
		return 0;
	return resize(g, pow2_at_least((uint32_t)need), a);
}

/* Shrinking is an economy, not a duty: a failed allocation keeps the larger
 * array, which is still correct. */
void slots_trim(struct group *g, const struct pool_allocator *a)
{
	uint32_t need = g->count + g->in_use;
	if (!g->cap || need > g->cap / 4)
		return;
	uint32_t newcap = need ? pow2_at_least(2 * need) : 0;
	if (newcap < g->cap)
		(void)resize(g, newcap, a);
}
