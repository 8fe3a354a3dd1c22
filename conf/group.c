/*
 * The per-group settings: a sorted array of the group ids that have settings
 * of their own, next to their effective settings, and the all-groups entry
 * for every other id.  Filled once at load; read at every buffer selection,
 * so the lookup is a binary search over at most CONF_MAX_GROUPS ids (eight
 * steps) and returns settings with the all-groups keys already filled in.
 */
#include "conf/internal.h"

#include <errno.h>
#include <string.h>

/* The first index whose id is not below bgid. */
static unsigned lower_bound(const struct bufsel_conf *c, uint16_t bgid)
{
	unsigned lo = 0, hi = c->ngroups;
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		if (c->group_id[mid] < bgid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct conf_group *conf_group_get(const struct bufsel_conf *c, uint16_t bgid)
{
	unsigned i = lower_bound(c, bgid);
	return i < c->ngroups && c->group_id[i] == bgid ? &c->group[i] : &c->all;
}

int conf_group_slot(struct bufsel_conf *c, uint16_t bgid)
{
	unsigned i = lower_bound(c, bgid);
	if (i < c->ngroups && c->group_id[i] == bgid)
		return (int)i;
	if (c->ngroups == CONF_MAX_GROUPS)
		return -ENOSPC;
	unsigned tail = c->ngroups - i;
	memmove(&c->group_id[i + 1], &c->group_id[i], tail * sizeof(c->group_id[0]));
	memmove(&c->group[i + 1], &c->group[i], tail * sizeof(c->group[0]));
	memmove(&c->group_from[i + 1], &c->group_from[i], tail * sizeof(c->group_from[0]));
	c->group_id[i] = bgid;
	/* Keys the group never sets are copied from all groups when loading ends. */
	c->group[i] = c->all;
	memset(c->group_from[i], 0, sizeof(c->group_from[i]));
	c->ngroups++;
	return (int)i;
}

void conf_groups_resolve(struct bufsel_conf *c)
{
	for (unsigned i = 0; i < c->ngroups; i++) {
		for (size_t k = 0; k < CONF_GROUP_KEYS; k++) {
			const struct conf_option *o = &conf_options[CONF_GROUP_KEY0 + k];
			if (c->group_from[i][k] == CONF_FROM_DEFAULT)
				memcpy((char *)&c->group[i] + o->offset, (const char *)&c->all + o->offset, o->size);
		}
	}
}
