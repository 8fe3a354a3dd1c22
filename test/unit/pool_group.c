/*
 * pool/ against KERNEL-SEMANTICS.md.  One test per row of the PROVIDE_BUFFERS,
 * REMOVE_BUFFERS and Selection tables that the pool decides, with the exact
 * res Linux 6.18 gives, including which error wins when several apply; then
 * the pool's own promises: FIFO over many provides, put-back to the head, the
 * 65535 cap, all 65536 group ids, the statistics, a seeded 100,000-operation
 * run checked after every step against a plain reference model, and an
 * allocation failure injected at every allocation of a script.  Rows settled
 * before the pool is called (IOSQE_BUFFER_SELECT on PROVIDE, which opcodes
 * accept selection, READV and RECVMSG shapes, POLL_FIRST timing, fixed files)
 * are preload/'s; of those, only the pool's half is here.  Every test ends
 * with pool_check; the model run and the failure script call it after every
 * operation.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pool/alloc.h"
#include "pool/pool.h"
#include "pool/table.h"

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

TestSuite(provide, .init = fresh, .fini = done);
TestSuite(remove, .init = fresh, .fini = done);
TestSuite(select, .init = fresh, .fini = done);
TestSuite(pool, .init = fresh, .fini = done);

static void checked(void)
{
	cr_assert_eq(pool_check(P), 0);
}

static int provide_r(struct pool_provide r)
{
	int ret = pool_provide(P, &r);
	checked();
	return ret;
}

static int provide(uint16_t bgid, uint64_t addr, uint32_t len, int32_t n, uint64_t off)
{
	return provide_r((struct pool_provide){
		.addr = addr, .len = len, .nbufs = n, .off = off, .bgid = bgid });
}

static int remove_r(struct pool_remove r)
{
	int ret = pool_remove(P, &r);
	checked();
	return ret;
}

static int remove_n(uint16_t bgid, int32_t n)
{
	return remove_r((struct pool_remove){ .nbufs = n, .bgid = bgid });
}

static int select_ret(uint16_t bgid, struct pool_buf *b)
{
	int ret = pool_select(P, bgid, b);
	checked();
	return ret;
}

static struct pool_buf take(uint16_t bgid)
{
	struct pool_buf b;
	cr_assert_eq(select_ret(bgid, &b), 0, "group %u should not be empty", bgid);
	cr_assert_eq(b.bgid, bgid);
	return b;
}

static void putback(const struct pool_buf *b)
{
	pool_putback(P, b);
	checked();
}

static void consume(const struct pool_buf *b)
{
	pool_consume(P, b);
	checked();
}

static struct pool_group_stats stats(uint16_t bgid)
{
	struct pool_group_stats s;
	cr_assert_eq(pool_group_stats(P, bgid, &s), 0, "group %u should exist", bgid);
	return s;
}

/* Field by field: the struct has tail padding that memcmp would read. */
static int stats_eq(const struct pool_group_stats *a, const struct pool_group_stats *b)
{
	return a->provided == b->provided && a->removed == b->removed &&
	       a->selected == b->selected && a->returned == b->returned &&
	       a->consumed == b->consumed && a->enobufs == b->enobufs &&
	       a->available == b->available && a->in_use == b->in_use &&
	       a->peak_in_use == b->peak_in_use;
}

static int exists(uint16_t bgid)
{
	struct pool_group_stats s;
	return pool_group_stats(P, bgid, &s) == 0;
}

/* KERNEL-SEMANTICS.md, PROVIDE_BUFFERS: a test per row, then the prep order. */

Test(provide, fields_buffer_i_is_addr_plus_i_len_with_bid_off_plus_i)
{
	cr_assert_eq(provide(7, 0x10000, 100, 4, 40), 0);
	for (uint32_t i = 0; i < 4; i++) {
		struct pool_buf b = take(7);
		cr_assert_eq(b.addr, 0x10000 + i * 100);
		cr_assert_eq(b.len, 100);
		cr_assert_eq(b.bid, 40 + i);
		cr_assert_eq(b.bgid, 7);
	}
}

Test(provide, success_res_is_zero)
{
	cr_assert_eq(provide(1, 0x1000, 64, 16, 0), 0);
	cr_assert_eq(stats(1).available, 16);
	cr_assert_eq(stats(1).provided, 16);
}

Test(provide, count_zero_or_above_65536_is_e2big)
{
	const int32_t bad[] = { 0, 65537, -1, INT32_MIN, INT32_MAX };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(provide(1, 0, 1, bad[i], 0), -E2BIG, "nbufs %d", bad[i]);
	cr_assert(!exists(1), "a request failing prep creates no group");
	cr_assert_eq(provide(1, 0, 1, 65536, 0), 0);
}

Test(provide, len_zero_is_einval)
{
	cr_assert_eq(provide(1, 0x1000, 0, 1, 0), -EINVAL);
	cr_assert(!exists(1));
}

Test(provide, off_above_65535_is_e2big)
{
	cr_assert_eq(provide(1, 0, 1, 1, 65536), -E2BIG);
	cr_assert_eq(provide(1, 0, 1, 1, 1ull << 32), -E2BIG);
	cr_assert_eq(provide(1, 0, 1, 1, UINT64_MAX), -E2BIG);
	cr_assert(!exists(1));
	cr_assert_eq(provide(1, 0, 1, 1, 65535), 0);
	cr_assert_eq(take(1).bid, 65535);
}

Test(provide, off_plus_count_above_65536_is_einval)
{
	cr_assert_eq(provide(1, 0, 1, 2, 65535), -EINVAL);
	cr_assert_eq(provide(1, 0, 1, 65536, 1), -EINVAL);
	cr_assert(!exists(1));
	cr_assert_eq(provide(1, 0, 1, 1, 65535), 0, "65535 + 1 is fine");
	cr_assert_eq(provide(2, 0, 1, 65536, 0), 0);
}

Test(provide, range_that_wraps_is_eoverflow)
{
	cr_assert_eq(provide(1, UINT64_MAX, 2, 1, 0), -EOVERFLOW);
	cr_assert_eq(provide(1, UINT64_MAX - 99, 10, 10, 0), -EOVERFLOW, "ends at 2^64");
	cr_assert_eq(provide(1, UINT64_MAX - 100, 10, 10, 0), -EFAULT, "ends at 2^64 - 1");
	cr_assert(!exists(1));
}

Test(provide, range_outside_user_space_is_efault_addr_null_accepted)
{
	cr_assert_eq(provide(1, POOL_USER_END - 4096, 4096, 1, 0), 0, "may end at TASK_SIZE_MAX");
	cr_assert_eq(provide(2, POOL_USER_END - 4095, 4096, 1, 0), -EFAULT);
	cr_assert_eq(provide(2, POOL_USER_END, 1, 1, 0), -EFAULT);
	cr_assert_eq(provide(2, 0x8000000000000000ull, 1, 1, 0), -EFAULT);
	cr_assert_eq(provide(2, 0, UINT32_MAX, 65536, 0), -EFAULT, "len * count past the end");
	cr_assert(!exists(2));
	cr_assert_eq(provide(3, 0, 4096, 4, 0), 0, "NULL is only range-checked");
	cr_assert_eq(take(3).addr, 0);
}

Test(provide, ioprio_rw_flags_or_splice_fd_in_is_einval)
{
	struct pool_provide ok = { .addr = 0x1000, .len = 8, .nbufs = 1, .bgid = 1 };
	struct pool_provide r = ok;
	r.ioprio = 1;
	cr_assert_eq(provide_r(r), -EINVAL);
	r = ok;
	r.rw_flags = 0x80000000u;
	cr_assert_eq(provide_r(r), -EINVAL);
	r = ok;
	r.splice_fd_in = 1;
	cr_assert_eq(provide_r(r), -EINVAL);
	cr_assert(!exists(1));
	cr_assert_eq(provide_r(ok), 0);
}

