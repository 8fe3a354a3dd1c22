#define _GNU_SOURCE
#include "test/integration/harness.h"
#include "test/asan_runtime.h"

#include <criterion/criterion.h>
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
