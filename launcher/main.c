/*
 * bufsel [OPTIONS] [--] PROGRAM [ARGS...]
 *
 * Puts libbufsel.so on LD_PRELOAD, sets the BUFSEL_* variables from the
 * options, and execs PROGRAM.  Everything that would make the library fail to
 * load, or load and then reject its configuration, is checked here first, so
 * the user gets one clear line instead of a program running without bufsel.
 * The --NAME options are generated from conf/'s options table, so a new
 * library option is accepted and documented here without touching this file;
 * --set KEY=VALUE reaches every key, per-group ones included, and
 * --check-conf loads the configuration as the library will and stops there.
 */
#include "launcher/ab.h"
#include "launcher/launcher.h"
#include "launcher/library.h"
#include "launcher/messages.h"
#include "launcher/program.h"
#include "launcher/report.h"
#include "conf/options.h"
#include "version.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

static void help(void)
{
	char var[64], buf[16384];

	printf("Usage: bufsel [OPTIONS] [--] PROGRAM [ARGS...]\n"
	       "       bufsel [OPTIONS] --check-conf [FILE]\n"
	       "       bufsel report [--margin PCT] [--percentile P] [--plot OUT.svg|OUT.png] STATS.json\n"
	       "       bufsel ab [--runs N] [--warmup N] [--arms LIST] [--json FILE] [...] -- PROGRAM [ARGS...]\n"
	       "\n"
	       "Runs PROGRAM with %s preloaded: bufsel intercepts the program's\n"
	       "io_uring rings and gives it a shadow ring; the program is not modified.\n"
	       "PROGRAM is looked up in PATH like a shell does and must be a dynamically\n"
	       "linked x86-64 executable or a #! script.\n"
	       "\n"
	       "Options (they come before PROGRAM; '--' ends them; --OPT=VALUE also works):\n",
	       BUFSEL_LIB_NAME);
	for (size_t i = 0; i < conf_option_count; i++) {
		char left[80], err[256];
		/* The default is valid, so this only names the variable. */
		conf_setting(conf_options[i].name, strlen(conf_options[i].name), conf_options[i].dflt, var,
			     sizeof(var), err, sizeof(err));
		snprintf(left, sizeof(left), "--%s %s", conf_options[i].name, conf_options[i].values);
		printf("  %-30s set %s for PROGRAM\n", left, var);
	}
	printf("  %-30s set KEY's variable for PROGRAM (repeatable);\n"
	       "  %-30s one group's key is group.<bgid>.KEY\n"
	       "  %-30s use FILE as configuration file (BUFSEL_CONF)\n"
	       "  %-30s check FILE (else BUFSEL_CONF or the default\n"
	       "  %-30s file) and the BUFSEL_* variables, run nothing;\n"
	       "  %-30s with --log info, print every setting\n"
	       "  %-30s preload this library (default: see BUFSEL_LIB)\n"
	       "  %-30s print this help and exit\n"
	       "  %-30s print the version and exit\n",
	       "--set KEY=VALUE", "", "--conf FILE", "--check-conf [FILE]", "", "", "--lib PATH", "-h, --help",
	       "--version");
	printf("\n"
	       "bufsel report reads the file BUFSEL_STATS names and recommends how many\n"
	       "buffers of what length each group needs (bufsel report --help). A program\n"
	       "called report runs as 'bufsel -- report'.\n");
	printf("\n"
	       "bufsel ab runs PROGRAM natively and under bufsel in alternating rounds and\n"
	       "prints each arm's medians, the bufsel/native ratios round by round and the\n"
	       "pool statistics (bufsel ab --help). A program called ab runs as 'bufsel -- ab'.\n");

	conf_describe(buf, sizeof(buf));
	printf("\n"
	       "Configuration keys (KEY = VALUES): each is read from the configuration\n"
	       "file and from its variable; the variable wins, then the file, then the\n"
	       "default. cap, max_len, enobufs_rate and seed apply to all groups, or to\n"
	       "one group as group.<bgid>.KEY (bgid 0..65535), which wins over the\n"
	       "all-groups key wherever each comes from:\n"
	       "%s",
	       buf);
	printf("\n"
	       "Configuration file: BUFSEL_CONF when set (empty: none), else\n"
	       "$XDG_CONFIG_HOME/bufsel/bufsel.conf (XDG_CONFIG_HOME unset or relative:\n"
	       "$HOME/.config/bufsel/bufsel.conf) when it exists, else /etc/bufsel.conf when\n"
	       "it exists. Lines are 'KEY = VALUE', '#' comments and blank lines; a key\n"
	       "may appear once. docs/configuration.md has the details.\n");
	printf("\n"
	       "Environment (options above override the variables; an unknown BUFSEL_*\n"
	       "variable or a bad value stops bufsel before PROGRAM starts):\n"
	       "  %-16s FILE\n"
	       "      the configuration file, as above; --conf sets it\n"
	       "  %-16s PATH\n"
	       "      library to preload when --lib is not given; default DIR/%s,\n"
	       "      then %s/%s, then DIR/../lib/%s, DIR being\n"
	       "      the bufsel executable's directory.\n"
	       "      Used by the launcher only and removed from PROGRAM's environment.\n"
	       "  %s\n"
	       "      the library's absolute path is appended (':'-separated) to an\n"
	       "      existing list, once; other preloaded libraries are kept.\n",
	       "BUFSEL_CONF", "BUFSEL_LIB", BUFSEL_LIB_NAME, BUFSEL_LIBDIR, BUFSEL_LIB_NAME, BUFSEL_LIB_NAME,
	       "LD_PRELOAD");

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
	       "variable or configuration file, library missing or unusable). With\n"
	       "--check-conf: 0 when the configuration is valid, 1 when it is not.\n");
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

