/*
 * bufsel ab [OPTIONS] [--] PROGRAM [ARGS...]
 *
 * An A/B comparison the way a noisy, shared machine allows one: the arms
 * (native, emulate, passthrough, kernel56, trap) run in rounds, every arm once per
 * round, the order reversed every other round so that drift (a neighbour's
 * build, a warming cache) falls on all arms alike, and each bufsel arm is
 * compared with the native run of the same round, pair by pair, rather than
 * median against median.  What a run costs is measured from outside
 * (CLOCK_MONOTONIC around fork and reap, wait4's rusage); what the program
 * achieved it says itself on stdout, in "bench: name=value ..." lines.
 *
 * The bufsel arms preload the library the launcher would, with the
 * launcher's checks (library_find, library_preload, program_check), and
 * write bufsel's pool statistics to a directory of ab's own, one file per
 * process (BUFSEL_STATS=DIR/%p.json); those of the last round are reported
 * and the directory is removed at exit.  Each run gets its own process
 * group, so a timeout or Ctrl-C kills the program with its children.
 */
#define _GNU_SOURCE
#include "launcher/ab.h"

#include "launcher/json.h"
#include "launcher/json_write.h"
#include "launcher/launcher.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define AB_DEFAULT_RUNS 5
#define AB_DEFAULT_WARMUP 1
#define AB_DEFAULT_TIMEOUT 600.0	/* seconds per run */
#define AB_MAX_RUNS 10000
#define AB_MAX_WARMUP 1000
#define AB_MAX_TIMEOUT 604800.0
#define AB_MAX_MEASURES 64		/* the built-in measures and the program's metrics */
#define AB_MAX_NAME 63			/* bytes in a metric's name */
#define AB_MAX_SETS 256
#define AB_LINE_MAX 4096		/* a longer stdout line is not a bench: line */
#define AB_TAIL 8192			/* bytes of stderr kept for a failure's message */
#define AB_TAIL_LINES 20
#define AB_GRACE_S 2.0			/* for descendants holding the pipes after the program exited */
#define AB_STATS_MAX (16u << 20)	/* far above any statistics file */

#define BENCH_PREFIX "bench:"

/* ---- the arms and the measures ---------------------------------------------------- */

struct arm_def {
	const char *name;
	const char *mode;	/* BUFSEL_MODE; NULL: bufsel is not loaded */
	const char *kernel;	/* BUFSEL_KERNEL */
	const char *patch;	/* BUFSEL_PATCH */
	const char *help;
};

static const struct arm_def arm_defs[] = {
	{ "native", NULL, NULL, NULL, "the program alone: bufsel not preloaded, BUFSEL_* removed" },
	{ "emulate", "emulate", "native", "on", "under bufsel, BUFSEL_MODE=emulate" },
	{ "passthrough", "passthrough", "native", "on", "under bufsel, BUFSEL_MODE=passthrough: the interception alone" },
	{ "kernel56", "emulate", "5.6", "on", "under bufsel, BUFSEL_MODE=emulate BUFSEL_KERNEL=5.6" },
	{ "trap", "emulate", "native", "off",
	  "under bufsel, BUFSEL_MODE=emulate BUFSEL_PATCH=off: every inline io_uring call takes the seccomp trap" },
};
#define ARM_DEFS (sizeof(arm_defs) / sizeof(arm_defs[0]))

/* The measures every run has; the program's metrics follow them. */
enum { M_WALL, M_USER, M_SYS, M_CPU, M_RSS, M_BUILTIN };
static const char *const builtin_names[M_BUILTIN] = { "wall_s", "user_s", "sys_s", "cpu_s", "maxrss_kib" };
/* Compared pair by pair; user_s and sys_s are in cpu_s. */
static const bool builtin_ratio[M_BUILTIN] = { true, false, false, true, true };

/*
 * A metric is a rate, higher is better, when its name ends in one of these;
 * everything else (times, latencies, CPU, bytes) is better lower.
 */
static const char *const higher_suffixes[] = { "_per_s", "_per_sec", "_per_second", "bps", "iops", "qps",
					       "rps", "tps", "throughput" };

struct run_result {
	double v[AB_MAX_MEASURES];	/* NaN: not reported in this run */
	int status;			/* wait status */
	unsigned seq;			/* among all runs of this ab, warm-ups included, from 1 */
	unsigned position;		/* in its round, from 1 */
};

/* One buffer group of one statistics file, as the summary needs it. */
struct group_summary {
	uint64_t pid, ring, bgid, buffers, buf_len, peak_out, selected, empty, capped, injected, strays;
	bool has_pid;
};

struct stats_file {
	char name[256];
	char *text;		/* the file, NULL when it could not be used */
	size_t len;
	char error[320];
};

struct arm {
	const struct arm_def *def;
	bool optional;
	bool failed;
	char reason[160];	/* why it failed: "exited with status 1" */
	char where[64];		/* "round 3", "warm-up run 1" */
	char *tail;		/* the last lines of the failed run's stderr */
	char **envp;
	char stats_dir[PATH_MAX];
	struct run_result *runs, *warm;
	unsigned done, warm_done;
	struct stats_file *files;
	size_t nfiles;
	struct group_summary *groups;
	size_t ngroups;
};

/* What a run wrote: its stdout line being read, and the end of its stderr. */
struct capture {
	char line[AB_LINE_MAX];
	size_t len;
	bool overlong;
	char tail[2 * AB_TAIL];
	size_t tail_len;
};

/* Everything ab keeps, from the command line to the runs' results. */
static struct ab_state {
	unsigned runs, warmup;
	double timeout_s;
	const char *json_path, *conf, *lib;
	const char *sets[AB_MAX_SETS];	/* "BUFSEL_X=value" */
	unsigned nsets;
	char **argv;			/* PROGRAM [ARGS...] */
	char path[PATH_MAX];		/* PROGRAM as found */
	char libpath[PATH_MAX];
	struct arm arms[ARM_DEFS];	/* in the order given */
	unsigned narms;
	struct arm *native;
	char *measure[AB_MAX_MEASURES];
	unsigned nmeasures;
	bool warned_token, warned_full;
	char tmpdir[PATH_MAX];
	int sigfd;
	sigset_t old_mask;
	pid_t child;
	struct capture cap;		/* of the running child */
	FILE *json;
	bool progress;			/* stderr is a terminal */
	const char *status;		/* "ok", "failed", "interrupted" */
	struct arm *failed_arm;
} ab;

/* ---- messages ------------------------------------------------------------------- */

static noreturn void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static noreturn void usage_error(const char *fmt, ...)
{
	va_list ap;
	fputs("bufsel: ab: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (bufsel ab --help)\n", stderr);
	exit(EXIT_USAGE);
}

