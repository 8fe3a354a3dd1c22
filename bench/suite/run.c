/*
 * Running one workload through `bufsel ab` (run.h).  ab's failure is the
 * workload's, not the suite's: it is kept as the result's one-line error,
 * with whatever ab measured before it, and the suite goes on.  Only what
 * keeps ab from being started at all stops the suite.
 */
#define _GNU_SOURCE
#include "bench/suite/run.h"

#include "bench/suite/state.h"
#include "bench/suite/util.h"
#include "bench/suite/workloads.h"
#include "launcher/json.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ab's first message (its lines start "bufsel: "; the program's stderr is indented), for a one-line reason. */
static void first_message(const char *text, char *out, size_t len)
{
	const char *p = strstr(text, "bufsel: ");
	while (p && p != text && p[-1] != '\n')
		p = strstr(p + 1, "bufsel: ");
	if (p)
		snprintf(out, len, "%.*s", (int)strcspn(p, "\n"), p);
}

void suite_run_workload(size_t index)
{
	const struct workload *w = &suite_workloads[index];
	struct result *r = &suite_S.results[index];
	char prog[PATH_MAX], out[PATH_MAX], err[PATH_MAX], json[PATH_MAX], runs[16], warmup[16], timeout[32];
	const char *argv[32];
	int n = 0;

	snprintf(prog, sizeof(prog), "%s/%s", suite_S.set.progs, w->prog);
	snprintf(out, sizeof(out), "%s/ab/%s.txt", suite_S.set.out, w->name);
	snprintf(err, sizeof(err), "%s/ab/%s.err", suite_S.set.out, w->name);
	snprintf(json, sizeof(json), "%s/ab/%s.json", suite_S.set.out, w->name);
	snprintf(runs, sizeof(runs), "%u", suite_S.set.runs);
	snprintf(warmup, sizeof(warmup), "%u", suite_S.set.warmup);
	/* A run that takes ten times what it should is stuck, not slow (idle: about 2 s for 1000 rounds). */
	double rounds = strtod(suite_S.set.idle_rounds, NULL);
	double span = w->span == SPAN_SECONDS ? strtod(suite_S.set.seconds, NULL) : rounds / 500 > 1 ? rounds / 500 : 1;
	snprintf(timeout, sizeof(timeout), "%.0f", 30 + 10 * span);
	unlink(json);

	argv[n++] = suite_S.set.bufsel;
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
	argv[n++] = w->span == SPAN_SECONDS ? suite_S.set.seconds : suite_S.set.idle_rounds;
	argv[n] = NULL;

	posix_spawn_file_actions_t fa;
	pid_t pid;
	if (posix_spawn_file_actions_init(&fa) ||
	    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0) ||
	    posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644) ||
	    posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0644))
		suite_die("out of memory");
	double t0 = suite_now_s();
	int e = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (e)
		suite_die("cannot run %s: %s", argv[0], strerror(e));
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			suite_die("waiting for %s: %s", argv[0], strerror(errno));
	r->elapsed_s = suite_now_s() - t0;
	r->ran = true;
	r->ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	if (!r->ok) {
		size_t len;
		char *text = suite_read_text(err, &len), line[400] = "";
		if (text)
			first_message(text, line, sizeof(line));
		free(text);
		snprintf(r->error, sizeof(r->error), "bufsel ab %s %d: %s",
			 WIFEXITED(status) ? "exited with status" : "was killed by signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), line[0] ? line : "(no message)");
	}
	/* A failed ab still writes what it measured, with the failure. */
	r->text = suite_read_text(json, &r->len);
	if (r->text) {
		char problem[256];
		if (json_parse(&r->doc, r->text, r->len, problem, sizeof(problem)))
			suite_message(r->error, sizeof(r->error), "%s: not JSON: %s", json, problem);
		else
			r->has_doc = true;
	} else if (r->ok) {
		suite_message(r->error, sizeof(r->error), "%s: %s", json, strerror(errno));
	}
}
