#define _GNU_SOURCE
#include "preload/codemem.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "preload/sys.h"

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U	/* Linux 6.3: the memfd can never be made executable as a file */
#endif

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
 * through one mapping, and nothing gains PROT_EXEC.  No fd is involved, so
 * none of the program's fd numbers moves and no file-size limit applies.
 */
static int map_twice(uintptr_t want, uint8_t **alias)
{
	long p = (long)sys_mmap((void *)want, CODEMEM_PAGE, PROT_READ | PROT_EXEC,
				MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (sys_is_err(p))
		return (int)p;
	if ((uintptr_t)p != want) {
		sys_munmap((void *)p, CODEMEM_PAGE);
		return -EEXIST;
	}
	long spot = reserve();
	if (sys_is_err(spot)) {
		sys_munmap((void *)want, CODEMEM_PAGE);
		return (int)spot;
	}
	long err = sys_call6(SYS_mremap, (long)want, 0, CODEMEM_PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, spot, 0);
	if (!sys_is_err(err))
		err = sys_call3(SYS_mprotect, spot, CODEMEM_PAGE, PROT_NONE);
	if (err) {
		sys_munmap((void *)spot, CODEMEM_PAGE);
		sys_munmap((void *)want, CODEMEM_PAGE);
		return (int)err;
	}
	*alias = (uint8_t *)spot;
	return 0;
}

/*
 * The same with a memfd mapped twice, for where mremap will not duplicate a
 * mapping (valgrind refuses it, a sandbox may deny mremap).  The fd is closed before returning; a
 * file-size limit below one page is an error here, not a SIGXFSZ.
 */
static int map_memfd(uintptr_t want, uint8_t **alias)
{
	struct rlimit rl;
	if (!sys_call6(SYS_prlimit64, 0, RLIMIT_FSIZE, 0, (long)&rl, 0, 0) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < CODEMEM_PAGE)
		return -EFBIG;
	int fd = (int)sys_call3(SYS_memfd_create, (long)"bufsel-code", MFD_CLOEXEC | MFD_NOEXEC_SEAL, 0);
	if (fd == -EINVAL)	/* before Linux 6.3 */
		fd = (int)sys_call3(SYS_memfd_create, (long)"bufsel-code", MFD_CLOEXEC, 0);
	if (fd < 0)
		return fd;
	long err = sys_call3(SYS_ftruncate, fd, CODEMEM_PAGE, 0);
	long p = err ? err
		     : (long)sys_mmap((void *)want, CODEMEM_PAGE, PROT_READ | PROT_EXEC,
				      MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
	if (!err && !sys_is_err(p) && (uintptr_t)p != want) {
		sys_munmap((void *)p, CODEMEM_PAGE);
		p = -EEXIST;
	}
	if (sys_is_err(p)) {
		sys_close(fd);
		return (int)p;
	}
	long spot = reserve();
	if (!sys_is_err(spot))
		spot = (long)sys_mmap((void *)spot, CODEMEM_PAGE, PROT_NONE, MAP_SHARED | MAP_FIXED, fd, 0);
	sys_close(fd);
	if (sys_is_err(spot)) {
		sys_munmap((void *)want, CODEMEM_PAGE);
		return (int)spot;
	}
	*alias = (uint8_t *)spot;
	return 0;
}

int codemem_stub_map(uintptr_t want, uint8_t **alias)
{
	int err = map_twice(want, alias);
	return err && err != -EEXIST ? map_memfd(want, alias) : err;
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