/* Sets var=val for PROGRAM, exiting on failure. */
static void set_var(const char *var, const char *val)
{
	if (setenv(var, val, 1))
		fail(EXIT_CONFIG, "cannot set %s: %s", var, strerror(errno));
}

/*
 * Checks key=val as the configuration file would, then sets its variable.
 * A problem reads "--set KEY: ..." or, for --KEY VALUE, "--KEY: ...".
 */
static void set_key(const char *opt, const char *key, size_t klen, const char *val)
{
	char var[64], err[1024];
	if (conf_setting(key, klen, val, var, sizeof(var), err, sizeof(err)))
		usage_error("%s%s", opt, err);
	set_var(var, val);
}

/*
 * Parses the options; returns the index of PROGRAM in argv.  *check is set
 * by --check-conf, *check_file to its FILE when one follows.
 */
static int parse_options(int argc, char **argv, const char **lib, int *check, const char **check_file)
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
		if (klen == 10 && !strncmp(key, "check-conf", 10)) {
			/* FILE is optional: a following option is not taken for it. */
			*check = 1;
			if (eq)
				*check_file = eq + 1;
			else if (i + 1 < argc && argv[i + 1][0] != '-')
				*check_file = argv[++i];
			continue;
		}
		const struct conf_option *opt = NULL;
		for (size_t k = 0; k < conf_option_count && !opt; k++)
			if (strlen(conf_options[k].name) == klen && !strncmp(conf_options[k].name, key, klen))
				opt = &conf_options[k];
		int is_lib = klen == 3 && !strncmp(key, "lib", 3);
		int is_set = klen == 3 && !strncmp(key, "set", 3);
		int is_conf = klen == 4 && !strncmp(key, "conf", 4);
		if (!opt && !is_lib && !is_set && !is_conf)
			usage_error("unknown option '%.*s'", (int)(klen + 2), a);

		if (eq)
			val = eq + 1;
		else if (i + 1 < argc)
			val = argv[++i];
		else
			val = NULL;
		/* An empty value is given to the table's check: stats accepts one. */
		if (!val || (!*val && !opt))
			usage_error("--%.*s needs a value: %s", (int)klen, key,
				    opt ? opt->values : is_set ? "KEY=VALUE" : is_conf ? "FILE" : "PATH");

		if (is_lib) {
			*lib = val;
		} else if (is_conf) {
			/* Absolute, so a child that changes directory reads the same file. */
			char abs[PATH_MAX];
			set_var("BUFSEL_CONF", realpath(val, abs) ? abs : val);
		} else if (is_set) {
			const char *veq = strchr(val, '=');
			if (!veq)
				usage_error("--set %s: expected KEY=VALUE", val);
			set_key("--set ", val, (size_t)(veq - val), veq + 1);
		} else {
			set_key("--", opt->name, strlen(opt->name), val);
		}
	}
	return i;
}

static void print_setting(void *arg, const char *line)
{
	(void)arg;
	printf("bufsel: %s\n", line);
}

/* --check-conf: loads what the library would load, reports, and exits. */
static noreturn void check_conf(const char *file)
{
	static struct bufsel_conf conf;
	char err[16384];

	if (file)
		set_var("BUFSEL_CONF", file);
	if (conf_load(&conf, environ, err, sizeof(err))) {
		fputs(err, stderr);
		exit(EXIT_CONFIG);
	}
	if (conf.log >= BUFSEL_LOG_WARN)
		fputs(err, stderr);	/* warnings only, if any */
	printf("bufsel: configuration OK\n");
	if (conf.log >= BUFSEL_LOG_INFO)
		conf_show(&conf, print_setting, NULL);
	exit(0);
}

int main(int argc, char **argv)
{
	const char *opt_lib = NULL, *check_file = NULL;
	char lib[PATH_MAX], path[PATH_MAX], err[16384];
	static struct bufsel_conf conf;
	int check = 0;

	/* A subcommand only as the first word: after an option or '--' it is a PROGRAM. */
	if (argc > 1 && !strcmp(argv[1], "report"))
		return report_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "ab"))
		return ab_main(argc - 1, argv + 1);

	int first = parse_options(argc, argv, &opt_lib, &check, &check_file);
	if (check) {
		if (first < argc)
			usage_error("--check-conf runs nothing, but '%s' follows", argv[first]);
		check_conf(check_file);
	}
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
