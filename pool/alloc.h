/*
 * Where a pool's memory comes from.  For pool/, its tests and preload/heap.c
 * (bufsel's fail_alloc): a pool takes every allocation through the allocator
 * it was created with, so a test can fail the n-th one and check that the
 * pool reports -ENOMEM and stays whole.  The allocator belongs to its pool (no global hook), and is called
 * under the caller's serialisation of that pool.
 */
#ifndef BUFSEL_POOL_ALLOC_H
#define BUFSEL_POOL_ALLOC_H

#include <stddef.h>

#include "pool/pool.h"

struct pool_allocator {
	/* NULL on failure; the memory need not be zeroed. */
	void *(*alloc)(void *ctx, size_t size);
	/* ptr may be NULL; size is what alloc was asked for. */
	void (*free)(void *ctx, void *ptr, size_t size);
	void *ctx;
};

/* pool_create with a given allocator (NULL: libc).  *a is copied. */
int pool_create_with(struct pool **out, const struct pool_allocator *a);

static inline void *pool_alloc(const struct pool_allocator *a, size_t size)
{
	return a->alloc(a->ctx, size);
}

static inline void pool_free(const struct pool_allocator *a, void *ptr, size_t size)
{
	a->free(a->ctx, ptr, size);
}

#endif
