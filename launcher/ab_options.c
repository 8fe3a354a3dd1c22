/*
 * The command line of `bufsel ab` (ab_options.h): the arms that may be
 * asked for, each with its BUFSEL_* settings and its line in --help, and the
 * options, checked here (a --set key as the configuration file would) so
 * that nothing runs after a mistake in them.
 */
#define _GNU_SOURCE
#include "launcher/ab_options.h"

#include "launcher/ab_messages.h"
#include "launcher/ab_state.h"
#include "conf/options.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AB_DEFAULT_RUNS 5
#define AB_DEFAULT_WARMUP 1
#define AB_DEFAULT_TIMEOUT 600.0	/* seconds per run */
#define AB_MAX_RUNS 10000
#define AB_MAX_WARMUP 1000
#define AB_MAX_TIMEOUT 604800.0

static const struct arm_def arm_defs[] = {
	{ "native", NULL, NULL, NULL, "the program alone: bufsel not preloaded, BUFSEL_* removed" },
	{ "native2", NULL, NULL, NULL,
	  "the program alone again: native2 / native is this run's noise floor (A/A), which every other ratio is judged against" },
	{ "emulate", "emulate", "native", "on", "under bufsel, BUFSEL_MODE=emulate" },
	{ "passthrough", "passthrough", "native", "on", "under bufsel, BUFSEL_MODE=passthrough: the interception alone" },
	{ "kernel56", "emulate", "5.6", "on", "under bufsel, BUFSEL_MODE=emulate BUFSEL_KERNEL=5.6" },
	{ "trap", "emulate", "native", "off",
	  "under bufsel, BUFSEL_MODE=emulate BUFSEL_PATCH=off: every inline io_uring call takes the seccomp trap" },
};
_Static_assert(sizeof(arm_defs) / sizeof(arm_defs[0]) == ARM_DEFS, "ARM_DEFS counts arm_defs[]");

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
	       "  --arms LIST         comma-separated arms, in this order (default native,native2,emulate):\n",
	       AB_DEFAULT_RUNS, AB_MAX_RUNS, AB_DEFAULT_WARMUP);
	for (size_t i = 0; i < ARM_DEFS; i++)
		printf("                        %-12s %s\n", arm_defs[i].name, arm_defs[i].help);
	printf("  --optional LIST     arms other than native that may fail: a failed run drops\n"
	       "                      the arm (n/a, with the reason) instead of stopping ab\n"
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
	       "user_s, sys_s, cpu_s (user+sys), maxrss_kib and every metric; per arm other\n"
	       "than native, the ratio to native of wall_s, cpu_s, maxrss_kib and every\n"
	       "metric, round i over round i: the median ratio and its min and max, with\n"
	       "which way is better (a metric ending in _per_s, _per_sec, _per_second, bps,\n"
	       "iops, qps, rps, tps or throughput is better higher, any other better lower)\n"
	       "and, with the native2 arm, the A/A range (native2 / native) beside it and\n"
	       "whether the median is better, worse or within that noise; then the pool\n"
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
			ab_usage_error("%s: unknown arm '%.*s' (arms: %s)", opt, (int)n, p, names);
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
		ab_usage_error("%s: '%s' given twice", opt, def->name);
	ab.arms[ab.narms++].def = def;
}

static void mark_optional(const char *opt, const struct arm_def *def)
{
	struct arm *a = arm_find(def);
	if (def == &arm_defs[0])
		ab_usage_error("%s: the native arm cannot be optional: every ratio needs it", opt);
	if (!a)
		ab_usage_error("%s: '%s' is not among the arms", opt, def->name);
	a->optional = true;
}

/* Returns the index of PROGRAM in argv. */
int ab_parse_options(int argc, char **argv)
{
	const char *arms = "native,native2,emulate", *optional = NULL;
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
			ab_usage_error("unknown option '%.*s'", (int)(key - a + (ptrdiff_t)klen), a);
		const char *val = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
		if (!val || !*val)
			ab_usage_error("--%s needs a value", names[o]);
		switch (o) {
		case O_RUNS:
			if (!parse_uint(val, AB_MAX_RUNS, &ab.runs) || !ab.runs)
				ab_usage_error("--runs: '%s' is not a whole number in 1..%d", val, AB_MAX_RUNS);
			break;
		case O_WARMUP:
			if (!parse_uint(val, AB_MAX_WARMUP, &ab.warmup))
				ab_usage_error("--warmup: '%s' is not a whole number in 0..%d", val, AB_MAX_WARMUP);
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
				ab_usage_error("--conf %s: %s", val, strerror(errno));
			ab.conf = ab_xstrdup(abs);
			break;
		}
		case O_SET: {
			const char *veq = strchr(val, '=');
			char var[64], err[1024];
			if (!veq)
				ab_usage_error("--set %s: expected KEY=VALUE", val);
			size_t n = (size_t)(veq - val);
			if ((n == 4 && !strncmp(val, "mode", 4)) || (n == 6 && !strncmp(val, "kernel", 6)) ||
			    (n == 5 && !strncmp(val, "stats", 5)))
				ab_usage_error("--set %s: %.*s is set by each arm (--arms)", val, (int)n, val);
			if (conf_setting(val, n, veq + 1, var, sizeof(var), err, sizeof(err)))
				ab_usage_error("--set %s", err);
			if (ab.nsets == AB_MAX_SETS)
				ab_usage_error("--set: more than %d settings", AB_MAX_SETS);
			ab.sets[ab.nsets++] = ab_xasprintf("%s=%s", var, veq + 1);
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
				ab_usage_error("--timeout: '%s' is not a number of seconds in 0..%.0f", val, AB_MAX_TIMEOUT);
			break;
		}
		case O_LIB:
			ab.lib = val;
			break;
		}
	}
	parse_arm_list("--arms", arms, add_arm);
	ab.native = arm_find(&arm_defs[0]);
	ab.aa = arm_find(&arm_defs[1]);
	if (optional)
		parse_arm_list("--optional", optional, mark_optional);
	return i;
}