Test(provide, group_holding_65535_is_eoverflow_crossing_adds_up_to_cap)
{
	cr_assert_eq(provide(1, 0, 1, 65000, 0), 0);
	cr_assert_eq(provide(1, 0x100000, 2, 1000, 0), 0, "crossing the cap still returns 0");
	cr_assert_eq(stats(1).available, 65535);
	cr_assert_eq(stats(1).provided, 65535, "only 535 of the 1000 went in");
	cr_assert_eq(provide(1, 0, 1, 1, 0), -EOVERFLOW);
	cr_assert_eq(stats(1).available, 65535);
	cr_assert_eq(remove_n(1, 65000), 65000);
	struct pool_buf b = take(1);
	cr_assert_eq(b.addr, 0x100000);
	cr_assert_eq(b.bid, 0);
	cr_assert_eq(remove_n(1, 65536), 534);
	cr_assert_eq(remove_n(1, 1), 0);
	consume(&b);
}

Test(provide, count_65536_at_once_adds_65535)
{
	cr_assert_eq(provide(2, 0, 1, 65536, 0), 0);
	cr_assert_eq(stats(2).available, 65535);
	for (uint32_t i = 0; i < 65535; i++) {
		struct pool_buf b;
		cr_assert_eq(pool_select(P, 2, &b), 0);
		cr_assert_eq(b.bid, i);
		cr_assert_eq(b.addr, i);
		pool_consume(P, &b);
	}
	struct pool_buf b;
	cr_assert_eq(select_ret(2, &b), -ENOBUFS, "bid 65535 was never added");
}

Test(provide, cap_counts_buffers_held_now)
{
	cr_assert_eq(provide(1, 0, 1, 65536, 0), 0);
	cr_assert_eq(remove_n(1, 3), 3);
	cr_assert_eq(provide(1, 0, 1, 10, 0), 0, "3 fit of 10");
	cr_assert_eq(stats(1).available, 65535);
	struct pool_buf b = take(1);
	cr_assert_eq(provide(1, 0x5000, 1, 10, 100), 0, "the selected one left room for 1");
	cr_assert_eq(provide(1, 0, 1, 1, 0), -EOVERFLOW);
	consume(&b);
}

/* io_add_buffers stops only when the list holds exactly USHRT_MAX, and the
 * kernel's put-back (io_kbuf_recycle_legacy) adds without checking, so a list
 * pushed past 65535 by a put-back takes whole requests again. */
Test(provide, putback_past_the_cap_is_not_capped_again)
{
	cr_assert_eq(provide(1, 0, 1, 65536, 0), 0);
	struct pool_buf b = take(1);
	cr_assert_eq(provide(1, 0x9000, 1, 1, 9), 0);
	cr_assert_eq(stats(1).available, 65535);
	putback(&b);
	cr_assert_eq(stats(1).available, 65536);
	cr_assert_eq(provide(1, 0, 1, 100, 0), 0);
	cr_assert_eq(stats(1).available, 65636);
	cr_assert_eq(remove_n(1, 65536), 65536);
	cr_assert_eq(remove_n(1, 65536), 100);
}

Test(provide, duplicate_bids_are_accepted)
{
	cr_assert_eq(provide(3, 0x1000, 8, 2, 5), 0);
	cr_assert_eq(provide(3, 0x2000, 8, 2, 5), 0);
	const uint64_t addr[] = { 0x1000, 0x1008, 0x2000, 0x2008 };
	const uint16_t bid[] = { 5, 6, 5, 6 };
	for (int i = 0; i < 4; i++) {
		struct pool_buf b = take(3);
		cr_assert_eq(b.addr, addr[i]);
		cr_assert_eq(b.bid, bid[i]);
	}
}

Test(provide, ring_mapped_group_is_einval)
{
	cr_assert_eq(pool_ring_register(P, 4), 0);
	cr_assert_eq(provide(4, 0x1000, 8, 1, 0), -EINVAL);
	cr_assert_eq(provide(4, 0x1000, 8, 0, 0), -E2BIG, "prep runs before the group is looked at");
	cr_assert(pool_is_ring(P, 4));
	cr_assert_eq(pool_available(P, 4), 0);
}

Test(provide, group_lives_from_first_provide_until_ring_registration)
{
	cr_assert(!exists(6));
	cr_assert_eq(remove_n(6, 1), -ENOENT);
	cr_assert_eq(provide(6, 0x1000, 8, 2, 0), 0);
	cr_assert_eq(remove_n(6, 2), 2);
	cr_assert(exists(6), "emptied by REMOVE, still there");
	cr_assert_eq(remove_n(6, 1), 0);
	cr_assert_eq(provide(6, 0x1000, 8, 1, 0), 0);
	struct pool_buf b = take(6);
	consume(&b);
	cr_assert(exists(6), "emptied by selection, still there");
	cr_assert_eq(stats(6).provided, 3);

	cr_assert_eq(pool_ring_register(P, 6), 0);
	cr_assert(!exists(6));
	cr_assert(pool_is_ring(P, 6));
	pool_ring_unregister(P, 6);
	checked();
	cr_assert(!pool_is_ring(P, 6));
	cr_assert_eq(remove_n(6, 1), -ENOENT, "the legacy group died with the registration");
	cr_assert_eq(provide(6, 0x1000, 8, 1, 0), 0);
	cr_assert_eq(stats(6).provided, 1, "a new group, new counters");
}

Test(provide, first_error_in_prep_order_wins)
{
	struct pool_provide r;
	/* reserved fields before the count */
	r = (struct pool_provide){ .rw_flags = 1, .nbufs = 0, .len = 1 };
	cr_assert_eq(provide_r(r), -EINVAL);
	/* count before len */
	r = (struct pool_provide){ .nbufs = 0, .len = 0 };
	cr_assert_eq(provide_r(r), -E2BIG);
	/* len before overflow */
	r = (struct pool_provide){ .addr = UINT64_MAX, .nbufs = 1, .len = 0 };
	cr_assert_eq(provide_r(r), -EINVAL);
	/* len before off */
	r = (struct pool_provide){ .nbufs = 1, .len = 0, .off = 70000 };
	cr_assert_eq(provide_r(r), -EINVAL);
	/* overflow before off */
	r = (struct pool_provide){ .addr = UINT64_MAX, .nbufs = 1, .len = 2, .off = 70000 };
	cr_assert_eq(provide_r(r), -EOVERFLOW);
	/* range before off */
	r = (struct pool_provide){ .addr = POOL_USER_END, .nbufs = 1, .len = 2, .off = 70000 };
	cr_assert_eq(provide_r(r), -EFAULT);
	/* off > 65535 before off + count */
	r = (struct pool_provide){ .nbufs = 65536, .len = 1, .off = 65536 };
	cr_assert_eq(provide_r(r), -E2BIG);
	/* every prep error before the group's cap */
	cr_assert_eq(provide(9, 0, 1, 65536, 0), 0);
	cr_assert_eq(provide(9, 0, 1, 2, 65535), -EINVAL);
	cr_assert_eq(provide(9, 0, 1, 1, 0), -EOVERFLOW);
}

Test(provide, prep_alone_gives_the_same_answer_as_submission)
{
	struct pool_provide r = { .addr = 0x1000, .len = 8, .nbufs = 1, .bgid = 1 };
	cr_assert_eq(pool_provide_prep(&r, 0), 0);
	r.splice_fd_in = 3;
	cr_assert_eq(pool_provide_prep(&r, 0), -EINVAL);
	r = (struct pool_provide){ .addr = 0x1000, .len = 8, .nbufs = 1, .off = 65536 };
	cr_assert_eq(pool_provide_prep(&r, 0), -E2BIG);
	/* Issue-time results are not prep's: a ring-mapped or full group. */
	cr_assert_eq(pool_ring_register(P, 1), 0);
	r = (struct pool_provide){ .addr = 0x1000, .len = 8, .nbufs = 1, .bgid = 1 };
	cr_assert_eq(pool_provide_prep(&r, 0), 0);
	cr_assert_eq(provide_r(r), -EINVAL);
}

