/*
 * Faults that only bufsel can have, so no native run to compare with:
 *
 *   fail_alloc  BUFSEL_FAIL_ALLOC=N fails the Nth allocation bufsel makes for
 *               its rings.  test/prog/fault_alloc walks through every place
 *               that allocates; this runs it with N = 1, 2, ... until a run
 *               reports no injected failure (there are no more allocations),
 *               and for each N requires what "a clean error" means:
 *                 - the program exits normally (no crash, no hang; under
 *                   `make asan`, no sanitizer report and no leak);
 *                 - exactly one failure was injected, and said so on stderr;
 *                 - every request the native run completes completes under
 *                   the fault too, each single-shot one exactly once, no
 *                   user_data appears that natively does not; a CQE bufsel
 *                   could not keep (its own queue, out of memory) is counted
 *                   in the CQ overflow counter, as the kernel counts its own;
 *                 - the failure is visible as -ENOMEM in a CQE or as that
 *                   counter, or it had no effect at all (the output is the
 *                   native output);
 *               and, over the sweep, that each kind of allocation was failed
 *               at least once, so the program really reaches them all.
 *   fd limit    a ring set up with one fd left, where bufsel cannot make its
 *               own fds, goes to the kernel unshadowed, with one warning.
 *
 * The build directory is $BUFSEL_BUILD (default "build"), made absolute.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test/integration/harness.h"

#define RUN_TIMEOUT 60	/* seconds for one run; a run takes well under one */
#define MAX_SWEEP 400	/* more allocations than this means the program changed */

/* The kinds of allocation preload/heap.c names in its report. */
static const char *const sites[] = {
	"buffer pool", "request table", "msghdr", "held chain", "completion queue",
};
#define NSITES (sizeof(sites) / sizeof(sites[0]))

/* ---- running ----------------------------------------------------------------- */

static const char *built(int slot, const char *rel)
{
	static char paths[2][PATH_MAX];
	int n = snprintf(paths[slot], PATH_MAX, "%s/%s", harness_build_dir(), rel);
	cr_assert(n > 0 && n < PATH_MAX, "path too long");
	cr_assert(access(paths[slot], R_OK) == 0, "%s: %s (not built?)", paths[slot], strerror(errno));
	return paths[slot];
}

/* Runs live in static storage: a failed assertion leaks nothing under ASan. */
static struct run native, faulty;

/* A test program natively (lib false) or under LD_PRELOAD with var set. */
static void run_prog(struct run *r, const char *name, bool lib, const char *var)
{
	static char preload[2 * PATH_MAX + 16];
	char rel[128];
	snprintf(rel, sizeof(rel), "test/prog/%s", name);
	char *argv[] = { (char *)built(0, rel), NULL };
	size_t k;
	char **env = harness_env(4, &k);
	if (lib) {
		const char *asan = harness_asan_runtime();
		snprintf(preload, sizeof(preload), "LD_PRELOAD=%s%s%s", asan ? asan : "", asan ? ":" : "",
			 built(1, "libbufsel.so"));
		env[k++] = preload;
		env[k++] = "BUFSEL_CONF=";
		if (var)
			env[k++] = (char *)var;
	}
	env[k] = NULL;
	harness_run(r, argv, env, RUN_TIMEOUT);
}

/* ---- what a run printed ------------------------------------------------------- */

#define MAX_UD 4096

struct tally {
	unsigned long long ud[MAX_UD];
	unsigned count[MAX_UD];
	unsigned n;		/* distinct user_data values */
	unsigned enomem;	/* CQEs with res -ENOMEM */
	unsigned long overflow;	/* sum of the "CQ overflow counter N" lines */
};

static void tally(const struct run *r, struct tally *t, const char *what)
{
	memset(t, 0, sizeof(*t));
	for (const char *p = r->out; p && *p;) {
		const char *nl = strchr(p, '\n');
		unsigned long long ud;
		int res;
		unsigned long ovf;
		const char *o;
		if (sscanf(p, "cqe ud=%llu res=%d", &ud, &res) == 2) {
			unsigned i = 0;
			while (i < t->n && t->ud[i] != ud)
				i++;
			if (i == t->n) {
				cr_assert(t->n < MAX_UD, "%s: more than %d distinct user_data", what, MAX_UD);
				t->ud[t->n++] = ud;
			}
			t->count[i]++;
			t->enomem += res == -ENOMEM;
		} else if ((o = strstr(p, "CQ overflow counter ")) && (!nl || o < nl) &&
			   sscanf(o, "CQ overflow counter %lu", &ovf) == 1) {
			t->overflow += ovf;
		}
		p = nl ? nl + 1 : p + strlen(p);
	}
}

/* The program's own remarks ("note missing: ...", "note submit returned ..."). */
static const char *remarks(const struct run *r)
{
	static char buf[2048];
	size_t k = 0;
	buf[0] = '\0';
	for (const char *p = r->out; p && *p && k + 200 < sizeof(buf);) {
		const char *nl = strchr(p, '\n');
		int n = nl ? (int)(nl - p) : (int)strlen(p);
		if (!strncmp(p, "note missing", 12) || !strncmp(p, "note submit", 11))
			k += (size_t)snprintf(buf + k, sizeof(buf) - k, "%.*s\n", n > 190 ? 190 : n, p);
		p = nl ? nl + 1 : p + n;
	}
	return buf;
}

static unsigned count_of(const struct tally *t, unsigned long long ud)
{
	for (unsigned i = 0; i < t->n; i++)
		if (t->ud[i] == ud)
			return t->count[i];
	return 0;
}

