/*
 * Finding libbufsel.so and putting it on LD_PRELOAD (library.c).  Both exit
 * with EXIT_CONFIG rather than return an error: a launch without the library
 * would run the program with bufsel silently absent.
 */
#ifndef BUFSEL_LAUNCHER_LIBRARY_H
#define BUFSEL_LAUNCHER_LIBRARY_H

#include <limits.h>

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

#endif
