/*
 * The public face of pool/: a pool's life, its id table (table.h), and the
 * operations that find the group for an id and decide, as kbuf.c does, what
 * happens when the id holds no group, a legacy group or a ring-mapped one.
 * The deque work itself is group.c's.
 *
 * Entry lifetime: an id gets an entry on its first provide or ring
 * registration.  The entry stays while it is a legacy group (even empty: 6.18
 * keeps emptied groups until the ring dies) or a ring; after a ring
 * unregistration, or the undo of the provide that made it, it stays as
 * GROUP_GONE only while buffers selected from an earlier group of the id are
 * out, because their put-back or delivery still has to be accounted to the
 * id, or, after a ring bufsel kept or watched, with that ring's statistics
 * (ended) until the id starts another life.
 */
#include "pool/table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pool/account.h"

static void *libc_alloc(void *ctx, size_t size)
{
	(void)ctx;
	return malloc(size);
}

static void libc_free(void *ctx, void *ptr, size_t size)
{
	(void)ctx;
	(void)size;
	free(ptr);
}

static const struct pool_allocator libc_allocator = {
	.alloc = libc_alloc,
	.free = libc_free,
};

int pool_create_with(struct pool **out, const struct pool_allocator *a)
{
	if (!a)
		a = &libc_allocator;
	struct pool *p = pool_alloc(a, sizeof(*p));
	if (!p)
		return -ENOMEM;
	memset(p, 0, sizeof(*p));
	p->a = *a;
	*out = p;
	return 0;
}

int pool_create(struct pool **out)
{
	return pool_create_with(out, NULL);
}

void pool_destroy(struct pool *p)
{
	if (!p)
		return;
	struct pool_allocator a = p->a;
	for (uint32_t d = 0; d < TABLE_FAN; d++) {
		struct table_chunk *c = p->dir[d];
		if (!c)
			continue;
		for (uint32_t i = 0; i < TABLE_FAN; i++) {
			if (!c->g[i])
				continue;
			group_release(c->g[i], &a);
			pool_free(&a, c->g[i], sizeof(*c->g[i]));
		}
		pool_free(&a, c, sizeof(*c));
	}
	pool_free(&a, p, sizeof(*p));
}

/* A new entry of kind k for an id that has none: the group, or NULL when
 * memory ran out (and then nothing changed). */
static struct group *entry_new(struct pool *p, uint16_t bgid, enum group_kind k)
{
	struct table_chunk **cp = &p->dir[bgid >> TABLE_SHIFT];
	struct table_chunk *c = *cp;
	if (!c) {
		c = pool_alloc(&p->a, sizeof(*c));
		if (!c)
			return NULL;
		memset(c, 0, sizeof(*c));
	}
	struct group *g = pool_alloc(&p->a, sizeof(*g));
	if (!g) {
		if (c != *cp)
			pool_free(&p->a, c, sizeof(*c));
		return NULL;
	}
	*g = (struct group){ .bgid = bgid };
	group_begin(g, k);
	*cp = c;
	c->g[bgid & (TABLE_FAN - 1)] = g;
	c->used++;
	p->ngroups++;
	return g;
}

static void entry_free(struct pool *p, struct group *g)
{
	struct table_chunk **cp = &p->dir[g->bgid >> TABLE_SHIFT];
	(*cp)->g[g->bgid & (TABLE_FAN - 1)] = NULL;
	group_release(g, &p->a);
	pool_free(&p->a, g, sizeof(*g));
	p->ngroups--;
	if (!--(*cp)->used) {
		pool_free(&p->a, *cp, sizeof(**cp));
		*cp = NULL;
	}
}

/* A legacy group's life has begun: the caller's policy for it, if any. */
static void policy_lookup(struct pool *p, struct group *g)
{
	struct pool_policy pol = { 0 };
	if (!p->policy_for || p->policy_for(g->bgid, &pol, p->policy_arg))
		pol = (struct pool_policy){ 0 };
	policy_apply(g, &pol);
}

void pool_set_legacy_rules(struct pool *p, unsigned rules)
{
	p->legacy_rules = rules;
}

int pool_provide(struct pool *p, const struct pool_provide *r)
{
	int ret = pool_provide_prep(r, p->legacy_rules);
	if (ret)
		return ret;
	struct group *g = table_get(p, r->bgid);
	if (!g) {
		g = entry_new(p, r->bgid, GROUP_LEGACY);
		if (!g)
			return -ENOMEM;
		policy_lookup(p, g);
	} else if (group_is_ring(g)) {
		return -EINVAL;
	} else if (g->kind == GROUP_GONE) {
		ret = group_begin_legacy(g, &p->a);
		if (ret)
			return ret;
		policy_lookup(p, g);
	}
	g->newest_first = !!(p->legacy_rules & POOL_NEWEST_FIRST);
	return group_add(g, r, &p->a);
}

void pool_provide_undo(struct pool *p, uint16_t bgid, uint32_t added, int created)
{
	struct group *g = table_get(p, bgid);
	if (!g || g->kind != GROUP_LEGACY)
		return;
	group_unadd(g, added, &p->a);
	if (!created || g->count)
		return;
	/* The id goes back to what it was: nothing, or buffers still out of an
	 * earlier group. */
	if (g->in_use) {
		group_release(g, &p->a);
		group_begin(g, GROUP_GONE);
	} else {
		entry_free(p, g);
	}
}

