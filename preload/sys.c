/*
 * The gate: the one `syscall; ret` every system call bufsel makes for itself
 * goes through, at an address the active trap lets through.  Under Syscall
 * User Dispatch it is a `syscall; ret` already inside libc's text (the range
 * the kernel never dispatches), so bufsel adds no code page at all.  Under
 * the seccomp filter it is a page of bufsel's own at a random address, which
 * the filter names; an exec'd child under that filter learns the address
 * from the filter (trap.c) and maps its gate at the same place.
 */
#define _GNU_SOURCE
#include "preload/sys.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>

static const unsigned char gate_code[] = SYS_GATE_CODE;

/* 0 until a gate exists: calls are then issued from bufsel's own text, as
 * the constructor's first lines (no trap of this process exists yet) do. */
uintptr_t bufsel_sys_gate __attribute__((visibility("hidden")));

/* The C arguments in the system call's registers, then into the gate:
 * its `ret` returns to sys_call6's caller. */
__asm__(".text\n"
	".p2align 4\n"
	".type bufsel_sys_thunk, @function\n"
	"bufsel_sys_thunk:\n"
	"	mov %rdi,%rax\n"
	"	mov %rsi,%rdi\n"
	"	mov %rdx,%rsi\n"
	"	mov %rcx,%rdx\n"
	"	mov %r8,%r10\n"
	"	mov %r9,%r8\n"
	"	mov 0x8(%rsp),%r9\n"
	"	jmp *bufsel_sys_gate(%rip)\n"
	".size bufsel_sys_thunk, .-bufsel_sys_thunk\n");
long bufsel_sys_thunk(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
	__attribute__((visibility("hidden")));

/* Before the gate exists: libc's syscall() is interposed by bufsel, and
 * none of these calls is one an inherited filter traps. */
long sys_raw_call6(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

int sys_gate_in(uintptr_t lo, uintptr_t hi)
{
	for (uintptr_t p = lo; p + sizeof(gate_code) <= hi; p++) {
		if (!memcmp((const void *)p, gate_code, sizeof(gate_code))) {
			bufsel_sys_gate = p;
			return 0;
		}
	}
	return -ENOENT;
}

void sys_gate_restore(uintptr_t gate)
{
	bufsel_sys_gate = gate;
}

uintptr_t sys_gate(void)
{
	return bufsel_sys_gate;
}

int sys_trampoline_ready(void)
{
	return bufsel_sys_gate != 0;
}

long sys_call6(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	if (__builtin_expect(!bufsel_sys_gate, 0))
		return sys_raw_call6(nr, a1, a2, a3, a4, a5, a6);
	return bufsel_sys_thunk(nr, a1, a2, a3, a4, a5, a6);
}

void *sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return (void *)sys_call6(SYS_mmap, (long)addr, (long)len, prot, flags, fd, off);
}

int sys_munmap(void *addr, size_t len)
{
	return (int)sys_call3(SYS_munmap, (long)addr, (long)len, 0);
}

int sys_close(int fd)
{
	return (int)sys_call3(SYS_close, fd, 0, 0);
}

/*
 * bufsel's private fds live near the top of the fd space so that the program
 * sees exactly the fd numbers it would natively (accept and openat results
 * are part of what must match).  Capped so a huge RLIMIT_NOFILE does not
 * make the kernel grow a multi-megabyte fd table.
 */
int sys_dupfd_high(int fd)
{
	struct rlimit rl;
	long base = 1024;
	/* The kernel fills rl when getrlimit returns 0. */
	// NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult)
	if (!sys_call3(SYS_getrlimit, RLIMIT_NOFILE, (long)&rl, 0) && rl.rlim_cur != RLIM_INFINITY)
		base = (long)rl.rlim_cur;
	if (base > 65536)
		base = 65536;
	base = base > 320 ? base - 256 : base / 2;
	long r = sys_call3(SYS_fcntl, fd, F_DUPFD_CLOEXEC, base);
	if (r == -EINVAL || r == -EMFILE)
		r = sys_call3(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 0);
	return (int)r;
}

/* 0 when both fds are the same open file, 1 or 2 when not, -errno on error. */
int sys_kcmp_file(int fd1, int fd2)
{
	long pid = sys_call3(SYS_getpid, 0, 0, 0);
	return (int)sys_call6(SYS_kcmp, pid, pid, KCMP_FILE, fd1, fd2, 0);
}

ssize_t sys_write(int fd, const void *buf, size_t len)
{
	return sys_call3(SYS_write, fd, (long)buf, (long)len);
}

/*
 * The kernel grows a process's fd table when a new fd does not fit, and
 * once another task shares the table (an SQPOLL ring's kernel thread, an
 * io-wq worker, any thread) it waits for an RCU grace period first
 * (expand_fdtable): milliseconds, during which the process cannot even die
 * of a signal.  bufsel's first high fd would be that fd, right after the
 * kernel started the SQ thread: grown beforehand, while setup is still the
 * only task, the table never needs to grow for it again (it never shrinks).
 */
void sys_fd_table_grow(void)
{
	int efd = (int)sys_call3(SYS_eventfd2, 0, EFD_CLOEXEC, 0);
	if (efd < 0)
		return;
	int high = sys_dupfd_high(efd);
	if (high >= 0)
		sys_close(high);
	sys_close(efd);
}
