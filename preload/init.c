/*
 * Start and end of bufsel inside a host process.  The constructor reads the
 * configuration (a bad value stops the program here, before main, with one
 * line per problem), maps the trampoline, takes over SIGSYS and installs the
 * trap.  Anything that fails leaves bufsel inactive: the program then runs
 * as if bufsel were not there, and says so once.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/compat.h"
#include "preload/crash.h"
#include "preload/heap.h"
#include "preload/log.h"
#include "preload/mover.h"
#include "preload/patch.h"
#include "preload/ring.h"
#include "preload/signals.h"
#include "preload/site.h"
#include "preload/spin.h"
#include "preload/state.h"
#include "preload/stats.h"
#include "preload/sys.h"
#include "preload/trap.h"
#include "preload/valgrind.h"

struct bufsel_state bufsel;

extern char **environ;

static void after_fork_child(void)
{
	spin_after_fork();
	ring_after_fork();
	mover_after_fork();
	stats_after_fork();
	atomic_store(&bufsel.sigsys_lock, 0);
}

/* bufsel's heap maps through the trampoline: never trapped, errno untouched. */
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

/*
 * Without the trampoline bufsel is inactive, but a filter inherited from a
 * parent under bufsel still traps io_uring calls and ring-like mmaps: with
 * no SIGSYS handler they would kill the program.  The handler stays (in its
 * no-trampoline form, see trap.c) only if such a filter is there; otherwise
 * SIGSYS and the signal mask are given back as they were.
 */
static void catch_inherited_trap(void)
{
	struct sigaction old;
	uint64_t mask = 0;
	if (signals_real_sigaction(SIGSYS, NULL, &old))
		return;
	sys_call6(SYS_rt_sigprocmask, SIG_BLOCK, 0, (long)&mask, sizeof(mask), 0, 0);
	trap_handler_install();
	bufsel.trap_installed = 1;
	if (trap_already_present()) {
		log_warn("inherited seccomp filter: io_uring calls fail with ENOSYS in this process "
			 "(the filter's trampoline page is not available)");
		return;
	}
	bufsel.trap_installed = 0;
	signals_real_sigaction(SIGSYS, &old, NULL);
	sys_call6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&mask, 0, sizeof(mask), 0, 0);
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
	compat_init(&bufsel.conf, report_compat);
	signals_init();
	site_init();
	crash_init();
	int r = sys_trampoline_init();
	if (r) {
		log_error("cannot map the trampoline at 0x%lx (%s): bufsel is inactive, io_uring goes to the kernel",
			  SYS_TRAMPOLINE_ADDR, strerror(-r));
		catch_inherited_trap();
		return;
	}
	heap_set_mapper(&sys_mapper);
	if (valgrind_running()) {
		log_warn("running under valgrind: no seccomp filter, only io_uring calls made through libc "
			 "syscall() and mmap are intercepted");
	} else if (!bufsel.conf.secure && valgrind_launcher()) {
		log_info("VALGRIND_LIB is set (valgrind's launcher): no seccomp filter, which the tool process "
			 "would inherit");
	} else {
		trap_handler_install();
		bufsel.trap_installed = 1;
		if (trap_already_present()) {
			log_debug("trap inherited from the parent process; not stacking another filter");
		} else if ((r = trap_install())) {
			bufsel.trap_installed = 0;
			log_error("cannot install the seccomp filter (%s): bufsel is inactive, io_uring goes to the kernel",
				  strerror(-r));
			return;
		}
	}
	pthread_atfork(NULL, NULL, after_fork_child);
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
	bufsel_log_uncapped(BUFSEL_LOG_INFO,
		   "exit: pid=%ld rings=%lu setup=%lu enter=%lu register=%lu mmap=%lu trapped=%lu hooked=%lu emulated=%lu held_peak=%lu patched=%lu sites=%lu",
		   sys_call3(SYS_getpid, 0, 0, 0), n->rings, n->setup, n->enter, n->reg, n->mmap,
		   n->trapped, n->hooked, n->emulated, ring_held_peak(), n->patched, patch_sites());
}
