#define _GNU_SOURCE
#include "preload/intercept/sigdefer.h"

#include <signal.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <ucontext.h>

#include "preload/spin.h"
#include "preload/state.h"
#include "preload/sys.h"

#define BIT(sig) (1ULL << ((sig) - 1))
/* Raised by a fault, not sent: handled where they land. */
#define FAULTS (BIT(SIGSEGV) | BIT(SIGBUS) | BIT(SIGILL) | BIT(SIGFPE) | BIT(SIGTRAP))
#define NEVER (FAULTS | BIT(SIGSYS) | BIT(SIGKILL) | BIT(SIGSTOP))

/* Set while this thread changes a disposition: the rt_sigaction libc's
 * sigaction makes for the hook (trapped under Syscall User Dispatch) is
 * then installed as it comes. */
static __thread int in_change __attribute__((tls_model("initial-exec")));

static void read_handler(int sig, void **fn, unsigned long *flags)
{
	struct prog_handler *h = &bufsel.prog_handler[sig];
	for (;;) {
		unsigned seq = atomic_load_explicit(&h->seq, memory_order_acquire);
		*fn = atomic_load_explicit(&h->fn, memory_order_relaxed);
		*flags = atomic_load_explicit(&h->flags, memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		/* The writer runs on another thread (its own has signals
		 * blocked), so an odd count ends soon. */
		if (!(seq & 1) && atomic_load_explicit(&h->seq, memory_order_relaxed) == seq)
			return;
		sys_call3(SYS_sched_yield, 0, 0, 0);
	}
}

static void write_handler(int sig, void *fn, unsigned long flags)
{
	struct prog_handler *h = &bufsel.prog_handler[sig];
	atomic_fetch_add_explicit(&h->seq, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&h->fn, fn, memory_order_relaxed);
	atomic_store_explicit(&h->flags, flags, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->seq, 1, memory_order_release);
}

/* The signal queued again for this thread, siginfo and all (its own
 * process may, whatever the si_code): 0, or -errno. */
static long requeue(int sig, siginfo_t *si)
{
	long pid = sys_call3(SYS_getpid, 0, 0, 0);
	return sys_call6(SYS_rt_tgsigqueueinfo, pid, spin_self(), sig, (long)si, 0, 0);
}

/* What the kernel runs for a wrapped signal. */
static void sigdefer_entry(int sig, siginfo_t *si, void *ucv)
{
	void *fn;
	unsigned long flags;
	read_handler(sig, &fn, &flags);
	if (spin_deferred & BIT(sig)) {
		/* The copy queued again, delivered although it should be
		 * blocked: the mask the handler left in its context was not
		 * restored (valgrind restores its own copy).  It runs here,
		 * once, as it did before signals were put off. */
		spin_deferred &= ~BIT(sig);
	} else if (spin_held && !(flags & SA_RESETHAND)) {
		/* Queued again, then blocked where it landed until the last lock
		 * is let go (spin_deliver_deferred). */
		if (!requeue(sig, si)) {
			ucontext_t *uc = ucv;
			uint64_t mask;
			__builtin_memcpy(&mask, &uc->uc_sigmask, sizeof(mask));
			mask |= BIT(sig);
			__builtin_memcpy(&uc->uc_sigmask, &mask, sizeof(mask));
			spin_deferred |= BIT(sig);
			return;
		}
	}
	if (!fn) {
		/* sigaction on another thread has just made it SIG_DFL or
		 * SIG_IGN, and is about to tell the kernel: what it installs
		 * decides. */
		requeue(sig, si);
		return;
	}
	if (flags & SA_SIGINFO)
		((void (*)(int, siginfo_t *, void *))fn)(sig, si, ucv);
	else
		((void (*)(int))fn)(sig);
}

int sigdefer_applies(int sig)
{
	return bufsel.active && sig >= 1 && sig <= 64 && !(BIT(sig) & NEVER) && !in_change;
}

int sigdefer_begin(int sig, struct sigdefer_txn *t)
{
	if (!sigdefer_applies(sig))
		return 0;
	/* SIGSYS stays open (libc's rt_sigaction traps under Syscall User
	 * Dispatch), and faults too. */
	uint64_t block = ~NEVER;
	sys_call6(SYS_rt_sigprocmask, SIG_BLOCK, (long)&block, (long)&t->saved_mask, sizeof(block), 0, 0);
	while (atomic_exchange_explicit(&bufsel.handler_lock, 1, memory_order_acquire))
		sys_call3(SYS_sched_yield, 0, 0, 0);
	in_change = 1;
	t->sig = sig;
	read_handler(sig, &t->prev_fn, &t->prev_flags);
	return 1;
}

void sigdefer_wrap(struct sigdefer_txn *t, void **handler, unsigned long *flags)
{
	void *fn = *handler;
	if (fn == (void *)SIG_DFL || fn == (void *)SIG_IGN || fn == (void *)sigdefer_entry) {
		if (fn != (void *)sigdefer_entry)
			write_handler(t->sig, NULL, 0);
		return;
	}
	write_handler(t->sig, fn, *flags);
	*handler = (void *)sigdefer_entry;
	*flags |= SA_SIGINFO;
}

void sigdefer_unwrap(const struct sigdefer_txn *t, void **handler, unsigned long *flags)
{
	if (*handler != (void *)sigdefer_entry)
		return;
	*handler = t->prev_fn ? t->prev_fn : (void *)SIG_DFL;
	*flags = (*flags & ~(unsigned long)SA_SIGINFO) | (t->prev_flags & SA_SIGINFO);
}

void sigdefer_end(struct sigdefer_txn *t, int failed)
{
	if (failed)
		write_handler(t->sig, t->prev_fn, t->prev_flags);
	in_change = 0;
	atomic_store_explicit(&bufsel.handler_lock, 0, memory_order_release);
	sys_call6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&t->saved_mask, 0, sizeof(t->saved_mask), 0, 0);
}

/* Another thread of the parent may have been changing a disposition: that
 * thread is not in the child, and its lock and an odd count would stay for
 * ever (the entry it was writing is then the new one or the old). */
void sigdefer_after_fork(void)
{
	atomic_store_explicit(&bufsel.handler_lock, 0, memory_order_relaxed);
	for (int sig = 1; sig <= 64; sig++) {
		struct prog_handler *h = &bufsel.prog_handler[sig];
		if (atomic_load_explicit(&h->seq, memory_order_relaxed) & 1)
			atomic_fetch_add_explicit(&h->seq, 1, memory_order_release);
	}
}
