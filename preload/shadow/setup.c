#define _GNU_SOURCE
/*
 * io_uring_setup and the ring mmap.  The kernel creates the real ring first,
 * so every validation and error is its own; bufsel then builds the shadow of
 * the same sizes and hands the program offsets into it.  Rings whose setup
 * flags change the memory layout or completion model in ways the shadow does
 * not model are left to the kernel untouched.
 *
 * Where the kernel takes ring memory from user space (IORING_SETUP_NO_MMAP,
 * 6.5), the real ring lives in bufsel's memory and bufsel keeps no fd of it:
 * nothing of bufsel's holds the ring's file, so the program's last close,
 * seen or not, releases the kernel ring as natively (ring.h, "unpinned").
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/io_uring.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "preload/intercept/emulate.h"
#include "preload/log.h"
#include "preload/select/bufring.h"
#include "preload/shadow/compat.h"
#include "preload/shadow/kernel_ops.h"
#include "preload/shadow/mover.h"
#include "preload/shadow/ring.h"
#include "preload/shadow/ring_io.h"
#include "preload/shadow/setup.h"
#include "preload/shadow/sharemem.h"
#include "preload/spin.h"
#include "preload/stats_closed.h"
#include "preload/sys.h"
#include "preload/uaccess.h"
#include "preload/uring_abi.h"
#include "preload/valgrind.h"

#define SETUP_SHADOWABLE                                                                        \
	(IORING_SETUP_SQPOLL | IORING_SETUP_SQ_AFF | IORING_SETUP_CQSIZE | IORING_SETUP_CLAMP |   \
	 IORING_SETUP_ATTACH_WQ | IORING_SETUP_R_DISABLED | IORING_SETUP_SUBMIT_ALL |             \
	 IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_SINGLE_ISSUER |     \
	 IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_NO_SQARRAY)

static long setup_forward(const long a[6])
{
	long fd = sys_call3(__NR_io_uring_setup, a[0], a[1], 0);
	if (fd >= 0)
		ring_fd_reused((int)fd);
	/* BUFSEL_KERNEL: the features of that kernel, on a ring bufsel does
	 * not shadow too.  The kernel just wrote them, so they are writable. */
	struct io_uring_params *up = (void *)a[1];
	unsigned f;
	if (fd >= 0 && !copy_from_prog(&f, &up->features, sizeof(f))) {
		f = compat_features(f);
		copy_to_prog(&up->features, &f, sizeof(f));
	}
	return fd;
}

static size_t page_up(size_t n)
{
	return (n + 4095) & ~(size_t)4095;
}

static unsigned pow2_up(unsigned n)
{
	unsigned v = 1;
	while (v < n)
		v <<= 1;
	return v;
}

/*
 * Sizes as the kernel computes them (io_uring_fill_params): 0, or -EINVAL
 * for parameters it refuses.
 */
int setup_ring_sizes(unsigned entries, const struct io_uring_params *p, unsigned *sq_out, unsigned *cq_out)
{
	int clamp = p->flags & IORING_SETUP_CLAMP;
	if (!entries || (entries > 32768 && !clamp))
		return -EINVAL;
	unsigned sq = pow2_up(entries > 32768 ? 32768 : entries), cq = 2 * sq;
	if (p->flags & IORING_SETUP_CQSIZE) {
		if (!p->cq_entries || (p->cq_entries > 65536 && !clamp))
			return -EINVAL;
		cq = pow2_up(p->cq_entries > 65536 ? 65536 : p->cq_entries);
		if (cq < sq)
			return -EINVAL;
	}
	*sq_out = sq;
	*cq_out = cq;
	return 0;
}

/* bufsel's memory for the kernel's rings of these sizes (rings_size, with a
 * page to spare for the rings' header). */
int real_mem_map(unsigned sq, unsigned cq, struct real_mem *m)
{
	m->rings_len = page_up(4096 + (size_t)cq * sizeof(struct io_uring_cqe) + (size_t)sq * sizeof(unsigned));
	m->sqes_len = page_up((size_t)sq * sizeof(struct io_uring_sqe));
	m->rings = sys_mmap(NULL, m->rings_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sys_is_err((long)m->rings)) {
		int err = (int)(long)m->rings;
		*m = (struct real_mem){0};
		return err;
	}
	m->sqes = sys_mmap(NULL, m->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sys_is_err((long)m->sqes)) {
		int err = (int)(long)m->sqes;
		sys_munmap(m->rings, m->rings_len);
		*m = (struct real_mem){0};
		return err;
	}
	return 0;
}

