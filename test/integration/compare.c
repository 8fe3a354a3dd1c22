/*
 * Native versus bufsel: every program in test/prog runs
 *   (a) natively, LD_PRELOAD and every BUFSEL_* variable removed,
 *   (b) with LD_PRELOAD=<build>/libbufsel.so and BUFSEL_LOG=info,
 *   (c) through the launcher, <build>/bufsel -- <program>, BUFSEL_LOG=info,
 * and must exit 0 each time with byte-identical stdout. The programs print
 * only what the kernel decided (CQEs, fd numbers, check lines), so any
 * difference is a difference in behaviour.
 *
 * Identical output alone would also pass if the library were never loaded, so
 * (b) and (c) must show the library's exit report on stderr,
 *   bufsel: exit: pid=N rings=N setup=N enter=N register=N mmap=N trapped=N hooked=N
 *     emulated=N held_peak=N patched=N sites=N version=V
 * one per process, with setup summed over all of them >= 1 for programs that
 * make io_uring calls (children report for themselves) and == 0 for those
 * that do not. A missing library or launcher fails; nothing here skips.
 *
 * The native suite runs each program twice and requires identical stdout, so
 * a nondeterministic test program shows up as that, not as a bufsel bug.
 *
 * The build directory is $BUFSEL_BUILD (default "build"), made absolute.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test/integration/harness.h"
#include "version.h"

/*
 * The table: program name (test/prog/<name>.c), timeout in seconds for one
 * run, whether it makes io_uring calls, and whether its output under
 * BUFSEL_KERNEL=5.6 must equal the native one (with BUFSEL_RINGS=kernel:
 * 5.6 as it was, without the buffer rings and receive forms bufsel would
 * add): false where the program uses what 5.6 lacks (the comment names
 * it), so that a 5.6 kernel would answer it differently; compat_kernel
 * checks those answers themselves.
 */
