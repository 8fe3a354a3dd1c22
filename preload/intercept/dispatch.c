/*
 * Syscall User Dispatch.  The allowed range is libc's text: libc's own
 * system calls (read, futex, the rt_sigreturn of every signal handler's
 * restorer) never trap, nor do bufsel's, which go through a `syscall; ret`
 * in that text (the gate, sys.c).  Everything else a thread issues with its
 * own `syscall` instruction — liburing's inline io_uring calls and ring
 * mmaps, ld.so loading a library, a vDSO fallback — raises SIGSYS, and
 * dispatch_trap() answers it in place.  The selector is per thread and stays
 * BLOCK: nothing has to switch it for bufsel's own calls, so a program signal
 * handler that runs while bufsel waits in the kernel traps as usual.
 *
 * The kernel clears the setting in every new thread and process and on
 * execve.  pthread_create is wrapped to arm each new thread, and a fork child
 * is re-armed by pthread_atfork (init.c).  Threads made with a raw clone run
 * unarmed: their inline io_uring calls reach the kernel unseen.
 */
#define _GNU_SOURCE
#include "preload/intercept/dispatch.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <linux/audit.h>
#include <linux/sched.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/intercept/emulate.h"
#include "preload/intercept/patch.h"
#include "preload/intercept/real.h"
#include "preload/intercept/signals.h"
#include "preload/log.h"
#include "preload/state.h"
#include "preload/sys.h"
#include "preload/uaccess.h"

#ifndef PR_SET_SYSCALL_USER_DISPATCH
#define PR_SET_SYSCALL_USER_DISPATCH 59
#define PR_SYS_DISPATCH_OFF 0
#define PR_SYS_DISPATCH_ON 1
#endif
#define SEL_ALLOW 0
#define SEL_BLOCK 1

#define EXPORT __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))

static struct {
	uintptr_t lo, hi;	/* libc's executable segment */
	int on;			/* the process runs under dispatch */
} dispatch;

/* Read by the kernel on every call from outside [lo, hi). */
static TLS volatile char selector = SEL_BLOCK;
/* This thread was armed by bufsel (a dispatched SIGSYS is then ours). */
static TLS int armed;

REAL_DECL(pthread_create);

static int arm(void)
{
	selector = SEL_BLOCK;
	long r = sys_call6(SYS_prctl, PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, (long)dispatch.lo,
			   (long)(dispatch.hi - dispatch.lo), (long)&selector, 0);
	armed = !r;
	return (int)r;
}

struct libc_text {
	uintptr_t base, lo, hi;
};

static int find_text(struct dl_phdr_info *info, size_t size, void *data)
{
	struct libc_text *t = data;
	(void)size;
	if (info->dlpi_addr != t->base)
		return 0;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			t->lo = (info->dlpi_addr + ph->p_vaddr) & ~4095UL;
			t->hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + 4095) & ~4095UL;
			return 1;
		}
	}
	return 0;
}

int dispatch_init(void)
{
	/* libc is the object that defines getpid (bufsel does not). */
	Dl_info di;
	struct libc_text t = { 0 };
	if (!dladdr((void *)&getpid, &di) || !di.dli_fbase)
		return -ENOENT;
	t.base = (uintptr_t)di.dli_fbase;
	/* dladdr gives the load address of the ELF header; dl_iterate_phdr the bias.
	 * For libc (linked at 0) they are the same. */
	if (!dl_iterate_phdr(find_text, &t) || !t.lo)
		return -ENOENT;
	dispatch.lo = t.lo;
	dispatch.hi = t.hi;
	/* The gate must be found before arming: after it, bufsel's own text traps. */
	uintptr_t before = sys_gate();
	int r = sys_gate_in(t.lo, t.hi);
	if (r)
		return r;
	if ((r = arm())) {
		sys_gate_restore(before);
		return r;
	}
	dispatch.on = 1;
	return 0;
}

int dispatch_owns(void)
{
	return dispatch.on && armed;
}

void dispatch_after_fork(void)
{
	if (dispatch.on && armed)
		arm();
}

/* ---- threads ------------------------------------------------------------------------- */

struct start {
	void *(*fn)(void *);
	void *arg;
	atomic_int used;	/* slots[] only */
	int heap;		/* malloc'ed: the slots were all taken */
};

/*
 * Where a new thread finds its start routine: a slot of bufsel's own, free
 * again as soon as the thread has copied it, so that creating a thread takes
 * no lock and no allocation (ASan's allocator lock, taken by a free in the
 * new thread, was seen copied held into the raw-clone children of
 * clone_lock).  malloc only when 64 threads are being started at once.
 */
#define START_SLOTS 64
static struct start slots[START_SLOTS];

static struct start *start_claim(void)
{
	for (int i = 0; i < START_SLOTS; i++) {
		int free_ = 0;
		if (atomic_compare_exchange_strong(&slots[i].used, &free_, 1))
			return &slots[i];
	}
	struct start *s = malloc(sizeof(*s));
	if (s)
		s->heap = 1;
	return s;
}

static void start_release(struct start *s)
{
	if (s->heap)
		free(s);
	else
		atomic_store(&s->used, 0);
}

static void *armed_start(void *p)
{
	struct start *sp = p;
	void *(*fn)(void *) = sp->fn;
	void *arg = sp->arg;
	start_release(sp);
	if (arm())
		log_once(BUFSEL_LOG_WARN, ONCE_UNDISPATCHED,
			 "a new thread could not be armed: its inline io_uring calls reach the kernel unseen");
	return fn(arg);
}

/* Set while bufsel creates a thread of its own (mover.c). */
static TLS int creating_own;

