/*
 * Where a function begins and ends, from the loaded object's
 * .eh_frame_hdr search table — present for every function the compiler
 * describes for unwinding, exported or static, with no symbol table needed.
 * Site patching walks instructions from that first byte.
 */
#ifndef BUFSEL_PRELOAD_EHFRAME_H
#define BUFSEL_PRELOAD_EHFRAME_H

#include <stdint.h>

struct code_range {
	uintptr_t func_start, func_end;	/* the function holding pc */
	uintptr_t seg_start, seg_end;	/* its PT_LOAD segment */
	int seg_prot;			/* PROT_* from its ELF flags: tells code from data, restores nothing */
};

/* 0, or -ENOENT when no loaded object describes pc in a form read here. */
int ehframe_lookup(uintptr_t pc, struct code_range *out);

#endif
