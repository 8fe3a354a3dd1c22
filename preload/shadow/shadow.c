#include "preload/shadow/shadow.h"

#include <errno.h>

#define CACHELINE 64

static size_t align_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

void shadow_layout_init(struct shadow_layout *l, uint32_t sq_entries, uint32_t cq_entries,
			size_t page)
{
	*l = (struct shadow_layout){0};
	l->sq_head = 0;
	l->sq_tail = CACHELINE;
	l->cq_head = 2 * CACHELINE;
	l->cq_tail = 3 * CACHELINE;
	l->sq_mask = 4 * CACHELINE;
	l->cq_mask = l->sq_mask + 4;
	l->sq_entries = l->sq_mask + 8;
	l->cq_entries = l->sq_mask + 12;
	l->sq_dropped = l->sq_mask + 16;
	l->sq_flags = l->sq_mask + 20;
	l->cq_flags = l->sq_mask + 24;
	l->cq_overflow = l->sq_mask + 28;
	l->sq_waiters = l->sq_mask + 32;
	l->cqes = 5 * CACHELINE;
	l->sq_array = (uint32_t)align_up(l->cqes + (size_t)cq_entries * sizeof(struct io_uring_cqe),
					 CACHELINE);
	l->rings_len = l->sq_array + (size_t)sq_entries * sizeof(uint32_t);
	l->sqes_off = align_up(l->rings_len, page);
	l->sqes_len = (size_t)sq_entries * sizeof(struct io_uring_sqe);
	l->total_len = l->sqes_off + align_up(l->sqes_len, page);
}

void shadow_layout_share_flags(struct shadow_layout *l, uint32_t real_flags_off, size_t page)
{
	uint32_t *f[] = { &l->sq_head, &l->sq_tail, &l->cq_head, &l->cq_tail, &l->sq_mask,
			  &l->cq_mask, &l->sq_entries, &l->cq_entries, &l->sq_dropped,
			  &l->cq_flags, &l->cq_overflow, &l->sq_waiters, &l->cqes, &l->sq_array };
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		*f[i] += (uint32_t)page;
	l->sq_flags = real_flags_off;
	l->real_page = (uint32_t)page;
	l->rings_len += page;
	size_t sqes_pages = l->total_len - l->sqes_off;
	l->sqes_off = align_up(l->rings_len, page);
	l->total_len = l->sqes_off + sqes_pages;
}

void shadow_fill_offsets(const struct shadow_layout *l, struct io_sqring_offsets *so,
			 struct io_cqring_offsets *co)
{
	*so = (struct io_sqring_offsets){
		.head = l->sq_head, .tail = l->sq_tail, .ring_mask = l->sq_mask,
		.ring_entries = l->sq_entries, .flags = l->sq_flags,
		.dropped = l->sq_dropped, .array = l->no_sqarray ? 0 : l->sq_array,
	};
	*co = (struct io_cqring_offsets){
		.head = l->cq_head, .tail = l->cq_tail, .ring_mask = l->cq_mask,
		.ring_entries = l->cq_entries, .overflow = l->cq_overflow,
		.cqes = l->cqes, .flags = l->cq_flags,
	};
}

void shadow_attach(struct shadow *s, const struct shadow_layout *l, void *mem)
{
	char *b = mem;
	s->lay = *l;
	s->mem = mem;
	s->sq_head = (void *)(b + l->sq_head);
	s->sq_tail = (void *)(b + l->sq_tail);
	if (!l->real_page)
		s->sq_flags = (void *)(b + l->sq_flags);
	s->sq_waiters = (void *)(b + l->sq_waiters);
	s->sq_dropped = (void *)(b + l->sq_dropped);
	s->sq_array = (void *)(b + l->sq_array);
	s->cq_head = (void *)(b + l->cq_head);
	s->cq_tail = (void *)(b + l->cq_tail);
	s->cq_overflow = (void *)(b + l->cq_overflow);
	s->cq_flags = (void *)(b + l->cq_flags);
	s->cqes = (void *)(b + l->cqes);
	s->sqes = (void *)(b + l->sqes_off);
	uint32_t *mask_sq = (void *)(b + l->sq_mask), *mask_cq = (void *)(b + l->cq_mask);
	uint32_t *ent_sq = (void *)(b + l->sq_entries), *ent_cq = (void *)(b + l->cq_entries);
	*ent_sq = s->sq_entries;
	*ent_cq = s->cq_entries;
	*mask_sq = s->sq_mask = s->sq_entries - 1;
	*mask_cq = s->cq_mask = s->cq_entries - 1;
}

int shadow_map_offset(const struct shadow_layout *l, uint64_t off, size_t len, size_t *memoff)
{
	switch (off) {
	case IORING_OFF_SQ_RING:
	case IORING_OFF_CQ_RING:
		if (len > l->sqes_off)
			return -EINVAL;
		*memoff = 0;
		return 0;
	case IORING_OFF_SQES:
		if (len > l->total_len - l->sqes_off)
			return -EINVAL;
		*memoff = l->sqes_off;
		return 0;
	default:
		return -EINVAL;
	}
}

int shadow_check(const struct shadow *s)
{
	uint32_t sqh = atomic_load(s->sq_head), sqt = atomic_load(s->sq_tail);
	uint32_t cqh = atomic_load(s->cq_head), cqt = atomic_load(s->cq_tail);
	if (s->sq_entries & (s->sq_entries - 1) || s->cq_entries & (s->cq_entries - 1))
		return -EINVAL;
	/* The program may have written garbage to its tail/head; what bufsel
	 * owns must still be within one ring's worth of what the program owns. */
	if (sqt - sqh > s->sq_entries && sqh - sqt > 0x80000000u)
		return -ERANGE;
	if (cqt - cqh > s->cq_entries)
		return -ERANGE;
	return 0;
}
