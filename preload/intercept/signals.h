/*
 * SIGSYS belongs to bufsel while the trap is installed: a blocked or ignored
 * SIGSYS would turn the next trapped call into a kill.  So the program's
 * SIGSYS disposition is kept here and emulated (sigaction reports it, traps
 * that are not bufsel's are chained to it), and SIGSYS is filtered out of
 * every mask the program installs, while sigprocmask still reports it as
 * blocked to a thread that blocked it.
 */
#ifndef BUFSEL_PRELOAD_SIGNALS_H
#define BUFSEL_PRELOAD_SIGNALS_H

#include <signal.h>
#include <stdint.h>
#include <ucontext.h>

/* si_code of a seccomp trap; glibc does not export the name. */
#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1
#endif

void signals_init(void);
void signals_chain(int sig, siginfo_t *si, ucontext_t *uc);

/* The raw-syscall forms, for the syscall() hook: a[] as the kernel gets them. */
long signals_rt_sigprocmask(const long a[6]);
long signals_rt_sigaction(const long a[6]);
/* rt_sigprocmask applied to a saved context's mask (the dispatch trap). */
long signals_rt_sigprocmask_ctx(const long a[6], uint64_t *cur);

#endif
