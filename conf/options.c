/*
 * The options table, one value parser and printer per option, the defaults
 * and the conf's invariants (--help's key list is help.c's).  Parsers are
 * strict on purpose: decimal digits only (no sign, no blanks, no hex, no
 * exponent), so a value means one thing, and a value that is refused is
 * never half-applied.
 */
#include "conf/internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Decimal digits only, at least one, the value at most max. */
static int parse_u64(const char *v, uint64_t max, uint64_t *out)
{
	uint64_t n = 0;
	if (!*v)
		return -EINVAL;
	for (; *v; v++) {
		if (*v < '0' || *v > '9')
			return -EINVAL;
		unsigned d = (unsigned)(*v - '0');
		if (n > (max - d) / 10)
			return -EINVAL;
		n = n * 10 + d;
	}
	*out = n;
	return 0;
}

static const char *const mode_names[] = { "emulate", "passthrough" };
static const char *const log_names[] = { "error", "warn", "info", "debug" };

static int parse_name(const char *v, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v, names[i]))
			return (int)i;
	return -EINVAL;
}

static int parse_mode(void *dst, const char *v)
{
	int i = parse_name(v, mode_names, sizeof(mode_names) / sizeof(mode_names[0]));
	if (i < 0)
		return i;
	((struct bufsel_conf *)dst)->mode = (enum bufsel_mode)i;
	return 0;
}

static void show_mode(const void *src, char *buf, size_t len)
{
	snprintf(buf, len, "%s", mode_names[((const struct bufsel_conf *)src)->mode]);
}

static int parse_log(void *dst, const char *v)
{
	int i = parse_name(v, log_names, sizeof(log_names) / sizeof(log_names[0]));
	if (i < 0)
		return i;
	((struct bufsel_conf *)dst)->log = (enum bufsel_log_level)i;
	return 0;
}

static void show_log(const void *src, char *buf, size_t len)
{
	snprintf(buf, len, "%s", log_names[((const struct bufsel_conf *)src)->log]);
}

/* "native", or a version "X.Y" from 5.1 (io_uring's first) on. */
static int parse_kernel(void *dst, const char *v)
{
	char major[8], minor[8];
	const char *dot = strchr(v, '.');
	uint64_t x, y;
	if (!strcmp(v, "native")) {
		((struct bufsel_conf *)dst)->kernel = 0;
		return 0;
	}
	if (!dot || (size_t)(dot - v) >= sizeof(major) || strlen(dot + 1) >= sizeof(minor))
		return -EINVAL;
	memcpy(major, v, (size_t)(dot - v));
	major[dot - v] = '\0';
	strcpy(minor, dot + 1); // NOLINT(clang-analyzer-security.insecureAPI.strcpy): length checked above
	if (parse_u64(major, 255, &x) || parse_u64(minor, 255, &y) || (x << 8 | y) < (5u << 8 | 1))
		return -EINVAL;
	((struct bufsel_conf *)dst)->kernel = (unsigned)(x << 8 | y);
	return 0;
}

static void show_kernel(const void *src, char *buf, size_t len)
{
	unsigned k = ((const struct bufsel_conf *)src)->kernel;
	if (k)
		snprintf(buf, len, "%u.%u", k >> 8, k & 0xff);
	else
		snprintf(buf, len, "native");
}

/* Any path shorter than CONF_PATH_MAX; "-" and "" are the path's special cases. */
static int parse_stats(void *dst, const char *v)
{
	size_t n = strlen(v);
	if (n >= CONF_PATH_MAX)
		return -EINVAL;
	memcpy(((struct bufsel_conf *)dst)->stats, v, n + 1);
	return 0;
}

static void show_stats(const void *src, char *buf, size_t len)
{
	const char *p = ((const struct bufsel_conf *)src)->stats;
	conf_quote(buf, len, p, strlen(p), len > 4 ? len - 4 : 0);
}

static const char *const onoff_names[] = { "off", "on" };

static int parse_patch(void *dst, const char *v)
{
	int i = parse_name(v, onoff_names, 2);
	if (i < 0)
		return i;
	((struct bufsel_conf *)dst)->patch = i;
	return 0;
}

static void show_patch(const void *src, char *buf, size_t len)
{
	snprintf(buf, len, "%s", onoff_names[!!((const struct bufsel_conf *)src)->patch]);
}

static const char *const trap_names[] = { "auto", "dispatch", "seccomp" };

