/*
 * callgrind_activate: lets callgrind count the user-space instructions of
 * bufsel's libc hook path.  Measurement aid only, never for production use.
 *
 * Valgrind 3.19 does not implement seccomp(2) (syscall 317: "unhandled
 * amd64-linux syscall", ENOSYS), so under valgrind bufsel's constructor
 * cannot install its filter and leaves itself inactive.  This preloaded
 * helper, whose constructor runs after bufsel's when it is listed FIRST in
 * LD_PRELOAD, sets bufsel's `active` flag anyway.  Nothing then traps (there
 * is no filter), but every call that reaches the libc hooks (syscall(), mmap)
 * runs the same code as in production.
 *
 * Build (from the project root, after `make`):
 *   cc -O2 -shared -fPIC -I. -o build/bench/callgrind_activate.so bench/callgrind_activate.c
 * Use (ENTER_COST_STATE_OFF is where the hidden `bufsel` object lies in the
 * .so; it must not be named BUFSEL_*, which bufsel rejects as unknown):
 *   env ENTER_COST_STATE_OFF=0x$(nm build/libbufsel.so | awk '$3 == "bufsel" { print $1 }') \
 *     VALGRIND_LIB=/usr/libexec/valgrind VALGRIND_LAUNCHER=/usr/bin/valgrind \
 *     LD_PRELOAD=$PWD/build/bench/callgrind_activate.so:$PWD/build/libbufsel.so \
 *     /usr/libexec/valgrind/callgrind-amd64-linux ...
 * The static tool binary is run directly: a dynamic program started with
 * LD_PRELOAD set (the `valgrind` launcher, `timeout`, ...) would load bufsel
 * itself, install the filter outside valgrind, and valgrind would then abort
 * on the first trapped call it makes for the client.
 */
#define _GNU_SOURCE
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preload/state.h"

static int find_bufsel(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	const char *name = info->dlpi_name, *slash = strrchr(name, '/');
	if (!strcmp(slash ? slash + 1 : name, "libbufsel.so")) {
		*(ElfW(Addr) *)data = info->dlpi_addr;
		return 1;
	}
	return 0;
}

__attribute__((constructor)) static void activate(void)
{
	const char *off = getenv("ENTER_COST_STATE_OFF");
	ElfW(Addr) base = 0;
	if (!off || !dl_iterate_phdr(find_bufsel, &base)) {
		fprintf(stderr, "callgrind_activate: no ENTER_COST_STATE_OFF or no libbufsel.so loaded\n");
		return;
	}
	struct bufsel_state *s = (struct bufsel_state *)(base + strtoul(off, NULL, 0));
	s->active = 1;
	fprintf(stderr, "callgrind_activate: bufsel marked active (mode %s, trap %s)\n",
		s->conf.mode == BUFSEL_MODE_PASSTHROUGH ? "passthrough" : "emulate",
		s->trap_installed ? "installed" : "not installed");
}