#define PROGRAMS(X)                     \
	X(nop_batch, 10, true, false) /* 5.6 lacks CQE_SKIP_SUCCESS: 5.17 */ \
	X(file_rw, 10, true, true)             \
	X(pipe_read, 10, true, false) /* 5.6 lacks EXT_ARG waits: 5.11 */ \
	X(poll_multishot, 10, true, false) /* 5.6 lacks IORING_POLL_ADD_MULTI: 5.13 */ \
	X(spin_reap, 10, true, true)           \
	X(cq_unattended, 10, true, true)       \
	X(bs_wait_many, 10, true, false) /* 5.6 lacks multishot RECV: 6.0 */ \
	X(bs_timeout_wait, 15, true, true)     \
	X(bs_timeout_count, 15, true, false) /* 5.6 lacks CQE_SKIP_SUCCESS: 5.17 */ \
	X(tmo_remove_order, 10, true, false) /* 5.6 posts the removed TIMEOUT first: 5.18 (kernel510) */ \
	X(mshot_overflow, 10, true, false) /* 5.6 lacks multishot POLL: 5.13 */ \
	X(socket_recv, 10, true, false) /* 5.6 lacks SHUTDOWN: 5.11 */ \
	X(link_fail, 10, true, false) /* 5.6 looks files up at submission: 5.18 (kernel510) */ \
	X(timeout, 10, true, false) /* 5.6 lacks IORING_TIMEOUT_UPDATE: 5.11 */ \
	X(cancel, 10, true, false) /* 5.6 lacks IORING_ASYNC_CANCEL_ALL and _FD: 5.19 */ \
	X(eventfd, 10, true, true)             \
	X(reg_files, 10, true, true)           \
	X(sqpoll, 10, true, true)              \
	X(sqpoll_spin, 10, true, true)         \
	X(sqpoll_wakeup, 15, true, false) /* 5.6 lacks IORING_ENTER_SQ_WAIT: 5.10 */ \
	X(defer_taskrun, 10, true, false) /* 5.6 lacks DEFER_TASKRUN: 6.1 */ \
	X(taskrun_flag, 10, true, false) /* 5.6 lacks DEFER_TASKRUN: 6.1 */ \
	X(setup_flags, 10, true, false) /* 5.6 lacks SUBMIT_ALL and newer setup flags: 5.18+ */ \
	X(cq_overflow, 10, true, false) /* 5.6 lacks liburing waits with a TIMEOUT SQE without EXT_ARG (5.11): one more SQE */ \
	X(threads, 15, true, true)             \
	X(patch_race, 30, true, true)          \
	X(patch_regs, 10, true, true)          \
	X(fork, 10, true, true)                \
	X(fork_setup_race, 30, true, true)     \
	X(fork_shared_ring, 20, true, true)    \
	X(fork_shared_pool, 20, true, false) /* 5.6 lacks ring-mapped buffers: 5.19 */ \
	X(close_mapped, 15, true, true)        \
	X(closed_fd_wait, 20, true, true)      \
	X(wait_timeout, 10, true, false) /* 5.6 lacks EXT_ARG waits: 5.11 */ \
	X(eintr, 10, true, false) /* 5.6 lacks EXT_ARG waits: 5.11 */ \
	X(wait_early, 10, true, false) /* 5.6 lacks EXT_ARG waits: 5.11 */ \
	X(dup_fd, 10, true, true)              \
	X(fd_reuse, 10, true, true)            \
	X(registered_ring, 10, true, false) /* 5.6 lacks registered ring fds: 5.18 */ \
	X(sq128, 10, true, false) /* 5.6 lacks SQE128: 5.19 */ \
	X(no_sqarray, 10, true, false) /* 5.6 lacks NO_SQARRAY: 6.6 */ \
	X(no_mmap, 10, true, false) /* 5.6 lacks NO_MMAP: 6.5 (kernel515 runs it with bufsel's) */ \
	X(skip_success, 10, true, false) /* 5.6 lacks CQE_SKIP_SUCCESS: 5.17 (kernel515 runs it with bufsel's) */ \
	X(msg_ring, 10, true, false) /* 5.6 lacks MSG_RING: 5.18 */ \
	X(nop_static, 10, true, false) /* 5.6 lacks CQE_SKIP_SUCCESS: 5.17 */ \
	X(raw_syscall, 10, true, true)         \
	X(sigblock, 10, true, true)            \
	X(exec_child, 10, true, true)          \
	X(exec_nopreload, 10, true, true)      \
	X(exec_uring_nopreload, 20, true, true) \
	X(raw_signals, 10, true, true)         \
	X(init_fail, 10, true, true)           \
	X(cycles, 60, true, true)              \
	X(own_sigsys, 10, true, true)          \
	X(bs_provide, 10, true, false)         \
	X(bs_read, 10, true, true)             \
	X(bs_recv, 15, true, false) /* 5.6 never reads ioprio: IORING_RECVSEND_POLL_FIRST (5.19) selects at once */ \
	X(bs_eof_wave, 10, true, true)         \
	X(bs_multishot, 10, true, false) /* 5.6 never reads ioprio: multishot RECV (6.0) is one RECV */ \
	X(bs_recvmsg_edge, 10, true, false) /* 5.6 never reads ioprio: multishot RECVMSG (6.0) is one RECVMSG */ \
	X(bs_bundle, 10, true, false) /* 5.6 never reads ioprio: a bundle (6.10) is one buffer */ \
	X(bs_tiny_ring, 10, true, false) /* 5.6 never reads ioprio: a bundle (6.10) is one buffer */ \
	X(sq_chaos, 10, true, false) /* 5.6 writes its SQ head back: 5.16 (kernel510) */ \
	X(sqe_race, 20, true, true)            \
	X(bs_prep_checks, 10, true, false) /* 5.6 never reads attr_type_mask (read/write attributes: 6.15) */ \
	X(bs_send_nogroup, 10, true, false) /* 5.6 lacks SEND with BUFFER_SELECT: 6.10 */ \
	X(bs_recv_addr2, 10, true, false) /* the addr2 check in io_recvmsg_prep is newer than 5.6 */ \
	X(bs_submit_order, 10, true, false) /* 5.6 never reads ioprio and lacks SEND with BUFFER_SELECT */ \
	X(bs_link, 10, true, false) /* 5.6 lacks liburing waits with a TIMEOUT SQE without EXT_ARG (5.11): IO_DRAIN holds it */ \
	X(bs_cancel, 10, true, false) /* 5.6 lacks IORING_REGISTER_SYNC_CANCEL: 6.0 */ \
	X(bs_groups, 15, true, false)          \
	X(bs_idle, 30, true, false) /* 5.6 lacks ASYNC_CANCEL_ALL: 5.19 */ \
	X(bs_echo, 30, true, true)             \
	X(bs_ring_echo, 30, true, false) /* 5.6 lacks buffer rings (5.19): kernel515 runs it with bufsel's */ \
	X(bs_ring_basic, 10, true, false) /* 5.6 lacks buffer rings (5.19): kernel515 runs it with bufsel's */ \
	X(bs_ring_attempt, 10, true, false) /* 5.6 lacks buffer rings (5.19): kernel515 runs it with bufsel's */ \
	X(ring_close_unmap, 20, true, false) /* 5.6 lacks buffer rings (5.19) and multishot RECV (6.0) */ \
	X(ring_pages, 10, true, false) /* 5.6 lacks buffer rings (5.19): kernel515 runs it with bufsel's */ \
	X(bs_ring_multishot, 10, true, false) /* 5.6 never reads ioprio: multishot RECV (6.0) is one RECV */ \
	X(bs_ring_bundle, 10, true, false) /* 5.6 lacks buffer rings (5.19): kernel515 runs it with bufsel's */ \
	X(bs_ring_inc, 10, true, false) /* 5.6 lacks buffer rings (5.19): kernel515 runs it with bufsel's */ \
	X(bs_ring_stream, 10, true, false) /* 5.6 lacks buffer rings (5.19) and READ_MULTISHOT (6.7) */ \
	X(pol_cap, 10, true, true)             \
	X(pol_ring_cap, 10, true, false) /* 5.6 lacks buffer rings (5.19): kernel515 runs it with bufsel's */ \
	X(pol_maxlen, 10, true, true)          \
	X(pol_inject, 10, true, true)          \
	X(pol_stats, 10, true, true)           \
	X(stress_recv, 60, true, true)         \
	X(stress_signals, 60, true, false) /* 5.6 lacks EXT_ARG waits: 5.11 */ \
	X(stress_overflow, 20, true, false) /* 5.6 lacks CQE_SKIP_SUCCESS: 5.17 */ \
	X(stress_fork, 60, true, true)         \
	X(fault_sqe, 20, true, true)           \
	X(fault_ring, 20, true, false)         \
	X(fault_limits, 20, true, false) /* 5.6 lacks IORING_OP_SOCKET: 5.19 */ \
	X(fault_alloc, 30, true, false) /* 5.6 never reads ioprio: multishot RECV (6.0) is one RECV */ \
	X(sig_submit, 20, true, true)          \
	X(clone_lock, 30, true, true)          \
	X(fault_close, 30, true, false) /* 5.6 lacks registered ring fds: 5.18 */ \
	X(inline_close, 15, true, true)        \
	X(fault_args, 20, true, false)         \
	X(resize_rings, 10, true, false) /* 5.6 lacks DEFER_TASKRUN (6.1) and RESIZE_RINGS (6.13): compat_kernel_is_5_6 */ \
	X(compat_kernel, 10, true, false)      \
	X(compat_fields, 10, true, false) /* flags inside SQE fields newer than 5.6: compat_fields_is_5_6 */ \
	X(sec_novm, 10, true, true)            \
	X(sec_probe, 10, true, true)           \
	X(sec_mdwe, 15, true, true)            \
	X(sec_wx_filter, 15, true, true)       \
	X(sec_wx_fork, 15, true, true)         \
	X(gate_addr, 10, true, true)           \
	X(no_uring, 10, false, true)

struct prog {
	const char *name;
	int timeout;
	bool uring;
};

