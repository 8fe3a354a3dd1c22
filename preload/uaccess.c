#include "preload/uaccess.h"

#include <errno.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "preload/state.h"
#include "preload/sys.h"

static int copy_vm(long nr, void *dst, const void *src, size_t len)
{
	if (!len)
		return 0;
	struct iovec local = { dst, len }, remote = { (void *)src, len };
	if (nr == SYS_process_vm_writev) {
		local.iov_base = (void *)src;
		remote.iov_base = dst;
	}
	long pid = sys_call3(SYS_getpid, 0, 0, 0);
	long n = sys_call6(nr, pid, (long)&local, 1, (long)&remote, 1, 0);
	if (n == (long)len)
		return 0;
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