/* kept: NULL, or where to keep what the removal took. */
static int remove_bufs(struct pool *p, const struct pool_remove *r, struct pool_kept *kept)
{
	int ret = pool_remove_prep(r, p->legacy_rules);
	if (ret)
		return ret;
	struct group *g = table_get(p, r->bgid);
	if (!g || g->kind == GROUP_GONE || (g->kind == GROUP_LEGACY && g->vanished))
		return -ENOENT;
	if (group_is_ring(g))
		return -EINVAL;
	uint32_t k = (uint32_t)r->nbufs < g->count ? (uint32_t)r->nbufs : g->count;
	if (kept && k && (kept->slots = pool_alloc(&p->a, (size_t)k * sizeof(struct pool_slot))))
		kept->n = k;
	return (int)group_remove(g, (uint32_t)r->nbufs, kept ? kept->slots : NULL, &p->a);
}

int pool_remove(struct pool *p, const struct pool_remove *r)
{
	return remove_bufs(p, r, NULL);
}

int pool_remove_kept(struct pool *p, const struct pool_remove *r, struct pool_kept *kept)
{
	*kept = (struct pool_kept){ .bgid = r->bgid };
	return remove_bufs(p, r, kept);
}

void pool_kept_free(struct pool *p, struct pool_kept *kept)
{
	if (kept->slots)
		pool_free(&p->a, kept->slots, (size_t)kept->n * sizeof(struct pool_slot));
	*kept = (struct pool_kept){ 0 };
}

void pool_remove_undo(struct pool *p, struct pool_kept *kept)
{
	struct group *g = table_get(p, kept->bgid);
	if (kept->slots && g && g->kind == GROUP_LEGACY)
		(void)group_unremove(g, kept->slots, kept->n, &p->a);
	pool_kept_free(p, kept);
}

int pool_select_how(struct pool *p, uint16_t bgid, struct pool_buf *out, unsigned how)
{
	struct group *g = table_get(p, bgid);
	if (!g || !group_selects(g))
		return -ENOBUFS;
	int count = !(how & POOL_SEL_AGAIN);
	int ret = g->kind == GROUP_RING_EMU ? ring_select(g, out, count)
					    : group_select(g, out, count, !!(how & POOL_SEL_OLDEST));
	if (!ret)
		if (++p->outstanding > p->peak_outstanding)
			p->peak_outstanding = p->outstanding;
	return ret;
}

int pool_select(struct pool *p, uint16_t bgid, struct pool_buf *out)
{
	return pool_select_how(p, bgid, out, 0);
}

int pool_select_bundle(struct pool *p, uint16_t bgid, struct pool_bundle *b, struct pool_buf *out)
{
	struct group *g = table_get(p, bgid);
	if (!g || g->kind != GROUP_RING_EMU)
		return -ENOBUFS;
	int n = ring_bundle(g, b, out);
	if (n > 0) {
		p->outstanding += (uint32_t)n;
		if (p->outstanding > p->peak_outstanding)
			p->peak_outstanding = p->outstanding;
	}
	return n;
}

int pool_ring_commit(struct pool *p, const struct pool_buf *bufs, uint16_t n, uint32_t used)
{
	struct group *g = n ? table_get(p, bufs[0].bgid) : NULL;
	if (!g || g->kind != GROUP_RING_EMU || g->in_use < n) {
		p->strays += n;
		return 0;
	}
	p->outstanding -= n;
	return ring_commit(g, bufs, n, used, &p->a);
}

int pool_ring_incremental(const struct pool *p, uint16_t bgid)
{
	const struct group *g = table_get(p, bgid);
	return g && g->kind == GROUP_RING_EMU && g->ring.incremental;
}

uint32_t pool_available(const struct pool *p, uint16_t bgid)
{
	const struct group *g = table_get(p, bgid);
	if (g && g->kind == GROUP_RING_EMU)
		return ring_available(g);
	return g && g->kind == GROUP_LEGACY ? g->count : 0;
}

int pool_has_group(const struct pool *p, uint16_t bgid)
{
	/* A ring's ended life kept for its statistics is no group. */
	const struct group *g = table_get(p, bgid);
	return g && !(g->ended && !g->in_use);
}

int pool_head(const struct pool *p, uint16_t bgid, struct pool_buf *out)
{
	return pool_head_how(p, bgid, out, 0);
}

int pool_head_how(const struct pool *p, uint16_t bgid, struct pool_buf *out, unsigned how)
{
	const struct group *g = table_get(p, bgid);
	if (g && g->kind == GROUP_RING_EMU)
		return ring_peek(g, out);
	if (!g || g->kind != GROUP_LEGACY || !g->count)
		return -ENOBUFS;
	const struct pool_slot *s = group_next(g, !!(how & POOL_SEL_OLDEST));
	*out = (struct pool_buf){ .addr = s->addr, .len = s->len, .bid = s->bid, .bgid = g->bgid };
	return 0;
}

