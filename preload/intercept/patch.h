/*
 * Site patching: the seccomp trap costs a signal delivery and a sigreturn on
 * every io_uring call an inline `syscall` makes (liburing's are all inline),
 * several microseconds on this class of machine.  After the first trap at a
 * site, the instruction that loads the call number in front of `syscall` is
 * replaced by a jump to a per-site stub that enters bufsel as a function
 * call.  The `syscall` bytes themselves are never changed, so a thread that
 * is already past the replaced instruction still traps and is still right.
 * docs/interception.md explains the patterns, the checks and the hazards.
 */
#ifndef BUFSEL_PRELOAD_PATCH_H
#define BUFSEL_PRELOAD_PATCH_H

#include <stdint.h>

/* Once, from the constructor: whether this CPU and the conf allow patching. */
void patch_init(int enabled);

/*
 * Called from the SIGSYS handler after answering a trapped call: rip is the
 * address after the trapping `syscall`, nr the call number.  Patches that
 * site if it has one of the known shapes; otherwise remembers the refusal.
 */
void patch_site(uintptr_t rip, long nr);

/* Sites patched so far in this process (inherited ones included). */
unsigned long patch_sites(void);

#endif
