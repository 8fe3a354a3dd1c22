/*
 * A ring's legacy buffer pool, made on first use (most rings never select a
 * buffer), in the ring's shared arena, with each group's policy taken from
 * conf/.  Apart from the ring table (ring.c), which tears the pool's ring
 * down but never makes a pool, so that those who select buffers (the
 * rewriter, buffer rings, registration) need this and not the table.
 */
#include "preload/shadow/ring_pool.h"

#include "conf/options.h"
#include "pool/pool.h"
#include "preload/arena.h"
#include "preload/shadow/kernel_ops.h"
#include "preload/shadow/ring.h"
#include "preload/spin.h"
#include "preload/state.h"

/* A group's policy (cap, max_len, fault injection) comes from conf/. */
static int policy_for(uint16_t bgid, struct pool_policy *out, void *arg)
{
	const struct conf_group *g = conf_group_get(&bufsel.conf, bgid);
	(void)arg;
	*out = (struct pool_policy){
		.cap = g->cap,
		.max_len = g->max_len,
		.enobufs_rate = (double)g->enobufs_ppb / CONF_RATE_ONE,
		.seed = g->seed,
		.track_held = bufsel.conf.stats[0] != '\0',
	};
	return 0;
}

/* The pool is made on first use: most rings never select a buffer. */
int ring_pool(struct ring *r)
{
	int err = 0;
	unsigned rules = r->x->pool ? 0 : kernel_legacy_rules();
	spin_lock(&r->x->pool_lock);
	if (!r->x->pool) {
		struct pool_allocator a = arena_pool_allocator(r->arena);
		struct pool *p;
		if (!(err = pool_create_with(&p, &a))) {
			pool_set_policy(p, policy_for, NULL);
			pool_set_legacy_rules(p, rules);
			r->x->pool = p;
		}
	}
	spin_unlock(&r->x->pool_lock);
	return err;
}
