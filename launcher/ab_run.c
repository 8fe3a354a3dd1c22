/*
 * The rounds and the runs (ab_run.h).  A run's cost is measured from outside:
 * CLOCK_MONOTONIC around fork and reap, and wait4's rusage; signals arrive
 * through a signalfd (set up by ab_main) in the same poll as the program's
 * output, so a Ctrl-C or SIGCHLD is never lost between a check and a wait.
 * Each run has its own process group, which is killed when it ends.
 */
#define _GNU_SOURCE
#include "launcher/ab_run.h"

#include "launcher/ab_capture.h"
#include "launcher/ab_json.h"
#include "launcher/ab_measures.h"
#include "launcher/ab_messages.h"
#include "launcher/ab_state.h"
#include "launcher/ab_tmpdir.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define AB_GRACE_S 2.0			/* for descendants holding the pipes after the program exited */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static noreturn void interrupted(int sig, const char *label)
{
	if (ab.child > 0) {
		/* Best effort on the way out: the group or the child may be gone already. */
		(void)kill(-ab.child, SIGKILL);
		(void)kill(ab.child, SIGKILL);
		(void)waitpid(ab.child, NULL, 0);
		ab.child = 0;
	}
	ab_warn("%s during the %s: the program was killed; stopping", strsignal(sig), label);
	ab.status = "interrupted";
	if (ab.json)
		ab_write_json();
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
		ab_empty_dir(a->stats_dir);
	if (ab.progress)
		fprintf(stderr, "\r\033[Kbufsel: ab: %s ...", label);
	if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
		ab_fatal("pipe2");

	double t0 = now_s(), t1 = 0, deadline = t0 + ab.timeout_s, reaped_at = 0;
	pid_t pid = fork();
	if (pid < 0)
		ab_fatal("fork");
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
			ab_fatal("poll");
		for (int i = 0; i < 2 && n > 0; i++) {
			if (pfd[i].fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			char chunk[65536];
			ssize_t r = read(pfd[i].fd, chunk, sizeof(chunk));
			if (r > 0) {
				if (i == 0)
					ab_take_stdout(cap, chunk, (size_t)r, res);
				else
					ab_take_stderr(cap, chunk, (size_t)r);
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
	ab_take_stdout(cap, "\n", 1, res);

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
	*tail = ab_stderr_tail(cap);
	return -1;
}

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
void ab_run_all(void)
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
				ab_warn("%s: %s; %s is optional: left out (n/a)", label, why, a->def->name);
				continue;
			}
			ab_warn("%s: %s", label, why);
			print_tail(tail);
			ab.status = "failed";
			ab.failed_arm = a;
			if (ab.json)
				ab_write_json();
			exit(1);
		}
	}
	if (ab.progress)
		fputs("\r\033[K", stderr);
}
