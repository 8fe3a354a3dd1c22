/*
 * For security.c: where bufsel's gate is.  Asks the seccomp filter, as a
 * bufsel in an exec'd child does (preload/intercept/trap.h: io_uring_register(-1,
 * 0xb5e10000 + k) answers with an "errno" of 2048 + 11 bits of the page
 * number), and looks in /proc/self/maps for that page and for the fixed
 * page older versions used, and reads its no_new_privs bit.  stderr: "gate
 * none" or "gate 0x<addr> <perms>", "fixed page mapped <0|1>", then
 * "no_new_privs <0|1>".  stdout: a ring's NOPs, as natively.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "test/prog/cqe_print.h"
#include "test/prog/gate_query.h"

/* The permissions of the mapping that holds addr, or NULL. */
static const char *perms_at(uintptr_t addr, char *buf)
{
	char line[512];
	const char *found = NULL;
	FILE *f = fopen("/proc/self/maps", "r");
	while (f && !found && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, buf) == 3 && addr >= lo && addr < hi)
			found = buf;
	}
	if (f)
		fclose(f);
	return found;
}

int main(void)
{
	uintptr_t gate = gate_query();
	int ours = gate != 0;
	char perms[8];
	if (ours) {
		const char *p = perms_at(gate, perms);
		fprintf(stderr, "gate 0x%llx %s\n", (unsigned long long)gate, p ? p : "unmapped");
	} else {
		fprintf(stderr, "gate none\n");
	}
	fprintf(stderr, "fixed page mapped %d\n", perms_at(0x200000000000UL, perms) != NULL);
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "NoNewPrivs:", 11))
			fprintf(stderr, "no_new_privs %d\n", atoi(line + 11));
	if (f)
		fclose(f);

	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	nops_print(&ring, 100, 2);
	io_uring_queue_exit(&ring);
	return 0;
}
