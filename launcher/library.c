/*
 * Finding libbufsel.so and putting it on LD_PRELOAD.  The dynamic loader only
 * prints a warning and carries on when a preloaded object is missing or of the
 * wrong kind, which would run the program with bufsel silently absent, so the
 * library is checked here where a failure can still stop the launch.
 */
#include "launcher/library.h"

#include "launcher/elf.h"
#include "launcher/launcher.h"
#include "launcher/messages.h"

#include <elf.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ld.so splits LD_PRELOAD on these; a path containing one cannot be listed. */
#define PRELOAD_SEPS " :"

static void library_check(const char *what, const char *path, char out[PATH_MAX])
{
	struct stat st;
	struct exec_info info;

	if (!realpath(path, out))
		fail(EXIT_CONFIG, "%s%s: %s", what, path, strerror(errno));
	if (stat(out, &st) || !S_ISREG(st.st_mode))
		fail(EXIT_CONFIG, "%s%s: not a regular file", what, path);
	int r = exec_inspect_path(out, &info);
	if (r)
		fail(EXIT_CONFIG, "%s%s: cannot read it: %s", what, path, strerror(-r));
	if (info.elf_class != ELFCLASS64 || info.machine != EM_X86_64 || info.type != ET_DYN)
		fail(EXIT_CONFIG, "%s%s: not an x86-64 shared library", what, path);
	if (info.kind != EXEC_STATIC && info.kind != EXEC_DYNAMIC)
		fail(EXIT_CONFIG, "%s%s: broken ELF file (%s)", what, path, info.why);
	if (strpbrk(out, PRELOAD_SEPS))
		fail(EXIT_CONFIG, "%s%s: the path contains a space or ':', which LD_PRELOAD cannot express; "
		     "move the library", what, out);
}

static int exe_dir(char dir[PATH_MAX])
{
	ssize_t n = readlink("/proc/self/exe", dir, PATH_MAX - 1);
	if (n <= 0)
		return -1;
	dir[n] = '\0';
	/* dirname() of an absolute path writes in place and stays absolute. */
	char *d = dirname(dir);
	if (d != dir)
		memmove(dir, d, strlen(d) + 1);
	return 0;
}

void library_find(const char *opt_lib, const char *env_lib, char out[PATH_MAX])
{
	char dir[PATH_MAX], where[3][PATH_MAX + 32];

	if (opt_lib) {
		library_check("--lib ", opt_lib, out);
		return;
	}
	if (env_lib && *env_lib) {
		library_check("BUFSEL_LIB=", env_lib, out);
		return;
	}
	if (exe_dir(dir))
		fail(EXIT_CONFIG, "cannot locate %s: /proc/self/exe is unreadable (%s); "
		     "pass --lib PATH or set BUFSEL_LIB", BUFSEL_LIB_NAME, strerror(errno));
	snprintf(where[0], sizeof(where[0]), "%s/%s", dir, BUFSEL_LIB_NAME);
	snprintf(where[1], sizeof(where[1]), "%s/%s", BUFSEL_LIBDIR, BUFSEL_LIB_NAME);
	snprintf(where[2], sizeof(where[2]), "%s/../lib/%s", dir, BUFSEL_LIB_NAME);
	/* Whichever exists first is used; a broken one is reported rather than skipped. */
	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		if (!access(where[i], F_OK)) {
			library_check("", where[i], out);
			return;
		}
	}
	fail(EXIT_CONFIG, "cannot find %s (looked for %s, %s and %s); build it with make, "
	     "or pass --lib PATH or set BUFSEL_LIB", BUFSEL_LIB_NAME, where[0], where[1], where[2]);
}

static int same_file(const char *entry, const char *lib)
{
	char real[PATH_MAX];
	return !strcmp(entry, lib) || (realpath(entry, real) && !strcmp(real, lib));
}

void library_preload(const char *old, const char *lib)
{
	const char *p = old ? old : "";
	size_t keep = 0;

	/* keep ends up as the length of old without trailing separators. */
	while (*p) {
		size_t sep = strspn(p, PRELOAD_SEPS);
		p += sep;
		size_t len = strcspn(p, PRELOAD_SEPS);
		if (!len)
			break;
		char entry[PATH_MAX];
		if (len < sizeof(entry)) {
			memcpy(entry, p, len);
			entry[len] = '\0';
			if (same_file(entry, lib)) {
				say(BUFSEL_LOG_DEBUG, "bufsel: %s is already in LD_PRELOAD", lib);
				return;
			}
			const char *base = strrchr(entry, '/');
			if (!strcmp(base ? base + 1 : entry, BUFSEL_LIB_NAME))
				fail(EXIT_CONFIG, "LD_PRELOAD already lists another %s (%s); remove it "
				     "from LD_PRELOAD or pass --lib %s", BUFSEL_LIB_NAME, entry, entry);
		}
		p += len;
		keep = (size_t)(p - old);
	}

	size_t liblen = strlen(lib);
	char *val = malloc(keep + 1 + liblen + 1);
	if (!val)
		fail(EXIT_CONFIG, "out of memory");
	if (keep) {
		memcpy(val, old, keep);
		val[keep] = ':';
		memcpy(val + keep + 1, lib, liblen + 1);
	} else {
		memcpy(val, lib, liblen + 1);
	}
	if (setenv("LD_PRELOAD", val, 1))
		fail(EXIT_CONFIG, "cannot set LD_PRELOAD: %s", strerror(errno));
	free(val);
}
