/*
 * Proof that bufsel emulates provided buffers instead of handing them to the
 * kernel. Identical output (compare.c) cannot tell an emulation from a
 * passthrough on a kernel that has the feature; the kernel's own record of
 * what it was asked to do can. Two io_uring tracepoints see every request a
 * ring receives: io_uring:io_uring_submit_req (each request accepted, with
 * its opcode name and the request flags, whose bit 5 is IOSQE_BUFFER_SELECT)
 * and io_uring:io_uring_req_failed (each request rejected at submission, with
 * the opcode and the SQE flags).
 *
 * bs_read and bs_recv run
 *   (a) natively: the trace must show PROVIDE_BUFFERS and requests carrying
 *       IOSQE_BUFFER_SELECT, which proves the trace sees them at all;
 *   (b) with LD_PRELOAD=<build>/libbufsel.so: the trace must show requests
 *       (the programs' reads and receives do reach the kernel, so an empty
 *       trace proves nothing), but no PROVIDE_BUFFERS, no REMOVE_BUFFERS and
 *       no request with IOSQE_BUFFER_SELECT.
 * bs_ring_basic and bs_ring_multishot do the same with buffer rings: a
 * third tracepoint, io_uring:io_uring_register, sees every registration, and
 * under bufsel with the rings its own (BUFSEL_RINGS=emulate, or
 * BUFSEL_KERNEL=5.15, which lacks them) none of a buffer ring may reach the
 * kernel.
 * Both runs must exit 0.
 *
 * Each test records into its own tracefs instance, limited to the program by
 * set_event_pid (written before the program is exec'd) with event-fork on, so
 * that threads and children it starts are recorded too and nothing else is;
 * the global trace buffer is left alone. tracefs is mounted at
 * /sys/kernel/tracing if neither it nor /sys/kernel/debug/tracing is there.
 * Without tracefs (not root, no CONFIG_FTRACE) the tests fail, saying so:
 * skipping would let a missing proof pass.
 *
 * The build directory is $BUFSEL_BUILD (default "build"), made absolute.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test/integration/harness.h"

#define BUFFER_SELECT_BIT 0x20ULL /* IOSQE_BUFFER_SELECT; REQ_F_BUFFER_SELECT shares the bit */
#define RUN_TIMEOUT 60            /* seconds for one program run */

static char msg[8192]; /* why a helper failed; static so a failed assertion leaks nothing */

__attribute__((format(printf, 1, 2))) static bool fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return false;
}

/* ---- paths ---------------------------------------------------------------- */

/* snprintf for paths: a path that does not fit fails the test instead of being cut. */
__attribute__((format(printf, 3, 4))) static void pathf(char *dst, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(dst, len, fmt, ap);
	va_end(ap);
	cr_assert(n >= 0 && (size_t)n < len, "path too long: %s...", dst);
}


/* ---- tracefs -------------------------------------------------------------- */

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The tracefs root, mounting it if it is nowhere yet. */
static bool tracefs_root(char *root, size_t len)
{
	static const char *const where[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char probe[PATH_MAX];
	for (int i = 0; i < 2; i++) {
		snprintf(probe, sizeof(probe), "%s/events", where[i]);
		if (is_dir(probe)) {
			snprintf(root, len, "%s", where[i]);
			return true;
		}
	}
	if (mount("nodev", where[0], "tracefs", 0, NULL) < 0)
		return fail("tracefs is not mounted and mounting it on %s failed: %s "
			    "(these tests need root and a kernel with CONFIG_FTRACE)",
			    where[0], strerror(errno));
	snprintf(probe, sizeof(probe), "%s/events", where[0]);
	if (!is_dir(probe))
		return fail("tracefs mounted on %s, but it has no events/ directory", where[0]);
	snprintf(root, len, "%s", where[0]);
	return true;
}

static bool put(const char *dir, const char *file, const char *value)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return fail("open %s: %s", path, strerror(errno));
	ssize_t n = write(fd, value, strlen(value));
	int err = errno;
	close(fd);
	if (n != (ssize_t)strlen(value))
		return fail("write \"%s\" to %s: %s", value, path, n < 0 ? strerror(err) : "short write");
	return true;
}

static char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap + 1);
	for (ssize_t r; buf; n += (size_t)r) {
		if (n == cap) {
			char *bigger = realloc(buf, 2 * cap + 1);
			if (!bigger) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = bigger;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR) {
			r = 0;
			continue;
		}
		if (r <= 0)
			break;
	}
	close(fd);
	if (buf) {
		buf[n] = '\0';
		*len = n;
	}
	return buf;
}