/* Parameters the kernel would refuse get no memory: the setup then goes the
 * ordinary way and fails as natively. */
static int real_mem_alloc(unsigned entries, const struct io_uring_params *p, struct real_mem *m)
{
	unsigned sq, cq;
	int err = setup_ring_sizes(entries, p, &sq, &cq);
	return err ? err : real_mem_map(sq, cq, m);
}

void real_mem_free(struct real_mem *m)
{
	if (m->rings)
		sys_munmap(m->rings, m->rings_len);
	if (m->sqes)
		sys_munmap(m->sqes, m->sqes_len);
	*m = (struct real_mem){0};
}

/*
 * The kernel's ring in bufsel's memory if it takes it, else as the program
 * asked.  *p comes back as the kernel filled it, less what NO_MMAP changed.
 * SQPOLL rings keep the ordinary way: their completion mover polls bufsel's
 * own fd of the ring.  Under BUFSEL_KERNEL older than 6.5 so does every
 * ring: bufsel's own requests use nothing that kernel lacks, and the mapped
 * ring's close path is the one that kernel takes.
 */
static long setup_real(unsigned entries, struct io_uring_params *p, struct real_mem *m)
{
	struct io_uring_params kp = *p;
	*m = (struct real_mem){0};
	if (!(p->flags & IORING_SETUP_SQPOLL) && compat_has_setup(IORING_SETUP_NO_MMAP) &&
	    !real_mem_alloc(entries, p, m)) {
		kp.flags |= IORING_SETUP_NO_MMAP;
		kp.cq_off.resv2 = (uintptr_t)m->rings;	/* user_addr in 6.5 headers */
		kp.sq_off.resv2 = (uintptr_t)m->sqes;
		long fd = sys_call3(__NR_io_uring_setup, entries, (long)&kp, 0);
		if (fd >= 0) {
			kp.flags = p->flags;
			kp.cq_off.resv2 = kp.sq_off.resv2 = 0;
			*p = kp;
			return fd;
		}
		real_mem_free(m);
		kp = *p;
	}
	long fd = sys_call3(__NR_io_uring_setup, entries, (long)&kp, 0);
	*p = kp;
	return fd;
}

void setup_point_real(struct ring *r, const struct io_uring_params *p, char *s, char *c, void *sqes)
{
	r->rsq_head = (void *)(s + p->sq_off.head);
	r->rsq_tail = (void *)(s + p->sq_off.tail);
	r->rsq_flags = (void *)(s + p->sq_off.flags);
	/* Without an array the kernel takes slot head & mask, which is where
	 * bufsel puts every SQE anyway. */
	r->rsq_array = p->flags & IORING_SETUP_NO_SQARRAY ? NULL : (void *)(s + p->sq_off.array);
	r->rsq_mask = *(unsigned *)(s + p->sq_off.ring_mask);
	r->rsq_entries = *(unsigned *)(s + p->sq_off.ring_entries);
	r->rcq_head = (void *)(c + p->cq_off.head);
	r->rcq_tail = (void *)(c + p->cq_off.tail);
	r->rcq_overflow = (void *)(c + p->cq_off.overflow);
	r->rcq_flags = p->cq_off.flags ? (void *)(c + p->cq_off.flags) : NULL;
	r->x->rcq_taken = atomic_load_explicit(r->rcq_head, memory_order_relaxed);
	r->rcq_mask = *(unsigned *)(c + p->cq_off.ring_mask);
	r->rcq_entries = *(unsigned *)(c + p->cq_off.ring_entries);
	r->rcqes = (void *)(c + p->cq_off.cqes);
	r->rsqes = sqes;
}

/* The ring's memory is bufsel's: the ring takes it over (freed at teardown). */
void setup_adopt_real(struct ring *r, const struct io_uring_params *p, struct real_mem *m)
{
	r->real_sq_map = r->real_cq_map = m->rings;
	r->real_sq_len = r->real_cq_len = m->rings_len;
	r->real_sqes_map = m->sqes;
	r->real_sqes_len = m->sqes_len;
	setup_point_real(r, p, m->rings, m->rings, m->sqes);
	*m = (struct real_mem){0};
}

