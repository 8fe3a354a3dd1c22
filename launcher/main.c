/*
 * bufsel [OPTIONS] [--] PROGRAM [ARGS...]
 *
 * Puts libbufsel.so on LD_PRELOAD, sets the BUFSEL_* variables from the
 * options, and execs PROGRAM.  Everything that would make the library fail to
 * load, or load and then reject its configuration, is checked here first, so
 * the user gets one clear line instead of a program running without bufsel.
 * The --NAME options are generated from conf/'s options table, so a new
 * library option is accepted and documented here without touching this file.
 */
#include "launcher/launcher.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

enum bufsel_log_level launcher_log = BUFSEL_LOG_WARN;

void fail(int status, const char *fmt, ...)
{
	va_list ap;
	fputs("bufsel: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(status);
}

void say(enum bufsel_log_level level, const char *fmt, ...)
{
	va_list ap;
	if (level > launcher_log)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void env_name(char *dst, size_t len, const char *opt)
{
	size_t n = (size_t)snprintf(dst, len, "BUFSEL_%s", opt);
	for (size_t i = 0; i < n && i < len; i++)
		if (dst[i] >= 'a' && dst[i] <= 'z')
			dst[i] = (char)(dst[i] - 'a' + 'A');
}

static void help(void)
{
	char name[64], buf[8192];

	printf("Usage: bufsel [OPTIONS] [--] PROGRAM [ARGS...]\n"
	       "\n"
	       "Runs PROGRAM with %s preloaded: bufsel intercepts the program's\n"
	       "io_uring rings and gives it a shadow ring; the program is not modified.\n"
	       "PROGRAM is looked up in PATH like a shell does and must be a dynamically\n"
	       "linked x86-64 executable or a #! script.\n"
	       "\n"
	       "Options (they come before PROGRAM; '--' ends them; --OPT=VALUE also works):\n",
	       BUFSEL_LIB_NAME);
	for (size_t i = 0; i < conf_option_count; i++) {
		char left[80];
		env_name(name, sizeof(name), conf_options[i].name);
		snprintf(left, sizeof(left), "--%s %s", conf_options[i].name, conf_options[i].values);
		printf("  %-30s set %s for PROGRAM\n", left, name);
	}
	printf("  %-30s preload this library (default: see BUFSEL_LIB)\n"
	       "  %-30s print this help and exit\n"
	       "  %-30s print the version and exit\n",
	       "--lib PATH", "-h, --help", "--version");

	conf_describe(buf, sizeof(buf));
	printf("\n"
	       "Environment (options above override the variables; an unknown BUFSEL_*\n"
	       "variable or a bad value stops bufsel before PROGRAM starts):\n"
	       "%s"
	       "  %-16s PATH\n"
	       "      library to preload when --lib is not given; default DIR/%s,\n"
	       "      then DIR/../lib/%s, DIR being the bufsel executable's directory.\n"
	       "      Used by the launcher only and removed from PROGRAM's environment.\n"
	       "  %s\n"
	       "      the library's absolute path is appended (':'-separated) to an\n"
	       "      existing list, once; other preloaded libraries are kept.\n",
	       buf, "BUFSEL_LIB", BUFSEL_LIB_NAME, BUFSEL_LIB_NAME, "LD_PRELOAD");

	printf("\n"
	       "Children and exec:\n"
	       "  Children inherit LD_PRELOAD and the BUFSEL_* variables and run under\n"
	       "  bufsel too. Statically linked executables are never reached by\n"
	       "  LD_PRELOAD, so bufsel refuses to launch one. What happens to a child that\n"
	       "  execs without bufsel (a static program, or a cleared environment) is\n"
	       "  described in the README, section \"Children and exec\".\n"
	       "\n"
	       "Exit status: PROGRAM's own once it runs; otherwise 127 PROGRAM not found,\n"
	       "126 PROGRAM cannot be executed or cannot run under bufsel (static, 32-bit,\n"
	       "another architecture), 2 usage error, 1 configuration error (bad BUFSEL_*\n"
	       "variable, library missing or unusable).\n");
}

static noreturn void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static noreturn void usage_error(const char *fmt, ...)
{
	va_list ap;
	fputs("bufsel: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (bufsel --help)\n", stderr);
	exit(EXIT_USAGE);
}

/* Parses the options; returns the index of PROGRAM in argv. */
static int parse_options(int argc, char **argv, const char **lib)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--"))
			return i + 1;
		if (a[0] != '-' || !a[1])
			return i;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			help();
			exit(0);
		}
		if (!strcmp(a, "--version")) {
			printf("bufsel %s\n", BUFSEL_VERSION);
			exit(0);
		}
		if (a[1] != '-')
			usage_error("unknown option '%s'", a);

		const char *key = a + 2, *eq = strchr(key, '='), *val;
		size_t klen = eq ? (size_t)(eq - key) : strlen(key);
		const struct conf_option *opt = NULL;
		for (size_t k = 0; k < conf_option_count && !opt; k++)
			if (strlen(conf_options[k].name) == klen && !strncmp(conf_options[k].name, key, klen))
				opt = &conf_options[k];
		int is_lib = klen == 3 && !strncmp(key, "lib", 3);
		if (!opt && !is_lib)
			usage_error("unknown option '%.*s'", (int)(klen + 2), a);

		if (eq)
			val = eq + 1;
		else if (i + 1 < argc)
			val = argv[++i];
		else
			val = NULL;
		if (!val || !*val)
			usage_error("--%.*s needs a value: %s", (int)klen, key, opt ? opt->values : "PATH");

		if (is_lib) {
			*lib = val;
			continue;
		}
		struct bufsel_conf scratch;
		if (opt->parse(&scratch, val))
			usage_error("--%s: '%s' is not one of %s", opt->name, val, opt->values);
		char name[64];
		env_name(name, sizeof(name), opt->name);
		if (setenv(name, val, 1))
			fail(EXIT_CONFIG, "cannot set %s: %s", name, strerror(errno));
	}
	return i;
}

