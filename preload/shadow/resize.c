/*
 * IORING_REGISTER_RESIZE_RINGS (6.13) on a shadowed ring.  The kernel swaps
 * the real rings for new ones and copies what is in them; the program then
 * maps the ring fd again and must find its own rings resized the same way.
 * So bufsel resizes both: the real ring through the kernel (with new memory
 * of bufsel's when the kernel uses bufsel's, IORING_SETUP_NO_MMAP), and the
 * shadow, which it builds anew and fills as io_register_resize_rings fills
 * the kernel's: every SQE the program has not submitted and every CQE it has
 * not consumed at the same index in the new ring (index & the new mask), the
 * heads and tails, the SQ flags, dropped count, CQ flags and overflow count
 * as they were; -EOVERFLOW, and no change, if they do not fit.
 *
 * The kernel's checks come in its order: its own (the calling task, the
 * ring's restrictions, DEFER_TASKRUN, the flags) are asked of it with a flag
 * no kernel accepts, then the sizes (io_uring_fill_params, emulated), the
 * argument written back, and only then the fit.  What the program mapped of
 * the old shadow stays valid until it unmaps it: its mappings hold the old
 * memfd's pages.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "preload/log.h"
#include "preload/shadow/resize.h"
#include "preload/shadow/ring_io.h"
#include "preload/shadow/setup.h"
#include "preload/sys.h"
#include "preload/uaccess.h"
#include "preload/uring_abi.h"

#define RESIZE_FLAGS (IORING_SETUP_CQSIZE | IORING_SETUP_CLAMP)
/* What a resized ring inherits (6.18's COPY_FLAGS); of these a shadowed ring
 * can only have NO_SQARRAY, and bufsel's NO_MMAP is not the program's. */
#define RESIZE_COPY_FLAGS IORING_SETUP_NO_SQARRAY
/* A flag outside RESIZE_FLAGS: the kernel's answer is then its first check
 * that fails, or -EINVAL once all before the flag check pass. */
#define RESIZE_PROBE_FLAG (1U << 31)

static long kernel_resize(const long a[6], struct io_uring_params *kp)
{
	return sys_call6(__NR_io_uring_register, a[0], a[1], (long)kp, 1, 0, 0);
}

/*
 * The argument as 6.18 writes it back (io_uring_fill_params): the sizes, the
 * inherited flags, the offsets (here the shadow's) but for the SQ array's,
 * which it leaves as the program passed it, and the rest untouched.
 */
static void prog_params(const struct io_uring_params *p, const struct io_uring_params *np,
			const struct shadow_layout *lay, struct io_uring_params *out)
{
	*out = *p;
	out->flags = np->flags;
	out->sq_entries = np->sq_entries;
	out->cq_entries = np->cq_entries;
	shadow_fill_offsets(lay, &out->sq_off, &out->cq_off);
	out->sq_off.array = p->sq_off.array;
}

/* The new shadow, scratch and real memory, made before the kernel swaps. */
struct resize_new {
	struct shadow sh;
	int mem_fd;
	void *scratch;
	size_t scratch_len;
	struct rewrite_undo *undo;
	unsigned *prog_end;
	uint8_t *from_real;
	struct io_uring_cqe *reserve;
	struct real_mem real;
};

static void new_free(struct resize_new *n)
{
	if (n->sh.mem)
		sys_munmap(n->sh.mem, n->sh.lay.total_len);
	if (n->mem_fd >= 0)
		sys_close(n->mem_fd);
	if (n->scratch)
		sys_munmap(n->scratch, n->scratch_len);
	real_mem_free(&n->real);
}

