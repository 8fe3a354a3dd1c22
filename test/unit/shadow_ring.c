/*
 * The shadow ring without a kernel: layout and offsets as a program reads
 * them, and the SQE and CQE copy paths run against a fake "real" ring in
 * plain memory, with the kernel's side played by the test.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "preload/shadow/ring.h"
#include "preload/shadow/ring_io.h"
#include "preload/shadow/shadow.h"

struct fake {
	struct ring r;
	unsigned rsq_head, rsq_tail, rsq_flags, rcq_head, rcq_tail, rcq_overflow, rcq_flags;
	unsigned rsq_array[64];
	struct io_uring_sqe rsqes[64];
	struct io_uring_cqe rcqes[128];
	void *mem;
};

static struct fake *fake_ring(unsigned sq, unsigned cq, unsigned setup_flags)
{
	struct fake *f = calloc(1, sizeof(*f));
	struct shadow_layout lay;
	shadow_layout_init(&lay, sq, cq, 4096);
	f->mem = aligned_alloc(4096, lay.total_len);
	memset(f->mem, 0, lay.total_len);
	f->r.sh.sq_entries = sq;
	f->r.sh.cq_entries = cq;
	shadow_attach(&f->r.sh, &lay, f->mem);
	f->r.setup_flags = setup_flags;
	f->r.rsq_head = (void *)&f->rsq_head;
	f->r.rsq_tail = (void *)&f->rsq_tail;
	f->r.rsq_flags = (void *)&f->rsq_flags;
	f->r.rsq_array = (void *)f->rsq_array;
	f->r.rsq_mask = sq - 1;
	f->r.rsq_entries = sq;
	f->r.rsqes = f->rsqes;
	f->r.rcq_head = (void *)&f->rcq_head;
	f->r.rcq_tail = (void *)&f->rcq_tail;
	f->r.rcq_overflow = (void *)&f->rcq_overflow;
	f->r.rcq_flags = (void *)&f->rcq_flags;
	/* A real CQ larger than the shadow stands in for the kernel's overflow
	 * list, so tests can queue more than the shadow holds. */
	f->r.rcq_mask = 2 * cq - 1;
	f->r.rcq_entries = 2 * cq;
	f->r.rcqes = f->rcqes;
	f->r.cq_from_real = calloc(cq, 1);
	f->r.x = calloc(1, sizeof(*f->r.x));
	return f;
}

static void fake_free(struct fake *f)
{
	free(f->r.cq_from_real);
	free(f->r.x);
	free(f->mem);
	free(f);
}

/* What a program does: fill SQE slot idx, publish it through the array. */
static void prog_push(struct fake *f, unsigned idx, uint64_t ud)
{
	struct shadow *s = &f->r.sh;
	unsigned tail = atomic_load(s->sq_tail);
	memset(&s->sqes[idx], 0, sizeof(s->sqes[idx]));
	s->sqes[idx].opcode = IORING_OP_NOP;
	s->sqes[idx].user_data = ud;
	s->sq_array[tail & s->sq_mask] = idx;
	atomic_store(s->sq_tail, tail + 1);
}

static void kernel_post(struct fake *f, uint64_t ud, int res, unsigned flags)
{
	struct io_uring_cqe *c = &f->rcqes[f->rcq_tail & f->r.rcq_mask];
	c->user_data = ud;
	c->res = res;
	c->flags = flags;
	f->rcq_tail++;
}

Test(shadow_layout, offsets_fit_and_do_not_overlap)
{
	for (unsigned sq = 1; sq <= 32768; sq <<= 1) {
		unsigned cq = sq * 2;
		struct shadow_layout l;
		struct io_sqring_offsets so;
		struct io_cqring_offsets co;
		shadow_layout_init(&l, sq, cq, 4096);
		shadow_fill_offsets(&l, &so, &co);
		/* What liburing maps, from the offsets alone. */
		size_t sq_sz = so.array + sq * sizeof(unsigned);
		size_t cq_sz = co.cqes + cq * sizeof(struct io_uring_cqe);
		cr_assert_leq(sq_sz, l.rings_len);
		cr_assert_leq(cq_sz, l.rings_len);
		cr_assert_eq(l.sqes_off % 4096, 0);
		cr_assert_geq(l.sqes_off, l.rings_len);
		cr_assert_geq(l.total_len, l.sqes_off + sq * sizeof(struct io_uring_sqe));
		cr_assert_geq(so.array, co.cqes + cq * sizeof(struct io_uring_cqe), "array after the CQEs");
		cr_assert_eq(co.cqes % 64, 0);
		cr_assert_neq(so.head / 64, so.tail / 64, "SQ head and tail share a cache line");
		cr_assert_neq(co.head / 64, co.tail / 64, "CQ head and tail share a cache line");
		cr_assert_neq(co.flags, 0, "liburing reads cq flags only when the offset is non-zero");
	}
}