#define PROG_ENTRY(n, t, u, k) { #n, t, u },
static const struct prog programs[] = { PROGRAMS(PROG_ENTRY) };

enum mode { NATIVE, PRELOAD, LAUNCHER, PASSTHROUGH, KERNEL56, TRAP_ONLY, SECCOMP, RINGS_EMULATE, KERNEL515,
	    KERNEL56_BUFSEL_RINGS, SECCOMP_RINGS, KERNEL510, LINUX510, SECCOMP_MAPPED };
static const char *const mode_name[] = { "native", "preload", "launcher", "passthrough", "kernel 5.6",
					 "trap only", "seccomp", "rings emulated", "kernel 5.15",
					 "kernel 5.6, rings bufsel's", "seccomp, rings emulated", "kernel 5.10",
					 "native Linux 5.10 (recorded)", "seccomp, kernel 5.6 (a mapped ring)" };


/* ---- paths ---------------------------------------------------------------- */

static void build_path(char *dst, size_t len, const char *rel)
{
	if ((size_t)snprintf(dst, len, "%s/%s", harness_build_dir(), rel) >= len)
		cr_assert_fail("path too long: %s/%s", harness_build_dir(), rel);
}

static const struct prog *find_prog(const char *name)
{
	for (size_t i = 0; i < sizeof(programs) / sizeof(programs[0]); i++)
		if (!strcmp(programs[i].name, name))
			return &programs[i];
	cr_assert_fail("%s is not in the table", name);
	return NULL;
}


/* ---- running one program -------------------------------------------------- */

/*
 * The caller's environment minus LD_PRELOAD and BUFSEL_*: BUFSEL_BUILD is ours,
 * and the library rejects BUFSEL_ variables it does not know; a user's
 * BUFSEL_MODE must not leak into the runs either.
 */
static char **make_env4(const char *extra1, const char *extra2, const char *extra3, const char *extra4)
{
	size_t k;
	char **env = harness_env(4, &k);
	const char *extra[] = { extra1, extra2, extra3, extra4 };
	for (size_t i = 0; i < 4; i++)
		if (extra[i])
			env[k++] = (char *)extra[i];
	env[k] = NULL;
	return env;
}

static char **make_env(const char *extra1, const char *extra2, const char *extra3)
{
	return make_env4(extra1, extra2, extra3, NULL);
}

/* arg: one argument for the program, or NULL. */
static void run_prog_arg(struct run *r, const struct prog *p, enum mode mode, char *arg)
{
	char exe[PATH_MAX], lib[PATH_MAX], launcher[PATH_MAX], rel[PATH_MAX];
	snprintf(rel, sizeof(rel), "test/prog/%s", p->name);
	build_path(exe, sizeof(exe), rel);
	build_path(lib, sizeof(lib), "libbufsel.so");
	build_path(launcher, sizeof(launcher), "bufsel");
	cr_assert(access(exe, X_OK) == 0, "%s: not built (%s)", exe, strerror(errno));

	const char *asan = harness_asan_runtime();
	static char preload[2 * PATH_MAX + 16], asan_preload[PATH_MAX + 16];
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s%s%s", asan ? asan : "", asan ? ":" : "", lib);
	snprintf(asan_preload, sizeof(asan_preload), "LD_PRELOAD=%s", asan ? asan : "");
	char *argv[5] = { exe, arg, NULL, NULL, NULL };
	char **env;
	r->mode = mode;
	switch (mode) {
	case NATIVE:
		env = make_env(NULL, NULL, NULL);
		break;
	case PRELOAD:
	case PASSTHROUGH:
	case KERNEL56:
	case TRAP_ONLY:
	case SECCOMP:
	case RINGS_EMULATE:
	case KERNEL515:
	case KERNEL56_BUFSEL_RINGS:
	case SECCOMP_RINGS:
	case KERNEL510:
	case SECCOMP_MAPPED:
		cr_assert(access(lib, R_OK) == 0, "%s: %s; the bufsel runs cannot pass without it",
			  lib, strerror(errno));
		env = make_env4(preload, "BUFSEL_LOG=info",
			       mode == PASSTHROUGH ? "BUFSEL_MODE=passthrough"
			       : mode == KERNEL56 || mode == KERNEL56_BUFSEL_RINGS ? "BUFSEL_KERNEL=5.6"
			       : mode == TRAP_ONLY ? "BUFSEL_PATCH=off"
			       : mode == SECCOMP || mode == SECCOMP_RINGS || mode == SECCOMP_MAPPED ? "BUFSEL_TRAP=seccomp"
			       : mode == RINGS_EMULATE ? "BUFSEL_RINGS=emulate"
			       : mode == KERNEL515 ? "BUFSEL_KERNEL=5.15"
			       : mode == KERNEL510 ? "BUFSEL_KERNEL=5.10"
						   : NULL,
			       mode == KERNEL56 ? "BUFSEL_RINGS=kernel"
			       : mode == SECCOMP_RINGS ? "BUFSEL_RINGS=emulate"
			       : mode == SECCOMP_MAPPED ? "BUFSEL_KERNEL=5.6"
			       /* 5.15's rings are bufsel's, and checked against this
				* kernel's: its legacy groups keep this kernel's rules. */
			       : mode == KERNEL515 ? "BUFSEL_LEGACY=latest"
						       : NULL);
		break;
	case LAUNCHER:
		cr_assert(access(launcher, X_OK) == 0, "%s: %s; the launcher runs cannot pass without it",
			  launcher, strerror(errno));
		env = make_env("BUFSEL_LOG=info", asan ? asan_preload : NULL, NULL);
		argv[0] = launcher;
		argv[1] = "--";
		argv[2] = exe;
		argv[3] = arg;
		break;
	case LINUX510:
		cr_assert_fail("a recorded run is read, not run (recorded_510)");
	}
	harness_run(r, argv, env, p->timeout);
}

static void run_prog(struct run *r, const struct prog *p, enum mode mode)
{
	run_prog_arg(r, p, mode, NULL);
}

/* ---- checks --------------------------------------------------------------- */

