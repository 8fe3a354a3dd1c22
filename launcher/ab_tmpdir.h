/*
 * The temporary directory of `bufsel ab`: one statistics directory per
 * bufsel arm (BUFSEL_STATS=DIR/%p.json), removed at exit with whatever the
 * runs left in it.
 */
#ifndef BUFSEL_LAUNCHER_AB_TMPDIR_H
#define BUFSEL_LAUNCHER_AB_TMPDIR_H

/* Removes the files in dir (not below it): a run's statistics replace the last one's. */
void ab_empty_dir(const char *dir);
/* Makes the directories under $TMPDIR (else /tmp) and registers their removal with atexit(). */
void ab_make_tmpdir(void);

#endif
