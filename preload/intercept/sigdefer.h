/*
 * Natively a signal lands between system calls, or ends a wait with
 * -EINTR: never inside one.  bufsel's io_uring calls are long stretches of
 * user code, and a handler that uses io_uring itself (on a ring of its own,
 * as a handler may: io_uring_enter is async-signal-safe) could land while
 * its thread holds the lock of that very ring on the ring's behalf (a
 * completion moved for another ring's enter), and would find the ring half
 * changed: the same CQE moved twice.  So bufsel puts a handler of its own
 * in front of each one the program installs, and a signal that lands while
 * its thread holds one of bufsel's locks (spin.h) is queued again, with its
 * siginfo, and stays blocked until the last lock is let go.
 *
 * Not put off: the signals a fault raises (SIGSEGV, SIGBUS, SIGILL, SIGFPE,
 * SIGTRAP: a fault in bufsel's own code must not wait), SIGSYS (bufsel's
 * trap) and handlers with SA_RESETHAND (the kernel resets the disposition
 * when it delivers to bufsel's handler: queued again it would meet SIG_DFL).
 * sigaction and the raw rt_sigaction report the program's own handler.
 * Where the mask a handler leaves in its context is not what sigreturn
 * restores (valgrind keeps its own), the queued copy comes back at once and
 * runs where it lands, once: as if it had not been put off.
 */
#ifndef BUFSEL_PRELOAD_SIGDEFER_H
#define BUFSEL_PRELOAD_SIGDEFER_H

#include <stdint.h>

/* One change of a disposition, made with this thread's signals blocked and
 * the handler table locked, so that the table and the kernel agree. */
struct sigdefer_txn {
	int sig;
	uint64_t saved_mask;
	void *prev_fn;
	unsigned long prev_flags;
};

/* Whether sig's handlers go behind bufsel's, as sigdefer_begin would say. */
int sigdefer_applies(int sig);
/* 1 if sig's handlers go behind bufsel's (then sigdefer_end must follow);
 * 0 for a signal bufsel leaves alone, or inside another change on this
 * thread (a trapped rt_sigaction made by libc's sigaction for the hook). */
int sigdefer_begin(int sig, struct sigdefer_txn *t);
/* The disposition about to be installed: a handler is recorded and bufsel's
 * put in its place. */
void sigdefer_wrap(struct sigdefer_txn *t, void **handler, unsigned long *flags);
/* The disposition the kernel reported as the old one: the program's, as it
 * was before this change. */
void sigdefer_unwrap(const struct sigdefer_txn *t, void **handler, unsigned long *flags);
/* failed: the kernel refused the change, and the table goes back. */
void sigdefer_end(struct sigdefer_txn *t, int failed);
void sigdefer_after_fork(void);

#endif
