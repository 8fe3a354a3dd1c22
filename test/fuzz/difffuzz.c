/*
 * difffuzz: seqfuzz natively and under bufsel, batch by batch, transcript
 * against transcript (docs/reliability.md, "Differential fuzzing").
 *
 *   difffuzz [--seed S] [--sequences N] [--seconds T] [--batch B] [--jobs J]
 *            [--build DIR] [--ops M] [--kernel56-every K] [--rings-every G]
 *            [--native-twice-every D] [--known NAME]...
 *
 * Seeds S.. in batches of B per process (one process start per batch, not
 * per sequence); up to J processes at once (default: the number of CPUs),
 * so the native and the bufsel arm of a batch run side by side.  Every K-th
 * batch (default 4) runs with --compat 5.6 in both arms and
 * BUFSEL_KERNEL=5.6 in the bufsel arm.  Every G-th batch (default 0: none,
 * while bufsel's ring emulation still differs; make fuzz-rings) runs
 * with --rings in both arms (some groups are buffer rings): natively the
 * kernel keeps the rings, under bufsel BUFSEL_RINGS=emulate makes every
 * ring bufsel's.  A batch that is both has both (a program written for 5.6
 * that uses the rings bufsel gives it).  The first batch and every D-th after
 * it (default 8) also run a second time natively: the two native transcripts
 * must be identical, or the generator is not deterministic and nothing it
 * says about bufsel can be trusted.
 *
 * The first difference stops the run with exit status 1: the seed, the
 * first differing lines of the two transcripts, the commands that replay the
 * sequence both ways, and whether a re-run of that seed alone reproduces
 * the native transcript (and the bufsel one).  Before that, the seed alone
 * is run natively up to R times (--native-reruns, default 8; 0: none): if
 * one of those runs gives bufsel's transcript exactly and another the
 * batch's native one, the difference is the kernel's own (a race the
 * batch's native run went the other way on), counted apart and reported in
 * one line.  With --keep-going, a divergence whose seed alone gave the
 * batch's native transcript is run natively R times more at the end of the
 * run with the machine's CPUs kept busy, and counted as the kernel's own if
 * one of those gives bufsel's transcript (run_loaded_checks).  A native transcript that
 * reports a lost completion or a wrong buffer, a nondeterministic native
 * run, a crash, a timeout or a library that was not loaded are failures too.
 * Exit status: 0 all equal, 1 a divergence, 2 anything else.
 *
 * --known NAME passes seqfuzz's switch for a known difference (see
 * docs/reliability.md) to both arms: the generator then makes what it
 * otherwise avoids, to show the difference.
 *
 * --generator sqefuzz runs the whole-SQE fuzzer (test/fuzz/sqefuzz.c)
 * instead of seqfuzz: no --compat runs, one ring per sequence.  With
 * --keep-going a divergence, a crash (a signal) or a hang (a timeout, or
 * sqefuzz's own SIGALRM) is counted and the run goes on; the first of each
 * kind is shown in full, the others in one line each; the run ends with
 * the counts and exit status 1 if any.  A batch that crashed or hung is
 * not compared.
 *
 * Every run gets the caller's environment without LD_PRELOAD and BUFSEL_*,
 * plus BUFSEL_CONF= (no configuration file); the bufsel arm adds
 * LD_PRELOAD=<build>/libbufsel.so and BUFSEL_LOG=info, whose exit line must
 * show one ring set up per sequence (and the file check's).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test/asan_runtime.h"

enum arm { NATIVE, BUFSEL, NATIVE2, NARMS };
static const char *const arm_name[NARMS] = { "native", "bufsel", "native (again)" };

struct job {
	unsigned long long batch;
	enum arm arm;
	pid_t pid;
	int out_fd, err_fd;
	char *out, *err;
	size_t out_len, err_len, out_cap, err_cap;
	int status;
	bool running, done, timed_out;
	bool reaped;		/* out of the running list: its batch may free it */
	double started;
};

struct batch {
	unsigned long long first, count;
	bool compat56, rings, twice;
	struct job *job[NARMS];
};

/* Totals from the native transcripts. */
struct totals {
	unsigned long long seqs, seqs56, seqs_rings, ops, cqes, bufs, batches, twice;
};

static struct {
	unsigned long long seed, sequences;
	double seconds;
	unsigned batch, jobs, ops, kernel56_every, rings_every, twice_every, timeout, reruns;
	char build[PATH_MAX], seqfuzz[PATH_MAX + 32], lib[PATH_MAX + 32];
	const char *known[8];
	unsigned nknown;
	const char *asan;
	const char *generator;
	bool keep_going;
	unsigned long long ndiv, ncrash, nhang, nnondet, nnative, nloaded;
	double t0;
	struct totals tot;
} opt = {
	.seed = 1, .sequences = 10000, .batch = 1000, .ops = 40, .kernel56_every = 4, .rings_every = 3,
	.twice_every = 8, .timeout = 900, .reruns = 8, .generator = "seqfuzz",
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noreturn, format(printf, 2, 3))) static void die(int status, const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fputs("difffuzz: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(status);
}

/* ---- running seqfuzz ---- */

/* The caller's environment less LD_PRELOAD and BUFSEL_*, plus extra. */
static char **make_env(const char *const *extra, size_t nextra)
{
	extern char **environ;
	size_t n = 0, k = 0;
	for (char **e = environ; *e; e++)
		n++;
	char **env = calloc(n + nextra + 1, sizeof(*env));
	if (!env)
		die(2, "out of memory");
	for (char **e = environ; *e; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "BUFSEL_", 7))
			env[k++] = *e;
	for (size_t i = 0; i < nextra; i++)
		env[k++] = (char *)extra[i];
	return env;
}