/* A ring whose SQ flags word is the kernel's: the flags offset lies in the
 * first page (the real ring's), every other field past it. */
Test(shadow_layout, shared_flags_page_holds_only_the_flags)
{
	for (unsigned sq = 1; sq <= 32768; sq <<= 1) {
		unsigned cq = sq * 2;
		struct shadow_layout l, plain;
		struct io_sqring_offsets so;
		struct io_cqring_offsets co;
		shadow_layout_init(&plain, sq, cq, 4096);
		shadow_layout_init(&l, sq, cq, 4096);
		shadow_layout_share_flags(&l, 276, 4096);
		shadow_fill_offsets(&l, &so, &co);
		cr_assert_eq(so.flags, 276);
		cr_assert_eq(l.real_page, 4096);
		uint32_t others[] = { so.head, so.tail, so.ring_mask, so.ring_entries, so.dropped,
				      so.array, co.head, co.tail, co.ring_mask, co.ring_entries,
				      co.overflow, co.cqes, co.flags, l.sq_waiters };
		for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
			cr_assert_geq(others[i], 4096, "field %zu in the real ring's page", i);
		cr_assert_eq(co.cqes, plain.cqes + 4096);
		size_t sq_sz = so.array + sq * sizeof(unsigned);
		size_t cq_sz = co.cqes + cq * sizeof(struct io_uring_cqe);
		cr_assert_leq(sq_sz, l.rings_len);
		cr_assert_leq(cq_sz, l.rings_len);
		cr_assert_eq(l.sqes_off % 4096, 0);
		cr_assert_geq(l.sqes_off, l.rings_len);
		cr_assert_eq(l.total_len - l.sqes_off, plain.total_len - plain.sqes_off);
	}
}

Test(shadow_layout, mmap_offsets_answer_like_the_kernel)
{
	struct shadow_layout l;
	size_t off = 99;
	shadow_layout_init(&l, 8, 16, 4096);
	cr_assert_eq(shadow_map_offset(&l, IORING_OFF_SQ_RING, l.rings_len, &off), 0);
	cr_assert_eq(off, 0);
	cr_assert_eq(shadow_map_offset(&l, IORING_OFF_CQ_RING, l.rings_len, &off), 0);
	cr_assert_eq(off, 0, "CQ ring is the same memory (SINGLE_MMAP)");
	cr_assert_eq(shadow_map_offset(&l, IORING_OFF_SQES, 8 * 64, &off), 0);
	cr_assert_eq(off, l.sqes_off);
	cr_assert_eq(shadow_map_offset(&l, IORING_OFF_SQ_RING, l.sqes_off + 1, &off), -EINVAL);
	cr_assert_eq(shadow_map_offset(&l, IORING_OFF_SQES, l.total_len, &off), -EINVAL);
	cr_assert_eq(shadow_map_offset(&l, 0x1000, 4096, &off), -EINVAL);
}

Test(shadow_layout, attach_writes_masks_and_entries)
{
	struct fake *f = fake_ring(8, 16, 0);
	struct io_sqring_offsets so;
	struct io_cqring_offsets co;
	shadow_fill_offsets(&f->r.sh.lay, &so, &co);
	char *m = f->mem;
	cr_assert_eq(*(unsigned *)(m + so.ring_mask), 7);
	cr_assert_eq(*(unsigned *)(m + so.ring_entries), 8);
	cr_assert_eq(*(unsigned *)(m + co.ring_mask), 15);
	cr_assert_eq(*(unsigned *)(m + co.ring_entries), 16);
	cr_assert_eq(shadow_check(&f->r.sh), 0);
	fake_free(f);
}

Test(submit, copies_in_array_order_and_rolls_back_what_the_kernel_left)
{
	struct fake *f = fake_ring(8, 16, 0);
	prog_push(f, 5, 100);
	prog_push(f, 2, 101);
	prog_push(f, 7, 102);
	struct submit_batch b;
	submit_prepare(&f->r, 3, &b);
	cr_assert_eq(b.copied, 3);
	cr_assert_eq(f->rsq_tail, 3);
	cr_assert_eq(f->rsqes[f->rsq_array[0]].user_data, 100);
	cr_assert_eq(f->rsqes[f->rsq_array[1]].user_data, 101);
	cr_assert_eq(f->rsqes[f->rsq_array[2]].user_data, 102);
	/* The kernel takes two of three. */
	f->rsq_head = 2;
	submit_finish(&f->r, &b, 2);
	cr_assert_eq(f->rsq_tail, 2, "real tail rolled back to what was taken");
	cr_assert_eq(atomic_load(f->r.sh.sq_head), 2, "shadow head advanced by what was taken");
	/* The third is offered again next time. */
	submit_prepare(&f->r, 1, &b);
	cr_assert_eq(b.copied, 1);
	cr_assert_eq(f->rsqes[f->rsq_array[2]].user_data, 102);
	fake_free(f);
}

