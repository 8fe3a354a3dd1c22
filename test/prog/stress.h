/*
 * Helpers shared by the stress_ programs, which run many requests from many
 * threads and print only totals the workload fixes, so that their output is
 * the same natively and under bufsel however the scheduler interleaves them:
 *
 *  - a progress watchdog: a thread that ends the process with a diagnosis
 *    when no completion arrived for a while (a deadlock or a lost CQE shows
 *    up as that, not as a runner timeout with nothing to say);
 *  - a user_data ledger: every request gets a fresh sequence number, and a
 *    completion is accepted once and only for a number that was issued;
 *  - byte patterns: a fixed function of a stream key and an offset, so that
 *    every received byte can be checked where it lands;
 *  - CPU hogs, which keep the machine oversubscribed;
 *  - the scale argument: argv[1] multiplies the work (default 1), for runs
 *    longer than the test suite's.
 */
#ifndef BUFSEL_TEST_STRESS_H
#define BUFSEL_TEST_STRESS_H

#include "test/prog/bs_bufs.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

/* ---- watchdog ------------------------------------------------------------- */

struct watchdog {
	atomic_ulong progress;		/* bumped by every completion anyone reaps */
	atomic_int stop;
	unsigned quiet_s;		/* seconds without progress that mean a hang */
	void (*describe)(void);		/* prints the program's state to stderr */
	pthread_t thread;
};

static struct watchdog stress_watchdog;

static inline void stress_progress(void)
{
	atomic_fetch_add_explicit(&stress_watchdog.progress, 1, memory_order_relaxed);
}

static void *stress_watchdog_main(void *arg)
{
	(void)arg;
	unsigned long last = (unsigned long)-1;
	unsigned quiet = 0;
	while (!atomic_load(&stress_watchdog.stop)) {
		struct timespec ts = { .tv_nsec = 100 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		unsigned long now = atomic_load_explicit(&stress_watchdog.progress, memory_order_relaxed);
		quiet = now == last ? quiet + 1 : 0;
		last = now;
		if (quiet >= stress_watchdog.quiet_s * 10) {
			fflush(stdout);
			fprintf(stderr, "watchdog: no completion for %u s (%lu so far): deadlock or lost completion\n",
				stress_watchdog.quiet_s, now);
			if (stress_watchdog.describe)
				stress_watchdog.describe();
			fflush(stderr);
			_exit(3);
		}
	}
	return NULL;
}

static inline void stress_watchdog_start(unsigned quiet_s, void (*describe)(void))
{
	stress_watchdog.quiet_s = quiet_s;
	stress_watchdog.describe = describe;
	if (pthread_create(&stress_watchdog.thread, NULL, stress_watchdog_main, NULL) != 0)
		die("watchdog: pthread_create");
}

static inline void stress_watchdog_stop(void)
{
	atomic_store(&stress_watchdog.stop, 1);
	pthread_join(stress_watchdog.thread, NULL);
}

/* ---- user_data ledger ----------------------------------------------------- */

/*
 * user_data = owner << 40 | tag << 32 | sequence number.  Sequence numbers
 * are issued in order, so the ledger is a bitmap over them; owner says whose
 * ledger, tag what the request was (the program's own label).
 */
#define UD_OWNER_SHIFT 40
#define UD_TAG_SHIFT 32
#define UD_SEQ_MASK 0xffffffffULL

static inline unsigned ud_tag(uint64_t ud)
{
	return (unsigned)(ud >> UD_TAG_SHIFT) & 0xff;
}

struct ledger {
	unsigned owner;
	uint64_t issued, seen;
	uint8_t *bits;
	uint64_t cap;			/* bits */
	pthread_mutex_t lock;		/* for a ledger shared by threads */
};

static inline void ledger_init(struct ledger *l, unsigned owner)
{
	*l = (struct ledger){ .owner = owner };
	pthread_mutex_init(&l->lock, NULL);
}

static inline uint64_t ledger_issue(struct ledger *l, unsigned tag)
{
	pthread_mutex_lock(&l->lock);
	uint64_t seq = l->issued++;
	if (seq >= l->cap) {
		uint64_t cap = l->cap ? l->cap * 2 : 4096;
		uint8_t *b = realloc(l->bits, cap / 8);
		if (!b)
			die("ledger: out of memory");
		memset(b + l->cap / 8, 0, (cap - l->cap) / 8);
		l->bits = b;
		l->cap = cap;
	}
	pthread_mutex_unlock(&l->lock);
	if (seq > UD_SEQ_MASK)
		die("ledger: more than 2^32 requests");
	return (uint64_t)l->owner << UD_OWNER_SHIFT | (uint64_t)(tag & 0xff) << UD_TAG_SHIFT | seq;
}

/* Accepts a completion's user_data once; anything else ends the program. */
static inline uint64_t ledger_complete(struct ledger *l, uint64_t ud, const char *who)
{
	uint64_t seq = ud & UD_SEQ_MASK;
	pthread_mutex_lock(&l->lock);
	if (ud >> UD_OWNER_SHIFT != l->owner || seq >= l->issued)
		die("%s: completion with user_data 0x%llx that was never issued", who, (unsigned long long)ud);
	if (l->bits[seq / 8] & (1u << (seq % 8)))
		die("%s: second completion for user_data 0x%llx", who, (unsigned long long)ud);
	l->bits[seq / 8] |= (uint8_t)(1u << (seq % 8));
	l->seen++;
	pthread_mutex_unlock(&l->lock);
	stress_progress();
	return seq;
}

/* Every issued user_data completed: else the first missing one ends the program. */
static inline void ledger_check_all(struct ledger *l, const char *who)
{
	for (uint64_t s = 0; s < l->issued; s++)
		if (!(l->bits[s / 8] & (1u << (s % 8))))
			die("%s: no completion for request %llu of owner %u (%llu of %llu completed)", who,
			    (unsigned long long)s, l->owner,
			    (unsigned long long)l->seen, (unsigned long long)l->issued);
}

static inline void ledger_free(struct ledger *l)
{
	free(l->bits);
	pthread_mutex_destroy(&l->lock);
}

/* ---- byte patterns -------------------------------------------------------- */

static inline uint32_t stress_mix(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}

/* The byte at offset off of stream key. */
static inline unsigned char stress_byte(uint32_t key, uint64_t off)
{
	return (unsigned char)stress_mix(key * 0x9e3779b9u ^ (uint32_t)off ^ (uint32_t)(off >> 32) * 131u);
}

static inline void stress_fill(unsigned char *dst, uint32_t key, uint64_t off, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = stress_byte(key, off + i);
}

/* Index of the first wrong byte, or -1 when all n are right. */
static inline long stress_check(const unsigned char *p, uint32_t key, uint64_t off, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != stress_byte(key, off + i))
			return (long)i;
	return -1;
}