int setup_map_real(struct ring *r, const struct io_uring_params *p)
{
	size_t sq_len = p->sq_off.array + p->sq_entries * sizeof(unsigned);
	size_t cq_len = p->cq_off.cqes + p->cq_entries * sizeof(struct io_uring_cqe);
	int single = p->features & IORING_FEAT_SINGLE_MMAP;
	if (single && cq_len > sq_len)
		sq_len = cq_len;
	void *sq = sys_mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
			    r->priv_fd, IORING_OFF_SQ_RING);
	if (sys_is_err((long)sq))
		return (int)(long)sq;
	r->real_sq_map = sq;
	r->real_sq_len = sq_len;
	void *cq = sq;
	if (!single) {
		cq = sys_mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
			      r->priv_fd, IORING_OFF_CQ_RING);
		if (sys_is_err((long)cq))
			return (int)(long)cq;
	}
	r->real_cq_map = cq;
	r->real_cq_len = cq_len;
	r->real_sqes_len = p->sq_entries * sizeof(struct io_uring_sqe);
	void *sqes = sys_mmap(NULL, r->real_sqes_len, PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_POPULATE, r->priv_fd, IORING_OFF_SQES);
	if (sys_is_err((long)sqes))
		return (int)(long)sqes;
	r->real_sqes_map = sqes;

	setup_point_real(r, p, sq, cq, sqes);
	return 0;
}

int setup_map_shadow(const struct io_uring_params *p, int share_flags, struct shadow *sh, int *mem_fd)
{
	struct shadow_layout lay;
	shadow_layout_init(&lay, p->sq_entries, p->cq_entries, 4096);
	lay.no_sqarray = !!(p->flags & IORING_SETUP_NO_SQARRAY);
	/* The kernel's TASKRUN bit, set from any context, is seen as it is
	 * set: the program's flags word is the kernel's (ring.h, flags_shared).
	 * Under valgrind the program's mappings come from the memfd alone. */
	int share = share_flags &&
		    (p->flags & (IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG)) ==
			    (IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG) &&
		    p->sq_off.flags + sizeof(unsigned) <= 4096 && !valgrind_running();
	if (share)
		shadow_layout_share_flags(&lay, p->sq_off.flags, 4096);
	int mfd = (int)sys_call3(SYS_memfd_create, (long)"bufsel-shadow-ring", MFD_CLOEXEC, 0);
	if (mfd < 0)
		return mfd;
	*mem_fd = -1;
	/* The inode by which the program's mappings show in /proc/self/maps
	 * (shadow_maps.c); without it a mapped ring closed is kept. */
	struct stat st;
	unsigned long ino = sys_call3(SYS_fstat, mfd, (long)&st, 0) ? 0 : st.st_ino;
	unsigned long dev = ino ? st.st_dev : 0;
	long err = sharemem_size_memfd(mfd, lay.total_len);
	void *mem = err ? NULL : sys_mmap(NULL, lay.total_len, PROT_READ | PROT_WRITE,
					  MAP_SHARED | MAP_POPULATE, mfd, 0);
	if (!err && !sys_is_err((long)mem) && valgrind_running()) {
		*mem_fd = sys_dupfd_high(mfd);
		if (*mem_fd < 0)
			err = *mem_fd;
	}
	sys_close(mfd);
	if (!err && sys_is_err((long)mem))
		err = (long)mem;
	if (err) {
		if (mem && !sys_is_err((long)mem))
			sys_munmap(mem, lay.total_len);
		*mem_fd = -1;
		return (int)err;
	}
	*sh = (struct shadow){ .sq_entries = p->sq_entries, .cq_entries = p->cq_entries };
	shadow_attach(sh, &lay, mem);
	sh->mem_ino = ino;
	sh->mem_dev = dev;
	return 0;
}

/*
 * The real ring's first page over the first page of a program's view of
 * the rings (shadow.h, real_page): another mapping of bufsel's memory the
 * kernel uses for the ring, or of the ring's own fd.
 */
static long map_real_page(struct ring *r, long dest)
{
	size_t page = r->sh.lay.real_page;
	long m;
	if (!r->real_own_mem)
		m = (long)sys_mmap((void *)dest, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
				   r->priv_fd, IORING_OFF_SQ_RING);
	else
		m = sys_call6(SYS_mremap, (long)r->real_sq_map, 0, (long)page,
			      MREMAP_MAYMOVE | MREMAP_FIXED, dest, 0);
	return sys_is_err(m) ? m : 0;
}

/* Another mapping of the same shadow pages (mremap of a shared mapping with
 * an old size of 0), where and as the program asked. */
