/*
 * Configured buffer-group policies, seen from the outside: the pol_ programs
 * of test/prog run under LD_PRELOAD=<build>/libbufsel.so with BUFSEL_*
 * variables, and what they print (every CQE, and the bytes in every selected
 * buffer) must be exactly the text written here. compare.c already requires
 * the same programs to print the same natively and under bufsel without a
 * policy; these tests pin down what each policy changes:
 *
 *   cap          a cap of 2 refuses the selection that would make a third
 *                buffer of the group in use, and no other;
 *   max_len      a limit of 5 turns reads of 16 into reads of 5, of the
 *                right bytes, and only in the group it is set for;
 *   enobufs_rate 1 fails every selection while the buffers stay in the group,
 *                0 fails none; at 0.5 the same seed gives the same failures
 *                and another seed others;
 *   stats        the JSON file and the stderr table count what a scripted
 *                run did (docs/stats-schema.md);
 *   config       a bad value, given as a variable or in a file, stops the
 *                program before main with exit status 1 and one line saying
 *                where it came from, under LD_PRELOAD and the launcher.
 *
 * Every run gets BUFSEL_CONF= (no configuration file) unless the test names a
 * file: a user's ~/.config/bufsel/bufsel.conf or /etc/bufsel.conf must not
 * change what is expected. LD_PRELOAD and other BUFSEL_* variables of the
 * caller are removed for the same reason. Programs under the library also get
 * BUFSEL_LOG=info, whose exit line proves the library was loaded.
 *
 * The build directory is $BUFSEL_BUILD (default "build"), made absolute.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test/integration/harness.h"

#define RUN_TIMEOUT 10 /* seconds for one run; the programs take well under one */

/* ---- paths ---------------------------------------------------------------- */

static const char *lib_path(void)
{
	return harness_built(0, "libbufsel.so");
}

static const char *launcher_path(void)
{
	return harness_built(1, "bufsel");
}

static const char *prog_path(const char *name)
{
	char rel[128];
	snprintf(rel, sizeof(rel), "test/prog/%s", name);
	return harness_built(2, rel);
}


/* ---- running a program ---------------------------------------------------- */

enum how { NATIVE, PRELOAD, LAUNCHER };


/* Runs live in static storage: a failed assertion leaks nothing under ASan. */
static struct run run_a, run_b;

/*
 * The caller's environment without LD_PRELOAD and BUFSEL_*, then BUFSEL_CONF=
 * unless vars set it, then what the way of running needs, then vars (a
 * NULL-terminated list of NAME=VALUE).
 */
static char **make_env(enum how how, bool log_info, const char *const *vars)
{
	static char preload[2 * PATH_MAX + 16], asan_preload[PATH_MAX + 16];
	size_t nvars = 0, k;
	for (const char *const *v = vars; v && *v; v++)
		nvars++;
	char **env = harness_env(nvars + 3, &k);
	bool conf_given = false;
	for (const char *const *v = vars; v && *v; v++)
		conf_given |= !strncmp(*v, "BUFSEL_CONF=", 12);
	if (!conf_given)
		env[k++] = "BUFSEL_CONF=";
	const char *asan = harness_asan_runtime();
	if (how == PRELOAD) {
		snprintf(preload, sizeof(preload), "LD_PRELOAD=%s%s%s", asan ? asan : "", asan ? ":" : "",
			 lib_path());
		env[k++] = preload;
	} else if (how == LAUNCHER && asan) {
		/* The launcher appends the library to an LD_PRELOAD it is given. */
		snprintf(asan_preload, sizeof(asan_preload), "LD_PRELOAD=%s", asan);
		env[k++] = asan_preload;
	}
	if (how != NATIVE && log_info)
		env[k++] = "BUFSEL_LOG=info";
	for (const char *const *v = vars; v && *v; v++)
		env[k++] = (char *)*v;
	env[k] = NULL;
	return env;
}

/*
 * Runs exe (through the launcher for LAUNCHER), stdin from /dev/null, stdout
 * and stderr collected. Descriptors above 2 are closed in the child, so that
 * the fd numbers a program gets do not depend on the test harness.
 */
static void run_exe(struct run *r, enum how how, bool log_info, const char *exe, const char *const *vars)
{
	char *argv[4] = { (char *)exe, NULL, NULL, NULL };
	if (how == LAUNCHER) {
		argv[0] = (char *)launcher_path();
		argv[1] = "--";
		argv[2] = (char *)exe;
	}
	char **env = make_env(how, log_info, vars);
	harness_run(r, argv, env, RUN_TIMEOUT);
}

/* A pol_ program, under the library with BUFSEL_LOG=info unless NATIVE. */
static void run_prog(struct run *r, enum how how, const char *name, const char *const *vars)
{
	run_exe(r, how, true, prog_path(name), vars);
}

#define VARS(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* ---- checks --------------------------------------------------------------- */

/* The library's exit line: without it, a run proves nothing about bufsel. */
static void expect_loaded(const struct run *r, const char *what)
{
	cr_assert(strstr(r->err, "bufsel: exit: pid=") != NULL,
		  "%s: no \"bufsel: exit:\" line on stderr: the library was not loaded\n"
		  "--- stderr (last 3000 bytes) ---\n%s", what, harness_tail(r->err, r->err_len, 3000));
}

/* Line i (0-based) of s: start and length, or false past the end. */
static bool nth_line(const char *s, size_t len, size_t i, const char **start, size_t *n)
{
	const char *p = s, *end = s + len;
	for (size_t k = 0; k < i; k++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			return false;
		p = nl + 1;
	}
	if (p >= end)
		return false;
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	*start = p;
	*n = nl ? (size_t)(nl - p) : (size_t)(end - p);
	return true;
}

/* got must be want, byte for byte; a failure shows the first differing line. */
static void expect_text(const char *got, size_t got_len, const char *want, const char *what)
{
	size_t want_len = strlen(want);
	if (got_len == want_len && !memcmp(got, want, want_len))
		return;
	size_t i = 0;
	const char *lg = NULL, *lw = NULL;
	size_t ng = 0, nw = 0;
	for (;; i++) {
		bool hg = nth_line(got, got_len, i, &lg, &ng);
		bool hw = nth_line(want, want_len, i, &lw, &nw);
		if (!hg || !hw || ng != nw || memcmp(lg, lw, ng))
			break;
	}
	bool hg = nth_line(got, got_len, i, &lg, &ng);
	bool hw = nth_line(want, want_len, i, &lw, &nw);
	cr_assert_fail("%s: differs at line %zu\n  expected: %.*s\n  got:      %.*s\n"
		       "--- expected ---\n%s--- got ---\n%.*s",
		       what, i + 1, hw ? (int)nw : 13, hw ? lw : "(end of text)", hg ? (int)ng : 13,
		       hg ? lg : "(end of text)", want, (int)got_len, got);
}

/* The part of text from the line starting with marker to the end, or up to it. */
static void split_at(const char *text, size_t len, const char *marker, size_t *at)
{
	size_t m = strlen(marker);
	for (size_t i = 0; i + m <= len; i++)
		if ((i == 0 || text[i - 1] == '\n') && !memcmp(text + i, marker, m)) {
			*at = i;
			return;
		}
	cr_assert_fail("no line starting \"%s\" in:\n%.*s", marker, (int)len, text);
}

