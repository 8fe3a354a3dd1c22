/*
 * bufsel's own heap memory for its rings: the request table, held chains,
 * the msghdr copies, the queue of CQEs bufsel makes, and (through
 * heap_pool_allocator) the buffer pools.  All of it goes through here so
 * that the fail_alloc knob can fail exactly one of these allocations and a
 * test can see that every such failure becomes a clean error for the
 * program: a CQE with an error, never a lost one, a crash or a leak.
 *
 * It is not libc's malloc: these allocations happen in the SIGSYS handler,
 * which may have interrupted the program inside malloc (a signal handler
 * that submits with an inline io_uring_enter is async-signal-safe natively).
 * So the allocator is bufsel's own, lock-free and reentrant: power-of-two
 * size classes, each a Treiber stack of free blocks whose head carries a
 * generation tag against ABA, carved from mappings that are never returned
 * (a ring's teardown feeds the next ring's setup, so usage stays flat);
 * blocks above the largest class are mappings of their own.
 *
 * No dependency on the rest of preload/ (the unit tests link it without
 * sys.o): init.c hands it the knob, how to report a failure, and bufsel's
 * non-trapping mmap; until then it maps with libc's mmap.
 */
#ifndef BUFSEL_PRELOAD_HEAP_H
#define BUFSEL_PRELOAD_HEAP_H

#include <stddef.h>

#include "pool/alloc.h"

/* fail_at: the allocation to fail, counted from 1 (0: none); report is
 * called when it fails, with its number and what it was for. */
void heap_inject(unsigned long fail_at, void (*report)(unsigned long n, const char *what));

/* How the heap gets and returns memory: map returns NULL on failure. */
struct heap_mapper {
	void *(*map)(size_t len);
	void (*unmap)(void *p, size_t len);
};
void heap_set_mapper(const struct heap_mapper *m);

void *heap_malloc(size_t size, const char *what);
void *heap_calloc(size_t n, size_t size, const char *what);
/* Contents kept up to the smaller size; on failure p is untouched. */
void *heap_realloc(void *p, size_t size, const char *what);
/* p may be NULL.  Only for memory from the three above. */
void heap_free(void *p);

/* Counts one allocation made elsewhere (a ring's arena) as the knob counts
 * its own: 1 if it is the one to fail. */
int heap_fail_now(const char *what);

/* For pool_create_with: the pools' memory, counted the same way. */
extern const struct pool_allocator heap_pool_allocator;

#endif
