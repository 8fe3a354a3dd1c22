/*
 * The benchmark suite behind `make bench` and `make bench-quick`: every
 * workload of the table below through `bufsel ab --json` with the arms
 * native, emulate, passthrough and kernel56, then one report of them all:
 *
 *   OUT/latest.json   the machine, the settings, every ab result whole, the bars
 *   OUT/latest.md     a table of ratios to native per workload and metric, the
 *                     idle-memory figures, and the bars marked pass or FAIL
 *   OUT/latest.svg    the throughput ratios as a grouped bar chart (gnuplot)
 *   OUT/ab/NAME.*     each ab's own output: .txt (stdout), .err, .json
 *
 * and the Markdown on stdout at the end.  kernel56 is optional in every ab
 * (--optional kernel56): a workload that needs a newer kernel than 5.6 shows
 * "n/a" with the reason, and the suite goes on.  The bars are reported,
 * never enforced: the exit status is 1 only when a workload could not be
 * measured at all (a required arm failed, a program is missing) or a file
 * could not be written.
 *
 *   suite [--quick] [--runs N] [--warmup N] [--seconds S] [--idle-rounds R]
 *         [--bufsel PATH] [--progs DIR] [--out DIR]
 *
 * docs/performance.md describes the workloads, the bars and the files.
 */
#define _GNU_SOURCE
#include "launcher/json.h"
#include "launcher/json_write.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define ALL_ARMS "native,emulate,passthrough,kernel56"
#define MAX_ARGS 8

static const char *const bufsel_arms[] = { "emulate", "passthrough", "kernel56", "trap" };
#define BUFSEL_ARMS 4
/* Where the whole per-call signal would show: the trap arm too (BUFSEL_PATCH=off). */
#define TRAP_ARMS ALL_ARMS ",trap"

/* How long a workload runs: --seconds S, or --rounds R. */
enum span { SPAN_SECONDS, SPAN_ROUNDS };

struct workload {
	const char *name;	/* file names under OUT/ab/ */
	const char *title;
	const char *prog;	/* under --progs */
	const char *args[MAX_ARGS];
	enum span span;
	const char *arms;
	bool quick;		/* part of bench-quick */
	const char *throughput;	/* the metric the chart shows; NULL: not charted */
};

static const struct workload workloads[] = {
	{ "echo-c1-s64", "echo, 1 conn, 64 B", "echo", { "--conns", "1", "--size", "64" }, SPAN_SECONDS, TRAP_ARMS,
	  true, "msgs_per_s" },
	{ "echo-c1-s4096", "echo, 1 conn, 4096 B", "echo", { "--conns", "1", "--size", "4096" }, SPAN_SECONDS,
	  ALL_ARMS, false, "msgs_per_s" },
	{ "echo-c64-s64", "echo, 64 conns, 64 B", "echo", { "--conns", "64", "--size", "64" }, SPAN_SECONDS,
	  TRAP_ARMS, true, "msgs_per_s" },
	{ "echo-c64-s4096", "echo, 64 conns, 4096 B", "echo", { "--conns", "64", "--size", "4096" }, SPAN_SECONDS,
	  ALL_ARMS, false, "msgs_per_s" },
	{ "echo-c1000-s64", "echo, 1000 conns, 64 B", "echo", { "--conns", "1000", "--size", "64" }, SPAN_SECONDS,
	  ALL_ARMS, true, "msgs_per_s" },
	{ "echo-c1000-s4096", "echo, 1000 conns, 4096 B", "echo", { "--conns", "1000", "--size", "4096" },
	  SPAN_SECONDS, ALL_ARMS, false, "msgs_per_s" },
	{ "pipe", "pipe", "pipe", { NULL }, SPAN_SECONDS, TRAP_ARMS, true, "gb_per_s" },
	{ "file", "file", "file", { NULL }, SPAN_SECONDS, TRAP_ARMS, true, "ops_per_s" },
	{ "idle_select", "idle, buffer select", "idle_select", { NULL }, SPAN_ROUNDS, ALL_ARMS, true, "msgs_per_s" },
	{ "idle_prealloc", "idle, preallocated", "idle_prealloc", { NULL }, SPAN_ROUNDS, "native", true, NULL },
};
#define WORKLOADS (sizeof(workloads) / sizeof(workloads[0]))

/*
 * The performance bars.  A ratio bar holds when the median of the round
 * pairs' ratios (bufsel / native) is at least (GE) or at most (LE) the limit;
 * the idle bars are worked out from several workloads (see idle_bars()).
 */
enum bar_kind { BAR_GE, BAR_LE, BAR_IDLE_HELD, BAR_IDLE_PREALLOC };

struct bar {
	enum bar_kind kind;
	const char *workload, *arm, *metric;
	double limit;
};

static const struct bar bars[] = {
	{ BAR_GE, "echo-c64-s64", "passthrough", "msgs_per_s", 0.97 },
	{ BAR_GE, "echo-c64-s4096", "passthrough", "msgs_per_s", 0.97 },
	{ BAR_GE, "echo-c1000-s64", "passthrough", "msgs_per_s", 0.97 },
	{ BAR_GE, "echo-c1000-s4096", "passthrough", "msgs_per_s", 0.97 },
	{ BAR_GE, "pipe", "passthrough", "gb_per_s", 0.97 },
	{ BAR_GE, "file", "passthrough", "ops_per_s", 0.97 },
	{ BAR_GE, "echo-c64-s64", "emulate", "msgs_per_s", 0.90 },
	{ BAR_GE, "echo-c64-s4096", "emulate", "msgs_per_s", 0.90 },
	{ BAR_GE, "pipe", "emulate", "gb_per_s", 0.90 },
	{ BAR_GE, "file", "emulate", "ops_per_s", 0.90 },
	{ BAR_LE, "echo-c64-s64", "emulate", "p99_us", 1.3 },
	{ BAR_LE, "echo-c64-s4096", "emulate", "p99_us", 1.3 },
	{ BAR_IDLE_HELD, "idle_select", "emulate", "held_peak_bytes", 0 },
	{ BAR_IDLE_PREALLOC, "idle_prealloc", "native", "held_peak_bytes", 100 },
};
#define BARS (sizeof(bars) / sizeof(bars[0]))