static const char *const events[] = { "io_uring/io_uring_submit_req", "io_uring/io_uring_req_failed",
				      "io_uring/io_uring_register" };

/* A fresh instance recording the events, with a buffer big enough for one program. */
static bool instance_create(const char *root, const char *name, char *dir, size_t len)
{
	pathf(dir, len, "%s/instances/%s", root, name);
	if (mkdir(dir, 0700) < 0)
		return fail("mkdir %s: %s", dir, strerror(errno));
	if (!put(dir, "buffer_size_kb", "4096") || !put(dir, "options/event-fork", "1"))
		return false;
	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		char file[PATH_MAX];
		pathf(file, sizeof(file), "%s/events/%s", dir, events[i]);
		if (!is_dir(file))
			return fail("this kernel has no %s tracepoint (%s missing)", events[i], file);
		snprintf(file, sizeof(file), "events/%s/enable", events[i]);
		if (!put(dir, file, "1"))
			return false;
	}
	return true;
}

/* ---- one traced run ------------------------------------------------------- */

struct traced {
	int status;
	bool timed_out;
	char *out;   /* the program's stdout and stderr */
	char *trace; /* the instance's trace file */
	size_t out_len, trace_len;
};

static char **make_env(const char *preload, const char *extra)
{
	size_t k;
	char **env = harness_env(3, &k);
	if (preload) {
		env[k++] = (char *)preload;
		env[k++] = "BUFSEL_LOG=info";
		if (extra)
			env[k++] = (char *)extra;
	} else if (harness_asan_runtime()) {
		static char asan[PATH_MAX + 16];
		snprintf(asan, sizeof(asan), "LD_PRELOAD=%s", harness_asan_runtime());
		env[k++] = asan;
	}
	return env;
}

/*
 * Runs exe with env, its pid registered in the instance before it execs;
 * stdout and stderr go to one memfd, read back afterwards.
 */
static bool run_traced(const char *dir, const char *exe, char **env, struct traced *t)
{
	memset(t, 0, sizeof(*t));
	int go[2];
	int out = memfd_create("emulated-output", MFD_CLOEXEC);
	if (out < 0 || pipe2(go, O_CLOEXEC) < 0)
		return fail("memfd/pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		return fail("fork: %s", strerror(errno));
	if (pid == 0) {
		char c;
		close(go[1]);
		int null = open("/dev/null", O_RDONLY);
		if (read(go[0], &c, 1) != 1 || null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
			_exit(126);
		close_range(3, ~0U, 0);
		char *argv[] = { (char *)exe, NULL };
		execve(exe, argv, env);
		dprintf(2, "emulated: execve %s: %s\n", exe, strerror(errno));
		_exit(127);
	}
	close(go[0]);
	char pidstr[32];
	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	bool ok = put(dir, "set_event_pid", pidstr);
	/* Closing the pipe without a byte makes the child exit 126 instead of running. */
	if (ok && write(go[1], "g", 1) != 1)
		ok = fail("releasing the child: %s", strerror(errno));
	close(go[1]);

	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		pid_t w = waitpid(pid, &t->status, WNOHANG);
		if (w == pid)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec > RUN_TIMEOUT) {
			t->timed_out = true;
			kill(pid, SIGKILL);
			waitpid(pid, &t->status, 0);
			break;
		}
		usleep(10 * 1000);
	}
	/* Stop recording before reading, so nothing later lands in the buffer. */
	for (size_t i = 0; ok && i < sizeof(events) / sizeof(events[0]); i++) {
		char file[PATH_MAX];
		snprintf(file, sizeof(file), "events/%s/enable", events[i]);
		ok = put(dir, file, "0");
	}
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", out);
	t->out = slurp(path, &t->out_len);
	close(out);
	snprintf(path, sizeof(path), "%s/trace", dir);
	t->trace = slurp(path, &t->trace_len);
	if (ok && !t->trace)
		ok = fail("read %s: %s", path, strerror(errno));
	if (ok && !t->out)
		ok = fail("reading the program's output failed");
	return ok;
}

/* ---- the trace ------------------------------------------------------------- */

/* The register opcodes of buffer rings: IORING_REGISTER_PBUF_RING,
 * IORING_UNREGISTER_PBUF_RING, IORING_REGISTER_PBUF_STATUS. */
