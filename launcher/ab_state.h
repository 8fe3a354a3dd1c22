/*
 * What `bufsel ab` keeps from its command line to its report: the arms, the
 * results of every run, the statistics files of the last round, and the one
 * state, ab, that every launcher/ab_*.c file reads and fills.  ab is a
 * single-threaded process, so the state is a plain global without a lock.
 */
#ifndef BUFSEL_LAUNCHER_AB_STATE_H
#define BUFSEL_LAUNCHER_AB_STATE_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define AB_MAX_MEASURES 64		/* the built-in measures and the program's metrics */
#define AB_MAX_SETS 256
#define AB_LINE_MAX 4096		/* a longer stdout line is not a bench: line */
#define AB_TAIL 8192			/* bytes of stderr kept for a failure's message */

struct arm_def {
	const char *name;
	const char *mode;	/* BUFSEL_MODE; NULL: bufsel is not loaded */
	const char *kernel;	/* BUFSEL_KERNEL */
	const char *patch;	/* BUFSEL_PATCH */
	const char *help;
};

/* The rows of arm_defs[] in ab_options.c, which checks the count. */
#define ARM_DEFS ((size_t)6)

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
struct ab_state {
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
	struct arm *aa;			/* native2: native again, the run's noise floor; NULL without */
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
};

extern struct ab_state ab;

#endif
