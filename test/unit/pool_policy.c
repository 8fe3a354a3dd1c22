/*
 * pool/'s policies: a cap on the buffers of a group in use, a cap on the
 * length handed out, and deterministic -ENOBUFS injection, each given to a
 * legacy group by the caller's callback when the group is created.  The
 * failure sequence of a seed is pinned, so that a change of generator shows
 * here and not as a run that no longer reproduces.  Every test ends with
 * pool_check.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "pool/pool.h"

static struct pool *P;

static void fresh(void)
{
	cr_assert_eq(pool_create(&P), 0);
}

static void done(void)
{
	cr_assert_eq(pool_check(P), 0);
	pool_destroy(P);
	P = NULL;
}

TestSuite(policy, .init = fresh, .fini = done);

/* The policy every group gets, and how often it was asked for. */
struct fixed {
	struct pool_policy pol;
	int ret;		/* what the callback returns */
	int calls;
	uint16_t last_bgid;
};

static int fixed_policy(uint16_t bgid, struct pool_policy *out, void *arg)
{
	struct fixed *f = arg;
	cr_assert_eq(out->cap, 0, "*out starts zeroed");
	cr_assert_eq(out->seed, 0);
	f->calls++;
	f->last_bgid = bgid;
	*out = f->pol;
	return f->ret;
}

static void set_policy(struct fixed *f)
{
	pool_set_policy(P, fixed_policy, f);
}

static void provide(uint16_t bgid, uint64_t addr, uint32_t len, int32_t n, uint64_t off)
{
	cr_assert_eq(pool_provide(P, &(struct pool_provide){
		.addr = addr, .len = len, .nbufs = n, .off = off, .bgid = bgid }), 0);
	cr_assert_eq(pool_check(P), 0);
}

static int sel(uint16_t bgid, struct pool_buf *b)
{
	int ret = pool_select(P, bgid, b);
	cr_assert_eq(pool_check(P), 0);
	return ret;
}

static struct pool_buf take(uint16_t bgid)
{
	struct pool_buf b;
	cr_assert_eq(sel(bgid, &b), 0, "group %u should give a buffer", bgid);
	return b;
}

static struct pool_group_stats stats(uint16_t bgid)
{
	struct pool_group_stats s;
	cr_assert_eq(pool_group_stats(P, bgid, &s), 0, "group %u should exist", bgid);
	return s;
}

/* Cap */

/* The cap is the group's effective size: a buffer counts against it from
 * its selection until it is put back or the program provides it again, so
 * a delivered buffer the program keeps still counts. */
Test(policy, cap_two_third_selection_fails_until_a_putback_or_a_reprovide)
{
	struct fixed f = { .pol = { .cap = 2 } };
	set_policy(&f);
	provide(1, 0x1000, 64, 8, 0);
	struct pool_buf a = take(1), b = take(1), c;
	cr_assert_eq(sel(1, &c), -ENOBUFS, "a third with cap 2");
	cr_assert_eq(sel(1, &c), -ENOBUFS);
	struct pool_group_stats s = stats(1);
	cr_assert_eq(s.enobufs_capped, 2);
	cr_assert_eq(s.enobufs_empty, 0);
	cr_assert_eq(s.enobufs_injected, 0);
	cr_assert_eq(s.enobufs, 2);
	cr_assert_eq(s.available, 6, "a capped selection leaves the buffers");
	cr_assert_eq(s.selected, 2);
	cr_assert_eq(s.in_use, 2);

	pool_putback(P, &b);
	c = take(1);
	cr_assert_eq(c.bid, b.bid, "the put-back buffer is the head again");
	cr_assert_eq(sel(1, &b), -ENOBUFS);
	pool_consume(P, &a);
	cr_assert_eq(sel(1, &b), -ENOBUFS, "a delivered buffer the program keeps still counts");
	provide(1, a.addr, 64, 1, a.bid);
	a = take(1);
	cr_assert_eq(a.bid, 2);
	cr_assert_eq(sel(1, &b), -ENOBUFS);
	cr_assert_eq(stats(1).enobufs_capped, 5);
	cr_assert_eq(stats(1).peak_in_use, 2);
	pool_consume(P, &a);
	pool_consume(P, &c);
}

Test(policy, empty_is_counted_before_capped)
{
	struct fixed f = { .pol = { .cap = 2 } };
	set_policy(&f);
	provide(1, 0x1000, 64, 2, 0);
	struct pool_buf a = take(1), b = take(1), c;
	cr_assert_eq(sel(1, &c), -ENOBUFS);
	cr_assert_eq(stats(1).enobufs_empty, 1, "at the cap and empty: the kernel's reason");
	cr_assert_eq(stats(1).enobufs_capped, 0);
	pool_consume(P, &a);
	pool_consume(P, &b);
}

