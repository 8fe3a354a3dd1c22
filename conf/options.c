/*
 * The options table and the environment reader.  Runs in the library's
 * constructor, before the program's main and possibly before libc is fully
 * set up for the program, so it allocates nothing: it walks envp and writes
 * problems into the caller's buffer.
 */
#include "conf/options.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static int parse_mode(struct bufsel_conf *c, const char *v)
{
	if (!strcmp(v, "emulate"))
		c->mode = BUFSEL_MODE_EMULATE;
	else if (!strcmp(v, "passthrough"))
		c->mode = BUFSEL_MODE_PASSTHROUGH;
	else
		return -1;
	return 0;
}

static int parse_log(struct bufsel_conf *c, const char *v)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(v, names[i])) {
			c->log = (enum bufsel_log_level)i;
			return 0;
		}
	}
	return -1;
}

/* "native", or a version "X.Y" from 5.1 (io_uring's first) on. */
static int parse_kernel(struct bufsel_conf *c, const char *v)
{
	unsigned major, minor;
	char tail;
	if (!strcmp(v, "native")) {
		c->kernel = 0;
		return 0;
	}
	if (sscanf(v, "%u.%u%c", &major, &minor, &tail) != 2 || major > 255 || minor > 255 ||
	    (major << 8 | minor) < (5u << 8 | 1))
		return -1;
	c->kernel = major << 8 | minor;
	return 0;
}

const struct conf_option conf_options[] = {
	{ "mode", "emulate|passthrough", "emulate",
	  "emulate: bufsel owns the ring and emulates buffer selection; passthrough: the shim stays loaded but rings go to the kernel untouched (the control arm of an A/B run)",
	  parse_mode },
	{ "kernel", "native|X.Y (5.1 or later)", "native",
	  "behave as on that kernel: bufsel's own requests use nothing newer, and features the program asks for that the kernel lacks are refused as it refuses them (5.6: no buffer rings)",
	  parse_kernel },
	{ "log", "error|warn|info|debug", "warn",
	  "verbosity on stderr, every line prefixed 'bufsel:'; debug logs each intercepted call with its calling site",
	  parse_log },
};
const size_t conf_option_count = sizeof(conf_options) / sizeof(conf_options[0]);

/* Variables the launcher reads that are not library options. */
static const char *const conf_reserved[] = { "BUFSEL_LIB" };

static void env_name(char *dst, size_t len, const char *opt)
{
	size_t n = (size_t)snprintf(dst, len, "BUFSEL_%s", opt);
	for (size_t i = 7; i < n && i < len; i++)
		if (dst[i] >= 'a' && dst[i] <= 'z')
			dst[i] = (char)(dst[i] - 'a' + 'A');
}

static void problem(char *err, size_t errlen, size_t *used, const char *fmt, ...)
{
	if (*used >= errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(err + *used, errlen - *used, fmt, ap);
	va_end(ap);
	if (n > 0)
		*used += (size_t)n;
	if (*used >= errlen)
		*used = errlen - 1;
}

int conf_load(struct bufsel_conf *out, char *const *envp, char *err, size_t errlen)
{
	int problems = 0;
	size_t used = 0;
	char name[64];

	if (errlen)
		err[0] = '\0';
	for (size_t i = 0; i < conf_option_count; i++)
		conf_options[i].parse(out, conf_options[i].dflt);
	for (char *const *e = envp; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (strncmp(*e, "BUFSEL_", 7) || !eq)
			continue;
		size_t klen = (size_t)(eq - *e);
		const struct conf_option *opt = NULL;
		for (size_t i = 0; i < conf_option_count && !opt; i++) {
			env_name(name, sizeof(name), conf_options[i].name);
			if (strlen(name) == klen && !strncmp(name, *e, klen))
				opt = &conf_options[i];
		}
		int reserved = 0;
		for (size_t i = 0; i < sizeof(conf_reserved) / sizeof(conf_reserved[0]); i++)
			reserved |= strlen(conf_reserved[i]) == klen && !strncmp(conf_reserved[i], *e, klen);
		if (reserved)
			continue;
		if (!opt) {
			problem(err, errlen, &used, "bufsel: %.*s: unknown variable (bufsel --help lists them)\n",
				(int)klen, *e);
			problems++;
			continue;
		}
		if (opt->parse(out, eq + 1)) {
			problem(err, errlen, &used, "bufsel: %.*s: '%s' is not one of %s\n",
				(int)klen, *e, eq + 1, opt->values);
			problems++;
		}
	}
	return problems;
}

size_t conf_describe(char *buf, size_t len)
{
	size_t used = 0;
	char name[64];
	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < conf_option_count; i++) {
		env_name(name, sizeof(name), conf_options[i].name);
		problem(buf, len, &used, "  %-16s %s (default %s)\n      %s\n", name,
			conf_options[i].values, conf_options[i].dflt, conf_options[i].help);
	}
	return used;
}
