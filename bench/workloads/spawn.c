#include "bench/workloads/spawn.h"
#include "bench/workloads/bench.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static bool is_bufsel_var(const char *e)
{
	return !strncmp(e, "LD_PRELOAD=", 11) || !strncmp(e, "BUFSEL_", 7);
}

pid_t spawn_sibling(const char *prog, char **argv, const int *keep_fds, unsigned nkeep)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		die_err(errno, "readlink /proc/self/exe");
	self[n] = 0;
	char *slash = strrchr(self, '/');
	char path[PATH_MAX];
	if (!slash || snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - self), self, prog) >= (int)sizeof(path))
		die("cannot name %s next to %s", prog, self);
	if (access(path, X_OK) < 0)
		die_err(errno, "load generator %s", path);

	size_t nenv = 0;
	while (environ[nenv])
		nenv++;
	char **env = calloc(nenv + 1, sizeof(*env));
	if (!env)
		die("out of memory");
	size_t k = 0;
	for (size_t i = 0; i < nenv; i++)
		if (!is_bufsel_var(environ[i]))
			env[k++] = environ[i];
	argv[0] = path;

	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0)
		die_err(errno, "fork");
	if (pid == 0) {
		for (unsigned i = 0; i < nkeep; i++)
			if (fcntl(keep_fds[i], F_SETFD, 0) < 0)
				_exit(127);
		execve(path, argv, env);
		fprintf(stderr, "%s: exec %s: %s\n", bench_name(), path, strerror(errno));
		_exit(127);
	}
	free(env);
	return pid;
}

void spawn_wait(pid_t pid, const char *prog)
{
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die_err(errno, "waitpid %s", prog);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return;
	if (WIFSIGNALED(status))
		die("%s (pid %d) was killed by signal %d", prog, (int)pid, WTERMSIG(status));
	die("%s (pid %d) failed with exit status %d", prog, (int)pid, WEXITSTATUS(status));
}