Test(policy, cap_zero_is_no_cap)
{
	struct fixed f = { .pol = { .cap = 0, .max_len = 0 } };
	set_policy(&f);
	provide(1, 0x1000, 8, 300, 0);
	struct pool_buf b[300];
	for (int i = 0; i < 300; i++)
		b[i] = take(1);
	cr_assert_eq(stats(1).peak_in_use, 300);
	for (int i = 0; i < 300; i++)
		pool_consume(P, &b[i]);
}

/* in_use belongs to the id: buffers still out of an earlier group of the id
 * count against the new group's cap. */
Test(policy, buffers_out_from_an_earlier_life_count_against_the_cap)
{
	provide(1, 0x1000, 8, 2, 0);
	struct pool_buf old = take(1);
	cr_assert_eq(pool_remove(P, &(struct pool_remove){ .nbufs = 1, .bgid = 1 }), 1);
	cr_assert_eq(pool_ring_register(P, 1), 0);
	pool_ring_unregister(P, 1);
	struct fixed f = { .pol = { .cap = 1 } };
	set_policy(&f);
	provide(1, 0x8000, 8, 2, 0);
	cr_assert_eq(f.calls, 1);
	struct pool_buf b;
	cr_assert_eq(sel(1, &b), -ENOBUFS);
	cr_assert_eq(stats(1).enobufs_capped, 1);
	pool_consume(P, &old);
	cr_assert_eq(sel(1, &b), -ENOBUFS, "delivered and kept by the program: still counts");
	provide(1, 0x9000, 8, 1, old.bid);
	b = take(1);
	cr_assert_eq(b.addr, 0x8000);
	pool_consume(P, &b);
}

/* max_len */

Test(policy, max_len_clamps_the_length_handed_out)
{
	struct fixed f = { .pol = { .max_len = 64 } };
	set_policy(&f);
	provide(1, 0x1000, 100, 2, 0);
	provide(1, 0x2000, 10, 1, 7);
	provide(1, 0, UINT32_MAX, 1, 9);
	struct pool_buf a = take(1);
	cr_assert_eq(a.len, 64);
	cr_assert_eq(a.addr, 0x1000);
	struct pool_buf b = take(1);
	cr_assert_eq(b.len, 64);
	cr_assert_eq(b.addr, 0x1000 + 100, "addresses step by the provided length");
	struct pool_buf c = take(1);
	cr_assert_eq(c.len, 10, "shorter than max_len: unchanged");
	cr_assert_eq(c.bid, 7);
	struct pool_buf d = take(1);
	cr_assert_eq(d.len, 64, "clamped below MAX_RW_COUNT too");

	pool_putback(P, &a);
	struct pool_buf again = take(1);
	cr_assert_eq(again.len, 64, "a put-back buffer keeps the length it was handed out with");
	cr_assert_eq(again.bid, a.bid);
	pool_consume(P, &again);
	pool_consume(P, &b);
	pool_consume(P, &c);
	pool_consume(P, &d);
}

Test(policy, max_len_zero_or_above_the_length_changes_nothing)
{
	struct fixed f = { .pol = { .max_len = 4096 } };
	set_policy(&f);
	provide(1, 0x1000, 4096, 1, 0);
	provide(1, 0x9000, 4095, 1, 1);
	cr_assert_eq(take(1).len, 4096);
	cr_assert_eq(take(1).len, 4095);
	pool_set_policy(P, NULL, NULL);
	provide(2, 0, UINT32_MAX, 1, 0);
	cr_assert_eq(take(2).len, POOL_MAX_RW_COUNT);
}

/* The callback */

