/*
 * pool/ring.c: buffer rings bufsel keeps.  The program's side is played here
 * by writing entries and moving the tail as liburing does; every test ends
 * with pool_check.  What is checked: selection in ring order from the head,
 * -ENOBUFS on an empty ring, wrap of the 16-bit head and tail, a put-back
 * that moves the head back only while the entry is the last one taken, the
 * id rules shared with the kernel's rings (-EEXIST, PROVIDE and REMOVE
 * -EINVAL, an emptied legacy group replaced), unregistering with buffers
 * out, the counters, a policy's cap on a ring, and a bundle's mapping
 * (io_ring_buffers_peek: room, length, the cut first entry, the left later
 * one, when the ring counts as emptied, the cap).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "pool/pool.h"

static struct pool *P;
static struct pool_ring_entry E[8];
static uint16_t tail;

static void fresh(void)
{
	cr_assert_eq(pool_create(&P), 0);
	memset(E, 0, sizeof(E));
	tail = 0;
}

static void done(void)
{
	cr_assert_eq(pool_check(P), 0);
	pool_destroy(P);
	P = NULL;
}

TestSuite(ring, .init = fresh, .fini = done);

/* The program adds bid at the tail (nr entries) and publishes it. */
static void add(uint32_t nr, uint16_t bid)
{
	E[tail & (nr - 1)] = (struct pool_ring_entry){ .addr = 0x10000u + bid * 0x100u, .len = 64, .bid = bid };
	tail++;
	__atomic_store_n(&E[0].resv, tail, __ATOMIC_RELEASE);
}

static void emulate(uint16_t bgid, uint32_t nr)
{
	struct pool_ring r = { .entries = E, .nr = nr };
	cr_assert_eq(pool_ring_emulate(P, bgid, &r), 0);
}

static uint16_t take(uint16_t bgid)
{
	struct pool_buf b;
	cr_assert_eq(pool_select(P, bgid, &b), 0);
	cr_assert_eq(b.bgid, bgid);
	cr_assert_eq(b.addr, 0x10000u + b.bid * 0x100u);
	cr_assert_eq(b.len, 64);
	return b.bid;
}

Test(ring, selects_in_ring_order_and_wraps)
{
	emulate(1, 4);
	struct pool_buf b;
	cr_assert_eq(pool_select(P, 1, &b), -ENOBUFS);
	for (unsigned round = 0; round < 20000; round++) {
		add(4, (uint16_t)(round % 7));
		cr_assert_eq(pool_available(P, 1), 1);
		cr_assert_eq(take(1), round % 7);
		pool_consume(P, &(struct pool_buf){ .bid = (uint16_t)(round % 7), .bgid = 1 });
	}
	cr_assert_eq(pool_select(P, 1, &b), -ENOBUFS);
	struct pool_ring r;
	uint16_t head;
	cr_assert_eq(pool_ring_get(P, 1, &r, &head), 0);
	cr_assert_eq(head, (uint16_t)20000);
	struct pool_group_stats st;
	cr_assert_eq(pool_group_stats(P, 1, &st), 0);
	cr_assert_eq(st.provided, 20000);
	cr_assert_eq(st.selected, 20000);
	cr_assert_eq(st.enobufs_empty, 2);
	cr_assert_eq(st.available, 0);
}

Test(ring, entries_published_before_registration_count)
{
	add(4, 5);
	add(4, 6);
	emulate(2, 4);
	cr_assert_eq(take(2), 5);
	cr_assert_eq(take(2), 6);
}

Test(ring, putback_moves_the_head_back_only_for_the_last_taken)
{
	emulate(1, 4);
	add(4, 0);
	add(4, 1);
	struct pool_buf a, b;
	cr_assert_eq(pool_select(P, 1, &a), 0);
	pool_putback(P, &a);
	cr_assert_eq(take(1), 0);
	cr_assert_eq(pool_select(P, 1, &b), 0);
	cr_assert_eq(b.bid, 1);
	/* bid 0 is no longer the last taken: it stays out. */
	pool_putback(P, &(struct pool_buf){ .addr = 0x10000u, .len = 64, .bid = 0, .bgid = 1 });
	cr_assert_eq(pool_available(P, 1), 0);
	pool_putback(P, &b);
	cr_assert_eq(pool_available(P, 1), 1);
	cr_assert_eq(take(1), 1);
	pool_consume(P, &b);
}

