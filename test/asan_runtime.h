/*
 * Under ASan a program refuses to start unless the sanitizer runtime comes
 * first in its library list, so every runner that preloads libbufsel.so into
 * a program built with `make asan` puts the runtime it was itself linked
 * with ahead of it.  Shared by test/integration/harness.c and
 * test/fuzz/difffuzz.c.
 */
#ifndef BUFSEL_TEST_ASAN_RUNTIME_H
#define BUFSEL_TEST_ASAN_RUNTIME_H

#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#ifdef __SANITIZE_ADDRESS__
static int asan_runtime_find(struct dl_phdr_info *info, size_t size, void *path)
{
	(void)size;
	if (info->dlpi_name && strstr(info->dlpi_name, "/libasan.so")) {
		snprintf(path, PATH_MAX, "%s", info->dlpi_name);
		return 1;
	}
	return 0;
}
#endif

/* The path of the libasan.so this process runs with; NULL without ASan, or
 * when it is not found. */
static inline const char *asan_runtime_path(void)
{
#ifdef __SANITIZE_ADDRESS__
	static char path[PATH_MAX];
	if (!path[0])
		dl_iterate_phdr(asan_runtime_find, path);
	return path[0] ? path : NULL;
#else
	return NULL;
#endif
}

#endif