Test(policy, callback_runs_once_per_group_creation_with_its_bgid_and_arg)
{
	struct fixed f = { .pol = { .cap = 3 } };
	set_policy(&f);
	cr_assert_eq(pool_provide(P, &(struct pool_provide){ .len = 0, .nbufs = 1, .bgid = 4 }),
		     -EINVAL);
	cr_assert_eq(f.calls, 0, "a provide failing prep creates nothing");
	provide(4, 0x1000, 8, 2, 0);
	cr_assert_eq(f.calls, 1);
	cr_assert_eq(f.last_bgid, 4);
	provide(4, 0x2000, 8, 2, 2);
	struct pool_buf b = take(4);
	pool_putback(P, &b);
	cr_assert_eq(pool_remove(P, &(struct pool_remove){ .nbufs = 4, .bgid = 4 }), 4);
	pool_note_wait(P, 4, 1);
	cr_assert_eq(f.calls, 1, "the group exists: no lookup again");
	cr_assert_eq(pool_ring_register(P, 9), 0);
	cr_assert_eq(f.calls, 1, "a ring is the kernel's");
	provide(65535, 0x1000, 8, 1, 0);
	cr_assert_eq(f.calls, 2);
	cr_assert_eq(f.last_bgid, 65535);
	cr_assert_eq(stats(65535).policy.cap, 3);

	/* A ring cycle ends the legacy group; the next provide makes a new
	 * one, which asks again. */
	cr_assert_eq(pool_ring_register(P, 4), 0);
	cr_assert_eq(stats(65535).policy.cap, 3);
	pool_ring_unregister(P, 4);
	f.pol.cap = 5;
	provide(4, 0x1000, 8, 1, 0);
	cr_assert_eq(f.calls, 3);
	cr_assert_eq(stats(4).policy.cap, 5);

	/* The undo of the provide that created a group takes the group away:
	 * the next one asks again. */
	provide(7, 0x1000, 8, 1, 0);
	pool_provide_undo(P, 7, 1, 1);
	provide(7, 0x1000, 8, 1, 0);
	cr_assert_eq(f.calls, 5);
}

Test(policy, groups_keep_the_policy_they_were_created_with)
{
	struct fixed f = { .pol = { .cap = 1 } };
	set_policy(&f);
	provide(1, 0x1000, 8, 4, 0);
	pool_set_policy(P, NULL, NULL);
	provide(2, 0x1000, 8, 4, 0);
	struct fixed g = { .pol = { .cap = 2 } };
	set_policy(&g);
	provide(3, 0x1000, 8, 4, 0);
	cr_assert_eq(stats(1).policy.cap, 1);
	cr_assert_eq(stats(2).policy.cap, 0, "no callback, no policy");
	cr_assert_eq(stats(3).policy.cap, 2);
	struct pool_buf b[4], x;
	b[0] = take(1);
	cr_assert_eq(sel(1, &x), -ENOBUFS, "group 1 still has cap 1");
	cr_assert_eq(f.calls, 1);
	cr_assert_eq(g.calls, 1);
	pool_consume(P, &b[0]);
}

Test(policy, callback_failing_means_no_policy)
{
	struct fixed f = { .pol = { .cap = 1, .max_len = 1, .enobufs_rate = 1, .seed = 9 }, .ret = -1 };
	set_policy(&f);
	provide(1, 0x1000, 8, 4, 0);
	struct pool_group_stats s = stats(1);
	cr_assert_eq(s.policy.cap, 0);
	cr_assert_eq(s.policy.max_len, 0);
	cr_assert_eq(s.policy.enobufs_rate, 0);
	cr_assert_eq(s.policy.seed, 0);
	struct pool_buf a = take(1), b = take(1);
	cr_assert_eq(a.len, 8);
	pool_consume(P, &a);
	pool_consume(P, &b);
}

/* Each bgid its own policy: the callback decides from the id. */
static int per_bgid(uint16_t bgid, struct pool_policy *out, void *arg)
{
	(void)arg;
	out->cap = bgid;
	out->max_len = bgid * 10u;
	return bgid == 3;	/* group 3: none */
}

Test(policy, each_bgid_gets_its_own_policy)
{
	pool_set_policy(P, per_bgid, NULL);
	for (uint16_t g = 1; g <= 4; g++)
		provide(g, 0x1000, 1000, 8, 0);
	cr_assert_eq(stats(1).policy.cap, 1);
	cr_assert_eq(stats(2).policy.cap, 2);
	cr_assert_eq(stats(2).policy.max_len, 20);
	cr_assert_eq(stats(3).policy.cap, 0);
	cr_assert_eq(stats(4).policy.max_len, 40);
	struct pool_buf b = take(2), c = take(2), d;
	cr_assert_eq(b.len, 20);
	cr_assert_eq(sel(2, &d), -ENOBUFS);
	cr_assert_eq(take(3).len, 1000);
	pool_consume(P, &b);
	pool_consume(P, &c);
}