static void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn(const char *fmt, ...)
{
	va_list ap;
	if (ab.progress)
		fputs("\r\033[K", stderr);
	fputs("bufsel: ab: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static noreturn void fatal(const char *what)
{
	warn("%s: %s", what, strerror(errno));
	exit(EXIT_CONFIG);
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p)
		fatal("out of memory");
	return p;
}

static char *xstrdup(const char *s)
{
	char *p = strdup(s);
	if (!p)
		fatal("out of memory");
	return p;
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		fatal("out of memory");
	return s;
}

static void help(void)
{
	printf("Usage: bufsel ab [OPTIONS] [--] PROGRAM [ARGS...]\n"
	       "\n"
	       "Runs PROGRAM natively and under bufsel in turn: after the warm-up rounds,\n"
	       "N rounds in which every arm runs once, the order reversed every other round,\n"
	       "and compares each bufsel arm with the native run of the same round.\n"
	       "PROGRAM is looked up in PATH like a shell does; its stdin is /dev/null,\n"
	       "its stdout is read for lines 'bench: NAME=NUMBER ...' (the program's own\n"
	       "metrics; other lines are ignored), its stderr is shown when a run fails.\n"
	       "\n"
	       "Options:\n"
	       "  --runs N            rounds measured (default %d, at most %d)\n"
	       "  --warmup N          rounds run first and not counted (default %d)\n"
	       "  --arms LIST         comma-separated arms, in this order (default native,emulate):\n",
	       AB_DEFAULT_RUNS, AB_MAX_RUNS, AB_DEFAULT_WARMUP);
	for (size_t i = 0; i < ARM_DEFS; i++)
		printf("                        %-12s %s\n", arm_defs[i].name, arm_defs[i].help);
	printf("  --optional LIST     bufsel arms that may fail: a failed run drops the arm\n"
	       "                      (n/a, with the reason) instead of stopping ab\n"
	       "  --conf FILE         BUFSEL_CONF for the bufsel arms\n"
	       "  --set KEY=VALUE     a configuration key for the bufsel arms (repeatable);\n"
	       "                      mode, kernel and stats belong to the arms\n"
	       "  --json FILE         write every run, the summaries, the ratios and the pool\n"
	       "                      statistics as JSON (docs/performance.md)\n"
	       "  --timeout SECONDS   a run still going after this long fails (default %.0f;\n"
	       "                      0: none)\n"
	       "  --lib PATH          preload this library (default: as bufsel -- PROGRAM)\n"
	       "  -h, --help          print this help and exit\n"
	       "\n"
	       "Output: per arm, the median, min, max and spread ((max-min)/median) of wall_s,\n"
	       "user_s, sys_s, cpu_s (user+sys), maxrss_kib and every metric; per bufsel arm,\n"
	       "the ratio to native of wall_s, cpu_s, maxrss_kib and every metric, round i\n"
	       "over round i: the median ratio and its min and max, with which way is better\n"
	       "(a metric ending in _per_s, _per_sec, _per_second, bps, iops, qps, rps, tps\n"
	       "or throughput is better higher, any other better lower); then the pool\n"
	       "statistics bufsel wrote in the last round (BUFSEL_STATS), per buffer group.\n"
	       "\n"
	       "Exit status: 0 when every run exited 0 (an --optional arm may have failed);\n"
	       "1 when a run failed (non-zero exit, killed, timed out: the message names\n"
	       "the arm and the round) or the bufsel arms' configuration is bad; 2 bad\n"
	       "command line or PROGRAM not found; 126 PROGRAM cannot run under bufsel\n"
	       "(static, 32-bit); 128+N after signal N (Ctrl-C kills the running program\n"
	       "and stops).\n",
	       AB_DEFAULT_TIMEOUT);
}

/* ---- the command line ------------------------------------------------------------- */

static bool parse_uint(const char *s, unsigned max, unsigned *out)
{
	unsigned long v = 0;
	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (unsigned long)(*s - '0');
		if (v > max)
			return false;
	}
	*out = (unsigned)v;
	return true;
}

static const struct arm_def *arm_lookup(const char *name, size_t len)
{
	for (size_t i = 0; i < ARM_DEFS; i++)
		if (strlen(arm_defs[i].name) == len && !strncmp(arm_defs[i].name, name, len))
			return &arm_defs[i];
	return NULL;
}

static struct arm *arm_find(const struct arm_def *def)
{
	for (unsigned i = 0; i < ab.narms; i++)
		if (ab.arms[i].def == def)
			return &ab.arms[i];
	return NULL;
}

/* Calls each(def) for every name of a comma-separated list of arms. */
static void parse_arm_list(const char *opt, const char *list, void (*each)(const char *opt, const struct arm_def *))
{
	const char *p = list;
	for (;;) {
		size_t n = strcspn(p, ",");
		const struct arm_def *def = arm_lookup(p, n);
		if (!def) {
			char names[128] = "";
			for (size_t i = 0; i < ARM_DEFS; i++)
				snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? ", " : "",
					 arm_defs[i].name);
			usage_error("%s: unknown arm '%.*s' (arms: %s)", opt, (int)n, p, names);
		}
		each(opt, def);
		if (!p[n])
			break;
		p += n + 1;
	}
}

static void add_arm(const char *opt, const struct arm_def *def)
{
	if (arm_find(def))
		usage_error("%s: '%s' given twice", opt, def->name);
	ab.arms[ab.narms++].def = def;
}

static void mark_optional(const char *opt, const struct arm_def *def)
{
	struct arm *a = arm_find(def);
	if (!def->mode)
		usage_error("%s: the native arm cannot be optional: every ratio needs it", opt);
	if (!a)
		usage_error("%s: '%s' is not among the arms", opt, def->name);
	a->optional = true;
}

/* Returns the index of PROGRAM in argv. */
static int parse_options(int argc, char **argv)
{
	const char *arms = "native,emulate", *optional = NULL;
	static const char *const names[] = { "runs", "warmup", "arms", "optional", "conf", "set", "json", "timeout",
					     "lib" };
	enum { O_RUNS, O_WARMUP, O_ARMS, O_OPTIONAL, O_CONF, O_SET, O_JSON, O_TIMEOUT, O_LIB, O_COUNT };
	int i;

	ab.runs = AB_DEFAULT_RUNS;
	ab.warmup = AB_DEFAULT_WARMUP;
	ab.timeout_s = AB_DEFAULT_TIMEOUT;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1])
			break;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			help();
			exit(0);
		}
		const char *key = a[1] == '-' ? a + 2 : a + 1, *eq = strchr(key, '=');
		size_t klen = eq ? (size_t)(eq - key) : strlen(key);
		int o = -1;
		for (int k = 0; k < O_COUNT; k++)
			if (a[1] == '-' && strlen(names[k]) == klen && !strncmp(names[k], key, klen))
				o = k;
		if (o < 0)
			usage_error("unknown option '%.*s'", (int)(key - a + (ptrdiff_t)klen), a);
		const char *val = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
		if (!val || !*val)
			usage_error("--%s needs a value", names[o]);
		switch (o) {
		case O_RUNS:
			if (!parse_uint(val, AB_MAX_RUNS, &ab.runs) || !ab.runs)
				usage_error("--runs: '%s' is not a whole number in 1..%d", val, AB_MAX_RUNS);
			break;
		case O_WARMUP:
			if (!parse_uint(val, AB_MAX_WARMUP, &ab.warmup))
				usage_error("--warmup: '%s' is not a whole number in 0..%d", val, AB_MAX_WARMUP);
			break;
		case O_ARMS:
			arms = val;
			break;
		case O_OPTIONAL:
			optional = val;
			break;
		case O_CONF: {
			char abs[PATH_MAX];
			/* Absolute, so a program that changes directory reads the same file. */
			if (!realpath(val, abs))
				usage_error("--conf %s: %s", val, strerror(errno));
			ab.conf = xstrdup(abs);
			break;
		}
		case O_SET: {
			const char *veq = strchr(val, '=');
			char var[64], err[1024];
			if (!veq)
				usage_error("--set %s: expected KEY=VALUE", val);
			size_t n = (size_t)(veq - val);
			if ((n == 4 && !strncmp(val, "mode", 4)) || (n == 6 && !strncmp(val, "kernel", 6)) ||
			    (n == 5 && !strncmp(val, "stats", 5)))
				usage_error("--set %s: %.*s is set by each arm (--arms)", val, (int)n, val);
			if (conf_setting(val, n, veq + 1, var, sizeof(var), err, sizeof(err)))
				usage_error("--set %s", err);
			if (ab.nsets == AB_MAX_SETS)
				usage_error("--set: more than %d settings", AB_MAX_SETS);
			ab.sets[ab.nsets++] = xasprintf("%s=%s", var, veq + 1);
			break;
		}
		case O_JSON:
			ab.json_path = val;
			break;
		case O_TIMEOUT: {
			char *end;
			errno = 0;
			ab.timeout_s = strtod(val, &end);
			if (errno || *end || !(ab.timeout_s >= 0 && ab.timeout_s <= AB_MAX_TIMEOUT))
				usage_error("--timeout: '%s' is not a number of seconds in 0..%.0f", val, AB_MAX_TIMEOUT);
			break;
		}
		case O_LIB:
			ab.lib = val;
			break;
		}
	}
	parse_arm_list("--arms", arms, add_arm);
	ab.native = arm_find(&arm_defs[0]);
	if (optional)
		parse_arm_list("--optional", optional, mark_optional);
	return i;
}

