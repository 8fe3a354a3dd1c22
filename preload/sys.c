/*
 * The trampoline page.  Its code is position independent and identical in
 * every bufsel, so a child that re-installs bufsel under its parent's filter
 * passes that filter too.  If the fixed address is taken, bufsel cannot work
 * safely and says so (the caller disables itself).
 */
#include "preload/sys.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "preload/codemem.h"

static const unsigned char trampoline_code[] = {
	0x48, 0x89, 0xf8,		/* mov %rdi,%rax */
	0x48, 0x89, 0xf7,		/* mov %rsi,%rdi */
	0x48, 0x89, 0xd6,		/* mov %rdx,%rsi */
	0x48, 0x89, 0xca,		/* mov %rcx,%rdx */
	0x4d, 0x89, 0xc2,		/* mov %r8,%r10 */
	0x4d, 0x89, 0xc8,		/* mov %r9,%r8 */
	0x4c, 0x8b, 0x4c, 0x24, 0x08,	/* mov 0x8(%rsp),%r9 */
	0x0f, 0x05,			/* syscall */
	0xc3,				/* ret */
};
_Static_assert(sizeof(trampoline_code) == SYS_TRAMPOLINE_RET_OFF + 1,
	       "the filter allows the address right after the syscall instruction");

/* Set once the page exists; before that (the constructor's first lines) no
 * filter of ours can be installed yet, so a direct syscall is as good. */
static int trampoline_ready;

typedef long (*trampoline_fn)(long, long, long, long, long, long, long);

/* Only for building the trampoline itself: libc's syscall() is interposed by
 * bufsel, and none of these calls is one the filter traps. */
static long raw_call6(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
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

int sys_trampoline_init(void)
{
	/* Mapped R-X from the start and written through a writable alias
	 * (codemem.h): a process under PR_SET_MDWE or a MemoryDenyWriteExecute
	 * filter, inherited across execve, refuses making a page executable.
	 * The calls are raw until the page is ready; the filter is not installed
	 * yet, or (in an exec'd child) it only traps shared populated mappings,
	 * which these are not. */
	int r = codemem_map_code(SYS_TRAMPOLINE_ADDR, trampoline_code, sizeof(trampoline_code));
	trampoline_ready = !r;
	return r;
}

int sys_trampoline_ready(void)
{
	return trampoline_ready;
}

long sys_call6(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	if (__builtin_expect(!trampoline_ready, 0))
		return raw_call6(nr, a1, a2, a3, a4, a5, a6);
	return ((trampoline_fn)SYS_TRAMPOLINE_ADDR)(nr, a1, a2, a3, a4, a5, a6);
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
