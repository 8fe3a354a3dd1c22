/*
 * The shadow ring's memory: one memfd that holds the SQ and CQ ring fields
 * (one region, as with IORING_FEAT_SINGLE_MMAP) followed by the SQE array.
 * The program maps it through its ring fd; bufsel maps it once.  The layout
 * follows the kernel's idea (head and tail on their own cache lines) but the
 * program learns every offset from io_uring_params, so nothing depends on it.
 */
#ifndef BUFSEL_PRELOAD_SHADOW_H
#define BUFSEL_PRELOAD_SHADOW_H

#include <linux/io_uring.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct shadow_layout {
	uint32_t sq_head, sq_tail, cq_head, cq_tail;
	uint32_t sq_mask, cq_mask, sq_entries, cq_entries;
	uint32_t sq_dropped, sq_flags, cq_flags, cq_overflow;
	uint32_t cqes, sq_array;
	uint32_t sq_waiters;	/* bufsel's: threads in IORING_ENTER_SQ_WAIT (not told to the program) */
	/* Bytes at the start of the rings region that are not the memfd's but
	 * the real ring's first page, which holds the kernel's SQ flags word
	 * (sq_flags then points into it): 0, or one page. */
	uint32_t real_page;
	bool no_sqarray;	/* IORING_SETUP_NO_SQARRAY: the program's SQE for head is slot head & mask */
	size_t rings_len;	/* the region at IORING_OFF_SQ_RING (= CQ_RING) */
	size_t sqes_off;	/* where the SQE array starts in the memfd */
	size_t sqes_len;
	size_t total_len;
};

#define SHADOW_VIEWS 4

struct shadow {
	struct shadow_layout lay;
	void *mem;		/* bufsel's mapping of the whole memfd */
	_Atomic uint32_t *sq_head, *sq_tail, *sq_flags, *sq_dropped, *sq_array;
	_Atomic uint32_t *cq_head, *cq_tail, *cq_overflow, *cq_flags, *sq_waiters;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
	uint32_t sq_mask, cq_mask, sq_entries, cq_entries;
	unsigned long mem_ino;	/* the memfd's inode (0: unknown) and device, */
	unsigned long mem_dev;	/* by which /proc/self/maps shows the program's
				 * mappings (an inode number alone is only
				 * unique on its device) */
	/* The program's last SHADOW_VIEWS mappings of it, as made: one that is
	 * still there as made proves the program maps the shadow without a
	 * read of the whole maps file (shadow_mapped_elsewhere). */
	struct {
		_Atomic uintptr_t start, end;
	} views[SHADOW_VIEWS];
	atomic_uint nviews;
};

/* Computes the layout for a ring of the given (power of two) sizes. */
void shadow_layout_init(struct shadow_layout *l, uint32_t sq_entries, uint32_t cq_entries,
			size_t page);

/* Moves every field a page on and puts sq_flags at real_flags_off of the
 * real ring's first page, which the program's view maps there instead of
 * the memfd's (ring.h, flags_shared). */
void shadow_layout_share_flags(struct shadow_layout *l, uint32_t real_flags_off, size_t page);

/* Fills the program's sq_off/cq_off from the layout. */
void shadow_fill_offsets(const struct shadow_layout *l, struct io_sqring_offsets *so,
			 struct io_cqring_offsets *co);

/* Is a shadow's memfd mapped anywhere in the process but at bufsel's own
 * mapping of it, sh->mem (the program's mappings)?  1, 0, or -errno when
 * /proc/self/maps cannot tell. */
int shadow_mapped_elsewhere(const struct shadow *sh);

/* The program mapped [start, end) of the shadow (map_shadow_part). */
void shadow_note_view(struct shadow *sh, uintptr_t start, uintptr_t end);

/* Is one of the program's views noted still mapped as made?  1, or 0 when
 * none is (or the system does not say: /proc/self/map_files needs
 * CAP_CHECKPOINT_RESTORE), which shadow_mapped_elsewhere then asks the maps
 * file about. */
int shadow_view_intact(const struct shadow *sh);

/* The same question for n shadows at once, with one read of the maps file:
 * fills each elsewhere; 0 or -errno (then none of them can tell). */
struct shadow_query {
	const void *mem;
	unsigned long ino, dev;	/* as fstat gives them */
	int elsewhere;
};
int shadow_mapped_elsewhere_n(struct shadow_query *q, unsigned n);

/* Points the shadow's fields into mem and writes the constant ones; with a
 * real page, sq_flags is left for the caller to point at the real word. */
void shadow_attach(struct shadow *s, const struct shadow_layout *l, void *mem);

/* Where a program's mmap at io_uring offset `off` of length len lands in the
 * memfd: 0 with *memoff set, or -EINVAL as the kernel would answer. */
int shadow_map_offset(const struct shadow_layout *l, uint64_t off, size_t len, size_t *memoff);

/* Invariants of a live shadow (debug builds and tests). */
int shadow_check(const struct shadow *s);

#endif