static int parse_trap(void *dst, const char *v)
{
	int i = parse_name(v, trap_names, 3);
	if (i < 0)
		return i;
	((struct bufsel_conf *)dst)->trap = (enum bufsel_trap)i;
	return 0;
}

static void show_trap(const void *src, char *buf, size_t len)
{
	snprintf(buf, len, "%s", trap_names[((const struct bufsel_conf *)src)->trap]);
}

static const char *const rings_names[] = { "auto", "emulate", "kernel" };

static int parse_rings(void *dst, const char *v)
{
	int i = parse_name(v, rings_names, 3);
	if (i < 0)
		return i;
	((struct bufsel_conf *)dst)->rings = (enum bufsel_rings)i;
	return 0;
}

static void show_rings(const void *src, char *buf, size_t len)
{
	snprintf(buf, len, "%s", rings_names[((const struct bufsel_conf *)src)->rings]);
}

static const char *const legacy_names[] = { "kernel", "latest" };

static int parse_legacy(void *dst, const char *v)
{
	int i = parse_name(v, legacy_names, 2);
	if (i < 0)
		return i;
	((struct bufsel_conf *)dst)->legacy = (enum bufsel_legacy)i;
	return 0;
}

static void show_legacy(const void *src, char *buf, size_t len)
{
	snprintf(buf, len, "%s", legacy_names[((const struct bufsel_conf *)src)->legacy]);
}

static int parse_fail_alloc(void *dst, const char *v)
{
	uint64_t n;
	if (parse_u64(v, UINT32_MAX, &n))
		return -EINVAL;
	((struct bufsel_conf *)dst)->fail_alloc = (uint32_t)n;
	return 0;
}

static void show_fail_alloc(const void *src, char *buf, size_t len)
{
	snprintf(buf, len, "%u", ((const struct bufsel_conf *)src)->fail_alloc);
}

static int parse_cap(void *dst, const char *v)
{
	uint64_t n;
	if (parse_u64(v, 65535, &n))
		return -EINVAL;
	((struct conf_group *)dst)->cap = (uint32_t)n;
	return 0;
}

static void show_cap(const void *src, char *buf, size_t len)
{
	snprintf(buf, len, "%u", ((const struct conf_group *)src)->cap);
}

/* The kernel's MAX_RW_COUNT is below INT32_MAX, so this bounds nothing real. */
static int parse_max_len(void *dst, const char *v)
{
	uint64_t n;
	if (parse_u64(v, INT32_MAX, &n))
		return -EINVAL;
	((struct conf_group *)dst)->max_len = (uint32_t)n;
	return 0;
}

static void show_max_len(const void *src, char *buf, size_t len)
{
	snprintf(buf, len, "%u", ((const struct conf_group *)src)->max_len);
}

/*
 * A probability written "0", "1", or "0." / "1." and 1 to 9 decimals: exact
 * in billionths, with no floating point, so no locale can change its meaning.
 */
static int parse_rate(void *dst, const char *v)
{
	uint32_t ppb, scale = CONF_RATE_ONE / 10;
	if (*v != '0' && *v != '1')
		return -EINVAL;
	ppb = *v == '1' ? CONF_RATE_ONE : 0;
	if (v[1] == '.') {
		const char *p = v + 2;
		if (!*p)
			return -EINVAL;
		for (; *p; p++) {
			if (*p < '0' || *p > '9' || !scale)
				return -EINVAL;
			ppb += (uint32_t)(*p - '0') * scale;
			scale /= 10;
		}
	} else if (v[1]) {
		return -EINVAL;
	}
	if (ppb > CONF_RATE_ONE)
		return -EINVAL;
	((struct conf_group *)dst)->enobufs_ppb = ppb;
	return 0;
}

static void show_rate(const void *src, char *buf, size_t len)
{
	uint32_t ppb = ((const struct conf_group *)src)->enobufs_ppb;
	char frac[16];
	int n = snprintf(frac, sizeof(frac), "%09u", ppb % CONF_RATE_ONE);
	while (n > 0 && frac[n - 1] == '0')
		frac[--n] = '\0';
	snprintf(buf, len, "%u%s%s", ppb / CONF_RATE_ONE, n ? "." : "", frac);
}

static int parse_seed(void *dst, const char *v)
{
	uint64_t n;
	if (parse_u64(v, UINT64_MAX, &n))
		return -EINVAL;
	((struct conf_group *)dst)->seed = n;
	return 0;
}

