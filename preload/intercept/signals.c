#define _GNU_SOURCE
#include "preload/intercept/signals.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>

#include "preload/intercept/crash.h"
#include "preload/intercept/real.h"
#include "preload/intercept/sigdefer.h"
#include "preload/state.h"
#include "preload/sys.h"
#include "preload/uaccess.h"

#define EXPORT __attribute__((visibility("default")))
#define KSIGSET_SIZE 8
#define SIGSYS_BIT (1ULL << (SIGSYS - 1))

REAL_DECL(sigaction);
REAL_DECL(sigprocmask);
REAL_DECL(pthread_sigmask);
REAL_DECL(signal);

/* Whether this thread's program code believes SIGSYS is blocked. */
static __thread int prog_blocks_sigsys;

void signals_init(void)
{
	struct sigaction cur;
	if (REAL(sigaction) && !real_sigaction(SIGSYS, NULL, &cur)) {
		bufsel.prog_sigsys.handler = (void *)cur.sa_handler;
		bufsel.prog_sigsys.flags = (unsigned long)cur.sa_flags;
		memcpy(&bufsel.prog_sigsys.mask, &cur.sa_mask, KSIGSET_SIZE);
	}
}

static int trap_owns_sigsys(void)
{
	return bufsel.trap_installed;
}

static void prog_lock(void)
{
	while (atomic_exchange_explicit(&bufsel.sigsys_lock, 1, memory_order_acquire))
		sys_call3(SYS_sched_yield, 0, 0, 0);
}

static void prog_unlock(void)
{
	atomic_store_explicit(&bufsel.sigsys_lock, 0, memory_order_release);
}

/* Swaps the program's recorded SIGSYS action; either pointer may be NULL. */
static void prog_swap(const struct ksigaction *act, struct ksigaction *old)
{
	prog_lock();
	if (old)
		*old = bufsel.prog_sigsys;
	if (act)
		bufsel.prog_sigsys = *act;
	prog_unlock();
}

static void die_by_sigsys(void)
{
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	real_sigaction_call(SIGSYS, &dfl, NULL);
	uint64_t unblock = SIGSYS_BIT;
	sys_call6(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&unblock, 0, KSIGSET_SIZE, 0, 0);
	sys_call3(SYS_tgkill, sys_call3(SYS_getpid, 0, 0, 0), sys_call3(SYS_gettid, 0, 0, 0), SIGSYS);
}

void signals_chain(int sig, siginfo_t *si, ucontext_t *uc)
{
	struct ksigaction act;
	prog_swap(NULL, &act);
	if (act.handler == (void *)SIG_IGN && si->si_code != SYS_SECCOMP)
		return;
	if (act.handler == (void *)SIG_DFL || act.handler == (void *)SIG_IGN) {
		/* A seccomp trap cannot be ignored: the kernel kills, so do we. */
		die_by_sigsys();
		return;
	}
	uint64_t block = act.mask & ~SIGSYS_BIT, saved;
	sys_call6(SYS_rt_sigprocmask, SIG_BLOCK, (long)&block, (long)&saved, KSIGSET_SIZE, 0, 0);
	if (act.flags & SA_RESETHAND) {
		struct ksigaction dfl = { .handler = (void *)SIG_DFL };
		prog_swap(&dfl, NULL);
	}
	if (act.flags & SA_SIGINFO)
		((void (*)(int, siginfo_t *, void *))act.handler)(sig, si, uc);
	else
		((void (*)(int))act.handler)(sig);
	sys_call6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&saved, 0, KSIGSET_SIZE, 0, 0);
}

/* Applies the program's mask change minus SIGSYS; reports SIGSYS as the
 * program left it.  Returns 0 or -errno. */