Test(policy, rate_outside_zero_to_one_is_clamped_nan_is_zero)
{
	const double given[] = { NAN, -0.5, -INFINITY, 7, INFINITY, 0.25 };
	const double want[] = { 0, 0, 0, 1, 1, 0.25 };
	for (uint16_t i = 0; i < 6; i++) {
		struct fixed f = { .pol = { .enobufs_rate = given[i] } };
		set_policy(&f);
		provide(i, 0x1000, 8, 1, 0);
		cr_assert_eq(stats(i).policy.enobufs_rate, want[i], "rate %g", given[i]);
	}
}

/* Injection */

/* n selections on bgid, each put back at once: bit i set if the i-th failed. */
static void outcomes(uint16_t bgid, uint32_t n, uint8_t *failed)
{
	for (uint32_t i = 0; i < n; i++) {
		struct pool_buf b;
		int ret = pool_select(P, bgid, &b);
		cr_assert(ret == 0 || ret == -ENOBUFS);
		failed[i] = ret != 0;
		if (!ret)
			pool_putback(P, &b);
	}
	cr_assert_eq(pool_check(P), 0);
}

static uint32_t count(const uint8_t *v, uint32_t n)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; i++)
		k += v[i];
	return k;
}

/* A fresh pool with one policy for all, group bgid provided, n outcomes. */
static void run(struct pool_policy pol, uint16_t bgid, uint32_t n, uint8_t *failed)
{
	struct pool *saved = P;
	struct fixed f = { .pol = pol };
	cr_assert_eq(pool_create(&P), 0);
	set_policy(&f);
	provide(bgid, 0x1000, 64, 4, 0);
	outcomes(bgid, n, failed);
	pool_destroy(P);
	P = saved;
}

#define N 2000

Test(policy, rate_zero_never_fails)
{
	static uint8_t v[N];
	run((struct pool_policy){ .enobufs_rate = 0, .seed = 1 }, 1, N, v);
	cr_assert_eq(count(v, N), 0);
}

Test(policy, rate_one_fails_every_selection_and_keeps_the_buffers)
{
	struct fixed f = { .pol = { .enobufs_rate = 1, .seed = 1 } };
	set_policy(&f);
	provide(1, 0x1000, 64, 4, 0);
	static uint8_t v[N];
	outcomes(1, N, v);
	cr_assert_eq(count(v, N), N);
	struct pool_group_stats s = stats(1);
	cr_assert_eq(s.enobufs_injected, N);
	cr_assert_eq(s.enobufs, N);
	cr_assert_eq(s.enobufs_empty, 0);
	cr_assert_eq(s.selected, 0);
	cr_assert_eq(s.available, 4);
	cr_assert_eq(pool_remove(P, &(struct pool_remove){ .nbufs = 4, .bgid = 1 }), 4);
	struct pool_buf b;
	cr_assert_eq(sel(1, &b), -ENOBUFS);
	cr_assert_eq(stats(1).enobufs_empty, 1, "an empty group is empty, not injected");
}

Test(policy, rate_half_same_seed_same_sequence_different_seed_or_bgid_differs)
{
	static uint8_t a[N], b[N], c[N], d[N];
	struct pool_policy pol = { .enobufs_rate = 0.5, .seed = 0x5eed };
	run(pol, 1, N, a);
	run(pol, 1, N, b);
	cr_assert_eq(memcmp(a, b, N), 0, "same seed, same failures");
	uint32_t k = count(a, N);
	cr_assert(k > N * 45 / 100 && k < N * 55 / 100, "%u of %u failed", k, N);
	pol.seed++;
	run(pol, 1, N, c);
	cr_assert_neq(memcmp(a, c, N), 0, "another seed, other failures");
	pol.seed--;
	run(pol, 2, N, d);
	cr_assert_neq(memcmp(a, d, N), 0, "another group, other failures");
}

Test(policy, low_rates_fail_about_that_often)
{
	static uint8_t v[20000];
	run((struct pool_policy){ .enobufs_rate = 0.01, .seed = 7 }, 1, 20000, v);
	uint32_t k = count(v, 20000);
	cr_assert(k >= 140 && k <= 260, "%u of 20000 at 1%%", k);
}

/* Pinned: splitmix64 seeded with seed ^ mix64(0x62756673656c0000 | bgid),
 * one draw per selection that has a buffer and is under the cap, failing
 * when the top 53 bits as a fraction are below the rate.  An independent
 * model of that description gives the same bits. */
Test(policy, seed_42_gives_the_pinned_sequence)
{
	uint8_t v[64];
	run((struct pool_policy){ .enobufs_rate = 0.5, .seed = 42 }, 1, 64, v);
	uint64_t bits = 0;
	for (int i = 0; i < 64; i++)
		bits |= (uint64_t)v[i] << i;
	cr_assert_eq(bits, 0x4f147b8a795faf21ull, "got %#llx", (unsigned long long)bits);
}