/* docs/kernel-semantics.md, "Found on a real Linux 5.10": its prep. */
Test(provide, prep_5_10_checks_count_range_and_first_bid_only)
{
	struct pool_provide r = { .addr = 0x1000, .len = 8, .nbufs = 65535, .bgid = 1 };
	cr_assert_eq(pool_provide_prep(&r, POOL_PREP_5_10), 0);
	r.nbufs = 65536;
	cr_assert_eq(pool_provide_prep(&r, POOL_PREP_5_10), -E2BIG);
	cr_assert_eq(pool_provide_prep(&r, 0), 0);
	r.nbufs = 0;
	cr_assert_eq(pool_provide_prep(&r, POOL_PREP_5_10), -E2BIG);
	/* Unchecked: a length of 0, splice_fd_in, the last bid past 65535. */
	r = (struct pool_provide){ .addr = 0x1000, .len = 0, .nbufs = 2, .splice_fd_in = 3, .off = 65535 };
	cr_assert_eq(pool_provide_prep(&r, POOL_PREP_5_10), 0);
	cr_assert_eq(pool_provide_prep(&r, 0), -EINVAL);
	/* A range past the user's end is access_ok's -EFAULT, overflowing or
	 * not; a negative length (an int in 5.10) makes it huge. */
	r = (struct pool_provide){ .addr = UINT64_MAX - 4, .len = 8, .nbufs = 1 };
	cr_assert_eq(pool_provide_prep(&r, POOL_PREP_5_10), -EFAULT);
	cr_assert_eq(pool_provide_prep(&r, 0), -EOVERFLOW);
	r = (struct pool_provide){ .addr = 0x1000, .len = 0x80000000u, .nbufs = 1 };
	cr_assert_eq(pool_provide_prep(&r, POOL_PREP_5_10), -EFAULT);
	r = (struct pool_provide){ .addr = 0x1000, .len = 8, .nbufs = 1, .off = 65536 };
	cr_assert_eq(pool_provide_prep(&r, POOL_PREP_5_10), -E2BIG);
	r.off = 0, r.rw_flags = 1;
	cr_assert_eq(pool_provide_prep(&r, POOL_PREP_5_10), -EINVAL);
}

Test(remove, prep_5_10_takes_at_most_65535_and_any_splice_fd_in)
{
	struct pool_remove r = { .nbufs = 65535, .bgid = 1, .splice_fd_in = 1 };
	cr_assert_eq(pool_remove_prep(&r, POOL_PREP_5_10), 0);
	cr_assert_eq(pool_remove_prep(&r, 0), -EINVAL);
	r.splice_fd_in = 0, r.nbufs = 65536;
	cr_assert_eq(pool_remove_prep(&r, POOL_PREP_5_10), -EINVAL);
	cr_assert_eq(pool_remove_prep(&r, 0), 0);
	r.nbufs = 1, r.off = 1;
	cr_assert_eq(pool_remove_prep(&r, POOL_PREP_5_10), -EINVAL);
}

/* KERNEL-SEMANTICS.md, REMOVE_BUFFERS: a test per row. */

Test(remove, nonzero_addr_len_off_rw_flags_or_splice_fd_in_is_einval)
{
	cr_assert_eq(provide(1, 0x1000, 8, 4, 0), 0);
	struct pool_remove ok = { .nbufs = 1, .bgid = 1 }, r;
	r = ok, r.addr = 1;
	cr_assert_eq(remove_r(r), -EINVAL);
	r = ok, r.len = 1;
	cr_assert_eq(remove_r(r), -EINVAL);
	r = ok, r.off = 1;
	cr_assert_eq(remove_r(r), -EINVAL);
	r = ok, r.rw_flags = 1;
	cr_assert_eq(remove_r(r), -EINVAL);
	r = ok, r.splice_fd_in = 1;
	cr_assert_eq(remove_r(r), -EINVAL);
	cr_assert_eq(stats(1).available, 4);
	cr_assert_eq(pool_remove_prep(&ok, 0), 0);
	cr_assert_eq(remove_r(ok), 1);
}

Test(remove, count_zero_or_above_65536_is_einval)
{
	cr_assert_eq(provide(1, 0x1000, 8, 4, 0), 0);
	const int32_t bad[] = { 0, 65537, -1, INT32_MIN };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(remove_n(1, bad[i]), -EINVAL, "nbufs %d", bad[i]);
	cr_assert_eq(remove_n(1, 65536), 4);
}

Test(remove, success_res_is_number_removed_oldest_first)
{
	cr_assert_eq(provide(1, 0x1000, 8, 10, 0), 0);
	cr_assert_eq(remove_n(1, 3), 3);
	cr_assert_eq(take(1).bid, 3);
	cr_assert_eq(stats(1).removed, 3);
}

Test(remove, more_asked_than_present_gives_number_present)
{
	cr_assert_eq(provide(1, 0x1000, 8, 5, 0), 0);
	cr_assert_eq(remove_n(1, 100), 5);
	cr_assert_eq(stats(1).available, 0);
}

Test(remove, existing_empty_group_gives_zero)
{
	cr_assert_eq(provide(1, 0x1000, 8, 1, 0), 0);
	cr_assert_eq(remove_n(1, 1), 1);
	cr_assert_eq(remove_n(1, 1), 0);
}

Test(remove, never_created_group_is_enoent)
{
	cr_assert_eq(remove_n(1, 1), -ENOENT);
	cr_assert_eq(remove_n(65535, 65536), -ENOENT);
	cr_assert_eq(remove_n(1, 0), -EINVAL, "prep errors come before the lookup");
	cr_assert(!exists(1));
}

Test(remove, ring_mapped_group_is_einval)
{
	cr_assert_eq(pool_ring_register(P, 2), 0);
	cr_assert_eq(remove_n(2, 1), -EINVAL);
}

Test(remove, buffer_held_by_pending_read_is_not_removed)
{
	cr_assert_eq(provide(1, 0x1000, 8, 2, 0), 0);
	struct pool_buf held = take(1);
	cr_assert_eq(remove_n(1, 2), 1);
	cr_assert_eq(stats(1).in_use, 1);
	consume(&held);
	cr_assert_eq(stats(1).in_use, 0);
}

/* KERNEL-SEMANTICS.md, Selection and its RECV and READ tables: the pool's
 * half of each row. */

Test(select, order_is_fifo_and_putback_goes_to_the_head)
{
	cr_assert_eq(provide(1, 0x1000, 8, 3, 0), 0);
	cr_assert_eq(provide(1, 0x2000, 8, 3, 10), 0);
	struct pool_buf a = take(1), b = take(1);
	cr_assert_eq(a.bid, 0);
	cr_assert_eq(b.bid, 1);
	putback(&a);
	cr_assert_eq(take(1).bid, 0, "put back to the head, not the tail");
	const uint16_t rest[] = { 2, 10, 11, 12 };
	for (int i = 0; i < 4; i++)
		cr_assert_eq(take(1).bid, rest[i]);
}

Test(select, empty_or_nonexistent_group_is_enobufs_not_enoent)
{
	struct pool_buf b;
	cr_assert_eq(select_ret(3, &b), -ENOBUFS);
	cr_assert(!exists(3), "selection creates no group");
	cr_assert_eq(provide(3, 0x1000, 8, 1, 0), 0);
	b = take(3);
	struct pool_buf c;
	cr_assert_eq(select_ret(3, &c), -ENOBUFS);
	cr_assert_eq(stats(3).enobufs, 1);
	cr_assert_eq(pool_ring_register(P, 4), 0);
	cr_assert_eq(select_ret(4, &c), -ENOBUFS, "a ring-mapped id is the kernel's");
	consume(&b);
}

