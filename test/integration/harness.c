#define _GNU_SOURCE
#include "test/integration/harness.h"
#include "test/asan_runtime.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void append(char **buf, size_t *len, const char *data, size_t n)
{
	*buf = realloc(*buf, *len + n + 1);
	cr_assert(*buf != NULL);
	memcpy(*buf + *len, data, n);
	*len += n;
	(*buf)[*len] = '\0';
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void harness_free(struct run *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

/* The first line of the file fmt names (a /proc path with a pid and a tid),
 * without its newline; "?" if unreadable. */
static void proc_line(char *buf, size_t size, const char *fmt, int pid, int tid)
{
	char path[64];
	snprintf(path, sizeof(path), fmt, pid, tid);
	snprintf(buf, size, "?");
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)size, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

/* One thread: state, wait channel, system call and kernel stack (root only),
 * the stack's frames on one line. */
static void describe_thread(struct run *r, int pid, int tid)
{
	char comm[64], stat[512], wchan[64], sys[160], stack[1024], line[256], path[64], out[1600];
	proc_line(comm, sizeof(comm), "/proc/%d/task/%d/comm", pid, tid);
	proc_line(stat, sizeof(stat), "/proc/%d/task/%d/stat", pid, tid);
	proc_line(wchan, sizeof(wchan), "/proc/%d/task/%d/wchan", pid, tid);
	proc_line(sys, sizeof(sys), "/proc/%d/task/%d/syscall", pid, tid);
	const char *rp = strrchr(stat, ')');
	char state = rp && rp[1] ? rp[2] : '?';
	stack[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stack", pid, tid);
	FILE *f = fopen(path, "re");
	for (size_t used = 0; f && fgets(line, sizeof(line), f);) {
		line[strcspn(line, "\n")] = 0;
		const char *frame = strchr(line, ' ') ? strchr(line, ' ') + 1 : line;
		int n = snprintf(stack + used, sizeof(stack) - used, "%s%s", used ? " < " : "", frame);
		if (n < 0 || (size_t)n >= sizeof(stack) - used)
			break;
		used += (size_t)n;
	}
	if (f)
		fclose(f);
	int n = snprintf(out, sizeof(out), "pid %d tid %d (%s) state %c wchan %s syscall %s\n  stack: %s\n", pid, tid,
			 comm, state, wchan, sys, stack[0] ? stack : "?");
	append(&r->err, &r->err_len, out, n > 0 && (size_t)n < sizeof(out) ? (size_t)n : sizeof(out) - 1);
}

/*
 * A run that timed out is killed, and with it what it was waiting for: its
 * stderr gets every thread of every process in its group, so that a hang in
 * a run nobody watches (CI) says where it was.
 */
static void describe_group(struct run *r, pid_t pgrp)
{
	static const char head[] = "\n--- harness: timed out; the process group's threads ---\n";
	append(&r->err, &r->err_len, head, sizeof(head) - 1);
	DIR *procs = opendir("/proc");
	struct dirent *p;
	while (procs && (p = readdir(procs))) {
		char stat[512], path[64];
		int pid = atoi(p->d_name), ppid, grp;
		char state;
		if (pid <= 0)
			continue;
		proc_line(stat, sizeof(stat), "/proc/%d/stat", pid, 0);
		/* pid (comm) state ppid pgrp: comm may hold spaces, so from its ')'. */
		const char *rp = strrchr(stat, ')');
		if (!rp || sscanf(rp + 1, " %c %d %d", &state, &ppid, &grp) != 3 || grp != pgrp)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task", pid);
		DIR *tasks = opendir(path);
		struct dirent *t;
		while (tasks && (t = readdir(tasks)))
			if (atoi(t->d_name) > 0)
				describe_thread(r, pid, atoi(t->d_name));
		if (tasks)
			closedir(tasks);
	}
	if (procs)
		closedir(procs);
}

void harness_run(struct run *r, char *const argv[], char **envp, int timeout_s)
{
	int out[2], err[2];
	cr_assert(pipe2(out, O_CLOEXEC) == 0 && pipe2(err, O_CLOEXEC) == 0, "pipe2: %s", strerror(errno));
	harness_free(r);
	r->out = strdup("");
	r->err = strdup("");
	r->out_len = r->err_len = 0;
	r->timed_out = r->exec_failed = false;
	r->status = 0;

	pid_t pid = fork();
	cr_assert(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		setpgid(0, 0);
		int null = open("/dev/null", O_RDONLY);
		if (null < 0 || dup2(null, 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0)
			_exit(126);
		close_range(3, ~0U, 0);
		execve(argv[0], argv, envp);
		dprintf(2, "harness: execve %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	r->pid = pid;
	setpgid(pid, pid);
	close(out[1]);
	close(err[1]);

	struct pollfd pfd[2] = { { .fd = out[0], .events = POLLIN }, { .fd = err[0], .events = POLLIN } };
	char **bufs[2] = { &r->out, &r->err };
	size_t *lens[2] = { &r->out_len, &r->err_len };
	double deadline = now_s() + timeout_s, reaped_at = 0;
	bool reaped = false;
	int open_pipes = 2;
	while (open_pipes > 0 || !reaped) {
		if (deadline - now_s() <= 0) {
			r->timed_out = true;
			break;
		}
		/* A descendant may hold the pipes open after the program exited. */
		if (reaped && now_s() - reaped_at > 2.0)
			break;
		if (open_pipes > 0) {
			int ret = poll(pfd, 2, 50);
			if (ret < 0 && errno != EINTR)
				cr_assert_fail("poll: %s", strerror(errno));
			for (int i = 0; i < 2 && ret > 0; i++) {
				if (pfd[i].fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
					continue;
				char chunk[65536];
				ssize_t n = read(pfd[i].fd, chunk, sizeof(chunk));
				if (n > 0) {
					append(bufs[i], lens[i], chunk, (size_t)n);
				} else if (n == 0 || errno != EINTR) {
					close(pfd[i].fd);
					pfd[i].fd = -1;
					open_pipes--;
				}
			}
		} else {
			usleep(10 * 1000);
		}
		if (!reaped && waitpid(pid, &r->status, WNOHANG) == pid) {
			reaped = true;
			reaped_at = now_s();
		}
	}
	if (r->timed_out)
		describe_group(r, pid);
	/* Whatever is left of the group (the program on timeout, or stray descendants). */
	kill(-pid, SIGKILL);
	if (!reaped) {
		kill(pid, SIGKILL);
		waitpid(pid, &r->status, 0);
	}
	for (int i = 0; i < 2; i++)
		if (pfd[i].fd >= 0)
			close(pfd[i].fd);
	r->exec_failed = !r->timed_out && WIFEXITED(r->status) && WEXITSTATUS(r->status) == 127;
}

const char *harness_build_dir(void)
{
	static char dir[PATH_MAX];
	if (!dir[0]) {
		const char *b = getenv("BUFSEL_BUILD");
		if (!b || !*b)
			b = "build";
		if (!realpath(b, dir))
			cr_assert_fail("build directory \"%s\": %s (set BUFSEL_BUILD)", b, strerror(errno));
	}
	return dir;
}

const char *harness_built(int slot, const char *rel)
{
	static char paths[4][PATH_MAX];
	cr_assert(slot >= 0 && slot < 4, "harness_built: slot %d", slot);
	int n = snprintf(paths[slot], PATH_MAX, "%s/%s", harness_build_dir(), rel);
	cr_assert(n > 0 && n < PATH_MAX, "path too long: %s/%s", harness_build_dir(), rel);
	cr_assert(access(paths[slot], R_OK) == 0, "%s: %s (not built?)", paths[slot], strerror(errno));
	return paths[slot];
}

char **harness_env(size_t room, size_t *k)
{
	extern char **environ;
	/* Static, so that an assertion between here and the next call is no leak. */
	static char **env;
	size_t n = 0;
	for (char **e = environ; *e; e++)
		n++;
	free(env);
	env = calloc(n + room + 1, sizeof(*env));
	cr_assert(env != NULL);
	*k = 0;
	for (char **e = environ; *e; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "BUFSEL_", 7))
			env[(*k)++] = *e;
	return env;
}

const char *harness_asan_runtime(void)
{
#ifdef __SANITIZE_ADDRESS__
	const char *path = asan_runtime_path();
	cr_assert(path, "built with ASan, but libasan.so is not among the runner's libraries");
	return path;
#else
	return NULL;
#endif
}

const char *harness_tail(const char *s, size_t len, size_t max)
{
	return !s ? "" : len > max ? s + len - max : s;
}

const char *harness_exit_problem(const struct run *r, int code)
{
	static char why[96];
	if (r->timed_out)
		return "timed out (killed)";
	if (WIFSIGNALED(r->status))
		snprintf(why, sizeof(why), "killed by signal %d (%s)", WTERMSIG(r->status),
			 strsignal(WTERMSIG(r->status)));
	else if (WEXITSTATUS(r->status) != code)
		snprintf(why, sizeof(why), "exited with status %d, expected %d", WEXITSTATUS(r->status), code);
	else
		return NULL;
	return why;
}

void harness_expect_exit(const struct run *r, int code, const char *what)
{
	const char *why = harness_exit_problem(r, code);
	cr_assert(!why, "%s: %s\n--- stderr (last 3000 bytes) ---\n%s\n--- stdout (last 2000 bytes) ---\n%s", what,
		  why, harness_tail(r->err, r->err_len, 3000), harness_tail(r->out, r->out_len, 2000));
}
