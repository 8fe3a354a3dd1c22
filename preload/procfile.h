/*
 * Reading a /proc text file line by line with bufsel's own system calls:
 * no stdio, no allocation, so that it runs from hooks and the SIGSYS handler.
 */
#ifndef BUFSEL_PRELOAD_PROCFILE_H
#define BUFSEL_PRELOAD_PROCFILE_H

/* Calls fn(line, end, arg) for each line of path (end at its '\n', which is
 * not included) until fn returns non-zero; returns that, 0 at the end of
 * the file, or -errno.  A line longer than the buffer (4 KiB) is cut: fn
 * gets its first 4 KiB, where every number bufsel reads comes. */
int procfile_lines(const char *path, int (*fn)(const char *line, const char *end, void *arg), void *arg);

/* The lower-case hex number at *s into *v, *s moved past it: 0, or -1 (and
 * *s unmoved) when no digit is there.  /proc prints addresses, devices and
 * inodes so. */
int procfile_hex(const char **s, const char *end, unsigned long *v);

/* "/proc/self/fdinfo/<fd>" into buf (at least 32 bytes). */
void procfile_fdinfo_path(char *buf, int fd);

#endif