static void expect_success(const struct run *r, const char *name)
{
	const char *why = r->exec_failed ? "could not be executed" : harness_exit_problem(r, 0);
	if (why)
		cr_assert_fail("%s, %s run: %s\n--- stderr (last 3000 bytes) ---\n%s\n--- stdout (last 1500 bytes) ---\n%s",
			       name, mode_name[r->mode], why, harness_tail(r->err, r->err_len, 3000),
			       harness_tail(r->out, r->out_len, 1500));
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

/* Fails with the first differing line, unified-diff style, and context. */
static void expect_same_stdout(const struct run *a, const struct run *b, const char *name)
{
	if (a->out_len == b->out_len && !memcmp(a->out, b->out, a->out_len))
		return;
	size_t i = 0;
	const char *la, *lb;
	size_t na, nb;
	for (;; i++) {
		bool ha = nth_line(a->out, a->out_len, i, &la, &na);
		bool hb = nth_line(b->out, b->out_len, i, &lb, &nb);
		if (!ha || !hb || na != nb || memcmp(la, lb, na))
			break;
	}
	char *msg = NULL;
	size_t msglen = 0;
	FILE *m = open_memstream(&msg, &msglen);
	cr_assert(m != NULL);
	fprintf(m, "%s: stdout differs between the %s and the %s run, first at line %zu\n", name,
		mode_name[a->mode], mode_name[b->mode], i + 1);
	fprintf(m, "--- %s\n+++ %s\n@@ line %zu @@\n", mode_name[a->mode], mode_name[b->mode], i + 1);
	for (size_t k = i > 3 ? i - 3 : 0; k < i; k++)
		if (nth_line(a->out, a->out_len, k, &la, &na))
			fprintf(m, " %.*s\n", (int)na, la);
	for (size_t k = i; k < i + 3; k++) {
		if (nth_line(a->out, a->out_len, k, &la, &na))
			fprintf(m, "-%.*s\n", (int)na, la);
		else if (k == i)
			fprintf(m, "-(end of output)\n");
	}
	for (size_t k = i; k < i + 3; k++) {
		if (nth_line(b->out, b->out_len, k, &lb, &nb))
			fprintf(m, "+%.*s\n", (int)nb, lb);
		else if (k == i)
			fprintf(m, "+(end of output)\n");
	}
	fprintf(m, "--- %s stderr (last 3000 bytes) ---\n%s", mode_name[b->mode],
		harness_tail(b->err, b->err_len, 3000));
	fclose(m);
	cr_assert_fail("%s", msg);
}

/*
 * Parses every "bufsel: exit:" line in stderr. Returns the number of such
 * lines and the sum of their setup counters; a malformed one fails the test.
 */
static unsigned long held_peak_max;	/* of the last exit_reports() call */

/* Calls through rewritten sites, and sites rewritten, over a run's processes. */
static unsigned long patched_sum, sites_sum;

static unsigned exit_reports(const struct run *r, const char *name, unsigned long *setup_sum)
{
	static const char prefix[] = "bufsel: exit:";
	unsigned lines = 0;
	*setup_sum = 0;
	held_peak_max = 0;
	patched_sum = sites_sum = 0;
	for (const char *p = r->err; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		if (n >= sizeof(prefix) - 1 && !memcmp(p, prefix, sizeof(prefix) - 1)) {
			char line[512];
			int pid, used = -1;
			unsigned long rings, setup, enter, reg, mmaps, trapped, hooked, emulated, held, patched, sites;
			snprintf(line, sizeof(line), "%.*s", (int)n, p);
			int got = sscanf(line,
					 "bufsel: exit: pid=%d rings=%lu setup=%lu enter=%lu register=%lu "
					 "mmap=%lu trapped=%lu hooked=%lu emulated=%lu held_peak=%lu "
					 "patched=%lu sites=%lu version=" BUFSEL_VERSION "%n",
					 &pid, &rings, &setup, &enter, &reg, &mmaps, &trapped, &hooked,
					 &emulated, &held, &patched, &sites, &used);
			if (held > held_peak_max)
				held_peak_max = held;
			cr_assert(got == 12 && used == (int)strlen(line),
				  "%s, %s run: malformed exit report: \"%s\"", name, mode_name[r->mode], line);
			lines++;
			*setup_sum += setup;
			patched_sum += patched;
			sites_sum += sites;
		}
		p = nl ? nl + 1 : p + n;
	}
	return lines;
}

/*
 * bufsel's own count of buffers bound at once, where a program fixes it: the
 * idle-socket program has 10,000 receives pending on a group of 16, and
 * deferred binding means no more than the 16 are ever bound (fewer when
 * bufsel's thread receives each as its data comes, before the next binds;
 * none at all would mean no receive went through a selected buffer).
 */
static const struct {
	const char *name;
	unsigned long held_peak;
} held_expect[] = {
	{ "bs_idle", 16 },
};

static void expect_intercepted(const struct run *r, const struct prog *p)
{
	unsigned long setup;
	unsigned lines = exit_reports(r, p->name, &setup);
	cr_assert(lines > 0,
		  "%s, %s run: no \"bufsel: exit:\" report on stderr (%s)\n"
		  "--- stderr (last 3000 bytes) ---\n%s",
		  p->name, mode_name[r->mode],
		  strstr(r->err, "bufsel: ") ? "the library logged, so it was loaded, but did not report at exit"
					     : "the library was not loaded",
		  harness_tail(r->err, r->err_len, 3000));
	for (size_t i = 0; i < sizeof(held_expect) / sizeof(held_expect[0]); i++)
		if (!strcmp(held_expect[i].name, p->name))
			cr_assert(held_peak_max >= 1 && held_peak_max <= held_expect[i].held_peak,
				  "%s, %s run: bufsel held %lu buffers at once, expected 1 to %lu",
				  p->name, mode_name[r->mode], held_peak_max, held_expect[i].held_peak);
	if (p->uring)
		cr_assert(setup >= 1, "%s, %s run: setup=%lu over %u exit reports: io_uring_setup was not intercepted\n"
			  "--- stderr (last 3000 bytes) ---\n%s",
			  p->name, mode_name[r->mode], setup, lines, harness_tail(r->err, r->err_len, 3000));
	else
		cr_assert(setup == 0, "%s, %s run: setup=%lu for a program that never calls io_uring_setup",
			  p->name, mode_name[r->mode], setup);
}

static void free_run(struct run *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

/* ---- the tests ------------------------------------------------------------ */

/*
 * Runs live in static storage: a failed assertion ends the test process
 * before free_run, and reachable buffers are not reported as leaks under ASan.
 */
static struct run run_a, run_b;

static void check_native(const char *name)
{
	const struct prog *p = find_prog(name);
	run_prog(&run_a, p, NATIVE);
	expect_success(&run_a, name);
	run_prog(&run_b, p, NATIVE);
	expect_success(&run_b, name);
	expect_same_stdout(&run_a, &run_b, name);
	free_run(&run_a);
	free_run(&run_b);
}

static void check_against_native(const char *name, enum mode mode)
{
	const struct prog *p = find_prog(name);
	struct run *native = &run_a, *shim = &run_b;
	run_prog(native, p, NATIVE);
	expect_success(native, name);
	run_prog(shim, p, mode);
	expect_success(shim, name);
	expect_same_stdout(native, shim, name);
	if (mode == PASSTHROUGH) {
		unsigned long setup;
		cr_assert(exit_reports(shim, name, &setup) > 0,
			  "%s, passthrough run: no \"bufsel: exit:\" report: the library was not loaded\n"
			  "--- stderr (last 3000 bytes) ---\n%s", name, harness_tail(shim->err, shim->err_len, 3000));
	} else {
		expect_intercepted(shim, p);
	}
	free_run(native);
	free_run(shim);
}

/*
 * The program's native run on a real Linux 5.10, recorded by make vm-test
 * (VM_RECORD) into test/vm/linux-5.10/NAME.out and NAME.rc: its stdout and
 * exit status.
 */
static void recorded_510(struct run *r, const char *name)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "test/vm/linux-5.10/%s.rc", name);
	FILE *f = fopen(path, "r");
	int rc = -1;
	cr_assert(f != NULL, "%s: %s (run the suites from the source tree)", path, strerror(errno));
	cr_assert(fscanf(f, "%d", &rc) == 1 && rc >= 0 && rc < 256, "%s: not an exit status", path);
	fclose(f);
	snprintf(path, sizeof(path), "test/vm/linux-5.10/%s.out", name);
	f = fopen(path, "r");
	cr_assert(f != NULL, "%s: %s", path, strerror(errno));
	*r = (struct run){ .mode = LINUX510, .status = rc << 8, .err = strdup("") };
	size_t cap = 0;
	FILE *m = open_memstream(&r->out, &cap);
	cr_assert(m != NULL);
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, m);
	fclose(f);
	fclose(m);
	r->out_len = cap;
}

