#define _GNU_SOURCE
/*
 * A program with its own seccomp filter and SIGSYS handler (on getpgid,
 * which no runtime of ours calls behind the program's back): its traps reach
 * its handler (with its own SECCOMP_RET_DATA and the ucontext it may edit),
 * while io_uring keeps working beside it.  Under bufsel, SIGSYS belongs to
 * bufsel, which must chain every trap that is not its own to this handler.
 */
#include "test/prog/cqe_print.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define OWN_DATA 7

static volatile int seen_data = -1;

static void on_sigsys(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	(void)sig;
	seen_data = si->si_errno;
	uc->uc_mcontext.gregs[REG_RAX] = 42;
}

static void install_filter(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_getpgid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP | OWN_DATA),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		die("no_new_privs: %s", strerror(errno));
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		die("seccomp: %s", strerror(errno));
}

static void nops(struct io_uring *ring, unsigned base)
{
	for (unsigned i = 0; i < 2; i++) {
		struct io_uring_sqe *sqe = get_sqe(ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = base + i;
	}
	submit_expect(ring, 2);
	reap_print(ring, 2);
}

int main(void)
{
	struct io_uring ring;
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	if (sigaction(SIGSYS, &sa, NULL))
		die("sigaction: %s", strerror(errno));
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	nops(&ring, 1);

	install_filter();
	note("getpgid through libc syscall() returned %ld", syscall(SYS_getpgid, 0));
	note("handler saw SECCOMP_RET_DATA %d", seen_data);
	seen_data = -1;
	note("getpgid through libc returned %d", (int)getpgid(0));
	note("handler saw SECCOMP_RET_DATA %d", seen_data);
	nops(&ring, 10);

	if (sigaction(SIGSYS, NULL, &old))
		die("sigaction query: %s", strerror(errno));
	note("SIGSYS handler still the program's: %s", old.sa_sigaction == on_sigsys ? "yes" : "no");
	io_uring_queue_exit(&ring);
	return 0;
}
