/*
 * A signal that lands while its thread holds one of bufsel's locks waits for
 * the last of them to be let go, with its siginfo, and is then delivered to
 * the program's handler; the handler the program installed is the one
 * sigaction reports.  (The lock a handler's own io_uring call needs may be
 * held by the code it interrupted: the same CQE was once moved twice.)
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/intercept/sigdefer.h"
#include "preload/spin.h"
#include "preload/state.h"
#include "preload/valgrind.h"

static volatile sig_atomic_t handled;
static volatile int got_code, got_pid, got_value;

static void on_info(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)uc;
	handled++;
	got_code = si->si_code;
	got_pid = si->si_pid;
	got_value = si->si_value.sival_int;
}

static void on_plain(int sig)
{
	(void)sig;
	handled++;
}

/* What signals.c's sigaction hook does around libc's sigaction. */
static void install(int sig, void *fn, int flags, struct sigaction *old)
{
	struct sigdefer_txn t;
	cr_assert_eq(sigdefer_begin(sig, &t), 1);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	void *h = fn;
	unsigned long f = (unsigned long)flags;
	sigdefer_wrap(&t, &h, &f);
	cr_assert_neq(h, fn, "a handler goes behind bufsel's");
	sa.sa_sigaction = (void (*)(int, siginfo_t *, void *))h;
	sa.sa_flags = (int)f;
	sigemptyset(&sa.sa_mask);
	int r = sigaction(sig, &sa, old);
	if (!r && old) {
		void *oh = (void *)old->sa_sigaction;
		unsigned long of = (unsigned long)old->sa_flags;
		sigdefer_unwrap(&t, &oh, &of);
		old->sa_sigaction = (void (*)(int, siginfo_t *, void *))oh;
		old->sa_flags = (int)of;
	}
	sigdefer_end(&t, r != 0);
	cr_assert_eq(r, 0);
}

static void send_self(int sig, int value)
{
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	si.si_signo = sig;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_int = value;
	cr_assert_eq(syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), sig, &si), 0);
}

/* Natively a signal a thread sends itself unblocked is delivered as the
 * system call returns; valgrind delivers it at a point of its own, soon
 * after.  Waits up to 2 s for the count to reach n; the count. */
static int await_handled(int n)
{
	for (int i = 0; handled < n && i < 20000; i++)
		usleep(100);
	return handled;
}

static int blocked(int sig)
{
	sigset_t cur;
	sigprocmask(SIG_BLOCK, NULL, &cur);
	return sigismember(&cur, sig);
}

static void setup(void)
{
	bufsel.active = 1;
	handled = 0;
}

TestSuite(sigdefer, .init = setup);

/* Under valgrind the mask a handler leaves in its context is not the one
 * sigreturn restores: the signal cannot be held off, and must then run
 * where it lands, once, rather than come back for ever. */
Test(sigdefer, under_valgrind_it_runs_where_it_lands_once)
{
	static struct spin a;
	if (!valgrind_running())
		cr_skip_test("only under valgrind");
	install(SIGUSR1, (void *)on_info, SA_SIGINFO, NULL);
	spin_lock(&a);
	send_self(SIGUSR1, 9);
	cr_assert_eq(await_handled(1), 1);
	cr_assert_eq(got_value, 9);
	spin_unlock(&a);
	cr_assert_eq(await_handled(2), 1, "run twice");
	cr_assert_not(blocked(SIGUSR1));
}

Test(sigdefer, delivered_when_the_last_lock_is_let_go)
{
	static struct spin a, b;
	if (valgrind_running())
		cr_skip_test("valgrind restores its own copy of the mask (the test above)");
	install(SIGUSR1, (void *)on_info, SA_SIGINFO, NULL);
	spin_lock(&a);
	spin_lock(&b);
	send_self(SIGUSR1, 42);
	cr_assert_eq(handled, 0, "the handler ran while a lock was held");
	cr_assert(blocked(SIGUSR1), "the signal waits blocked");
	spin_unlock(&b);
	cr_assert_eq(handled, 0, "the handler ran while a lock was held");
	spin_unlock(&a);
	cr_assert_eq(handled, 1, "delivered at the last unlock");
	cr_assert_eq(got_code, SI_QUEUE, "the siginfo is the sender's");
	cr_assert_eq(got_pid, getpid());
	cr_assert_eq(got_value, 42);
	cr_assert_not(blocked(SIGUSR1), "the mask is the program's again");
	cr_assert_eq(spin_held, 0);
}

Test(sigdefer, trylock_counts_and_a_failed_one_does_not)
{
	static struct spin a;
	if (valgrind_running())
		cr_skip_test("valgrind restores its own copy of the mask");
	install(SIGUSR2, (void *)on_plain, 0, NULL);
	cr_assert(spin_trylock(&a));
	cr_assert_not(spin_trylock(&a), "held: a trylock fails");
	cr_assert_eq(spin_held, 1);
	send_self(SIGUSR2, 0);
	cr_assert_eq(handled, 0);
	spin_unlock(&a);
	cr_assert_eq(handled, 1);
}

Test(sigdefer, at_once_without_a_lock)
{
	install(SIGUSR1, (void *)on_info, SA_SIGINFO, NULL);
	send_self(SIGUSR1, 7);
	cr_assert_eq(await_handled(1), 1);
	cr_assert_eq(got_value, 7);
}

Test(sigdefer, resethand_is_not_put_off)
{
	/* The kernel resets the disposition as it delivers to bufsel's
	 * handler: queued again, the signal would meet SIG_DFL. */
	static struct spin a;
	install(SIGUSR1, (void *)on_info, SA_SIGINFO | SA_RESETHAND, NULL);
	spin_lock(&a);
	send_self(SIGUSR1, 1);
	cr_assert_eq(await_handled(1), 1);
	spin_unlock(&a);
	struct sigaction now;
	cr_assert_eq(sigaction(SIGUSR1, NULL, &now), 0);
	cr_assert_eq((void *)now.sa_handler, (void *)SIG_DFL);
}

Test(sigdefer, the_old_disposition_is_the_programs)
{
	struct sigaction old;
	install(SIGUSR2, (void *)on_plain, SA_RESTART, &old);
	cr_assert_eq((void *)old.sa_handler, (void *)SIG_DFL);
	install(SIGUSR2, (void *)on_info, SA_SIGINFO, &old);
	cr_assert_eq((void *)old.sa_handler, (void *)on_plain);
	cr_assert_not(old.sa_flags & SA_SIGINFO, "SA_SIGINFO is bufsel's, not the program's");
	cr_assert(old.sa_flags & SA_RESTART);
	install(SIGUSR2, (void *)on_plain, 0, &old);
	cr_assert_eq((void *)old.sa_sigaction, (void *)on_info);
	cr_assert(old.sa_flags & SA_SIGINFO);
}

Test(sigdefer, faults_and_sigsys_are_left_alone)
{
	struct sigdefer_txn t;
	cr_assert_eq(sigdefer_begin(SIGSEGV, &t), 0);
	cr_assert_eq(sigdefer_begin(SIGSYS, &t), 0);
	cr_assert_eq(sigdefer_begin(SIGKILL, &t), 0);
	bufsel.active = 0;
	cr_assert_eq(sigdefer_begin(SIGUSR1, &t), 0, "an inactive bufsel wraps nothing");
}