static bool ring_opcode(int op)
{
	return op == 22 || op == 23 || op == 26;
}

struct counts {
	unsigned long requests, provide, remove, select, ring_reg, lost;
	char offending[2048]; /* the first lines that must not be there */
};

static void add_offending(struct counts *c, const char *line, size_t n)
{
	size_t used = strlen(c->offending);
	if (used + n + 2 < sizeof(c->offending))
		snprintf(c->offending + used, sizeof(c->offending) - used, "%.*s\n", (int)n, line);
}

/*
 * Whether a trace line is the program's: its task is the program (the
 * kernel's comm, 15 characters at most) or one of io_uring's own threads.
 * set_event_pid already limits the instance; this keeps another io_uring
 * user on the machine out of the counts should the kernel attribute an event
 * to it anyway.
 */
static bool programs_line(const char *line, const char *prog)
{
	while (*line == ' ')
		line++;
	const char *end = strstr(line, " [");
	if (!end)
		return false;
	const char *dash = end;
	while (dash > line && dash[-1] != '-')
		dash--;
	if (dash == line)
		return false;
	size_t n = (size_t)(dash - 1 - line), want = strlen(prog) < 15 ? strlen(prog) : 15;
	return (n == want && !strncmp(line, prog, n)) || !strncmp(line, "iou-", 4);
}

static bool parse_trace(const char *trace, const char *prog, struct counts *c)
{
	memset(c, 0, sizeof(*c));
	unsigned long in_buffer = 0, written = 0;
	const char *hdr = strstr(trace, "entries-in-buffer/entries-written:");
	if (!hdr || sscanf(hdr, "entries-in-buffer/entries-written: %lu/%lu", &in_buffer, &written) != 2)
		return fail("the trace has no entries-in-buffer/entries-written header:\n%.500s", trace);
	c->lost = written - in_buffer;
	for (const char *p = trace; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char line[1024];
		snprintf(line, sizeof(line), "%.*s", (int)n, p);
		p = nl ? nl + 1 : p + n;
		const char *reg = strstr(line, " io_uring_register: ");
		if (line[0] != '#' && reg && programs_line(line, prog)) {
			int op;
			const char *o = strstr(reg, ", opcode ");
			if (!o || sscanf(o, ", opcode %d,", &op) != 1)
				return fail("cannot parse this trace line (has the tracepoint's format changed?):\n%s", line);
			if (ring_opcode(op)) {
				c->ring_reg++;
				add_offending(c, line, strlen(line));
			}
			continue;
		}
		bool submit = strstr(line, " io_uring_submit_req: ") != NULL;
		if (line[0] == '#' || (!submit && !strstr(line, " io_uring_req_failed: ")) || !programs_line(line, prog))
			continue;
		char op[64];
		unsigned long long flags;
		const char *o = strstr(line, ", opcode "), *f = strstr(line, ", flags 0x");
		if (!o || !f || sscanf(o, ", opcode %63[^,],", op) != 1 || sscanf(f, ", flags 0x%llx", &flags) != 1)
			return fail("cannot parse this trace line (has the tracepoint's format changed?):\n%s", line);
		c->requests++;
		bool bad = false;
		if (!strcmp(op, "PROVIDE_BUFFERS"))
			c->provide++, bad = true;
		if (!strcmp(op, "REMOVE_BUFFERS"))
			c->remove++, bad = true;
		if (flags & BUFFER_SELECT_BIT)
			c->select++, bad = true;
		if (bad)
			add_offending(c, line, strlen(line));
	}
	return true;
}

/* ---- the tests ------------------------------------------------------------ */

static struct traced run;

static const char *status_text(const struct traced *t)
{
	static char buf[96];
	if (t->timed_out)
		return "timed out (killed)";
	if (WIFSIGNALED(t->status))
		snprintf(buf, sizeof(buf), "killed by signal %d (%s)", WTERMSIG(t->status), strsignal(WTERMSIG(t->status)));
	else if (WEXITSTATUS(t->status) != 0)
		snprintf(buf, sizeof(buf), "exited with status %d", WEXITSTATUS(t->status));
	else
		return NULL;
	return buf;
}

