/*
 * The suite's small helpers: dying with one line, a message made of other
 * messages, the monotonic clock, a whole file read into memory.  They sit
 * below everything else of the suite and need nothing of it, so any file
 * can use them without pulling in the suite's state.
 */
#ifndef BUFSEL_BENCH_SUITE_UTIL_H
#define BUFSEL_BENCH_SUITE_UTIL_H

#include <stddef.h>
#include <stdnoreturn.h>

noreturn void suite_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void suite_message(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
double suite_now_s(void);
char *suite_read_text(const char *path, size_t *len);

#endif
