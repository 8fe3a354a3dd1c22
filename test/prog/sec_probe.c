/*
 * For the secure-execution tests (run setuid root by an unprivileged user):
 * says whether the process is in secure-execution mode and whether bufsel
 * is mapped into it, then runs a few NOPs.  The native run prints the same
 * but for "bufsel mapped", which the test compares separately.
 */
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>

#include "test/prog/cqe_print.h"

int main(void)
{
	char line[512];
	int mapped = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof(line), f))
		mapped |= strstr(line, "libbufsel") != NULL;
	if (f)
		fclose(f);
	note("secure %lu", getauxval(AT_SECURE));
	fprintf(stderr, "bufsel mapped %d\n", mapped);

	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	nops_print(&ring, 100, 4);
	io_uring_queue_exit(&ring);
	return 0;
}
