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
/* strerror(-err) in English, for log lines on the trapped path and in
 * signal handlers: strerror translates, which takes the locale's locks and
 * may allocate. */
const char *log_errname(int err);

static inline int bufsel_log_on(enum bufsel_log_level level)
{
	return level <= bufsel.conf.log;
}

/*
 * Warnings a process gives once, however many rings or requests meet the
 * same condition: the first at its level, the rest at debug.
 */
enum log_once {
	ONCE_UNSHADOWED,	/* a ring left to the kernel for its setup flags */
	ONCE_RING_SLOTS,	/* more rings alive than bufsel has slots */
	ONCE_NO_SHADOW,		/* no fd or memory for a shadow */
	ONCE_NO_MOVER,		/* no completion mover for a ring */
	ONCE_RESIZE,		/* a resize bufsel could not follow (no memory) */
	ONCE_REQ_SLOTS,		/* out of request slots */
	ONCE_HOLD_NOMEM,	/* no memory to hold a chain */
	ONCE_REMOVE_KEEP,	/* no memory to keep what a REMOVE took */
	ONCE_HELD_NO_ROOM,	/* no room in the real SQ for a held chain */
	ONCE_HELD_SHORT,	/* the kernel took part of a held chain */
	ONCE_RING_INC_SEND,	/* a SEND on an incremental ring whose entry a receive has */
	ONCE_NO_PATCH,		/* the system refuses what site patching needs */
	ONCE_UNDISPATCHED,	/* a thread left to run without Syscall User Dispatch */
};

int log_first(enum log_once what);	/* 1 the first time only */

#define log_once(level, what, ...)                                     \
	do {                                                           \
		if (log_first(what))                                   \
			bufsel_log(level, __VA_ARGS__);                \
		else                                                   \
			log_debug(__VA_ARGS__);                        \
	} while (0)

#define log_error(...) bufsel_log(BUFSEL_LOG_ERROR, __VA_ARGS__)
#define log_warn(...) bufsel_log(BUFSEL_LOG_WARN, __VA_ARGS__)
#define log_info(...) do { if (bufsel_log_on(BUFSEL_LOG_INFO)) bufsel_log(BUFSEL_LOG_INFO, __VA_ARGS__); } while (0)
#define log_debug(...) do { if (bufsel_log_on(BUFSEL_LOG_DEBUG)) bufsel_log(BUFSEL_LOG_DEBUG, __VA_ARGS__); } while (0)

#endif