/* ---- cap ------------------------------------------------------------------ */

#define CAP_GROUP1_NATIVE                                                        \
	"note group 1: 8 buffers of 16; READs of 4 bytes, each buffer kept\n"    \
	"cqe ud=1 res=0 flags=0x0\n"                                              \
	"cqe ud=2 res=4 flags=0x1\n"                                              \
	"note bid=0 data=\"ABCD\"\n"                                              \
	"cqe ud=3 res=4 flags=0x10001\n"                                          \
	"note bid=1 data=\"EFGH\"\n"                                              \
	"cqe ud=4 res=4 flags=0x20001\n"                                          \
	"note bid=2 data=\"IJKL\"\n"                                              \
	"note bid 0 provided again\n"                                             \
	"cqe ud=5 res=0 flags=0x0\n"                                              \
	"cqe ud=6 res=4 flags=0x30001\n"                                          \
	"note bid=3 data=\"MNOP\"\n"                                              \
	"cqe ud=7 res=4 flags=0x40001\n"                                          \
	"note bid=4 data=\"QRST\"\n"                                              \
	"note buffers left in group 1\n"                                          \
	"cqe ud=8 res=4 flags=0x0\n"

#define CAP_GROUP2_NATIVE                                                        \
	"note group 2: 4 buffers of 16; two READs pending on empty pipes\n"      \
	"cqe ud=10 res=0 flags=0x0\n"                                             \
	"note READ 11 on an empty pipe: pending\n"                                \
	"note READ 12 on an empty pipe: pending\n"                                \
	"note a third READ, on the pipe with data\n"                              \
	"cqe ud=13 res=4 flags=0x20001\n"                                         \
	"note bid=2 data=\"abcd\"\n"                                              \
	"note READ 11 gets data; its buffer is provided again\n"                  \
	"cqe ud=11 res=2 flags=0x1\n"                                             \
	"note bid=0 data=\"xy\"\n"                                                \
	"cqe ud=14 res=0 flags=0x0\n"                                             \
	"cqe ud=15 res=4 flags=0x30001\n"                                         \
	"note bid=3 data=\"efgh\"\n"                                              \
	"note READ 12 ends at EOF\n"                                              \
	"cqe ud=12 res=0 flags=0x10001\n"                                         \
	"note bid=1 data=\"\"\n"                                                  \
	"note buffers left in group 2\n"                                          \
	"cqe ud=16 res=1 flags=0x0\n"

/*
 * Cap 2, group 1: the program keeps bids 0 and 1, so the third READ would
 * make a third buffer in use: -ENOBUFS, and its 4 bytes stay in the pipe.
 * With bid 0 provided again the program holds one buffer, so the next READ
 * gets the group's head, bid 2, and those bytes; the READ after that would
 * again be the third buffer held. The group never ran out: 8 provided, 1
 * provided again, 2 kept, so REMOVE finds 6.
 */
#define CAP_GROUP1_CAP2                                                          \
	"note group 1: 8 buffers of 16; READs of 4 bytes, each buffer kept\n"    \
	"cqe ud=1 res=0 flags=0x0\n"                                              \
	"cqe ud=2 res=4 flags=0x1\n"                                              \
	"note bid=0 data=\"ABCD\"\n"                                              \
	"cqe ud=3 res=4 flags=0x10001\n"                                          \
	"note bid=1 data=\"EFGH\"\n"                                              \
	"cqe ud=4 res=-105 flags=0x0\n"                                           \
	"note bid 0 provided again\n"                                             \
	"cqe ud=5 res=0 flags=0x0\n"                                              \
	"cqe ud=6 res=4 flags=0x20001\n"                                          \
	"note bid=2 data=\"IJKL\"\n"                                              \
	"cqe ud=7 res=-105 flags=0x0\n"                                           \
	"note buffers left in group 1\n"                                          \
	"cqe ud=8 res=6 flags=0x0\n"

/*
 * Cap 2, group 2: two pending READs hold bids 0 and 1, so the READ on the
 * pipe with data is refused. Once READ 11 has completed and its bid 0 is in
 * the group again, a READ succeeds with the head, bid 2, and the bytes the
 * refused READ left. REMOVE finds bids 3 and 0.
 */
#define CAP_GROUP2_CAP2                                                          \
	"note group 2: 4 buffers of 16; two READs pending on empty pipes\n"      \
	"cqe ud=10 res=0 flags=0x0\n"                                             \
	"note READ 11 on an empty pipe: pending\n"                                \
	"note READ 12 on an empty pipe: pending\n"                                \
	"note a third READ, on the pipe with data\n"                              \
	"cqe ud=13 res=-105 flags=0x0\n"                                          \
	"note READ 11 gets data; its buffer is provided again\n"                  \
	"cqe ud=11 res=2 flags=0x1\n"                                             \
	"note bid=0 data=\"xy\"\n"                                                \
	"cqe ud=14 res=0 flags=0x0\n"                                             \
	"cqe ud=15 res=4 flags=0x20001\n"                                         \
	"note bid=2 data=\"abcd\"\n"                                              \
	"note READ 12 ends at EOF\n"                                              \
	"cqe ud=12 res=0 flags=0x10001\n"                                         \
	"note bid=1 data=\"\"\n"                                                  \
	"note buffers left in group 2\n"                                          \
	"cqe ud=16 res=2 flags=0x0\n"

#define GROUP2_MARK "note group 2:"

Test(cap, native_all_succeed, .timeout = 30)
{
	run_prog(&run_a, NATIVE, "pol_cap", NULL);
	harness_expect_exit(&run_a, 0, "pol_cap natively");
	expect_text(run_a.out, run_a.out_len, CAP_GROUP1_NATIVE CAP_GROUP2_NATIVE, "pol_cap natively");
}

Test(cap, bufsel_without_cap_all_succeed, .timeout = 30)
{
	run_prog(&run_a, PRELOAD, "pol_cap", NULL);
	harness_expect_exit(&run_a, 0, "pol_cap under bufsel");
	expect_loaded(&run_a, "pol_cap under bufsel");
	expect_text(run_a.out, run_a.out_len, CAP_GROUP1_NATIVE CAP_GROUP2_NATIVE, "pol_cap under bufsel");
}

/* Buffers the program got and has not provided again count against the cap. */
Test(cap, buffers_kept_by_the_program, .timeout = 30)
{
	run_prog(&run_a, PRELOAD, "pol_cap", VARS("BUFSEL_GROUP_1_CAP=2", "BUFSEL_GROUP_2_CAP=2"));
	harness_expect_exit(&run_a, 0, "pol_cap, cap 2");
	expect_loaded(&run_a, "pol_cap, cap 2");
	size_t at;
	split_at(run_a.out, run_a.out_len, GROUP2_MARK, &at);
	expect_text(run_a.out, at, CAP_GROUP1_CAP2, "pol_cap group 1 with BUFSEL_GROUP_1_CAP=2");
}