/* extra: one more variable for the bufsel run, or NULL. */
static void check(const char *prog, bool bufsel, const char *extra)
{
	char root[PATH_MAX], dir[PATH_MAX], name[128], exe[PATH_MAX], lib[PATH_MAX];
	pathf(exe, sizeof(exe), "%s/test/prog/%s", harness_build_dir(), prog);
	pathf(lib, sizeof(lib), "%s/libbufsel.so", harness_build_dir());
	cr_assert(access(exe, X_OK) == 0, "%s: not built (%s)", exe, strerror(errno));
	if (bufsel)
		cr_assert(access(lib, R_OK) == 0, "%s: %s", lib, strerror(errno));
	static char preload[2 * PATH_MAX + 16];
	const char *asan = harness_asan_runtime();
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s%s%s", asan ? asan : "", asan ? ":" : "", lib);
	char **env = make_env(bufsel ? preload : NULL, extra);

	cr_assert(tracefs_root(root, sizeof(root)), "%s", msg);
	snprintf(name, sizeof(name), "bufsel-emulated-%d-%s-%s", (int)getpid(), prog, bufsel ? "bufsel" : "native");
	bool ok = instance_create(root, name, dir, sizeof(dir)) && run_traced(dir, exe, env, &run);
	/* The instance goes whatever happened; rmdir fails harmlessly if mkdir did. */
	rmdir(dir);
	cr_assert(ok, "%s: %s", prog, msg);

	const char *mode = bufsel ? "under bufsel" : "natively";
	const char *why = status_text(&run);
	cr_assert(why == NULL, "%s %s: %s\n--- output (last 3000 bytes) ---\n%s", prog, mode, why,
		  harness_tail(run.out, run.out_len, 3000));
	struct counts c;
	cr_assert(parse_trace(run.trace, prog, &c), "%s %s: %s", prog, mode, msg);
	cr_assert(c.lost == 0, "%s %s: the trace buffer lost %lu events; the counts would be incomplete", prog, mode,
		  c.lost);
	if (!bufsel) {
		cr_assert((c.provide > 0 || c.ring_reg > 0) && c.select > 0,
			  "%s natively: the trace shows %lu requests, %lu PROVIDE_BUFFERS, %lu buffer-ring "
			  "registrations and %lu with IOSQE_BUFFER_SELECT; it cannot see what it must check\n"
			  "--- trace (last 3000 bytes) ---\n%s",
			  prog, c.requests, c.provide, c.ring_reg, c.select, harness_tail(run.trace, run.trace_len, 3000));
	} else {
		cr_assert(c.requests > 0,
			  "%s under bufsel: the trace shows no io_uring request at all, so it proves nothing "
			  "(did the program's I/O reach the kernel through some other path?)\n--- output (last 3000 bytes) ---\n%s",
			  prog, harness_tail(run.out, run.out_len, 3000));
		cr_assert(c.provide == 0 && c.remove == 0 && c.select == 0 && c.ring_reg == 0,
			  "%s under bufsel: the kernel saw %lu PROVIDE_BUFFERS, %lu REMOVE_BUFFERS, %lu requests "
			  "with IOSQE_BUFFER_SELECT (of %lu requests) and %lu buffer-ring registrations: provided "
			  "buffers were not emulated\n--- first such trace lines ---\n%s",
			  prog, c.provide, c.remove, c.select, c.requests, c.ring_reg, c.offending);
	}
	free(run.out);
	free(run.trace);
}

Test(emulated, bs_read_native, .timeout = 2 * RUN_TIMEOUT)
{
	check("bs_read", false, NULL);
}

Test(emulated, bs_read_bufsel, .timeout = 2 * RUN_TIMEOUT)
{
	check("bs_read", true, NULL);
}

Test(emulated, bs_recv_native, .timeout = 2 * RUN_TIMEOUT)
{
	check("bs_recv", false, NULL);
}

Test(emulated, bs_recv_bufsel, .timeout = 2 * RUN_TIMEOUT)
{
	check("bs_recv", true, NULL);
}

/* Buffer rings bufsel keeps (BUFSEL_RINGS=emulate, and by default on a
 * kernel without rings): the kernel sees no registration of one either. */
Test(emulated, bs_ring_basic_native, .timeout = 2 * RUN_TIMEOUT)
{
	check("bs_ring_basic", false, NULL);
}

Test(emulated, bs_ring_basic_bufsel, .timeout = 2 * RUN_TIMEOUT)
{
	check("bs_ring_basic", true, "BUFSEL_RINGS=emulate");
}

Test(emulated, bs_ring_multishot_kernel_5_15, .timeout = 2 * RUN_TIMEOUT)
{
	check("bs_ring_multishot", true, "BUFSEL_KERNEL=5.15");
}
