#include "preload/procfile.h"

#include <fcntl.h>
#include <sys/syscall.h>

#include "preload/sys.h"

int procfile_lines(const char *path, int (*fn)(const char *line, const char *end, void *arg), void *arg)
{
	int fd = (int)sys_call6(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0, 0, 0);
	if (fd < 0)
		return fd;
	char buf[4096];
	size_t have = 0;
	int ret = 0, cut = 0;	/* cut: the rest of a line fn already had */
	for (;;) {
		long n = sys_call3(SYS_read, fd, (long)(buf + have), (long)(sizeof(buf) - have));
		if (n < 0) {
			ret = (int)n;
			break;
		}
		have += (size_t)n;
		size_t used = 0;
		for (;;) {
			char *nl = NULL;
			for (size_t i = used; i < have; i++)
				if (buf[i] == '\n') {
					nl = buf + i;
					break;
				}
			if (!nl)
				break;
			if (!cut && (ret = fn(buf + used, nl, arg)))
				break;
			cut = 0;
			used = (size_t)(nl + 1 - buf);
		}
		if (ret || n == 0)
			break;
		if (used == 0 && have == sizeof(buf)) {
			/* A line longer than the buffer: its start is what counts. */
			if (!cut && (ret = fn(buf, buf + have, arg)))
				break;
			cut = 1;
			used = have;
		}
		for (size_t i = used; i < have; i++)
			buf[i - used] = buf[i];
		have -= used;
	}
	sys_close(fd);
	return ret;
}

int procfile_hex(const char **s, const char *end, unsigned long *v)
{
	int digits = 0;
	*v = 0;
	for (; *s < end; (*s)++, digits++) {
		char c = **s;
		unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16;
		if (d == 16)
			break;
		*v = *v << 4 | d;
	}
	return digits ? 0 : -1;
}

void procfile_fdinfo_path(char *buf, int fd)
{
	static const char prefix[] = "/proc/self/fdinfo/";
	char digits[12];
	int n = 0;
	unsigned v = (unsigned)fd;
	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	char *p = buf;
	for (const char *s = prefix; *s; s++)
		*p++ = *s;
	while (n)
		*p++ = digits[--n];
	*p = '\0';
}
