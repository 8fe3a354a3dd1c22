/*
 * Raw system calls for bufsel's own use.  Every one goes through the gate
 * (sys.c), a `syscall; ret` at an address the active trap always lets
 * through, so bufsel never traps on itself.  All return 0/value or -errno;
 * none touches errno, so they are safe inside the SIGSYS handler.
 */
#ifndef BUFSEL_PRELOAD_SYS_H
#define BUFSEL_PRELOAD_SYS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The gate's code, and where its `syscall` returns to from its address. */
#define SYS_GATE_CODE		{ 0x0f, 0x05, 0xc3 }	/* syscall; ret */
#define SYS_GATE_RET_OFF	2
/* The range a seccomp-mode gate page is drawn from: 64 TiB, away from the
 * program, its heap, libraries and stacks (0x55..., 0x7f...). */
#define SYS_GATE_LO		0x100000000000UL
#define SYS_GATE_HI		0x500000000000UL

/* The gate at the first `syscall; ret` in [lo, hi), code already mapped. */
int sys_gate_in(uintptr_t lo, uintptr_t hi);
uintptr_t sys_gate(void);		/* 0: none yet */
void sys_gate_restore(uintptr_t gate);	/* back to what sys_gate() said */
int sys_trampoline_ready(void);	/* 0: sys_call6 issues calls from its own code */
long sys_call6(long nr, long a1, long a2, long a3, long a4, long a5, long a6);
/* The same from bufsel's own text, for the calls made before a gate exists. */
long sys_raw_call6(long nr, long a1, long a2, long a3, long a4, long a5, long a6);

static inline long sys_call3(long nr, long a1, long a2, long a3)
{
	return sys_call6(nr, a1, a2, a3, 0, 0, 0);
}

void *sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int sys_munmap(void *addr, size_t len);
int sys_close(int fd);
int sys_dupfd_high(int fd);
/* Grows the fd table to bufsel's high range now (see sys.c). */
void sys_fd_table_grow(void);
int sys_kcmp_file(int fd1, int fd2);
ssize_t sys_write(int fd, const void *buf, size_t len);

static inline int sys_is_err(long v)
{
	return (unsigned long)v > -4096UL;
}

#endif