/* ---- the arms' environments ---------------------------------------------------------- */

static bool is_var(const char *entry, const char *name)
{
	size_t n = strlen(name);
	return !strncmp(entry, name, n) && entry[n] == '=';
}

/* LD_PRELOAD's list without any libbufsel.so, ':'-separated; NULL when empty. */
static char *preload_without_bufsel(const char *list)
{
	size_t cap = list ? strlen(list) + 1 : 1, n = 0;
	char *out = xcalloc(cap, 1);
	for (const char *p = list ? list : ""; *p;) {
		p += strspn(p, " :");
		size_t len = strcspn(p, " :");
		if (!len)
			break;
		const char *base = memrchr(p, '/', len);
		base = base ? base + 1 : p;
		size_t blen = len - (size_t)(base - p);
		if (!(blen == strlen(BUFSEL_LIB_NAME) && !memcmp(base, BUFSEL_LIB_NAME, blen))) {
			if (n)
				out[n++] = ':';
			memcpy(out + n, p, len);
			n += len;
		}
		p += len;
	}
	if (!n) {
		free(out);
		return NULL;
	}
	return out;
}

/* LD_PRELOAD as the launcher would set it for the bufsel arms. */
static char *preload_with_bufsel(void)
{
	const char *cur = getenv("LD_PRELOAD");
	char *orig = cur ? xstrdup(cur) : NULL;
	library_preload(orig, ab.libpath);
	const char *set = getenv("LD_PRELOAD");
	if (!set)
		fatal("LD_PRELOAD was not set for the bufsel arms");
	char *val = xstrdup(set);
	if (orig ? setenv("LD_PRELOAD", orig, 1) : unsetenv("LD_PRELOAD"))
		fatal("restoring LD_PRELOAD");
	free(orig);
	return val;
}

/*
 * Drops from a bufsel arm's environment what the arm or the options set:
 * their values are the arm's, whatever the caller had.
 */
static bool set_by_arm(const char *entry)
{
	static const char *const vars[] = { "LD_PRELOAD", "BUFSEL_LIB", "BUFSEL_MODE", "BUFSEL_KERNEL", "BUFSEL_PATCH",
					    "BUFSEL_STATS" };
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		if (is_var(entry, vars[i]))
			return true;
	if (ab.conf && is_var(entry, "BUFSEL_CONF"))
		return true;
	for (unsigned i = 0; i < ab.nsets; i++) {
		size_t n = strcspn(ab.sets[i], "=") + 1;
		if (!strncmp(entry, ab.sets[i], n))
			return true;
	}
	return false;
}

static void build_env(struct arm *a, const char *bufsel_preload)
{
	size_t n = 0, k = 0;
	for (char **e = environ; *e; e++)
		n++;
	a->envp = xcalloc(n + 8 + ab.nsets, sizeof(char *));
	for (char **e = environ; *e; e++) {
		bool drop = a->def->mode ? set_by_arm(*e) : is_var(*e, "LD_PRELOAD") || !strncmp(*e, "BUFSEL_", 7);
		if (!drop)
			a->envp[k++] = *e;
	}
	if (!a->def->mode) {
		char *keep = preload_without_bufsel(getenv("LD_PRELOAD"));
		if (keep)
			a->envp[k++] = xasprintf("LD_PRELOAD=%s", keep);
		free(keep);
		return;
	}
	a->envp[k++] = xasprintf("LD_PRELOAD=%s", bufsel_preload);
	a->envp[k++] = xasprintf("BUFSEL_MODE=%s", a->def->mode);
	a->envp[k++] = xasprintf("BUFSEL_KERNEL=%s", a->def->kernel);
	a->envp[k++] = xasprintf("BUFSEL_PATCH=%s", a->def->patch);
	a->envp[k++] = xasprintf("BUFSEL_STATS=%s/%%p.json", a->stats_dir);
	if (ab.conf)
		a->envp[k++] = xasprintf("BUFSEL_CONF=%s", ab.conf);
	for (unsigned i = 0; i < ab.nsets; i++)
		a->envp[k++] = (char *)ab.sets[i];
}

/* What the library will load in a bufsel arm, loaded here first: one message per problem. */
static void check_conf(const struct arm *a)
{
	struct bufsel_conf *conf = xcalloc(1, sizeof(*conf));
	char err[16384];
	if (conf_load(conf, a->envp, err, sizeof(err))) {
		fputs(err, stderr);
		exit(EXIT_CONFIG);
	}
	free(conf);
}

/* ---- the temporary directory ------------------------------------------------------------ */

static void empty_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d));)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
}

static void cleanup(void)
{
	if (ab.child > 0) {
		/* Best effort on the way out: the group or the child may be gone already. */
		(void)kill(-ab.child, SIGKILL);
		(void)kill(ab.child, SIGKILL);
		(void)waitpid(ab.child, NULL, 0);
		ab.child = 0;
	}
	if (!ab.tmpdir[0])
		return;
	for (unsigned i = 0; i < ab.narms; i++)
		if (ab.arms[i].stats_dir[0]) {
			empty_dir(ab.arms[i].stats_dir);
			rmdir(ab.arms[i].stats_dir);
		}
	rmdir(ab.tmpdir);
	ab.tmpdir[0] = '\0';
}

static void make_tmpdir(void)
{
	const char *tmp = getenv("TMPDIR");
	if (!tmp || tmp[0] != '/')
		tmp = "/tmp";
	snprintf(ab.tmpdir, sizeof(ab.tmpdir), "%s/bufsel-ab-XXXXXX", tmp);
	if (!mkdtemp(ab.tmpdir)) {
		ab.tmpdir[0] = '\0';
		fatal("cannot make a temporary directory");
	}
	atexit(cleanup);
	for (unsigned i = 0; i < ab.narms; i++) {
		struct arm *a = &ab.arms[i];
		if (!a->def->mode)
			continue;
		int n = snprintf(a->stats_dir, sizeof(a->stats_dir), "%s/%s", ab.tmpdir, a->def->name);
		if (n < 0 || (size_t)n >= sizeof(a->stats_dir)) {
			errno = ENAMETOOLONG;
			fatal(ab.tmpdir);
		}
		if (mkdir(a->stats_dir, 0700))
			fatal(a->stats_dir);
	}
}

