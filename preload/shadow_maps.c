/*
 * Whether the program still maps a ring's shadow.  Natively a ring's
 * mappings hold its file: a program may close the ring fd and go on reaping
 * CQEs from memory while its requests complete.  The program's mappings of
 * the shadow are copies of bufsel's own (the same memfd), so they show in
 * /proc/self/maps with the inode of the mapping at bufsel's address.  Read
 * with bufsel's own system calls and parsed by hand: this runs from close
 * and from setup, in hooks and in the SIGSYS handler.
 */
#include "preload/shadow.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/syscall.h>

#include "preload/sys.h"

struct maps_line {
	uintptr_t start, end;
	unsigned long inode;
};

/* "start-end perms offset dev inode [path]": the three numbers we need. */
static int parse_line(const char *s, const char *end, struct maps_line *l)
{
	uintptr_t v[2] = { 0, 0 };
	for (int i = 0; i < 2; i++) {
		int digits = 0;
		for (; s < end; s++, digits++) {
			char c = *s;
			unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16;
			if (d == 16)
				break;
			v[i] = v[i] << 4 | d;
		}
		if (!digits || s == end)
			return -1;
		s++;	/* '-' or ' ' */
	}
	/* perms, offset, dev: three fields to skip. */
	for (int f = 0; f < 3; f++) {
		while (s < end && *s != ' ')
			s++;
		while (s < end && *s == ' ')
			s++;
	}
	unsigned long ino = 0;
	for (; s < end && *s >= '0' && *s <= '9'; s++)
		ino = ino * 10 + (unsigned long)(*s - '0');
	*l = (struct maps_line){ v[0], v[1], ino };
	return 0;
}

/* Calls fn for each line of /proc/self/maps until it returns non-zero;
 * returns that, 0 at the end, or -errno. */
static int for_each_mapping(int (*fn)(const struct maps_line *l, void *arg), void *arg)
{
	int fd = (int)sys_call6(SYS_openat, AT_FDCWD, (long)"/proc/self/maps", O_RDONLY | O_CLOEXEC, 0, 0, 0);
	if (fd < 0)
		return fd;
	char buf[4096];
	size_t have = 0;
	int ret = 0;
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
			struct maps_line l;
			if (!parse_line(buf + used, nl, &l) && (ret = fn(&l, arg)))
				break;
			used = (size_t)(nl + 1 - buf);
		}
		if (ret || n == 0)
			break;
		/* A line longer than the buffer (a very long path) is cut: its
		 * numbers come first and were read. */
		if (used == 0 && have == sizeof(buf))
			used = have;
		for (size_t i = used; i < have; i++)
			buf[i - used] = buf[i];
		have -= used;
	}
	sys_close(fd);
	return ret;
}

struct find {
	uintptr_t at;
	unsigned long inode;
};

static int inode_at(const struct maps_line *l, void *arg)
{
	struct find *f = arg;
	if (l->start <= f->at && f->at < l->end) {
		f->inode = l->inode;
		return 1;
	}
	return 0;
}

static int same_inode_elsewhere(const struct maps_line *l, void *arg)
{
	const struct find *f = arg;
	return l->inode == f->inode && !(l->start <= f->at && f->at < l->end);
}

int shadow_mapped_elsewhere(const void *mem)
{
	struct find f = { (uintptr_t)mem, 0 };
	int r = for_each_mapping(inode_at, &f);
	if (r <= 0)
		return r ? r : -ENOENT;
	if (!f.inode)
		return -ENOENT;
	return for_each_mapping(same_inode_elsewhere, &f);
}
