/*
 * Reaching the libc functions bufsel interposes (real.h).  A file of its
 * own, below everything that hooks or calls them: the hooks (hooks.c), the
 * signal bookkeeping (signals.c) and the crash reporter (crash.c) all come
 * here, and this file needs none of them.
 */
#define _GNU_SOURCE
#include "preload/intercept/real.h"

#include <dlfcn.h>
#include <signal.h>

REAL_DECL(sigaction);

void *real_resolve(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

int real_sigaction_call(int sig, const struct sigaction *act, struct sigaction *old)
{
	return REAL(sigaction) ? real_sigaction(sig, act, old) : -1;
}
