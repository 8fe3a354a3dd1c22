#define _GNU_SOURCE
#include "preload/codemem.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>

#include "preload/sys.h"

/*
 * Where a stub page's alias goes: a random page between 1 TiB and 126 TiB,
 * away from the program's mappings (which the kernel packs below the stack
 * and above the executable), so that knowing where a library is says
 * nothing about where the writable twin of bufsel's code is.  0 lets the
 * kernel choose.
 */
static uintptr_t random_hint(void)
{
	uint64_t r = 0;
	if (sys_call3(SYS_getrandom, (long)&r, sizeof(r), GRND_NONBLOCK) != (long)sizeof(r))
		return 0;
	const uint64_t lo = 1ull << 40, hi = 0x7e0000000000ull;
	return (uintptr_t)((lo + r % (hi - lo)) & ~(uint64_t)(CODEMEM_PAGE - 1));
}

/* A PROT_NONE page of our own for the alias to replace (MREMAP_FIXED would
 * replace anything at its target, so the target must already be ours). */
static long reserve(void)
{
	for (int i = 0; i < 4; i++) {
		uintptr_t hint = random_hint();
		if (!hint)
			break;
		long p = (long)sys_mmap((void *)hint, CODEMEM_PAGE, PROT_NONE,
					MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (!sys_is_err(p) && (uintptr_t)p == hint)
			return p;
		if (!sys_is_err(p))
			sys_munmap((void *)p, CODEMEM_PAGE);
	}
	return (long)sys_mmap(NULL, CODEMEM_PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

/*
 * The page is made R-X from the start (a new mapping that is executable but
 * not writable: MDWE and MemoryDenyWriteExecute filters allow it, where they
 * refuse making a page executable later).  mremap with old size 0 makes a
 * second mapping of the same shared pages, with the same protection, which
 * then drops PROT_EXEC for good: no page is ever writable and executable
 * through one mapping, and nothing gains PROT_EXEC.
 */
int codemem_stub_map(uintptr_t want, uint8_t **alias)
{
	long p = (long)sys_mmap((void *)want, CODEMEM_PAGE, PROT_READ | PROT_EXEC,
				MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (sys_is_err(p))
		return (int)p;
	if ((uintptr_t)p != want) {
		sys_munmap((void *)p, CODEMEM_PAGE);
		return -EEXIST;
	}
	long err = reserve();
	if (!sys_is_err(err)) {
		long spot = err;
		err = sys_call6(SYS_mremap, (long)want, 0, CODEMEM_PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, spot, 0);
		if (sys_is_err(err)) {
			sys_munmap((void *)spot, CODEMEM_PAGE);
		} else if ((err = sys_call3(SYS_mprotect, spot, CODEMEM_PAGE, PROT_NONE))) {
			sys_munmap((void *)spot, CODEMEM_PAGE);
		} else {
			*alias = (uint8_t *)spot;
			return 0;
		}
	}
	sys_munmap((void *)want, CODEMEM_PAGE);
	return (int)err;
}

int codemem_stub_write(uint8_t **alias, size_t off, const void *bytes, size_t n)
{
	uint8_t *a = *alias;
	if (!a || off + n > CODEMEM_PAGE)
		return -EINVAL;
	int err = (int)sys_call3(SYS_mprotect, (long)a, CODEMEM_PAGE, PROT_READ | PROT_WRITE);
	if (err)
		return err;
	memcpy(a + off, bytes, n);
	if (sys_call3(SYS_mprotect, (long)a, CODEMEM_PAGE, PROT_NONE)) {
		sys_munmap(a, CODEMEM_PAGE);
		*alias = NULL;
	}
	return 0;
}

void codemem_stub_unalias(uint8_t *alias)
{
	if (alias)
		sys_munmap(alias, CODEMEM_PAGE);
}

int codemem_text_open(void)
{
	return (int)sys_call6(SYS_openat, AT_FDCWD, (long)"/proc/self/mem", O_RDWR | O_CLOEXEC | O_NOCTTY, 0, 0, 0);
}

int codemem_text_read(int fd, uintptr_t at, void *bytes, size_t n)
{
	long r = sys_call6(SYS_pread64, fd, (long)bytes, (long)n, (long)at, 0, 0);
	return r == (long)n ? 0 : r < 0 ? (int)r : -EIO;
}

int codemem_text_write(int fd, uintptr_t at, const void *bytes, size_t n)
{
	long r = sys_call6(SYS_pwrite64, fd, (long)bytes, (long)n, (long)at, 0, 0);
	return r == (long)n ? 0 : r < 0 ? (int)r : -EIO;
}
