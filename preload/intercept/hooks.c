/*
 * The libc entry points bufsel interposes: the fast path for programs that
 * reach io_uring through libc (syscall(), mmap), and the fd and signal calls
 * the shim must see.  Each does the least it can when the call is not about a
 * ring: one comparison, then the real function.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/io_uring.h>
#include <stdarg.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "preload/intercept/emulate.h"
#include "preload/intercept/real.h"
#include "preload/intercept/signals.h"
#include "preload/shadow/ring.h"
#include "preload/sys.h"

#define EXPORT __attribute__((visibility("default")))

REAL_DECL(mmap);
REAL_DECL(close);
REAL_DECL(close_range);

static long to_libc(long ret)
{
	if (sys_is_err(ret)) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
}

static long to_kernel_ret(long libc_ret)
{
	return libc_ret == -1 ? -errno : libc_ret;
}

static int ring_offset(uint64_t off)
{
	return off == IORING_OFF_SQ_RING || off == IORING_OFF_CQ_RING || off == IORING_OFF_SQES ||
	       off >= 0x80000000ULL;
}

/* bufsel's own fds do not exist as far as the program is concerned. */
static int closes_ours(int fd)
{
	return bufsel.active && ring_owns_fd(fd);
}

static long hook_close(int fd, int via_libc)
{
	if (closes_ours(fd))
		return -EBADF;
	if (bufsel.active && ring_is_fd(fd))
		ring_closing((unsigned)fd, (unsigned)fd);
	long r = via_libc ? to_kernel_ret(REAL(close)(fd)) : sys_call3(SYS_close, fd, 0, 0);
	if (!r && bufsel.active && ring_is_fd(fd))
		ring_closed(fd);
	return r;
}

long emulate_close(int fd)
{
	return hook_close(fd, 0);
}

int emulate_maps_ring(const long a[6])
{
	return bufsel.active && (int)a[4] >= 0 && ((int)a[3] & MAP_TYPE) != MAP_PRIVATE && ring_offset((uint64_t)a[5]);
}

static long hook_mmap(const long a[6], void *ret_addr)
{
	struct call_site cs = { PATH_HOOK, NULL, ret_addr };
	if (emulate_maps_ring(a))
		return emulate_syscall(SYS_mmap, a, &cs);
	return sys_call6(SYS_mmap, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* syscall(3) takes what the call needs; like glibc's, this reads six
 * arguments, the sixth from the caller's stack, where a caller that passed
 * fewer wrote nothing: a read the ABI allows, not one for ASan to report. */
EXPORT __attribute__((no_sanitize_address)) long syscall(long nr, ...)
{
	va_list ap;
	long a[6];
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);

	struct call_site cs = { PATH_HOOK, NULL, __builtin_return_address(0) };
	switch (nr) {
	case __NR_io_uring_setup:
	case __NR_io_uring_enter:
	case __NR_io_uring_register:
		if (bufsel.active)
			return to_libc(emulate_syscall(nr, a, &cs));
		break;
	case SYS_mmap:
		return to_libc(hook_mmap(a, cs.ret_addr));
	case SYS_close:
		return to_libc(hook_close((int)a[0], 0));
	case SYS_rt_sigprocmask:
		if (bufsel.trap_installed)
			return to_libc(signals_rt_sigprocmask(a));
		break;
	case SYS_rt_sigaction:
		if (bufsel.trap_installed)
			return to_libc(signals_rt_sigaction(a));
		break;
	}
	return to_libc(sys_call6(nr, a[0], a[1], a[2], a[3], a[4], a[5]));
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (!bufsel.active || fd < 0 || (flags & MAP_TYPE) == MAP_PRIVATE || !ring_offset((uint64_t)off))
		return REAL(mmap)(addr, len, prot, flags, fd, off);
	long a[6] = { (long)addr, (long)len, prot, flags, fd, off };
	return (void *)to_libc(hook_mmap(a, __builtin_return_address(0)));
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
	__attribute__((alias("mmap")));

EXPORT int close(int fd)
{
	if (!bufsel.active)
		return REAL(close)(fd);
	return (int)to_libc(hook_close(fd, 1));
}

/* Closing a range must not take bufsel's own fds with it. */
EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	if (!REAL(close_range)) {
		errno = ENOSYS;
		return -1;
	}
	if (!bufsel.active)
		return real_close_range(first, last, flags);
	unsigned lo = first;
	int ret = 0;
	ring_closing(first, last);
	while (lo <= last && !ret) {
		int own = ring_next_owned_fd(lo, last);
		unsigned hi = own < 0 ? last : (unsigned)own - 1;
		if (own != (int)lo)
			ret = real_close_range(lo, hi, flags);
		if (own < 0 || (unsigned)own == last)
			break;
		lo = (unsigned)own + 1;
	}
	ring_sweep();
	return ret;
}