struct settings {
	bool quick;
	unsigned runs, warmup;
	const char *seconds, *idle_rounds;
	const char *bufsel, *progs, *out;
};

/* One workload's outcome: ab's JSON, read back, or why there is none. */
struct result {
	bool ran;		/* false: not part of this suite (bench-quick) */
	bool ok;		/* ab exited 0 */
	char error[600];	/* when !ok */
	char *text;
	size_t len;
	struct json_doc doc;
	bool has_doc;
	double elapsed_s;
};

struct bar_outcome {
	double value;		/* NaN: could not be measured */
	const char *result;	/* "pass", "FAIL", "n/a", "not run" */
	char measured[160];
	char why[200];
};

/* The suite's whole state: its settings, one result per workload, the bars' outcomes. */
static struct suite {
	struct settings set;
	struct result results[WORKLOADS];
	struct bar_outcome outcomes[BARS];
	char kernel[128], cpu[256], date[40], load_start[64], load_end[64];
	long nproc;
	double elapsed_s;
	/* The idle figures, in bytes: NaN when not measured. */
	double idle_prealloc, idle_native, idle_program, idle_bufsel, idle_slack;
	unsigned idle_rings;
} S;

/* ---- small things --------------------------------------------------------------- */

static noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static noreturn void die(const char *fmt, ...)
{
	va_list ap;
	fputs("bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* snprintf for messages made of other messages: cutting a long one short is fine. */
static void message(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void message(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *read_text(const char *path, size_t *len)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap)
			break;
		char *more = realloc(buf, cap *= 2);
		if (!more) {
			free(buf);
			buf = NULL;
		}
		buf = more;
	}
	fclose(f);
	if (buf) {
		buf[n < cap ? n : cap - 1] = '\0';
		*len = n;
	}
	return buf;
}

static const struct workload *workload_named(const char *name, size_t *index)
{
	for (size_t i = 0; i < WORKLOADS; i++)
		if (!strcmp(workloads[i].name, name)) {
			*index = i;
			return &workloads[i];
		}
	return NULL;
}

/* ---- reading ab's JSON --------------------------------------------------------------- */

/* The node at a dotted path of member names; -1 when absent. */
static int at(const struct json_doc *d, int from, const char *path)
{
	char seg[128];
	int node = from;
	for (const char *s = path; node >= 0;) {
		size_t n = strcspn(s, ".");
		snprintf(seg, sizeof(seg), "%.*s", (int)n, s);
		node = d->nodes[node].type == JSON_OBJECT ? json_member(d, node, seg) : -1;
		if (!s[n])
			break;
		s += n + 1;
	}
	return node;
}

static double num_at(const struct json_doc *d, int from, const char *path)
{
	int node = at(d, from, path);
	if (node < 0 || d->nodes[node].type != JSON_NUMBER)
		return NAN;
	char buf[64];
	snprintf(buf, sizeof(buf), "%.*s", (int)d->nodes[node].len, d->nodes[node].text);
	return strtod(buf, NULL);
}

static const char *str_at(const struct json_doc *d, int from, const char *path)
{
	int node = at(d, from, path);
	return node >= 0 && d->nodes[node].type == JSON_STRING ? d->nodes[node].text : NULL;
}

/* The arm's object in a result, -1 when the workload did not run it. */
static int arm_node(const struct result *r, const char *arm)
{
	if (!r->has_doc)
		return -1;
	int arms = at(&r->doc, 0, "arms");
	return arms >= 0 ? at(&r->doc, arms, arm) : -1;
}

/* "summary.metrics.NAME" for a metric, "summary.NAME" for ab's own measures. */
static void measure_path(char *buf, size_t len, const char *part, const char *metric)
{
	static const char *const own[] = { "wall_s", "user_s", "sys_s", "cpu_s", "maxrss_kib" };
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (!strcmp(metric, own[i])) {
			snprintf(buf, len, "%s.%s", part, metric);
			return;
		}
	snprintf(buf, len, "%s.metrics.%s", part, metric);
}

static double arm_median(const struct result *r, const char *arm, const char *metric)
{
	char path[192];
	int a = arm_node(r, arm);
	measure_path(path, sizeof(path), "summary", metric);
	return a < 0 ? NAN : num_at(&r->doc, a, strcat(path, ".median"));
}

/* The ratio's median, min and max for arm / native; false when there is none. */
static bool arm_ratio(const struct result *r, const char *arm, const char *metric, double out[3])
{
	static const char *const fields[] = { ".median", ".min", ".max" };
	int a = arm_node(r, arm);
	if (a < 0)
		return false;
	for (int i = 0; i < 3; i++) {
		char path[192];
		measure_path(path, sizeof(path), "ratio", metric);
		out[i] = num_at(&r->doc, a, strcat(path, fields[i]));
	}
	return isfinite(out[0]);
}

/* Why an arm has no figures: "" when it has them. */
static void arm_missing(const struct result *r, const char *arm, char *why, size_t len)
{
	*why = '\0';
	if (!r->ran) {
		snprintf(why, len, "not run");
		return;
	}
	if (!r->has_doc) {
		message(why, len, "%s", r->error);
		return;
	}
	int a = arm_node(r, arm);
	if (a < 0) {
		snprintf(why, len, "not an arm of this workload");
		return;
	}
	const char *status = str_at(&r->doc, a, "status");
	if (status && !strcmp(status, "incomplete"))
		message(why, len, "stopped early: %s", r->error);
	else if (status && strcmp(status, "ok"))
		snprintf(why, len, "%s, %s", str_at(&r->doc, a, "failure.where") ? str_at(&r->doc, a, "failure.where") : "?",
			 str_at(&r->doc, a, "failure.reason") ? str_at(&r->doc, a, "failure.reason") : status);
}

/* ---- running ab ------------------------------------------------------------------------ */

/* ab's first message (its lines start "bufsel: "; the program's stderr is indented), for a one-line reason. */
static void first_message(const char *text, char *out, size_t len)
{
	const char *p = strstr(text, "bufsel: ");
	while (p && p != text && p[-1] != '\n')
		p = strstr(p + 1, "bufsel: ");
	if (p)
		snprintf(out, len, "%.*s", (int)strcspn(p, "\n"), p);
}

static void run_workload(size_t index)
{
	const struct workload *w = &workloads[index];
	struct result *r = &S.results[index];
	char prog[PATH_MAX], out[PATH_MAX], err[PATH_MAX], json[PATH_MAX], runs[16], warmup[16], timeout[32];
	const char *argv[32];
	int n = 0;

	snprintf(prog, sizeof(prog), "%s/%s", S.set.progs, w->prog);
	snprintf(out, sizeof(out), "%s/ab/%s.txt", S.set.out, w->name);
	snprintf(err, sizeof(err), "%s/ab/%s.err", S.set.out, w->name);
	snprintf(json, sizeof(json), "%s/ab/%s.json", S.set.out, w->name);
	snprintf(runs, sizeof(runs), "%u", S.set.runs);
	snprintf(warmup, sizeof(warmup), "%u", S.set.warmup);
	/* A run that takes ten times what it should is stuck, not slow (idle: about 2 s for 1000 rounds). */
	double rounds = strtod(S.set.idle_rounds, NULL);
	double span = w->span == SPAN_SECONDS ? strtod(S.set.seconds, NULL) : rounds / 500 > 1 ? rounds / 500 : 1;
	snprintf(timeout, sizeof(timeout), "%.0f", 30 + 10 * span);
	unlink(json);

	argv[n++] = S.set.bufsel;
	argv[n++] = "ab";
	argv[n++] = "--runs";
	argv[n++] = runs;
	argv[n++] = "--warmup";
	argv[n++] = warmup;
	argv[n++] = "--arms";
	argv[n++] = w->arms;
	if (strstr(w->arms, "kernel56")) {
		argv[n++] = "--optional";
		argv[n++] = "kernel56";
	}
	argv[n++] = "--timeout";
	argv[n++] = timeout;
	argv[n++] = "--json";
	argv[n++] = json;
	argv[n++] = "--";
	argv[n++] = prog;
	for (int i = 0; i < MAX_ARGS && w->args[i]; i++)
		argv[n++] = w->args[i];
	argv[n++] = w->span == SPAN_SECONDS ? "--seconds" : "--rounds";
	argv[n++] = w->span == SPAN_SECONDS ? S.set.seconds : S.set.idle_rounds;
	argv[n] = NULL;

	posix_spawn_file_actions_t fa;
	pid_t pid;
	if (posix_spawn_file_actions_init(&fa) ||
	    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0) ||
	    posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644) ||
	    posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0644))
		die("out of memory");
	double t0 = now_s();
	int e = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (e)
		die("cannot run %s: %s", argv[0], strerror(e));
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die("waiting for %s: %s", argv[0], strerror(errno));
	r->elapsed_s = now_s() - t0;
	r->ran = true;
	r->ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	if (!r->ok) {
		size_t len;
		char *text = read_text(err, &len), line[400] = "";
		if (text)
			first_message(text, line, sizeof(line));
		free(text);
		snprintf(r->error, sizeof(r->error), "bufsel ab %s %d: %s",
			 WIFEXITED(status) ? "exited with status" : "was killed by signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), line[0] ? line : "(no message)");
	}
	/* A failed ab still writes what it measured, with the failure. */
	r->text = read_text(json, &r->len);
	if (r->text) {
		char problem[256];
		if (json_parse(&r->doc, r->text, r->len, problem, sizeof(problem)))
			message(r->error, sizeof(r->error), "%s: not JSON: %s", json, problem);
		else
			r->has_doc = true;
	} else if (r->ok) {
		message(r->error, sizeof(r->error), "%s: %s", json, strerror(errno));
	}
}