/*
 * What a real 5.10 showed of its legacy groups (docs/kernel-semantics.md,
 * "Found on a real Linux 5.10"), simulated here: under BUFSEL_KERNEL=5.10
 * the program prints what it printed natively there, and ends the same way.
 */
static void check_against_510(const char *name)
{
	const struct prog *p = find_prog(name);
	struct run *real = &run_a, *shim = &run_b;
	recorded_510(real, name);
	run_prog(shim, p, KERNEL510);
	const char *why = shim->exec_failed ? "could not be executed"
					    : harness_exit_problem(shim, WEXITSTATUS(real->status));
	cr_assert(!why, "%s, %s run: %s (as natively on 5.10)\n--- stderr (last 3000 bytes) ---\n%s\n"
		  "--- stdout (last 1500 bytes) ---\n%s", name, mode_name[KERNEL510], why,
		  harness_tail(shim->err, shim->err_len, 3000), harness_tail(shim->out, shim->out_len, 1500));
	expect_same_stdout(real, shim, name);
	/* A program that dies as it did on 5.10 may do so from two threads at
	 * once, their last words and bufsel's exit report on one line. */
	if (WEXITSTATUS(real->status) == 0)
		expect_intercepted(shim, p);
	else
		cr_assert(strstr(shim->err, "bufsel: exit: ") != NULL, "%s, %s run: bufsel made no exit report\n%s",
			  name, mode_name[KERNEL510], harness_tail(shim->err, shim->err_len, 3000));
	free_run(real);
	free_run(shim);
}

