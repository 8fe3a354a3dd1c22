/*
 * The libc functions bufsel interposes, reached as real_<name>.  Resolved on
 * first use rather than in the constructor: other preloaded libraries (and
 * sanitizer runtimes) call close, mmap or sigaction before bufsel's
 * constructor has run.
 */
#ifndef BUFSEL_PRELOAD_REAL_H
#define BUFSEL_PRELOAD_REAL_H

struct sigaction;

void *real_resolve(const char *name);
/* libc's own sigaction, the program's view of dispositions left alone
 * (signals.c); -1 when it cannot be found. */
int real_sigaction_call(int sig, const struct sigaction *act, struct sigaction *old);

#define REAL_DECL(name) static __typeof__(&(name)) real_##name
#define REAL(name)                                                          \
	({                                                                  \
		if (!real_##name)                                           \
			real_##name = (__typeof__(&(name)))real_resolve(#name); \
		real_##name;                                                \
	})

#endif