/* ---- the bars ---------------------------------------------------------------------------- */

static const struct result *result_named(const char *name)
{
	size_t i;
	return workload_named(name, &i) ? &S.results[i] : NULL;
}

/* The held figures of the idle workloads, in bytes (docs/performance.md, "Idle memory"). */
static void idle_figures(void)
{
	const struct result *sel = result_named("idle_select"), *pre = result_named("idle_prealloc");
	S.idle_prealloc = arm_median(pre, "native", "held_peak_bytes");
	S.idle_native = arm_median(sel, "native", "held_peak_bytes");
	S.idle_program = arm_median(sel, "emulate", "held_peak_bytes");
	S.idle_bufsel = S.idle_slack = NAN;
	S.idle_rings = 0;
	int a = arm_node(sel, "emulate");
	int groups = a >= 0 ? at(&sel->doc, a, "pool_stats.groups") : -1;
	if (groups < 0 || sel->doc.nodes[groups].type != JSON_ARRAY)
		return;
	/* One buffer per ring: the longest buffer of each ring's groups. */
	double held = 0, slack = 0;
	double last_pid = -1, last_ring = -1, ring_max = 0;
	for (int g = sel->doc.nodes[groups].first; g >= 0; g = sel->doc.nodes[g].next) {
		double pid = num_at(&sel->doc, g, "pid"), ring = num_at(&sel->doc, g, "ring");
		if (pid != last_pid || ring != last_ring) {
			slack += ring_max;
			ring_max = 0;
			S.idle_rings++;
			last_pid = pid;
			last_ring = ring;
		}
		held += num_at(&sel->doc, g, "held_bytes");
		double len = num_at(&sel->doc, g, "buf_len");
		if (len > ring_max)
			ring_max = len;
	}
	S.idle_bufsel = held;
	S.idle_slack = slack + ring_max;
}