static void arm_argv(const struct batch *b, enum arm arm, unsigned long long first,
		     unsigned long long count, bool verbose, char *argv[32], char bufs[3][32])
{
	int k = 0;
	(void)arm;
	snprintf(bufs[0], 32, "%llu", first);
	snprintf(bufs[1], 32, "%llu", count);
	snprintf(bufs[2], 32, "%u", opt.ops);
	argv[k++] = opt.seqfuzz;
	argv[k++] = "--seed";
	argv[k++] = bufs[0];
	argv[k++] = "--count";
	argv[k++] = bufs[1];
	if (!strcmp(opt.generator, "seqfuzz")) {
		argv[k++] = "--ops";
		argv[k++] = bufs[2];
	}
	if (b->compat56) {
		argv[k++] = "--compat";
		argv[k++] = "5.6";
	}
	if (b->rings)
		argv[k++] = "--rings";
	for (unsigned i = 0; i < opt.nknown; i++) {
		argv[k++] = "--known";
		argv[k++] = (char *)opt.known[i];
	}
	if (verbose)
		argv[k++] = "--verbose";
	argv[k] = NULL;
}

static char **arm_env(const struct batch *b, enum arm arm)
{
	static char preload[3 * PATH_MAX];
	const char *extra[5];
	size_t n = 0;
	extra[n++] = "BUFSEL_CONF=";
	if (arm == BUFSEL) {
		snprintf(preload, sizeof(preload), "LD_PRELOAD=%s%s%s", opt.asan ? opt.asan : "",
			 opt.asan ? ":" : "", opt.lib);
		extra[n++] = preload;
		extra[n++] = "BUFSEL_LOG=info";
		if (b->compat56)
			extra[n++] = "BUFSEL_KERNEL=5.6";
		if (b->rings)
			extra[n++] = "BUFSEL_RINGS=emulate";
	}
	return make_env(extra, n);
}