/* Caller holds sq_lock and cq_lock. */
static int new_alloc(struct ring *r, const struct io_uring_params *np, struct resize_new *n)
{
	*n = (struct resize_new){ .mem_fd = -1 };
	/* A ring whose SQ flags word was the kernel's gets its own in the new
	 * shadow: the offsets the program is told are a plain layout's. */
	int err = setup_map_shadow(np, 0, &n->sh, &n->mem_fd);
	if (err)
		return err;
	/* ring_scratch_alloc fills the ring's own fields: take the new ones
	 * and put the old back (the queued CQEs move later). */
	void *scratch = r->scratch;
	size_t scratch_len = r->scratch_len;
	struct rewrite_undo *undo = r->undo;
	unsigned *prog_end = r->prog_end;
	uint8_t *from_real = r->cq_from_real;
	struct cqe_queue synth = r->x->synth;
	struct io_uring_cqe *synth_reserve = r->synth_reserve;
	err = ring_scratch_alloc(r, np->sq_entries, np->cq_entries);
	if (!err) {
		n->scratch = r->scratch;
		n->scratch_len = r->scratch_len;
		n->undo = r->undo;
		n->prog_end = r->prog_end;
		n->from_real = r->cq_from_real;
		n->reserve = r->x->synth.v;
	}
	r->scratch = scratch;
	r->scratch_len = scratch_len;
	r->undo = undo;
	r->prog_end = prog_end;
	r->cq_from_real = from_real;
	r->x->synth = synth;
	r->synth_reserve = synth_reserve;
	if (!err && r->real_own_mem)
		err = real_mem_map(np->sq_entries, np->cq_entries, &n->real);
	if (err)
		new_free(n);
	return err;
}

/* The kernel swapped the real rings: bufsel's view of them follows.  The
 * kernel kept every index (real SQ and CQ heads and tails), so what bufsel
 * counts by index (the CQEs it took) stays as it is. */
static int follow_real(struct ring *r, const struct io_uring_params *kp, struct resize_new *n)
{
	/* The kernel does not say where the new SQ array is: where
	 * rings_size puts it, after the CQEs on a cache line of its own. */
	struct io_uring_params kr = *kp;
	kr.features = r->features;
	if (!(r->setup_flags & IORING_SETUP_NO_SQARRAY))
		kr.sq_off.array = (kr.cq_off.cqes + kr.cq_entries * (unsigned)sizeof(struct io_uring_cqe) + 63) & ~63U;
	void *sq = r->real_sq_map, *cq = r->real_cq_map, *sqes = r->real_sqes_map;
	size_t sq_len = r->real_sq_len, cq_len = r->real_cq_len, sqes_len = r->real_sqes_len;
	unsigned taken = r->x->rcq_taken;
	int err = 0;
	if (r->real_own_mem)
		setup_adopt_real(r, &kr, &n->real);
	else
		err = setup_map_real(r, &kr);
	r->x->rcq_taken = taken;
	if (err)
		return err;
	ring_retire(r, sqes, sqes_len);
	if (cq != sq)
		ring_retire(r, cq, cq_len);
	ring_retire(r, sq, sq_len);
	return 0;
}

/* The shadow SQ as the kernel copies its own: by index, not through the SQ
 * array (which the new ring starts without, as the kernel's does). */
static void move_sq(struct ring *r, struct shadow *ns, unsigned head, unsigned tail)
{
	struct shadow *s = &r->sh;
	for (unsigned i = head; i != tail; i++)
		ns->sqes[i & ns->sq_mask] = s->sqes[i & s->sq_mask];
	atomic_store_explicit(ns->sq_head, head, memory_order_relaxed);
	atomic_store_explicit(ns->sq_tail, tail, memory_order_relaxed);
	atomic_store_explicit(ns->sq_dropped, atomic_load_explicit(s->sq_dropped, memory_order_relaxed),
			      memory_order_relaxed);
	atomic_store_explicit(ns->sq_flags, atomic_load_explicit(s->sq_flags, memory_order_relaxed),
			      memory_order_relaxed);
}

/* Both locks held: the swap itself, once the kernel's rings are resized. */
static void swap_shadow(struct ring *r, struct resize_new *n)
{
	unsigned head = atomic_load_explicit(r->sh.sq_head, memory_order_relaxed);
	unsigned tail = atomic_load_explicit(r->sh.sq_tail, memory_order_acquire);
	move_sq(r, &n->sh, head, tail);
	complete_resize_move(r, &n->sh, n->from_real, n->reserve);
	ring_retire(r, r->sh.mem, r->sh.lay.total_len);
	if (r->scratch)
		sys_munmap(r->scratch, r->scratch_len);
	r->scratch = n->scratch;
	r->scratch_len = n->scratch_len;
	r->undo = n->undo;
	r->prog_end = n->prog_end;
	if (r->mem_fd >= 0)
		sys_close(r->mem_fd);
	r->mem_fd = n->mem_fd;
	r->sh = n->sh;
	r->flags_shared = 0;
	*n = (struct resize_new){ .mem_fd = -1 };
}

