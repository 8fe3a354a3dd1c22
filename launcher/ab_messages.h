/*
 * What `bufsel ab` says when something goes wrong, and the allocations that
 * end in such a message.  A bad command line ends with a pointer to --help
 * and status 2; a warning first clears the progress line; a failure of the
 * environment (memory, a pipe, a temporary directory) ends ab with status 1.
 */
#ifndef BUFSEL_LAUNCHER_AB_MESSAGES_H
#define BUFSEL_LAUNCHER_AB_MESSAGES_H

#include <stddef.h>

/* The attribute, not <stdnoreturn.h>'s noreturn: cppcheck reads no system header. */
__attribute__((noreturn, format(printf, 1, 2))) void ab_usage_error(const char *fmt, ...);
void ab_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "what: strerror(errno)", then exit status 1. */
__attribute__((noreturn)) void ab_fatal(const char *what);
void *ab_xcalloc(size_t n, size_t size);
char *ab_xstrdup(const char *s);
char *ab_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