static void show_seed(const void *src, char *buf, size_t len)
{
	snprintf(buf, len, "%llu", (unsigned long long)((const struct conf_group *)src)->seed);
}

#define GROUP_FIELD(f) .offset = offsetof(struct conf_group, f), .size = sizeof(((struct conf_group *)0)->f)

const struct conf_option conf_options[CONF_KEYS] = {
	[CONF_MODE] = {
		.name = "mode", .scope = CONF_SCOPE_GLOBAL,
		.values = "emulate|passthrough", .expect = "one of emulate|passthrough", .dflt = "emulate",
		.help = "emulate: bufsel owns the ring and emulates buffer selection; passthrough: the shim stays loaded but rings go to the kernel untouched (the control arm of an A/B run)",
		.parse = parse_mode, .show = show_mode,
	},
	[CONF_LOG] = {
		.name = "log", .scope = CONF_SCOPE_GLOBAL,
		.values = "error|warn|info|debug", .expect = "one of error|warn|info|debug", .dflt = "warn",
		.help = "verbosity on stderr, every line prefixed 'bufsel:'; debug logs each intercepted call with its calling site",
		.parse = parse_log, .show = show_log,
	},
	[CONF_KERNEL] = {
		.name = "kernel", .scope = CONF_SCOPE_GLOBAL,
		.values = "native|X.Y (5.1 or later)", .expect = "one of native|X.Y (5.1 or later)", .dflt = "native",
		.help = "behave as on that kernel: bufsel's own requests use nothing newer, and features the program asks for that the kernel lacks are refused as it refuses them (flags, opcodes, feature bits and probe rows newer than it; buffer selection stays)",
		.parse = parse_kernel, .show = show_kernel,
	},
	[CONF_STATS] = {
		.name = "stats", .scope = CONF_SCOPE_GLOBAL,
		.values = "PATH|-|(empty)", .expect = "a path shorter than 4096 bytes", .dflt = "",
		.help = "where statistics go: a file, '-' for stderr, empty for nowhere; a relative path is taken from the working directory of the process that writes it",
		.parse = parse_stats, .show = show_stats,
	},
	[CONF_PATCH] = {
		.name = "patch", .scope = CONF_SCOPE_GLOBAL,
		.values = "on|off", .expect = "one of on|off", .dflt = "on",
		.help = "after the first trap at an io_uring call site in the program's code, rewrite that site to jump into bufsel directly (no signal on later calls); off: every such call traps",
		.parse = parse_patch, .show = show_patch,
	},
	[CONF_TRAP] = {
		.name = "trap", .scope = CONF_SCOPE_GLOBAL,
		.values = "auto|dispatch|seccomp", .expect = "one of auto|dispatch|seccomp", .dflt = "auto",
		.help = "how inline io_uring calls are caught: dispatch (Syscall User Dispatch, Linux 5.11+: per thread, nothing outlives execve), seccomp (a filter every child inherits, across execve too; without CAP_SYS_ADMIN it sets no_new_privs), auto: dispatch where the kernel has it, else seccomp",
		.parse = parse_trap, .show = show_trap,
	},
	[CONF_FAIL_ALLOC] = {
		.name = "fail_alloc", .scope = CONF_SCOPE_GLOBAL,
		.values = "0..4294967295", .expect = "an integer in 0..4294967295", .dflt = "0",
		.help = "fault injection: the Nth memory allocation bufsel makes for its rings (buffer pools, requests, held chains, its own completions) fails, counted from 1 from the program's start (a forked child goes on from its parent's count), and bufsel says so on stderr; 0: none",
		.parse = parse_fail_alloc, .show = show_fail_alloc,
	},
	[CONF_RINGS] = {
		.name = "rings", .scope = CONF_SCOPE_GLOBAL,
		.values = "auto|emulate|kernel", .expect = "one of auto|emulate|kernel", .dflt = "auto",
		.help = "who keeps the program's buffer rings (IORING_REGISTER_PBUF_RING): emulate, bufsel in user space, on any kernel; kernel, the kernel (where it has none, registering fails as it does natively); auto: bufsel where the kernel, or the one BUFSEL_KERNEL names, lacks buffer rings or a ring flag the program asks for, or where a cap, max_len or enobufs_rate applies to the group, else the kernel",
		.parse = parse_rings, .show = show_rings,
	},
	[CONF_LEGACY] = {
		.name = "legacy", .scope = CONF_SCOPE_GLOBAL,
		.values = "kernel|latest", .expect = "one of kernel|latest", .dflt = "kernel",
		.help = "the rules of legacy provided buffers (PROVIDE_BUFFERS groups): kernel, those of the kernel the program meets (BUFSEL_KERNEL's, else the kernel beneath; before 5.18 the newest buffer first, a receive bound at its first attempt, ...: docs/kernel-semantics.md), so that a program sees what it sees natively there; latest, 6.18's on any kernel, for a program written for them",
		.parse = parse_legacy, .show = show_legacy,
	},
	[CONF_CAP] = {
		.name = "cap", .scope = CONF_SCOPE_GROUP,
		.values = "0..65535", .expect = "an integer in 0..65535", .dflt = "0",
		.help = "at most this many buffers of a group handed out at once: the group's effective pool size; 0: no cap",
		.parse = parse_cap, .show = show_cap, GROUP_FIELD(cap),
	},
	[CONF_MAX_LEN] = {
		.name = "max_len", .scope = CONF_SCOPE_GROUP,
		.values = "0..2147483647", .expect = "an integer in 0..2147483647", .dflt = "0",
		.help = "hand out at most this many bytes of each buffer; 0: the whole buffer",
		.parse = parse_max_len, .show = show_max_len, GROUP_FIELD(max_len),
	},
	[CONF_ENOBUFS_RATE] = {
		.name = "enobufs_rate", .scope = CONF_SCOPE_GROUP,
		.values = "0..1", .expect = "a decimal in 0..1 with at most 9 decimals, such as 0.25",
		.dflt = "0",
		.help = "probability that a selection fails with -ENOBUFS although buffers remain",
		.parse = parse_rate, .show = show_rate, GROUP_FIELD(enobufs_ppb),
	},
	[CONF_SEED] = {
		.name = "seed", .scope = CONF_SCOPE_GROUP,
		.values = "0..18446744073709551615", .expect = "an integer in 0..18446744073709551615",
		.dflt = "1",
		.help = "seed of the injected faults: the same seed and the same program give the same faults",
		.parse = parse_seed, .show = show_seed, GROUP_FIELD(seed),
	},
};
const size_t conf_option_count = CONF_KEYS;

