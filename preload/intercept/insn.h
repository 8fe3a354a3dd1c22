/*
 * x86-64 instruction lengths, for the one question site patching asks: is
 * this address the start of an instruction?  Only a forward walk from a
 * function's first byte answers it (x86 cannot be decoded backwards), so the
 * decoder covers what compilers emit — legacy, REX, VEX and EVEX encodings —
 * and says "don't know" for anything else, which keeps a site unpatched.
 */
#ifndef BUFSEL_PRELOAD_INSN_H
#define BUFSEL_PRELOAD_INSN_H

#include <stddef.h>
#include <stdint.h>

/* The length of the instruction at p (at most avail bytes readable), or -1. */
int insn_length(const uint8_t *p, size_t avail);
/*
 * Can the len-byte instruction at p run, unchanged, somewhere else and
 * between the load of the call number into %eax and its `syscall`?  Only a
 * move, sign or zero extension, lea, xor or test of general registers and
 * memory: no RIP-relative operand (it would address something else there),
 * no control transfer, nothing written to %rax, no prefix but REX.
 */
int insn_movable(const uint8_t *p, size_t len);

#endif
