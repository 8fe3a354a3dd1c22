/*
 * The seccomp trap: a filter that sends the io_uring system calls (and the
 * shared, populated mmaps at ring offsets) to bufsel's SIGSYS handler, and
 * lets bufsel's own trampoline through.  Nothing else is trapped, so a child
 * exec'd without bufsel inherits a filter that only matters if it uses
 * io_uring itself.
 */
#ifndef BUFSEL_PRELOAD_TRAP_H
#define BUFSEL_PRELOAD_TRAP_H

/* SECCOMP_RET_DATA of bufsel's filter: tells its traps from a program's own. */
#define TRAP_DATA 0xb5e1

int trap_install(void);
int trap_already_present(void);
void trap_handler_install(void);

#endif