static void judge(struct bar_outcome *o, bool pass)
{
	o->result = pass ? "pass" : "FAIL";
}

static void judge_bar(const struct bar *b, struct bar_outcome *o)
{
	size_t index = 0;
	const struct workload *w = workload_named(b->workload, &index);
	const struct result *r = &S.results[index];
	double ratio[3];
	o->value = NAN;
	o->result = "n/a";
	o->measured[0] = o->why[0] = '\0';
	if (!r->ran) {
		o->result = "not run";
		snprintf(o->why, sizeof(o->why), "%s is not part of this suite", w->title);
		return;
	}
	switch (b->kind) {
	case BAR_GE:
	case BAR_LE:
		if (!arm_ratio(r, b->arm, b->metric, ratio)) {
			arm_missing(r, b->arm, o->why, sizeof(o->why));
			if (!o->why[0])
				snprintf(o->why, sizeof(o->why), "no %s in both arms", b->metric);
			return;
		}
		o->value = ratio[0];
		snprintf(o->measured, sizeof(o->measured), "%.3fx (%.3f-%.3f)", ratio[0], ratio[1], ratio[2]);
		judge(o, b->kind == BAR_GE ? ratio[0] >= b->limit : ratio[0] <= b->limit);
		return;
	case BAR_IDLE_HELD:
		if (!isfinite(S.idle_bufsel) || !isfinite(S.idle_native)) {
			snprintf(o->why, sizeof(o->why), "%s",
				 !isfinite(S.idle_native) ? "no held_peak_bytes natively" : "no pool statistics under bufsel");
			return;
		}
		o->value = S.idle_bufsel;
		snprintf(o->measured, sizeof(o->measured), "%.0f B held by bufsel; native %.0f B + %.0f B (%u ring%s)",
			 S.idle_bufsel, S.idle_native, S.idle_slack, S.idle_rings, S.idle_rings == 1 ? "" : "s");
		judge(o, S.idle_bufsel <= S.idle_native + S.idle_slack);
		return;
	case BAR_IDLE_PREALLOC:
		if (!isfinite(S.idle_prealloc) || !isfinite(S.idle_native)) {
			snprintf(o->why, sizeof(o->why), "no held_peak_bytes from %s",
				 !isfinite(S.idle_prealloc) ? "idle_prealloc" : "idle_select natively");
			return;
		}
		o->value = S.idle_native > 0 ? S.idle_prealloc / S.idle_native : INFINITY;
		snprintf(o->measured, sizeof(o->measured), "%.0f B / %.0f B = %.1fx", S.idle_prealloc, S.idle_native,
			 o->value);
		judge(o, o->value >= b->limit);
		return;
	}
}

static void bar_text(const struct bar *b, char *buf, size_t len)
{
	size_t index = 0;
	const struct workload *w = workload_named(b->workload, &index);
	switch (b->kind) {
	case BAR_GE:
		snprintf(buf, len, "%s >= %.2fx native %s, %s", b->arm, b->limit, b->metric, w->title);
		break;
	case BAR_LE:
		snprintf(buf, len, "%s <= %.2fx native %s, %s", b->arm, b->limit, b->metric, w->title);
		break;
	case BAR_IDLE_HELD:
		snprintf(buf, len, "idle: bytes held by bufsel <= native held bytes + one buffer per ring");
		break;
	case BAR_IDLE_PREALLOC:
		snprintf(buf, len, "idle: preallocated / native buffer-select held bytes >= %.0fx", b->limit);
		break;
	}
}

/* ---- the machine ------------------------------------------------------------------------------ */

static void loadavg(char *buf, size_t len)
{
	size_t n;
	char *text = read_text("/proc/loadavg", &n);
	snprintf(buf, len, "?");
	if (text) {
		/* The three averages only. */
		char *p = text;
		for (int i = 0; i < 3 && p; i++)
			p = strchr(p + (i > 0), ' ');
		snprintf(buf, len, "%.*s", p ? (int)(p - text) : (int)strcspn(text, "\n"), text);
	}
	free(text);
}

