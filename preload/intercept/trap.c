#define _GNU_SOURCE
#include "preload/intercept/trap.h"

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

#include "preload/intercept/dispatch.h"
#include "preload/intercept/emulate.h"
#include "preload/intercept/patch.h"
#include "preload/intercept/real.h"
#include "preload/intercept/signals.h"
#include "preload/intercept/site.h"
#include "preload/log.h"
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

/*
 * Instruction indexes, for the relative jumps below: the mmap tests, the two
 * verdicts, and the four answers to the gate query.
 */
enum { MMAP_TESTS = 21, V_TRAP = 32, V_ALLOW = 33, V_GATE0 = 34, FILTER_LEN = V_GATE0 + TRAP_GATE_CHUNKS };
#define TO(target, pc) ((target) - (pc) - 1)

/*
 * The syscall number is tested first: for every other number the verdict is
 * then a constant ALLOW, which lets the kernel (5.11+) cache it and skip the
 * filter entirely on the program's ordinary system calls.  The gate's address
 * (instructions 8 and 10, and the answers) is filled in by trap_install().
 */
static struct sock_filter trap_filter[FILTER_LEN] = {
	/* 0 */ LD(SD_ARCH),
	/* 1 */ JEQ(AUDIT_ARCH_X86_64, 0, TO(V_ALLOW, 1)),
	/* 2 */ LD(SD_NR),
	/* 3 */ JEQ(__NR_io_uring_setup, 3, 0),
	/* 4 */ JEQ(__NR_io_uring_enter, 2, 0),
	/* 5 */ JEQ(__NR_io_uring_register, 1, 0),
	/* 6 */ JEQ(__NR_mmap, 0, TO(V_ALLOW, 6)),
	/* bufsel's own calls come from the gate. */
	/* 7 */ LD(SD_IP_LO),
	/* 8 */ JEQ(0, 0, 2),
	/* 9 */ LD(SD_IP_HI),
	/* 10 */ JEQ(0, TO(V_ALLOW, 10), 0),
	/* 11 */ LD(SD_NR),
	/* 12 */ JEQ(__NR_mmap, TO(MMAP_TESTS, 12), 0),
	/* The gate query: io_uring_register(-1, TRAP_GATE_QUERY + k) answers
	 * with chunk k of the gate's page number, from anywhere. */
	/* 13 */ JEQ(__NR_io_uring_register, 0, TO(V_TRAP, 13)),
	/* 14 */ LD(SD_ARG_LO(0)),
	/* 15 */ JEQ(0xffffffffu, 0, TO(V_TRAP, 15)),
	/* 16 */ LD(SD_ARG_LO(1)),
	/* 17 */ JEQ(TRAP_GATE_QUERY + 0, TO(V_GATE0 + 0, 17), 0),
	/* 18 */ JEQ(TRAP_GATE_QUERY + 1, TO(V_GATE0 + 1, 18), 0),
	/* 19 */ JEQ(TRAP_GATE_QUERY + 2, TO(V_GATE0 + 2, 19), 0),
	/* 20 */ JEQ(TRAP_GATE_QUERY + 3, TO(V_GATE0 + 3, 20), TO(V_TRAP, 20)),
	/* Ring mappings are MAP_SHARED|MAP_POPULATE by universal convention;
	 * other shared file mappings are not worth a signal each. */
	/* 21 */ LD(SD_ARG_LO(3)),
	/* 22 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, MAP_TYPE | MAP_POPULATE),
	/* 23 */ JEQ(MAP_SHARED | MAP_POPULATE, 1, 0),
	/* 24 */ JEQ(MAP_SHARED_VALIDATE | MAP_POPULATE, 0, TO(V_ALLOW, 24)),
	/* 25 */ LD(SD_ARG_HI(5)),
	/* 26 */ JEQ(0, 0, TO(V_ALLOW, 26)),
	/* 27 */ LD(SD_ARG_LO(5)),
	/* 28 */ JEQ(0, TO(V_TRAP, 28), 0),
	/* 29 */ JEQ(0x8000000, TO(V_TRAP, 29), 0),
	/* 30 */ JEQ(0x10000000, TO(V_TRAP, 30), 0),
	/* 31 */ JGE(0x80000000u, TO(V_TRAP, 31), TO(V_ALLOW, 31)),
	/* 32 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP | TRAP_DATA),
	/* 33 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	/* 34..37: SECCOMP_RET_ERRNO | the answers, filled in */
};
_Static_assert(TRAP_GATE_CHUNKS == 4, "the query's four jumps");
_Static_assert(TRAP_GATE_BITS * TRAP_GATE_CHUNKS >= 47 - 12, "a user page number fits the answers");