/* POLL_FIRST and deferred receives select when the socket turns readable:
 * whatever the group holds at that moment decides. */
Test(select, selection_when_readable_sees_the_group_as_it_is_then)
{
	cr_assert_eq(provide(1, 0x1000, 8, 1, 0), 0);
	struct pool_buf other = take(1);
	struct pool_buf b;
	cr_assert_eq(select_ret(1, &b), -ENOBUFS);
	putback(&other);
	cr_assert_eq(select_ret(1, &b), 0);
	cr_assert_eq(b.bid, other.bid);
	consume(&b);
}

Test(select, length_is_the_buffer_len_clamped_to_max_rw_count)
{
	cr_assert_eq(provide(1, 0, UINT32_MAX, 2, 0), 0);
	struct pool_buf a = take(1), b = take(1);
	cr_assert_eq(a.len, POOL_MAX_RW_COUNT);
	cr_assert_eq(b.len, POOL_MAX_RW_COUNT);
	cr_assert_eq(b.addr, (uint64_t)UINT32_MAX, "addresses step by the unclamped len");
	cr_assert_eq(provide(2, 0x1000, 4096, 1, 0), 0);
	cr_assert_eq(take(2).len, 4096);
}

/* A link whose head fails -ENOBUFS: the pool's part is only the -ENOBUFS,
 * and that it leaves the group as it was. */
Test(select, enobufs_that_fails_a_link_changes_nothing)
{
	cr_assert_eq(provide(1, 0x1000, 8, 1, 0), 0);
	struct pool_buf b = take(1), c;
	struct pool_group_stats before = stats(1);
	cr_assert_eq(select_ret(1, &c), -ENOBUFS);
	struct pool_group_stats after = stats(1);
	cr_assert_eq(after.enobufs, before.enobufs + 1);
	after.enobufs = before.enobufs;
	cr_assert(stats_eq(&before, &after));
	consume(&b);
}

Test(select, cqe_skip_success_consumes_the_buffer)
{
	cr_assert_eq(provide(1, 0x1000, 8, 2, 0), 0);
	struct pool_buf b = take(1);
	consume(&b);
	cr_assert_eq(stats(1).consumed, 1);
	cr_assert_eq(stats(1).in_use, 0);
	cr_assert_eq(stats(1).available, 1);
	cr_assert_eq(take(1).bid, 1, "a consumed buffer does not come back");
}

Test(select, recv_pending_gives_its_buffer_back_to_the_head)
{
	cr_assert_eq(provide(1, 0x1000, 8, 3, 0), 0);
	struct pool_buf first = take(1);	/* attempt, -EAGAIN */
	putback(&first);
	cr_assert_eq(stats(1).in_use, 0, "a pending RECV holds no buffer");
	struct pool_buf again = take(1);	/* data arrived */
	cr_assert_eq(again.bid, first.bid);
	cr_assert_eq(again.addr, first.addr);
	consume(&again);
}

Test(select, recv_eof_or_error_returns_the_buffer)
{
	cr_assert_eq(provide(1, 0x1000, 8, 2, 0), 0);
	struct pool_buf b = take(1);
	putback(&b);
	cr_assert_eq(stats(1).returned, 1);
	cr_assert_eq(stats(1).available, 2);
	cr_assert_eq(take(1).bid, 0);
}

Test(select, read_pending_holds_its_buffer_until_consumed)
{
	cr_assert_eq(provide(1, 0x1000, 8, 1, 0), 0);
	struct pool_buf held = take(1), c;
	cr_assert_eq(select_ret(1, &c), -ENOBUFS, "another READ on the 1-buffer group");
	consume(&held);	/* EOF, error or -ECANCELED: all with F_BUFFER */
	cr_assert_eq(select_ret(1, &c), -ENOBUFS, "consumed, not returned");
	cr_assert_eq(stats(1).consumed, 1);
}

/* What the pool promises beyond the tables. */

Test(pool, fifo_over_many_provides)
{
	/* Buffer k of the whole run sits at 0x100000 + 16k, so provide order is
	 * address order, whatever the bids. */
	uint32_t provided = 0, taken = 0;
	for (uint32_t i = 0; i < 200; i++) {
		int32_t n = (int32_t)(1 + i % 17);
		cr_assert_eq(provide(5, 0x100000 + (uint64_t)provided * 16, 16, n, provided % 40000), 0);
		provided += (uint32_t)n;
		if (i % 3 == 0) {	/* selections interleaved with provides */
			struct pool_buf b = take(5);
			cr_assert_eq(b.addr, 0x100000 + (uint64_t)taken++ * 16);
			consume(&b);
		}
	}
	struct pool_buf b;
	while (pool_select(P, 5, &b) == 0) {
		cr_assert_eq(b.addr, 0x100000 + (uint64_t)taken++ * 16);
		pool_consume(P, &b);
	}
	cr_assert_eq(taken, provided);
}

Test(pool, putbacks_stack_at_the_head)
{
	cr_assert_eq(provide(1, 0x1000, 8, 4, 0), 0);
	struct pool_buf a = take(1), b = take(1);
	putback(&a);
	putback(&b);
	const uint16_t want[] = { 1, 0, 2, 3 };
	for (int i = 0; i < 4; i++)
		cr_assert_eq(take(1).bid, want[i]);
}

static int count_groups(uint16_t bgid, const struct pool_group_stats *s, void *arg)
{
	uint32_t *n = arg;
	cr_assert_eq(bgid, *n, "in bgid order");
	cr_assert_eq(s->available, 1);
	(*n)++;
	return 0;
}

Test(pool, all_65536_group_ids)
{
	for (uint32_t g = 0; g < 65536; g++)
		cr_assert_eq(pool_provide(P, &(struct pool_provide){
			.addr = (uint64_t)g << 12, .len = 4096, .nbufs = 1, .off = g, .bgid = (uint16_t)g }), 0);
	checked();
	uint32_t n = 0;
	cr_assert_eq(pool_for_each_group(P, count_groups, &n), 0);
	cr_assert_eq(n, 65536);
	for (uint32_t g = 0; g < 65536; g += 257) {
		struct pool_buf b = take((uint16_t)g);
		cr_assert_eq(b.bid, g);
		cr_assert_eq(b.addr, (uint64_t)g << 12);
		putback(&b);
	}
	for (uint32_t g = 0; g < 65536; g++)
		cr_assert_eq(pool_remove(P, &(struct pool_remove){ .nbufs = 2, .bgid = (uint16_t)g }), 1);
	checked();
	cr_assert_eq(P->ngroups, 65536, "emptied groups stay");
}

Test(pool, stats_after_a_scripted_sequence)
{
	cr_assert_eq(provide(5, 0x1000, 64, 8, 0), 0);
	struct pool_buf b[8];
	for (int i = 0; i < 3; i++)
		b[i] = take(5);
	putback(&b[2]);
	consume(&b[1]);
	for (int i = 2; i < 6; i++)
		b[i] = take(5);
	cr_assert_eq(remove_n(5, 10), 2);
	struct pool_buf none;
	cr_assert_eq(select_ret(5, &none), -ENOBUFS);
	cr_assert_eq(select_ret(9, &none), -ENOBUFS);

	struct pool_group_stats s = stats(5);
	cr_assert_eq(s.provided, 8);
	cr_assert_eq(s.removed, 2);
	cr_assert_eq(s.selected, 7);
	cr_assert_eq(s.returned, 1);
	cr_assert_eq(s.consumed, 1);
	cr_assert_eq(s.enobufs, 1);
	cr_assert_eq(s.available, 0);
	cr_assert_eq(s.in_use, 5);
	cr_assert_eq(s.peak_in_use, 5);
	cr_assert_eq(pool_group_stats(P, 9, &s), -ENOENT, "no group, nowhere to count");

	consume(&b[0]);
	for (int i = 2; i < 6; i++)
		consume(&b[i]);
	s = stats(5);
	cr_assert_eq(s.consumed, 6);
	cr_assert_eq(s.in_use, 0);
	cr_assert_eq(s.peak_in_use, 5);
	cr_assert_eq(s.provided + s.returned, s.removed + s.selected + s.available);
	cr_assert_eq(pool_strays(P), 0);
}

