/*
 * The suite's small helpers (util.h).  suite_die() is for the suite's own
 * failures only, a missing program or an unwritable file: a workload that
 * fails is a result, recorded and reported, never a reason to stop.
 */
#define _GNU_SOURCE
#include "bench/suite/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

noreturn void suite_die(const char *fmt, ...)
{
	va_list ap;
	fputs("bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* snprintf for messages made of other messages: cutting a long one short is fine. */
void suite_message(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

double suite_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

char *suite_read_text(const char *path, size_t *len)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap)
			break;
		char *more = realloc(buf, cap *= 2);
		if (!more) {
			free(buf);
			buf = NULL;
		}
		buf = more;
	}
	fclose(f); // NOLINT(cert-err33-c): read only, nothing to lose on close
	if (buf) {
		buf[n < cap ? n : cap - 1] = '\0';
		*len = n;
	}
	return buf;
}
