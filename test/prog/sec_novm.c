/*
 * A sandbox that denies process_vm_readv/writev (a seccomp filter answering
 * EPERM, as some container runtimes do): io_uring itself is allowed, so a
 * ring must come up and work as natively, a bad params pointer must still
 * give -EFAULT, and a provided-buffer read must still land in the buffer.
 * The program installs the filter itself before its first io_uring call.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "test/prog/cqe_print.h"

static void deny_vm_copies(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_writev, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		die("seccomp: %s", strerror(errno));
}

int main(void)
{
	char a = 'x', b = 0;
	deny_vm_copies();
	struct iovec l = { &b, 1 }, r = { &a, 1 };
	long n = syscall(SYS_process_vm_readv, getpid(), &l, 1, &r, 1, 0);
	note("process_vm_readv: %ld %s", n, n < 0 ? strerror(errno) : "");

	long bad = syscall(__NR_io_uring_setup, 8, (void *)8);
	note("setup with a bad params pointer: %s", bad < 0 ? strerror(errno) : "succeeded");

	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	nops_print(&ring, 100, 4);

	/* One legacy provided buffer, a read into it from a pipe. */
	static char buf[64];
	provided_pipe_read(&ring, buf, sizeof(buf), 7, "hello");
	note("buffer: %.5s", buf);
	io_uring_queue_exit(&ring);
	return 0;
}