static void job_start(struct job *j, const struct batch *b)
{
	int out[2], err[2];
	char *argv[32], bufs[3][32];
	if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
		die(2, "pipe2: %s", strerror(errno));
	arm_argv(b, j->arm, b->first, b->count, false, argv, bufs);
	char **env = arm_env(b, j->arm);
	pid_t pid = fork();
	if (pid < 0)
		die(2, "fork: %s", strerror(errno));
	if (pid == 0) {
		setpgid(0, 0);
		int null = open("/dev/null", O_RDONLY);
		if (null < 0 || dup2(null, 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0)
			_exit(126);
		execve(argv[0], argv, env);
		dprintf(2, "difffuzz: execve %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	free(env);
	setpgid(pid, pid);
	close(out[1]);
	close(err[1]);
	j->pid = pid;
	j->out_fd = out[0];
	j->err_fd = err[0];
	j->running = true;
	j->started = now_s();
}

static void append(char **buf, size_t *len, size_t *cap, const char *data, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t c = *cap ? *cap : 1 << 20;
		while (c < *len + n + 1)
			c *= 2;
		*buf = realloc(*buf, c);
		if (!*buf)
			die(2, "out of memory");
		*cap = c;
	}
	memcpy(*buf + *len, data, n);
	*len += n;
	(*buf)[*len] = '\0';
}

/* Reads what the running jobs wrote, reaps the ones that ended. */
static void jobs_poll(struct job **run, unsigned n)
{
	struct pollfd pfd[64];
	struct job *owner[64];
	bool is_out[64];
	unsigned k = 0;
	for (unsigned i = 0; i < n; i++) {
		if (run[i]->out_fd >= 0) {
			pfd[k] = (struct pollfd){ .fd = run[i]->out_fd, .events = POLLIN };
			owner[k] = run[i];
			is_out[k++] = true;
		}
		if (run[i]->err_fd >= 0) {
			pfd[k] = (struct pollfd){ .fd = run[i]->err_fd, .events = POLLIN };
			owner[k] = run[i];
			is_out[k++] = false;
		}
	}
	if (k && poll(pfd, k, 100) < 0 && errno != EINTR)
		die(2, "poll: %s", strerror(errno));
	for (unsigned i = 0; i < k; i++) {
		if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		struct job *j = owner[i];
		char chunk[1 << 16];
		ssize_t r = read(pfd[i].fd, chunk, sizeof(chunk));
		if (r > 0) {
			if (is_out[i])
				append(&j->out, &j->out_len, &j->out_cap, chunk, (size_t)r);
			else
				append(&j->err, &j->err_len, &j->err_cap, chunk, (size_t)r);
		} else if (r == 0 || errno != EINTR) {
			close(pfd[i].fd);
			*(is_out[i] ? &j->out_fd : &j->err_fd) = -1;
		}
	}
	if (!k)
		usleep(10000);
	for (unsigned i = 0; i < n; i++) {
		struct job *j = run[i];
		if (j->out_fd < 0 && j->err_fd < 0 && waitpid(j->pid, &j->status, WNOHANG) == j->pid) {
			j->running = false;
			j->done = true;
			kill(-j->pid, SIGKILL);	/* strays of the group, if any */
		} else if (now_s() - j->started > opt.timeout) {
			kill(-j->pid, SIGKILL);
			j->timed_out = true;
		}
	}
}

/* Runs argv with env to completion, stdout and stderr captured (re-runs). */
static void run_sync(const struct batch *b, enum arm arm, unsigned long long seed, char **out, char **err)
{
	struct job j = { .arm = arm, .out_fd = -1, .err_fd = -1 };
	struct batch one = *b;
	one.first = seed;
	one.count = 1;
	job_start(&j, &one);
	struct job *run[1] = { &j };
	while (!j.done) {
		jobs_poll(run, 1);
		if (j.timed_out && j.out_fd < 0 && j.err_fd < 0) {
			waitpid(j.pid, &j.status, 0);
			break;
		}
	}
	*out = j.out ? j.out : strdup("");
	*err = j.err ? j.err : strdup("");
}

/* ---- comparing ---- */

/* The transcript of one sequence: from its "seq " line to the next. */
static const char *seq_block(const char *s, size_t len, const char *from, size_t *n)
{
	const char *end = s + len, *p = from;
	if (p >= end)
		return NULL;
	const char *q = p;
	for (;;) {
		const char *nl = memchr(q, '\n', (size_t)(end - q));
		if (!nl) {
			q = end;
			break;
		}
		q = nl + 1;
		if (q >= end || !strncmp(q, "seq ", 4))
			break;
	}
	*n = (size_t)(q - p);
	return p;
}

static unsigned long long seq_seed(const char *block)
{
	return strtoull(block + 4, NULL, 10);
}

static void print_lines(const char *tag, const char *p, size_t n, unsigned from, unsigned count)
{
	unsigned line = 0;
	const char *end = p + n;
	while (p < end && line < from + count) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (line >= from)
			printf("%s%.*s\n", tag, (int)l, p);
		p += l + 1;
		line++;
	}
	if (line < from + 1)
		printf("%s(end of transcript)\n", tag);
}

/* The index of the first line where a and b differ. */
static unsigned first_diff_line(const char *a, size_t na, const char *b, size_t nb)
{
	unsigned line = 0;
	size_t i = 0;
	for (; i < na && i < nb && a[i] == b[i]; i++)
		line += a[i] == '\n';
	return line;
}

static void replay_commands(const struct batch *b, unsigned long long seed)
{
	char *argv[32], bufs[3][32];
	arm_argv(b, NATIVE, seed, 1, true, argv, bufs);
	printf("replay natively:\n  BUFSEL_CONF=");
	for (int i = 0; argv[i]; i++)
		printf(" %s", argv[i]);
	printf("\nreplay under bufsel:\n  BUFSEL_CONF= %s%sLD_PRELOAD=%s%s%s", b->compat56 ? "BUFSEL_KERNEL=5.6 " : "",
	       b->rings ? "BUFSEL_RINGS=emulate " : "", opt.asan ? opt.asan : "", opt.asan ? ":" : "", opt.lib);
	for (int i = 0; argv[i]; i++)
		printf(" %s", argv[i]);
	printf("\n");
}

/* Is out, a re-run's whole output, exactly the transcript t of n bytes? */
static bool is_transcript(const char *out, const char *t, size_t n)
{
	return strlen(out) == n && !memcmp(out, t, n);
}

/* After a difference: does the seed alone give the same transcripts again? */
static void rerun_report(const struct batch *b, unsigned long long seed, const char *nat, size_t nn,
			 const char *shim, size_t ns)
{
	unsigned same_native = 0, same_bufsel = 0;
	for (int i = 0; i < 3; i++) {
		char *out, *err;
		run_sync(b, NATIVE, seed, &out, &err);
		same_native += is_transcript(out, nat, nn);
		free(out);
		free(err);
		run_sync(b, BUFSEL, seed, &out, &err);
		same_bufsel += is_transcript(out, shim, ns);
		free(out);
		free(err);
	}
	printf("re-run of seed %llu alone, 3 times each: native transcript reproduced %u/3, bufsel transcript "
	       "reproduced %u/3%s\n", seed, same_native, same_bufsel,
	       same_native == 3 ? "" : " (native not reproduced: the generator depends on something else too)");
}

/* With --keep-going: the seeds of the batch whose two native transcripts
 * differ; they are not compared with bufsel (the kernel's own
 * nondeterminism, see docs/reliability.md, "Whole-SQE fuzzing"). */
static unsigned long long nondet_seed[4096];
static unsigned nnondet_seed;

static bool is_nondet(unsigned long long seed)
{
	for (unsigned i = 0; i < nnondet_seed; i++)
		if (nondet_seed[i] == seed)
			return true;
	return false;
}

static const char *self_problem(const char *out);

/*
 * A bufsel transcript that differs from the batch's native one may still be
 * one the kernel gives: many sequences race a completion against the next
 * submission (io-wq, a poll's wake-up, a timer), and two native runs of a
 * batch catch only some of them.  The seed alone is run natively up to
 * opt.reruns times; the native re-run that reproduces bufsel's transcript
 * exactly (1-based), if another also reproduced the batch's, or 0.
 * *self_contained: whether one did (the seed alone gives the batch's native
 * transcript, so that a later re-run of it alone can count).
 */
static unsigned native_gives(const struct batch *b, unsigned long long seed, const char *nat, size_t nn,
			     const char *shim, size_t ns, bool *self_contained)
{
	/* The kernel's own race only if the seed alone also gives the batch's
	 * native transcript: a sequence that depends on what the batch's
	 * earlier ones left behind proves nothing run alone. */
	unsigned got_shim = 0;
	bool got_nat = false;
	for (unsigned i = 1; i <= opt.reruns && !(got_shim && got_nat); i++) {
		char *out, *err;
		run_sync(b, NATIVE, seed, &out, &err);
		if (!self_problem(out)) {
			if (!got_shim && is_transcript(out, shim, ns))
				got_shim = i;
			got_nat |= is_transcript(out, nat, nn);
		}
		free(out);
		free(err);
	}
	*self_contained = got_nat;
	return got_nat ? got_shim : 0;
}

/*
 * Divergences whose seed alone gives the batch's native transcript are run
 * natively once more at the end of the run, when no batch runs beside them,
 * with the machine's CPUs kept busy: a race the kernel decides by when its
 * io-wq worker or task work gets a CPU goes the other way under load (an
 * io-wq request that selects its buffer after the program's next
 * submission on a quiet machine, before it on a busy one).  If a loaded
 * native run gives bufsel's transcript, the divergence is the kernel's own
 * after all.  Loading the machine while batches run would change their
 * timing, hence the wait for the end.
 */
struct loaded_check {
	unsigned long long seed;
	bool compat56, rings;
	char *shim;
	size_t ns;
};
static struct loaded_check loaded_check[4096];
static unsigned nloaded_check;

static void loaded_later(const struct batch *b, unsigned long long seed, const char *shim, size_t ns)
{
	if (nloaded_check >= sizeof(loaded_check) / sizeof(loaded_check[0]))
		return;
	char *copy = strndup(shim, ns);
	if (!copy)
		return;
	loaded_check[nloaded_check++] = (struct loaded_check){ seed, b->compat56, b->rings, copy, ns };
}

/* Busy processes, one more than the machine has CPUs. */
static pid_t hog[65];
static unsigned nhog;

static void load_start(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	n = n < 1 ? 1 : n > 64 ? 64 : n;
	for (nhog = 0; nhog < (unsigned)n + 1; nhog++) {
		pid_t pid = fork();
		if (pid < 0)
			break;
		if (!pid) {
			/* Never outlive the run, however it ends. */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			alarm(120);
			if (getppid() == 1)
				_exit(0);
			for (;;)
				__asm__ volatile("" ::: "memory");
		}
		hog[nhog] = pid;
	}
}

static void load_stop(void)
{
	for (unsigned i = 0; i < nhog; i++) {
		kill(hog[i], SIGKILL);
		waitpid(hog[i], NULL, 0);
	}
	nhog = 0;
}

static void run_loaded_checks(void)
{
	if (!nloaded_check || !opt.reruns)
		return;
	load_start();
	for (unsigned k = 0; k < nloaded_check; k++) {
		const struct loaded_check *c = &loaded_check[k];
		struct batch b = { .compat56 = c->compat56, .rings = c->rings };
		for (unsigned i = 1; i <= opt.reruns; i++) {
			char *out, *err;
			run_sync(&b, NATIVE, c->seed, &out, &err);
			bool same = !self_problem(out) && is_transcript(out, c->shim, c->ns);
			free(out);
			free(err);
			if (same) {
				opt.ndiv--;
				opt.nnative++;
				opt.nloaded++;
				printf("native outcome seed %llu: reported above as a divergence; bufsel's transcript is "
				       "the kernel's at native re-run %u under load\n", c->seed, i);
				break;
			}
		}
	}
	load_stop();
	for (unsigned k = 0; k < nloaded_check; k++)
		free(loaded_check[k].shim);
	nloaded_check = 0;
}

/* 0 when every sequence matches; else prints the first difference. */
static int compare(const struct batch *b, const struct job *x, const struct job *y, bool determinism)
{
	const char *pa = x->out, *pb = y->out;
	int found = 0;
	for (;;) {
		size_t na = 0, nb = 0;
		const char *sa = seq_block(x->out, x->out_len, pa, &na);
		const char *sb = seq_block(y->out, y->out_len, pb, &nb);
		if (!sa && !sb)
			return found;
		if (sa && sb && na == nb && !memcmp(sa, sb, na)) {
			pa = sa + na;
			pb = sb + nb;
			continue;
		}
		const char *blk = sa ? sa : sb;
		unsigned long long seed = seq_seed(blk);
		unsigned line = first_diff_line(sa ? sa : "", sa ? na : 0, sb ? sb : "", sb ? nb : 0);
		bool self_contained = false;
		unsigned rerun = !determinism && sa && sb && !is_nondet(seed) ?
					 native_gives(b, seed, sa, na, sb, nb, &self_contained) : 0;
		if (rerun) {
			opt.nnative++;
			printf("native outcome seed %llu: differs at line %u; bufsel's transcript is the kernel's at "
			       "native re-run %u\n", seed, line + 1, rerun);
			pa = sa + na;
			pb = sb + nb;
			continue;
		}
		if (opt.keep_going && sa && sb && (determinism || is_nondet(seed))) {
			if (determinism) {
				opt.nnondet++;
				if (nnondet_seed < sizeof(nondet_seed) / sizeof(nondet_seed[0]))
					nondet_seed[nnondet_seed++] = seed;
			}
			pa = sa + na;
			pb = sb + nb;
			continue;
		}
		if (opt.keep_going && (determinism ? opt.nnondet : opt.ndiv)) {
			/* Not the first: one line, the seed and where it differs. */
			(*(determinism ? &opt.nnondet : &opt.ndiv))++;
			if (!determinism && self_contained)
				loaded_later(b, seed, sb, nb);
			const char *la = sa ? sa : "", *lb = sb ? sb : "";
			for (unsigned i = 0; i < line; i++) {
				la = strchr(la, '\n') ? strchr(la, '\n') + 1 : "";
				lb = strchr(lb, '\n') ? strchr(lb, '\n') + 1 : "";
			}
			printf("%s seed %llu: %.*s | %.*s\n", determinism ? "nondeterministic" : "divergence", seed,
			       (int)strcspn(la, "\n"), la, (int)strcspn(lb, "\n"), lb);
			if (!sa || !sb)
				return 1;
			found = 1;
			pa = sa + na;
			pb = sb + nb;
			continue;
		}
		printf("\n%s: seed %llu: the %s and the %s transcripts differ at line %u of the sequence%s%s\n",
		       determinism ? "NONDETERMINISTIC GENERATOR" : "DIVERGENCE", seed, arm_name[x->arm],
		       arm_name[y->arm], line + 1, b->compat56 ? " (--compat 5.6, BUFSEL_KERNEL=5.6)" : "",
		       b->rings ? " (--rings, BUFSEL_RINGS=emulate)" : "");
		unsigned from = line > 4 ? line - 4 : 0;
		printf("--- %s\n+++ %s\n", arm_name[x->arm], arm_name[y->arm]);
		print_lines("  ", sa ? sa : "", sa ? na : 0, from, line - from);
		print_lines("- ", sa ? sa : "", sa ? na : 0, line, 8);
		print_lines("+ ", sb ? sb : "", sb ? nb : 0, line, 8);
		replay_commands(b, seed);
		if (!determinism && sa && sb)
			rerun_report(b, seed, sa, na, sb, nb);
		if (!opt.keep_going)
			return 1;
		(*(determinism ? &opt.nnondet : &opt.ndiv))++;
		if (!determinism && self_contained)
			loaded_later(b, seed, sb, nb);
		if (!sa || !sb)
			return 1;
		found = 1;
		pa = sa + na;
		pb = sb + nb;
	}
}

/* Problems a transcript reports about itself (native: the generator's). */
static const char *self_problem(const char *out)
{
	static const char *const marks[] = { "\nlost ", "\nnever-completed ", " BAD(", " unknown\n",
					      " after-its-end" };
	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
		const char *p = strstr(out, marks[i]);
		if (p)
			return p;
	}
	return NULL;
}

