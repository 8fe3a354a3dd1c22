/*
 * One log function for all of bufsel: a fixed stack buffer, no allocation,
 * one write(2) per line so lines from threads do not interleave, every line
 * prefixed "bufsel:", and a cap per second so a debug log cannot drown the
 * host.  Safe in the SIGSYS handler.
 */
#ifndef BUFSEL_PRELOAD_LOG_H
#define BUFSEL_PRELOAD_LOG_H

#include "conf/options.h"
#include "preload/state.h"

__attribute__((format(printf, 2, 3)))
void bufsel_log(enum bufsel_log_level level, const char *fmt, ...);

/* For the few lines that must never be dropped (the exit summary). */
__attribute__((format(printf, 2, 3)))
void bufsel_log_uncapped(enum bufsel_log_level level, const char *fmt, ...);

static inline int bufsel_log_on(enum bufsel_log_level level)
{
	return level <= bufsel.conf.log;
}

#define log_error(...) bufsel_log(BUFSEL_LOG_ERROR, __VA_ARGS__)
#define log_warn(...) bufsel_log(BUFSEL_LOG_WARN, __VA_ARGS__)
#define log_info(...) do { if (bufsel_log_on(BUFSEL_LOG_INFO)) bufsel_log(BUFSEL_LOG_INFO, __VA_ARGS__); } while (0)
#define log_debug(...) do { if (bufsel_log_on(BUFSEL_LOG_DEBUG)) bufsel_log(BUFSEL_LOG_DEBUG, __VA_ARGS__); } while (0)

#endif
