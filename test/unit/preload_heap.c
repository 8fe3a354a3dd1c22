/*
 * preload/heap.c, bufsel's own allocator: sizes and alignment as malloc
 * gives them, calloc zeroes, realloc keeps contents, big blocks are their
 * own mappings, freed memory is reused (a ring's teardown feeds the next
 * ring's setup), the fail_alloc injection, and what it exists for: use
 * from many threads at once and from a signal handler that interrupts an
 * allocation in progress on the same thread.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/time.h>

#include "preload/heap.h"
#include "preload/spin.h"

Test(heap, sizes_alignment_and_contents)
{
	static const size_t sizes[] = { 0, 1, 15, 16, 17, 100, 4080, 4096, 65519, 65520, 65536, 1 << 20 };
	void *p[sizeof(sizes) / sizeof(sizes[0])];
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		p[i] = heap_malloc(sizes[i], "test");
		cr_assert_not_null(p[i]);
		cr_assert_eq((uintptr_t)p[i] % 16, 0, "size %zu not 16-byte aligned", sizes[i]);
		memset(p[i], (int)i, sizes[i]);
	}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (size_t k = 0; k < sizes[i]; k++)
			cr_assert_eq(((unsigned char *)p[i])[k], (unsigned char)i, "size %zu byte %zu", sizes[i], k);
		heap_free(p[i]);
	}
	heap_free(NULL);
}

Test(heap, calloc_zeroes_reused_memory)
{
	for (int round = 0; round < 2; round++) {
		unsigned char *p = heap_calloc(100, 10, "test");
		unsigned char *big = heap_calloc(1000, 100, "test");
		cr_assert(p && big);
		for (int i = 0; i < 1000; i++)
			cr_assert_eq(p[i], 0);
		for (int i = 0; i < 100000; i++)
			cr_assert_eq(big[i], 0);
		memset(p, 0xff, 1000);
		memset(big, 0xff, 100000);
		heap_free(p);
		heap_free(big);
	}
	cr_assert_null(heap_calloc(SIZE_MAX / 2, 4, "test"));
}

Test(heap, realloc_keeps_contents_across_classes)
{
	unsigned char *p = heap_realloc(NULL, 10, "test");
	cr_assert_not_null(p);
	for (int i = 0; i < 10; i++)
		p[i] = (unsigned char)i;
	size_t n = 10;
	for (size_t to = 20; to < (1u << 21); to = to * 3 + 1) {
		p = heap_realloc(p, to, "test");
		cr_assert_not_null(p);
		for (size_t i = 0; i < n; i++)
			cr_assert_eq(p[i], (unsigned char)i, "at %zu after growing to %zu", i, to);
		for (size_t i = n; i < to; i++)
			p[i] = (unsigned char)i;
		n = to;
	}
	p = heap_realloc(p, 50, "test");
	for (size_t i = 0; i < 50; i++)
		cr_assert_eq(p[i], (unsigned char)i);
	heap_free(p);
}

Test(heap, freed_blocks_are_reused)
{
	void *a = heap_malloc(200, "test");
	heap_free(a);
	void *b = heap_malloc(200, "test");
	cr_assert_eq(a, b, "a free block of the class is taken before new memory");
	heap_free(b);
}

static unsigned long failed_n;
static const char *failed_what;

static void on_fail(unsigned long n, const char *what)
{
	failed_n = n;
	failed_what = what;
}

Test(heap, inject_fails_exactly_the_nth)
{
	heap_inject(3, on_fail);
	void *a = heap_malloc(8, "one"), *b = heap_calloc(1, 8, "two");
	void *c = heap_realloc(a, 100, "three");
	void *d = heap_malloc(8, "four");
	heap_inject(0, NULL);
	cr_assert(a && b && d);
	cr_assert_null(c, "the third allocation fails");
	cr_assert_eq(failed_n, 3);
	cr_assert_str_eq(failed_what, "three");
	heap_free(a);	/* a failed realloc leaves the block alone */
	heap_free(b);
	heap_free(d);
}

/* ---- concurrency ---------------------------------------------------------- */

#define THREADS 4
#define OPS 200000
#define SLOTS 64

static atomic_int corrupt;

/* Random sizes over every class and a few big blocks; each block carries a
 * pattern of its owner's, checked before it is freed. */