Test(pool, ring_registration_rules)
{
	cr_assert_eq(provide(1, 0x1000, 8, 2, 0), 0);
	cr_assert_eq(pool_ring_register(P, 1), -EEXIST, "a legacy group with buffers");
	cr_assert_eq(stats(1).available, 2);
	struct pool_buf out = take(1);
	cr_assert_eq(remove_n(1, 1), 1);
	cr_assert_eq(pool_ring_register(P, 1), 0, "an emptied legacy group is replaced");
	checked();
	cr_assert_eq(pool_ring_register(P, 1), -EEXIST, "a ring");
	putback(&out);
	cr_assert_eq(pool_available(P, 1), 0, "a put-back onto a ring id is dropped");
	cr_assert_eq(pool_strays(P), 0);
	pool_ring_unregister(P, 1);
	pool_ring_unregister(P, 1);
	pool_ring_unregister(P, 2);
	checked();
	cr_assert_eq(P->ngroups, 0);
	cr_assert_eq(pool_ring_register(P, 3), 0);
	pool_ring_unregister(P, 3);
	cr_assert_eq(P->ngroups, 0);
}

/* The kernel's put-back looks the id up when it happens: a buffer selected
 * from a group that a ring cycle replaced lands in the id's new group. */
Test(pool, putback_goes_to_whatever_legacy_group_holds_the_id)
{
	cr_assert_eq(provide(1, 0x1000, 8, 1, 0), 0);
	struct pool_buf a = take(1);
	cr_assert_eq(pool_ring_register(P, 1), 0);
	pool_ring_unregister(P, 1);
	checked();
	cr_assert_eq(remove_n(1, 1), -ENOENT);
	cr_assert_eq(P->ngroups, 1, "kept only for the buffer still out");
	cr_assert_eq(provide(1, 0x8000, 8, 1, 50), 0);
	cr_assert_eq(stats(1).in_use, 1, "in use belongs to the id");
	putback(&a);
	cr_assert_eq(take(1).addr, 0x1000);
	cr_assert_eq(take(1).bid, 50);

	cr_assert_eq(provide(2, 0x1000, 8, 1, 0), 0);
	struct pool_buf b = take(2);
	cr_assert_eq(pool_ring_register(P, 2), 0);
	pool_ring_unregister(P, 2);
	consume(&b);
	cr_assert_eq(pool_is_ring(P, 2), 0);
	cr_assert(!exists(2));
}

/* preload/ takes back the effects of SQEs the kernel did not consume, last
 * first; a provide's undo must leave the pool as if it never ran. */
Test(pool, provide_undo_leaves_no_trace)
{
	cr_assert_eq(provide(1, 0x1000, 8, 3, 0), 0);
	struct pool_buf a = take(1);
	struct pool_group_stats s0 = stats(1);
	cr_assert_eq(provide(1, 0x9000, 8, 5, 20), 0);
	pool_provide_undo(P, 1, 5, 0);
	checked();
	struct pool_group_stats s1 = stats(1);
	cr_assert(stats_eq(&s0, &s1));
	struct pool_buf b = take(1), c = take(1), none;
	cr_assert_eq(b.bid, 1);
	cr_assert_eq(c.bid, 2);
	cr_assert_eq(select_ret(1, &none), -ENOBUFS);
	consume(&b);
	consume(&c);

	/* a group the provide created goes again */
	cr_assert_eq(provide(2, 0x1000, 8, 4, 0), 0);
	pool_provide_undo(P, 2, 4, 1);
	checked();
	cr_assert(!exists(2));
	cr_assert_eq(remove_n(2, 1), -ENOENT);

	/* a group reborn on an id with a buffer still out goes back to that */
	cr_assert_eq(pool_ring_register(P, 1), 0);
	pool_ring_unregister(P, 1);
	cr_assert_eq(provide(1, 0x1000, 8, 2, 0), 0);
	pool_provide_undo(P, 1, 2, 1);
	checked();
	cr_assert(!exists(1));
	cr_assert_eq(P->ngroups, 1, "still kept for the buffer out");
	consume(&a);
	cr_assert_eq(P->ngroups, 0);
}

/* A later SQE of the same batch took a provided buffer and delivered it (it
 * cannot be put back): the undo takes what is left of the provide. */
Test(pool, provide_undo_after_a_delivered_selection)
{
	cr_assert_eq(provide(3, 0x1000, 8, 4, 0), 0);
	struct pool_buf b = take(3);
	consume(&b);
	pool_provide_undo(P, 3, 4, 1);
	checked();
	cr_assert(!exists(3));
}

/* A REMOVE the kernel did not take: what it removed is the head again, in
 * its order, and the counters are as before it. */
Test(pool, remove_undo_leaves_no_trace)
{
	cr_assert_eq(provide(1, 0x1000, 8, 5, 0), 0);
	struct pool_buf a = take(1);
	struct pool_group_stats s0 = stats(1);
	struct pool_kept kept;
	cr_assert_eq(pool_remove_kept(P, &(struct pool_remove){ .nbufs = 3, .bgid = 1 }, &kept), 3);
	cr_assert_not_null(kept.slots);
	cr_assert_eq(kept.n, 3);
	/* a later SQE of the batch took one and gave it back (undone first) */
	struct pool_buf b = take(1);
	cr_assert_eq(b.bid, 4);
	putback(&b);
	pool_remove_undo(P, &kept);
	cr_assert_null(kept.slots);
	checked();
	struct pool_group_stats s1 = stats(1);
	cr_assert_eq(s1.available, s0.available);
	cr_assert_eq(s1.removed, s0.removed);
	for (uint16_t bid = 1; bid <= 4; bid++) {
		struct pool_buf c = take(1);
		cr_assert_eq(c.bid, bid);
		cr_assert_eq(c.addr, 0x1000 + 8u * bid);
		consume(&c);
	}
	consume(&a);
	checked();
}

/* Undone after the group's deque moved (a provide made it grow), and a
 * removal the kernel did take: the kept copy goes, the removal stands. */
Test(pool, remove_undo_after_the_deque_moved)
{
	cr_assert_eq(provide(2, 0x1000, 8, 4, 0), 0);
	struct pool_kept kept, took;
	cr_assert_eq(pool_remove_kept(P, &(struct pool_remove){ .nbufs = 2, .bgid = 2 }, &kept), 2);
	cr_assert_eq(provide(2, 0x9000, 8, 60, 100), 0);
	pool_provide_undo(P, 2, 60, 0);
	pool_remove_undo(P, &kept);
	checked();
	cr_assert_eq(stats(2).available, 4);
	cr_assert_eq(pool_remove_kept(P, &(struct pool_remove){ .nbufs = 1, .bgid = 2 }, &took), 1);
	pool_kept_free(P, &took);
	cr_assert_null(took.slots);
	struct pool_buf c = take(2);
	cr_assert_eq(c.bid, 1);
	consume(&c);
	/* nothing to keep: a group with no buffer, or none at all */
	cr_assert_eq(remove_n(2, 5), 2);
	cr_assert_eq(pool_remove_kept(P, &(struct pool_remove){ .nbufs = 1, .bgid = 2 }, &kept), 0);
	cr_assert_null(kept.slots);
	pool_remove_undo(P, &kept);
	cr_assert_eq(pool_remove_kept(P, &(struct pool_remove){ .nbufs = 1, .bgid = 9 }, &kept), -ENOENT);
	pool_remove_undo(P, &kept);
	checked();
}

static int stop_at_second(uint16_t bgid, const struct pool_group_stats *s, void *arg)
{
	(void)s;
	int *calls = arg;
	return ++*calls == 2 ? 1000 + bgid : 0;
}

