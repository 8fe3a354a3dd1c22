/*
 * The seccomp-mode gate page: a `syscall; ret` of bufsel's own at a random
 * address (or the one an inherited filter names), mapped R-X through
 * codemem.h.  Above sys.c, which issues the calls through whatever gate is
 * set, so that mapping code (codemem.c) can make system calls without
 * needing the gate's mapper.
 */
#define _GNU_SOURCE
#include "preload/intercept/gate.h"

#include <errno.h>
#include <sys/random.h>
#include <sys/syscall.h>

#include "preload/intercept/codemem.h"
#include "preload/sys.h"

static const unsigned char gate_code[] = SYS_GATE_CODE;
_Static_assert(sizeof(gate_code) == SYS_GATE_RET_OFF + 1,
	       "the filter allows the address right after the syscall instruction");

/* Random bits from the kernel; never blocks (GRND_INSECURE early at boot). */
static uint64_t random_u64(void)
{
	uint64_t v = 0;
	if (sys_raw_call6(SYS_getrandom, (long)&v, sizeof(v), GRND_NONBLOCK, 0, 0, 0) == sizeof(v))
		return v;
	if (sys_raw_call6(SYS_getrandom, (long)&v, sizeof(v), 0x0004 /* GRND_INSECURE */, 0, 0, 0) == sizeof(v))
		return v;
	unsigned lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32 | lo) * 0x9e3779b97f4a7c15ull ^ (uintptr_t)&v;
}

static long map_gate_page(uintptr_t want)
{
	/* Mapped R-X from the start and written through a writable alias
	 * (codemem.h): a process under PR_SET_MDWE or a MemoryDenyWriteExecute
	 * filter, inherited across execve, refuses making a page executable.
	 * The calls are raw until the page is ready. */
	return codemem_map_code(want, gate_code, sizeof(gate_code));
}

int gate_map(uintptr_t want)
{
	if (want) {
		long r = map_gate_page(want);
		if (!r)
			sys_gate_restore(want);
		return (int)r;
	}
	long r = -EEXIST;
	for (int i = 0; i < 16 && r == -EEXIST; i++) {
		uintptr_t a = SYS_GATE_LO + (random_u64() % ((SYS_GATE_HI - SYS_GATE_LO) >> 12) << 12);
		if (!(r = map_gate_page(a)))
			sys_gate_restore(a);
	}
	return (int)r;
}