static const char *tail(const char *s, size_t len, size_t max)
{
	return len > max ? s + len - max : s;
}

/* false when the run crashed or hung (counted, with --keep-going). */
static bool check_exit(const struct batch *b, const struct job *j)
{
	const char *why = NULL;
	char buf[96];
	if (j->timed_out)
		why = "timed out";
	else if (WIFSIGNALED(j->status))
		snprintf(buf, sizeof(buf), "killed by signal %d (%s)", WTERMSIG(j->status), strsignal(WTERMSIG(j->status))),
			why = buf;
	else if (WEXITSTATUS(j->status))
		snprintf(buf, sizeof(buf), "exit status %d", WEXITSTATUS(j->status)), why = buf;
	bool hang = j->timed_out || (WIFSIGNALED(j->status) && WTERMSIG(j->status) == SIGALRM);
	if (!why)
		return true;
	const char *last = j->out ? j->out : "";
	for (const char *p = last; (p = strstr(p, "seq ")); p++)
		if (p == j->out || p[-1] == '\n')
			last = p;
	if (opt.keep_going && (hang ? opt.nhang : opt.ncrash)) {
		(*(hang ? &opt.nhang : &opt.ncrash))++;
		printf("%s seed %llu (%s run): %s\n", hang ? "hang" : "crash", strtoull(last + 4, NULL, 10),
		       arm_name[j->arm], why);
		return false;
	}
	printf("\n%s: batch of seeds %llu..%llu, %s run: %s; last sequence started: %.40s\n"
	       "--- stderr (last 3000 bytes) ---\n%s\n", hang ? "HANG" : "CRASH", b->first, b->first + b->count - 1,
	       arm_name[j->arm], why, last, j->err ? tail(j->err, j->err_len, 3000) : "");
	replay_commands(b, strtoull(last + 4, NULL, 10));
	if (!opt.keep_going)
		exit(2);
	(*(hang ? &opt.nhang : &opt.ncrash))++;
	return false;
}

