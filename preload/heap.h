/*
 * bufsel's own heap memory for its rings: the request table, held chains,
 * the msghdr copies, the queue of CQEs bufsel makes, and (through
 * heap_pool_allocator) the buffer pools.  All of it goes through here so
 * that the fail_alloc knob can fail exactly one of these allocations and a
 * test can see that every such failure becomes a clean error for the
 * program: a CQE with an error, never a lost one, a crash or a leak.
 *
 * No system call and no dependency on the rest of preload/ (the unit tests
 * link it): init.c hands it the knob and how to report a failure.
 */
#ifndef BUFSEL_PRELOAD_HEAP_H
#define BUFSEL_PRELOAD_HEAP_H

#include <stddef.h>

#include "pool/alloc.h"

/* fail_at: the allocation to fail, counted from 1 (0: none); report is
 * called when it fails, with its number and what it was for. */
void heap_inject(unsigned long fail_at, void (*report)(unsigned long n, const char *what));

void *heap_malloc(size_t size, const char *what);
void *heap_calloc(size_t n, size_t size, const char *what);
void *heap_realloc(void *p, size_t size, const char *what);

/* For pool_create_with: the pools' memory, counted the same way. */
extern const struct pool_allocator heap_pool_allocator;

#endif