static long resize_locked(struct ring *r, const long a[6], const struct io_uring_params *p)
{
	struct io_uring_params np = *p, out, kp;
	struct io_uring_params *up = (void *)a[2];
	unsigned prog_flags = p->flags | (r->setup_flags & RESIZE_COPY_FLAGS);
	np.flags = prog_flags;
	int err = setup_ring_sizes(p->sq_entries, p, &np.sq_entries, &np.cq_entries);
	if (err)
		return err;
	struct shadow_layout lay;
	shadow_layout_init(&lay, np.sq_entries, np.cq_entries, 4096);
	lay.no_sqarray = !!(prog_flags & IORING_SETUP_NO_SQARRAY);
	/* The kernel writes the argument back before it looks at the rings. */
	prog_params(p, &np, &lay, &out);
	unsigned sq_pending = atomic_load_explicit(r->sh.sq_tail, memory_order_acquire) -
			      atomic_load_explicit(r->sh.sq_head, memory_order_relaxed);
	if (sq_pending > np.sq_entries || complete_resize_pending(r) > np.cq_entries)
		return copy_to_prog(up, &out, sizeof(out)) ? -EFAULT : -EOVERFLOW;
	/* A read-only argument fails before anything changes, as natively. */
	if (copy_to_prog(up, p, sizeof(*p)))
		return -EFAULT;

	struct resize_new n;
	if ((err = new_alloc(r, &np, &n))) {
		log_once(BUFSEL_LOG_WARN, ONCE_RESIZE, "ring fd %d: no memory for a resized shadow (%s)", r->prog_fd,
			 log_errname(err));
		return err;
	}
	kp = *p;
	memset(&kp.sq_off, 0, sizeof(kp.sq_off));
	memset(&kp.cq_off, 0, sizeof(kp.cq_off));
	if (r->real_own_mem) {
		kp.cq_off.resv2 = (uintptr_t)n.real.rings;	/* user_addr in 6.5 headers */
		kp.sq_off.resv2 = (uintptr_t)n.real.sqes;
	}
	struct io_uring_params sent = kp;
	long ret = kernel_resize(a, &kp);
	if (ret) {
		new_free(&n);
		/* Failing after it wrote the argument back (-EOVERFLOW, no memory
		 * for the SQEs), the kernel leaves it written. */
		if (memcmp(&kp, &sent, sizeof(kp)))
			copy_to_prog(up, &out, sizeof(out));
		return ret;
	}
	if ((err = follow_real(r, &kp, &n))) {
		/* The kernel's rings moved where bufsel cannot see them. */
		log_once(BUFSEL_LOG_ERROR, ONCE_RESIZE, "ring fd %d: resized rings cannot be mapped (%s)", r->prog_fd,
			 log_errname(err));
		new_free(&n);
		return err;
	}
	swap_shadow(r, &n);
	copy_to_prog(up, &out, sizeof(out));
	log_debug("ring fd %d: resized (sq %u, cq %u)", r->prog_fd, np.sq_entries, np.cq_entries);
	return 0;
}

long resize_rings(struct ring *r, const long a[6])
{
	struct io_uring_params p, probe;
	/* A DEFER_TASKRUN the shadow gives: the kernel beneath is older than
	 * 6.1, let alone 6.13, and knows no such opcode (its probe's -EINVAL
	 * would read as every check passed). */
	if (r->shadowed_flags & IORING_SETUP_DEFER_TASKRUN)
		return -EINVAL;
	if (!(r->setup_flags & IORING_SETUP_DEFER_TASKRUN) || !a[2] || a[3] != 1 ||
	    copy_from_prog(&p, (const void *)a[2], sizeof(p)))
		return kernel_resize(a, (struct io_uring_params *)a[2]);
	probe = p;
	probe.flags |= RESIZE_PROBE_FLAG;
	long ret = kernel_resize(a, &probe);
	if (ret != -EINVAL)
		return ret;
	if (p.flags & ~RESIZE_FLAGS)
		return -EINVAL;
	/* What an enter would have moved by now is in the shadow first. */
	complete_reap(r);
	spin_lock(&r->x->sq_lock);
	spin_lock(&r->x->cq_lock);
	ret = resize_locked(r, a, &p);
	spin_unlock(&r->x->cq_lock);
	spin_unlock(&r->x->sq_lock);
	return ret;
}