Test(pool, for_each_skips_rings_and_stops_on_request)
{
	cr_assert_eq(provide(300, 0x1000, 8, 1, 0), 0);
	cr_assert_eq(pool_ring_register(P, 2), 0);
	cr_assert_eq(provide(7, 0x1000, 8, 1, 0), 0);
	cr_assert_eq(provide(9, 0x1000, 8, 1, 0), 0);
	int calls = 0;
	cr_assert_eq(pool_for_each_group(P, stop_at_second, &calls), 1009);
	cr_assert_eq(calls, 2);
}

Test(pool, stray_putbacks_and_consumes_are_counted_not_trusted)
{
	struct pool_buf fake = { .addr = 0x1000, .len = 8, .bid = 0, .bgid = 1 };
	putback(&fake);
	cr_assert_eq(pool_strays(P), 1);
	cr_assert_eq(provide(1, 0x1000, 8, 1, 0), 0);
	consume(&fake);
	putback(&fake);
	cr_assert_eq(pool_strays(P), 3);
	cr_assert_eq(stats(1).available, 1);
	struct pool_buf b = take(1);
	consume(&b);
	consume(&b);
	cr_assert_eq(pool_strays(P), 4);
}

Test(pool, memory_follows_the_buffers_held)
{
	cr_assert_eq(provide(1, 0, 1, 65536, 0), 0);
	const struct group *g = table_get(P, 1);
	cr_assert_geq(g->cap, 65535);
	cr_assert_eq(remove_n(1, 65000), 65000);
	cr_assert_leq(g->cap, 4 * 535);
	cr_assert_eq(remove_n(1, 65536), 535);
	cr_assert_eq(g->cap, 0, "an empty group with nothing out holds no array");
	cr_assert_eq(provide(1, 0, 1, 1000, 0), 0);
	struct pool_buf b[1000];
	for (int i = 0; i < 1000; i++)
		b[i] = take(1);
	cr_assert_geq(g->cap, 1000, "room kept for every buffer out");
	for (int i = 0; i < 1000; i++)
		consume(&b[i]);
	cr_assert_eq(g->cap, 0);
}

/* The reference model: the tables' rules written the plainest way (arrays,
 * memmove), sharing no code with pool/, so the two can only agree by both
 * being right. */

enum { M_NONE, M_LEGACY, M_RING, M_GONE };

struct mgroup {
	int kind;
	struct pool_buf *q;		/* q[0] is the head */
	size_t n, room;
	struct pool_group_stats st;	/* available is n */
};

#define NIDS 8
static const uint16_t ids[NIDS] = { 0, 1, 2, 255, 256, 4097, 65534, 65535 };

struct model {
	struct mgroup g[NIDS];
	struct pool_buf *out;		/* every buffer selected and not back */
	size_t nout, outroom;
	size_t held;			/* buffers in all groups */
};

static struct mgroup *mg(struct model *m, uint16_t bgid)
{
	for (int i = 0; i < NIDS; i++)
		if (ids[i] == bgid)
			return &m->g[i];
	cr_assert_fail("bgid %u is not in the model", bgid);
	return NULL;
}

static void m_begin(struct mgroup *g, int kind)
{
	uint32_t in_use = g->st.in_use;
	g->kind = kind;
	g->st = (struct pool_group_stats){ .in_use = in_use, .peak_in_use = in_use };
}

static void m_push(struct mgroup *g, struct pool_buf b, int front)
{
	if (g->n == g->room) {
		g->room = g->room ? 2 * g->room : 16;
		g->q = realloc(g->q, g->room * sizeof(*g->q));
		cr_assert_not_null(g->q);
	}
	if (front) {
		memmove(g->q + 1, g->q, g->n * sizeof(*g->q));
		g->q[0] = b;
	} else {
		g->q[g->n] = b;
	}
	g->n++;
}

static void m_pop(struct mgroup *g, size_t k)
{
	memmove(g->q, g->q + k, (g->n - k) * sizeof(*g->q));
	g->n -= k;
}

static int m_provide(struct model *m, const struct pool_provide *r)
{
	struct mgroup *g = mg(m, r->bgid);
	if (g->kind == M_RING)
		return -EINVAL;
	if (g->kind != M_LEGACY)
		m_begin(g, M_LEGACY);
	size_t k = 0;
	for (int32_t i = 0; i < r->nbufs; i++) {
		if (g->n == 65535)
			break;
		m_push(g, (struct pool_buf){
			.addr = r->addr + (uint64_t)i * r->len,
			.len = r->len > POOL_MAX_RW_COUNT ? POOL_MAX_RW_COUNT : r->len,
			.bid = (uint16_t)(r->off + (uint64_t)i), .bgid = r->bgid }, 0);
		k++;
	}
	if (!k)
		return -EOVERFLOW;
	g->st.provided += k;
	m->held += k;
	return 0;
}

static int m_remove(struct model *m, uint16_t bgid, int32_t nbufs)
{
	struct mgroup *g = mg(m, bgid);
	if (g->kind == M_NONE || g->kind == M_GONE)
		return -ENOENT;
	if (g->kind == M_RING)
		return -EINVAL;
	size_t k = (size_t)nbufs < g->n ? (size_t)nbufs : g->n;
	m_pop(g, k);
	g->st.removed += k;
	m->held -= k;
	return (int)k;
}

static int m_select(struct model *m, uint16_t bgid, struct pool_buf *b)
{
	struct mgroup *g = mg(m, bgid);
	if (g->kind != M_LEGACY)
		return -ENOBUFS;
	if (!g->n) {
		g->st.enobufs++;
		return -ENOBUFS;
	}
	*b = g->q[0];
	m_pop(g, 1);
	m->held--;
	g->st.selected++;
	if (++g->st.in_use > g->st.peak_in_use)
		g->st.peak_in_use = g->st.in_use;
	if (m->nout == m->outroom) {
		m->outroom = m->outroom ? 2 * m->outroom : 64;
		m->out = realloc(m->out, m->outroom * sizeof(*m->out));
		cr_assert_not_null(m->out);
	}
	m->out[m->nout++] = *b;
	return 0;
}

/* Takes out[j] off the list; back = 1 for a put-back, 0 for delivery. */
static struct pool_buf m_return(struct model *m, size_t j, int back)
{
	struct pool_buf b = m->out[j];
	m->out[j] = m->out[--m->nout];
	struct mgroup *g = mg(m, b.bgid);
	g->st.in_use--;
	if (g->kind == M_LEGACY) {
		if (back) {
			m_push(g, b, 1);
			g->st.returned++;
			m->held++;
		} else {
			g->st.consumed++;
		}
	}
	if (g->kind == M_GONE && !g->st.in_use)
		g->kind = M_NONE;
	return b;
}

static int m_ring_register(struct model *m, uint16_t bgid)
{
	struct mgroup *g = mg(m, bgid);
	if (g->kind == M_RING || (g->kind == M_LEGACY && g->n))
		return -EEXIST;
	m_begin(g, M_RING);
	return 0;
}

static void m_ring_unregister(struct model *m, uint16_t bgid)
{
	struct mgroup *g = mg(m, bgid);
	if (g->kind == M_RING)
		g->kind = g->st.in_use ? M_GONE : M_NONE;
}

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64*: deterministic from the seed, good enough to mix ops */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static uint32_t below(uint32_t n)
{
	return (uint32_t)(rnd() % n);
}