static int mask_change(int how, const uint64_t *set, uint64_t *old)
{
	int was = prog_blocks_sigsys;
	uint64_t mine, *use = NULL;
	if (set) {
		if (how != SIG_BLOCK && how != SIG_UNBLOCK && how != SIG_SETMASK)
			return -EINVAL;
		mine = *set;
		int has = !!(mine & SIGSYS_BIT);
		if (how == SIG_SETMASK || has)
			prog_blocks_sigsys = how == SIG_UNBLOCK ? 0 : has;
		if (how != SIG_UNBLOCK)
			mine &= ~SIGSYS_BIT;
		use = &mine;
	}
	long r = sys_call6(SYS_rt_sigprocmask, how, (long)use, (long)old, KSIGSET_SIZE, 0, 0);
	if (r) {
		prog_blocks_sigsys = was;
		return (int)r;
	}
	if (old && was)
		*old |= SIGSYS_BIT;
	return 0;
}

static int libc_mask(int how, const sigset_t *set, sigset_t *old,
		     int (*real)(int, const sigset_t *, sigset_t *), int pthread_style)
{
	if (!trap_owns_sigsys())
		return real(how, set, old);
	uint64_t kset, kold;
	if (set)
		memcpy(&kset, set, KSIGSET_SIZE);
	int r = mask_change(how, set ? &kset : NULL, old ? &kold : NULL);
	if (r) {
		if (pthread_style)
			return -r;
		errno = -r;
		return -1;
	}
	if (old) {
		sigemptyset(old);
		memcpy(old, &kold, KSIGSET_SIZE);
	}
	return 0;
}

EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	return libc_mask(how, set, old, REAL(sigprocmask), 0);
}

EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	return libc_mask(how, set, old, REAL(pthread_sigmask), 1);
}

long signals_rt_sigprocmask(const long a[6])
{
	uint64_t set, old;
	if ((size_t)a[3] != KSIGSET_SIZE)
		return -EINVAL;
	if (a[1] && copy_from_prog(&set, (void *)a[1], sizeof(set)))
		return -EFAULT;
	int r = mask_change((int)a[0], a[1] ? &set : NULL, a[2] ? &old : NULL);
	if (!r && a[2] && copy_to_prog((void *)a[2], &old, sizeof(old)))
		return -EFAULT;
	return r;
}

/*
 * rt_sigprocmask trapped under Syscall User Dispatch: the mask to read and
 * change is *cur, the interrupted context's, which rt_sigreturn restores.
 */
long signals_rt_sigprocmask_ctx(const long a[6], uint64_t *cur)
{
	uint64_t set = 0, old = *cur | (prog_blocks_sigsys ? SIGSYS_BIT : 0);
	const uint64_t never = 1ULL << (SIGKILL - 1) | 1ULL << (SIGSTOP - 1);
	int how = (int)a[0];
	if ((size_t)a[3] != KSIGSET_SIZE)
		return -EINVAL;
	if (a[1] && copy_from_prog(&set, (void *)a[1], sizeof(set)))
		return -EFAULT;
	if (a[1]) {
		if (how != SIG_BLOCK && how != SIG_UNBLOCK && how != SIG_SETMASK)
			return -EINVAL;
		int has = !!(set & SIGSYS_BIT);
		if (how == SIG_SETMASK || has)
			prog_blocks_sigsys = how == SIG_UNBLOCK ? 0 : has;
		uint64_t m = how == SIG_BLOCK ? *cur | set : how == SIG_UNBLOCK ? *cur & ~set : set;
		*cur = m & ~never & ~SIGSYS_BIT;
	}
	if (a[2] && copy_to_prog((void *)a[2], &old, sizeof(old)))
		return -EFAULT;
	return 0;
}

static void to_kernel(const struct sigaction *sa, struct ksigaction *k)
{
	k->handler = (void *)sa->sa_handler;
	k->flags = (unsigned long)sa->sa_flags;
	k->restorer = NULL;
	memcpy(&k->mask, &sa->sa_mask, KSIGSET_SIZE);
}