static void machine(void)
{
	struct utsname u;
	snprintf(S.kernel, sizeof(S.kernel), "%s", uname(&u) ? "?" : u.release);
	S.nproc = sysconf(_SC_NPROCESSORS_ONLN);
	snprintf(S.cpu, sizeof(S.cpu), "?");
	size_t n;
	char *info = read_text("/proc/cpuinfo", &n);
	char *m = info ? strstr(info, "model name") : NULL;
	if (m && (m = strchr(m, ':')))
		snprintf(S.cpu, sizeof(S.cpu), "%.*s", (int)strcspn(m + 2, "\n"), m + 2);
	free(info);
	time_t t = time(NULL);
	strftime(S.date, sizeof(S.date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
	loadavg(S.load_start, sizeof(S.load_start));
}

/* ---- writing the report --------------------------------------------------------------------------- */

static FILE *open_out(const char *name, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", S.set.out, name);
	FILE *f = fopen(path, "we");
	if (!f)
		die("%s: %s", path, strerror(errno));
	return f;
}

static void close_out(FILE *f, const char *path)
{
	if (fflush(f) || ferror(f) || fclose(f))
		die("writing %s: %s", path, strerror(errno));
}

static void write_json(void)
{
	char path[PATH_MAX], text[256];
	FILE *f = open_out("latest.json", path, sizeof(path));
	struct json_writer w;
	jw_init(&w, f);
	jw_object(&w, NULL);
	jw_int(&w, "bufsel_bench", 1);
	jw_object(&w, "machine");
	jw_string(&w, "kernel", S.kernel);
	jw_string(&w, "cpu", S.cpu);
	jw_int(&w, "nproc", S.nproc);
	jw_string(&w, "date", S.date);
	jw_string(&w, "loadavg_start", S.load_start);
	jw_string(&w, "loadavg_end", S.load_end);
	jw_end(&w);
	jw_object(&w, "settings");
	jw_bool(&w, "quick", S.set.quick);
	jw_int(&w, "runs", S.set.runs);
	jw_int(&w, "warmup", S.set.warmup);
	jw_string(&w, "seconds", S.set.seconds);
	jw_string(&w, "idle_rounds", S.set.idle_rounds);
	jw_end(&w);
	jw_number(&w, "elapsed_s", S.elapsed_s);
	jw_array(&w, "workloads");
	for (size_t i = 0; i < WORKLOADS; i++) {
		const struct workload *wl = &workloads[i];
		const struct result *r = &S.results[i];
		jw_object(&w, NULL);
		jw_string(&w, "name", wl->name);
		jw_string(&w, "title", wl->title);
		jw_string(&w, "status", !r->ran ? "not run" : r->ok ? "ok" : "failed");
		jw_string(&w, "error", r->ok || !r->ran ? NULL : r->error);
		jw_number(&w, "elapsed_s", r->ran ? r->elapsed_s : NAN);
		if (r->has_doc)
			jw_raw(&w, "ab", r->text, r->len);
		else
			jw_null(&w, "ab");
		jw_end(&w);
	}
	jw_end(&w);
	jw_object(&w, "idle");
	jw_number(&w, "prealloc_held_bytes", S.idle_prealloc);
	jw_number(&w, "native_held_bytes", S.idle_native);
	jw_number(&w, "emulate_program_held_bytes", S.idle_program);
	jw_number(&w, "emulate_bufsel_held_bytes", S.idle_bufsel);
	jw_number(&w, "one_buffer_per_ring_bytes", S.idle_slack);
	jw_int(&w, "rings", S.idle_rings);
	jw_end(&w);
	jw_array(&w, "bars");
	for (size_t i = 0; i < BARS; i++) {
		const struct bar_outcome *o = &S.outcomes[i];
		bar_text(&bars[i], text, sizeof(text));
		jw_object_flat(&w, NULL);
		jw_string(&w, "bar", text);
		jw_string(&w, "workload", bars[i].workload);
		jw_string(&w, "arm", bars[i].arm);
		jw_string(&w, "metric", bars[i].metric);
		jw_number(&w, "value", o->value);
		jw_string(&w, "result", o->result);
		jw_string(&w, "why", o->why[0] ? o->why : NULL);
		jw_end(&w);
	}
	jw_end(&w);
	jw_end(&w);
	if (jw_finish(&w))
		die("writing %s: %s", path, strerror(errno));
	close_out(f, path);
}

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

static bool higher_better(const char *m)
{
	static const char *const suffixes[] = { "_per_s", "_per_sec", "_per_second", "bps", "iops", "qps", "rps",
						"tps", "throughput" };
	size_t n = strlen(m);
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		size_t k = strlen(suffixes[i]);
		if (n >= k && !strcmp(m + n - k, suffixes[i]))
			return true;
	}
	return false;
}

/* One row of the table: a measure of one workload, natively and as ratios. */
static void table_row(FILE *f, const struct workload *w, const struct result *r, const char *metric)
{
	char v[48], why[200];
	double ratio[3];
	fprintf(f, "| %s | %s %s | %s |", w->title, metric, higher_better(metric) ? "(higher better)" : "(lower better)",
		fmt_value(v, arm_median(r, "native", metric)));
	for (int i = 0; i < BUFSEL_ARMS; i++) {
		if (!strstr(w->arms, bufsel_arms[i]))
			fputs(" - |", f);
		else if (arm_ratio(r, bufsel_arms[i], metric, ratio))
			fprintf(f, " %.3fx (%.3f-%.3f) |", ratio[0], ratio[1], ratio[2]);
		else {
			arm_missing(r, bufsel_arms[i], why, sizeof(why));
			fputs(why[0] ? " n/a |" : " - |", f);
		}
	}
	fputc('\n', f);
}

static void write_md(void)
{
	char path[PATH_MAX], v[48], text[256], why[200];
	FILE *f = open_out("latest.md", path, sizeof(path));
	fprintf(f, "# bufsel benchmarks, %s\n\n", S.date);
	fprintf(f, "Linux %s, %s, %ld CPUs; load average %s at the start, %s at the end.\n", S.kernel, S.cpu, S.nproc,
		S.load_start, S.load_end);
	fprintf(f, "%s: %u rounds after %u warm-up round%s, --seconds %s, --rounds %s (idle); %.0f s in all.\n\n",
		S.set.quick ? "make bench-quick" : "make bench", S.set.runs, S.set.warmup, S.set.warmup == 1 ? "" : "s",
		S.set.seconds, S.set.idle_rounds, S.elapsed_s);
	fputs("Ratios are bufsel / native, round by round: the median of the pairs and (min-max).\n\n", f);
	fputs("| workload | metric | native | emulate ratio | passthrough ratio | kernel56 ratio | trap ratio |\n", f);
	fputs("|---|---|---|---|---|---|---|\n", f);
	for (size_t i = 0; i < WORKLOADS; i++) {
		const struct workload *w = &workloads[i];
		const struct result *r = &S.results[i];
		if (!r->ran)
			continue;
		int nat = arm_node(r, "native");
		int metrics = nat >= 0 ? at(&r->doc, nat, "summary.metrics") : -1;
		if (metrics < 0 || r->doc.nodes[metrics].type != JSON_OBJECT) {
			fprintf(f, "| %s | - | FAILED | | | | |\n", w->title);
			continue;
		}
		table_row(f, w, r, w->span == SPAN_SECONDS ? "cpu_s" : "wall_s");
		for (int m = r->doc.nodes[metrics].first; m >= 0; m = r->doc.nodes[m].next)
			table_row(f, w, r, r->doc.nodes[m].key);
	}

	/* Echo with one connection pays interception on every message: how much of it is the signal. */
	for (size_t i = 0; i < WORKLOADS; i++) {
		double e[3], t[3], ec[3], tc[3];
		if (strcmp(workloads[i].name, "echo-c1-s64") || !S.results[i].ran ||
		    !arm_ratio(&S.results[i], "emulate", "msgs_per_s", e) || !arm_ratio(&S.results[i], "trap", "msgs_per_s", t) ||
		    !arm_ratio(&S.results[i], "emulate", "server_cpu_us_per_msg", ec) ||
		    !arm_ratio(&S.results[i], "trap", "server_cpu_us_per_msg", tc))
			continue;
		fputs("\n## Echo, 1 connection: the trap's share\n\n", f);
		fprintf(f, "Every message costs the server at least one `io_uring_enter`. With every call trapped "
			   "(`trap` arm, `BUFSEL_PATCH=off`) throughput is %.3fx native and server CPU per message "
			   "%.3fx; with site patching (`emulate`) %.3fx and %.3fx. ",
			t[0], tc[0], e[0], ec[0]);
		/* A share of a gap is only meaningful when every round of the trap
		 * arm was below native; otherwise the gap is this run's noise. */
		if (t[2] < 1) {
			double share = 100.0 * (e[0] - t[0]) / (1 - t[0]);
			fprintf(f, "The signal round trip is the difference: %.0f%% of the throughput gap of the "
				   "trap arm is gone with patching.\n",
				share < 0 ? 0.0 : share > 100 ? 100.0 : share);
		} else {
			fprintf(f, "The trap arm's gap to native (range %.3f-%.3fx) is within this run's noise, "
				   "so no share of it is given.\n", t[1], t[2]);
		}
	}

	fputs("\n## Idle memory\n\n", f);
	fputs("| figure | bytes |\n|---|---|\n", f);
	fprintf(f, "| idle_prealloc natively: held_peak_bytes (program) | %s |\n", fmt_value(v, S.idle_prealloc));
	fprintf(f, "| idle_select natively: held_peak_bytes (program) | %s |\n", fmt_value(v, S.idle_native));
	fprintf(f, "| idle_select under bufsel (emulate): held_peak_bytes (program) | %s |\n",
		fmt_value(v, S.idle_program));
	fprintf(f, "| idle_select under bufsel (emulate): held by bufsel, peak_out x buf_len (pool statistics) | %s |\n",
		fmt_value(v, S.idle_bufsel));
	fprintf(f, "| one buffer per ring (%u ring%s) | %s |\n", S.idle_rings, S.idle_rings == 1 ? "" : "s",
		fmt_value(v, S.idle_slack));

	fputs("\n## Bars\n\n| bar | measured | result |\n|---|---|---|\n", f);
	for (size_t i = 0; i < BARS; i++) {
		const struct bar_outcome *o = &S.outcomes[i];
		bar_text(&bars[i], text, sizeof(text));
		fprintf(f, "| %s | %s | %s |\n", text, o->measured[0] ? o->measured : o->why, o->result);
	}

	bool header = false;
	for (size_t i = 0; i < WORKLOADS; i++) {
		const struct result *r = &S.results[i];
		if (!r->ran)
			continue;
		const char *arms[] = { "native", "emulate", "passthrough", "kernel56", "trap" };
		for (int k = 0; k < 5; k++) {
			if (!strstr(workloads[i].arms, arms[k]))
				continue;
			arm_missing(r, arms[k], why, sizeof(why));
			if (!why[0])
				continue;
			if (!header)
				fputs("\n## Not measured\n\n", f);
			header = true;
			fprintf(f, "- %s, %s: %s\n", workloads[i].title, arms[k], why);
		}
	}
	close_out(f, path);
}

/* ---- the chart ------------------------------------------------------------------------------------ */

static int copy_file(const char *from, const char *to)
{
	size_t len;
	char *text = read_text(from, &len);
	if (!text || !len) {
		free(text);
		return -1;
	}
	FILE *f = fopen(to, "we");
	int ret = f && fwrite(text, 1, len, f) == len ? 0 : -1;
	if (f && fclose(f))
		ret = -1;
	free(text);
	return ret;
}

/*
 * gnuplot works in a directory of its own with relative names only, so no
 * path is ever written into its script; the picture is copied out after.
 */
static int write_chart(void)
{
	char dir[] = "/tmp/bufsel-bench-XXXXXX", dat[64], gp[64], svg[64], dest[PATH_MAX];
	if (!mkdtemp(dir)) {
		fprintf(stderr, "bench: chart: %s\n", strerror(errno));
		return -1;
	}
	snprintf(dat, sizeof(dat), "%s/ratios.dat", dir);
	snprintf(gp, sizeof(gp), "%s/chart.gp", dir);
	snprintf(svg, sizeof(svg), "%s/chart.svg", dir);
	FILE *d = fopen(dat, "we"), *g = fopen(gp, "we");
	if (!d || !g)
		die("chart: %s", strerror(errno));
	/* A comment, not a header: a header row would shift the bars and not their whiskers. */
	fputs("# workload", d);
	for (int k = 0; k < BUFSEL_ARMS; k++)
		fprintf(d, " %s min max", bufsel_arms[k]);
	fputc('\n', d);
	unsigned rows = 0;
	for (size_t i = 0; i < WORKLOADS; i++) {
		const struct workload *w = &workloads[i];
		if (!S.results[i].ran || !w->throughput)
			continue;
		fprintf(d, "\"%s\"", w->name);
		bool any = false;
		for (int k = 0; k < BUFSEL_ARMS; k++) {
			double r[3];
			if (arm_ratio(&S.results[i], bufsel_arms[k], w->throughput, r)) {
				fprintf(d, " %.4f %.4f %.4f", r[0], r[1], r[2]);
				any = true;
			} else {
				fputs(" ? ? ?", d);
			}
		}
		fputc('\n', d);
		rows += any;
	}
	fputs("set terminal svg size 1100,600 dynamic noenhanced font 'sans,11' background rgb 'white'\n"
	      "set output 'chart.svg'\n"
	      "set datafile missing '?'\n"
	      "set title 'Throughput under bufsel / native (median of round pairs; whiskers: min-max)'\n"
	      "set ylabel 'ratio to native (1.0 = native)'\n"
	      "set style data histograms\n"
	      "set style histogram errorbars gap 2 lw 1\n"
	      "set style fill solid 0.8 border -1\n"
	      "set key outside right top\n"
	      "set xtics nomirror font 'sans,9'\n"
	      "set grid ytics\n"
	      "set yrange [0:*]\n"
	      "set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 2 lc rgb 'black' front\n",
	      g);
	/* Which metric is each program's throughput: the names come from the table above. */
	fputs("set xlabel 'throughput metric", g);
	const char *sep = ": ";
	for (size_t i = 0; i < WORKLOADS; i++) {
		bool first = true;
		for (size_t j = 0; j < i; j++)
			first &= strcmp(workloads[j].prog, workloads[i].prog) != 0;
		if (first && workloads[i].throughput) {
			fprintf(g, "%s%s %s", sep, workloads[i].prog, workloads[i].throughput);
			sep = ", ";
		}
	}
	fputs("'\n", g);
	fputs("plot 'ratios.dat' using 2:3:4:xtic(1) title 'emulate', '' using 5:6:7 title 'passthrough', "
	      "'' using 8:9:10 title 'kernel56', '' using 11:12:13 title 'trap (BUFSEL_PATCH=off)'\n",
	      g);
	if (fclose(d) | fclose(g))
		die("chart: %s", strerror(errno));
	int ret = -1;
	if (!rows) {
		fputs("bench: chart: no workload has throughput ratios to draw\n", stderr);
	} else {
		posix_spawn_file_actions_t fa;
		pid_t pid;
		char *argv[] = { "gnuplot", "chart.gp", NULL };
		int status, e = posix_spawn_file_actions_init(&fa);
		if (!e)
			e = posix_spawn_file_actions_addchdir_np(&fa, dir);
		if (!e)
			e = posix_spawn_file_actions_adddup2(&fa, 2, 1);
		if (!e)
			e = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
		posix_spawn_file_actions_destroy(&fa);
		if (e)
			fprintf(stderr, "bench: chart: cannot run gnuplot (apt-get install gnuplot-nox): %s\n", strerror(e));
		else if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			fputs("bench: chart: gnuplot failed\n", stderr);
		else {
			snprintf(dest, sizeof(dest), "%s/latest.svg", S.set.out);
			ret = copy_file(svg, dest);
			if (ret)
				fprintf(stderr, "bench: chart: cannot write %s\n", dest);
		}
	}
	unlink(dat);
	unlink(gp);
	unlink(svg);
	rmdir(dir);
	return ret;
}

/* ---- the command ---------------------------------------------------------------------------------- */

static void usage(int status)
{
	fputs("Usage: suite [--quick] [--runs N] [--warmup N] [--seconds S] [--idle-rounds R]\n"
	      "             [--bufsel PATH] [--progs DIR] [--out DIR]\n"
	      "Runs the benchmark workloads through bufsel ab and writes DIR/latest.{json,md,svg}\n"
	      "(docs/performance.md). Defaults: 5 runs after 1 warm-up, 1.5 s, 1000 idle rounds;\n"
	      "--quick: 3 runs, no warm-up, 0.5 s, 200 idle rounds, fewer echo configurations;\n"
	      "--bufsel build/bufsel, --progs build/bench, --out bench/results.\n",
	      status ? stderr : stdout);
	exit(status);
}

static unsigned parse_count(const char *opt, const char *s, unsigned min)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end || !*s || v < min || v > 10000 || *s == '-')
		die("%s: '%s' is not a whole number in %u..10000", opt, s, min);
	return (unsigned)v;
}

