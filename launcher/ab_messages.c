/*
 * How `bufsel ab` reports problems (ab_messages.h).  Every line starts with
 * "bufsel: ab: "; while a run's progress line is on a terminal, a warning
 * erases it first so that the two do not share a line.
 */
#define _GNU_SOURCE
#include "launcher/ab_messages.h"

#include "launcher/ab_state.h"
#include "launcher/launcher.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>

noreturn void ab_usage_error(const char *fmt, ...)
{
	va_list ap;
	fputs("bufsel: ab: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (bufsel ab --help)\n", stderr);
	exit(EXIT_USAGE);
}

void ab_warn(const char *fmt, ...)
{
	va_list ap;
	if (ab.progress)
		fputs("\r\033[K", stderr);
	fputs("bufsel: ab: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

noreturn void ab_fatal(const char *what)
{
	ab_warn("%s: %s", what, strerror(errno));
	exit(EXIT_CONFIG);
}

void *ab_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p)
		ab_fatal("out of memory");
	return p;
}

char *ab_xstrdup(const char *s)
{
	char *p = strdup(s);
	if (!p)
		ab_fatal("out of memory");
	return p;
}

char *ab_xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		ab_fatal("out of memory");
	return s;
}
