/*
 * Buffer rings bufsel keeps itself.  Who keeps a ring is decided once, at
 * its registration (BUFSEL_RINGS): bufsel, where the kernel (or the one
 * BUFSEL_KERNEL names) lacks buffer rings or a flag the registration asks
 * for, or where a policy names the group, so that caps and fault injection
 * reach ring-based programs too; else the kernel, which bufsel then only
 * marks in the pool.  An emulated ring is never seen by the kernel: its
 * registration, its mmap and every SELECT on it are answered here and in
 * the rewrite, as for legacy groups.
 *
 * The checks run in io_register_pbuf_ring's order (io_uring/kbuf.c and the
 * region code of io_uring/memmap.c, 6.18), so that a bad registration
 * fails with the kernel's error.  The ring of an IOU_PBUF_RING_MMAP
 * registration is bufsel's own shared memory, which the program's mmap
 * aliases; a ring in the program's memory is read where it is, as the
 * kernel reads the pages it pinned.
 */
#define _GNU_SOURCE
#include "preload/select/bufring.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "conf/options.h"
#include "pool/pool.h"
#include "preload/log.h"
#include "preload/shadow/compat.h"
#include "preload/shadow/ring.h"
#include "preload/shadow/ring_pool.h"
#include "preload/shadow/sharemem.h"
#include "preload/state.h"
#include "preload/sys.h"
#include "preload/uaccess.h"
#include "preload/uring_abi.h"

#define PAGE_LEN 4096u

/* What the kernel's buffer rings can do (bufsel.kernel_rings). */
enum {
	KR_PROBED = 1,
	KR_RINGS = 2,
	KR_MMAP = 4,
	KR_INC = 8,
};

static int probe_flags(long fd, uint16_t flags, void *mem)
{
	struct bufring_reg reg = {
		.ring_addr = (flags & BUFRING_MMAP) ? 0 : (uint64_t)(uintptr_t)mem,
		.ring_entries = 1,
		.flags = flags,
	};
	if (sys_call6(__NR_io_uring_register, fd, IORING_REGISTER_PBUF_RING, (long)&reg, 1, 0, 0))
		return 0;
	struct bufring_reg undo = { 0 };
	sys_call6(__NR_io_uring_register, fd, IORING_UNREGISTER_PBUF_RING, (long)&undo, 1, 0, 0);
	return 1;
}

/* The running kernel, asked on a ring of bufsel's own that lives for the
 * probe only; then the kernel BUFSEL_KERNEL names, which has no more. */
