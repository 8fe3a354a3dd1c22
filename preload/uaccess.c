/*
 * process_vm_readv/writev on our own pid, which the kernel checks page by
 * page and answers -EFAULT for a bad range.  A sandbox may deny them (a
 * seccomp filter answering EPERM, a kernel without them): then the copy goes
 * through a pipe instead, write(2) reading the source and read(2) filling
 * the destination, each as fault-safe as the kernel makes any system call.
 * Once denied, always the pipe: the answer does not change.
 */
#define _GNU_SOURCE
#include "preload/uaccess.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "preload/state.h"
#include "preload/sys.h"

static atomic_int vm_denied;

/* One pipe page at a time: even a pipe cut to one page (pipe-user-pages-soft) holds it. */
#define PIPE_CHUNK 4096

static int copy_pipe(void *dst, const void *src, size_t len)
{
	int p[2];
	long r = sys_call3(SYS_pipe2, (long)p, O_CLOEXEC, 0);
	if (r)
		return (int)r;
	int ret = 0;
	for (size_t off = 0; off < len && !ret;) {
		size_t n = len - off < PIPE_CHUNK ? len - off : PIPE_CHUNK;
		long w = sys_write(p[1], (const char *)src + off, n);
		if (w == -EINTR)
			continue;
		if (w != (long)n) {
			/* A fault part way: what was written is left in the pipe, closed below. */
			ret = w < 0 && w != -EFAULT ? (int)w : -EFAULT;
			break;
		}
		size_t got = 0;
		while (got < n) {
			long g = sys_call3(SYS_read, p[0], (long)((char *)dst + off + got), (long)(n - got));
			if (g == -EINTR)
				continue;
			if (g <= 0) {
				ret = g < 0 && g != -EFAULT ? (int)g : -EFAULT;
				break;
			}
			got += (size_t)g;
		}
		off += n;
	}
	sys_close(p[0]);
	sys_close(p[1]);
	return ret;
}

static int copy_vm(long nr, void *dst, const void *src, size_t len)
{
	if (!len)
		return 0;
	if (atomic_load_explicit(&vm_denied, memory_order_relaxed))
		return copy_pipe(dst, src, len);
	struct iovec local = { dst, len }, remote = { (void *)src, len };
	if (nr == SYS_process_vm_writev) {
		local.iov_base = (void *)src;
		remote.iov_base = dst;
	}
	long pid = sys_call3(SYS_getpid, 0, 0, 0);
	long n = sys_call6(nr, pid, (long)&local, 1, (long)&remote, 1, 0);
	if (n == (long)len)
		return 0;
	/* Our own pid: EPERM or ENOSYS can only be a sandbox or an old kernel. */
	if (n == -EPERM || n == -ENOSYS || n == -EACCES) {
		atomic_store_explicit(&vm_denied, 1, memory_order_relaxed);
		return copy_pipe(dst, src, len);
	}
	return n < 0 && n != -EFAULT ? (int)n : -EFAULT;
}

int copy_from_prog(void *dst, const void *src, size_t len)
{
	return copy_vm(SYS_process_vm_readv, dst, src, len);
}

int copy_to_prog(void *dst, const void *src, size_t len)
{
	return copy_vm(SYS_process_vm_writev, dst, src, len);
}

/*
 * io_create_region's checks of memory the program gives a ring (NO_MMAP
 * rings, buffer rings in its memory): the kernel pins every page for
 * writing, which fails on a page it cannot reach or write.  Each page's
 * first byte is read and written back as it was: the memory is being handed
 * to the ring, which nothing else writes meanwhile.
 */
long uaccess_user_region(uint64_t addr, size_t len)
{
	if (!addr)
		return -EFAULT;
	if (addr & 4095)
		return -EINVAL;
	if (addr + len < addr)
		return -EOVERFLOW;
	for (size_t at = 0; at < len; at += 4096) {
		char c;
		void *p = (void *)(uintptr_t)(addr + at);
		if (copy_from_prog(&c, p, 1) || copy_to_prog(p, &c, 1))
			return -EFAULT;
	}
	return 0;
}
