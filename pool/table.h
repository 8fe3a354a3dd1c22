/*
 * struct pool and its id table, internal to pool/.  Group ids are 16 bits, so
 * the table has two levels of 256: a directory inside the pool and chunks of
 * 256 group pointers made on first use and freed when they empty.  A lookup is
 * two loads with no hashing, an empty pool costs 2 KiB, and 65536 groups cost
 * 512 KiB of chunks besides the groups themselves; iteration runs in bgid
 * order, which makes pool_for_each_group's order deterministic.
 *
 * Invariants (pool_check): every non-NULL entry is a group whose bgid is its
 * index; chunk->used counts its non-NULL entries and is never 0; ngroups is
 * the number of entries; outstanding is the sum of every entry's in_use.
 */
#ifndef BUFSEL_POOL_TABLE_H
#define BUFSEL_POOL_TABLE_H

#include <stdint.h>

#include "pool/alloc.h"
#include "pool/group.h"

#define TABLE_SHIFT 8
#define TABLE_FAN (1u << TABLE_SHIFT)

struct table_chunk {
	uint32_t used;
	struct group *g[TABLE_FAN];
};

struct pool {
	struct pool_allocator a;
	uint32_t ngroups;	/* entries of every kind */
	uint64_t outstanding;	/* selected and not yet put back or consumed */
	uint64_t peak_outstanding;	/* the most outstanding at once, over all groups */
	uint64_t strays;	/* see pool_strays() */
	/* pool_set_policy: looked up when a legacy group is created. */
	int (*policy_for)(uint16_t bgid, struct pool_policy *out, void *arg);
	void *policy_arg;
	unsigned legacy_rules;	/* POOL_NEWEST_FIRST, or 0: 6.18's */
	struct table_chunk *dir[TABLE_FAN];
};

static inline struct group *table_get(const struct pool *p, uint16_t bgid)
{
	const struct table_chunk *c = p->dir[bgid >> TABLE_SHIFT];
	return c ? c->g[bgid & (TABLE_FAN - 1)] : NULL;
}

#endif