/* The bufsel arm's stderr: exactly one exit line, which counts one ring
 * per sequence; nothing else. */
static void check_bufsel_stderr(const struct batch *b, const struct job *j)
{
	const char *err = j->err ? j->err : "";
	unsigned long setup = 0, emulated = 0;
	const char *line = strstr(err, "bufsel: exit: ");
	if (!line || sscanf(line, "bufsel: exit: pid=%*d rings=%*u setup=%lu enter=%*u register=%*u mmap=%*u "
				  "trapped=%*u hooked=%*u emulated=%lu", &setup, &emulated) != 2) {
		printf("\nFAILURE: batch of seeds %llu..%llu: no \"bufsel: exit:\" line from the bufsel run: "
		       "the library was not loaded\n--- stderr ---\n%s\n", b->first, b->first + b->count - 1,
		       tail(err, strlen(err), 3000));
		exit(2);
	}
	unsigned long long rings = b->count + !strcmp(opt.generator, "seqfuzz");
	if (setup != rings || !emulated) {
		printf("\nFAILURE: batch of seeds %llu..%llu: bufsel saw %lu ring setups and %lu emulated SQEs, "
		       "expected %llu setups and some emulation\n", b->first, b->first + b->count - 1, setup,
		       emulated, rings);
		exit(2);
	}
	size_t before = (size_t)(line - err);
	const char *nl = strchr(line, '\n');
	size_t after = nl ? strlen(nl + 1) : 0;
	/* sqefuzz makes rings and requests bufsel warns about: the exit line
	 * is the check that matters there. */
	if ((before || after) && !strcmp(opt.generator, "seqfuzz")) {
		printf("\nFAILURE: batch of seeds %llu..%llu: the bufsel run wrote more than its exit line on "
		       "stderr:\n%s\n", b->first, b->first + b->count - 1, tail(err, strlen(err), 3000));
		exit(2);
	}
}