Test(policy, capped_and_empty_attempts_do_not_shift_the_sequence)
{
	static uint8_t plain[N];
	struct pool_policy pol = { .enobufs_rate = 0.5, .seed = 99 };
	run(pol, 1, N, plain);

	/* The same selections, each success followed by a capped attempt and,
	 * every third time, an attempt on the emptied group. */
	pol.cap = 1;
	struct fixed f = { .pol = pol };
	set_policy(&f);
	provide(1, 0x1000, 64, 1, 0);
	for (uint32_t i = 0; i < N; i++) {
		struct pool_buf b, x;
		int ret = pool_select(P, 1, &b);
		cr_assert_eq(ret != 0, plain[i], "selection %u", i);
		if (ret)
			continue;
		cr_assert_eq(pool_select(P, 1, &x), -ENOBUFS);
		pool_putback(P, &b);
	}
	struct pool_group_stats s = stats(1);
	cr_assert_eq(s.enobufs_injected, count(plain, N));
	cr_assert_eq(s.enobufs_capped, 0, "one buffer, so the group was empty first");
	cr_assert_eq(s.enobufs_empty, N - count(plain, N));

	/* capped for real: two buffers, cap 1 */
	struct fixed g = { .pol = pol };
	set_policy(&g);
	provide(2, 0x1000, 64, 2, 0);
	static uint8_t plain2[N];
	struct pool *saved = P;
	run((struct pool_policy){ .enobufs_rate = 0.5, .seed = 99 }, 2, N, plain2);
	P = saved;
	for (uint32_t i = 0; i < N; i++) {
		struct pool_buf b, x;
		int ret = pool_select(P, 2, &b);
		cr_assert_eq(ret != 0, plain2[i], "selection %u", i);
		if (ret)
			continue;
		cr_assert_eq(pool_select(P, 2, &x), -ENOBUFS);
		pool_putback(P, &b);
	}
	cr_assert_eq(stats(2).enobufs_capped, N - count(plain2, N));
}

Test(policy, other_groups_traffic_does_not_shift_the_sequence)
{
	static uint8_t alone[N];
	struct pool_policy pol = { .enobufs_rate = 0.3, .seed = 3 };
	run(pol, 1, N, alone);
	struct fixed f = { .pol = pol };
	set_policy(&f);
	provide(1, 0x1000, 64, 4, 0);
	provide(2, 0x1000, 64, 4, 0);
	for (uint32_t i = 0; i < N; i++) {
		uint8_t other[3];
		outcomes(2, i % 3, other);
		uint8_t mine;
		outcomes(1, 1, &mine);
		cr_assert_eq(mine, alone[i], "selection %u", i);
	}
}

Test(policy, an_injected_failure_leaves_the_head_where_it_was)
{
	struct fixed f = { .pol = { .enobufs_rate = 0.5, .seed = 42 } };
	set_policy(&f);
	provide(1, 0x1000, 64, 64, 0);
	/* The pinned sequence starts 1 (fail), 0, 0, 0, 0, 1: */
	struct pool_buf b, held[4];
	cr_assert_eq(sel(1, &b), -ENOBUFS);
	for (int i = 0; i < 4; i++) {
		held[i] = take(1);
		cr_assert_eq(held[i].bid, i, "failures took nothing");
	}
	cr_assert_eq(sel(1, &b), -ENOBUFS);
	cr_assert_eq(take(1).bid, 4);
	struct pool_group_stats s = stats(1);
	cr_assert_eq(s.enobufs_injected, 2);
	cr_assert_eq(s.available, 59);
	for (int i = 0; i < 4; i++)
		pool_consume(P, &held[i]);
}

Test(policy, a_new_group_on_the_id_starts_the_sequence_again)
{
	struct fixed f = { .pol = { .enobufs_rate = 0.5, .seed = 42 } };
	set_policy(&f);
	uint8_t first[64], second[64];
	provide(1, 0x1000, 64, 4, 0);
	outcomes(1, 64, first);
	cr_assert_eq(pool_remove(P, &(struct pool_remove){ .nbufs = 4, .bgid = 1 }), 4);
	cr_assert_eq(pool_ring_register(P, 1), 0);
	pool_ring_unregister(P, 1);
	provide(1, 0x1000, 64, 4, 0);
	outcomes(1, 64, second);
	cr_assert_eq(memcmp(first, second, 64), 0);
	cr_assert_eq(f.calls, 2);
}