/* The site named in "fail_alloc: allocation N (SITE) fails", or -1 if none; fails on more than one. */
static int injected_site(const struct run *r, unsigned n)
{
	int site = -1, lines = 0;
	for (const char *p = strstr(r->err, "fail_alloc: allocation "); p; p = strstr(p + 1, "fail_alloc: allocation ")) {
		unsigned got;
		char name[64];
		lines++;
		cr_assert(sscanf(p, "fail_alloc: allocation %u (%63[^)]) fails", &got, name) == 2 && got == n,
			  "N=%u: malformed or wrong report: %.80s", n, p);
		for (size_t i = 0; i < NSITES; i++)
			if (!strcmp(name, sites[i]))
				site = (int)i;
		cr_assert(site >= 0, "N=%u: unknown allocation site \"%s\"", n, name);
	}
	cr_assert(lines <= 1, "N=%u: %d failures reported, wanted one", n, lines);
	return site;
}

/* ---- the tests ---------------------------------------------------------------- */

Test(fail_alloc, every_failure_is_a_clean_error, .timeout = 600)
{
	static struct tally want, got;
	run_prog(&native, "fault_alloc", false, NULL);
	harness_expect_exit(&native, 0, "fault_alloc, native run");
	tally(&native, &want, "native");
	cr_assert(want.n > 300 && want.overflow == 0 && want.enomem == 0,
		  "the native run is not the one expected: %u user_data, overflow %lu", want.n, want.overflow);

	bool seen[NSITES] = { false };
	unsigned n;
	for (n = 1; n <= MAX_SWEEP; n++) {
		char var[64], what[96];
		snprintf(var, sizeof(var), "BUFSEL_FAIL_ALLOC=%u", n);
		snprintf(what, sizeof(what), "fault_alloc with %s", var);
		run_prog(&faulty, "fault_alloc", true, var);
		harness_expect_exit(&faulty, 0, what);
		int site = injected_site(&faulty, n);
		bool same = faulty.out_len == native.out_len && !memcmp(faulty.out, native.out, native.out_len);
		if (site < 0) {
			/* Past the last allocation: nothing failed, nothing changed. */
			cr_assert(same, "%s: no failure injected, yet the output differs from the native one\n%s", what,
				  faulty.out);
			break;
		}
		seen[site] = true;
		tally(&faulty, &got, what);
		unsigned lost = 0;
		unsigned long long first_lost = 0;
		for (unsigned i = 0; i < got.n; i++)
			cr_assert(count_of(&want, got.ud[i]), "%s: a CQE with user_data %llu, which no request has\n%s",
				  what, got.ud[i], harness_tail(faulty.out, faulty.out_len, 3000));
		for (unsigned i = 0; i < want.n; i++) {
			unsigned c = count_of(&got, want.ud[i]);
			cr_assert(c <= want.count[i], "%s: user_data %llu completed %u times, natively %u\n%s", what,
				  want.ud[i], c, want.count[i], harness_tail(faulty.out, faulty.out_len, 3000));
			if (!c && !lost++)
				first_lost = want.ud[i];
		}
		cr_assert(lost <= got.overflow,
			  "%s: %u requests never completed (the first: user_data %llu), and the CQ overflow counters say %lu were dropped\n"
			  "--- the program's remarks ---\n%s--- stderr ---\n%s", what, lost, first_lost, got.overflow,
			  remarks(&faulty), faulty.err);
		cr_assert(same || got.enomem || got.overflow,
			  "%s: the output changed, but no CQE says -ENOMEM and nothing was counted as dropped\n"
			  "--- stdout (last 3000 bytes) ---\n%s", what, harness_tail(faulty.out, faulty.out_len, 3000));
	}
	cr_assert(n <= MAX_SWEEP, "still failing allocations after %d runs", MAX_SWEEP);
	for (size_t i = 0; i < NSITES; i++)
		cr_assert(seen[i], "no %s allocation was failed in %u runs: fault_alloc no longer reaches it", sites[i],
			  n - 1);
	harness_free(&native);
	harness_free(&faulty);
}

/* The knob is checked like every other one: a bad value stops the program. */
Test(fail_alloc, a_bad_value_stops_the_program, .timeout = 60)
{
	run_prog(&faulty, "fault_alloc", true, "BUFSEL_FAIL_ALLOC=-1");
	cr_assert(WIFEXITED(faulty.status) && WEXITSTATUS(faulty.status) == 1 && faulty.out_len == 0,
		  "BUFSEL_FAIL_ALLOC=-1 was accepted\n%s", faulty.err);
	cr_assert(strstr(faulty.err, "bufsel: BUFSEL_FAIL_ALLOC: '-1' is not an integer in 0..4294967295"),
		  "unexpected message: %s", faulty.err);
	harness_free(&faulty);
}

/*
 * fault_limits sets up a ring with one fd left: natively that works, and
 * compare.c requires the same output under bufsel.  Here: bufsel got there by
 * handing the ring to the kernel unshadowed, and said so once.
 */
Test(fd_limit, a_ring_without_room_for_a_shadow_is_passed_through, .timeout = 60)
{
	run_prog(&faulty, "fault_limits", true, NULL);
	harness_expect_exit(&faulty, 0, "fault_limits under bufsel");
	static const char warning[] = ": no room for a shadow (Too many open files): passed through to the kernel";
	const char *w = strstr(faulty.err, warning);
	cr_assert(w, "no pass-through warning\n%s", faulty.err);
	cr_assert(!strstr(w + sizeof(warning) - 1, "no room for a shadow"), "more than one warning\n%s", faulty.err);
	harness_free(&faulty);
}