static volatile sig_atomic_t probe_trapped;

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

/*
 * A filter inherited from a parent under bufsel, in a process whose bufsel
 * could not map the gate page (the address taken, no memory): the only
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
		if (nr == __NR_io_uring_register && (int)a[0] == -1 &&
		    (uint32_t)a[1] - TRAP_GATE_QUERY < TRAP_GATE_CHUNKS)
			probe_trapped = 1;
		if (!sys_trampoline_ready()) {
			g[REG_RAX] = without_trampoline(nr, a);
		} else if (bufsel.active && emulate_handles(nr)) {
			g[REG_RAX] = emulate_syscall(nr, a, &cs);
			patch_site((uintptr_t)g[REG_RIP], nr);
		} else {
			g[REG_RAX] = sys_call6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		}
	} else if (si->si_code == SYS_USER_DISPATCH && dispatch_owns()) {
		dispatch_trap(si, uc);
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
	real_sigaction_call(SIGSYS, &sa, NULL);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGSYS);
	sys_call6(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&s, 0, 8, 0, 0);
}

/*
 * An exec'd child inherits its parent's filter, which already sends every
 * io_uring call here and names the parent's gate: the child's gate must be
 * at that address, and a second filter would only add its cost to every
 * system call.  The query is issued outside any gate.  Natively it fails
 * with -EBADF; under bufsel's filter each answer is an "errno" no kernel
 * returns (TRAP_GATE_ERRNO and up), carrying part of the gate's page number.
 * Returns 1 and the address, 0 when there is no such filter, or -1 when the
 * call trapped instead (a filter that traps it but does not answer).
 */
int trap_inherited(uintptr_t *gate)
{
	uint64_t page = 0;
	for (unsigned k = 0; k < TRAP_GATE_CHUNKS; k++) {
		register long r10 __asm__("r10") = 0;
		long ret;
		probe_trapped = 0;
		__asm__ volatile("syscall"
				 : "=a"(ret)
				 : "a"((long)__NR_io_uring_register), "D"(-1L), "S"((long)(TRAP_GATE_QUERY + k)),
				   "d"(0L), "r"(r10)
				 : "rcx", "r11", "memory");
		if (probe_trapped)
			return -1;
		if (ret > -TRAP_GATE_ERRNO || ret < -(TRAP_GATE_ERRNO + (1 << TRAP_GATE_BITS) - 1))
			return 0;
		page |= (uint64_t)(-ret - TRAP_GATE_ERRNO) << (k * TRAP_GATE_BITS);
	}
	*gate = (uintptr_t)(page << 12);
	return 1;
}

int trap_install(uintptr_t gate)
{
	uintptr_t ip = gate + SYS_GATE_RET_OFF;
	trap_filter[8] = (struct sock_filter)JEQ((uint32_t)ip, 0, 2);
	trap_filter[10] = (struct sock_filter)JEQ((uint32_t)(ip >> 32), TO(V_ALLOW, 10), 0);
	for (unsigned k = 0; k < TRAP_GATE_CHUNKS; k++) {
		uint32_t chunk = (uint32_t)(gate >> 12 >> (k * TRAP_GATE_BITS)) & ((1u << TRAP_GATE_BITS) - 1);
		trap_filter[V_GATE0 + k] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
									SECCOMP_RET_ERRNO | (TRAP_GATE_ERRNO + chunk));
	}
	struct sock_fprog prog = { FILTER_LEN, trap_filter };
	long r = sys_call3(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, (long)&prog);
	if (r == -EACCES) {
		/* Without CAP_SYS_ADMIN the kernel wants no_new_privs first. */
		sys_call6(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0);
		log_info("no_new_privs set (not privileged): setuid programs run by this process will not gain privileges");
		r = sys_call3(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, (long)&prog);
	}
	return (int)r;
}