static void m_compare(struct model *m, int deep, uint32_t step)
{
	for (int i = 0; i < NIDS; i++) {
		struct mgroup *g = &m->g[i];
		struct pool_group_stats s;
		int ret = pool_group_stats(P, ids[i], &s);
		cr_assert_eq(ret, g->kind == M_LEGACY ? 0 : -ENOENT, "step %u id %u", step, ids[i]);
		cr_assert_eq(pool_is_ring(P, ids[i]), g->kind == M_RING, "step %u", step);
		cr_assert_eq(pool_available(P, ids[i]), g->kind == M_LEGACY ? g->n : 0);
		if (ret)
			continue;
		struct pool_group_stats want = g->st;
		want.available = (uint32_t)g->n;
		cr_assert(stats_eq(&s, &want),
			  "step %u id %u: stats differ (avail %u/%u in_use %u/%u)", step,
			     ids[i], s.available, want.available, s.in_use, want.in_use);
		if (!deep)
			continue;
		const struct group *pg = table_get(P, ids[i]);
		for (size_t k = 0; k < g->n; k++) {
			const struct pool_slot *sl = &pg->slots[(pg->head + k) & (pg->cap - 1)];
			cr_assert(sl->addr == g->q[k].addr && sl->len == g->q[k].len &&
				  sl->bid == g->q[k].bid, "step %u id %u slot %zu", step, ids[i], k);
		}
	}
	cr_assert_eq(pool_strays(P), 0);
}

Test(pool, random_100000_operations_match_the_model)
{
	struct model m = { 0 };
	rng_state = 0x62756673656c2121ull;	/* fixed: the run is the same every time */
	for (uint32_t step = 0; step < 100000; step++) {
		uint16_t bgid = ids[below(NIDS)];
		uint32_t op = below(100);
		struct pool_buf b, mb;
		int got, want;
		if (op < 24 && m.held < 3000) {
			uint32_t len = below(50) ? 1 + below(8192) : UINT32_MAX;
			int32_t n = (int32_t)(1 + (below(10) ? below(16) : below(300)));
			struct pool_provide r = {
				.addr = len == UINT32_MAX ? 0 : (uint64_t)below(1u << 30) << 4,
				.len = len, .nbufs = n, .bgid = bgid,
				.off = below(65536 - (uint32_t)n + 1),
			};
			struct mgroup *g = mg(&m, bgid), saved = *g;
			struct pool_group_stats before;
			int existed = !pool_group_stats(P, bgid, &before);
			want = m_provide(&m, &r);
			got = pool_provide(P, &r);
			if (!got && !want && !below(8)) {
				/* The kernel did not take the SQE: as preload/ does, undo
				 * with what the stats say; the model just forgets it. */
				struct pool_group_stats after;
				cr_assert_eq(pool_group_stats(P, bgid, &after), 0);
				pool_provide_undo(P, bgid,
						  after.available - (existed ? before.available : 0),
						  !existed);
				m.held -= g->n - saved.n;
				g->kind = saved.kind;
				g->st = saved.st;
				g->n = saved.n;
			}
		} else if (op < 34) {
			int32_t n = (int32_t)(1 + below(below(4) ? 8 : 400));
			want = m_remove(&m, bgid, n);
			got = pool_remove(P, &(struct pool_remove){ .nbufs = n, .bgid = bgid });
		} else if (op < 60) {
			want = m_select(&m, bgid, &mb);
			got = pool_select(P, bgid, &b);
			if (!got && !want)
				cr_assert(b.addr == mb.addr && b.len == mb.len && b.bid == mb.bid &&
					  b.bgid == mb.bgid, "step %u: selected another buffer", step);
		} else if (op < 88) {
			if (!m.nout)
				continue;
			int back = op < 74;
			b = m_return(&m, below((uint32_t)m.nout), back);
			if (back)
				pool_putback(P, &b);
			else
				pool_consume(P, &b);
			got = want = 0;
		} else if (op < 92) {
			/* requests that fail prep leave everything as it was */
			struct pool_provide r = { .addr = 0x1000, .len = 8, .nbufs = 1, .bgid = bgid };
			switch (below(4)) {
			case 0: r.len = 0; want = -EINVAL; break;
			case 1: r.nbufs = 0; want = -E2BIG; break;
			case 2: r.off = 65536; want = -E2BIG; break;
			default: r.ioprio = 1; want = -EINVAL; break;
			}
			got = pool_provide(P, &r);
			if (below(2)) {
				cr_assert_eq(got, want);
				got = pool_remove(P, &(struct pool_remove){ .nbufs = 1, .bgid = bgid, .len = 1 });
				want = -EINVAL;
			}
		} else if (op < 96) {
			want = m_ring_register(&m, bgid);
			got = pool_ring_register(P, bgid);
		} else {
			m_ring_unregister(&m, bgid);
			pool_ring_unregister(P, bgid);
			got = want = 0;
		}
		cr_assert_eq(got, want, "step %u op %u bgid %u", step, op, bgid);
		cr_assert_eq(pool_check(P), 0, "step %u", step);
		m_compare(&m, step % 1000 == 0, step);
	}
	m_compare(&m, 1, 100000);
	for (int i = 0; i < NIDS; i++)
		free(m.g[i].q);
	free(m.out);
}

/* Allocation failure: an allocator that fails from its n-th call on, and
 * counts what is still allocated so that a leak on a failure path shows
 * without LeakSanitizer. */

struct failer {
	long left;	/* allocations that still succeed; < 0: all of them */
	long calls;
	long live;	/* allocated and not yet freed: 0 after pool_destroy */
};

static void *fail_alloc(void *ctx, size_t size)
{
	struct failer *f = ctx;
	f->calls++;
	if (!f->left)
		return NULL;
	if (f->left > 0)
		f->left--;
	void *ptr = malloc(size);
	f->live += ptr != NULL;
	return ptr;
}

