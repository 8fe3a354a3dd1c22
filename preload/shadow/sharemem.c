/*
 * Memory bufsel shares between processes: a memfd sized without raising
 * SIGXFSZ in the host (the shadow's, setup.c), and the shared mappings a
 * buffer ring of bufsel's lives in (bufring.c).  Below both, so that setting
 * a ring up and keeping its buffer rings need this file and not each other.
 */
#define _GNU_SOURCE
#include "preload/shadow/sharemem.h"

#include <errno.h>
#include <signal.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "preload/sys.h"
#include "preload/valgrind.h"

static int sigxfsz_pending(void)
{
	sigset_t set;
	sigemptyset(&set);
	sys_call3(SYS_rt_sigpending, (long)&set, 8, 0);
	return sigismember(&set, SIGXFSZ);
}

/*
 * Sizes the shadow memfd.  A memfd counts against RLIMIT_FSIZE, and growing
 * it past the limit raises SIGXFSZ, which kills a program whose native
 * io_uring_setup succeeds: below the limit the ring is left to the kernel
 * (-EFBIG, no signal).  SIGXFSZ is blocked around the ftruncate, for a limit
 * lowered meanwhile, and one it raised is taken back.
 */
long sharemem_size_memfd(int fd, size_t len)
{
	struct rlimit rl;
	if (!sys_call6(SYS_prlimit64, 0, RLIMIT_FSIZE, 0, (long)&rl, 0, 0) &&
	    rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < len)
		return -EFBIG;
	sigset_t xfsz, old;
	sigemptyset(&xfsz);
	sigaddset(&xfsz, SIGXFSZ);
	int was_pending = sigxfsz_pending();
	sys_call6(SYS_rt_sigprocmask, SIG_BLOCK, (long)&xfsz, (long)&old, 8, 0, 0);
	long err = sys_call3(SYS_ftruncate, fd, (long)len, 0);
	if (err && !was_pending && sigxfsz_pending()) {
		struct timespec zero = { 0, 0 };
		sys_call6(SYS_rt_sigtimedwait, (long)&xfsz, 0, (long)&zero, 8, 0, 0);
	}
	sys_call6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8, 0, 0);
	return err;
}

/*
 * The shadow lives in a memfd that bufsel maps once and then closes: the
 * program's mappings of it are made from bufsel's (map_shadow_part), so no
 * fd of bufsel's has to sit at a high number, which would make every walk of
 * the process's fd table (ring_alive's) as long as that number.
 */
void *sharemem_map(size_t len, int *mem_fd)
{
	*mem_fd = -1;
	if (!valgrind_running())
		return sys_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int mfd = (int)sys_call3(SYS_memfd_create, (long)"bufsel-buffer-ring", MFD_CLOEXEC, 0);
	if (mfd < 0)
		return (void *)(long)mfd;
	long err = sharemem_size_memfd(mfd, len);
	void *mem = err ? (void *)err : sys_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (!sys_is_err((long)mem) && (*mem_fd = sys_dupfd_high(mfd)) < 0) {
		sys_munmap(mem, len);
		mem = (void *)(long)*mem_fd;
		*mem_fd = -1;
	}
	sys_close(mfd);
	return mem;
}