static void add_totals(const struct batch *b, const char *out)
{
	for (const char *p = out; (p = strstr(p, "\nend ops=")); p++) {
		unsigned long long ops, cqes, bufs;
		if (sscanf(p, "\nend ops=%llu cqes=%llu bufs=%llu", &ops, &cqes, &bufs) == 3) {
			opt.tot.ops += ops;
			opt.tot.cqes += cqes;
			opt.tot.bufs += bufs;
		}
	}
	opt.tot.seqs += b->count;
	opt.tot.seqs56 += b->compat56 ? b->count : 0;
	opt.tot.seqs_rings += b->rings ? b->count : 0;
	opt.tot.batches++;
	opt.tot.twice += b->twice;
}

/* All arms of b ended: check and compare. */
static void finish_batch(struct batch *b)
{
	bool ran = true;
	for (int a = 0; a < NARMS; a++)
		if (b->job[a])
			ran &= check_exit(b, b->job[a]);
	const struct job *nat = b->job[NATIVE];
	nnondet_seed = 0;
	if (!ran)
		goto done;
	if (b->twice && compare(b, nat, b->job[NATIVE2], true) && !opt.keep_going)
		exit(2);
	const char *p = self_problem(nat->out ? nat->out : "");
	if (p) {
		const char *start = *p == '\n' ? p + 1 : p;
		while (start > nat->out && start[-1] != '\n')
			start--;
		const char *seq = start;
		while (seq > nat->out && strncmp(seq, "seq ", 4))
			seq--;
		printf("\nFAILURE: the native transcript reports a problem of the generator itself (seed %llu):\n  %.*s\n",
		       seq_seed(seq), (int)strcspn(start, "\n"), start);
		replay_commands(b, seq_seed(seq));
		exit(2);
	}
	if (nat->err_len) {
		printf("\nFAILURE: the native run wrote on stderr:\n%s\n", tail(nat->err, nat->err_len, 3000));
		exit(2);
	}
	if (compare(b, nat, b->job[BUFSEL], false) && !opt.keep_going)
		exit(1);
	check_bufsel_stderr(b, b->job[BUFSEL]);
	add_totals(b, nat->out);
done:
	for (int a = 0; a < NARMS; a++)
		if (b->job[a]) {
			free(b->job[a]->out);
			free(b->job[a]->err);
			free(b->job[a]);
			b->job[a] = NULL;
		}
}

