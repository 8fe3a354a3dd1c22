#define _GNU_SOURCE
#include "preload/trap.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>

#include "preload/emulate.h"
#include "preload/log.h"
#include "preload/patch.h"
#include "preload/signals.h"
#include "preload/site.h"
#include "preload/sys.h"

#define SD_NR offsetof(struct seccomp_data, nr)
#define SD_ARCH offsetof(struct seccomp_data, arch)
#define SD_IP_LO offsetof(struct seccomp_data, instruction_pointer)
#define SD_IP_HI (SD_IP_LO + 4)
#define SD_ARG_LO(i) (offsetof(struct seccomp_data, args) + 8ul * (i))
#define SD_ARG_HI(i) (SD_ARG_LO(i) + 4)

#define LD(off) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define JEQ(k, jt, jf) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (jt), (jf))
#define JGE(k, jt, jf) BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (k), (jt), (jf))

/* Instruction indexes of the two verdicts, for the relative jumps below. */
enum { V_TRAP = 24, V_ALLOW = 25 };
#define TO(target, pc) ((target) - (pc) - 1)

/*
 * The syscall number is tested first: for every other number the verdict is
 * then a constant ALLOW, which lets the kernel (5.11+) cache it and skip the
 * filter entirely on the program's ordinary system calls.
 */
static struct sock_filter trap_filter[] = {
	/* 0 */ LD(SD_ARCH),
	/* 1 */ JEQ(AUDIT_ARCH_X86_64, 0, TO(V_ALLOW, 1)),
	/* 2 */ LD(SD_NR),
	/* 3 */ JEQ(__NR_io_uring_setup, 3, 0),
	/* 4 */ JEQ(__NR_io_uring_enter, 2, 0),
	/* 5 */ JEQ(__NR_io_uring_register, 1, 0),
	/* 6 */ JEQ(__NR_mmap, 0, TO(V_ALLOW, 6)),
	/* bufsel's own calls come from the trampoline. */
	/* 7 */ LD(SD_IP_LO),
	/* 8 */ JEQ((uint32_t)(SYS_TRAMPOLINE_ADDR + SYS_TRAMPOLINE_RET_OFF), 0, 2),
	/* 9 */ LD(SD_IP_HI),
	/* 10 */ JEQ((uint32_t)((SYS_TRAMPOLINE_ADDR + SYS_TRAMPOLINE_RET_OFF) >> 32), TO(V_ALLOW, 10), 0),
	/* 11 */ LD(SD_NR),
	/* 12 */ JEQ(__NR_mmap, 0, TO(V_TRAP, 12)),
	/* Ring mappings are MAP_SHARED|MAP_POPULATE by universal convention;
	 * other shared file mappings are not worth a signal each. */
	/* 13 */ LD(SD_ARG_LO(3)),
	/* 14 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, MAP_TYPE | MAP_POPULATE),
	/* 15 */ JEQ(MAP_SHARED | MAP_POPULATE, 1, 0),
	/* 16 */ JEQ(MAP_SHARED_VALIDATE | MAP_POPULATE, 0, TO(V_ALLOW, 16)),
	/* 17 */ LD(SD_ARG_HI(5)),
	/* 18 */ JEQ(0, 0, TO(V_ALLOW, 18)),
	/* 19 */ LD(SD_ARG_LO(5)),
	/* 20 */ JEQ(0, TO(V_TRAP, 20), 0),
	/* 21 */ JEQ(0x8000000, TO(V_TRAP, 21), 0),
	/* 22 */ JEQ(0x10000000, TO(V_TRAP, 22), 0),
	/* 23 */ JGE(0x80000000u, TO(V_TRAP, 23), TO(V_ALLOW, 23)),
	/* 24 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP | TRAP_DATA),
	/* 25 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};
_Static_assert(sizeof(trap_filter) / sizeof(trap_filter[0]) == V_ALLOW + 1, "verdict indexes");

static volatile sig_atomic_t probe_trapped;

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

/*
 * A filter inherited from a parent under bufsel, in a process whose bufsel
 * could not map the trampoline (its fixed page taken, no memory): the only
 * address the filter lets io_uring calls through is a page this process
 * does not have, so they fail as on a kernel without io_uring.  A trapped
 * mmap is the program's own (MAP_SHARED|MAP_POPULATE of a file): it is made
 * without MAP_POPULATE, which the filter lets through from anywhere, and
 * populated after, ignoring errors as MAP_POPULATE does.
 */
static long without_trampoline(long nr, const long a[6])
{
	if (nr != __NR_mmap)
		return -ENOSYS;
	long m = sys_call6(nr, a[0], a[1], a[2], a[3] & ~(long)MAP_POPULATE, a[4], a[5]);
	if (!sys_is_err(m) && !(a[3] & MAP_NONBLOCK))
		sys_call3(SYS_madvise, m, a[1], MADV_POPULATE_READ);
	return m;
}

static void sigsys_handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	int saved_errno = errno;
	if (si->si_code == SYS_SECCOMP && si->si_errno == TRAP_DATA) {
		greg_t *g = uc->uc_mcontext.gregs;
		long nr = si->si_syscall;
		long a[6] = { g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_R10], g[REG_R8], g[REG_R9] };
		struct call_site cs = { PATH_TRAP, uc, (void *)g[REG_RIP] };
		if (nr == __NR_io_uring_register && a[0] == -1 && a[1] == -1)
			probe_trapped = 1;
		if (!sys_trampoline_ready()) {
			g[REG_RAX] = without_trampoline(nr, a);
		} else if (bufsel.active && emulate_handles(nr)) {
			g[REG_RAX] = emulate_syscall(nr, a, &cs);
			patch_site((uintptr_t)g[REG_RIP], nr);
		} else {
			g[REG_RAX] = sys_call6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		}
	} else {
		signals_chain(sig, si, uc);
	}
	/* The mask restored on return must keep SIGSYS deliverable. */
	sigdelset(&uc->uc_sigmask, SIGSYS);
	errno = saved_errno;
}

void trap_handler_install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sigsys_handler;
	/* NODEFER: a program signal handler that runs while bufsel waits in the
	 * kernel may itself use io_uring, which must trap again, not kill. */
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	signals_real_sigaction(SIGSYS, &sa, NULL);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGSYS);
	sys_call6(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&s, 0, 8, 0, 0);
}

/*
 * An exec'd child inherits its parent's filter, which already sends every
 * io_uring call here: a second, identical filter would only add its cost to
 * every system call.  The probe is an invalid register call issued outside
 * the trampoline; it traps only if such a filter is there.
 */
int trap_already_present(void)
{
	register long r10 __asm__("r10") = 0;
	long ret;
	probe_trapped = 0;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"((long)__NR_io_uring_register), "D"(-1L), "S"(-1L), "d"(0L), "r"(r10)
			 : "rcx", "r11", "memory");
	(void)ret;
	return probe_trapped;
}

int trap_install(void)
{
	struct sock_fprog prog = { sizeof(trap_filter) / sizeof(trap_filter[0]), trap_filter };
	long r = sys_call3(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, (long)&prog);
	if (r == -EACCES) {
		/* Without CAP_SYS_ADMIN the kernel wants no_new_privs first. */
		sys_call6(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0);
		log_info("no_new_privs set (not privileged): setuid programs run by this process will not gain privileges");
		r = sys_call3(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, (long)&prog);
	}
	return (int)r;
}
