/*
 * Where in the program a call came from, and what bufsel was doing when it
 * crashed.  libunwind is loaded with dlopen(RTLD_LOCAL) at start-up: Debian's
 * libunwind exports the _Unwind_* ABI, and linking it into a preloaded
 * library would put it ahead of libgcc_s for the host's C++ exceptions.
 */
#ifndef BUFSEL_PRELOAD_SITE_H
#define BUFSEL_PRELOAD_SITE_H

#include <stddef.h>

#include "preload/state.h"

void site_init(void);
/* "sym+0xoff (object) <- caller+0xoff (object)", skipping bufsel's frames. */
void site_describe(const struct call_site *cs, char *buf, size_t len);
/* One backtrace from a signal context, each line prefixed; for crash reports. */
void site_backtrace(void *ucontext, const char *prefix);
/* Is addr inside libbufsel.so's own code? */
int site_in_bufsel(const void *addr);

#endif