/* ---- contention ----------------------------------------------------------- */

/*
 * Threads that only burn CPU, so that the machine is oversubscribed and the
 * threads that matter are preempted anywhere, inside bufsel's short windows
 * too, not only where they block.
 */
struct hogs {
	atomic_int stop;
	unsigned n;
	pthread_t t[4];
};

static struct hogs stress_hogs;

static void *stress_hog_main(void *arg)
{
	(void)arg;
	unsigned long spins = 0;
	while (!atomic_load_explicit(&stress_hogs.stop, memory_order_relaxed))
		if (++spins % 1024 == 0)
			sched_yield();
	return NULL;
}

static inline void stress_hogs_start(unsigned n)
{
	stress_hogs.n = n < 4 ? n : 4;
	for (unsigned i = 0; i < stress_hogs.n; i++)
		if (pthread_create(&stress_hogs.t[i], NULL, stress_hog_main, NULL) != 0)
			die("hogs: pthread_create");
}

static inline void stress_hogs_stop(void)
{
	atomic_store(&stress_hogs.stop, 1);
	for (unsigned i = 0; i < stress_hogs.n; i++)
		pthread_join(stress_hogs.t[i], NULL);
}

/* ---- the scale ------------------------------------------------------------ */

static inline unsigned stress_scale(int argc, char **argv)
{
	if (argc < 2)
		return 1;
	char *end;
	unsigned long s = strtoul(argv[1], &end, 10);
	if (*end || !s || s > 100000)
		die("usage: %s [SCALE]: SCALE multiplies the work, 1 to 100000", argv[0]);
	return (unsigned)s;
}

#endif
