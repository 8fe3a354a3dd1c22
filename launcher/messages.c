/*
 * The launcher's messages (messages.h), in a file of their own so that the
 * files that fail or warn (library.c, program.c) need nothing of main.c,
 * which calls them.  launcher_log starts at warnings; main() sets it from
 * the configuration once that is loaded.
 */
#include "launcher/messages.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

enum bufsel_log_level launcher_log = BUFSEL_LOG_WARN;

void fail(int status, const char *fmt, ...)
{
	va_list ap;
	fputs("bufsel: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(status);
}

void say(enum bufsel_log_level level, const char *fmt, ...)
{
	va_list ap;
	if (level > launcher_log)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