/* ---- the run ---- */

static void summary(void)
{
	double t = now_s() - opt.t0;
	printf("difffuzz: %llu sequences (%llu with --compat 5.6 and BUFSEL_KERNEL=5.6, %llu with --rings and "
	       "BUFSEL_RINGS=emulate) in %llu batches, seeds %llu..%llu\n", opt.tot.seqs, opt.tot.seqs56,
	       opt.tot.seqs_rings, opt.tot.batches, opt.seed, opt.seed + (opt.tot.seqs ? opt.tot.seqs - 1 : 0));
	printf("difffuzz: %llu SQEs, %llu CQEs, %llu selected buffers compared; %llu batches run twice natively "
	       "(%llu nondeterministic sequences); %llu divergences, %llu crashes, %llu hangs; %llu more differed from "
	       "the batch's native run as another native run of the seed did (up to %u re-runs; %llu of them only "
	       "under load, at the end)\n", opt.tot.ops,
	       opt.tot.cqes, opt.tot.bufs, opt.tot.twice, opt.nnondet, opt.ndiv, opt.ncrash, opt.nhang, opt.nnative,
	       opt.reruns, opt.nloaded);
	printf("difffuzz: %.1f s, %.0f sequences/s (both arms, %u jobs at once)\n", t, t > 0 ? (double)opt.tot.seqs / t : 0,
	       opt.jobs);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: difffuzz [--seed S] [--sequences N] [--seconds T] [--batch B] [--jobs J]\n"
		"                [--build DIR] [--ops M] [--kernel56-every K] [--rings-every G]\n"
		"                [--native-twice-every D] [--known NAME]... [--generator seqfuzz|sqefuzz]\n"
		"                [--keep-going] [--timeout SECONDS] [--native-reruns R]\n"
		"  seeds S.. (default 1), N sequences (default 10000) or until T seconds have\n"
		"  passed (whichever comes first; T 0: no limit), B per process (default 1000),\n"
		"  J processes at once (default: CPUs); DIR holds libbufsel.so and\n"
		"  test/fuzz/seqfuzz (default $BUFSEL_BUILD, else build); every K-th batch\n"
		"  (default 4) with --compat 5.6, every G-th (default 3) with --rings (0: none)\n");
}