static void churn(unsigned seed, unsigned ops, unsigned char **slot, size_t *len, unsigned char tag)
{
	for (unsigned op = 0; op < ops; op++) {
		seed = seed * 1103515245u + 12345u;
		unsigned i = (seed >> 8) % SLOTS, r = seed >> 12;
		if (slot[i]) {
			for (size_t k = 0; k < len[i]; k += 7)
				if (slot[i][k] != (unsigned char)(tag + k))
					atomic_fetch_add(&corrupt, 1);
			heap_free(slot[i]);
			slot[i] = NULL;
		} else {
			len[i] = r % 64 == 0 ? 70000 + r % 100000 : 1 + r % 5000;
			slot[i] = heap_malloc(len[i], "test");
			if (!slot[i]) {
				atomic_fetch_add(&corrupt, 1);
				continue;
			}
			for (size_t k = 0; k < len[i]; k += 7)
				slot[i][k] = (unsigned char)(tag + k);
		}
	}
	for (unsigned i = 0; i < SLOTS; i++) {
		heap_free(slot[i]);
		slot[i] = NULL;
	}
}

static void *thread_main(void *arg)
{
	unsigned char *slot[SLOTS] = { 0 };
	size_t len[SLOTS];
	uintptr_t id = (uintptr_t)arg;
	churn((unsigned)id * 7919u, OPS, slot, len, (unsigned char)id);
	return NULL;
}

Test(heap, threads_at_once, .timeout = 60)
{
	pthread_t t[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, thread_main, (void *)(i + 1)), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	cr_assert_eq(atomic_load(&corrupt), 0, "a block was handed out twice or lost its contents");
}

/* The handler allocates and frees while the code it interrupted is in the
 * middle of the same allocator (same thread, same size classes). */
static unsigned char *sig_slot[SLOTS];
static size_t sig_len[SLOTS];
static volatile sig_atomic_t sig_runs, sig_stop;

/* Re-armed at the end of each run, not periodic: a handler slower than the
 * period (ASan on a loaded machine) would otherwise run back to back and
 * the interrupted code never get on. */
static const struct itimerval next_alarm = { { 0, 0 }, { 0, 50 } };

static void on_alarm(int sig)
{
	(void)sig;
	churn((unsigned)sig_runs * 31u + 5u, 64, sig_slot, sig_len, 0xa5);
	sig_runs++;
	if (!sig_stop)
		setitimer(ITIMER_REAL, &next_alarm, NULL);
}

Test(heap, signal_handler_interrupting_the_heap, .timeout = 60)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGALRM, &sa, NULL), 0);
	/* The handler runs on this thread only: the other one churns beside. */
	sigset_t alrm, old;
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &alrm, &old);
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, thread_main, (void *)9), 0);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	cr_assert_eq(setitimer(ITIMER_REAL, &next_alarm, NULL), 0);
	unsigned char *slot[SLOTS] = { 0 };
	size_t len[SLOTS];
	for (int round = 0; round < 10 || sig_runs < 200; round++)
		churn((unsigned)round, 50000, slot, len, 0x3c);
	sig_stop = 1;
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	pthread_join(t, NULL);
	cr_assert_eq(atomic_load(&corrupt), 0);
	cr_assert_geq(sig_runs, 200);
}

/* ---- the locks' owner ----------------------------------------------------- */

Test(spin, reentry_on_the_owner_thread_does_not_wait)
{
	struct spin s = { 0 };
	spin_lock(&s);
	cr_assert_eq(spin_trylock(&s), 0, "trylock never recurses");
	spin_lock(&s);		/* a signal handler on the same thread */
	spin_unlock(&s);
	cr_assert_neq(atomic_load(&s.v), 0, "the outer hold stays");
	spin_unlock(&s);
	cr_assert_eq(atomic_load(&s.v), 0);
}

Test(spin, owner_outside_the_process_is_taken_over, .timeout = 10)
{
	/* What a raw-clone child sees: a lock held by a tid that is not one of
	 * its threads (no process has tid 0x7ffffff0). */
	struct spin s = { 0 };
	atomic_store(&s.v, 0x7ffffff0);
	spin_lock(&s);
	cr_assert_eq(atomic_load(&s.v), spin_self());
	spin_unlock(&s);
	cr_assert_eq(atomic_load(&s.v), 0);
}