static long map_shadow_part(struct ring *r, void *addr, size_t len, int prot, int flags, size_t memoff)
{
	long src = (long)r->sh.mem + (long)memoff;
	long m;
	if (r->mem_fd >= 0)
		m = (long)sys_mmap(addr, len, prot, flags, r->mem_fd, (off_t)memoff);
	else if (flags & MAP_FIXED)
		m = sys_call6(SYS_mremap, src, 0, (long)len, MREMAP_MAYMOVE | MREMAP_FIXED, (long)addr, 0);
	else
		m = sys_call6(SYS_mremap, src, 0, (long)len, MREMAP_MAYMOVE, 0, 0);
	if (sys_is_err(m))
		return m;
	if ((flags & MAP_FIXED_NOREPLACE) && addr && m != (long)addr) {
		sys_munmap((void *)m, len);
		return -EEXIST;
	}
	if (r->sh.lay.real_page && memoff == 0 && len >= r->sh.lay.real_page) {
		long err = map_real_page(r, m);
		if (err) {
			sys_munmap((void *)m, len);
			return err;
		}
	}
	if (prot != (PROT_READ | PROT_WRITE)) {
		long err = sys_call3(SYS_mprotect, m, (long)len, prot);
		if (err) {
			sys_munmap((void *)m, len);
			return err;
		}
	}
	/* The real ring's page, over the view's first, splits the mapping. */
	size_t real = r->sh.lay.real_page && memoff == 0 ? r->sh.lay.real_page : 0;
	if (page_up(len) > real)
		shadow_note_view(&r->sh, (uintptr_t)m + real, (uintptr_t)m + page_up(len));
	return m;
}

/*
 * io_uring_sanitise_params' rules for the flags the shadow gives, which
 * the kernel beneath cannot check (it never sees them).
 */
static long shadowed_params_check(unsigned flags)
{
	if ((flags & IORING_SETUP_DEFER_TASKRUN) && !(flags & IORING_SETUP_SINGLE_ISSUER))
		return -EINVAL;
	if ((flags & IORING_SETUP_SQPOLL) &&
	    (flags & (IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_DEFER_TASKRUN)))
		return -EINVAL;
	if ((flags & IORING_SETUP_TASKRUN_FLAG) &&
	    !(flags & (IORING_SETUP_COOP_TASKRUN | IORING_SETUP_DEFER_TASKRUN)))
		return -EINVAL;
	return 0;
}

/*
 * A NO_MMAP the shadow gives: the program's memory is the shadow, as it is
 * the ring natively.  The memory is checked as io_create_region checks
 * what it pins: the rings' region the size the kernel computes for them
 * (rings_size, which bufsel's layout fits in: its header is four cache
 * lines longer, and both place the SQ array on a cache line after the
 * CQEs), the SQEs' region their array's.  The program learns the layout's
 * offsets from the params as ever.
 */
static long setup_user_shadow(const struct io_uring_params *p, uint64_t rings, uint64_t sqes,
			      struct shadow *sh)
{
	struct shadow_layout lay;
	shadow_layout_init(&lay, p->sq_entries, p->cq_entries, 4096);
	lay.no_sqarray = !!(p->flags & IORING_SETUP_NO_SQARRAY);
	size_t krings = 64 + (size_t)p->cq_entries * sizeof(struct io_uring_cqe);
	krings = (krings + 63) & ~(size_t)63;
	if (!lay.no_sqarray)
		krings += (size_t)p->sq_entries * sizeof(uint32_t);
	else
		lay.rings_len = lay.sq_array;
	long err = uaccess_user_region(rings, page_up(krings));
	if (!err)
		err = uaccess_user_region(sqes, page_up(lay.sqes_len));
	if (err)
		return err;
	if (page_up(lay.rings_len) > page_up(krings))
		return -ENOMEM;	/* never, by the sizes above (invariant) */
	*sh = (struct shadow){ .sq_entries = p->sq_entries, .cq_entries = p->cq_entries };
	shadow_attach(sh, &lay, (void *)(uintptr_t)rings);
	sh->sqes = (void *)(uintptr_t)sqes;
	return 0;
}