static void from_kernel(const struct ksigaction *k, struct sigaction *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sa_handler = (__sighandler_t)k->handler;
	sa->sa_flags = (int)k->flags;
	memcpy(&sa->sa_mask, &k->mask, KSIGSET_SIZE);
}

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (sig == SIGSYS && trap_owns_sigsys()) {
		struct ksigaction kact, kold;
		if (act)
			to_kernel(act, &kact);
		prog_swap(act ? &kact : NULL, &kold);
		if (old)
			from_kernel(&kold, old);
		return 0;
	}
	struct sigdefer_txn t;
	int wrap = sigdefer_begin(sig, &t);
	struct sigaction mine;
	if (act && (trap_owns_sigsys() || wrap)) {
		mine = *act;
		/* A handler that runs with SIGSYS blocked could not use io_uring. */
		if (trap_owns_sigsys())
			sigdelset(&mine.sa_mask, SIGSYS);
		if (wrap) {
			void *fn = (void *)mine.sa_sigaction;
			unsigned long flags = (unsigned long)mine.sa_flags;
			sigdefer_wrap(&t, &fn, &flags);
			mine.sa_sigaction = (void (*)(int, siginfo_t *, void *))fn;
			mine.sa_flags = (int)flags;
		}
		act = &mine;
	}
	int r = REAL(sigaction)(sig, act, old);
	if (wrap) {
		if (!r && old) {
			void *fn = (void *)old->sa_sigaction;
			unsigned long flags = (unsigned long)old->sa_flags;
			sigdefer_unwrap(&t, &fn, &flags);
			old->sa_sigaction = (void (*)(int, siginfo_t *, void *))fn;
			old->sa_flags = (int)flags;
		}
		sigdefer_end(&t, r != 0);
	}
	if (!r && old && !(old->sa_flags & SA_SIGINFO) && crash_is_ours((const void *)old->sa_handler))
		old->sa_handler = SIG_DFL;
	else if (!r && old && (old->sa_flags & SA_SIGINFO) && crash_is_ours((const void *)old->sa_sigaction)) {
		memset(old, 0, sizeof(*old));
		old->sa_handler = SIG_DFL;
	}
	return r;
}

long signals_rt_sigaction(const long a[6])
{
	struct ksigaction act = {0}, old;
	if ((size_t)a[3] != KSIGSET_SIZE)
		return -EINVAL;
	if (a[1] && copy_from_prog(&act, (void *)a[1], sizeof(act)))
		return -EFAULT;
	if (a[0] != SIGSYS) {
		struct sigdefer_txn t;
		int wrap = sigdefer_begin((int)a[0], &t);
		act.mask &= ~SIGSYS_BIT;
		if (wrap && a[1])
			sigdefer_wrap(&t, &act.handler, &act.flags);
		long r = sys_call6(SYS_rt_sigaction, a[0], a[1] ? (long)&act : 0, a[2] ? (long)&old : 0, a[3], 0, 0);
		if (wrap) {
			if (!r && a[2])
				sigdefer_unwrap(&t, &old.handler, &old.flags);
			sigdefer_end(&t, r != 0);
		}
		/* As the kernel: the new disposition stays when the old one
		 * cannot be written. */
		if (!r && a[2] && copy_to_prog((void *)a[2], &old, sizeof(old)))
			return -EFAULT;
		return r;
	}
	prog_swap(a[1] ? &act : NULL, &old);
	if (a[2] && copy_to_prog((void *)a[2], &old, sizeof(old)))
		return -EFAULT;
	return 0;
}

EXPORT __sighandler_t signal(int sig, __sighandler_t handler)
{
	if (sig != SIGSYS || !trap_owns_sigsys()) {
		if (handler == SIG_ERR || handler == SIG_DFL || handler == SIG_IGN || !sigdefer_applies(sig))
			return REAL(signal)(sig, handler);
		/* Through the hook above, with glibc's BSD semantics, so that the
		 * handler goes behind bufsel's. */
		struct sigaction sa, old;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = handler;
		sigemptyset(&sa.sa_mask);
		sigaddset(&sa.sa_mask, sig);
		sa.sa_flags = SA_RESTART;
		return sigaction(sig, &sa, &old) ? SIG_ERR : old.sa_handler;
	}
	/* glibc's signal() has BSD semantics. */
	struct ksigaction act = { .handler = (void *)handler, .flags = SA_RESTART }, old;
	prog_swap(&act, &old);
	return (__sighandler_t)old.handler;
}

EXPORT __sighandler_t bsd_signal(int sig, __sighandler_t handler)
{
	return signal(sig, handler);
}