static unsigned long long number(const char *o, const char *v, unsigned long long min, unsigned long long max)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (errno || end == v || *end || n < min || n > max)
		die(2, "%s: '%s' is not a number in %llu..%llu", o, v, min, max);
	return n;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' }, { "sequences", required_argument, NULL, 'n' },
		{ "seconds", required_argument, NULL, 't' }, { "batch", required_argument, NULL, 'b' },
		{ "jobs", required_argument, NULL, 'j' }, { "build", required_argument, NULL, 'B' },
		{ "ops", required_argument, NULL, 'o' }, { "kernel56-every", required_argument, NULL, 'k' },
		{ "native-twice-every", required_argument, NULL, 'd' }, { "help", no_argument, NULL, 'h' },
		{ "known", required_argument, NULL, 'K' }, { "generator", required_argument, NULL, 'g' },
		{ "keep-going", no_argument, NULL, 'G' }, { "timeout", required_argument, NULL, 'T' },
		{ "native-reruns", required_argument, NULL, 'R' }, { "rings-every", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	const char *build = getenv("BUFSEL_BUILD") && *getenv("BUFSEL_BUILD") ? getenv("BUFSEL_BUILD") : "build";
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	opt.jobs = ncpu > 0 ? (unsigned)ncpu : 2;
	for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
		switch (c) {
		case 's': opt.seed = number("--seed", optarg, 0, ULLONG_MAX / 2); break;
		case 'n': opt.sequences = number("--sequences", optarg, 1, ULLONG_MAX / 4); break;
		case 't': opt.seconds = (double)number("--seconds", optarg, 0, 1u << 30); break;
		case 'b': opt.batch = (unsigned)number("--batch", optarg, 1, 1000000); break;
		case 'j': opt.jobs = (unsigned)number("--jobs", optarg, 1, 16); break;
		case 'B': build = optarg; break;
		case 'o': opt.ops = (unsigned)number("--ops", optarg, 2, 511); break;
		case 'k': opt.kernel56_every = (unsigned)number("--kernel56-every", optarg, 0, 1u << 30); break;
		case 'r': opt.rings_every = (unsigned)number("--rings-every", optarg, 0, 1u << 30); break;
		case 'd': opt.twice_every = (unsigned)number("--native-twice-every", optarg, 0, 1u << 30); break;
		case 'R': opt.reruns = (unsigned)number("--native-reruns", optarg, 0, 1000); break;
		case 'K':
			if (opt.nknown == sizeof(opt.known) / sizeof(opt.known[0]))
				die(2, "--known: at most %zu", sizeof(opt.known) / sizeof(opt.known[0]));
			opt.known[opt.nknown++] = optarg;
			break;
		case 'g':
			if (strcmp(optarg, "seqfuzz") && strcmp(optarg, "sqefuzz"))
				die(2, "--generator: seqfuzz or sqefuzz");
			opt.generator = optarg;
			break;
		case 'G': opt.keep_going = true; break;
		case 'T': opt.timeout = (unsigned)number("--timeout", optarg, 1, 1u << 20); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (!realpath(build, opt.build))
		die(2, "build directory %s: %s", build, strerror(errno));
	if ((size_t)snprintf(opt.seqfuzz, sizeof(opt.seqfuzz), "%.4000s/test/fuzz/%s", opt.build, opt.generator) >=
		    sizeof(opt.seqfuzz) ||
	    (size_t)snprintf(opt.lib, sizeof(opt.lib), "%.4000s/libbufsel.so", opt.build) >= sizeof(opt.lib))
		die(2, "build directory %s: path too long", opt.build);
	if (access(opt.seqfuzz, X_OK) || access(opt.lib, R_OK))
		die(2, "%s or %s is missing: build them first (make fuzz-quick does)", opt.seqfuzz, opt.lib);
	if (strcmp(opt.generator, "seqfuzz"))
		opt.kernel56_every = opt.rings_every = 0;	/* sqefuzz has no --compat, no --rings */
	opt.asan = asan_runtime_path();
	opt.t0 = now_s();
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("difffuzz: seeds from %llu, %llu sequences%s, batches of %u, %u jobs; native vs %s\n", opt.seed,
	       opt.sequences, opt.seconds > 0 ? " at most" : "", opt.batch, opt.jobs, opt.lib);

	unsigned long long nbatches = (opt.sequences + opt.batch - 1) / opt.batch, next = 0, finished = 0;
	struct batch *batches = calloc(nbatches, sizeof(*batches));
	struct job *run[64];
	unsigned nrun = 0;
	double last_report = now_s();
	if (!batches)
		die(2, "out of memory");
	for (;;) {
		bool out_of_time = opt.seconds > 0 && now_s() - opt.t0 >= opt.seconds;
		/* Start what fits: a batch's arms one after the other. */
		while (nrun < opt.jobs && next < nbatches && !out_of_time) {
			struct batch *b = &batches[next];
			if (!b->job[NATIVE]) {
				b->first = opt.seed + next * opt.batch;
				b->count = opt.sequences - next * opt.batch < opt.batch ? opt.sequences - next * opt.batch
											: opt.batch;
				b->compat56 = opt.kernel56_every && next % opt.kernel56_every == opt.kernel56_every - 1;
				/* With the defaults (3 and 4) every 12th batch is both. */
				b->rings = opt.rings_every && next % opt.rings_every == opt.rings_every - 1;
				b->twice = next == 0 || (opt.twice_every && next % opt.twice_every == 0);
			}
			enum arm a = !b->job[NATIVE] ? NATIVE : !b->job[BUFSEL] ? BUFSEL : NATIVE2;
			struct job *j = calloc(1, sizeof(*j));
			if (!j)
				die(2, "out of memory");
			*j = (struct job){ .batch = next, .arm = a, .out_fd = -1, .err_fd = -1 };
			b->job[a] = j;
			job_start(j, b);
			run[nrun++] = j;
			if (a == NATIVE2 || (a == BUFSEL && !b->twice))
				next++;
		}
		if (!nrun)
			break;
		jobs_poll(run, nrun);
		for (unsigned i = 0; i < nrun;) {
			struct job *j = run[i];
			if (!j->done && !(j->timed_out && j->out_fd < 0 && j->err_fd < 0)) {
				i++;
				continue;
			}
			if (!j->done)
				waitpid(j->pid, &j->status, 0);
			j->done = j->reaped = true;
			run[i] = run[--nrun];
			/* Only arms out of the running list count: a batch frees its
			 * jobs, and one that ended in this round may still be in it. */
			struct batch *b = &batches[j->batch];
			bool all = true;
			for (int a = 0; a < NARMS; a++)
				all &= !(a == NATIVE2 && !b->twice) ? b->job[a] && b->job[a]->reaped : true;
			if (all) {
				finish_batch(b);
				finished++;
			}
		}
		if (now_s() - last_report > 30) {
			last_report = now_s();
			printf("difffuzz: %llu of %llu batches done, %llu sequences, %.0f s\n", finished, nbatches,
			       opt.tot.seqs, now_s() - opt.t0);
		}
	}
	free(batches);
	run_loaded_checks();
	summary();
	return opt.ndiv || opt.ncrash || opt.nhang || opt.nnondet ? 1 : 0;
}
