/*
 * What shapes a legacy group beyond the kernel's rules: the caller's policy
 * (a cap on buffers in use, a cap on the length handed out, and -ENOBUFS
 * injected at a given rate), looked up through the caller's callback when a
 * legacy group is created, so that the pool never sees configuration.
 *
 * Injection must be reproducible: a test that failed under a seed fails the
 * same way again.  Each group has its own generator, seeded from (seed, bgid)
 * when the group is created, so what one group draws does not depend on the
 * other groups' traffic, only on its own sequence of selections.  The
 * generator is splitmix64 (a 64-bit counter through a mixing function): one
 * word of state, every state distinct from its neighbours, and good enough
 * statistics for a coin that decides failures.  Seeding mixes the bgid
 * before combining it with the seed, because splitmix64's states for
 * seed + k * gamma would be one sequence shifted by k draws.
 */
#include "pool/table.h"

#include <errno.h>

#define SPLITMIX_GAMMA 0x9e3779b97f4a7c15ull

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t next64(uint64_t *state)
{
	*state += SPLITMIX_GAMMA;
	return mix64(*state);
}

void pool_set_policy(struct pool *p,
		     int (*policy_for)(uint16_t bgid, struct pool_policy *out, void *arg),
		     void *arg)
{
	p->policy_for = policy_for;
	p->policy_arg = policy_for ? arg : NULL;
}

void policy_apply(struct group *g, const struct pool_policy *pol)
{
	g->policy = *pol;
	/* NaN fails both comparisons and becomes 0. */
	if (!(g->policy.enobufs_rate > 0))
		g->policy.enobufs_rate = 0;
	else if (g->policy.enobufs_rate > 1)
		g->policy.enobufs_rate = 1;
	g->rng = mix64(pol->seed ^ mix64(0x62756673656c0000ull | g->bgid));
}

int policy_inject(struct group *g)
{
	if (g->policy.enobufs_rate == 0)
		return 0;
	/* 53 bits make a double in [0, 1) exactly: rate 1 always fails. */
	double u = (double)(next64(&g->rng) >> 11) * 0x1.0p-53;
	return u < g->policy.enobufs_rate;
}

int policy_check(const struct group *g)
{
	const struct pool_policy *pol = &g->policy;
	if (!(pol->enobufs_rate >= 0 && pol->enobufs_rate <= 1))
		return -EUCLEAN;
	if (!group_selects(g) && !g->ended &&
	    (pol->cap || pol->max_len || pol->enobufs_rate != 0 || pol->seed ||
	     (pol->track_held && !g->watched) || g->rng))
		return -EUCLEAN;
	return 0;
}
