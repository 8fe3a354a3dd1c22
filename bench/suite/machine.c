/*
 * The machine (machine.h), from uname(2) and /proc.  What cannot be read
 * shows as "?": the report is still worth having without it.
 */
#define _GNU_SOURCE
#include "bench/suite/machine.h"

#include "bench/suite/state.h"
#include "bench/suite/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

void suite_loadavg(char *buf, size_t len)
{
	size_t n;
	char *text = suite_read_text("/proc/loadavg", &n);
	snprintf(buf, len, "?");
	if (text) {
		/* The three averages only. */
		char *p = text;
		for (int i = 0; i < 3 && p; i++)
			p = strchr(p + (i > 0), ' ');
		snprintf(buf, len, "%.*s", p ? (int)(p - text) : (int)strcspn(text, "\n"), text);
	}
	free(text);
}

void suite_machine(void)
{
	struct utsname u;
	snprintf(suite_S.kernel, sizeof(suite_S.kernel), "%s", uname(&u) ? "?" : u.release);
	suite_S.nproc = sysconf(_SC_NPROCESSORS_ONLN);
	snprintf(suite_S.cpu, sizeof(suite_S.cpu), "?");
	size_t n;
	char *info = suite_read_text("/proc/cpuinfo", &n);
	char *m = info ? strstr(info, "model name") : NULL;
	if (m && (m = strchr(m, ':')))
		snprintf(suite_S.cpu, sizeof(suite_S.cpu), "%.*s", (int)strcspn(m + 2, "\n"), m + 2);
	free(info);
	time_t t = time(NULL);
	strftime(suite_S.date, sizeof(suite_S.date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
	suite_loadavg(suite_S.load_start, sizeof(suite_S.load_start));
}
