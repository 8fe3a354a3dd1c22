/*
 * The seccomp-mode gate page (gate.c).
 */
#ifndef BUFSEL_PRELOAD_GATE_H
#define BUFSEL_PRELOAD_GATE_H

#include <stdint.h>

/* A gate page at want (the address an inherited filter names), or at a
 * random free page of the range when want is 0.  0 or -errno. */
int gate_map(uintptr_t want);

#endif
