/*
 * The one piece of process-wide mutable state in preload/: everything the
 * shim knows about the host process lives in `bufsel`, so it is easy to see
 * what fork must reset and what the SIGSYS handler may touch.  Counters are
 * relaxed atomics: they are statistics, read once at exit.
 */
#ifndef BUFSEL_PRELOAD_STATE_H
#define BUFSEL_PRELOAD_STATE_H

#include <stdatomic.h>
#include <stdint.h>

#include "conf/options.h"

/* The kernel's view of a signal disposition (rt_sigaction's struct). */
struct ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

/* A handler of the program's behind bufsel's (intercept/sigdefer.c): fn
 * NULL when the kernel holds the disposition itself.  seq is odd while
 * sigaction rewrites it. */
struct prog_handler {
	atomic_uint seq;
	_Atomic(void *) fn;
	atomic_ulong flags;
};

struct bufsel_counters {
	atomic_ulong setup, enter, reg, mmap, trapped, hooked, rings;
	atomic_ulong patched;	/* calls that came through a patched site */
	atomic_ulong held_peak;	/* most buffers bound at once in one ring (rings gone) */
	atomic_ulong emulated;	/* SQEs bufsel answered or rewrote for buffer selection */
	atomic_ulong dispatched; /* SIGSYS from Syscall User Dispatch, any call */
};

struct bufsel_state {
	struct bufsel_conf conf;	/* immutable after the constructor */
	int active;			/* 0: init failed, every call goes to libc/kernel as is */
	int trap_installed;		/* the SIGSYS handler is bufsel's */
	enum bufsel_trap trap;		/* what traps: AUTO here means nothing does */
	struct ksigaction prog_sigsys;	/* what the program believes SIGSYS does */
	atomic_int sigsys_lock;		/* guards prog_sigsys against concurrent sigaction */
	struct prog_handler prog_handler[65];	/* by signal number */
	atomic_int handler_lock;	/* one sigaction at a time rewrites prog_handler */
	atomic_uint enter_flags_ok;	/* io_uring_enter flags the kernel was seen to accept */
	atomic_uint warned;		/* enum log_once bits: warnings already given */
	/* The process's completion mover (mover.c): 0 not started, 1 starting,
	 * 2 running, -errno failed; its epoll fd (high, close-on-exec). */
	atomic_int mover_state;
	int mover_epfd;
	atomic_int mover_starter;	/* the thread that set mover_state to 1 */
	/* Under the seccomp filter: an eventfd in that epoll that wakes the
	 * mover from its idle sleep for a ring set up meanwhile (-1 without),
	 * and whether it sleeps so (mover.c, CLOSE_IDLE_MS). */
	int mover_wakefd;
	atomic_int mover_idle;
	/* bufsel threads created but not yet running their own code: a fork
	 * waits for them (mover_before_fork). */
	atomic_int threads_starting;
	/* What the running kernel's buffer rings can do (bufring.c), probed
	 * once on a ring of bufsel's own; 0 until then. */
	atomic_uint kernel_rings;
	/* Opcodes the running kernel knows that stand for a release
	 * (kernel_ops.c), probed the same way. */
	atomic_uint kernel_ops;
	/* Setup flags asked about that way, and those the kernel refused. */
	atomic_uint setup_asked, setup_unknown;
	struct bufsel_counters n;
};

extern struct bufsel_state bufsel;

/* How a call reached bufsel: the trap, a libc symbol, or a patched site. */
enum call_path { PATH_TRAP, PATH_HOOK, PATH_PATCH };

struct call_site {
	enum call_path path;
	void *ucontext;		/* trapped context, NULL for a hook */
	void *ret_addr;		/* the program's return address (hook), or where a patched site resumes */
};

#endif
