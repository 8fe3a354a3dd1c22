/*
 * preload/arena.c, the per-ring MAP_SHARED arena a ring's pool lives in:
 * sizes and alignment, reuse of freed blocks in their class, lazy carving
 * (only what was handed out is touched), a full arena failing cleanly, a
 * foreign free ignored, the fail hook, and what it exists for: a pool made
 * in it is one for a parent and its fork child, each seeing what the other
 * provides and consumes, and allocations from both processes at once stay
 * consistent under the shared lock.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pool/alloc.h"
#include "preload/arena.h"
#include "preload/spin.h"

static void *region(size_t len)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	cr_assert_neq(m, MAP_FAILED);
	return m;
}

Test(arena, sizes_alignment_and_contents)
{
	struct arena *a = arena_init(region(64 << 20), 64 << 20);
	cr_assert_not_null(a);
	static const size_t sizes[] = { 0, 1, 15, 16, 17, 100, 4080, 4096, 65536, 1 << 20 };
	void *p[sizeof(sizes) / sizeof(sizes[0])];
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		p[i] = arena_alloc(a, sizes[i]);
		cr_assert_not_null(p[i]);
		cr_assert_eq((uintptr_t)p[i] % 16, 0);
		memset(p[i], (int)i, sizes[i]);
	}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (size_t k = 0; k < sizes[i]; k++)
			cr_assert_eq(((unsigned char *)p[i])[k], (unsigned char)i);
		arena_free(a, p[i]);
	}
	cr_assert_eq(arena_in_use(a), 0);
	arena_free(a, NULL);
}

Test(arena, reuse_and_lazy_carving)
{
	struct arena *a = arena_init(region(1 << 30), 1 << 30);
	size_t start = arena_carved(a);
	void *p = arena_alloc(a, 100);
	size_t after = arena_carved(a);
	cr_assert_eq(after - start, 128, "one 128-byte block carved, not more");
	arena_free(a, p);
	cr_assert_eq(arena_alloc(a, 110), p, "a freed block is reused in its class");
	cr_assert_eq(arena_carved(a), after);
	void *q = arena_alloc(a, 3000);
	cr_assert_neq(q, p);
	cr_assert_eq(arena_in_use(a), 128 + 4096);
}

Test(arena, full_fails_cleanly)
{
	size_t len = 1 << 20;
	struct arena *a = arena_init(region(len), len);
	void *big = arena_alloc(a, 600 << 10);	/* 1 MiB class: no room */
	cr_assert_null(big);
	int n = 0;
	while (arena_alloc(a, 4000))
		n++;
	cr_assert_gt(n, 200);
	while (arena_alloc(a, 1))
		;	/* the tail, in small blocks */
	cr_assert_leq(arena_carved(a), len);
	cr_assert_gt(arena_carved(a), len - 32);
	cr_assert_null(arena_alloc(a, 4000));
	cr_assert_null(arena_alloc(a, SIZE_MAX));
	cr_assert_null(arena_init(region(4096), 64));
}

Test(arena, foreign_free_ignored)
{
	struct arena *a = arena_init(region(1 << 20), 1 << 20);
	char other[64] = { 0 };
	void *p = arena_alloc(a, 32);
	size_t used = arena_in_use(a);
	arena_free(a, other + 16);
	arena_free(a, (char *)p + 16);
	cr_assert_eq(arena_in_use(a), used);
	arena_free(a, p);
	arena_free(a, p);	/* twice: the second is no block any more */
	cr_assert_eq(arena_in_use(a), 0);
	cr_assert_eq(arena_alloc(a, 32), p);
	cr_assert_neq(arena_alloc(a, 32), p, "the double free did not list it twice");
}

static int fail_all(const char *what)
{
	(void)what;
	return 1;
}

Test(arena, fail_hook)
{
	struct arena *a = arena_init(region(1 << 20), 1 << 20);
	struct pool_allocator pa = arena_pool_allocator(a);
	struct pool *p;
	arena_set_fail_hook(fail_all);
	cr_assert_eq(pool_create_with(&p, &pa), -ENOMEM);
	arena_set_fail_hook(NULL);
	cr_assert_eq(pool_create_with(&p, &pa), 0);
	pool_destroy(p);
	cr_assert_eq(arena_in_use(a), 0);
}

static char bufs[8][64];

static void provide(struct pool *p, uint16_t bgid, unsigned bid)
{
	struct pool_provide r = { .addr = (uintptr_t)bufs[bid], .len = 64, .nbufs = 1, .off = bid, .bgid = bgid };
	cr_assert_eq(pool_provide(p, &r), 0);
}

/* Turns through two pipes; the child's failures are its exit status. */
Test(arena, pool_shared_across_fork)
{
	struct arena *a = arena_init(region(64 << 20), 64 << 20);
	struct pool_allocator pa = arena_pool_allocator(a);
	struct pool *p;
	cr_assert_eq(pool_create_with(&p, &pa), 0);
	provide(p, 1, 0);
	int tc[2], tp[2];
	cr_assert_eq(pipe(tc), 0);
	cr_assert_eq(pipe(tp), 0);
	char c = 'x';
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		spin_after_fork();	/* as bufsel's atfork handler does */
		struct pool_buf b;
		int bad = 0;
		/* Takes the buffer provided before the fork. */
		bad |= pool_select(p, 1, &b) != 0 || b.bid != 0;
		pool_consume(p, &b);
		bad |= write(tp[1], &c, 1) != 1;
		bad |= read(tc[0], &c, 1) != 1;
		/* Sees the group and buffers the parent made after the fork. */
		bad |= pool_available(p, 2) != 2;
		bad |= pool_select(p, 2, &b) != 0 || b.bid != 3;
		pool_consume(p, &b);
		bad |= write(tp[1], &c, 1) != 1;
		_exit(bad);
	}
	cr_assert_eq(read(tp[0], &c, 1), 1);
	struct pool_buf b;
	cr_assert_eq(pool_select(p, 1, &b), -ENOBUFS, "the child consumed it");
	provide(p, 2, 3);
	provide(p, 2, 4);
	cr_assert_eq(write(tc[1], &c, 1), 1);
	cr_assert_eq(read(tp[0], &c, 1), 1);
	cr_assert_eq(pool_available(p, 2), 1);
	cr_assert_eq(pool_select(p, 2, &b), 0);
	cr_assert_eq(b.bid, 4);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cr_assert_eq(pool_check(p), 0);
}

/* Two processes allocating and freeing at once: the shared lock keeps the
 * free lists whole (every block handed out once, nothing lost). */
Test(arena, concurrent_across_fork)
{
	struct arena *a = arena_init(region(256 << 20), 256 << 20);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid)
		spin_after_fork();
	void *mine[64];
	for (int round = 0; round < 2000; round++) {
		for (int i = 0; i < 64; i++) {
			mine[i] = arena_alloc(a, (size_t)(16 + (i % 7) * 100));
			if (!mine[i])
				_exit(2);
			memset(mine[i], pid ? 0xaa : 0x55, 16);
		}
		for (int i = 0; i < 64; i++) {
			if (((unsigned char *)mine[i])[15] != (pid ? 0xaa : 0x55))
				_exit(3);
			arena_free(a, mine[i]);
		}
	}
	if (!pid)
		_exit(0);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
	cr_assert_eq(arena_in_use(a), 0);
}