/* Buffers bound to pending READs count against the cap, whichever variable sets it. */
Test(cap, buffers_held_by_pending_reads, .timeout = 30)
{
	static const char *const what[] = { "pol_cap group 2 with BUFSEL_GROUP_2_CAP=2",
					    "pol_cap group 2 with BUFSEL_CAP=2" };
	const char *const *vars[] = { VARS("BUFSEL_GROUP_1_CAP=2", "BUFSEL_GROUP_2_CAP=2"),
				      VARS("BUFSEL_CAP=2") };
	for (int i = 0; i < 2; i++) {
		run_prog(&run_a, PRELOAD, "pol_cap", vars[i]);
		harness_expect_exit(&run_a, 0, what[i]);
		expect_loaded(&run_a, what[i]);
		size_t at;
		split_at(run_a.out, run_a.out_len, GROUP2_MARK, &at);
		expect_text(run_a.out + at, run_a.out_len - at, CAP_GROUP2_CAP2, what[i]);
	}
}

/* ---- max_len -------------------------------------------------------------- */

#define MAXLEN_NATIVE                                                  \
	"note group 1: 8 buffers of 16\n"                              \
	"cqe ud=1 res=0 flags=0x0\n"                                    \
	"note READ len 16, twice\n"                                     \
	"cqe ud=2 res=16 flags=0x1\n"                                   \
	"note bid=0 data=\"0123456789abcdef\"\n"                        \
	"cqe ud=3 res=16 flags=0x10001\n"                               \
	"note bid=1 data=\"ghijklmnopqrstuv\"\n"                        \
	"note READ len 0: the whole buffer\n"                           \
	"cqe ud=4 res=16 flags=0x20001\n"                               \
	"note bid=2 data=\"wxyzABCDEFGHIJKL\"\n"                        \
	"note READ len 3\n"                                             \
	"cqe ud=5 res=3 flags=0x30001\n"                                \
	"note bid=3 data=\"MNO\"\n"                                     \
	"note READV iov_len 16\n"                                       \
	"cqe ud=6 res=16 flags=0x40001\n"                               \
	"note bid=4 data=\"PQRSTUVWXYZ+/<>(\"\n"                        \
	"note RECV len 0 on a socket holding 16 bytes\n"                \
	"cqe ud=7 res=16 flags=0x50001\n"                               \
	"note bid=5 data=\"socket-data-0123\"\n"

/*
 * max_len 5: every selected buffer is 5 bytes long, so each request gets the
 * next 5 bytes of its stream (3 for the READ that asks for 3), and the RECV
 * leaves 11 bytes queued (F_SOCK_NONEMPTY, 0x4).
 */
#define MAXLEN_5                                                       \
	"note group 1: 8 buffers of 16\n"                              \
	"cqe ud=1 res=0 flags=0x0\n"                                    \
	"note READ len 16, twice\n"                                     \
	"cqe ud=2 res=5 flags=0x1\n"                                    \
	"note bid=0 data=\"01234\"\n"                                   \
	"cqe ud=3 res=5 flags=0x10001\n"                                \
	"note bid=1 data=\"56789\"\n"                                   \
	"note READ len 0: the whole buffer\n"                           \
	"cqe ud=4 res=5 flags=0x20001\n"                                \
	"note bid=2 data=\"abcde\"\n"                                   \
	"note READ len 3\n"                                             \
	"cqe ud=5 res=3 flags=0x30001\n"                                \
	"note bid=3 data=\"fgh\"\n"                                     \
	"note READV iov_len 16\n"                                       \
	"cqe ud=6 res=5 flags=0x40001\n"                                \
	"note bid=4 data=\"ijklm\"\n"                                   \
	"note RECV len 0 on a socket holding 16 bytes\n"                \
	"cqe ud=7 res=5 flags=0x50005\n"                                \
	"note bid=5 data=\"socke\"\n"

Test(max_len, native_whole_buffers, .timeout = 30)
{
	run_prog(&run_a, NATIVE, "pol_maxlen", NULL);
	harness_expect_exit(&run_a, 0, "pol_maxlen natively");
	expect_text(run_a.out, run_a.out_len, MAXLEN_NATIVE, "pol_maxlen natively");
}

Test(max_len, group_limit_gives_short_reads, .timeout = 30)
{
	run_prog(&run_a, PRELOAD, "pol_maxlen", VARS("BUFSEL_GROUP_1_MAX_LEN=5"));
	harness_expect_exit(&run_a, 0, "pol_maxlen, BUFSEL_GROUP_1_MAX_LEN=5");
	expect_loaded(&run_a, "pol_maxlen, BUFSEL_GROUP_1_MAX_LEN=5");
	expect_text(run_a.out, run_a.out_len, MAXLEN_5, "pol_maxlen, BUFSEL_GROUP_1_MAX_LEN=5");
}

/* The all-groups variable reaches group 1; another group's leaves it whole. */
Test(max_len, scope_of_the_variables, .timeout = 30)
{
	run_prog(&run_a, PRELOAD, "pol_maxlen", VARS("BUFSEL_MAX_LEN=5"));
	harness_expect_exit(&run_a, 0, "pol_maxlen, BUFSEL_MAX_LEN=5");
	expect_text(run_a.out, run_a.out_len, MAXLEN_5, "pol_maxlen, BUFSEL_MAX_LEN=5");
	run_prog(&run_a, PRELOAD, "pol_maxlen", VARS("BUFSEL_GROUP_2_MAX_LEN=5"));
	harness_expect_exit(&run_a, 0, "pol_maxlen, BUFSEL_GROUP_2_MAX_LEN=5");
	expect_loaded(&run_a, "pol_maxlen, BUFSEL_GROUP_2_MAX_LEN=5");
	expect_text(run_a.out, run_a.out_len, MAXLEN_NATIVE, "pol_maxlen, BUFSEL_GROUP_2_MAX_LEN=5");
}

/* ---- enobufs_rate and seed ------------------------------------------------- */

