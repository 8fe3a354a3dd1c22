/*
 * The temporary directory of `bufsel ab` (ab_tmpdir.h).  The clean-up at
 * exit also kills a program still running, so that no exit path of ab,
 * fatal errors included, leaves one behind or a directory in use.
 */
#define _GNU_SOURCE
#include "launcher/ab_tmpdir.h"

#include "launcher/ab_messages.h"
#include "launcher/ab_state.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void ab_empty_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d));)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
}

static void cleanup(void)
{
	if (ab.child > 0) {
		/* Best effort on the way out: the group or the child may be gone already. */
		(void)kill(-ab.child, SIGKILL);
		(void)kill(ab.child, SIGKILL);
		(void)waitpid(ab.child, NULL, 0);
		ab.child = 0;
	}
	if (!ab.tmpdir[0])
		return;
	for (unsigned i = 0; i < ab.narms; i++)
		if (ab.arms[i].stats_dir[0]) {
			ab_empty_dir(ab.arms[i].stats_dir);
			rmdir(ab.arms[i].stats_dir);
		}
	rmdir(ab.tmpdir);
	ab.tmpdir[0] = '\0';
}

void ab_make_tmpdir(void)
{
	const char *tmp = getenv("TMPDIR");
	if (!tmp || tmp[0] != '/')
		tmp = "/tmp";
	snprintf(ab.tmpdir, sizeof(ab.tmpdir), "%s/bufsel-ab-XXXXXX", tmp);
	if (!mkdtemp(ab.tmpdir)) {
		ab.tmpdir[0] = '\0';
		ab_fatal("cannot make a temporary directory");
	}
	atexit(cleanup);
	for (unsigned i = 0; i < ab.narms; i++) {
		struct arm *a = &ab.arms[i];
		if (!a->def->mode)
			continue;
		int n = snprintf(a->stats_dir, sizeof(a->stats_dir), "%s/%s", ab.tmpdir, a->def->name);
		if (n < 0 || (size_t)n >= sizeof(a->stats_dir)) {
			errno = ENAMETOOLONG;
			ab_fatal(ab.tmpdir);
		}
		if (mkdir(a->stats_dir, 0700))
			ab_fatal(a->stats_dir);
	}
}
