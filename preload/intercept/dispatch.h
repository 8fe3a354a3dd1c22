/*
 * Syscall User Dispatch (Linux 5.11+), the default trap: every system call a
 * thread makes from outside libc's text raises SIGSYS, bufsel emulates the
 * io_uring calls and ring mappings and re-issues the rest.  It is per thread
 * and the kernel clears it in every new thread, every new process and on
 * execve, so nothing bufsel installs outlives exec (docs/interception.md).
 */
#ifndef BUFSEL_PRELOAD_DISPATCH_H
#define BUFSEL_PRELOAD_DISPATCH_H

#include <signal.h>
#include <ucontext.h>

/* si_code of a dispatched call; glibc does not export the name. */
#ifndef SYS_USER_DISPATCH
#define SYS_USER_DISPATCH 2
#endif

/* Finds libc's text, puts the gate there and arms the calling thread.
 * 0, or -errno (the kernel has no Syscall User Dispatch: -EINVAL). */
int dispatch_init(void);
/* Whether this thread's dispatched calls are bufsel's. */
int dispatch_owns(void);
/* The SIGSYS handler's part for a dispatched call. */
void dispatch_trap(siginfo_t *si, ucontext_t *uc);
/*
 * pthread_create for a thread of bufsel's own (the completion mover), left
 * unarmed: its calls come from the gate anyway, and it runs with every
 * signal blocked, SIGSYS included, so a trap there (a sanitizer runtime's
 * own system calls as the thread starts) would kill the process.
 */
#include <pthread.h>
int dispatch_create_own(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
/* A forked child runs without it until re-armed. */
void dispatch_after_fork(void);

#endif
