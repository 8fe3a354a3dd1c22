/*
 * What a run of `bufsel ab` writes: its stdout, read line by line for the
 * program's "bench: NAME=NUMBER ..." lines, whose names become measures,
 * and the end of its stderr, kept for a failure's message.
 */
#ifndef BUFSEL_LAUNCHER_AB_CAPTURE_H
#define BUFSEL_LAUNCHER_AB_CAPTURE_H

#include "launcher/ab_state.h"

#include <stddef.h>

/* n more bytes of stdout; a "\n" ends the last line. */
void ab_take_stdout(struct capture *c, const char *buf, size_t n, struct run_result *res);
void ab_take_stderr(struct capture *c, const char *buf, size_t n);
char *ab_stderr_tail(const struct capture *c);

#endif