void conf_defaults(struct bufsel_conf *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t k = 0; k < CONF_KEYS; k++) {
		const struct conf_option *o = &conf_options[k];
		o->parse(o->scope == CONF_SCOPE_GLOBAL ? (void *)c : (void *)&c->all, o->dflt);
	}
}

static int group_ok(const struct conf_group *g)
{
	return g->cap <= 65535 && g->max_len <= INT32_MAX && g->enobufs_ppb <= CONF_RATE_ONE;
}

int conf_check(const struct bufsel_conf *c)
{
	if ((unsigned)c->mode > BUFSEL_MODE_PASSTHROUGH || (unsigned)c->log > BUFSEL_LOG_DEBUG ||
	    (unsigned)c->patch > 1 || (unsigned)c->trap > BUFSEL_TRAP_SECCOMP)
		return -EINVAL;
	if (c->kernel && (c->kernel < (5u << 8 | 1) || c->kernel > 0xffff))
		return -EINVAL;
	if (!memchr(c->stats, '\0', sizeof(c->stats)) || !memchr(c->file, '\0', sizeof(c->file)))
		return -EINVAL;
	if ((unsigned)c->file_origin > CONF_FILE_SYSTEM || (c->file_origin == CONF_FILE_NONE) != !c->file[0])
		return -EINVAL;
	if (!group_ok(&c->all) || c->ngroups > CONF_MAX_GROUPS)
		return -EINVAL;
	for (unsigned i = 0; i < c->ngroups; i++) {
		if (!group_ok(&c->group[i]) || (i && c->group_id[i - 1] >= c->group_id[i]))
			return -EINVAL;
		/* A key the group does not set is the all-groups value. */
		for (size_t k = 0; k < CONF_GROUP_KEYS; k++) {
			const struct conf_option *o = &conf_options[CONF_GROUP_KEY0 + k];
			if (c->group_from[i][k] == CONF_FROM_DEFAULT &&
			    memcmp((const char *)&c->group[i] + o->offset, (const char *)&c->all + o->offset, o->size))
				return -EINVAL;
		}
	}
	return 0;
}
