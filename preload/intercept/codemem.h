/*
 * Writing code without a mapping that is writable and executable at any
 * moment (docs/security.md, "What it maps executable").  bufsel writes two
 * kinds of code:
 *  - its own (the trampoline, the stubs): a page of a sealed memfd mapped
 *    R-X where it runs, and a second mapping of it at a random address,
 *    PROT_NONE except while bufsel writes through it (then read-write,
 *    never executable), absent from fork children;
 *  - the program's text: written through /proc/self/mem, which leaves the
 *    mapping r-x (the kernel copies the page on the first write, as for a
 *    debugger's breakpoint), so a thread running elsewhere in the page goes
 *    on running, and no protection is changed, gained or restored.
 * All return 0 or -errno: a refusal by the system (PR_SET_MDWE, a seccomp
 * filter, no /proc, /proc/self/mem closed to the process) is an error like
 * any other, and the caller keeps the site on the trap.
 */
#ifndef BUFSEL_PRELOAD_CODEMEM_H
#define BUFSEL_PRELOAD_CODEMEM_H

#include <stddef.h>
#include <stdint.h>

#define CODEMEM_PAGE 4096

/* One stub page R-X at exactly want (-EEXIST if taken); *alias: its writable twin. */
int codemem_stub_map(uintptr_t want, uint8_t **alias);

/*
 * Copies n bytes to offset off of a stub page through its alias.  If the
 * alias cannot be closed again afterwards it is unmapped and *alias set to
 * NULL: the page takes no more stubs.
 */
int codemem_stub_write(uint8_t **alias, size_t off, const void *bytes, size_t n);

/* The alias, gone. */
void codemem_stub_unalias(uint8_t *alias);

/* A page R-X at exactly want holding n bytes of code, and no writable mapping of it. */
int codemem_map_code(uintptr_t want, const void *code, size_t n);

/* /proc/self/mem opened for writing: an fd, or -errno. */
int codemem_text_open(void);

/* n bytes at address at, through that fd (the mapping keeps its protection). */
int codemem_text_read(int fd, uintptr_t at, void *bytes, size_t n);
int codemem_text_write(int fd, uintptr_t at, const void *bytes, size_t n);

#endif
