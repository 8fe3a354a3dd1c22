/*
 * Preloaded by init_fail's child ahead of libbufsel.so: takes the page of
 * the gate that the seccomp filter inherited from the parent allows, before
 * bufsel's constructor runs, so that bufsel cannot initialise (the page is
 * the program's, as it could be in any program that maps there).  The
 * address comes from the filter itself, as bufsel learns it
 * (preload/intercept/trap.h: io_uring_register(-1, 0xb5e10000 + k) answers with an
 * "errno" of 2048 + 11 bits of the page number).  Without such a filter
 * (natively, or a parent under Syscall User Dispatch) it maps nothing.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "test/prog/gate_query.h"

__attribute__((constructor)) static void occupy_trampoline(void)
{
	uintptr_t gate = gate_query();
	if (!gate)
		return;
	mmap((void *)gate, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
	     -1, 0);
}