Test(ring, id_rules_match_the_kernels_rings)
{
	emulate(1, 4);
	struct pool_ring r = { .entries = E, .nr = 4 };
	cr_assert_eq(pool_ring_emulate(P, 1, &r), -EEXIST);
	cr_assert_eq(pool_ring_register(P, 1), -EEXIST);
	struct pool_provide pr = { .addr = 0x1000, .len = 16, .nbufs = 1, .bgid = 1 };
	cr_assert_eq(pool_provide(P, &pr), -EINVAL);
	struct pool_remove rm = { .nbufs = 1, .bgid = 1 };
	cr_assert_eq(pool_remove(P, &rm), -EINVAL);
	cr_assert_eq(pool_kind(P, 1), POOL_EMULATED_RING);
	cr_assert_eq(pool_is_ring(P, 1), 0);

	pr.bgid = 2;
	cr_assert_eq(pool_provide(P, &pr), 0);
	cr_assert_eq(pool_ring_emulate(P, 2, &r), -EEXIST);
	rm.bgid = 2;
	cr_assert_eq(pool_remove(P, &rm), 1);
	cr_assert_eq(pool_ring_emulate(P, 2, &r), 0);
	uint16_t head;
	struct pool_ring got;
	cr_assert_eq(pool_ring_get(P, 3, &got, &head), -ENOENT);
	pr.bgid = 3;
	cr_assert_eq(pool_provide(P, &pr), 0);
	cr_assert_eq(pool_ring_get(P, 3, &got, &head), -EINVAL);
	cr_assert_eq(pool_ring_register(P, 4), 0);
	cr_assert_eq(pool_ring_get(P, 4, &got, &head), -EINVAL);
	cr_assert_eq(pool_kind(P, 4), POOL_KERNEL_RING);
}

Test(ring, unregister_with_buffers_out)
{
	emulate(1, 4);
	add(4, 3);
	struct pool_buf b;
	cr_assert_eq(pool_select(P, 1, &b), 0);
	pool_ring_unregister(P, 1);
	cr_assert_eq(pool_kind(P, 1), POOL_NONE);
	cr_assert_eq(pool_select(P, 1, &b), -ENOBUFS);
	cr_assert_eq(pool_check(P), 0);
	pool_putback(P, &b);
	cr_assert_eq(pool_strays(P), 0);
	/* The ring's life keeps its statistics for the report. */
	struct pool_group_stats st;
	cr_assert_eq(pool_group_stats(P, 1, &st), 0);
	cr_assert_eq(st.selected, 1);
	cr_assert_eq(st.in_use, 0);
	cr_assert_eq(pool_kind(P, 1), POOL_NONE);
}

static int cap_two(uint16_t bgid, struct pool_policy *out, void *arg)
{
	(void)arg;
	out->cap = bgid == 1 ? 2 : 0;
	return 0;
}

Test(ring, a_cap_applies_to_a_ring)
{
	pool_set_policy(P, cap_two, NULL);
	emulate(1, 8);
	for (uint16_t i = 0; i < 4; i++)
		add(8, i);
	struct pool_buf b[3];
	cr_assert_eq(pool_select(P, 1, &b[0]), 0);
	cr_assert_eq(pool_select(P, 1, &b[1]), 0);
	cr_assert_eq(pool_select(P, 1, &b[2]), -ENOBUFS);
	struct pool_group_stats st;
	cr_assert_eq(pool_group_stats(P, 1, &st), 0);
	cr_assert_eq(st.enobufs_capped, 1);
	cr_assert_eq(st.available, 2);
	pool_consume(P, &b[0]);
	pool_consume(P, &b[1]);
	/* Delivered and not added back: the program holds them, the cap counts them. */
	cr_assert_eq(pool_select(P, 1, &b[2]), -ENOBUFS);
	add(8, 0);
	cr_assert_eq(pool_select(P, 1, &b[2]), 0);
	cr_assert_eq(b[2].bid, 2);
	pool_consume(P, &b[2]);
}

/* Entries of 64 bytes, bids 0..n-1; a bundle with max_len, room, expand. */
static int bundle(uint16_t bgid, uint32_t max_len, uint16_t room, struct pool_bundle *b, struct pool_buf *out)
{
	*b = (struct pool_bundle){ .max_len = max_len, .nr_iovs = room, .expand = 1, .count = 1 };
	return pool_select_bundle(P, bgid, b, out);
}

