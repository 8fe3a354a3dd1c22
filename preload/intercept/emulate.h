/*
 * The io_uring system calls as bufsel answers them.  Both ways in (the
 * seccomp trap and the libc hooks) end in emulate_syscall(), so every path
 * behaves the same; each handler returns a value or -errno, translated to the
 * program's view by the caller (a register for the trap, errno for libc).
 */
#ifndef BUFSEL_PRELOAD_EMULATE_H
#define BUFSEL_PRELOAD_EMULATE_H

#include "preload/state.h"

/* Is nr a call bufsel answers?  (Anything else is re-issued as is.) */
int emulate_handles(long nr);
long emulate_syscall(long nr, const long a[6], const struct call_site *cs);
/* Could this mmap be of a ring (shared, an fd, a ring offset)?  The rest are
 * re-issued without looking at the ring table (hooks.c). */
int emulate_maps_ring(const long a[6]);
/* A close(fd) as bufsel must see it, where it may end a ring (hooks.c). */
long emulate_close(int fd);

long emu_setup(const long a[6]);
long emu_enter(const long a[6]);
long emu_register(const long a[6]);
long emu_mmap(const long a[6]);

#endif