void pool_putback(struct pool *p, const struct pool_buf *b)
{
	struct group *g = table_get(p, b->bgid);
	if (!g || !g->in_use) {
		p->strays++;
		return;
	}
	group_putback(g, b);
	p->outstanding--;
	if (g->kind == GROUP_GONE && !g->in_use && !g->ended)
		entry_free(p, g);
}

static void consume(struct pool *p, const struct pool_buf *b, int64_t used)
{
	struct group *g = table_get(p, b->bgid);
	if (!g || !g->in_use) {
		p->strays++;
		return;
	}
	group_consume(g, b->bid, used, &p->a);
	p->outstanding--;
	if (g->kind == GROUP_GONE && !g->in_use && !g->ended)
		entry_free(p, g);
}

void pool_consume(struct pool *p, const struct pool_buf *b)
{
	consume(p, b, -1);
}

void pool_consume_bytes(struct pool *p, const struct pool_buf *b, uint32_t used)
{
	consume(p, b, used);
}

void pool_note_wait(struct pool *p, uint16_t bgid, uint64_t ns)
{
	struct group *g = table_get(p, bgid);
	if (!g || !group_selects(g))
		return;
	g->waits++;
	g->wait_ns += ns;
}

uint64_t pool_strays(const struct pool *p)
{
	return p->strays;
}

/* The id takes a ring of kind k (GROUP_RING or GROUP_RING_EMU): the group,
 * or NULL with *err. */
static struct group *ring_take(struct pool *p, uint16_t bgid, enum group_kind k, int *err)
{
	struct group *g = table_get(p, bgid);
	if (!g) {
		g = entry_new(p, bgid, k);
		*err = g ? 0 : -ENOMEM;
		return g;
	}
	if (group_is_ring(g) || (g->kind == GROUP_LEGACY && g->count)) {
		*err = -EEXIST;
		return NULL;
	}
	/* An emptied legacy group dies here, counters and all; buffers still
	 * out of it will be dropped when they come back. */
	group_release(g, &p->a);
	group_begin(g, k);
	*err = 0;
	return g;
}

int pool_ring_register(struct pool *p, uint16_t bgid)
{
	int err;
	ring_take(p, bgid, GROUP_RING, &err);
	return err;
}

int pool_ring_emulate(struct pool *p, uint16_t bgid, const struct pool_ring *ring)
{
	int err;
	struct group *g = ring_take(p, bgid, GROUP_RING_EMU, &err);
	if (!g)
		return err;
	g->ring = *ring;
	g->ring_head = g->ring_tail_seen = 0;
	policy_lookup(p, g);
	return 0;
}

void pool_ring_unregister(struct pool *p, uint16_t bgid)
{
	struct group *g = table_get(p, bgid);
	if (!g || !group_is_ring(g))
		return;
	/* Its statistics stay, as a legacy group's do after REMOVE_BUFFERS:
	 * a program that unregisters its rings before it exits still gets
	 * them reported. */
	uint8_t ended = g->kind == GROUP_RING_EMU ? 1 : g->watched ? 2 : 0;
	g->ring = (struct pool_ring){ .nr = ended ? g->ring.nr : 0 };
	g->watched = 0;
	if (ended) {
		g->kind = GROUP_GONE;
		g->ended = ended;
	} else if (g->in_use) {
		group_begin(g, GROUP_GONE);
	} else {
		entry_free(p, g);
	}
}

int pool_is_ring(const struct pool *p, uint16_t bgid)
{
	const struct group *g = table_get(p, bgid);
	return g && g->kind == GROUP_RING;
}

int pool_ring_get(const struct pool *p, uint16_t bgid, struct pool_ring *out, uint16_t *head)
{
	const struct group *g = table_get(p, bgid);
	if (!g || g->kind == GROUP_GONE)
		return -ENOENT;
	if (g->kind != GROUP_RING_EMU)
		return -EINVAL;
	*out = g->ring;
	*head = g->ring_head;
	return 0;
}

enum pool_kind pool_kind(const struct pool *p, uint16_t bgid)
{
	const struct group *g = p ? table_get(p, bgid) : NULL;
	if (!g)
		return POOL_NONE;
	switch (g->kind) {
	case GROUP_LEGACY:
		return POOL_LEGACY;
	case GROUP_RING:
		return POOL_KERNEL_RING;
	case GROUP_RING_EMU:
		return POOL_EMULATED_RING;
	default:
		return POOL_NONE;
	}
}

void pool_for_each_ring(const struct pool *p, void (*fn)(uint16_t bgid, const struct pool_ring *, void *),
			void *arg)
{
	for (uint32_t d = 0; p && d < TABLE_FAN; d++) {
		const struct table_chunk *c = p->dir[d];
		for (uint32_t i = 0; c && i < TABLE_FAN; i++)
			if (c->g[i] && c->g[i]->kind == GROUP_RING_EMU)
				fn(c->g[i]->bgid, &c->g[i]->ring, arg);
	}
}

uint64_t pool_peak_in_use(const struct pool *p)
{
	return p ? p->peak_outstanding : 0;
}
