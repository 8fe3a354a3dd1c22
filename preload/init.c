/*
 * Start and end of bufsel inside a host process.  The constructor reads the
 * configuration (a bad value stops the program here, before main, with one
 * line per problem), takes over SIGSYS and installs the trap (Syscall User
 * Dispatch, or the seccomp filter and its gate page).  Anything that fails leaves bufsel inactive: the program then runs
 * as if bufsel were not there, and says so once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/arena.h"
#include "preload/heap.h"
#include "preload/intercept/crash.h"
#include "preload/intercept/dispatch.h"
#include "preload/intercept/gate.h"
#include "preload/intercept/patch.h"
#include "preload/intercept/real.h"
#include "preload/intercept/sigdefer.h"
#include "preload/intercept/signals.h"
#include "preload/intercept/site.h"
#include "preload/intercept/trap.h"
#include "preload/log.h"
#include "preload/shadow/compat.h"
#include "preload/shadow/mover.h"
#include "preload/shadow/ring.h"
#include "preload/spin.h"
#include "preload/state.h"
#include "preload/stats.h"
#include "preload/stats_closed.h"
#include "preload/sys.h"
#include "preload/valgrind.h"
#include "version.h"

extern char **environ;

static void after_fork_child(void)
{
	spin_after_fork();
	ring_after_fork();
	mover_after_fork();
	stats_after_fork();
	atomic_store(&bufsel.sigsys_lock, 0);
	sigdefer_after_fork();
	dispatch_after_fork();
}

/* bufsel's heap maps through the gate: never trapped, errno untouched. */
static void *heap_map(size_t len)
{
	void *p = sys_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return sys_is_err((long)p) ? NULL : p;
}

static void heap_unmap(void *p, size_t len)
{
	sys_munmap(p, len);
}

static const struct heap_mapper sys_mapper = { heap_map, heap_unmap };

static void report_fail_alloc(unsigned long n, const char *what)
{
	log_warn("fail_alloc: allocation %lu (%s) fails, as configured", n, what);
}

static void report_compat(const char *kind, const char *name, unsigned since)
{
	if (since)
		log_info("kernel %u.%u: %s%s (%u.%u) refused with -EINVAL, as that kernel refuses it",
			 bufsel.conf.kernel >> 8, bufsel.conf.kernel & 0xff, kind, name, since >> 8, since & 0xff);
	else
		log_info("kernel %u.%u: %s%s refused with -EINVAL", bufsel.conf.kernel >> 8,
			 bufsel.conf.kernel & 0xff, kind, name);
}

static const char *const trap_names[] = { "auto", "dispatch", "seccomp" };

/*
 * Chooses and installs the trap.  Returns 0 (bufsel may go active), or
 * -errno with bufsel to stay inactive; bufsel.trap_installed then says
 * whether the SIGSYS handler stays, which it must under a filter inherited
 * from a parent under bufsel: that filter traps this process's io_uring calls
 * and ring-like mmaps whether or not this bufsel works, and without a
 * handler they would kill the program.
 */
static int init_trap(void)
{
	struct sigaction old;
	uint64_t mask = 0;
	uintptr_t gate = 0;
	if (real_sigaction_call(SIGSYS, NULL, &old)) {
		log_error("libc's sigaction not found: bufsel is inactive, io_uring goes to the kernel");
		return -ENOSYS;
	}
	sys_call6(SYS_rt_sigprocmask, SIG_BLOCK, 0, (long)&mask, sizeof(mask), 0, 0);
	trap_handler_install();
	bufsel.trap_installed = 1;
	int inherited = trap_inherited(&gate);
	int r;
	if (inherited < 0) {
		log_warn("inherited seccomp filter that names no gate: io_uring calls fail with ENOSYS in this process");
		return -EEXIST;
	}
	if (inherited) {
		/* The parent's filter decides: its gate address, no second filter. */
		if ((r = gate_map(gate))) {
			log_error("cannot map the trampoline at 0x%lx, the address the inherited seccomp filter allows "
				  "(%s): bufsel is inactive, io_uring calls fail with ENOSYS in this process",
				  (unsigned long)gate, strerror(-r));
			return r;
		}
		bufsel.trap = BUFSEL_TRAP_SECCOMP;
		log_debug("seccomp filter inherited from the parent process (gate at 0x%lx); not stacking another",
			  (unsigned long)gate);
		return 0;
	}
	/* No filter of ours: the SIGSYS handler is only needed if a trap is installed. */
	bufsel.trap_installed = 0;
	real_sigaction_call(SIGSYS, &old, NULL);
	sys_call6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&mask, 0, sizeof(mask), 0, 0);
	if (valgrind_running() || (!bufsel.conf.secure && valgrind_launcher())) {
		if ((r = gate_map(0)))
			goto no_gate;
		if (valgrind_running())
			log_warn("running under valgrind: no seccomp filter, only io_uring calls made through libc "
				 "syscall() and mmap are intercepted");
		else
			log_info("VALGRIND_LIB is set (valgrind's launcher): no seccomp filter, which the tool process "
				 "would inherit");
		return 0;
	}
	trap_handler_install();
	bufsel.trap_installed = 1;
	if (bufsel.conf.trap != BUFSEL_TRAP_SECCOMP) {
		if (!(r = dispatch_init())) {
			bufsel.trap = BUFSEL_TRAP_DISPATCH;
			return 0;
		}
		if (bufsel.conf.trap == BUFSEL_TRAP_DISPATCH) {
			log_error("no Syscall User Dispatch (%s): bufsel is inactive, io_uring goes to the kernel",
				  strerror(-r));
			goto undo;
		}
		log_info("no Syscall User Dispatch (%s): trapping with a seccomp filter, which every child inherits",
			 strerror(-r));
	}
	if ((r = gate_map(0)))
		goto no_gate;
	if ((r = trap_install(sys_gate()))) {
		log_error("cannot install the seccomp filter (%s): bufsel is inactive, io_uring goes to the kernel",
			  strerror(-r));
		goto undo;
	}
	bufsel.trap = BUFSEL_TRAP_SECCOMP;
	return 0;
