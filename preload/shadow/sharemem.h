/*
 * Memory bufsel shares between processes (sharemem.c).
 */
#ifndef BUFSEL_PRELOAD_SHAREMEM_H
#define BUFSEL_PRELOAD_SHAREMEM_H

#include <stddef.h>

/* Sizes a memfd to len; -EFBIG where that would pass RLIMIT_FSIZE. */
long sharemem_size_memfd(int fd, size_t len);
/* len bytes of zeroed shared memory the program may map as well: anonymous
 * (the program's mapping is an mremap of it), or under valgrind, which
 * refuses that mremap, a memfd kept in *mem_fd at a high number (else -1).
 * The mapping, or an error as a pointer (sys_is_err). */
void *sharemem_map(size_t len, int *mem_fd);

#endif
