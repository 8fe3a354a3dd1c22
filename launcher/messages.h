/*
 * How the launcher talks to the user.  The launcher is a short-lived
 * single-threaded process that ends in execvp(), so failing means printing
 * one "bufsel: " line and exiting with the documented status (launcher.h);
 * everything else it says is filtered by the log level of the configuration.
 */
#ifndef BUFSEL_LAUNCHER_MESSAGES_H
#define BUFSEL_LAUNCHER_MESSAGES_H

#include <stdnoreturn.h>

#include "conf/options.h"

/* Messages below this level are dropped; errors are always printed. */
extern enum bufsel_log_level launcher_log;

noreturn void fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void say(enum bufsel_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