long emu_setup(const long a[6])
{
	struct io_uring_params p, *up = (void *)a[1];
	if (copy_from_prog(&p, up, sizeof(p)))
		return -EFAULT;
	if (bufsel.conf.mode == BUFSEL_MODE_PASSTHROUGH)
		return setup_forward(a);
	kernel_ops_probe();
	if (compat_setup_flags(p.flags))
		return -EINVAL;
	unsigned shadowed = compat_setup_shadowed(p.flags);
	int retried = 0;
again:
	if (shadowed) {
		long err = shadowed_params_check(p.flags);
		if (err)
			return err;
	}
	if (p.flags & ~(SETUP_SHADOWABLE | shadowed)) {
		/* A ring bufsel leaves to the kernel cannot have what only the
		 * shadow gives: the emulated kernel lacks it. */
		if (shadowed)
			return -EINVAL;
		long fd = setup_forward(a);
		if (fd == -EINVAL && !retried && (shadowed = kernel_setup_unknown(compat_setup_lacked(p.flags)))) {
			retried = 1;
			goto again;
		}
		if (fd >= 0)
			log_once(BUFSEL_LOG_WARN, ONCE_UNSHADOWED, "ring fd %ld: setup flags 0x%x include 0x%x, which bufsel does not shadow: "
				 "passed through to the kernel untouched", fd, p.flags,
				 p.flags & ~SETUP_SHADOWABLE);
		return fd;
	}
	/* Rings the program closed with an unseen close() go before a new one. */
	ring_sweep();

	/* The kernel beneath gets the ring without what the shadow gives. */
	unsigned prog_flags = p.flags;
	uint64_t user_rings = p.cq_off.resv2, user_sqes = p.sq_off.resv2;
	p.flags &= ~shadowed;
	if (shadowed & IORING_SETUP_NO_MMAP)
		p.cq_off.resv2 = p.sq_off.resv2 = 0;

	struct real_mem m;
	/* The program's SQ thread is bufsel's poller (mover.c), which spins
	 * for the program's sq_thread_idle; the kernel's thread behind it
	 * keeps the program's idle too.  Once asleep, that thread is what the
	 * program's completions wait for: the task work of a read that found
	 * its data wakes it, and that took 2 to 5 ms here where the awake
	 * thread of a native ring takes microseconds (min-timeout-wait's
	 * 10 ms wait, with a 1 ms idle, came back at 15 ms). */
	if (p.flags & IORING_SETUP_SQPOLL)
		sys_fd_table_grow();	/* before the kernel's SQ thread shares the table (sys.c) */
	long fd = setup_real((unsigned)a[0], &p, &m);
	unsigned lacked;
	if (fd == -EINVAL && !retried && (lacked = kernel_setup_unknown(compat_setup_lacked(prog_flags) & ~shadowed))) {
		/* The kernel beneath refused a flag the shadow gives. */
		if (copy_from_prog(&p, up, sizeof(p)))
			return -EFAULT;
		shadowed |= lacked;
		retried = 1;
		goto again;
	}
	if (fd < 0)
		return fd;
	ring_fd_reused((int)fd);
	struct ring *r = ring_alloc();
	if (!r) {
		log_once(BUFSEL_LOG_WARN, ONCE_RING_SLOTS, "ring fd %ld: more than %d rings alive (or no memory for one), passed through to the kernel", fd,
			 RING_SLOTS);
		sys_close((int)fd);
		real_mem_free(&m);
		return setup_forward(a);
	}
	r->prog_fd = (int)fd;
	r->serial = (unsigned)atomic_load(&bufsel.n.rings);
	r->fork_gen = stats_fork_gen();
	r->setup_flags = prog_flags;
	r->shadowed_flags = shadowed;
	r->commits_empty_sq = kernel_rule(KERNEL_EMPTY_SQ_COMMIT);
	if ((shadowed & IORING_SETUP_SINGLE_ISSUER) && !(prog_flags & IORING_SETUP_R_DISABLED))
		r->issuer_tid = spin_self();
	r->features = p.features;
	r->sq_idle_ms = p.sq_thread_idle;
	int err = 0, own_mem = m.rings != NULL;

	if (own_mem) {
		r->real_own_mem = 1;
		setup_adopt_real(r, &p, &m);
		/* Told apart by its inode, the ring needs no fd of bufsel's. */
		r->unpinned = ring_identify(r, (int)fd);
		atomic_store(&r->real_fd, (int)fd);
	}
	if (!r->unpinned && (r->priv_fd = sys_dupfd_high((int)fd)) < 0)
		err = r->priv_fd;
	if (!err && !r->real_sq_map)
		err = setup_map_real(r, &p);
	p.flags = prog_flags;
	if (!err && (shadowed & IORING_SETUP_NO_MMAP)) {
		err = setup_user_shadow(&p, user_rings, user_sqes, &r->sh);
		r->prog_mem = !err;
		if (err) {
			/* The kernel's answer to the memory it could not pin: the
			 * setup fails, no ring made. */
			ring_abandon(r);
			sys_close((int)fd);
			return err;
		}
	} else if (!err) {
		err = setup_map_shadow(&p, 1, &r->sh, &r->mem_fd);
	}
	if (!err && r->sh.lay.real_page) {
		r->sh.sq_flags = (_Atomic uint32_t *)r->rsq_flags;
		r->flags_shared = 1;
	}
	if (!err)
		err = ring_scratch_alloc(r, p.sq_entries, p.cq_entries);
	if (err) {
		/* bufsel's own fds or memory ran out where the kernel's ring did
		 * not (a program at its RLIMIT_NOFILE with one fd left): the
		 * program still gets the ring it would get natively. */
		log_once(BUFSEL_LOG_WARN, ONCE_NO_SHADOW, "ring fd %ld: no room for a shadow (%s): passed through to the kernel", fd,
			 log_errname(err));
		ring_abandon(r);
		if (own_mem) {
			/* Its rings were bufsel's memory, gone with the shadow: the
			 * program gets one it can map. */
			sys_close((int)fd);
			return setup_forward(a);
		}
		p.features = compat_features(p.features);
		if (copy_to_prog(up, &p, sizeof(p))) {
			sys_close((int)fd);
			return -EFAULT;
		}
		return fd;
	}
	r->hooks = &rewrite_hooks;

	struct io_uring_params out = p;
	out.features = compat_features(p.features);
	/* Asked only where the answer counts: a kernel with bundles has rings. */
	if (!(out.features & FEAT_RECVSEND_BUNDLE) && bufring_keeps_all())
		out.features |= FEAT_RECVSEND_BUNDLE;
	/* bufsel's skip (rewrite_skip) takes every skip from the start. */
	if (compat_sqe_skip_shadowed()) {
		out.features |= IORING_FEAT_CQE_SKIP;
		r->x->kernel_skip = 1;
	}
	shadow_fill_offsets(&r->sh.lay, &out.sq_off, &out.cq_off);
	if (r->prog_mem) {
		out.cq_off.resv2 = user_rings;
		out.sq_off.resv2 = user_sqes;
	}
	complete_reap(r);	/* sets the initial shadow flags */
	if (copy_to_prog(up, &out, sizeof(out))) {
		err = -EFAULT;
		goto fail;
	}
	ring_publish(r);
	if (p.flags & IORING_SETUP_DEFER_TASKRUN)
		r->cq_moved = 1;	/* its CQ fills only in the program's enters */
	else if ((err = (p.flags & IORING_SETUP_SQPOLL) ? mover_start(r) : mover_watch(r)))
		log_once(BUFSEL_LOG_WARN, ONCE_NO_MOVER, "ring fd %ld: no completion mover (%s): completions move only when the program enters",
			 fd, log_errname(err));
	complete_reap(r);	/* the flags of a ring with a mover */
	atomic_fetch_add_explicit(&bufsel.n.rings, 1, memory_order_relaxed);
	log_debug("ring fd %ld: shadowed (sq %u, cq %u, flags 0x%x)", fd, p.sq_entries,
		 p.cq_entries, p.flags);
	return fd;
fail:
	ring_abandon(r);
	sys_close((int)fd);
	return err;
}

long emu_mmap(const long a[6])
{
	size_t len = (size_t)a[1];
	int fd = (int)a[4];
	uint64_t off = (uint64_t)a[5];
	struct ring *r = ring_get(fd);
	size_t memoff;
	long ret;

	if (!r)
		return sys_call6(SYS_mmap, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (off >= IORING_OFF_PBUF_RING) {
		ret = bufring_mmap(r, a);
		if (ret == -ENOSYS) {	/* the kernel's buffer ring */
			ret = sys_call6(SYS_mmap, a[0], a[1], a[2], a[3], a[4], a[5]);
			bufring_watch_mmap(r, off, ret);
		}
	} else if (r->prog_mem) {
		ret = -ENOMEM;	/* as 6.18 answers for a ring in the program's memory */
	} else if (!(ret = shadow_map_offset(&r->sh.lay, off, len, &memoff))) {
		ret = map_shadow_part(r, (void *)a[0], len, (int)a[2], (int)a[3], memoff);
	}
	ring_put(r);
	return ret;
}
