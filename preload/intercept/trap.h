/*
 * The SIGSYS handler, and the seccomp trap, the fallback where Syscall User
 * Dispatch (dispatch.h) is missing or not wanted: a filter that sends the
 * io_uring system calls (and the shared, populated mmaps at ring offsets) to
 * bufsel's SIGSYS handler, and lets bufsel's own gate (sys.h) through.
 * Nothing else is trapped, but the filter outlives execve: a child exec'd
 * without bufsel dies at its first io_uring call.
 */
#ifndef BUFSEL_PRELOAD_TRAP_H
#define BUFSEL_PRELOAD_TRAP_H

/* SECCOMP_RET_DATA of bufsel's filter: tells its traps from a program's own. */
#define TRAP_DATA 0xb5e1

/*
 * The gate query (trap.c): io_uring_register(-1, TRAP_GATE_QUERY + k) under
 * bufsel's filter fails with TRAP_GATE_ERRNO + chunk k of the gate's page
 * number, TRAP_GATE_BITS bits each, from anywhere in the process.  Natively:
 * -EBADF.  Errno values from 2048 up are none the kernel returns.
 */
#define TRAP_GATE_QUERY 0xb5e10000u
#define TRAP_GATE_CHUNKS 4
#define TRAP_GATE_BITS 11
#define TRAP_GATE_ERRNO 2048

#include <stdint.h>

int trap_install(uintptr_t gate);
int trap_inherited(uintptr_t *gate);
void trap_handler_install(void);

#endif
