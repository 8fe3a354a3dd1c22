/*
 * Statistics out of the host process: the pool statistics of every ring, as
 * JSON (docs/stats-schema.md) to the file named by the `stats` key, or as a
 * table on stderr when it is "-".  Written at exit, and on SIGUSR2 when the
 * program leaves that signal at its default (a program that handles SIGUSR2
 * keeps it; bufsel then reports at exit only).  Rings closed before the end
 * are kept as rendered text, so a program that opens and closes rings loses
 * nothing.  A process that never made a buffer group writes nothing, a
 * forked child reports only the rings it made itself (its parent reports
 * the rest), and "%p" in the path is replaced by the process id.
 */
#ifndef BUFSEL_PRELOAD_STATS_H
#define BUFSEL_PRELOAD_STATS_H

void stats_init(void);
void stats_write(void);

#endif