int dispatch_create_own(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	creating_own = 1;
	int r = pthread_create(t, attr, fn, arg);
	creating_own = 0;
	return r;
}

EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	if (!dispatch.on || creating_own)
		return REAL(pthread_create)(t, attr, fn, arg);
	struct start *s = start_claim();
	if (!s)
		return EAGAIN;
	s->fn = fn;
	s->arg = arg;
	int r = REAL(pthread_create)(t, attr, armed_start, s);
	if (r)
		start_release(s);
	return r;
}

/*
 * A program that sets up Syscall User Dispatch itself takes the calling
 * thread over: the dispatched SIGSYS it then gets are its own, chained to its
 * handler as any SIGSYS that is not bufsel's (signals.c).
 */
EXPORT int prctl(int option, ...)
{
	va_list ap;
	va_start(ap, option);
	unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
	unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
	va_end(ap);
	long r = sys_call6(SYS_prctl, option, (long)a2, (long)a3, (long)a4, (long)a5, 0);
	if (option == PR_SET_SYSCALL_USER_DISPATCH && !r)
		armed = 0;
	if (sys_is_err(r)) {
		errno = (int)-r;
		return -1;
	}
	return (int)r;
}

/* ---- the trapped call ---------------------------------------------------------------- */

/*
 * rt_sigreturn from a restorer outside libc (a runtime with its own): done
 * from the gate with the stack pointer the program had, as its restorer
 * would have done it; bufsel's own signal frame below is simply dropped.
 */
#ifdef __SANITIZE_ADDRESS__
void __asan_handle_no_return(void);
#endif

__attribute__((noreturn)) static void sigreturn_from(uintptr_t sp)
{
#ifdef __SANITIZE_ADDRESS__
	/* As for longjmp: the frames left behind must not stay poisoned for
	 * whatever the stack holds there next (the next signal frame). */
	__asan_handle_no_return();
#endif
	/* Fixed registers: %eax is loaded in between. */
	__asm__ volatile("mov %0, %%rsp\n\t"
			 "mov %2, %%eax\n\t"
			 "jmp *%1"
			 :
			 : "D"(sp), "S"(sys_gate()), "i"(SYS_rt_sigreturn)
			 : "memory");
	__builtin_unreachable();
}

/*
 * A call that cannot be re-issued from the handler: a clone that shares the
 * address space or gets a stack of its own (the child would start inside
 * bufsel's handler), or a call of another ABI (int 0x80).  The thread is let
 * through for good: selector ALLOW, and the same `syscall` executed again.
 */
static void let_through(greg_t *g, long nr, const char *why)
{
	selector = SEL_ALLOW;
	g[REG_RIP] -= 2;	/* `syscall` and `int $0x80` are both two bytes */
	g[REG_RAX] = nr;
	/* debug: LeakSanitizer's tracer thread, a raw clone at every exit of an
	 * ASan program, is the usual one. */
	log_debug("%s outside libc: that thread's inline system calls are no longer caught", why);
}

static int clone3_own_vm_or_stack(long args)
{
	struct clone_args ca;
	memset(&ca, 0, sizeof(ca));
	if (copy_from_prog(&ca, (const void *)args, offsetof(struct clone_args, tls)))
		return 1;	/* let the kernel say what is wrong with it */
	return (ca.flags & CLONE_VM) || ca.stack;
}

void dispatch_trap(siginfo_t *si, ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	long nr = si->si_syscall;
	long a[6] = { g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_R10], g[REG_R8], g[REG_R9] };
	struct call_site cs = { PATH_TRAP, uc, (void *)g[REG_RIP] };

	atomic_fetch_add_explicit(&bufsel.n.dispatched, 1, memory_order_relaxed);
	if (si->si_arch != AUDIT_ARCH_X86_64) {
		let_through(g, nr, "a 32-bit system call");
		return;
	}
	switch (nr) {
	case __NR_io_uring_setup:
	case __NR_io_uring_enter:
	case __NR_io_uring_register:
		if (!bufsel.active)
			break;
		g[REG_RAX] = emulate_syscall(nr, a, &cs);
		patch_site((uintptr_t)g[REG_RIP], nr);
		return;
	case SYS_mmap:
		if (!emulate_maps_ring(a))
			break;
		g[REG_RAX] = emulate_syscall(nr, a, &cs);
		return;
	case SYS_close:
		/* An inline close (liburing's own system calls) may end a ring,
		 * after which the program may unmap what bufsel reads for it. */
		if (!bufsel.active)
			break;
		g[REG_RAX] = emulate_close((int)a[0]);
		return;
	case SYS_rt_sigreturn:
		sigreturn_from((uintptr_t)g[REG_RSP]);
	case SYS_rt_sigprocmask:
		/* The mask to change is the one rt_sigreturn restores. */
		g[REG_RAX] = signals_rt_sigprocmask_ctx(a, (uint64_t *)(void *)&uc->uc_sigmask);
		return;
	case SYS_rt_sigaction:
		g[REG_RAX] = signals_rt_sigaction(a);
		return;
	case SYS_vfork:
		let_through(g, nr, "vfork");
		return;
	case SYS_clone:
		if ((a[0] & CLONE_VM) || a[1]) {
			let_through(g, nr, "a clone sharing memory");
			return;
		}
		break;
	case SYS_clone3:
		if (clone3_own_vm_or_stack(a[0])) {
			let_through(g, nr, "a clone sharing memory");
			return;
		}
		break;
	}
	g[REG_RAX] = sys_call6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	/* A forked child (fork, or a clone like it) returns here, unarmed. */
	if (g[REG_RAX] == 0 && (nr == SYS_fork || nr == SYS_clone || nr == SYS_clone3) && armed)
		arm();
}
