#include "bench/workloads/bench.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static struct {
	const char *name;
} bench = { "bench" };

void bench_init(const char *argv0)
{
	const char *slash = strrchr(argv0, '/');
	bench.name = slash ? slash + 1 : argv0;
}

const char *bench_name(void)
{
	return bench.name;
}

__attribute__((noreturn)) static void vdie(int err, const char *fmt, va_list ap)
{
	fflush(stdout);
	fprintf(stderr, "%s: ", bench.name);
	vfprintf(stderr, fmt, ap);
	if (err)
		fprintf(stderr, ": %s", strerror(err < 0 ? -err : err));
	fputc('\n', stderr);
	exit(1);
}

void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vdie(0, fmt, ap);
}

void die_err(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vdie(err ? err : EIO, fmt, ap);
}

uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double cpu_us(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) < 0)
		die_err(errno, "getrusage");
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

void nofile_at_least(unsigned long need)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		die_err(errno, "getrlimit(RLIMIT_NOFILE)");
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur >= need)
		return;
	struct rlimit want = rl;
	if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need) {
		want.rlim_cur = rl.rlim_max;
	} else {
		/* Raising the hard limit needs CAP_SYS_RESOURCE (root has it). */
		want.rlim_cur = want.rlim_max = need;
	}
	if (setrlimit(RLIMIT_NOFILE, &want) < 0)
		die("need %lu open descriptors, RLIMIT_NOFILE is soft %llu hard %llu and cannot be raised (%s): "
		    "raise it (ulimit -n %lu) or use fewer connections",
		    need, (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max, strerror(errno),
		    need);
}

int read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t r = read(fd, (char *)buf + got, len - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die_err(errno, "read from fd %d", fd);
		if (r == 0) {
			if (got == 0)
				return -1;
			die("fd %d: EOF after %zu of %zu bytes", fd, got, len);
		}
		got += (size_t)r;
	}
	return 0;
}

void write_full(int fd, const void *buf, size_t len)
{
	size_t put = 0;
	while (put < len) {
		ssize_t w = write(fd, (const char *)buf + put, len - put);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			die_err(errno, "write to fd %d", fd);
		put += (size_t)w;
	}
}
