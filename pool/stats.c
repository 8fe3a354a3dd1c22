/*
 * Reading a pool without changing it: one group's counters, a walk over every
 * legacy group, emulated ring and watched kernel ring in bgid order, and pool_check, the pool's invariants (table.h,
 * group.h) as code for tests and debug builds.  pool_check costs a pass over
 * every group and every buffer held.
 */
#include "pool/table.h"

#include <errno.h>

int pool_group_stats(const struct pool *p, uint16_t bgid, struct pool_group_stats *out)
{
	const struct group *g = table_get(p, bgid);
	if (!g || !group_reported(g))
		return -ENOENT;
	group_stats(g, out);
	return 0;
}

int pool_group_hist(const struct pool *p, uint16_t bgid, struct pool_group_hist *out)
{
	const struct group *g = table_get(p, bgid);
	if (!g || !group_reported(g))
		return -ENOENT;
	group_hist(g, out);
	return 0;
}

int pool_for_each_group(const struct pool *p,
			int (*fn)(uint16_t bgid, const struct pool_group_stats *, void *),
			void *arg)
{
	for (uint32_t d = 0; d < TABLE_FAN; d++) {
		const struct table_chunk *c = p->dir[d];
		if (!c)
			continue;
		for (uint32_t i = 0; i < TABLE_FAN; i++) {
			const struct group *g = c->g[i];
			if (!g || !group_reported(g))
				continue;
			struct pool_group_stats s;
			group_stats(g, &s);
			int ret = fn(g->bgid, &s, arg);
			if (ret)
				return ret;
		}
	}
	return 0;
}

int pool_check(const struct pool *p)
{
	uint64_t entries = 0, out = 0;
	for (uint32_t d = 0; d < TABLE_FAN; d++) {
		const struct table_chunk *c = p->dir[d];
		if (!c)
			continue;
		uint32_t used = 0;
		for (uint32_t i = 0; i < TABLE_FAN; i++) {
			const struct group *g = c->g[i];
			if (!g)
				continue;
			if (group_check(g, (uint16_t)(d << TABLE_SHIFT | i)))
				return -EUCLEAN;
			used++;
			out += g->in_use;
		}
		if (!used || used != c->used)
			return -EUCLEAN;
		entries += used;
	}
	if (entries != p->ngroups || out != p->outstanding)
		return -EUCLEAN;
	return 0;
}
