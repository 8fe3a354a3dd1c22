/*
 * The one dispatcher both interception paths share: a table from syscall
 * number to handler, counted and (at debug level) logged with the program's
 * calling site.
 */
#include "preload/intercept/emulate.h"

#include <errno.h>
#include <linux/io_uring.h>
#include <sys/syscall.h>

#include "preload/intercept/site.h"
#include "preload/log.h"
#include "preload/shadow/compat.h"
#include "preload/shadow/ring.h"
#include "preload/shadow/ring_io.h"
#include "preload/sys.h"

struct emu_call {
	long nr;
	const char *name;
	long (*fn)(const long a[6]);
	atomic_ulong *count;
};

static const struct emu_call emu_calls[] = {
	{ __NR_io_uring_setup, "io_uring_setup", emu_setup, &bufsel.n.setup },
	{ __NR_io_uring_enter, "io_uring_enter", emu_enter, &bufsel.n.enter },
	{ __NR_io_uring_register, "io_uring_register", emu_register, &bufsel.n.reg },
	{ SYS_mmap, "mmap", emu_mmap, &bufsel.n.mmap },
};

static const struct emu_call *emu_lookup(long nr)
{
	for (size_t i = 0; i < sizeof(emu_calls) / sizeof(emu_calls[0]); i++)
		if (emu_calls[i].nr == nr)
			return &emu_calls[i];
	return NULL;
}

int emulate_handles(long nr)
{
	return emu_lookup(nr) != NULL;
}

long emu_enter(const long a[6])
{
	unsigned flags = (unsigned)a[3];
	if (compat_enter_flags(flags))
		return -EINVAL;
	struct ring *r = flags & IORING_ENTER_REGISTERED_RING ? ring_get_registered((unsigned)a[0])
							      : ring_get((int)a[0]);
	if (!r) {
		long kret = sys_call6(__NR_io_uring_enter, a[0], a[1], a[2], a[3], a[4], a[5]);
		return kret == -EBADF ? enter_closed_fd((int)a[0], (unsigned)a[1], (unsigned)a[2], flags, kret)
				      : kret;
	}
	if (!enter_flags_valid(flags)) {
		ring_put(r);
		return -EINVAL;
	}
	long ret = ring_enter(r, (unsigned)a[1], (unsigned)a[2], flags & ~IORING_ENTER_REGISTERED_RING,
			      (const void *)a[4], (size_t)a[5]);
	ring_put(r);
	return ret;
}

long emulate_syscall(long nr, const long a[6], const struct call_site *cs)
{
	const struct emu_call *c = emu_lookup(nr);
	if (!c)
		return -ENOSYS;
	atomic_fetch_add_explicit(c->count, 1, memory_order_relaxed);
	static atomic_ulong *const by_path[] = {
		[PATH_TRAP] = &bufsel.n.trapped, [PATH_HOOK] = &bufsel.n.hooked, [PATH_PATCH] = &bufsel.n.patched,
	};
	static const char *const path_name[] = { [PATH_TRAP] = "trap", [PATH_HOOK] = "libc", [PATH_PATCH] = "patched site" };
	atomic_fetch_add_explicit(by_path[cs->path], 1, memory_order_relaxed);
	long ret = c->fn(a);
	if (bufsel_log_on(BUFSEL_LOG_DEBUG)) {
		char site[256];
		site_describe(cs, site, sizeof(site));
		log_debug("%s(%ld, %ld, %ld, %ld) = %ld via %s from %s", c->name, a[0], a[1], a[2],
			  a[3], ret, path_name[cs->path], site);
	}
	return ret;
}
