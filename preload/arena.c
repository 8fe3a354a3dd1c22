#include "preload/arena.h"

#include <stdatomic.h>

#include "preload/spin.h"

#define ARENA_MAGIC	0xa7e5a11cu
#define BLOCK_MAGIC	0xb10c5a7eu
#define CLASS_MIN	5		/* 32 bytes, header included */
#define CLASS_MAX	40		/* more than any region */

struct block {
	uint32_t magic;
	uint32_t cls;
	struct block *next;	/* on its class's free list; unused while handed out */
};
_Static_assert(sizeof(struct block) == 16, "the header keeps 16-byte alignment");

struct arena {
	uint32_t magic;
	struct spin lock;
	size_t len;		/* of the whole region */
	size_t top;		/* offset of the first byte never carved */
	size_t in_use;
	struct block *free[CLASS_MAX + 1];
};

#define HEADER_LEN	((sizeof(struct arena) + 15) & ~(size_t)15)

struct arena *arena_init(void *base, size_t len)
{
	if (!base || len < HEADER_LEN + ((size_t)1 << CLASS_MIN))
		return NULL;
	struct arena *a = base;
	/* The region is a fresh mapping: zero already, nothing else to clear. */
	a->magic = ARENA_MAGIC;
	a->lock.shared = 1;
	a->len = len;
	a->top = HEADER_LEN;
	return a;
}

static unsigned class_of(size_t total)
{
	unsigned c = CLASS_MIN;
	while (c < CLASS_MAX && ((size_t)1 << c) < total)
		c++;
	return c;
}

void *arena_alloc(struct arena *a, size_t size)
{
	if (!a || size > ((size_t)1 << (CLASS_MAX - 1)))
		return NULL;
	unsigned cls = class_of(size + sizeof(struct block));
	size_t bs = (size_t)1 << cls;
	struct block *b = NULL;
	spin_lock(&a->lock);
	if (a->free[cls]) {
		b = a->free[cls];
		a->free[cls] = b->next;
	} else if (bs <= a->len - a->top) {
		/* Carved on demand: the pages behind it are touched only now. */
		b = (struct block *)((char *)a + a->top);
		a->top += bs;
	}
	if (b) {
		b->magic = BLOCK_MAGIC;
		b->cls = cls;
		b->next = NULL;
		a->in_use += bs;
	}
	spin_unlock(&a->lock);
	return b ? b + 1 : NULL;
}

void arena_free(struct arena *a, void *p)
{
	if (!a || !p)
		return;
	struct block *b = (struct block *)p - 1;
	/* Not a block of this arena: a bug in bufsel; leaking it beats
	 * corrupting a free list every process of the ring shares. */
	if ((char *)b < (char *)a + HEADER_LEN || (char *)b >= (char *)a + a->len || b->magic != BLOCK_MAGIC ||
	    b->cls < CLASS_MIN || b->cls > CLASS_MAX)
		return;
	spin_lock(&a->lock);
	b->magic = 0;
	b->next = a->free[b->cls];
	a->free[b->cls] = b;
	a->in_use -= (size_t)1 << b->cls;
	spin_unlock(&a->lock);
}

size_t arena_in_use(const struct arena *a)
{
	return a ? a->in_use : 0;
}

size_t arena_carved(const struct arena *a)
{
	return a ? a->top : 0;
}

static int (*_Atomic fail_hook)(const char *what);

void arena_set_fail_hook(int (*fail)(const char *what))
{
	atomic_store(&fail_hook, fail);
}

static void *pool_alloc_fn(void *ctx, size_t size)
{
	int (*fail)(const char *) = atomic_load(&fail_hook);
	if (fail && fail("buffer pool"))
		return NULL;
	return arena_alloc(ctx, size);
}

static void pool_free_fn(void *ctx, void *ptr, size_t size)
{
	(void)size;
	arena_free(ctx, ptr);
}

struct pool_allocator arena_pool_allocator(struct arena *a)
{
	return (struct pool_allocator){ pool_alloc_fn, pool_free_fn, a };
}