/* Criterion's own timeout is a backstop; each run has its own, shorter one. */
#define KERNEL56_true(n, t) \
	Test(kernel56, n, .timeout = 2.0 * (t) + 10) { check_against_native(#n, KERNEL56); }
#define KERNEL56_false(n, t)
#define SUITE_TESTS(n, t, u, k)                                                       \
	Test(native, n, .timeout = 2.0 * (t) + 10) { check_native(#n); }                \
	Test(preload, n, .timeout = 2.0 * (t) + 10) { check_against_native(#n, PRELOAD); } \
	Test(launcher, n, .timeout = 2.0 * (t) + 10) { check_against_native(#n, LAUNCHER); } \
	Test(trap_only, n, .timeout = 2.0 * (t) + 10) { check_against_native(#n, TRAP_ONLY); } \
	KERNEL56_##k(n, t)
PROGRAMS(SUITE_TESTS)

/*
 * Programs with buffer rings run, besides the suites above (where the
 * kernel keeps their rings), with every ring kept by bufsel, and, those
 * that use nothing else newer, as on Linux 5.15, which has neither buffer
 * rings nor multishot receive: bufsel keeps the rings there by default and
 * gives the receives that select from them every form.  Each must print
 * what the kernel's rings gave natively.
 */
#define RINGS_EMULATED_TEST(n) \
	Test(rings_emulated, n, .timeout = 60) { check_against_native(#n, RINGS_EMULATE); }
#define KERNEL515_TEST(n) \
	Test(kernel515, n, .timeout = 60) { check_against_native(#n, KERNEL515); }
RINGS_EMULATED_TEST(bs_ring_basic)
KERNEL515_TEST(bs_ring_basic)
RINGS_EMULATED_TEST(bs_ring_attempt)
KERNEL515_TEST(bs_ring_attempt)
RINGS_EMULATED_TEST(ring_close_unmap)
KERNEL515_TEST(ring_close_unmap)
RINGS_EMULATED_TEST(ring_pages)		/* a ring's pages pinned by bufsel stay the program's */
KERNEL515_TEST(ring_pages)
RINGS_EMULATED_TEST(bs_ring_multishot)
KERNEL515_TEST(bs_ring_multishot)	/* multishot RECV (6.0) on bufsel's rings */
/* Legacy groups are bufsel's too: multishot RECVMSG (6.0) there as well. */
KERNEL515_TEST(bs_recvmsg_edge)
KERNEL515_TEST(bs_wait_many)
KERNEL515_TEST(bs_recv)
RINGS_EMULATED_TEST(bs_ring_bundle)
KERNEL515_TEST(bs_ring_bundle)	/* bundles (6.10) on bufsel's rings */
KERNEL515_TEST(bs_bundle)	/* and on its legacy groups */
KERNEL515_TEST(bs_tiny_ring)
RINGS_EMULATED_TEST(bs_ring_inc)
RINGS_EMULATED_TEST(bs_ring_stream)
KERNEL515_TEST(bs_ring_stream)	/* READ_MULTISHOT (6.7), a RECV's byte limit (6.15) */
KERNEL515_TEST(bs_ring_inc)	/* incremental rings (6.12) bufsel keeps */
RINGS_EMULATED_TEST(pol_ring_cap)
KERNEL515_TEST(pol_ring_cap)
RINGS_EMULATED_TEST(bs_ring_echo)
KERNEL515_TEST(bs_ring_echo)	/* 1,000 connections on a ring of bufsel's */
/* Ring setup flags and the SQE flag the shadow gives where 5.15 lacks
 * them (compat_setup_shadowed, rewrite_skip). */
KERNEL515_TEST(no_mmap)		/* NO_MMAP (6.5), SINGLE_ISSUER (6.0), DEFER_TASKRUN (6.1) */
KERNEL515_TEST(no_sqarray)	/* NO_SQARRAY (6.6) */
KERNEL515_TEST(skip_success)	/* CQE_SKIP_SUCCESS (5.17) */
KERNEL515_TEST(nop_static)
KERNEL515_TEST(bs_timeout_count)
KERNEL515_TEST(stress_overflow)
KERNEL515_TEST(bs_link)

/*
 * The other suites run under Syscall User Dispatch, the default on this
 * kernel; these programs also run under the seccomp fallback (trap =
 * seccomp).  exec_uring_nopreload cannot: the filter outlives execve.
 */
#define SECCOMP_TEST(n) \
	Test(seccomp, n, .timeout = 40) { check_against_native(#n, SECCOMP); }
SECCOMP_TEST(nop_batch)
SECCOMP_TEST(file_rw)
SECCOMP_TEST(fork)
SECCOMP_TEST(threads)
SECCOMP_TEST(sigblock)
SECCOMP_TEST(own_sigsys)
SECCOMP_TEST(raw_syscall)
SECCOMP_TEST(exec_child)
SECCOMP_TEST(exec_nopreload)
SECCOMP_TEST(init_fail)
SECCOMP_TEST(patch_regs)
SECCOMP_TEST(bs_recv)
SECCOMP_TEST(sqpoll)
SECCOMP_TEST(gate_addr)
SECCOMP_TEST(raw_signals)

/*
 * The seccomp filter traps no close(): a ring closed with liburing's inline
 * close and its buffer ring unmapped at once must not leave bufsel reading
 * the unmapped ring (the mover crashed there: the kernel pins a ring's
 * pages, and so must bufsel); a fork's child gets its own copy of a pinned
 * ring, as natively.  This is the trap every kernel before 5.11 gets.
 */
#define SECCOMP_RINGS_TEST(n) \
	Test(seccomp_rings, n, .timeout = 60) { check_against_native(#n, SECCOMP_RINGS); }
SECCOMP_RINGS_TEST(ring_close_unmap)
SECCOMP_RINGS_TEST(fork_shared_pool)
SECCOMP_RINGS_TEST(bs_ring_basic)
SECCOMP_RINGS_TEST(ring_pages)

/*
 * A kernel without Syscall User Dispatch has no IORING_SETUP_NO_MMAP
 * either (6.5): bufsel's own ring is mapped from its fd, and the seccomp
 * filter sees no inline close.  What the real 5.10 showed of such a ring's
 * life (make vm-test), on this kernel: the program's mappings keep it after
 * its close, and its inline close and unmap end it.
 */
#define SECCOMP_MAPPED_TEST(n) \
	Test(seccomp_mapped, n, .timeout = 60) { check_against_native(#n, SECCOMP_MAPPED); }
SECCOMP_MAPPED_TEST(close_mapped)
SECCOMP_MAPPED_TEST(closed_fd_wait)
SECCOMP_MAPPED_TEST(inline_close)
SECCOMP_MAPPED_TEST(ring_close_unmap)
SECCOMP_MAPPED_TEST(fd_reuse)
SECCOMP_MAPPED_TEST(dup_fd)

Test(passthrough, nop_batch, .timeout = 30)
{
	check_against_native("nop_batch", PASSTHROUGH);
}

/* Passthrough keeps no fd or mapping of a ring either: its unseen close
 * releases it. */
Test(passthrough, inline_close, .timeout = 40)
{
	check_against_native("inline_close", PASSTHROUGH);
}

/*
 * Site patching is on by default, so most calls in the runs above came
 * through rewritten sites; trap_only runs the same programs with every call
 * trapped.  Here: liburing's enter site is rewritten (and used) by default,
 * and nothing is rewritten with patch=off.
 */
static void patch_counts(const char *name, enum mode mode, unsigned long *patched, unsigned long *sites)
{
	const struct prog *p = find_prog(name);
	unsigned long setup;
	run_prog(&run_b, p, mode);
	expect_success(&run_b, p->name);
	cr_assert_eq(exit_reports(&run_b, p->name, &setup), 1, "%s", run_b.err);
	*patched = patched_sum;
	*sites = sites_sum;
	free_run(&run_b);
}

Test(patch, liburing_sites_are_rewritten_unless_off, .timeout = 30)
{
	unsigned long patched, sites;
	patch_counts("nop_batch", PRELOAD, &patched, &sites);
	cr_assert_geq(sites, 1, "no site rewritten");
	cr_assert_geq(patched, 1, "no call came through a rewritten site");
	patch_counts("nop_batch", TRAP_ONLY, &patched, &sites);
	cr_assert_eq(sites, 0);
	cr_assert_eq(patched, 0);
}

/*
 * patch_regs checks every register across its own four call sites (its
 * output, compared with the native run above, says so); here: those sites
 * were rewritten and all but their first calls went through bufsel's stubs,
 * so the check covered the rewritten path and not only the trap (the
 * fourth loads its call number before its arguments: before that was
 * rewritten, 3 sites).
 */
Test(patch, register_check_ran_through_rewritten_sites, .timeout = 30)
{
	unsigned long patched, sites;
	patch_counts("patch_regs", PRELOAD, &patched, &sites);
	cr_assert_geq(sites, 4, "patch_regs: %lu of its 4 call sites rewritten", sites);
	cr_assert_geq(patched, 150, "patch_regs: only %lu calls through rewritten sites", patched);
}

/*
 * BUFSEL_KERNEL=5.6 is not compared with the running kernel: it must answer
 * as 5.6 does.  Each line is that kernel's rule: its feature bits (up to
 * CUR_PERSONALITY), its probe (nothing after EPOLL_CTL but what bufsel adds),
 * -EINVAL from setup, enter and register for what it does not know, and an
 * unknown opcode or SQE flag failing at prep (which also ends the submit).
 * The kernel keeps the rings (rings = kernel): 5.6 as it was.
 */
Test(kernel56, compat_kernel_is_5_6, .timeout = 30)
{
	const struct prog *p = find_prog("compat_kernel");
	run_prog(&run_a, p, KERNEL56);
	expect_success(&run_a, "compat_kernel");
	cr_assert_str_eq(run_a.out,
			 "note features SINGLE_MMAP..CUR_PERSONALITY 0x1f\n"
			 "note features beyond 5.6 none\n"
			 "note probe last_op >= REMOVE_BUFFERS\n"
			 "note probe READ 1\n"
			 "note probe EPOLL_CTL 1\n"
			 "note probe SPLICE 0\n"
			 "note probe PROVIDE_BUFFERS 1\n"
			 "note probe REMOVE_BUFFERS 1\n"
			 "note probe TEE 0\n"
			 "note probe SEND_ZC 0\n"
			 "note setup CLAMP 0\n"
			 "note setup R_DISABLED -22\n"
			 "note setup COOP_TASKRUN -22\n"
			 "note setup SINGLE_ISSUER -22\n"
			 "note enter SQ_WAIT -22\n"
			 "note enter GETEVENTS 0\n"
			 "note register PROBE with no probe -22\n"
			 "note register ENABLE_RINGS -22\n"
			 "note register PBUF_RING -22\n"
			 "note register 200 -22\n"
			 "note register RESIZE_RINGS on a pipe -22\n"
			 "note submit 3\n"
			 "note submit the rest 1\n"
			 "cqe ud=1 res=-22 flags=0x0\n"
			 "cqe ud=2 res=-125 flags=0x0\n"
			 "cqe ud=3 res=-22 flags=0x0\n"
			 "cqe ud=4 res=0 flags=0x0\n");
	free_run(&run_a);
}

/* With rings = auto, bufsel keeps buffer rings on a kernel without them. */
Test(kernel56, buffer_rings_there_when_bufsel_keeps_them, .timeout = 30)
{
	const struct prog *p = find_prog("compat_kernel");
	run_prog(&run_a, p, KERNEL56_BUFSEL_RINGS);
	expect_success(&run_a, "compat_kernel");
	cr_assert(strstr(run_a.out, "note register PBUF_RING 0\n"), "%s", run_a.out);
	free_run(&run_a);
}

/*
 * Flags inside an SQE's own fields under BUFSEL_KERNEL=5.6, as 5.6's preps
 * treat them: io_accept_prep refuses any ioprio (multishot accept),
 * io_timeout_prep any flag but ABS, io_timeout_remove_prep any flag (an
 * update), io_async_cancel_prep any cancel flag and any SQE flag (a linked
 * cancel fails its chain), io_poll_add_prep a non-zero len (multishot poll);
 * send and receive never read ioprio, so a multishot receive is one receive
 * (one buffer, no IORING_CQE_F_MORE) and POLL_FIRST changes nothing;
 * io_async_cancel_prep refuses a non-zero len (the opcode to match, 6.6),
 * while the upper poll32_events bits of a POLL_REMOVE and a read's
 * attr_type_mask, which 6.18 refuses, are never read.  An unknown SQE flag
 * is refused before any of that, and ends the submit there.  A prep
 * failure completes its request with -EINVAL and the submit goes on (the
 * NOP behind the timeout update is submitted with it).
 */
Test(kernel56, compat_fields_is_5_6, .timeout = 30)
{
	const struct prog *p = find_prog("compat_fields");
	run_prog(&run_a, p, KERNEL56);
	expect_success(&run_a, "compat_fields");
	cr_assert_str_eq(run_a.out,
			 "note accept multishot, a connection queued\n"
			 "cqe ud=1 res=-22 flags=0x0\n"
			 "cqe ud=99 res=-2 flags=0x0\n"
			 "note recv multishot with a provided buffer, 3 bytes queued\n"
			 "cqe ud=2 res=0 flags=0x0\n"
			 "cqe ud=3 res=3 flags=0x1\n"
			 "cqe ud=99 res=-2 flags=0x0\n"
			 "note send and recv with POLL_FIRST\n"
			 "cqe ud=4 res=4 flags=0x0\n"
			 "cqe ud=5 res=4 flags=0x0\n"
			 "note timeout ETIME_SUCCESS, BOOTTIME; timeout update\n"
			 "cqe ud=6 res=-22 flags=0x0\n"
			 "cqe ud=7 res=-22 flags=0x0\n"
			 "cqe ud=8 res=-22 flags=0x0\n"
			 "cqe ud=9 res=0 flags=0x0\n"
			 "note timeout update with CQE_SKIP_SUCCESS, then a NOP\n"
			 "note submit 1\n"
			 "note submit the rest 1\n"
			 "cqe ud=17 res=-22 flags=0x0\n"
			 "cqe ud=18 res=0 flags=0x0\n"
			 "note cancel ANY; cancel with IOSQE_IO_LINK\n"
			 "cqe ud=10 res=-22 flags=0x0\n"
			 "cqe ud=11 res=-22 flags=0x0\n"
			 "cqe ud=12 res=-125 flags=0x0\n"
			 "note poll multishot on a pipe with data\n"
			 "cqe ud=13 res=-22 flags=0x0\n"
			 "cqe ud=99 res=-2 flags=0x0\n"
			 "note cancel with len 1; poll remove with upper event bits; read with an unknown attribute\n"
			 "cqe ud=14 res=-22 flags=0x0\n"
			 "cqe ud=15 res=-2 flags=0x0\n"
			 "cqe ud=16 res=2 flags=0x0\n");
	free_run(&run_a);
}

/*
 * A warning is given once per process, however many rings meet it: sq128
 * sets up three rings bufsel leaves to the kernel (SQE128, CQE32), and the
 * program's stderr gets one line about it, not three.
 */
Test(log, unshadowed_ring_warned_once, .timeout = 30)
{
	const struct prog *p = find_prog("sq128");
	run_prog(&run_a, p, PRELOAD);
	expect_success(&run_a, "sq128");
	const char *needle = "which bufsel does not shadow";
	int n = 0;
	for (const char *at = run_a.err; (at = strstr(at, needle)); at += strlen(needle))
		n++;
	cr_assert_eq(n, 1, "%d warnings about rings left to the kernel:\n%s", n, run_a.err);
	free_run(&run_a);
}

/* A program built but missing from the table would silently go unchecked. */
/*
 * Programs whose native run on a real Linux 5.10 differs from this
 * kernel's, and which BUFSEL_KERNEL=5.10 reproduces here: the legacy
 * groups' rules of the kernels before 5.18 (newest first, a receive bound
 * at its first attempt, PROVIDE_BUFFERS' count, a length of 0 reading
 * nothing, a buffer kept whatever the result) and what 5.10 lacks and
 * bufsel refuses as it would.  Their transcripts are in test/vm/linux-5.10
 * (make vm-test VM_RECORD=...); a program whose 5.10 run hangs, dies in
 * a race between its threads (stress_fork, stress_signals), or meets what
 * only the kernel beneath decides, is not here
 * (docs/kernel-semantics.md, "Found on a real Linux 5.10").
 */
#define KERNEL510_TEST(n) \
	Test(kernel510, n, .timeout = 60) { check_against_510(#n); }
KERNEL510_TEST(bs_eof_wave)
KERNEL510_TEST(bs_idle)
KERNEL510_TEST(bs_link)
KERNEL510_TEST(bs_recv)
KERNEL510_TEST(bs_timeout_wait)
KERNEL510_TEST(cq_unattended)
KERNEL510_TEST(fork_shared_ring)
KERNEL510_TEST(link_fail)
KERNEL510_TEST(msg_ring)
KERNEL510_TEST(pol_inject)
KERNEL510_TEST(pol_maxlen)
KERNEL510_TEST(sq128)
KERNEL510_TEST(sq_chaos)
KERNEL510_TEST(stress_recv)
KERNEL510_TEST(taskrun_flag)
KERNEL510_TEST(tmo_remove_order)
KERNEL510_TEST(wait_early)

/* Every recorded transcript is one a test reads. */
Test(table, every_linux510_transcript_is_used)
{
	static const char *const used[] = { "bs_eof_wave", "bs_idle", "bs_link", "bs_recv", "bs_timeout_wait",
					     "cq_unattended", "fork_shared_ring", "link_fail", "msg_ring", "pol_inject",
					     "pol_maxlen", "sq128", "sq_chaos", "stress_recv", "taskrun_flag", "tmo_remove_order", "wait_early" };
	DIR *d = opendir("test/vm/linux-5.10");
	cr_assert(d != NULL, "test/vm/linux-5.10: %s (run the suites from the source tree)", strerror(errno));
	struct dirent *e;
	unsigned seen = 0;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len < 5 || strcmp(e->d_name + len - 4, ".out"))
			continue;
		bool found = false;
		for (size_t i = 0; i < sizeof(used) / sizeof(used[0]); i++)
			found |= strlen(used[i]) == len - 4 && !strncmp(used[i], e->d_name, len - 4);
		cr_expect(found, "test/vm/linux-5.10/%s: no kernel510 test reads it", e->d_name);
		seen++;
	}
	closedir(d);
	cr_expect_eq(seen, sizeof(used) / sizeof(used[0]), "%u transcripts for %zu tests", seen,
		     sizeof(used) / sizeof(used[0]));
}

Test(table, every_built_program_is_listed)
{
	char dir[PATH_MAX];
	build_path(dir, sizeof(dir), "test/prog");
	DIR *d = opendir(dir);
	cr_assert(d != NULL, "%s: %s", dir, strerror(errno));
	struct dirent *e;
	while ((e = readdir(d))) {
		char path[PATH_MAX + 256];
		struct stat st;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || !(st.st_mode & S_IXUSR))
			continue;
		bool listed = false;
		for (size_t i = 0; i < sizeof(programs) / sizeof(programs[0]); i++)
			listed |= !strcmp(programs[i].name, e->d_name);
		cr_expect(listed, "%s is built but not in the PROGRAMS table of compare.c", path);
	}
	closedir(d);
}
