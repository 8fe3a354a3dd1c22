/*
 * Preloaded by init_fail's child ahead of libbufsel.so: takes the page at
 * bufsel's fixed trampoline address before bufsel's constructor runs, so that
 * bufsel cannot initialise (the page is the program's, as it could be in any
 * program that maps there).  Natively it is only an unused page.
 */
#define _GNU_SOURCE
#include <sys/mman.h>

__attribute__((constructor)) static void occupy_trampoline(void)
{
	mmap((void *)0x200000000000UL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
}
