/*
 * A program under a MemoryDenyWriteExecute filter, as systemd installs for
 * a service with MemoryDenyWriteExecute=yes: seccomp answers EPERM to mmap
 * with PROT_WRITE|PROT_EXEC and to mprotect or pkey_mprotect with
 * PROT_EXEC.  The program installs the filter, does its io_uring work, and
 * runs itself again, so that, as under systemd, a process also starts
 * under it (bufsel's start-up included).  Its io_uring work comes from liburing's
 * inline system calls, which bufsel rewrites: output and exit status as
 * natively (bufsel used to crash it at the first rewritten site), and not
 * one writable and executable mapping at any point seen.
 */
#include "test/prog/sec_wx.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>

/* The low 32 bits of argument i (little-endian). */
#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))

static void deny_write_execute(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mmap, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mprotect, 5, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pkey_mprotect, 4, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* mmap: both PROT_WRITE and PROT_EXEC */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(2)),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, PROT_WRITE | PROT_EXEC),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROT_WRITE | PROT_EXEC, 3, 2),
		/* mprotect, pkey_mprotect: PROT_EXEC */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(2)),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		die("seccomp: %s", strerror(errno));
}

int main(int argc, char **argv)
{
	bool child = argc > 1 && !strcmp(argv[1], "child");
	const char *who = child ? "child" : "parent";
	if (!child)
		deny_write_execute();
	wx_note_exec_gain();
	note("%s: writable and executable mappings before io_uring: %d", who, wx_count());
	wx_uring_work(who);
	if (!child)
		wx_run_child();
	return 0;
}