no_gate:
	log_error("cannot map the trampoline (%s): bufsel is inactive, io_uring goes to the kernel", strerror(-r));
undo:
	bufsel.trap_installed = 0;
	real_sigaction_call(SIGSYS, &old, NULL);
	sys_call6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&mask, 0, sizeof(mask), 0, 0);
	return r;
}

__attribute__((constructor)) static void bufsel_init(void)
{
	/* Static: the constructor runs once, before any thread, and a program
	 * may run with a small stack (ulimit -s 64). */
	static char err[4096];
	if (conf_load(&bufsel.conf, environ, err, sizeof(err))) {
		sys_write(2, err, strlen(err));
		_exit(1);
	}
	if (err[0] && bufsel_log_on(BUFSEL_LOG_WARN))
		sys_write(2, err, strlen(err));	/* warnings: a default file skipped */
	if (bufsel.conf.secure)
		log_info("secure-execution mode: no BUFSEL_* variable, BUFSEL_CONF, XDG_CONFIG_HOME or HOME "
			 "is read; only a root-owned %s", bufsel.conf.file[0] ? bufsel.conf.file : "/etc/bufsel.conf (absent)");
	heap_inject(bufsel.conf.fail_alloc, report_fail_alloc);
	arena_set_fail_hook(heap_fail_now);
	compat_init(&bufsel.conf, report_compat);
	signals_init();
	site_init();
	if (init_trap())
		return;
	/* Only an active bufsel reports crashes: an inactive one adds nothing. */
	crash_init();
	heap_set_mapper(&sys_mapper);
	log_debug("trap: %s (trap = %s)", bufsel.trap == BUFSEL_TRAP_DISPATCH ? "Syscall User Dispatch"
			   : bufsel.trap == BUFSEL_TRAP_SECCOMP ? "seccomp filter" : "none",
		  trap_names[bufsel.conf.trap]);
	pthread_atfork(mover_before_fork, NULL, after_fork_child);
	patch_init(bufsel.conf.patch);
	stats_init();
	bufsel.active = 1;
	log_debug("loaded: mode %s", bufsel.conf.mode == BUFSEL_MODE_PASSTHROUGH ? "passthrough" : "emulate");
}

__attribute__((destructor)) static void bufsel_fini(void)
{
	stats_write();
	if (!bufsel_log_on(BUFSEL_LOG_INFO))
		return;
	const struct bufsel_counters *n = &bufsel.n;
	if (bufsel.trap == BUFSEL_TRAP_DISPATCH && bufsel_log_on(BUFSEL_LOG_DEBUG))
		bufsel_log_uncapped(BUFSEL_LOG_DEBUG, "dispatch: %lu system calls trapped (trapped= below counts the io_uring ones)",
				    (unsigned long)n->dispatched);
	bufsel_log_uncapped(BUFSEL_LOG_INFO,
		   "exit: pid=%ld rings=%lu setup=%lu enter=%lu register=%lu mmap=%lu trapped=%lu hooked=%lu emulated=%lu held_peak=%lu patched=%lu sites=%lu "
		   "version=" BUFSEL_VERSION,
		   sys_call3(SYS_getpid, 0, 0, 0), n->rings, n->setup, n->enter, n->reg, n->mmap,
		   n->trapped, n->hooked, n->emulated, ring_held_peak(), n->patched, patch_sites());
}
