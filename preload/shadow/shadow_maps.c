/*
 * Whether the program still maps a ring's shadow.  Natively a ring's
 * mappings hold its file: a program may close the ring fd and go on reaping
 * CQEs from memory while its requests complete.  The program's mappings of
 * the shadow are copies of bufsel's own (the same memfd), so they show in
 * /proc/self/maps with the memfd's inode (taken at setup) at addresses other
 * than bufsel's.  Read with bufsel's own system calls and parsed by hand:
 * this runs from close and from setup, in hooks and in the SIGSYS handler.
 * A program that leaves many rings mapped makes the file long, and a read
 * per ring per sweep would make each setup cost the square of their number:
 * a view of the program's still in place as bufsel made it answers with one
 * stat of /proc/self/map_files, and one read of the maps file answers for
 * every other ring a sweep asks about.
 */
#include "preload/shadow/shadow.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "preload/procfile.h"
#include "preload/sys.h"

struct maps_line {
	uintptr_t start, end;
	unsigned long major, minor, inode;
};

static void skip_field(const char **s, const char *end)
{
	while (*s < end && **s != ' ')
		(*s)++;
	while (*s < end && **s == ' ')
		(*s)++;
}

/* "start-end perms offset major:minor inode [path]": the numbers we need. */
static int parse_line(const char *s, const char *end, struct maps_line *l)
{
	unsigned long start, stop;
	if (procfile_hex(&s, end, &start) || s == end || *s++ != '-' || procfile_hex(&s, end, &stop))
		return -1;
	skip_field(&s, end);	/* the space */
	skip_field(&s, end);	/* perms */
	skip_field(&s, end);	/* offset */
	unsigned long major, minor;
	if (procfile_hex(&s, end, &major) || s == end || *s++ != ':' || procfile_hex(&s, end, &minor))
		return -1;
	skip_field(&s, end);
	unsigned long ino = 0;
	for (; s < end && *s >= '0' && *s <= '9'; s++)
		ino = ino * 10 + (unsigned long)(*s - '0');
	*l = (struct maps_line){ start, stop, major, minor, ino };
	return 0;
}

/* The kernel prints a device as MAJOR:MINOR; fstat's st_dev packs them so
 * (glibc's major() and minor(), without a call into libc). */
static unsigned long dev_major(unsigned long dev)
{
	return (dev >> 8 & 0xfff) | ((unsigned)(dev >> 32) & ~0xfffu);
}

static unsigned long dev_minor(unsigned long dev)
{
	return (dev & 0xff) | ((unsigned)(dev >> 12) & ~0xffu);
}

struct queries {
	struct shadow_query *q;
	unsigned n;
};

static int note_line(const char *line, const char *end, void *arg)
{
	const struct queries *qs = arg;
	struct maps_line l;
	if (parse_line(line, end, &l) || !l.inode)
		return 0;
	for (unsigned i = 0; i < qs->n; i++) {
		struct shadow_query *q = &qs->q[i];
		uintptr_t at = (uintptr_t)q->mem;
		/* Inode numbers repeat across devices: on 5.10 a memfd's
		 * (counted from 1 per tmpfs) met a mapped library's of the
		 * initramfs, and the ring was kept for good. */
		if (q->ino == l.inode && dev_major(q->dev) == l.major && dev_minor(q->dev) == l.minor &&
		    !(l.start <= at && at < l.end))
			q->elsewhere = 1;
	}
	return 0;
}

int shadow_mapped_elsewhere_n(struct shadow_query *q, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		q[i].elsewhere = 0;
	struct queries qs = { q, n };
	return procfile_lines("/proc/self/maps", note_line, &qs);
}

void shadow_note_view(struct shadow *sh, uintptr_t start, uintptr_t end)
{
	unsigned i = atomic_fetch_add_explicit(&sh->nviews, 1, memory_order_relaxed) % SHADOW_VIEWS;
	atomic_store_explicit(&sh->views[i].start, 0, memory_order_relaxed);
	atomic_store_explicit(&sh->views[i].end, end, memory_order_relaxed);
	atomic_store_explicit(&sh->views[i].start, start, memory_order_relaxed);
}

static char *put_hex(char *p, uintptr_t v)
{
	char digits[2 * sizeof(v)];
	int n = 0;
	do {
		digits[n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	while (n)
		*p++ = digits[--n];
	return p;
}

int shadow_view_intact(const struct shadow *sh)
{
	static const char prefix[] = "/proc/self/map_files/";
	unsigned n = atomic_load_explicit(&sh->nviews, memory_order_relaxed);
	if (!sh->mem_ino)
		return 0;
	for (unsigned i = 0; i < n && i < SHADOW_VIEWS; i++) {
		uintptr_t start = atomic_load_explicit(&sh->views[i].start, memory_order_relaxed);
		uintptr_t end = atomic_load_explicit(&sh->views[i].end, memory_order_relaxed);
		if (!start || end <= start)
			continue;
		char path[sizeof(prefix) + 4 * sizeof(uintptr_t) + 2], *p = path;	/* two hex numbers and a dash */
		for (const char *c = prefix; *c; c++)
			*p++ = *c;
		p = put_hex(p, start);
		*p++ = '-';
		p = put_hex(p, end);
		*p = '\0';
		/* The name is the mapping's exact range; stat follows it to the
		 * file, whose inode says it is still the shadow's. */
		struct stat st;
		if (!sys_call6(SYS_newfstatat, AT_FDCWD, (long)path, (long)&st, 0, 0, 0) && st.st_ino == sh->mem_ino &&
		    st.st_dev == sh->mem_dev)
			return 1;
	}
	return 0;
}

int shadow_mapped_elsewhere(const struct shadow *sh)
{
	if (shadow_view_intact(sh))
		return 1;
	if (!sh->mem_ino)
		return -ENOENT;	/* its inode could not be had: cannot tell */
	struct shadow_query q = { sh->mem, sh->mem_ino, sh->mem_dev, 0 };
	int err = shadow_mapped_elsewhere_n(&q, 1);
	return err ? err : q.elsewhere;
}