/* ---- one run ---------------------------------------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int measure_index(const char *name, size_t len)
{
	for (unsigned i = 0; i < ab.nmeasures; i++)
		if (strlen(ab.measure[i]) == len && !memcmp(ab.measure[i], name, len))
			return (int)i;
	if (ab.nmeasures == AB_MAX_MEASURES) {
		if (!ab.warned_full)
			warn("more than %d metric names: '%.*s' and any later new name are ignored",
			     AB_MAX_MEASURES - M_BUILTIN, (int)len, name);
		ab.warned_full = true;
		return -1;
	}
	ab.measure[ab.nmeasures] = strndup(name, len);
	if (!ab.measure[ab.nmeasures])
		fatal("out of memory");
	return (int)ab.nmeasures++;
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
	       c == '-';
}

/* "bench: name=value ...": every well-formed pair is kept, the last of a name wins. */
static void bench_line(const char *line, size_t len, struct run_result *res)
{
	const char *p = line + strlen(BENCH_PREFIX), *end = line + len;
	while (p < end) {
		while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
			p++;
		const char *tok = p;
		while (p < end && *p != ' ' && *p != '\t' && *p != '\r')
			p++;
		size_t tlen = (size_t)(p - tok);
		if (!tlen)
			break;
		const char *eq = memchr(tok, '=', tlen);
		size_t nlen = eq ? (size_t)(eq - tok) : 0;
		bool ok = eq && nlen && nlen <= AB_MAX_NAME;
		for (size_t i = 0; ok && i < nlen; i++)
			ok = name_char(tok[i]);
		double v = 0;
		if (ok) {
			char num[64], *e;
			size_t vlen = tlen - nlen - 1;
			ok = vlen && vlen < sizeof(num);
			if (ok) {
				memcpy(num, eq + 1, vlen);
				num[vlen] = '\0';
				v = strtod(num, &e);
				ok = !*e && isfinite(v);
			}
		}
		if (!ok) {
			if (!ab.warned_token)
				warn("ignoring '%.*s' in a bench: line: expected NAME=NUMBER (NAME of letters, digits, "
				     "'_', '.', '-')",
				     (int)(tlen > 80 ? 80 : tlen), tok);
			ab.warned_token = true;
			continue;
		}
		int m = measure_index(tok, nlen);
		if (m >= M_BUILTIN)
			res->v[m] = v;
		else if (m >= 0 && !ab.warned_token) {
			warn("ignoring '%.*s' in a bench: line: %s is measured by ab", (int)tlen, tok, ab.measure[m]);
			ab.warned_token = true;
		}
	}
}

static void take_stdout(struct capture *c, const char *buf, size_t n, struct run_result *res)
{
	for (size_t i = 0; i < n; i++) {
		if (buf[i] == '\n') {
			if (!c->overlong && c->len >= strlen(BENCH_PREFIX) &&
			    !memcmp(c->line, BENCH_PREFIX, strlen(BENCH_PREFIX)))
				bench_line(c->line, c->len, res);
			c->len = 0;
			c->overlong = false;
		} else if (c->len < sizeof(c->line)) {
			c->line[c->len++] = buf[i];
		} else {
			c->overlong = true;
		}
	}
}

static void take_stderr(struct capture *c, const char *buf, size_t n)
{
	if (n >= AB_TAIL) {
		memcpy(c->tail, buf + n - AB_TAIL, AB_TAIL);
		c->tail_len = AB_TAIL;
		return;
	}
	if (c->tail_len + n > sizeof(c->tail)) {
		size_t keep = AB_TAIL - n;
		memmove(c->tail, c->tail + c->tail_len - keep, keep);
		c->tail_len = keep;
	}
	memcpy(c->tail + c->tail_len, buf, n);
	c->tail_len += n;
}

/* The last AB_TAIL_LINES lines of what the program wrote on stderr. */
static char *stderr_tail(const struct capture *c)
{
	size_t len = c->tail_len, start, lines = 0;
	while (len && c->tail[len - 1] == '\n')
		len--;
	for (start = len; start > 0; start--)
		if (c->tail[start - 1] == '\n' && ++lines == AB_TAIL_LINES)
			break;
	char *s = strndup(c->tail + start, len - start);
	if (!s)
		fatal("out of memory");
	return s;
}

static void write_json(void);

static noreturn void interrupted(int sig, const char *label)
{
	if (ab.child > 0) {
		/* Best effort on the way out: the group or the child may be gone already. */
		(void)kill(-ab.child, SIGKILL);
		(void)kill(ab.child, SIGKILL);
		(void)waitpid(ab.child, NULL, 0);
		ab.child = 0;
	}
	warn("%s during the %s: the program was killed; stopping", strsignal(sig), label);
	ab.status = "interrupted";
	if (ab.json)
		write_json();
	exit(128 + sig);
}

/* The child's side of the fork: never returns. */
static noreturn void child(int out, int err, char **envp)
{
	int null = open("/dev/null", O_RDONLY);
	if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		_exit(126);
	if (null > 2)
		close(null);
	setpgid(0, 0);
	/* The mask is inherited across exec: the program gets the caller's. */
	if (sigprocmask(SIG_SETMASK, &ab.old_mask, NULL))
		_exit(126);
	execve(ab.path, ab.argv, envp);
	dprintf(2, "bufsel: ab: cannot execute %s: %s\n", ab.path, strerror(errno));
	_exit(127);
}

