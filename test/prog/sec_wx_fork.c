/*
 * Code bufsel writes must not be writable by anyone else, a fork child
 * included: a privilege-separated child (forked, then dropping privileges
 * and reading untrusted input) must not be able to change code its parent
 * runs.  After io_uring work from liburing's inline system calls (sites
 * bufsel rewrites, with stubs in pages of its own), the parent and then a
 * fork child look at every shared executable mapping they have: none may
 * be made writable (mprotect), and in the child none may have a second
 * mapping of the same memory (a writable twin inherited from the parent).
 * Natively there is none at all; under bufsel the counts must be 0 too.
 * The child then does io_uring work of its own and looks again.
 */
#include "test/prog/sec_wx.h"

struct region {
	unsigned long lo, hi, ino;
	char perms[5];
	char dev[16];
};

static int read_maps(struct region *r, int max)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	int n = 0;
	if (!f)
		die("/proc/self/maps: %s", strerror(errno));
	while (n < max && fgets(line, sizeof(line), f)) {
		unsigned long off;
		if (sscanf(line, "%lx-%lx %4s %lx %15s %lu", &r[n].lo, &r[n].hi, r[n].perms, &off, r[n].dev,
			   &r[n].ino) == 6)
			n++;
	}
	fclose(f);
	return n;
}

static void check(const char *who)
{
	static struct region r[4096];
	int n = read_maps(r, 4096), writable = 0, twins = 0;
	for (int i = 0; i < n; i++) {
		if (r[i].perms[2] != 'x' || r[i].perms[3] != 's')
			continue;
		void *p = (void *)r[i].lo;
		size_t len = r[i].hi - r[i].lo;
		if (!mprotect(p, len, PROT_READ | PROT_WRITE)) {
			writable++;
			if (mprotect(p, len, PROT_READ | PROT_EXEC))
				die("%s: cannot give %p back its protection: %s", who, p, strerror(errno));
		}
		for (int j = 0; j < n; j++)
			if (j != i && r[j].ino && r[j].ino == r[i].ino && !strcmp(r[j].dev, r[i].dev) &&
			    r[j].perms[3] == 's')
				twins++;
	}
	note("%s: shared executable mappings that could be made writable: %d", who, writable);
	if (!strncmp(who, "child", 5))	/* the parent has the twins of its own stub pages */
		note("%s: shared executable mappings with a second mapping here: %d", who, twins);
}

int main(void)
{
	wx_uring_work("parent");
	check("parent");
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		check("child");
		wx_uring_work("child");
		check("child after its own calls");
		_exit(0);
	}
	int status;
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid: %s", strerror(errno));
	note("child exited %s %d", WIFEXITED(status) ? "with" : "by signal",
	     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	wx_uring_work("parent again");
	check("parent again");
	return 0;
}
