/*
 * Preloaded by init_fail's child ahead of libbufsel.so: takes the page of
 * the gate that the seccomp filter inherited from the parent allows, before
 * bufsel's constructor runs, so that bufsel cannot initialise (the page is
 * the program's, as it could be in any program that maps there).  The
 * address comes from the filter itself, as bufsel learns it
 * (preload/trap.h: io_uring_register(-1, 0xb5e10000 + k) answers with an
 * "errno" of 2048 + 11 bits of the page number).  Without such a filter
 * (natively, or a parent under Syscall User Dispatch) it maps nothing.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static long raw_register(long fd, long op)
{
	long ret;
	register long r10 __asm__("r10") = 0;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"((long)__NR_io_uring_register), "D"(fd), "S"(op), "d"(0L), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}

__attribute__((constructor)) static void occupy_trampoline(void)
{
	uint64_t page = 0;
	for (unsigned k = 0; k < 4; k++) {
		long r = raw_register(-1, 0xb5e10000L + k);
		if (r > -2048 || r < -4095)
			return;
		page |= (uint64_t)(-r - 2048) << (11 * k);
	}
	mmap((void *)(uintptr_t)(page << 12), 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
	     -1, 0);
}