#define INJECT_READS 64
static const char inject_bytes[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz+/";

/*
 * What pol_inject prints when all 64 READs succeed (fail false: natively,
 * rate 0) or all fail (fail true: rate 1, and every buffer is still in the
 * group for REMOVE).
 */
static const char *inject_expected(bool fail)
{
	static char text[16384];
	size_t k = 0;
#define PUT(...) (k += (size_t)snprintf(text + k, sizeof(text) - k, __VA_ARGS__))
	PUT("note group 1: %d buffers of 4; %d READs of 1 byte\n", INJECT_READS, INJECT_READS);
	PUT("cqe ud=1 res=0 flags=0x0\n");
	for (unsigned i = 0; i < INJECT_READS; i++) {
		if (fail) {
			PUT("cqe ud=%u res=-105 flags=0x0\n", 100 + i);
		} else {
			PUT("cqe ud=%u res=1 flags=0x%x\n", 100 + i, i << 16 | 1);
			PUT("note bid=%u data=\"%c\"\n", i, inject_bytes[i]);
		}
	}
	PUT("note %d of %d READs failed with -ENOBUFS\n", fail ? INJECT_READS : 0, INJECT_READS);
	PUT("note buffers left in group 1\n");
	PUT("cqe ud=2 res=%d flags=0x0\n", fail ? INJECT_READS : 0);
#undef PUT
	cr_assert(k < sizeof(text));
	return text;
}

Test(enobufs_rate, one_fails_every_selection, .timeout = 30)
{
	run_prog(&run_a, PRELOAD, "pol_inject", VARS("BUFSEL_ENOBUFS_RATE=1"));
	harness_expect_exit(&run_a, 0, "pol_inject, BUFSEL_ENOBUFS_RATE=1");
	expect_loaded(&run_a, "pol_inject, BUFSEL_ENOBUFS_RATE=1");
	expect_text(run_a.out, run_a.out_len, inject_expected(true), "pol_inject, BUFSEL_ENOBUFS_RATE=1");
}

Test(enobufs_rate, zero_fails_none, .timeout = 30)
{
	run_prog(&run_a, NATIVE, "pol_inject", NULL);
	harness_expect_exit(&run_a, 0, "pol_inject natively");
	expect_text(run_a.out, run_a.out_len, inject_expected(false), "pol_inject natively");
	run_prog(&run_a, PRELOAD, "pol_inject", VARS("BUFSEL_ENOBUFS_RATE=0"));
	harness_expect_exit(&run_a, 0, "pol_inject, BUFSEL_ENOBUFS_RATE=0");
	expect_loaded(&run_a, "pol_inject, BUFSEL_ENOBUFS_RATE=0");
	expect_text(run_a.out, run_a.out_len, inject_expected(false), "pol_inject, BUFSEL_ENOBUFS_RATE=0");
}

/*
 * A run at rate 0.5: the failures it reports must be strictly between none
 * and all (else the rate did not apply as a rate), and REMOVE must find one
 * buffer per failure, the buffers that stayed in the group.
 */
static void run_half(struct run *r, const char *seed_var)
{
	char what[96];
	snprintf(what, sizeof(what), "pol_inject, BUFSEL_ENOBUFS_RATE=0.5 %s", seed_var);
	run_prog(r, PRELOAD, "pol_inject", VARS("BUFSEL_ENOBUFS_RATE=0.5", seed_var));
	harness_expect_exit(r, 0, what);
	expect_loaded(r, what);
	const char *note = strstr(r->out, "READs failed with -ENOBUFS");
	const char *rm = strstr(r->out, "note buffers left in group 1\ncqe ud=2 res=");
	int failed = -1, reads = -1, left = -1;
	cr_assert(note && rm, "%s: no summary in\n%s", what, r->out);
	while (note > r->out && note[-1] != '\n')
		note--;
	cr_assert(sscanf(note, "note %d of %d READs", &failed, &reads) == 2 &&
			  sscanf(rm, "note buffers left in group 1\ncqe ud=2 res=%d", &left) == 1,
		  "%s: unreadable summary in\n%s", what, r->out);
	cr_assert(reads == INJECT_READS && failed > 0 && failed < INJECT_READS,
		  "%s: %d of %d READs failed; at rate 0.5 some must fail and some succeed\n%s", what, failed,
		  reads, r->out);
	cr_assert(left == failed, "%s: %d READs failed, but REMOVE found %d buffers in the group", what,
		  failed, left);
}

Test(seed, same_seed_same_failures, .timeout = 30)
{
	run_half(&run_a, "BUFSEL_SEED=42");
	run_half(&run_b, "BUFSEL_SEED=42");
	expect_text(run_b.out, run_b.out_len, run_a.out, "pol_inject, rate 0.5 seed 42, second run against the first");
}

Test(seed, other_seed_other_failures, .timeout = 30)
{
	run_half(&run_a, "BUFSEL_SEED=42");
	run_half(&run_b, "BUFSEL_SEED=43");
	cr_assert(run_a.out_len != run_b.out_len || memcmp(run_a.out, run_b.out, run_a.out_len),
		  "pol_inject at rate 0.5: seeds 42 and 43 gave the same %d selections:\n%s", INJECT_READS,
		  run_a.out);
}

/* ---- stats ------------------------------------------------------------------ */

/*
 * pol_stats under the variables below: group 2's second READ is refused by
 * the cap (one buffer is held by the pending READ), group 3's only READ by
 * the rate; the READ on the emptied group 1 fails natively too.
 */
#define STATS_VARS "BUFSEL_GROUP_2_CAP=1", "BUFSEL_GROUP_3_ENOBUFS_RATE=1", "BUFSEL_GROUP_3_SEED=7"

#define STATS_OUT                                                             \
	"note group 1: 4 buffers of 16; READs of 3, 5 and 7 bytes\n"          \
	"cqe ud=1 res=0 flags=0x0\n"                                           \
	"cqe ud=2 res=3 flags=0x1\n"                                           \
	"note bid=0 data=\"abc\"\n"                                            \
	"cqe ud=3 res=5 flags=0x10001\n"                                       \
	"note bid=1 data=\"defgh\"\n"                                          \
	"cqe ud=4 res=7 flags=0x20001\n"                                       \
	"note bid=2 data=\"ijklmno\"\n"                                        \
	"note RECV at EOF: no F_BUFFER, the buffer goes back\n"                \
	"cqe ud=5 res=0 flags=0x0\n"                                           \
	"note REMOVE the last buffer, then READ on the empty group\n"          \
	"cqe ud=6 res=1 flags=0x0\n"                                           \
	"cqe ud=7 res=-105 flags=0x0\n"                                        \
	"note group 2: 2 buffers of 16; a READ pending on an empty pipe\n"    \
	"cqe ud=10 res=0 flags=0x0\n"                                          \
	"note READ 11 on an empty pipe: pending\n"                             \
	"note a second READ, on the pipe with data\n"                          \
	"cqe ud=12 res=-105 flags=0x0\n"                                       \
	"cqe ud=11 res=2 flags=0x1\n"                                          \
	"note bid=0 data=\"zz\"\n"                                             \
	"note group 3: 1 buffer of 16; one READ\n"                             \
	"cqe ud=20 res=0 flags=0x0\n"                                          \
	"cqe ud=21 res=-105 flags=0x0\n"

/*
 * A small JSON reader, enough for the statistics file: it checks the syntax
 * of the whole text and keeps a tree of nodes (each member of an object
 * remembers its key), so that fields are found by name and not by position
 * in the text.
 */
struct jnode {
	char type;		/* 'o' object, 'a' array, 'n' number, 's' string, 'l' true/false/null */
	const char *key;	/* member name (inside the quotes) when the parent is an object */
	size_t key_len;
	const char *text;	/* the value as written; a string without its quotes */
	size_t len;
	int first, next;	/* first child, next sibling; -1 for none */
};

static struct jnode jn[8192];
static int jcount;
static const char *jp, *jend;
static char jerr[256];

static void jws(void)
{
	while (jp < jend && (*jp == ' ' || *jp == '\t' || *jp == '\n' || *jp == '\r'))
		jp++;
}

static int jfail(const char *what)
{
	if (!jerr[0])
		snprintf(jerr, sizeof(jerr), "%s at \"%.30s\"", what, jp);
	return -1;
}

static bool jstring(const char **s, size_t *n)
{
	if (jp >= jend || *jp != '"')
		return false;
	*s = ++jp;
	while (jp < jend && *jp != '"') {
		if ((unsigned char)*jp < 0x20)
			return false;
		if (*jp == '\\' && ++jp >= jend)
			return false;
		jp++;
	}
	if (jp >= jend)
		return false;
	*n = (size_t)(jp - *s);
	jp++;
	return true;
}

static int jvalue(int depth)
{
	jws();
	if (depth > 16 || jcount == (int)(sizeof(jn) / sizeof(jn[0])))
		return jfail("too deep or too many values");
	int me = jcount++;
	struct jnode *n = &jn[me];
	memset(n, 0, sizeof(*n));
	n->first = n->next = -1;
	n->text = jp;
	if (jp >= jend)
		return jfail("value expected");
	if (*jp == '{' || *jp == '[') {
		char close = *jp == '{' ? '}' : ']';
		n->type = *jp == '{' ? 'o' : 'a';
		jp++;
		jws();
		int last = -1;
		if (jp < jend && *jp == close) {
			jp++;
			n->len = (size_t)(jp - n->text);
			return me;
		}
		for (;;) {
			const char *key = NULL;
			size_t key_len = 0;
			jws();
			if (n->type == 'o') {
				if (!jstring(&key, &key_len))
					return jfail("member name expected");
				jws();
				if (jp >= jend || *jp++ != ':')
					return jfail("':' expected");
			}
			int child = jvalue(depth + 1);
			if (child < 0)
				return -1;
			jn[child].key = key;
			jn[child].key_len = key_len;
			if (last < 0)
				jn[me].first = child;
			else
				jn[last].next = child;
			last = child;
			jws();
			if (jp < jend && *jp == ',') {
				jp++;
				continue;
			}
			if (jp < jend && *jp == close) {
				jp++;
				break;
			}
			return jfail("',' or end of container expected");
		}
	} else if (*jp == '"') {
		n->type = 's';
		if (!jstring(&n->text, &n->len))
			return jfail("bad string");
		return me;
	} else if (*jp == '-' || isdigit((unsigned char)*jp)) {
		n->type = 'n';
		char *end;
		errno = 0;
		strtod(jp, &end);
		if (end == jp || end > jend)
			return jfail("bad number");
		jp = end;
	} else {
		static const char *const lits[] = { "true", "false", "null" };
		size_t i;
		for (i = 0; i < 3; i++)
			if ((size_t)(jend - jp) >= strlen(lits[i]) && !memcmp(jp, lits[i], strlen(lits[i])))
				break;
		if (i == 3)
			return jfail("value expected");
		n->type = 'l';
		jp += strlen(lits[i]);
	}
	jn[me].len = (size_t)(jp - jn[me].text);
	return me;
}

/* The root node of text, or a failed assertion saying what is wrong with it. */
static int jparse(const char *text, size_t len)
{
	jcount = 0;
	jerr[0] = 0;
	jp = text;
	jend = text + len;
	int root = jvalue(0);
	jws();
	if (root >= 0 && jp != jend)
		root = jfail("text after the document");
	cr_assert(root >= 0, "statistics file is not JSON: %s\n%s", jerr, text);
	return root;
}

static int jmember(int obj, const char *key)
{
	if (obj < 0 || jn[obj].type != 'o')
		return -1;
	for (int c = jn[obj].first; c >= 0; c = jn[c].next)
		if (jn[c].key_len == strlen(key) && !memcmp(jn[c].key, key, jn[c].key_len))
			return c;
	return -1;
}

/* A dotted path of member names, "enobufs.capped"; -1 if any is missing. */
static int jpath(int node, const char *path)
{
	char part[64];
	while (node >= 0 && *path) {
		size_t n = strcspn(path, ".");
		snprintf(part, sizeof(part), "%.*s", (int)n, path);
		node = jmember(node, part);
		path += n + (path[n] == '.');
	}
	return node;
}

static int jlen(int arr)
{
	int n = 0;
	for (int c = jn[arr].first; c >= 0; c = jn[c].next)
		n++;
	return n;
}

static int jindex(int arr, int i)
{
	int c = jn[arr].first;
	while (c >= 0 && i-- > 0)
		c = jn[c].next;
	return c;
}

/* An unsigned integer written as digits only, as the schema promises. */
static uint64_t jint(int node, const char *what)
{
	cr_assert(node >= 0, "%s: missing", what);
	cr_assert(jn[node].type == 'n' && jn[node].len > 0 && jn[node].len < 21, "%s: not an integer: %.*s",
		  what, (int)jn[node].len, jn[node].text);
	uint64_t v = 0;
	for (size_t i = 0; i < jn[node].len; i++) {
		cr_assert(isdigit((unsigned char)jn[node].text[i]), "%s: not an unsigned integer: %.*s", what,
			  (int)jn[node].len, jn[node].text);
		v = v * 10 + (uint64_t)(jn[node].text[i] - '0');
	}
	return v;
}

static void expect_jtext(int node, char type, const char *want, const char *what)
{
	cr_assert(node >= 0, "%s: missing", what);
	cr_assert(jn[node].type == type && jn[node].len == strlen(want) && !memcmp(jn[node].text, want, jn[node].len),
		  "%s: %.*s, expected %s", what, (int)jn[node].len, jn[node].text, want);
}

struct field {
	const char *path;
	uint64_t value;
};

#define HIST_LEN 33

struct want_group {
	unsigned bgid;
	const char *rate, *seed; /* as written: a number, a string */
	struct field fields[32];
	uint64_t bytes_hist[HIST_LEN], in_use_hist[HIST_LEN];
};

/*
 * What pol_stats did to each group, counted by hand from the program:
 * group 1: 4 provided; 3 READs and the RECV selected (4), the RECV's buffer
 *   returned at EOF, the READs' consumed with 3 + 5 + 7 bytes; 1 removed;
 *   the READ on the emptied group is the one -ENOBUFS, "empty". One buffer
 *   in use at a time.
 * group 2 (cap 1): the pending READ selected one buffer and was delivered 2
 *   bytes; the READ meanwhile was refused, "capped"; 1 buffer left.
 * group 3 (rate 1, seed 7): the READ was refused, "injected"; nothing
 *   selected, the buffer still there.
 * With statistics on, buffers the program keeps are counted: group 1 keeps
 * the three READs' buffers (held 3; out at once peaked at 4 when the RECV
 * took the last one), group 2 the delivered one (held 1).
 * wait is left out: whether a receive that finds its socket readable counts
 * as a wait, and for how many nanoseconds, is not fixed by the script.
 */
static const struct want_group stats_groups[] = {
	{ 1, "0", "1",
	  { { "policy.cap", 0 }, { "policy.max_len", 0 }, { "available", 0 }, { "in_use", 0 },
	    { "peak_in_use", 1 }, { "held", 3 }, { "peak_out", 4 }, { "size", 3 }, { "peak_size", 4 },
	    { "buf_len", 16 }, { "provided", 4 }, { "removed", 1 }, { "selected", 4 }, { "returned", 1 },
	    { "consumed", 3 }, { "enobufs.total", 1 }, { "enobufs.empty", 1 }, { "enobufs.capped", 0 },
	    { "enobufs.injected", 0 }, { "bytes_used.count", 3 }, { "bytes_used.sum", 15 } },
	  { [2] = 1, [3] = 2 }, /* 3 is in 2-3, 5 and 7 in 4-7 */
	  { [1] = 4 } },
	{ 2, "0", "1",
	  { { "policy.cap", 1 }, { "policy.max_len", 0 }, { "available", 1 }, { "in_use", 0 },
	    { "peak_in_use", 1 }, { "held", 1 }, { "peak_out", 1 }, { "size", 2 }, { "peak_size", 2 },
	    { "buf_len", 16 }, { "provided", 2 }, { "removed", 0 }, { "selected", 1 }, { "returned", 0 },
	    { "consumed", 1 }, { "enobufs.total", 1 }, { "enobufs.empty", 0 }, { "enobufs.capped", 1 },
	    { "enobufs.injected", 0 }, { "bytes_used.count", 1 }, { "bytes_used.sum", 2 } },
	  { [2] = 1 },
	  { [1] = 1 } },
	{ 3, "1", "7",
	  { { "policy.cap", 0 }, { "policy.max_len", 0 }, { "available", 1 }, { "in_use", 0 },
	    { "peak_in_use", 0 }, { "held", 0 }, { "peak_out", 0 }, { "size", 1 }, { "peak_size", 1 },
	    { "buf_len", 16 }, { "provided", 1 }, { "removed", 0 }, { "selected", 0 }, { "returned", 0 },
	    { "consumed", 0 }, { "enobufs.total", 1 }, { "enobufs.empty", 0 }, { "enobufs.capped", 0 },
	    { "enobufs.injected", 1 }, { "bytes_used.count", 0 }, { "bytes_used.sum", 0 } },
	  { 0 },
	  { 0 } },
};

/* The members of a group object, in the order the schema fixes. */
static const char *const group_keys[] = { "bgid",	 "policy",   "available", "in_use",	  "peak_in_use",
					  "held",	 "peak_out", "size",	  "peak_size",	  "buf_len",
					  "provided",	 "removed",  "selected",  "returned",	  "consumed",
					  "enobufs",	 "wait",     "bytes_used", "in_use_hist" };

static void expect_hist(int node, const uint64_t *want, const char *what)
{
	cr_assert(node >= 0 && jn[node].type == 'a' && jlen(node) == HIST_LEN, "%s: not an array of %d", what,
		  HIST_LEN);
	for (int b = 0; b < HIST_LEN; b++) {
		char w[96];
		snprintf(w, sizeof(w), "%s[%d]", what, b);
		uint64_t got = jint(jindex(node, b), w);
		cr_assert(got == want[b], "%s is %" PRIu64 ", expected %" PRIu64 "\n(the array: %.*s)", w, got,
			  want[b], (int)jn[node].len, jn[node].text);
	}
}

static void expect_group(int g, const struct want_group *w, const char *text)
{
	char what[128];
	snprintf(what, sizeof(what), "group %u", w->bgid);
	cr_assert(jn[g].type == 'o', "%s: not an object", what);
	/* Compact format: each group object alone on its line. */
	cr_assert(jn[g].text > text && jn[g].text[-1] == '\n' && !memchr(jn[g].text, '\n', jn[g].len) &&
			  jn[g].text[jn[g].len] != '\0' && strchr(",\n", jn[g].text[jn[g].len]),
		  "%s is not alone on its line: %.*s", what, (int)jn[g].len, jn[g].text);
	int c = jn[g].first;
	for (size_t i = 0; i < sizeof(group_keys) / sizeof(group_keys[0]); i++, c = jn[c].next) {
		cr_assert(c >= 0, "%s: ends before \"%s\"", what, group_keys[i]);
		cr_assert(jn[c].key_len == strlen(group_keys[i]) && !memcmp(jn[c].key, group_keys[i], jn[c].key_len),
			  "%s: member %zu is \"%.*s\", the schema puts \"%s\" there", what, i + 1,
			  (int)jn[c].key_len, jn[c].key, group_keys[i]);
	}
	cr_assert(jint(jmember(g, "bgid"), what) == w->bgid);
	char f[160];
	for (const struct field *x = w->fields; x->path; x++) {
		snprintf(f, sizeof(f), "%s: %s", what, x->path);
		uint64_t got = jint(jpath(g, x->path), f);
		cr_assert(got == x->value, "%s is %" PRIu64 ", expected %" PRIu64 "\n(the group: %.*s)", f, got,
			  x->value, (int)jn[g].len, jn[g].text);
	}
	snprintf(f, sizeof(f), "%s: policy.enobufs_rate", what);
	expect_jtext(jpath(g, "policy.enobufs_rate"), 'n', w->rate, f);
	snprintf(f, sizeof(f), "%s: policy.seed", what);
	expect_jtext(jpath(g, "policy.seed"), 's', w->seed, f);
	snprintf(f, sizeof(f), "%s: wait.count", what);
	jint(jpath(g, "wait.count"), f);
	snprintf(f, sizeof(f), "%s: wait.ns", what);
	jint(jpath(g, "wait.ns"), f);
	snprintf(f, sizeof(f), "%s: bytes_used.hist", what);
	expect_hist(jpath(g, "bytes_used.hist"), w->bytes_hist, f);
	snprintf(f, sizeof(f), "%s: in_use_hist", what);
	expect_hist(jmember(g, "in_use_hist"), w->in_use_hist, f);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	cr_assert(f != NULL, "%s: %s", path, strerror(errno));
	static char *buf;
	size_t cap = 0;
	free(buf);
	buf = NULL;
	*len = 0;
	for (;;) {
		if (*len + 4096 + 1 > cap) {
			cap = 2 * cap + 8192;
			buf = realloc(buf, cap);
			cr_assert(buf != NULL);
		}
		size_t n = fread(buf + *len, 1, cap - *len - 1, f);
		*len += n;
		if (n == 0)
			break;
	}
	fclose(f);
	buf[*len] = '\0';
	return buf;
}

Test(stats, json_file_counts_the_script, .timeout = 30)
{
	char path[] = "/tmp/bufsel-policy-stats-XXXXXX";
	static char var[64];
	int fd = mkstemp(path);
	cr_assert(fd >= 0, "mkstemp: %s", strerror(errno));
	close(fd);
	snprintf(var, sizeof(var), "BUFSEL_STATS=%s", path);
	run_prog(&run_a, PRELOAD, "pol_stats", VARS(var, STATS_VARS));
	size_t len;
	const char *text = slurp(path, &len);
	unlink(path);
	harness_expect_exit(&run_a, 0, "pol_stats with BUFSEL_STATS=file");
	expect_loaded(&run_a, "pol_stats with BUFSEL_STATS=file");
	expect_text(run_a.out, run_a.out_len, STATS_OUT, "pol_stats with policies");

	int root = jparse(text, len);
	cr_assert(jn[root].type == 'o', "the document is not an object:\n%s", text);
	cr_assert(jint(jmember(root, "pid"), "pid") == (uint64_t)run_a.pid, "pid is not the program's (%d):\n%s",
		  (int)run_a.pid, text);
	int rings = jmember(root, "rings");
	cr_assert(rings >= 0 && jn[rings].type == 'a' && jlen(rings) == 1, "rings: not an array of one ring:\n%s",
		  text);
	int ring = jindex(rings, 0);
	jint(jmember(ring, "ring"), "ring");
	cr_assert(jint(jmember(ring, "peak_in_use"), "ring peak_in_use") == 1,
		  "the ring's peak_in_use: no two buffers were ever in use at once\n%s", text);
	cr_assert(jint(jmember(ring, "strays"), "strays") == 0, "strays is not 0:\n%s", text);
	int groups = jmember(ring, "groups");
	size_t ngroups = sizeof(stats_groups) / sizeof(stats_groups[0]);
	cr_assert(groups >= 0 && jn[groups].type == 'a' && jlen(groups) == (int)ngroups,
		  "groups: not an array of %zu:\n%s", ngroups, text);
	for (size_t i = 0; i < ngroups; i++)
		expect_group(jindex(groups, (int)i), &stats_groups[i], text);
}

/*
 * BUFSEL_STATS=-: the table of docs/stats-schema.md on stderr, every line
 * prefixed, one row per group with provided, peak in use, selected, the
 * -ENOBUFS reasons and the byte percentiles as bucket ranges.
 */
Test(stats, table_on_stderr, .timeout = 30)
{
	run_prog(&run_a, PRELOAD, "pol_stats", VARS("BUFSEL_STATS=-", STATS_VARS));
	harness_expect_exit(&run_a, 0, "pol_stats with BUFSEL_STATS=-");
	expect_loaded(&run_a, "pol_stats with BUFSEL_STATS=-");
	expect_text(run_a.out, run_a.out_len, STATS_OUT, "pol_stats with policies");
	cr_assert(run_a.err_len > 0 && run_a.err[run_a.err_len - 1] == '\n', "stderr does not end a line:\n%s",
		  run_a.err);

	static const struct {
		unsigned bgid;
		unsigned long provided, peak, selected, e, c, i;
		const char *p50, *p99;
	} rows[] = {
		{ 1, 4, 1, 4, 1, 0, 0, "4-7", "4-7" },
		{ 2, 2, 1, 1, 0, 1, 0, "2-3", "2-3" },
		{ 3, 1, 0, 0, 0, 0, 1, "-", "-" },
	};
	size_t row = 0, heading = 0, header = 0;
	const char *line;
	size_t n;
	for (size_t i = 0; nth_line(run_a.err, run_a.err_len, i, &line, &n); i++) {
		char l[512];
		snprintf(l, sizeof(l), "%.*s", (int)n, line);
		cr_assert(!strncmp(l, "bufsel: ", 8), "stderr line %zu does not start \"bufsel: \": \"%s\"\n%s", i + 1, l,
			  run_a.err);
		if (!strcmp(l, "bufsel: buffer pools")) {
			heading++;
			continue;
		}
		if (strstr(l, " bgid ") || !strncmp(l, "bufsel:  bgid", 13)) {
			cr_assert(strstr(l, "provided") && strstr(l, "peak in use") && strstr(l, "selected") &&
					  strstr(l, "-ENOBUFS e/c/i") && strstr(l, "bytes p50") && strstr(l, "bytes p99"),
				  "table header lacks a column: \"%s\"", l);
			header++;
			continue;
		}
		unsigned bgid;
		unsigned long prov, peak, sel, e, c, inj;
		char p50[32], p99[32];
		int used = -1;
		if (sscanf(l, "bufsel: %u %lu %lu %lu %lu/%lu/%lu %31s %31s%n", &bgid, &prov, &peak, &sel, &e, &c, &inj,
			   p50, p99, &used) != 9 || used != (int)strlen(l))
			continue; /* the exit line and any other line of bufsel's */
		cr_assert(row < 3, "more than 3 table rows:\n%s", run_a.err);
		cr_assert(bgid == rows[row].bgid && prov == rows[row].provided && peak == rows[row].peak &&
				  sel == rows[row].selected && e == rows[row].e && c == rows[row].c &&
				  inj == rows[row].i && !strcmp(p50, rows[row].p50) && !strcmp(p99, rows[row].p99),
			  "table row %zu is \"%s\", expected bgid %u provided %lu peak %lu selected %lu "
			  "-ENOBUFS %lu/%lu/%lu p50 %s p99 %s",
			  row + 1, l, rows[row].bgid, rows[row].provided, rows[row].peak, rows[row].selected,
			  rows[row].e, rows[row].c, rows[row].i, rows[row].p50, rows[row].p99);
		row++;
	}
	cr_assert(heading == 1 && header == 1 && row == 3,
		  "expected one \"buffer pools\" line, one header and 3 rows; got %zu, %zu and %zu:\n%s", heading,
		  header, row, run_a.err);
}

/* ---- configuration errors -------------------------------------------------- */

/*
 * Exit status 1, nothing on stdout, and exactly one line on stderr that is
 * bufsel's and contains every one of needles.
 */
static void expect_one_error(const struct run *r, const char *what, const char *n1, const char *n2)
{
	harness_expect_exit(r, 1, what);
	cr_assert(r->out_len == 0, "%s: stdout is not empty:\n%s", what, r->out);
	const char *nl = memchr(r->err, '\n', r->err_len);
	cr_assert(r->err_len > 0 && nl == r->err + r->err_len - 1,
		  "%s: stderr is not exactly one line:\n%s", what, r->err);
	cr_assert(!strncmp(r->err, "bufsel: ", 8) && strstr(r->err, n1) && (!n2 || strstr(r->err, n2)),
		  "%s: the line does not say \"%s\"%s%s%s: %s", what, n1, n2 ? " and \"" : "", n2 ? n2 : "",
		  n2 ? "\"" : "", r->err);
}

/* The same program with a good value runs, so the bad value is what stops it. */
static void expect_true_runs(enum how how, const char *const *vars, const char *what)
{
	run_exe(&run_b, how, false, "/bin/true", vars);
	harness_expect_exit(&run_b, 0, what);
	cr_assert(run_b.err_len == 0, "%s: stderr is not empty:\n%s", what, run_b.err);
}

Test(config, bad_variable_under_ld_preload, .timeout = 30)
{
	expect_true_runs(PRELOAD, VARS("BUFSEL_GROUP_1_CAP=2"), "/bin/true, LD_PRELOAD, BUFSEL_GROUP_1_CAP=2");
	run_exe(&run_a, PRELOAD, false, "/bin/true", VARS("BUFSEL_GROUP_1_CAP=abc"));
	expect_one_error(&run_a, "/bin/true, LD_PRELOAD, BUFSEL_GROUP_1_CAP=abc", "BUFSEL_GROUP_1_CAP", "abc");
}

Test(config, bad_variable_through_the_launcher, .timeout = 30)
{
	expect_true_runs(LAUNCHER, VARS("BUFSEL_GROUP_1_CAP=2"), "bufsel -- /bin/true, BUFSEL_GROUP_1_CAP=2");
	run_exe(&run_a, LAUNCHER, false, "/bin/true", VARS("BUFSEL_GROUP_1_CAP=abc"));
	expect_one_error(&run_a, "bufsel -- /bin/true, BUFSEL_GROUP_1_CAP=abc", "BUFSEL_GROUP_1_CAP", "abc");
}

/*
 * A configuration file whose fourth line has a bad value (after a comment, a
 * good line and a blank one, so that the line number counts every kind):
 * the message names FILE:4. The same file with the value fixed is accepted.
 */
static void bad_file(enum how how, const char *how_name)
{
	char path[] = "/tmp/bufsel-policy-conf-XXXXXX";
	static char var[64], where[64], what[128];
	int fd = mkstemp(path);
	cr_assert(fd >= 0, "mkstemp: %s", strerror(errno));
	static const char good[] = "# policy test\nlog = warn\n\ngroup.1.cap = 4\n";
	static const char bad[] = "# policy test\nlog = warn\n\ngroup.1.cap = abc\n";
	bool wrote = write(fd, good, sizeof(good) - 1) == (ssize_t)sizeof(good) - 1;
	close(fd);
	cr_assert(wrote, "writing %s failed", path);
	snprintf(var, sizeof(var), "BUFSEL_CONF=%s", path);
	snprintf(what, sizeof(what), "/bin/true, %s, a good configuration file", how_name);
	run_exe(&run_b, how, false, "/bin/true", VARS(var));

	fd = open(path, O_WRONLY | O_TRUNC);
	wrote = fd >= 0 && write(fd, bad, sizeof(bad) - 1) == (ssize_t)sizeof(bad) - 1;
	if (fd >= 0)
		close(fd);
	if (wrote)
		run_exe(&run_a, how, false, "/bin/true", VARS(var));
	unlink(path);
	cr_assert(wrote, "rewriting %s failed", path);
	harness_expect_exit(&run_b, 0, what);
	cr_assert(run_b.err_len == 0, "%s: stderr is not empty:\n%s", what, run_b.err);

	snprintf(where, sizeof(where), "%s:4:", path);
	snprintf(what, sizeof(what), "/bin/true, %s, a bad line 4 in %s", how_name, path);
	expect_one_error(&run_a, what, where, "group.1.cap");
}

Test(config, bad_file_line_under_ld_preload, .timeout = 30)
{
	bad_file(PRELOAD, "LD_PRELOAD");
}

Test(config, bad_file_line_through_the_launcher, .timeout = 30)
{
	bad_file(LAUNCHER, "bufsel --");
}

/* ---- a cap on a buffer ring ------------------------------------------------ */

/* bufsel report on a statistics file (removed after) prints want. */
static void report_says(const char *path, const char *want)
{
	const char *argv[] = { launcher_path(), "report", path, NULL };
	size_t k;
	char **env = harness_env(0, &k);
	env[k] = NULL;
	harness_run(&run_b, (char **)argv, env, RUN_TIMEOUT);
	unlink(path);
	harness_expect_exit(&run_b, 0, "bufsel report");
	cr_assert(strstr(run_b.out, want), "bufsel report does not say \"%s\":\n%s", want, run_b.out);
}

/*
 * A cap names group 1, which is a buffer ring: with rings = auto bufsel keeps
 * that ring itself (the kernel has rings of its own) so that the cap can
 * apply.  Twelve receives, a ring of 16, a cap of 8, no buffer given back:
 * eight receive and four fail with -ENOBUFS, counted as capped; the
 * statistics show the ring, and bufsel report sizes it as a ring (a power of
 * two).  Natively all twelve receive.
 */
Test(cap, on_a_buffer_ring, .timeout = 30)
{
	run_prog(&run_a, NATIVE, "pol_ring_cap", NULL);
	harness_expect_exit(&run_a, 0, "pol_ring_cap natively");
	cr_assert(strstr(run_a.out, "note 12 received, 0 -ENOBUFS\n"), "%s", run_a.out);

	char path[] = "/tmp/bufsel-policy-ring-XXXXXX";
	static char var[64];
	int fd = mkstemp(path);
	cr_assert(fd >= 0, "mkstemp: %s", strerror(errno));
	close(fd);
	snprintf(var, sizeof(var), "BUFSEL_STATS=%s", path);
	run_prog(&run_a, PRELOAD, "pol_ring_cap", VARS(var, "BUFSEL_GROUP_1_CAP=8"));
	size_t len;
	const char *text = slurp(path, &len);
	harness_expect_exit(&run_a, 0, "pol_ring_cap, cap 8");
	expect_loaded(&run_a, "pol_ring_cap, cap 8");
	cr_assert(strstr(run_a.out, "note 8 received, 4 -ENOBUFS\n"), "%s", run_a.out);
	int root = jparse(text, len);
	int group = jindex(jmember(jindex(jmember(root, "rings"), 0), "groups"), 0);
	cr_assert(jint(jmember(group, "bgid"), "bgid") == 1, "%s", text);
	cr_assert(jint(jmember(group, "ring_entries"), "ring_entries") == 16, "%s", text);
	cr_assert(jint(jmember(group, "peak_out"), "peak_out") == 8, "%s", text);
	cr_assert(jint(jpath(group, "enobufs.capped"), "enobufs.capped") == 4, "%s", text);
	cr_assert(jint(jmember(group, "selected"), "selected") == 8, "%s", text);

	report_says(path, "ring 0 bgid 1: a buffer ring of 16 entries");
}

/*
 * The same program with no policy: the kernel keeps the ring (rings = auto
 * on a kernel with rings), and bufsel watches it.  Its statistics come from
 * the CQEs and the ring the program writes: twelve receives, each a buffer
 * the program keeps (peak out 12), none refused; the group is marked as the
 * kernel's, and bufsel report sizes it as a ring all the same.  The
 * program's output is the native one: watching changes nothing.
 */
Test(stats, kernel_ring_watched, .timeout = 30)
{
	run_prog(&run_b, NATIVE, "pol_ring_cap", NULL);
	harness_expect_exit(&run_b, 0, "pol_ring_cap natively");

	char path[] = "/tmp/bufsel-policy-kring-XXXXXX";
	static char var[64];
	int fd = mkstemp(path);
	cr_assert(fd >= 0, "mkstemp: %s", strerror(errno));
	close(fd);
	snprintf(var, sizeof(var), "BUFSEL_STATS=%s", path);
	run_prog(&run_a, PRELOAD, "pol_ring_cap", VARS(var, "BUFSEL_LOG=debug"));
	size_t len;
	const char *text = slurp(path, &len);
	harness_expect_exit(&run_a, 0, "pol_ring_cap, stats");
	expect_loaded(&run_a, "pol_ring_cap, stats");
	cr_assert(!strstr(run_a.err, "emulated ("), "the ring was emulated, not the kernel's:\n%s", run_a.err);
	cr_assert(run_a.out_len == run_b.out_len && !memcmp(run_a.out, run_b.out, run_b.out_len),
		  "output differs from native:\n%s\nnative:\n%s", run_a.out, run_b.out);
	int root = jparse(text, len);
	int group = jindex(jmember(jindex(jmember(root, "rings"), 0), "groups"), 0);
	cr_assert(group >= 0, "no group in the statistics:\n%s", text);
	cr_assert(jint(jmember(group, "bgid"), "bgid") == 1, "%s", text);
	expect_jtext(jmember(group, "kernel_ring"), 'l', "true", "kernel_ring");
	cr_assert(jint(jmember(group, "ring_entries"), "ring_entries") == 16, "%s", text);
	cr_assert(jint(jmember(group, "selected"), "selected") == 12, "%s", text);
	cr_assert(jint(jmember(group, "peak_out"), "peak_out") == 12, "%s", text);
	cr_assert(jint(jmember(group, "provided"), "provided") == 16, "%s", text);
	cr_assert(jint(jpath(group, "enobufs.total"), "enobufs.total") == 0, "%s", text);

	report_says(path, "ring 0 bgid 1: a buffer ring of 16 entries");
}