static void describe_status(char *why, size_t len, int status)
{
	if (WIFEXITED(status))
		snprintf(why, len, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(why, len, "killed by signal %d (%s)%s", WTERMSIG(status), strsignal(WTERMSIG(status)),
			 WCOREDUMP(status) ? ", core dumped" : "");
	else
		snprintf(why, len, "ended with wait status 0x%x", (unsigned)status);
}

/*
 * Runs PROGRAM once in arm a and fills res.  Returns 0 when it exited 0;
 * else -1 with the reason in why and the tail of its stderr in *tail.
 */
static int run_once(struct arm *a, const char *label, struct run_result *res, char *why, size_t whylen,
		    char **tail)
{
	struct capture *cap = &ab.cap;
	int out[2], err[2];
	struct rusage ru;
	int status = 0;

	for (unsigned m = 0; m < AB_MAX_MEASURES; m++)
		res->v[m] = NAN;
	memset(cap, 0, sizeof(*cap));
	if (a->def->mode)
		empty_dir(a->stats_dir);
	if (ab.progress)
		fprintf(stderr, "\r\033[Kbufsel: ab: %s ...", label);
	if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
		fatal("pipe2");

	double t0 = now_s(), t1 = 0, deadline = t0 + ab.timeout_s, reaped_at = 0;
	pid_t pid = fork();
	if (pid < 0)
		fatal("fork");
	if (pid == 0)
		child(out[1], err[1], a->envp);
	ab.child = pid;
	setpgid(pid, pid);
	close(out[1]);
	close(err[1]);

	struct pollfd pfd[3] = { { .fd = out[0], .events = POLLIN },
				 { .fd = err[0], .events = POLLIN },
				 { .fd = ab.sigfd, .events = POLLIN } };
	bool reaped = false, timed_out = false;
	while (pfd[0].fd >= 0 || pfd[1].fd >= 0 || !reaped) {
		int timeout_ms = -1;
		double left = reaped ? reaped_at + AB_GRACE_S - now_s() : ab.timeout_s > 0 ? deadline - now_s() : 1;
		if (left <= 0) {
			timed_out = !reaped;
			break;
		}
		if (reaped || ab.timeout_s > 0)
			timeout_ms = (int)(left * 1000) + 1;
		int n = poll(pfd, 3, timeout_ms);
		if (n < 0 && errno != EINTR)
			fatal("poll");
		for (int i = 0; i < 2 && n > 0; i++) {
			if (pfd[i].fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			char chunk[65536];
			ssize_t r = read(pfd[i].fd, chunk, sizeof(chunk));
			if (r > 0) {
				if (i == 0)
					take_stdout(cap, chunk, (size_t)r, res);
				else
					take_stderr(cap, chunk, (size_t)r);
			} else if (r == 0 || errno != EINTR) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
			}
		}
		if (n > 0 && (pfd[2].revents & POLLIN)) {
			struct signalfd_siginfo si;
			bool chld = false;
			while (read(ab.sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (si.ssi_signo == SIGCHLD)
					chld = true;
				else
					interrupted((int)si.ssi_signo, label);
			}
			if (chld && !reaped && wait4(pid, &status, WNOHANG, &ru) == pid) {
				t1 = now_s();
				reaped = true;
				reaped_at = t1;
			}
		}
	}
	/* What is left of the group: the program on a timeout, or descendants it
	 * left behind; ESRCH (nothing left) is the usual answer. */
	(void)kill(-pid, SIGKILL);
	if (!reaped) {
		(void)kill(pid, SIGKILL);
		while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
			;
	}
	ab.child = 0;
	for (int i = 0; i < 2; i++)
		if (pfd[i].fd >= 0)
			close(pfd[i].fd);
	/* A last line without a newline counts too. */
	take_stdout(cap, "\n", 1, res);

	res->status = status;
	res->v[M_WALL] = t1 - t0;
	res->v[M_USER] = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
	res->v[M_SYS] = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	res->v[M_CPU] = res->v[M_USER] + res->v[M_SYS];
	res->v[M_RSS] = (double)ru.ru_maxrss;
	if (!timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (timed_out)
		snprintf(why, whylen, "timed out after %g s (killed)", ab.timeout_s);
	else
		describe_status(why, whylen, status);
	res->v[M_WALL] = NAN;
	*tail = stderr_tail(cap);
	return -1;
}

/* ---- the rounds --------------------------------------------------------------------------- */

static void print_tail(const char *tail)
{
	if (!tail || !*tail) {
		fputs("  (nothing on stderr)\n", stderr);
		return;
	}
	fputs("  --- the end of its stderr ---\n", stderr);
	for (const char *p = tail; *p;) {
		size_t n = strcspn(p, "\n");
		fprintf(stderr, "  | %.*s\n", (int)n, p);
		p += n + (p[n] == '\n');
	}
}

/* Round k (from 1, warm-up rounds first) runs the arms in the given order when k is odd. */
static void run_all(void)
{
	unsigned total = ab.warmup + ab.runs, seq = 0;
	char label[96], why[160];

	for (unsigned k = 1; k <= total; k++) {
		bool warm = k <= ab.warmup;
		unsigned round = warm ? k : k - ab.warmup, position = 0;
		for (unsigned j = 0; j < ab.narms; j++) {
			struct arm *a = &ab.arms[k % 2 ? j : ab.narms - 1 - j];
			if (a->failed)
				continue;
			struct run_result *res = warm ? &a->warm[round - 1] : &a->runs[round - 1];
			char *tail = NULL;
			char where[64];
			if (warm)
				snprintf(where, sizeof(where), "warm-up run %u", round);
			else
				snprintf(where, sizeof(where), "round %u", round);
			snprintf(label, sizeof(label), "%s arm, %s", a->def->name, where);
			res->seq = ++seq;
			res->position = ++position;
			if (!run_once(a, label, res, why, sizeof(why), &tail)) {
				if (warm)
					a->warm_done++;
				else
					a->done++;
				continue;
			}
			a->failed = true;
			a->tail = tail;
			snprintf(a->reason, sizeof(a->reason), "%s", why);
			snprintf(a->where, sizeof(a->where), "%s", where);
			if (a->optional) {
				warn("%s: %s; %s is optional: left out (n/a)", label, why, a->def->name);
				continue;
			}
			warn("%s: %s", label, why);
			print_tail(tail);
			ab.status = "failed";
			ab.failed_arm = a;
			if (ab.json)
				write_json();
			exit(1);
		}
	}
	if (ab.progress)
		fputs("\r\033[K", stderr);
}

/* ---- numbers ------------------------------------------------------------------------------ */

struct spread {
	unsigned n;
	double median, min, max;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Of the finite values among v[0..n-1]; n 0 when there is none. */
static struct spread spread_of(const double *v, unsigned n)
{
	struct spread s = { 0, NAN, NAN, NAN };
	double *x = xcalloc(n, sizeof(double));
	for (unsigned i = 0; i < n; i++)
		if (isfinite(v[i]))
			x[s.n++] = v[i];
	if (s.n) {
		qsort(x, s.n, sizeof(double), cmp_double);
		s.min = x[0];
		s.max = x[s.n - 1];
		s.median = s.n % 2 ? x[s.n / 2] : (x[s.n / 2 - 1] + x[s.n / 2]) / 2;
	}
	free(x);
	return s;
}

static struct spread measure_spread(const struct arm *a, unsigned m)
{
	double *v = xcalloc(ab.runs, sizeof(double));
	for (unsigned i = 0; i < a->done; i++)
		v[i] = a->runs[i].v[m];
	struct spread s = spread_of(v, a->done);
	free(v);
	return s;
}

/* ratios[i]: round i of a over round i of native; NaN where either lacks the measure or native is 0. */
static void pair_ratios(const struct arm *a, unsigned m, double *ratios)
{
	for (unsigned i = 0; i < ab.runs; i++) {
		ratios[i] = NAN;
		if (i < a->done && i < ab.native->done) {
			double x = a->runs[i].v[m], y = ab.native->runs[i].v[m];
			if (isfinite(x) && isfinite(y) && y != 0)
				ratios[i] = x / y;
		}
	}
}

static bool higher_is_better(unsigned m)
{
	if (m < M_BUILTIN || m >= ab.nmeasures)
		return false;
	const char *name = ab.measure[m];
	size_t n = strlen(name);
	for (size_t i = 0; i < sizeof(higher_suffixes) / sizeof(higher_suffixes[0]); i++) {
		size_t k = strlen(higher_suffixes[i]);
		if (n >= k && !strcmp(name + n - k, higher_suffixes[i]))
			return true;
	}
	return false;
}

static bool reported(const struct arm *a, unsigned m)
{
	for (unsigned i = 0; i < a->done; i++)
		if (isfinite(a->runs[i].v[m]))
			return true;
	return false;
}

static bool compared(unsigned m)
{
	return m >= M_BUILTIN || builtin_ratio[m];
}

/* Four significant digits, whole numbers from 1000 up: "0.01234", "12.35", "123457". */
static const char *fmt_value(char buf[48], double v)
{
	if (!isfinite(v))
		snprintf(buf, 48, "-");
	else if (v >= 1000 || v <= -1000)
		snprintf(buf, 48, "%.0f", v);
	else
		snprintf(buf, 48, "%.4g", v);
	return buf;
}

/* ---- the pool statistics ----------------------------------------------------------------------- */

static int read_whole(const char *path, char **text, size_t *len, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st)) {
		snprintf(err, errlen, "%s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > AB_STATS_MAX) {
		snprintf(err, errlen, "not a regular file of at most %u MiB", AB_STATS_MAX >> 20);
		close(fd);
		return -1;
	}
	size_t cap = (size_t)st.st_size + 1, n = 0;
	char *buf = xcalloc(cap, 1);
	for (;;) {
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(err, errlen, "%s", strerror(errno));
			free(buf);
			close(fd);
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n == cap) {
			snprintf(err, errlen, "grew while being read");
			free(buf);
			close(fd);
			return -1;
		}
	}
	close(fd);
	*text = buf;
	*len = n;
	return 0;
}

/* The integer at a dotted path below obj ("enobufs.empty"); false when absent or not one. */
static bool get_u64(const struct json_doc *d, int obj, const char *path, uint64_t *out)
{
	char seg[64];
	int node = obj;
	for (const char *s = path;;) {
		size_t n = strcspn(s, ".");
		if (d->nodes[node].type != JSON_OBJECT)
			return false;
		snprintf(seg, sizeof(seg), "%.*s", (int)n, s);
		node = json_member(d, node, seg);
		if (node < 0)
			return false;
		if (!s[n])
			return !json_u64(d, node, out);
		s += n + 1;
	}
}

static void add_group(struct arm *a, const struct group_summary *g)
{
	struct group_summary *more = realloc(a->groups, (a->ngroups + 1) * sizeof(*more));
	if (!more)
		fatal("out of memory");
	a->groups = more;
	a->groups[a->ngroups++] = *g;
}

/* Reads one statistics file into the arm's groups; false with f->error set when it is not one. */
static bool summarize(struct arm *a, struct stats_file *f)
{
	struct json_doc doc;
	char err[256];
	if (json_parse(&doc, f->text, f->len, err, sizeof(err))) {
		snprintf(f->error, sizeof(f->error), "not JSON: %s", err);
		return false;
	}
	struct group_summary g = { 0 };
	g.has_pid = get_u64(&doc, 0, "pid", &g.pid);
	int rings = doc.nodes[0].type == JSON_OBJECT ? json_member(&doc, 0, "rings") : -1;
	bool ok = rings >= 0 && doc.nodes[rings].type == JSON_ARRAY;
	for (int r = ok ? doc.nodes[rings].first : -1; ok && r >= 0; r = doc.nodes[r].next) {
		int groups = doc.nodes[r].type == JSON_OBJECT ? json_member(&doc, r, "groups") : -1;
		ok = groups >= 0 && doc.nodes[groups].type == JSON_ARRAY && get_u64(&doc, r, "ring", &g.ring) &&
		     get_u64(&doc, r, "strays", &g.strays);
		for (int e = ok ? doc.nodes[groups].first : -1; ok && e >= 0; e = doc.nodes[e].next) {
			ok = get_u64(&doc, e, "bgid", &g.bgid) && get_u64(&doc, e, "selected", &g.selected) &&
			     get_u64(&doc, e, "enobufs.empty", &g.empty) &&
			     get_u64(&doc, e, "enobufs.capped", &g.capped) &&
			     get_u64(&doc, e, "enobufs.injected", &g.injected);
			/* Older files lack these: the nearest figures they have (as bufsel report). */
			if (ok && !get_u64(&doc, e, "peak_size", &g.buffers))
				ok = get_u64(&doc, e, "provided", &g.buffers);
			if (ok && !get_u64(&doc, e, "peak_out", &g.peak_out))
				ok = get_u64(&doc, e, "peak_in_use", &g.peak_out);
			if (ok && !get_u64(&doc, e, "buf_len", &g.buf_len))
				g.buf_len = 0;
			if (ok)
				add_group(a, &g);
		}
	}
	json_free(&doc);
	if (!ok)
		snprintf(f->error, sizeof(f->error), "not a bufsel statistics file (docs/stats-schema.md)");
	return ok;
}

static int cmp_name(const void *a, const void *b)
{
	const struct stats_file *x = a, *y = b;
	size_t lx = strlen(x->name), ly = strlen(y->name);
	/* The names are pids: shorter is smaller. */
	return lx != ly ? (lx < ly ? -1 : 1) : strcmp(x->name, y->name);
}

static void read_stats(struct arm *a)
{
	DIR *d = opendir(a->stats_dir);
	if (!d)
		fatal(a->stats_dir);
	for (struct dirent *e; (e = readdir(d));) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		struct stats_file *more = realloc(a->files, (a->nfiles + 1) * sizeof(*more));
		if (!more)
			fatal("out of memory");
		a->files = more;
		struct stats_file *f = &a->files[a->nfiles++];
		memset(f, 0, sizeof(*f));
		snprintf(f->name, sizeof(f->name), "%s", e->d_name);
	}
	closedir(d);
	if (a->nfiles)
		qsort(a->files, a->nfiles, sizeof(*a->files), cmp_name);
	for (size_t i = 0; i < a->nfiles; i++) {
		struct stats_file *f = &a->files[i];
		char path[PATH_MAX + 256], err[256];
		snprintf(path, sizeof(path), "%s/%s", a->stats_dir, f->name);
		if (read_whole(path, &f->text, &f->len, err, sizeof(err)))
			snprintf(f->error, sizeof(f->error), "%s", err);
		else if (!summarize(a, f)) {
			free(f->text);
			f->text = NULL;
		}
		if (f->error[0])
			warn("%s arm: the statistics file of the last round, %s: %s", a->def->name, f->name, f->error);
	}
}

static uint64_t held_bytes(const struct group_summary *g)
{
	return g->buf_len && g->peak_out > UINT64_MAX / g->buf_len ? UINT64_MAX : g->peak_out * g->buf_len;
}

/* ---- the report ---------------------------------------------------------------------------------- */

static int name_width(void)
{
	int w = 10;
	for (unsigned m = 0; m < ab.nmeasures; m++)
		if ((int)strlen(ab.measure[m]) > w)
			w = (int)strlen(ab.measure[m]);
	return w;
}

static void print_arm(const struct arm *a, int w)
{
	char med[48], lo[48], hi[48];
	if (a->failed) {
		printf("%s: n/a: %s, %s\n\n", a->def->name, a->where, a->reason);
		return;
	}
	printf("%s: %u run%s\n", a->def->name, a->done, a->done == 1 ? "" : "s");
	printf("  %-*s %12s %12s %12s %8s\n", w, "measure", "median", "min", "max", "spread");
	for (unsigned m = 0; m < ab.nmeasures; m++) {
		if (!reported(a, m))
			continue;
		struct spread s = measure_spread(a, m);
		char rel[32] = "-";
		if (s.median != 0)
			snprintf(rel, sizeof(rel), "%.1f%%", (s.max - s.min) / (s.median < 0 ? -s.median : s.median) * 100);
		printf("  %-*s %12s %12s %12s %8s\n", w, ab.measure[m], fmt_value(med, s.median), fmt_value(lo, s.min),
		       fmt_value(hi, s.max), rel);
	}
	putchar('\n');
}

static void print_ratios(const struct arm *a, int w)
{
	double *r = xcalloc(ab.runs, sizeof(double));
	printf("%s / native, round by round (%u pairs):\n", a->def->name, a->done < ab.native->done ? a->done : ab.native->done);
	printf("  %-*s %9s %9s %9s  %s\n", w, "measure", "median", "min", "max", "better");
	for (unsigned m = 0; m < ab.nmeasures; m++) {
		if (!compared(m) || (!reported(a, m) && !reported(ab.native, m)))
			continue;
		pair_ratios(a, m, r);
		struct spread s = spread_of(r, ab.runs);
		if (!s.n) {
			struct spread n = measure_spread(ab.native, m);
			printf("  %-*s %9s %9s %9s  %s\n", w, ab.measure[m], "-", "-", "-",
			       n.n && n.min == 0 && n.max == 0 ? "(0 natively)" : "(no round has it in both arms)");
			continue;
		}
		printf("  %-*s %8.3fx %8.3fx %8.3fx  %s\n", w, ab.measure[m], s.median, s.min, s.max,
		       higher_is_better(m) ? "higher" : "lower");
	}
	putchar('\n');
	free(r);
}

static void print_pools(void)
{
	bool header = false;
	for (unsigned i = 0; i < ab.narms; i++) {
		const struct arm *a = &ab.arms[i];
		if (!a->def->mode || a->failed)
			continue;
		if (!header) {
			printf("bufsel pool statistics, last round (round %u), per buffer group:\n", ab.runs);
			printf("  %-12s %8s %5s %6s %8s %8s %8s %12s %9s  %s\n", "arm", "pid", "ring", "bgid", "buffers",
			       "buf_len", "peak_out", "held_bytes", "selected", "-ENOBUFS (empty/capped/injected)");
			header = true;
		}
		if (!a->ngroups) {
			printf("  %-12s %s\n", a->def->name,
			       a->nfiles ? "no legacy buffer group in its statistics"
					 : "no statistics written: no process made a legacy buffer group");
			continue;
		}
		for (size_t k = 0; k < a->ngroups; k++) {
			const struct group_summary *g = &a->groups[k];
			char pid[24] = "-";
			if (g->has_pid)
				snprintf(pid, sizeof(pid), "%" PRIu64, g->pid);
			printf("  %-12s %8s %5" PRIu64 " %6" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %12" PRIu64
			       " %9" PRIu64 "  %" PRIu64 " (%" PRIu64 "/%" PRIu64 "/%" PRIu64 ")%s\n",
			       a->def->name, pid, g->ring, g->bgid, g->buffers, g->buf_len, g->peak_out, held_bytes(g),
			       g->selected, g->empty + g->capped + g->injected, g->empty, g->capped, g->injected,
			       g->strays ? "  strays!" : "");
		}
	}
	bool any = false;
	for (unsigned i = 0; i < ab.narms; i++)
		any |= ab.arms[i].ngroups > 0;
	if (any)
		printf("  held_bytes = peak_out x buf_len: the most memory the group had out at once.\n");
}

static void print_report(void)
{
	int w = name_width();
	printf("bufsel ab: %s", ab.argv[0]);
	for (int i = 1; ab.argv[i]; i++)
		printf(" %s", ab.argv[i]);
	printf("\n%u round%s after %u warm-up round%s; arms:", ab.runs, ab.runs == 1 ? "" : "s", ab.warmup,
	       ab.warmup == 1 ? "" : "s");
	for (unsigned i = 0; i < ab.narms; i++)
		printf("%s %s", i ? "," : "", ab.arms[i].def->name);
	printf(" (reversed every other round)\n\n");
	for (unsigned i = 0; i < ab.narms; i++)
		print_arm(&ab.arms[i], w);
	for (unsigned i = 0; i < ab.narms; i++) {
		const struct arm *a = &ab.arms[i];
		if (!a->def->mode)
			continue;
		if (a->failed)
			printf("%s / native: n/a: %s, %s\n\n", a->def->name, a->where, a->reason);
		else if (!ab.native)
			printf("%s / native: no native arm to compare with\n\n", a->def->name);
		else
			print_ratios(a, w);
	}
	print_pools();
}

/* ---- the JSON ------------------------------------------------------------------------------------- */

static void json_run(struct json_writer *w, const struct run_result *r, unsigned round)
{
	jw_object_flat(w, NULL);
	jw_int(w, "round", round);
	jw_int(w, "position", r->position);
	jw_int(w, "seq", r->seq);
	for (unsigned m = 0; m < M_BUILTIN; m++)
		jw_number(w, builtin_names[m], r->v[m]);
	jw_int(w, "exit_status", WIFEXITED(r->status) ? WEXITSTATUS(r->status) : -1);
	jw_object(w, "metrics");
	for (unsigned m = M_BUILTIN; m < ab.nmeasures; m++)
		if (isfinite(r->v[m]))
			jw_number(w, ab.measure[m], r->v[m]);
	jw_end(w);
	jw_end(w);
}

static void json_spread(struct json_writer *w, const char *key, struct spread s)
{
	jw_object_flat(w, key);
	jw_int(w, "n", s.n);
	jw_number(w, "median", s.median);
	jw_number(w, "min", s.min);
	jw_number(w, "max", s.max);
	jw_end(w);
}

static void json_summary(struct json_writer *w, const struct arm *a)
{
	jw_object(w, "summary");
	for (unsigned m = 0; m < M_BUILTIN; m++)
		json_spread(w, builtin_names[m], measure_spread(a, m));
	jw_object(w, "metrics");
	for (unsigned m = M_BUILTIN; m < ab.nmeasures; m++)
		if (reported(a, m))
			json_spread(w, ab.measure[m], measure_spread(a, m));
	jw_end(w);
	jw_end(w);
}

static void json_ratio_one(struct json_writer *w, const struct arm *a, unsigned m, double *r)
{
	pair_ratios(a, m, r);
	struct spread s = spread_of(r, ab.runs);
	jw_object(w, ab.measure[m]);
	jw_string(w, "better", higher_is_better(m) ? "higher" : "lower");
	jw_array_flat(w, "ratios");
	for (unsigned i = 0; i < ab.runs; i++)
		jw_number(w, NULL, r[i]);
	jw_end(w);
	jw_int(w, "n", s.n);
	jw_number(w, "median", s.median);
	jw_number(w, "min", s.min);
	jw_number(w, "max", s.max);
	jw_end(w);
}

static void json_ratio(struct json_writer *w, const struct arm *a)
{
	if (!a->def->mode || !ab.native || a->failed) {
		jw_null(w, "ratio");
		return;
	}
	double *r = xcalloc(ab.runs, sizeof(double));
	jw_object(w, "ratio");
	jw_int(w, "pairs", a->done < ab.native->done ? a->done : ab.native->done);
	for (unsigned m = 0; m < M_BUILTIN; m++)
		if (builtin_ratio[m])
			json_ratio_one(w, a, m, r);
	jw_object(w, "metrics");
	for (unsigned m = M_BUILTIN; m < ab.nmeasures; m++)
		if (reported(a, m) || reported(ab.native, m))
			json_ratio_one(w, a, m, r);
	jw_end(w);
	jw_end(w);
	free(r);
}

static void json_pools(struct json_writer *w, const struct arm *a)
{
	if (!a->def->mode || a->failed || a->done < ab.runs) {
		jw_null(w, "pool_stats");
		return;
	}
	uint64_t total = 0;
	jw_object(w, "pool_stats");
	jw_int(w, "round", ab.runs);
	jw_array(w, "groups");
	for (size_t k = 0; k < a->ngroups; k++) {
		const struct group_summary *g = &a->groups[k];
		jw_object_flat(w, NULL);
		if (g->has_pid)
			jw_u64(w, "pid", g->pid);
		else
			jw_null(w, "pid");
		jw_u64(w, "ring", g->ring);
		jw_u64(w, "bgid", g->bgid);
		jw_u64(w, "buffers", g->buffers);
		jw_u64(w, "buf_len", g->buf_len);
		jw_u64(w, "peak_out", g->peak_out);
		jw_u64(w, "held_bytes", held_bytes(g));
		jw_u64(w, "selected", g->selected);
		jw_u64(w, "enobufs", g->empty + g->capped + g->injected);
		jw_u64(w, "enobufs_empty", g->empty);
		jw_u64(w, "enobufs_capped", g->capped);
		jw_u64(w, "enobufs_injected", g->injected);
		jw_u64(w, "strays", g->strays);
		jw_end(w);
		total = held_bytes(g) > UINT64_MAX - total ? UINT64_MAX : total + held_bytes(g);
	}
	jw_end(w);
	jw_u64(w, "held_bytes", total);
	jw_array(w, "files");
	for (size_t i = 0; i < a->nfiles; i++) {
		const struct stats_file *f = &a->files[i];
		jw_object(w, NULL);
		jw_string(w, "file", f->name);
		if (f->text) {
			jw_null(w, "error");
			jw_raw(w, "stats", f->text, f->len);
		} else {
			jw_string(w, "error", f->error);
			jw_null(w, "stats");
		}
		jw_end(w);
	}
	jw_end(w);
	jw_end(w);
}

static void write_json(void)
{
	struct json_writer w;
	jw_init(&w, ab.json);
	jw_object(&w, NULL);
	jw_int(&w, "bufsel_ab", 1);
	jw_string(&w, "status", ab.status);
	if (ab.failed_arm) {
		jw_object(&w, "failure");
		jw_string(&w, "arm", ab.failed_arm->def->name);
		jw_string(&w, "where", ab.failed_arm->where);
		jw_string(&w, "reason", ab.failed_arm->reason);
		jw_end(&w);
	} else {
		jw_null(&w, "failure");
	}
	jw_array_flat(&w, "program");
	for (int i = 0; ab.argv[i]; i++)
		jw_string(&w, NULL, ab.argv[i]);
	jw_end(&w);
	char real[PATH_MAX];
	jw_string(&w, "path", realpath(ab.path, real) ? real : ab.path);
	jw_string(&w, "library", ab.libpath[0] ? ab.libpath : NULL);
	jw_int(&w, "runs", ab.runs);
	jw_int(&w, "warmup", ab.warmup);
	jw_number(&w, "timeout_s", ab.timeout_s);
	jw_string(&w, "conf", ab.conf);
	jw_array_flat(&w, "set");
	for (unsigned i = 0; i < ab.nsets; i++)
		jw_string(&w, NULL, ab.sets[i]);
	jw_end(&w);
	jw_array_flat(&w, "arm_order");
	for (unsigned i = 0; i < ab.narms; i++)
		jw_string(&w, NULL, ab.arms[i].def->name);
	jw_end(&w);
	jw_object(&w, "arms");
	for (unsigned i = 0; i < ab.narms; i++) {
		const struct arm *a = &ab.arms[i];
		jw_object(&w, a->def->name);
		jw_bool(&w, "bufsel", a->def->mode != NULL);
		jw_string(&w, "mode", a->def->mode);
		jw_string(&w, "kernel", a->def->kernel);
		jw_bool(&w, "optional", a->optional);
		jw_string(&w, "status", a->failed ? "failed" : a->done == ab.runs ? "ok" : "incomplete");
		if (a->failed) {
			jw_object(&w, "failure");
			jw_string(&w, "where", a->where);
			jw_string(&w, "reason", a->reason);
			jw_string(&w, "stderr_tail", a->tail);
			jw_end(&w);
		} else {
			jw_null(&w, "failure");
		}
		jw_array(&w, "warmup_runs");
		for (unsigned r = 0; r < a->warm_done; r++)
			json_run(&w, &a->warm[r], r + 1);
		jw_end(&w);
		jw_array(&w, "runs");
		for (unsigned r = 0; r < a->done; r++)
			json_run(&w, &a->runs[r], r + 1);
		jw_end(&w);
		json_summary(&w, a);
		json_ratio(&w, a);
		json_pools(&w, a);
		jw_end(&w);
	}
	jw_end(&w);
	jw_end(&w);
	if (jw_finish(&w) || fclose(ab.json)) {
		ab.json = NULL;
		warn("--json %s: %s", ab.json_path, strerror(errno));
		exit(1);
	}
	ab.json = NULL;
}

/* ---- the command ------------------------------------------------------------------------------------ */

static void setup_signals(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	/* Ignored, SIGCHLD would reap the program before wait4 sees its rusage. */
	signal(SIGCHLD, SIG_DFL);
	if (sigprocmask(SIG_BLOCK, &set, &ab.old_mask))
		fatal("sigprocmask");
	ab.sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (ab.sigfd < 0)
		fatal("signalfd");
}

int ab_main(int argc, char **argv)
{
	ab.status = "ok";
	int first = parse_options(argc, argv);
	if (first >= argc)
		usage_error("no PROGRAM given");
	ab.argv = &argv[first];
	const char *name = argv[first];

	int r = program_resolve(name, ab.path, sizeof(ab.path));
	if (r == ENOENT)
		usage_error("%s: %s", name, strchr(name, '/') ? strerror(r) : "command not found");
	if (r)
		usage_error("%s: %s", name, strerror(r));

	bool any_bufsel = false;
	for (unsigned i = 0; i < ab.narms; i++)
		any_bufsel |= ab.arms[i].def->mode != NULL;
	if (any_bufsel) {
		/* BUFSEL_LIB is the launcher's: read here, and dropped from every arm. */
		library_find(ab.lib, getenv("BUFSEL_LIB"), ab.libpath);
		program_check(name, ab.path);
	}

	if (ab.json_path) {
		int fd = open(ab.json_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
		if (fd < 0 || !(ab.json = fdopen(fd, "w")))
			usage_error("--json %s: %s", ab.json_path, strerror(errno));
	}

	make_tmpdir();
	char *preload = any_bufsel ? preload_with_bufsel() : NULL;
	for (unsigned i = 0; i < ab.narms; i++) {
		struct arm *a = &ab.arms[i];
		a->runs = xcalloc(ab.runs, sizeof(*a->runs));
		a->warm = xcalloc(ab.warmup, sizeof(*a->warm));
		build_env(a, preload);
		if (a->def->mode)
			check_conf(a);
	}
	free(preload);
	for (unsigned m = 0; m < M_BUILTIN; m++)
		ab.measure[ab.nmeasures++] = (char *)builtin_names[m];

	ab.progress = isatty(2);
	setup_signals();
	run_all();

	for (unsigned i = 0; i < ab.narms; i++)
		if (ab.arms[i].def->mode && !ab.arms[i].failed)
			read_stats(&ab.arms[i]);
	print_report();
	if (fflush(stdout) || ferror(stdout)) {
		warn("writing the report: %s", strerror(errno));
		return 1;
	}
	if (ab.json)
		write_json();
	return 0;
}
