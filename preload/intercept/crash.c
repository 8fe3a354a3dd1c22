#define _GNU_SOURCE
#include "preload/intercept/crash.h"

#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>

#include "preload/intercept/real.h"
#include "preload/intercept/site.h"
#include "preload/sys.h"

static const int crash_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE };

static void crash_handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	const void *ip = (const void *)uc->uc_mcontext.gregs[REG_RIP];
	(void)si;
	if (site_in_bufsel(ip)) {
		char line[128];
		int n = snprintf(line, sizeof(line), "bufsel: crash: signal %d (%s) inside bufsel's own code; backtrace:\n",
				 sig, strsignal(sig));
		sys_write(2, line, (size_t)n);
		site_backtrace(uc, "bufsel: crash:");
	}
	/* Re-executing the faulting instruction under SIG_DFL ends the process
	 * exactly as it would have ended without bufsel. */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	real_sigaction_call(sig, &dfl, NULL);
	if (si->si_code <= 0)
		sys_call3(SYS_tgkill, sys_call3(SYS_getpid, 0, 0, 0), sys_call3(SYS_gettid, 0, 0, 0), sig);
}

void crash_init(void)
{
	for (size_t i = 0; i < sizeof(crash_signals) / sizeof(crash_signals[0]); i++) {
		struct sigaction cur, sa;
		if (real_sigaction_call(crash_signals[i], NULL, &cur) || cur.sa_handler != SIG_DFL)
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = crash_handler;
		sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESETHAND;
		sigemptyset(&sa.sa_mask);
		real_sigaction_call(crash_signals[i], &sa, NULL);
	}
}

int crash_is_ours(const void *handler)
{
	return handler == (const void *)crash_handler;
}