static void fail_free(void *ctx, void *ptr, size_t size)
{
	struct failer *f = ctx;
	(void)size;
	f->live -= ptr != NULL;
	free(ptr);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	for (int k = 0; k < 8; k++) {
		h ^= (v >> (8 * k)) & 0xff;
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint64_t mix_group(uint64_t h, const struct group *g)
{
	const uint64_t f[] = { g->bgid, g->kind, g->count, g->in_use, g->peak_in_use,
			       g->provided, g->removed, g->selected, g->returned,
			       g->consumed, g->enobufs };
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		h = mix(h, f[i]);
	for (uint32_t i = 0; i < g->count; i++) {
		const struct pool_slot *s = &g->slots[(g->head + i) & (g->cap - 1)];
		h = mix(mix(mix(h, s->addr), s->len), s->bid);
	}
	return h;
}

/* FNV-1a over everything a program or preload/ can observe, skipping one id
 * (skip < 0: none); capacity is not observable and is left out. */
static uint64_t digest(const struct pool *p, int skip)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (uint32_t d = 0; d < TABLE_FAN; d++) {
		const struct table_chunk *c = p->dir[d];
		for (uint32_t i = 0; c && i < TABLE_FAN; i++)
			if (c->g[i] && (int)c->g[i]->bgid != skip)
				h = mix_group(h, c->g[i]);
	}
	return h;
}

struct script {
	struct pool *p;
	struct pool_buf held[64];
	int nheld;
	int enomem;
};

static void s_provide(struct script *s, uint16_t bgid, int32_t n)
{
	struct pool_group_stats st;
	int was_legacy = pool_group_stats(s->p, bgid, &st) == 0;
	uint64_t all = digest(s->p, -1), others = digest(s->p, bgid);
	int ret = pool_provide(s->p, &(struct pool_provide){
		.addr = 0x10000, .len = 64, .nbufs = n, .bgid = bgid });
	cr_assert_eq(pool_check(s->p), 0);
	if (ret != -ENOMEM) {
		cr_assert(ret == 0 || ret == -EOVERFLOW, "provide: %d", ret);
		return;
	}
	s->enomem++;
	/* The one change allowed: a group this request created stays, empty. */
	if (!was_legacy && pool_group_stats(s->p, bgid, &st) == 0) {
		cr_assert_eq(st.available, 0);
		cr_assert_eq(st.provided, 0);
		cr_assert_eq(digest(s->p, bgid), others);
	} else {
		cr_assert_eq(digest(s->p, -1), all);
	}
}

static void s_take(struct script *s, uint16_t bgid)
{
	struct pool_buf b;
	int ret = pool_select(s->p, bgid, &b);
	cr_assert(ret == 0 || ret == -ENOBUFS);
	if (!ret)
		s->held[s->nheld++] = b;
	cr_assert_eq(pool_check(s->p), 0);
}

static void s_back(struct script *s, int consume)
{
	if (!s->nheld)
		return;
	struct pool_buf b = s->held[--s->nheld];
	if (consume)
		pool_consume(s->p, &b);
	else
		pool_putback(s->p, &b);
	cr_assert_eq(pool_check(s->p), 0);
}

static void s_remove(struct script *s, uint16_t bgid, int32_t n)
{
	int ret = pool_remove(s->p, &(struct pool_remove){ .nbufs = n, .bgid = bgid });
	/* After an earlier failure the id may be missing or a ring. */
	cr_assert(ret >= 0 || ret == -ENOENT || ret == -EINVAL, "remove: %d", ret);
	cr_assert_eq(pool_check(s->p), 0);
}

static void s_ring(struct script *s, uint16_t bgid, int reg)
{
	uint64_t all = digest(s->p, -1);
	if (reg) {
		int ret = pool_ring_register(s->p, bgid);
		cr_assert(ret == 0 || ret == -EEXIST || ret == -ENOMEM, "register: %d", ret);
		if (ret == -ENOMEM) {
			s->enomem++;
			cr_assert_eq(digest(s->p, -1), all);
		}
	} else {
		pool_ring_unregister(s->p, bgid);
	}
	cr_assert_eq(pool_check(s->p), 0);
}

/* Touches every allocation site: a new chunk, a new group, growth, growth on
 * an existing chunk, shrinking, a ring on a new id, a ring over an emptied
 * group, a group reborn with buffers still out. */
static void run_script(struct script *s)
{
	s_provide(s, 1, 3);
	s_provide(s, 1, 40);
	s_provide(s, 2, 1);
	s_provide(s, 700, 5);
	for (int i = 0; i < 10; i++)
		s_take(s, 1);
	s_back(s, 0);
	s_back(s, 1);
	s_remove(s, 1, 30);
	s_ring(s, 900, 1);
	s_take(s, 2);
	s_ring(s, 2, 1);
	s_ring(s, 2, 0);
	s_provide(s, 2, 2);
	s_back(s, 0);
	s_take(s, 700);
	s_ring(s, 700, 1);
	s_remove(s, 700, 10);
	s_ring(s, 700, 1);
	s_ring(s, 700, 0);
	s_provide(s, 700, 100);
	while (s->nheld)
		s_back(s, s->nheld & 1);
	s_remove(s, 700, 100);
	s_ring(s, 900, 0);
}

Test(pool, every_allocation_failure_reports_enomem_and_keeps_the_pool_whole)
{
	struct failer f = { .left = -1 };
	struct pool_allocator a = { .alloc = fail_alloc, .free = fail_free, .ctx = &f };
	struct script s = { 0 };
	cr_assert_eq(pool_create_with(&s.p, &a), 0);
	run_script(&s);
	pool_destroy(s.p);
	cr_assert_eq(f.live, 0, "everything allocated was freed");
	long total = f.calls;
	cr_assert_eq(s.enomem, 0);
	cr_assert_gt(total, 8);

	int failures = 0;
	for (long n = 0; n <= total; n++) {
		f = (struct failer){ .left = n };
		s = (struct script){ 0 };
		if (pool_create_with(&s.p, &a)) {
			cr_assert_eq(n, 0, "only the first allocation is the pool's");
			continue;
		}
		run_script(&s);
		failures += s.enomem;
		pool_destroy(s.p);
		cr_assert_eq(f.live, 0, "failing at allocation %ld leaked", n);
	}
	cr_assert_gt(failures, 0);
}

/* ---- the rules of the kernels before 5.18 (POOL_NEWEST_FIRST) ------------ */

static void fresh_newest(void)
{
	fresh();
	pool_set_legacy_rules(P, POOL_NEWEST_FIRST);
}

TestSuite(newest, .init = fresh_newest, .fini = done);

static void takes(uint16_t bgid, const uint16_t *bids, int n)
{
	for (int i = 0; i < n; i++)
		cr_assert_eq(take(bgid).bid, bids[i], "selection %d", i);
	struct pool_buf b;
	cr_assert_eq(select_ret(bgid, &b), -ENOBUFS);
}

/* 5.10: the group's first buffer is the list head; selection takes the
 * list's last entry, the head only when the list is empty. */
Test(newest, selection_takes_the_newest_and_the_first_buffer_last)
{
	cr_assert_eq(provide(1, 0x1000, 8, 4, 0), 0);
	cr_assert_eq(provide(1, 0x2000, 8, 2, 10), 0);
	const uint16_t order[] = { 11, 10, 3, 2, 1, 0 };
	takes(1, order, 6);
}

Test(newest, an_emptied_group_ends_until_provided_again)
{
	cr_assert_eq(provide(1, 0x1000, 8, 1, 0), 0);
	(void)take(1);
	cr_assert_eq(remove_n(1, 1), -ENOENT, "emptied by a selection");
	cr_assert_eq(provide(1, 0x1000, 8, 2, 0), 0);
	cr_assert_eq(remove_n(1, 5), 2);
	cr_assert_eq(remove_n(1, 1), -ENOENT, "emptied by a removal");
	cr_assert_eq(provide(1, 0x1000, 8, 1, 7), 0);
	const uint16_t order[] = { 7 };
	takes(1, order, 1);
}

/* __io_remove_buffers: the list's entries from its front, the head last. */
Test(newest, removal_takes_the_oldest_after_the_first_buffer)
{
	cr_assert_eq(provide(1, 0x1000, 8, 4, 0), 0);
	cr_assert_eq(provide(1, 0x2000, 8, 2, 10), 0);
	cr_assert_eq(remove_n(1, 2), 2);
	const uint16_t order[] = { 11, 10, 3, 0 };
	takes(1, order, 4);
}

Test(newest, a_removal_undone_puts_every_buffer_back_in_place)
{
	cr_assert_eq(provide(1, 0x1000, 8, 4, 0), 0);
	struct pool_kept kept;
	struct pool_remove r = { .nbufs = 2, .bgid = 1 };
	cr_assert_eq(pool_remove_kept(P, &r, &kept), 2);
	checked();
	pool_remove_undo(P, &kept);
	checked();
	const uint16_t order[] = { 3, 2, 1, 0 };
	takes(1, order, 4);
}

Test(newest, a_put_back_buffer_is_the_next_selected)
{
	cr_assert_eq(provide(1, 0x1000, 8, 3, 0), 0);
	struct pool_buf a = take(1);
	cr_assert_eq(a.bid, 2);
	putback(&a);
	const uint16_t order[] = { 2, 1, 0 };
	takes(1, order, 3);
}

/* A request only FIFO kernels have (multishot, bundles, SEND,
 * READ_MULTISHOT) selects as they do, on the same group, and its put-back
 * buffer returns to where it was taken from. */
Test(newest, a_request_of_the_newer_kernels_takes_the_oldest)
{
	cr_assert_eq(provide(1, 0x1000, 8, 4, 0), 0);
	struct pool_buf a;
	cr_assert_eq(pool_select_how(P, 1, &a, POOL_SEL_OLDEST), 0);
	checked();
	cr_assert_eq(a.bid, 0);
	struct pool_buf h;
	cr_assert_eq(pool_head_how(P, 1, &h, POOL_SEL_OLDEST), 0);
	cr_assert_eq(h.bid, 1);
	cr_assert_eq(pool_head(P, 1, &h), 0);
	cr_assert_eq(h.bid, 3);
	putback(&a);
	const uint16_t order[] = { 3, 2, 1, 0 };
	takes(1, order, 4);
}