int main(int argc, char **argv)
{
	const char *opt_lib = NULL;
	char lib[PATH_MAX], path[PATH_MAX], err[4096];
	struct bufsel_conf conf;

	int first = parse_options(argc, argv, &opt_lib);
	if (first >= argc)
		usage_error("no PROGRAM given");
	const char *name = argv[first];

	/* BUFSEL_LIB is the launcher's; the library would report it as unknown. */
	char *env_lib = getenv("BUFSEL_LIB");
	if (env_lib && !(env_lib = strdup(env_lib)))
		fail(EXIT_CONFIG, "out of memory");
	unsetenv("BUFSEL_LIB");

	if (conf_load(&conf, environ, err, sizeof(err))) {
		fputs(err, stderr);
		exit(EXIT_CONFIG);
	}
	launcher_log = conf.log;

	library_find(opt_lib, env_lib, lib);
	free(env_lib);

	int r = program_resolve(name, path, sizeof(path));
	if (r == ENOENT)
		fail(EXIT_NOT_FOUND, "%s: %s", name, strchr(name, '/') ? strerror(r) : "command not found");
	if (r)
		fail(EXIT_CANNOT_RUN, "%s: %s", name, strerror(r));
	int script = program_check(name, path);

	library_preload(getenv("LD_PRELOAD"), lib);
	say(BUFSEL_LOG_INFO, "bufsel: launching %s with %s preloaded", name, lib);
	say(BUFSEL_LOG_DEBUG, "bufsel: exec %s, LD_PRELOAD=%s", path, getenv("LD_PRELOAD"));

	/* path holds a slash, so execvp() runs exactly the inspected file, keeping its ENOEXEC-to-/bin/sh fallback. */
	execvp(path, &argv[first]);
	r = errno;
	if (r == ENOENT && script)
		fail(EXIT_NOT_FOUND, "%s: bad interpreter: %s", name, strerror(r));
	fail(r == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN, "%s: %s", name, strerror(r));
}
