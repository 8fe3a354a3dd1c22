#include "preload/heap.h"

#include <stdatomic.h>
#include <stdlib.h>

static struct {
	unsigned long fail_at;		/* 0: never */
	atomic_ulong count;		/* allocations so far, while fail_at is set */
	void (*report)(unsigned long n, const char *what);
} heap;

void heap_inject(unsigned long fail_at, void (*report)(unsigned long n, const char *what))
{
	heap.report = report;
	heap.fail_at = fail_at;
}

/* Counting costs an atomic per allocation, so it happens only when asked for. */
static int injected(const char *what)
{
	if (!heap.fail_at || atomic_fetch_add_explicit(&heap.count, 1, memory_order_relaxed) + 1 != heap.fail_at)
		return 0;
	if (heap.report)
		heap.report(heap.fail_at, what);
	return 1;
}

void *heap_malloc(size_t size, const char *what)
{
	return injected(what) ? NULL : malloc(size);
}

void *heap_calloc(size_t n, size_t size, const char *what)
{
	return injected(what) ? NULL : calloc(n, size);
}

void *heap_realloc(void *p, size_t size, const char *what)
{
	return injected(what) ? NULL : realloc(p, size);
}

static void *pool_alloc_fn(void *ctx, size_t size)
{
	(void)ctx;
	return heap_malloc(size, "buffer pool");
}

static void pool_free_fn(void *ctx, void *ptr, size_t size)
{
	(void)ctx;
	(void)size;
	free(ptr);
}

const struct pool_allocator heap_pool_allocator = { pool_alloc_fn, pool_free_fn, NULL };
