/*
 * Pieces of the bufsel launcher shared between its files.  The launcher is a
 * short-lived single-threaded process that ends in execvp(), so failing means
 * printing one "bufsel: " line and exiting with the documented status.
 */
#ifndef BUFSEL_LAUNCHER_H
#define BUFSEL_LAUNCHER_H

#include <limits.h>
#include <stdnoreturn.h>

#include "conf/options.h"
#include "version.h"

#define BUFSEL_LIB_NAME "libbufsel.so"
/* make sets it to the directory make install puts the library in (LIBDIR). */
#ifndef BUFSEL_LIBDIR
#define BUFSEL_LIBDIR "/usr/local/lib"
#endif

/* Exit statuses, chosen to match the shell's for 126 and 127. */
enum {
	EXIT_CONFIG = 1,	/* bad BUFSEL_* variable, library missing or unusable */
	EXIT_USAGE = 2,		/* bad command line */
	EXIT_CANNOT_RUN = 126,	/* PROGRAM found but cannot be executed under bufsel */
	EXIT_NOT_FOUND = 127,	/* PROGRAM not found */
};

/* Messages below this level are dropped; errors are always printed. */
extern enum bufsel_log_level launcher_log;

noreturn void fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void say(enum bufsel_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Finds and checks the library: opt_lib (--lib), else env_lib (BUFSEL_LIB),
 * else next to the executable (a build tree), else in the library directory
 * the launcher was built for (BUFSEL_LIBDIR), else ../lib from the executable
 * (an installed tree moved elsewhere).  Writes its canonical
 * absolute path to out, or exits with EXIT_CONFIG.
 */
void library_find(const char *opt_lib, const char *env_lib, char out[PATH_MAX]);

/*
 * Adds lib to the LD_PRELOAD list old (space- or colon-separated, may be NULL)
 * and sets LD_PRELOAD.  Leaves it alone when lib is already listed; exits with
 * EXIT_CONFIG when another copy of the library is listed.
 */
void library_preload(const char *old, const char *lib);

/*
 * Locates file the way execvp() does (PATH, or confstr(_CS_PATH) when unset;
 * an empty entry is the current directory) and writes a path containing a
 * slash to out.  Returns 0, or ENOENT / EACCES / EISDIR / ENAMETOOLONG.
 */
int program_resolve(const char *file, char *out, size_t len);

/*
 * Refuses (exits with EXIT_CANNOT_RUN) a program that LD_PRELOAD cannot reach:
 * static, 32-bit, another architecture, or a broken ELF file.  name is what
 * the user typed, path what program_resolve() found.  Returns nonzero when the
 * file is a #! script, for a better message if its interpreter is missing.
 */
int program_check(const char *name, const char *path);

#endif
