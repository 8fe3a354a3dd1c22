#define _GNU_SOURCE
#include "preload/intercept/codemem.h"

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
#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010	/* Linux 5.1 */
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

/* A PROT_NONE page of our own where the alias goes (MAP_FIXED replaces it). */
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
 * One page of a memfd, mapped twice.  The writable twin is mapped first, at
 * a random place, kept out of fork children (MADV_DONTFORK), and turned
 * PROT_NONE; then F_SEAL_FUTURE_WRITE, after which no new mapping of the
 * memfd can ever be writable; then the page itself, read-execute from the
 * start (a new mapping that is executable but not writable: MDWE and
 * MemoryDenyWriteExecute filters allow it, where they refuse making a page
 * executable later).  The seal also takes from the R-X mapping the right to
 * become writable, so a fork child, which inherits it but not the twin,
 * cannot write code its parent runs (a privilege-separated child must not
 * reach into its parent), and neither can /proc/self/mem.  The fd is closed
 * before returning.
 */
int codemem_stub_map(uintptr_t want, uint8_t **alias)
{
	struct rlimit rl;
	if (!sys_call6(SYS_prlimit64, 0, RLIMIT_FSIZE, 0, (long)&rl, 0, 0) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < CODEMEM_PAGE)
		return -EFBIG;	/* a memfd counts against it: SIGXFSZ otherwise */
	int fd = (int)sys_call3(SYS_memfd_create, (long)"bufsel-code", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL, 0);
	if (fd == -EINVAL)	/* before Linux 6.3 */
		fd = (int)sys_call3(SYS_memfd_create, (long)"bufsel-code", MFD_CLOEXEC | MFD_ALLOW_SEALING, 0);
	if (fd < 0)
		return fd;
	long twin = -ENOMEM, code;
	long err = sys_call3(SYS_ftruncate, fd, CODEMEM_PAGE, 0);
	if (!err) {
		twin = reserve();
		err = sys_is_err(twin) ? twin : 0;
	}
	if (!err) {
		/* Over the reservation: on failure the reservation stays, unmapped below. */
		code = (long)sys_mmap((void *)twin, CODEMEM_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
		err = sys_is_err(code) ? code : 0;
	}
	if (!err)
		err = sys_call3(SYS_madvise, twin, CODEMEM_PAGE, MADV_DONTFORK);
	if (!err)
		err = sys_call3(SYS_mprotect, twin, CODEMEM_PAGE, PROT_NONE);
	if (!err)
		err = sys_call3(SYS_fcntl, fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	if (!err) {
		code = (long)sys_mmap((void *)want, CODEMEM_PAGE, PROT_READ | PROT_EXEC, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
		if (!sys_is_err(code) && (uintptr_t)code != want) {
			sys_munmap((void *)code, CODEMEM_PAGE);
			code = -EEXIST;
		}
		err = sys_is_err(code) ? code : 0;
	}
	sys_close(fd);
	if (err) {
		if (!sys_is_err(twin))
			sys_munmap((void *)twin, CODEMEM_PAGE);
		return (int)err;
	}
	*alias = (uint8_t *)twin;
	return 0;
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

/*
 * The trampoline: written once, then only run.  Where a memfd cannot be had
 * (a file-size limit below one page, a kernel before 5.1), a private page
 * mapped read-write, filled, then made read-execute: never writable and
 * executable at once, but a gain of PROT_EXEC, which MDWE and
 * MemoryDenyWriteExecute filters refuse (the caller then stays inactive).
 */
int codemem_map_code(uintptr_t want, const void *code, size_t n)
{
	uint8_t *twin = NULL;
	int err = codemem_stub_map(want, &twin);
	if (!err) {
		err = codemem_stub_write(&twin, 0, code, n);
		codemem_stub_unalias(twin);
		if (err)
			sys_munmap((void *)want, CODEMEM_PAGE);
		return err;
	}
	if (err == -EEXIST)
		return err;
	long p = (long)sys_mmap((void *)want, CODEMEM_PAGE, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (sys_is_err(p))
		return (int)p;
	if ((uintptr_t)p != want) {
		sys_munmap((void *)p, CODEMEM_PAGE);
		return -EEXIST;
	}
	memcpy((void *)want, code, n);
	err = (int)sys_call3(SYS_mprotect, (long)want, CODEMEM_PAGE, PROT_READ | PROT_EXEC);
	if (err)
		sys_munmap((void *)want, CODEMEM_PAGE);
	return err;
}