Test(submit, to_submit_limits_the_batch_and_an_invalid_index_is_dropped_once)
{
	struct fake *f = fake_ring(4, 8, 0);
	prog_push(f, 0, 1);
	prog_push(f, 9, 2);	/* out of range: the kernel counts it in sq.dropped */
	prog_push(f, 1, 3);
	struct submit_batch b;
	submit_prepare(&f->r, 1, &b);
	cr_assert_eq(b.copied, 1);
	cr_assert_eq(b.dropped, 0);
	f->rsq_head = 1;
	submit_finish(&f->r, &b, 1);
	submit_prepare(&f->r, 2, &b);
	cr_assert_eq(b.copied, 0);
	cr_assert_eq(b.dropped, 1);
	submit_finish(&f->r, &b, 0);
	cr_assert_eq(atomic_load(f->r.sh.sq_dropped), 1);
	cr_assert_eq(atomic_load(f->r.sh.sq_head), 2, "the invalid entry is consumed");
	submit_prepare(&f->r, 1, &b);
	cr_assert_eq(b.copied, 1);
	cr_assert_eq(f->rsqes[f->rsq_array[1]].user_data, 3);
	fake_free(f);
}

Test(submit, sqpoll_publishes_everything_and_consumes_at_once)
{
	struct fake *f = fake_ring(4, 8, IORING_SETUP_SQPOLL);
	prog_push(f, 0, 1);
	prog_push(f, 1, 2);
	struct submit_batch b;
	submit_prepare(&f->r, 0, &b);
	cr_assert_eq(b.copied, 2, "an SQPOLL kernel ignores to_submit");
	cr_assert_eq(atomic_load(f->r.sh.sq_head), 2);
	/* The SQ thread has not consumed anything: only two slots are free. */
	for (unsigned i = 0; i < 3; i++)
		prog_push(f, i, 10 + i);
	submit_prepare(&f->r, 3, &b);
	cr_assert_eq(b.copied, 2, "never overwrite a slot the kernel has not read");
	cr_assert_eq(atomic_load(f->r.sh.sq_head), 4);
	fake_free(f);
}

Test(complete, moves_what_fits_and_flags_the_rest)
{
	struct fake *f = fake_ring(4, 8, 0);
	for (unsigned i = 0; i < 11; i++)
		kernel_post(f, 1000 + i, (int)i, i & 1);
	cr_assert_eq(complete_reap(&f->r), 8);
	cr_assert_eq(complete_ready(&f->r), 8);
	cr_assert_eq(f->rcq_head, 0,
		     "a moved CQE keeps its real slot until the program consumes it, "
		     "so the kernel's CQ overflows where the program's would");
	unsigned flags = atomic_load(f->r.sh.sq_flags);
	cr_assert(flags & IORING_SQ_CQ_OVERFLOW, "the backlog must be visible");
	for (unsigned i = 0; i < 8; i++) {
		struct io_uring_cqe *c = &f->r.sh.cqes[i];
		cr_assert_eq(c->user_data, 1000 + i);
		cr_assert_eq(c->res, (int)i);
		cr_assert_eq(c->flags, i & 1);
	}
	/* The program reaps five; the backlog drains in order. */
	atomic_store(f->r.sh.cq_head, 5);
	cr_assert_eq(complete_reap(&f->r), 3);
	cr_assert_eq(f->rcq_head, 5, "the five consumed are given back, no more");
	cr_assert_eq(f->r.sh.cqes[8 & 7].user_data, 1008);
	cr_assert_eq(f->r.sh.cqes[10 & 7].user_data, 1010);
	cr_assert_eq(atomic_load(f->r.sh.sq_flags) & IORING_SQ_CQ_OVERFLOW, 0);
	fake_free(f);
}

Test(complete, kernel_overflow_counter_and_cq_flags_are_mirrored)
{
	struct fake *f = fake_ring(4, 8, IORING_SETUP_SQPOLL);
	f->rcq_overflow = 3;
	complete_reap(&f->r);
	cr_assert_eq(atomic_load(f->r.sh.cq_overflow), 3);
	cr_assert(atomic_load(f->r.sh.sq_flags) & IORING_SQ_NEED_WAKEUP);
	atomic_store(f->r.sh.cq_flags, IORING_CQ_EVENTFD_DISABLED);
	complete_sync_cq_flags(&f->r);
	cr_assert_eq(f->rcq_flags, IORING_CQ_EVENTFD_DISABLED);
	fake_free(f);
}