static void parse(int argc, char **argv)
{
	const char *runs = NULL, *warmup = NULL;
	S.set.bufsel = "build/bufsel";
	S.set.progs = "build/bench";
	S.set.out = "bench/results";
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			usage(0);
		if (!strcmp(a, "--quick")) {
			S.set.quick = true;
			continue;
		}
		const char **slot = !strcmp(a, "--runs")	  ? &runs
				    : !strcmp(a, "--warmup")	  ? &warmup
				    : !strcmp(a, "--seconds")	  ? &S.set.seconds
				    : !strcmp(a, "--idle-rounds") ? &S.set.idle_rounds
				    : !strcmp(a, "--bufsel")	  ? &S.set.bufsel
				    : !strcmp(a, "--progs")	  ? &S.set.progs
				    : !strcmp(a, "--out")	  ? &S.set.out
								  : NULL;
		if (!slot || !v || !*v)
			usage(2);
		*slot = v;
		i++;
	}
	S.set.runs = runs ? parse_count("--runs", runs, 1) : S.set.quick ? 3 : 5;
	S.set.warmup = warmup ? parse_count("--warmup", warmup, 0) : S.set.quick ? 0 : 1;
	if (!S.set.seconds)
		S.set.seconds = S.set.quick ? "0.5" : "1.5";
	if (!S.set.idle_rounds)
		S.set.idle_rounds = S.set.quick ? "200" : "1000";
	char *end;
	double secs = strtod(S.set.seconds, &end);
	if (*end || !(secs > 0))
		die("--seconds: '%s' is not a positive number", S.set.seconds);
	parse_count("--idle-rounds", S.set.idle_rounds, 1);
}