static void consume_all(struct pool_buf *out, int n)
{
	for (int i = 0; i < n; i++)
		pool_consume(P, &out[i]);
}

Test(ring, a_bundle_maps_as_io_ring_buffers_peek)
{
	emulate(1, 8);
	for (uint16_t i = 0; i < 8; i++)
		add(8, i);
	struct pool_bundle b;
	struct pool_buf out[POOL_BUNDLE_MAX];
	/* No length: the room it has, whole entries. */
	cr_assert_eq(bundle(1, 0, 1, &b, out), 1);
	cr_assert(!b.expanded && !b.partial && !b.emptied);
	cr_assert_eq(b.total, 64);
	consume_all(out, 1);
	cr_assert_eq(bundle(1, 0, 3, &b, out), 3);
	cr_assert_eq(out[0].bid, 1);
	cr_assert_eq(out[2].bid, 3);
	consume_all(out, 3);
	/* 100 bytes: the second entry would be cut, so it is left. */
	cr_assert_eq(bundle(1, 100, 1, &b, out), 1);
	cr_assert(b.expanded && b.partial && !b.emptied);
	cr_assert_eq(b.total, 64);
	/* Put back last first: the head is where it was. */
	pool_putback(P, &out[0]);
	/* 30 bytes: the first entry alone, cut. */
	cr_assert_eq(bundle(1, 30, 1, &b, out), 1);
	cr_assert(b.partial);
	cr_assert_eq(out[0].bid, 4);
	cr_assert_eq(out[0].len, 30);
	pool_putback(P, &out[0]);
	/* 128 bytes use two entries up: the loop stops on the second, which
	 * it does not step past, so the ring is not "emptied" even when it
	 * holds no more. */
	add(8, 8);
	cr_assert_eq(pool_available(P, 1), 5);
	cr_assert_eq(bundle(1, 128, 1, &b, out), 2);
	cr_assert(!b.partial && !b.emptied);
	consume_all(out, 2);
	/* The rest without a length, with room for more: emptied. */
	cr_assert_eq(bundle(1, 0, 8, &b, out), 3);
	cr_assert(b.emptied && !b.expanded);
	consume_all(out, 3);
	cr_assert_eq(bundle(1, 0, 1, &b, out), -ENOBUFS);
	struct pool_group_stats st;
	cr_assert_eq(pool_group_stats(P, 1, &st), 0);
	cr_assert_eq(st.enobufs_empty, 1);
}

Test(ring, a_bundle_stops_at_the_cap_and_not_on_a_legacy_group)
{
	pool_set_policy(P, cap_two, NULL);
	emulate(1, 8);
	for (uint16_t i = 0; i < 6; i++)
		add(8, i);
	struct pool_bundle b;
	struct pool_buf out[POOL_BUNDLE_MAX];
	cr_assert_eq(bundle(1, 0, 5, &b, out), 2);
	cr_assert_eq(bundle(1, 0, 5, &b, out + 2), -ENOBUFS);
	consume_all(out, 2);
	struct pool_provide pr = { .addr = 0x1000, .len = 64, .nbufs = 2, .bgid = 2 };
	cr_assert_eq(pool_provide(P, &pr), 0);
	cr_assert_eq(bundle(2, 0, 1, &b, out), -ENOBUFS);
}

static struct pool_ring_entry *entry(uint16_t i)
{
	return &E[i & 7];
}

