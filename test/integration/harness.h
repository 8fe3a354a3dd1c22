/*
 * What every integration runner needs to run a program and look at what it
 * did: a child with its own process group, stdin from /dev/null, stdout and
 * stderr collected, a timeout that kills the whole group; and, under ASan,
 * the sanitizer runtime that must come first in a program's LD_PRELOAD.
 */
#ifndef BUFSEL_TEST_HARNESS_H
#define BUFSEL_TEST_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct run {
	int mode;		/* the caller's label for how the program ran */
	pid_t pid;
	int status;
	bool timed_out;
	bool exec_failed;	/* exit status 127: the program could not be run */
	char *out, *err;	/* NUL-terminated, out_len/err_len bytes */
	size_t out_len, err_len;
};

/*
 * Runs argv with envp.  Inherited descriptors above 2 are closed in the
 * child so that fd numbers in a program's output do not depend on what the
 * harness left open.  Replaces whatever r held before (out and err must be
 * NULL or from an earlier harness_run).
 */
void harness_run(struct run *r, char *const argv[], char **envp, int timeout_s);
void harness_free(struct run *r);

/* The build directory: BUFSEL_BUILD, else "build", made absolute. */
const char *harness_build_dir(void);

/* <build>/<rel>, which must exist (the test fails otherwise); static storage,
 * one per slot (0 to 3). */
const char *harness_built(int slot, const char *rel);

/*
 * The caller's environment less LD_PRELOAD and BUFSEL_* (the runner's own
 * BUFSEL_BUILD, or a user's settings, must not leak into a run), with room
 * for `room` more entries and the NULL: they go from index *k on.  Static
 * storage, replaced by the next call.
 */
char **harness_env(size_t room, size_t *k);

/* The last max bytes of s (len bytes; "" for NULL), for failure messages. */
const char *harness_tail(const char *s, size_t len, size_t max);

/* NULL when r exited with status code; else, in words, how it ended instead
 * (static storage, replaced by the next call). */
const char *harness_exit_problem(const struct run *r, int code);

/* Fails the test unless r exited with status code, showing the ends of what
 * it printed; what names the run. */
void harness_expect_exit(const struct run *r, int code, const char *what);

/* The path of libasan.so when the runner is built with ASan, else NULL. */
const char *harness_asan_runtime(void);

#endif
