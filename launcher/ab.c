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

#include "launcher/ab_env.h"
#include "launcher/ab_json.h"
#include "launcher/ab_measures.h"
#include "launcher/ab_messages.h"
#include "launcher/ab_options.h"
#include "launcher/ab_pool_stats.h"
#include "launcher/ab_print.h"
#include "launcher/ab_run.h"
#include "launcher/ab_state.h"
#include "launcher/ab_tmpdir.h"
#include "launcher/library.h"
#include "launcher/program.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

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
		ab_fatal("sigprocmask");
	ab.sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (ab.sigfd < 0)
		ab_fatal("signalfd");
}

int ab_main(int argc, char **argv)
{
	ab.status = "ok";
	int first = ab_parse_options(argc, argv);
	if (first >= argc)
		ab_usage_error("no PROGRAM given");
	ab.argv = &argv[first];
	const char *name = argv[first];

	int r = program_resolve(name, ab.path, sizeof(ab.path));
	if (r == ENOENT)
		ab_usage_error("%s: %s", name, strchr(name, '/') ? strerror(r) : "command not found");
	if (r)
		ab_usage_error("%s: %s", name, strerror(r));

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
			ab_usage_error("--json %s: %s", ab.json_path, strerror(errno));
	}

	ab_make_tmpdir();
	char *preload = any_bufsel ? ab_preload_with_bufsel() : NULL;
	for (unsigned i = 0; i < ab.narms; i++) {
		struct arm *a = &ab.arms[i];
		a->runs = ab_xcalloc(ab.runs, sizeof(*a->runs));
		a->warm = ab_xcalloc(ab.warmup, sizeof(*a->warm));
		ab_build_env(a, preload);
		if (a->def->mode)
			ab_check_conf(a);
	}
	free(preload);
	for (unsigned m = 0; m < M_BUILTIN; m++)
		ab.measure[ab.nmeasures++] = (char *)ab_builtin_names[m];

	ab.progress = isatty(2);
	setup_signals();
	ab_run_all();

	for (unsigned i = 0; i < ab.narms; i++)
		if (ab.arms[i].def->mode && !ab.arms[i].failed)
			ab_read_stats(&ab.arms[i]);
	ab_print_report();
	if (fflush(stdout) || ferror(stdout)) {
		ab_warn("writing the report: %s", strerror(errno));
		return 1;
	}
	if (ab.json)
		ab_write_json();
	return 0;
}
