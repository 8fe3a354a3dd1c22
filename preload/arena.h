/*
 * A ring's legacy buffer groups (its pool) live in an arena: a region the
 * ring maps MAP_SHARED at setup, so that a fork shares the groups as it
 * shares the kernel's ring and every process that uses the ring sees one set
 * of groups, as the kernel keeps one per ring.  The arena is at the same
 * address in every such process (a fork inherits it), so plain pointers
 * inside it stay valid in all of them.
 *
 * The caller maps the region (MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE,
 * reserved large: pages are touched, and so cost memory, only as blocks are
 * carved); the arena keeps its header at the start of it and makes no system
 * call.  Power-of-two size classes with a free list each, carved from a bump
 * pointer; freed blocks are kept for reuse in their class, and the region
 * goes away with the last process's mapping of it.  Every operation is
 * under the arena's own shared spin lock (spin.h), which no path outside the
 * arena holds: async-signal-safe, no malloc.  A full arena fails an
 * allocation (NULL), which the pool reports as -ENOMEM.
 */
#ifndef BUFSEL_PRELOAD_ARENA_H
#define BUFSEL_PRELOAD_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include "pool/alloc.h"

struct arena;

/* Sets up the region [base, base + len) (zeroed, as a fresh mapping is) as
 * an arena; NULL if it is too small for the header. */
struct arena *arena_init(void *base, size_t len);

/* NULL when the arena is full or size absurd; 16-byte aligned. */
void *arena_alloc(struct arena *a, size_t size);
/* p may be NULL; only memory from arena_alloc of the same arena. */
void arena_free(struct arena *a, void *p);

/* Bytes handed out and not freed (block sizes, headers included), and the
 * bytes carved so far (the high-water mark of touched memory). */
size_t arena_in_use(const struct arena *a);
size_t arena_carved(const struct arena *a);

/* A pool allocator over the arena; fail(what), if set, is asked first
 * (bufsel's fail_alloc knob) and a nonzero answer fails the allocation. */
struct pool_allocator arena_pool_allocator(struct arena *a);
void arena_set_fail_hook(int (*fail)(const char *what));

#endif
