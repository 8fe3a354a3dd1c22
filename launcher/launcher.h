/*
 * Pieces of the bufsel launcher shared between its files: the library's name,
 * where make install puts it, and the exit statuses the launcher documents.
 */
#ifndef BUFSEL_LAUNCHER_H
#define BUFSEL_LAUNCHER_H

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

#endif
