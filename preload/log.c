#include "preload/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>

#include "preload/sys.h"

#define LOG_LINES_PER_SEC 2000

static _Atomic long log_window;		/* the second the count below belongs to */
static atomic_int log_count;

static int log_admit(void)
{
	struct timespec ts;
	if (sys_call3(SYS_clock_gettime, CLOCK_MONOTONIC_COARSE, (long)&ts, 0))
		return 1;
	long now = (long)ts.tv_sec, seen = atomic_load_explicit(&log_window, memory_order_relaxed);
	if (now != seen && atomic_compare_exchange_strong(&log_window, &seen, now))
		atomic_store(&log_count, 0);
	int n = atomic_fetch_add_explicit(&log_count, 1, memory_order_relaxed);
	if (n == LOG_LINES_PER_SEC) {
		static const char msg[] = "bufsel: log: more than 2000 lines this second, the rest are dropped\n";
		sys_write(2, msg, sizeof(msg) - 1);
	}
	return n < LOG_LINES_PER_SEC;
}

static void log_line(const char *fmt, va_list ap)
{
	char line[512];
	int n = snprintf(line, sizeof(line), "bufsel: ");
	int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	if (m < 0)
		return;
	n += m;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	sys_write(2, line, (size_t)n);
}

void bufsel_log(enum bufsel_log_level level, const char *fmt, ...)
{
	if (!bufsel_log_on(level) || !log_admit())
		return;
	va_list ap;
	va_start(ap, fmt);
	log_line(fmt, ap);
	va_end(ap);
}

void bufsel_log_uncapped(enum bufsel_log_level level, const char *fmt, ...)
{
	if (!bufsel_log_on(level))
		return;
	va_list ap;
	va_start(ap, fmt);
	log_line(fmt, ap);
	va_end(ap);
}

int log_first(enum log_once what)
{
	unsigned bit = 1u << what;
	return !(atomic_fetch_or_explicit(&bufsel.warned, bit, memory_order_relaxed) & bit);
}