static unsigned kernel_rings(void)
{
	unsigned v = compat_kernel();
	if (v && v < KERNEL_PBUF_RING)
		return KR_PROBED;
	unsigned k = atomic_load_explicit(&bufsel.kernel_rings, memory_order_acquire);
	if (!k) {
		k = KR_PROBED;
		struct io_uring_params p = { 0 };
		long fd = sys_call3(__NR_io_uring_setup, 1, (long)&p, 0);
		void *mem = sys_mmap(NULL, PAGE_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (fd >= 0 && !sys_is_err((long)mem)) {
			k |= probe_flags(fd, 0, mem) ? KR_RINGS : 0;
			k |= (k & KR_RINGS) && probe_flags(fd, BUFRING_MMAP, mem) ? KR_MMAP : 0;
			k |= (k & KR_RINGS) && probe_flags(fd, BUFRING_INC, mem) ? KR_INC : 0;
		}
		if (fd >= 0)
			sys_close((int)fd);
		if (!sys_is_err((long)mem))
			sys_munmap(mem, PAGE_LEN);
		atomic_store_explicit(&bufsel.kernel_rings, k, memory_order_release);
	}
	if (v && v < KERNEL_PBUF_RING_MMAP)
		k &= ~(unsigned)KR_MMAP;
	if (v && v < KERNEL_PBUF_RING_INC)
		k &= ~(unsigned)KR_INC;
	return k;
}

static int group_has_policy(uint16_t bgid)
{
	const struct conf_group *g = conf_group_get(&bufsel.conf, bgid);
	return g->cap || g->max_len || g->enobufs_ppb;
}

/* Does bufsel keep the ring this registration asks for? */
static int emulated_ring(const struct bufring_reg *reg)
{
	if (bufsel.conf.rings == BUFSEL_RINGS_KERNEL)
		return 0;
	if (bufsel.conf.rings == BUFSEL_RINGS_EMULATE)
		return 1;
	unsigned k = kernel_rings();
	if (!(k & KR_RINGS) || ((reg->flags & BUFRING_MMAP) && !(k & KR_MMAP)) ||
	    ((reg->flags & BUFRING_INC) && !(k & KR_INC)))
		return 1;
	return group_has_policy(reg->bgid);
}

int bufring_keeps_all(void)
{
	return bufsel.conf.rings == BUFSEL_RINGS_EMULATE ||
	       (bufsel.conf.rings == BUFSEL_RINGS_AUTO && !(kernel_rings() & KR_RINGS));
}

int bufring_opcode(unsigned opcode)
{
	return bufsel.conf.rings != BUFSEL_RINGS_KERNEL &&
	       (opcode == IORING_REGISTER_PBUF_RING || opcode == IORING_UNREGISTER_PBUF_RING ||
		opcode == IORING_REGISTER_PBUF_STATUS);
}

static int resv_zero(const uint32_t *v, unsigned n)
{
	uint32_t any = 0;
	for (unsigned i = 0; i < n; i++)
		any |= v[i];
	return !any;
}

static void pool_kind_of(struct ring *r, uint16_t bgid, enum pool_kind *kind, uint32_t *available)
{
	spin_lock(&r->x->pool_lock);
	*kind = pool_kind(r->x->pool, bgid);
	*available = pool_available(r->x->pool, bgid);
	spin_unlock(&r->x->pool_lock);
}

/*
 * A pinned ring's pages at the program's address become private pages of
 * its own again, with what they hold, if the program still maps them
 * there: a range that now holds anything else is left alone.  So a fork,
 * or memory the program reuses after the ring's life, shares nothing.
 */
static void give_back_pages(const struct pool_ring *ring)
{
	if (!ring->user_addr || !ring->mem)
		return;
	void *copy = sys_mmap(NULL, ring->mem_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sys_is_err((long)copy))
		return;
	if (copy_from_prog(copy, (void *)(uintptr_t)ring->user_addr, ring->mem_len) ||
	    memcmp(copy, ring->mem, ring->mem_len) ||
	    sys_is_err(sys_call6(SYS_mremap, (long)copy, (long)ring->mem_len, (long)ring->mem_len,
				 MREMAP_MAYMOVE | MREMAP_FIXED, (long)ring->user_addr, 0)))
		sys_munmap(copy, ring->mem_len);
}

/* bufsel's own mapping of a ring, and its fd, go in this process; the
 * program's pages of a pinned one are its own again. */
static void release_mem(const struct pool_ring *ring)
{
	give_back_pages(ring);
	if (ring->mem)
		sys_munmap(ring->mem, ring->mem_len);
	if (ring->mem_fd >= 0)
		sys_close(ring->mem_fd);
}

/*
 * The kernel pins a ring's pages at registration, so a program may unmap
 * its ring before the kernel is done with it: liburing's tests close the
 * ring, which is not always a call bufsel sees (an inline close under the
 * seccomp filter), and unmap its buffer ring at once, while bufsel's mover
 * may still be selecting from it.  bufsel pins the same way: the ring's
 * contents move into shared memory of bufsel's, mapped at the program's
 * address in place of its pages and again for bufsel, whose mapping lasts
 * until the ring is unregistered or ends.  A fork's child gets back pages
 * of its own (bufring_after_fork), as it would natively.  Only under the
 * seccomp filter: Syscall User Dispatch traps every close, and the pinned
 * copy would part a ring the program shares with other processes
 * (MAP_SHARED memory, as liburing's buf-ring-upgrade registers from a
 * fork's child) from their view of it.
 */
static long pin_user_ring(struct pool_ring *ring, uint64_t addr, size_t len)
{
	void *mem = sharemem_map(len, &ring->mem_fd);
	if (sys_is_err((long)mem))
		return -ENOMEM;
	ring->mem = mem;
	ring->mem_len = len;
	long m = copy_from_prog(mem, (void *)(uintptr_t)addr, len);
	if (!m)
		m = ring->mem_fd >= 0 ? (long)sys_mmap((void *)(uintptr_t)addr, len, PROT_READ | PROT_WRITE,
						   MAP_SHARED | MAP_FIXED, ring->mem_fd, 0)
				      : sys_call6(SYS_mremap, (long)mem, 0, (long)len, MREMAP_MAYMOVE | MREMAP_FIXED,
						  (long)addr, 0);
	if (sys_is_err(m)) {
		release_mem(ring);
		ring->mem = NULL;
		ring->mem_fd = -1;
		return m == -EFAULT ? -EFAULT : -ENOMEM;
	}
	ring->entries = mem;
	ring->user_addr = addr;
	return 0;
}

static long register_ring(struct ring *r, const struct bufring_reg *reg)
{
	if (!resv_zero(reg->resv, 5))
		return -EINVAL;
	if (reg->flags & ~(BUFRING_MMAP | BUFRING_INC))
		return -EINVAL;
	if (!reg->ring_entries || (reg->ring_entries & (reg->ring_entries - 1)) || reg->ring_entries >= 65536)
		return -EINVAL;
	if (!(reg->flags & BUFRING_INC) && reg->min_left)
		return -EINVAL;
	enum pool_kind kind;
	uint32_t available;
	pool_kind_of(r, reg->bgid, &kind, &available);
	if (kind == POOL_KERNEL_RING || kind == POOL_EMULATED_RING || (kind == POOL_LEGACY && available))
		return -EEXIST;
	size_t len = ((size_t)reg->ring_entries * sizeof(struct pool_ring_entry) + PAGE_LEN - 1) & ~(size_t)(PAGE_LEN - 1);
	struct pool_ring ring = { .nr = reg->ring_entries, .flags = reg->flags, .mem_fd = -1,
				  .incremental = !!(reg->flags & BUFRING_INC), .min_left = reg->min_left };
	if (reg->flags & BUFRING_MMAP) {
		void *mem = sharemem_map(len, &ring.mem_fd);
		if (sys_is_err((long)mem))
			return -ENOMEM;
		ring.mem = mem;
		ring.mem_len = len;
		ring.entries = mem;
	} else {
		long err = uaccess_user_region(reg->ring_addr, len);
		if (!err && bufsel.trap == BUFSEL_TRAP_SECCOMP)
			err = pin_user_ring(&ring, reg->ring_addr, len);
		else if (!err)
			ring.entries = (struct pool_ring_entry *)(uintptr_t)reg->ring_addr;
		if (err)
			return err;
	}
	spin_lock(&r->x->pool_lock);
	long ret = pool_ring_emulate(r->x->pool, reg->bgid, &ring);
	spin_unlock(&r->x->pool_lock);
	if (ret)
		release_mem(&ring);
	else
		log_debug("buffer ring %u: emulated (%u entries%s)", reg->bgid, reg->ring_entries,
			  ring.mem ? ", mapped by bufsel" : "");
	return ret;
}

static long unregister_ring(struct ring *r, const struct bufring_reg *reg)
{
	if (!resv_zero(reg->resv, 5) || reg->flags)
		return -EINVAL;
	struct pool_ring ring;
	uint16_t head;
	spin_lock(&r->x->pool_lock);
	long ret = pool_ring_get(r->x->pool, reg->bgid, &ring, &head);
	enum pool_kind kind = pool_kind(r->x->pool, reg->bgid);
	if (!ret)
		pool_ring_unregister(r->x->pool, reg->bgid);
	spin_unlock(&r->x->pool_lock);
	if (kind == POOL_KERNEL_RING)
		return -ENOSYS;
	if (!ret)
		release_mem(&ring);
	return ret;
}

static long ring_status(struct ring *r, void *arg)
{
	struct bufring_status st;
	if (copy_from_prog(&st, arg, sizeof(st)))
		return -EFAULT;
	if (!resv_zero(st.resv, 8))
		return -EINVAL;
	struct pool_ring ring;
	uint16_t head;
	spin_lock(&r->x->pool_lock);
	enum pool_kind kind = pool_kind(r->x->pool, (uint16_t)st.buf_group);
	long ret = st.buf_group > UINT16_MAX ? -ENOENT : pool_ring_get(r->x->pool, (uint16_t)st.buf_group, &ring, &head);
	spin_unlock(&r->x->pool_lock);
	if (st.buf_group <= UINT16_MAX && kind == POOL_KERNEL_RING)
		return -ENOSYS;
	if (ret)
		return ret;
	st.head = head;
	return copy_to_prog(arg, &st, sizeof(st)) ? -EFAULT : 0;
}

/*
 * A ring the kernel keeps is watched when statistics are wanted: its
 * requests' CQEs (rewrite.c, REQ_WATCH) and its memory as the program wrote
 * it, read where it is, as an emulated ring in the program's memory is; an
 * IOU_PBUF_RING_MMAP ring from the program's own mapping of it, once made.
 */
void bufring_watch(struct ring *r, const struct bufring_reg *reg)
{
	if (!bufsel.conf.stats[0])
		return;
	struct pool_ring ring = {
		.entries = (reg->flags & BUFRING_MMAP) ? NULL : (struct pool_ring_entry *)(uintptr_t)reg->ring_addr,
		.nr = reg->ring_entries, .flags = reg->flags, .mem_fd = -1,
		.incremental = !!(reg->flags & BUFRING_INC), .min_left = reg->min_left,
	};
	spin_lock(&r->x->pool_lock);
	pool_ring_watch(r->x->pool, reg->bgid, &ring);
	spin_unlock(&r->x->pool_lock);
}

void bufring_watch_mmap(struct ring *r, uint64_t off, long addr)
{
	if (!bufsel.conf.stats[0] || sys_is_err(addr) || !r->x->pool)
		return;
	uint16_t bgid = (uint16_t)((off & ~BUFRING_OFF_MASK) >> BUFRING_OFF_SHIFT);
	spin_lock(&r->x->pool_lock);
	pool_ring_watch_mem(r->x->pool, bgid, (struct pool_ring_entry *)addr);
	spin_unlock(&r->x->pool_lock);
}

long bufring_register(struct ring *r, unsigned opcode, const long a[6])
{
	void *arg = (void *)a[2];
	if (!arg || a[3] != 1)
		return -EINVAL;
	if (ring_pool(r))
		return -ENOMEM;
	if (opcode == IORING_REGISTER_PBUF_STATUS)
		return ring_status(r, arg);
	struct bufring_reg reg;
	if (copy_from_prog(&reg, arg, sizeof(reg)))
		return -EFAULT;
	if (opcode == IORING_UNREGISTER_PBUF_RING)
		return unregister_ring(r, &reg);
	return emulated_ring(&reg) ? register_ring(r, &reg) : -ENOSYS;
}

/*
 * An offset at which bufsel keeps no ring goes to the kernel when the kernel
 * maps rings itself; one that does not (before 6.4: -EINVAL, an offset it
 * does not know) gets 6.18's answer from bufsel, which gives the program
 * the rings it lacks.
 */
static long not_ours(void)
{
	if (bufsel.conf.rings != BUFSEL_RINGS_AUTO)
		return bufsel.conf.rings == BUFSEL_RINGS_KERNEL ? -ENOSYS : -ENOMEM;
	return (kernel_rings() & KR_MMAP) ? -ENOSYS : -ENOMEM;
}

long bufring_mmap(struct ring *r, const long a[6])
{
	uint64_t off = (uint64_t)a[5];
	uint16_t bgid = (uint16_t)((off & ~BUFRING_OFF_MASK) >> BUFRING_OFF_SHIFT);
	size_t len = (size_t)a[1];
	void *addr = (void *)a[0];
	int prot = (int)a[2], flags = (int)a[3];
	struct pool_ring ring;
	uint16_t head;
	if (!r->x->pool)
		return not_ours();
	spin_lock(&r->x->pool_lock);
	long ret = pool_ring_get(r->x->pool, bgid, &ring, &head);
	spin_unlock(&r->x->pool_lock);
	if (ret)
		return not_ours();
	if (!ring.mem || !len || len > ring.mem_len)
		return -EINVAL;
	long m = ring.mem_fd >= 0
			 ? (long)sys_mmap(addr, len, prot, flags & ~MAP_FIXED_NOREPLACE, ring.mem_fd, 0)
			 : sys_call6(SYS_mremap, (long)ring.mem, 0, (long)len,
				     MREMAP_MAYMOVE | ((flags & MAP_FIXED) ? MREMAP_FIXED : 0), (long)addr, 0);
	if (sys_is_err(m))
		return m;
	if ((flags & MAP_FIXED_NOREPLACE) && addr && m != (long)addr) {
		sys_munmap((void *)m, len);
		return -EEXIST;
	}
	if (prot != (PROT_READ | PROT_WRITE) && (ret = sys_call3(SYS_mprotect, m, (long)len, prot))) {
		sys_munmap((void *)m, len);
		return ret;
	}
	return m;
}

static void unmap_ring(uint16_t bgid, const struct pool_ring *ring, void *arg)
{
	(void)bgid;
	(void)arg;
	release_mem(ring);
}

static void unshare_ring(uint16_t bgid, const struct pool_ring *ring, void *arg)
{
	(void)bgid;
	(void)arg;
	give_back_pages(ring);
}

static void each_ring(struct ring *r, void (*fn)(uint16_t bgid, const struct pool_ring *ring, void *arg))
{
	if (!r->x || !r->x->pool)
		return;
	spin_lock(&r->x->pool_lock);
	pool_for_each_ring(r->x->pool, fn, NULL);
	spin_unlock(&r->x->pool_lock);
}

void bufring_release(struct ring *r)
{
	each_ring(r, unmap_ring);
}

/* In a fork's child the program's view of a pinned ring is still the
 * parent's shared memory; natively the child has its own copy of the
 * ring's pages (the kernel keeps reading the parent's). */
void bufring_after_fork(struct ring *r)
{
	each_ring(r, unshare_ring);
}