int main(int argc, char **argv)
{
	parse(argc, argv);
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/ab", S.set.out);
	if ((mkdir(S.set.out, 0755) && errno != EEXIST) || (mkdir(dir, 0755) && errno != EEXIST))
		die("%s: %s", dir, strerror(errno));
	if (access(S.set.bufsel, X_OK))
		die("%s: %s (make first)", S.set.bufsel, strerror(errno));
	machine();

	size_t total = 0, runs = 0;
	for (size_t i = 0; i < WORKLOADS; i++)
		if (!S.set.quick || workloads[i].quick) {
			total++;
			size_t arms = 1;
			for (const char *p = workloads[i].arms; (p = strchr(p, ',')); p++)
				arms++;
			runs += arms * (S.set.runs + S.set.warmup);
		}
	printf("bench: %zu workloads, %zu runs of about %s s each (idle: %s rounds); output in %s\n", total, runs,
	       S.set.seconds, S.set.idle_rounds, S.set.out);
	fflush(stdout);

	double t0 = now_s();
	size_t k = 0, failed = 0;
	for (size_t i = 0; i < WORKLOADS; i++) {
		const struct workload *w = &workloads[i];
		if (S.set.quick && !w->quick)
			continue;
		printf("[%zu/%zu] %s (%s): ", ++k, total, w->title, w->arms);
		fflush(stdout);
		run_workload(i);
		struct result *r = &S.results[i];
		failed += !r->ok;
		printf("%.0f s", r->elapsed_s);
		for (int a = 0; a < BUFSEL_ARMS && w->throughput; a++) {
			double ratio[3];
			if (strstr(w->arms, bufsel_arms[a]) && arm_ratio(r, bufsel_arms[a], w->throughput, ratio))
				printf(", %s %.3fx", bufsel_arms[a], ratio[0]);
			else if (strstr(w->arms, bufsel_arms[a]))
				printf(", %s n/a", bufsel_arms[a]);
		}
		printf("%s%s\n", r->ok ? "" : "; FAILED: ", r->ok ? "" : r->error);
		fflush(stdout);
	}
	S.elapsed_s = now_s() - t0;
	loadavg(S.load_end, sizeof(S.load_end));

	idle_figures();
	for (size_t i = 0; i < BARS; i++)
		judge_bar(&bars[i], &S.outcomes[i]);
	write_json();
	write_md();
	int chart = write_chart();

	char path[PATH_MAX];
	size_t len;
	snprintf(path, sizeof(path), "%s/latest.md", S.set.out);
	char *md = read_text(path, &len);
	if (md)
		fwrite(md, 1, len, stdout);
	free(md);
	printf("\nbench: %s/latest.json, latest.md%s; each ab's output in %s/ab/\n", S.set.out,
	       chart ? "" : ", latest.svg", S.set.out);
	if (failed)
		printf("bench: %zu workload%s could not be measured (see above)\n", failed, failed == 1 ? "" : "s");
	for (size_t i = 0; i < WORKLOADS; i++)
		if (S.results[i].has_doc)
			json_free(&S.results[i].doc);
	return failed || chart ? 1 : 0;
}
