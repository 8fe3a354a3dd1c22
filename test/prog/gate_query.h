/*
 * The seccomp fallback's gate address, asked of the filter as a bufsel in an
 * exec'd child asks it (preload/intercept/trap.h): io_uring_register(-1, 0xb5e10000 +
 * k) for k = 0..3 answers with an "errno" of 2048 + 11 bits of the gate's
 * page number.  The call is made with a syscall instruction of the caller's
 * own, so that no libc hook sees it.  Returns the address, or 0 where no
 * such filter answers (natively, or under Syscall User Dispatch).
 */
#ifndef BUFSEL_TEST_GATE_QUERY_H
#define BUFSEL_TEST_GATE_QUERY_H

#include <stdint.h>
#include <sys/syscall.h>

static inline long gate_query_raw(long fd, long op)
{
	long ret;
	register long r10 __asm__("r10") = 0;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"((long)__NR_io_uring_register), "D"(fd), "S"(op), "d"(0L), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}

static inline uintptr_t gate_query(void)
{
	uint64_t page = 0;
	for (unsigned k = 0; k < 4; k++) {
		long r = gate_query_raw(-1, 0xb5e10000L + k);
		if (r > -2048 || r < -4095)
			return 0;
		page |= (uint64_t)(-r - 2048) << (11 * k);
	}
	return (uintptr_t)(page << 12);
}

#endif
