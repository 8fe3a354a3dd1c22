/*
 * Finding PROGRAM and deciding whether bufsel can reach it (program.c).
 */
#ifndef BUFSEL_LAUNCHER_PROGRAM_H
#define BUFSEL_LAUNCHER_PROGRAM_H

#include <stddef.h>

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