Test(ring, an_incremental_entry_is_used_up_in_parts)
{
	struct pool_ring r = { .entries = E, .nr = 8, .incremental = 1, .min_left = 16 };
	cr_assert_eq(pool_ring_emulate(P, 1, &r), 0);
	cr_assert(pool_ring_incremental(P, 1));
	for (uint16_t i = 0; i < 3; i++)
		add(8, i);
	struct pool_buf b;
	/* 10 of 64: the entry stays, moved past them. */
	cr_assert_eq(pool_select(P, 1, &b), 0);
	cr_assert_eq(pool_ring_commit(P, &b, 1, 10), 1);
	cr_assert_eq(entry(0)->addr, 0x10000u + 10);
	cr_assert_eq(entry(0)->len, 54);
	/* Nothing used: it stays as it was. */
	cr_assert_eq(pool_select(P, 1, &b), 0);
	cr_assert_eq(b.len, 54);
	cr_assert_eq(pool_ring_commit(P, &b, 1, 0), 1);
	cr_assert_eq(entry(0)->len, 54);
	/* 40 more leave 14, under min_left: done, len 0, the head moves on. */
	cr_assert_eq(pool_select(P, 1, &b), 0);
	cr_assert_eq(pool_ring_commit(P, &b, 1, 40), 0);
	cr_assert_eq(entry(0)->len, 0);
	struct pool_ring got;
	uint16_t head;
	cr_assert_eq(pool_ring_get(P, 1, &got, &head), 0);
	cr_assert_eq(head, 1);
	/* Across two entries of a bundle: the first used up, the second in
	 * part; the third, untouched, goes back. */
	struct pool_bundle bb;
	struct pool_buf out[POOL_BUNDLE_MAX];
	cr_assert_eq(bundle(1, 0, 2, &bb, out), 2);
	add(8, 3);
	cr_assert_eq(pool_ring_commit(P, out, 2, 64 + 20), 1);
	cr_assert_eq(entry(1)->len, 0);
	cr_assert_eq(entry(2)->len, 44);
	cr_assert_eq(pool_ring_get(P, 1, &got, &head), 0);
	cr_assert_eq(head, 2);
	struct pool_group_stats st;
	cr_assert_eq(pool_group_stats(P, 1, &st), 0);
	/* Each transfer is a delivery; an entry that stays is offered again. */
	cr_assert_eq(st.in_use, 0);
	cr_assert_eq(st.consumed, 5);
	cr_assert_eq(st.provided, 3 + 3);	/* the fourth add is not looked at yet */
	cr_assert_eq(st.used_bytes, 10 + 0 + 40 + 64 + 20);
}

/* The kernel's ring, watched: the CQEs count, a buffer is held until its
 * bid is published again, -ENOBUFS counts as the group being empty, an
 * incremental entry left at the head is not held, and the pool answers
 * nothing for the ring (selection stays the kernel's). */
Test(ring, a_watched_kernel_ring_counts_its_cqes)
{
	cr_assert_eq(pool_ring_register(P, 3), 0);
	struct pool_ring r = { .entries = E, .nr = 4 };
	cr_assert_eq(pool_ring_watch(P, 3, &r), 0);
	cr_assert_eq(pool_ring_watch(P, 4, &r), -ENOENT);
	for (uint16_t b = 0; b < 4; b++)
		add(4, b);
	struct pool_seen s = { .res = 10, .buffer = 1, .bid = 0 };
	pool_ring_observe(P, 3, &s);
	s.bid = 1;
	s.res = 64;
	pool_ring_observe(P, 3, &s);
	struct pool_group_stats st;
	cr_assert_eq(pool_group_stats(P, 3, &st), 0);
	cr_assert_eq(st.selected, 2);
	cr_assert_eq(st.held, 2);
	cr_assert_eq(st.peak_out, 2);
	cr_assert_eq(st.provided, 4);
	cr_assert_eq(st.used_bytes, 74);
	cr_assert_eq(st.available, 2);
	add(4, 0);	/* bid 0 given back */
	struct pool_seen none = { .res = -ENOBUFS };
	pool_ring_observe(P, 3, &none);
	cr_assert_eq(pool_group_stats(P, 3, &st), 0);
	cr_assert_eq(st.held, 1);
	cr_assert_eq(st.provided, 5);
	cr_assert_eq(st.enobufs, 1);
	cr_assert_eq(st.enobufs_empty, 1);
	struct pool_seen more = { .res = 8, .buffer = 1, .buf_more = 1, .bid = 2 };
	pool_ring_observe(P, 3, &more);
	cr_assert_eq(pool_group_stats(P, 3, &st), 0);
	cr_assert_eq(st.selected, 3);
	cr_assert_eq(st.held, 1);
	struct pool_buf b;
	cr_assert_eq(pool_select(P, 3, &b), -ENOBUFS);
	cr_assert_eq(pool_kind(P, 3), POOL_KERNEL_RING);
	pool_ring_unregister(P, 3);
	cr_assert_eq(pool_group_stats(P, 3, &st), 0);
	cr_assert_eq(st.selected, 3);
	cr_assert_eq(pool_kind(P, 3), POOL_NONE);
	cr_assert_eq(pool_ring_register(P, 3), 0);	/* a new life, fresh counters */
	cr_assert_eq(pool_group_stats(P, 3, &st), -ENOENT);
}
