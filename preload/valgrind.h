/*
 * Whether a seccomp filter may exist in this process.  Valgrind issues every
 * system call of its client from its own code, never from bufsel's
 * trampoline, and 3.19 does not implement seccomp(2); a filter installed by
 * its launcher (a dynamic program that also loads LD_PRELOAD on its way to
 * the tool for a traced child) would be inherited by the tool, which aborts
 * on the first SIGSYS it did not expect.  In both processes bufsel runs on
 * its libc hooks alone.
 */
#ifndef BUFSEL_PRELOAD_VALGRIND_H
#define BUFSEL_PRELOAD_VALGRIND_H

#include <stdlib.h>

/*
 * Valgrind's RUNNING_ON_VALGRIND client request (valgrind/valgrind.h, amd64),
 * inlined so that building bufsel does not need valgrind's headers.  Natively
 * the four rotations add up to 128 bits, a no-op, and %rdx keeps 0; the tool
 * recognises the sequence and answers with its nesting depth.
 */
static inline unsigned long valgrind_running(void)
{
	volatile unsigned long args[6] = { 0x1001 /* VG_USERREQ__RUNNING_ON_VALGRIND */ };
	unsigned long depth = 0;
	__asm__ volatile("rolq $3, %%rdi; rolq $13, %%rdi\n\t"
			 "rolq $61, %%rdi; rolq $51, %%rdi\n\t"
			 "xchgq %%rbx, %%rbx"
			 : "=d"(depth)
			 : "a"(&args[0]), "0"(depth)
			 : "cc", "memory");
	return depth;
}

/*
 * Valgrind sets VALGRIND_LIB for a child it traces (its launcher and then the
 * client both see it) and removes it from children it does not trace, which
 * run natively and keep the trap.
 */
static inline int valgrind_launcher(void)
{
	return getenv("VALGRIND_LIB") != NULL;
}

#endif
