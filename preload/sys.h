/*
 * Raw system calls for bufsel's own use.  Every one goes through a trampoline
 * at a fixed address that the seccomp filter always allows, so bufsel never
 * traps on itself — and a bufsel loaded into an exec'd child finds the same
 * trampoline address that the inherited filter allows.  All return 0/value or
 * -errno; none touches errno, so they are safe inside the SIGSYS handler.
 */
#ifndef BUFSEL_PRELOAD_SYS_H
#define BUFSEL_PRELOAD_SYS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Where the trampoline page lives, and where its `syscall` returns to. */
#define SYS_TRAMPOLINE_ADDR	0x200000000000UL
#define SYS_TRAMPOLINE_RET_OFF	25

int sys_trampoline_init(void);
int sys_trampoline_ready(void);	/* 0: sys_call6 issues calls from its own code */
long sys_call6(long nr, long a1, long a2, long a3, long a4, long a5, long a6);

static inline long sys_call3(long nr, long a1, long a2, long a3)
{
	return sys_call6(nr, a1, a2, a3, 0, 0, 0);
}

void *sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int sys_munmap(void *addr, size_t len);
int sys_close(int fd);
int sys_dupfd_high(int fd);
int sys_kcmp_file(int fd1, int fd2);
ssize_t sys_write(int fd, const void *buf, size_t len);

static inline int sys_is_err(long v)
{
	return (unsigned long)v > -4096UL;
}

#endif
