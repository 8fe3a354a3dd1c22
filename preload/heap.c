#include "preload/heap.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

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

/* libc's mmap is a bare system call (no lock, no allocation): fine for the
 * unit tests; the library swaps in its trampoline's, which never traps. */
static void *libc_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	// cppcheck-suppress memleak ; MAP_FAILED is no mapping
	return p == MAP_FAILED ? NULL : p;
}

static void libc_unmap(void *p, size_t len)
{
	munmap(p, len);
}

static const struct heap_mapper libc_mapper = { libc_map, libc_unmap };
static const struct heap_mapper *_Atomic mapper = &libc_mapper;

void heap_set_mapper(const struct heap_mapper *m)
{
	atomic_store(&mapper, m ? m : &libc_mapper);
}

/*
 * Every block starts with a header, which keeps the caller's memory 16-byte
 * aligned as malloc's is: a small block's class, or a big block's mapping
 * length.  The magic catches a free of memory that is not the heap's.
 */
#define HEAP_MAGIC	0xb5f5e1a7u
#define CLASS_MIN	5		/* 32 bytes, header included */
#define CLASS_MAX	16		/* 64 KiB; larger blocks are their own mapping */
#define CLASS_BIG	0xffu
#define CARVE_LEN	(256u << 10)	/* what one refill maps */

struct block {
	uint32_t magic;
	uint32_t cls;
	size_t maplen;		/* a big block's mapping; a small one's class size */
};
_Static_assert(sizeof(struct block) == 16, "the header keeps 16-byte alignment");

/* A free block's link lives just after its header. */
struct free_block {
	struct block h;
	struct free_block *next;
};

/*
 * A stack's head: the top block's address in the low 48 bits (user space
 * addresses fit), a generation in the high 16 that every pop and push
 * changes, so a pop that read a stale next pointer cannot swing the head
 * back to a block another thread has since taken (ABA).  Free blocks are
 * never unmapped, so reading a stale block's next is harmless.
 */
#define PTR_BITS	48
#define PTR_MASK	((UINT64_C(1) << PTR_BITS) - 1)

static _Atomic uint64_t free_head[CLASS_MAX + 1];

static struct free_block *head_ptr(uint64_t h)
{
	return (struct free_block *)(uintptr_t)(h & PTR_MASK);
}

static uint64_t head_make(uint64_t old, struct free_block *b)
{
	return ((old >> PTR_BITS) + 1) << PTR_BITS | ((uintptr_t)b & PTR_MASK);
}

static void push(unsigned cls, struct free_block *b)
{
	_Atomic uint64_t *h = &free_head[cls];
	uint64_t old = atomic_load_explicit(h, memory_order_relaxed);
	do
		b->next = head_ptr(old);
	while (!atomic_compare_exchange_weak_explicit(h, &old, head_make(old, b), memory_order_release,
						      memory_order_relaxed));
}

static struct free_block *pop(unsigned cls)
{
	_Atomic uint64_t *h = &free_head[cls];
	uint64_t old = atomic_load_explicit(h, memory_order_acquire);
	struct free_block *b;
	do {
		b = head_ptr(old);
		if (!b)
			return NULL;
	} while (!atomic_compare_exchange_weak_explicit(h, &old, head_make(old, b->next), memory_order_acquire,
							memory_order_acquire));
	return b;
}

/* An empty class gets a fresh mapping cut into blocks: one is returned,
 * the rest go on the stack.  Two threads refilling at once just both do. */
static struct free_block *refill(unsigned cls)
{
	size_t bs = (size_t)1 << cls, len = CARVE_LEN > 4 * bs ? CARVE_LEN : 4 * bs;
	char *m = atomic_load(&mapper)->map(len);
	if (!m)
		return NULL;
	for (size_t off = bs; off + bs <= len; off += bs)
		push(cls, (struct free_block *)(m + off));
	return (struct free_block *)m;
}

static unsigned class_of(size_t total)
{
	unsigned c = CLASS_MIN;
	while (((size_t)1 << c) < total)
		c++;
	return c;
}

#define PAGE	4096u

static void *alloc(size_t size)
{
	if (size > SIZE_MAX / 2)
		return NULL;
	size_t total = size + sizeof(struct block);
	struct block *b;
	if (total > ((size_t)1 << CLASS_MAX)) {
		size_t len = (total + PAGE - 1) & ~(size_t)(PAGE - 1);
		if (!(b = atomic_load(&mapper)->map(len)))
			return NULL;
		*b = (struct block){ HEAP_MAGIC, CLASS_BIG, len };
	} else {
		unsigned cls = class_of(total);
		struct free_block *f = pop(cls);
		if (!f && !(f = refill(cls)))
			return NULL;
		b = &f->h;
		*b = (struct block){ HEAP_MAGIC, cls, (size_t)1 << cls };
	}
	return b + 1;
}

static struct block *header(void *p)
{
	struct block *b = (struct block *)p - 1;
	/* Not ours: a bug in bufsel, and freeing it anyway would corrupt a
	 * stack every thread shares; better to leak it. */
	return b->magic == HEAP_MAGIC ? b : NULL;
}

static size_t usable(const struct block *b)
{
	return b->maplen - sizeof(*b);
}

void heap_free(void *p)
{
	struct block *b = p ? header(p) : NULL;
	if (!b)
		return;
	if (b->cls == CLASS_BIG) {
		b->magic = 0;
		atomic_load(&mapper)->unmap(b, b->maplen);
	} else if (b->cls >= CLASS_MIN && b->cls <= CLASS_MAX) {
		b->magic = 0;
		push(b->cls, (struct free_block *)b);
	}
}

int heap_fail_now(const char *what)
{
	return injected(what);
}

void *heap_malloc(size_t size, const char *what)
{
	return injected(what) ? NULL : alloc(size);
}

void *heap_calloc(size_t n, size_t size, const char *what)
{
	if (injected(what) || (size && n > SIZE_MAX / size))
		return NULL;
	void *p = alloc(n * size);
	/* A big block is a fresh mapping, already zero. */
	if (p && header(p)->cls != CLASS_BIG)
		memset(p, 0, n * size);
	return p;
}

void *heap_realloc(void *p, size_t size, const char *what)
{
	if (injected(what))
		return NULL;
	struct block *b = p ? header(p) : NULL;
	if (b && size <= usable(b) && (b->cls == CLASS_BIG || size + sizeof(*b) > b->maplen / 2))
		return p;
	void *n = alloc(size);
	if (!n)
		return NULL;
	if (b) {
		memcpy(n, p, usable(b) < size ? usable(b) : size);
		heap_free(p);
	}
	return n;
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
	heap_free(ptr);
}

const struct pool_allocator heap_pool_allocator = { pool_alloc_fn, pool_free_fn, NULL };
