/*
 * io_uring_register on a shadowed ring.  The program's fd is the real ring,
 * so every opcode goes to the kernel as it is; bufsel only has to learn from
 * the ring-fd registrations which index names which ring, because
 * IORING_ENTER_REGISTERED_RING enters carry an index instead of an fd.
 * A resize, which swaps the real rings, is resize.c's.
 */
#include <errno.h>
#include <linux/io_uring.h>
#include <sys/syscall.h>

#include "preload/intercept/emulate.h"
#include "preload/log.h"
#include "preload/select/bufring.h"
#include "preload/select/req.h"
#include "preload/shadow/compat.h"
#include "preload/shadow/resize.h"
#include "preload/shadow/ring.h"
#include "preload/shadow/ring_io.h"
#include "preload/shadow/ring_pool.h"
#include "preload/spin.h"
#include "preload/sys.h"
#include "preload/uaccess.h"
#include "preload/uring_abi.h"

#define RING_FD_UPDATES_MAX 16

static void learn_ring_fds(unsigned opcode, const void *arg, unsigned nr, long ret)
{
	struct io_uring_rsrc_update up[RING_FD_UPDATES_MAX];
	if (ret <= 0 || nr > RING_FD_UPDATES_MAX || copy_from_prog(up, arg, nr * sizeof(up[0])))
		return;
	for (long i = 0; i < ret && i < (long)nr; i++) {
		if (opcode == IORING_UNREGISTER_RING_FDS) {
			ring_set_registered(up[i].offset, NULL);
			continue;
		}
		struct ring *r = ring_get((int)up[i].data);
		ring_set_registered(up[i].offset, r);
		if (r)
			ring_put(r);
	}
}

/*
 * A buffer ring and a legacy group cannot share an id.  The kernel knows
 * nothing of the legacy groups bufsel keeps, so its -EEXIST for a legacy
 * group that holds buffers is given here, after the kernel's own argument
 * checks have run (a registration that then succeeds is taken back).
 */
static long register_pbuf_ring(struct ring *r, const long a[6])
{
	struct bufring_reg reg;
	if (ring_pool(r))
		return -ENOMEM;
	long ret = sys_call6(__NR_io_uring_register, a[0], a[1], a[2], a[3], 0, 0);
	if (ret || copy_from_prog(&reg, (const void *)a[2], sizeof(reg)))
		return ret;
	spin_lock(&r->x->pool_lock);
	ret = pool_ring_register(r->x->pool, reg.bgid);
	spin_unlock(&r->x->pool_lock);
	if (ret) {
		struct io_uring_buf_reg undo = { .bgid = reg.bgid };
		sys_call6(__NR_io_uring_register, ring_fd(r), IORING_UNREGISTER_PBUF_RING, (long)&undo, 1, 0, 0);
	} else {
		bufring_watch(r, &reg);
	}
	return ret;
}

static long unregister_pbuf_ring(struct ring *r, const long a[6])
{
	struct io_uring_buf_reg reg;
	long ret = sys_call6(__NR_io_uring_register, a[0], a[1], a[2], a[3], 0, 0);
	if (!ret && r->x->pool && !copy_from_prog(&reg, (const void *)a[2], sizeof(reg))) {
		spin_lock(&r->x->pool_lock);
		pool_ring_unregister(r->x->pool, reg.bgid);
		spin_unlock(&r->x->pool_lock);
	}
	return ret;
}

/* A synchronous cancel by user_data must find requests bufsel renamed,
 * as an ASYNC_CANCEL SQE must (rewrite.c). */
static long sync_cancel(struct ring *r, const long a[6])
{
	struct io_uring_sync_cancel_reg reg;
	uint64_t tags[64];
	if (a[3] != 1 || copy_from_prog(&reg, (const void *)a[2], sizeof(reg)) ||
	    (reg.flags & (IORING_ASYNC_CANCEL_FD | IORING_ASYNC_CANCEL_ANY)))
		return -ENOSYS;
	unsigned n = req_tags_of(&r->reqs, reg.addr, tags, 64);
	if (!n)
		return -ENOSYS;
	if (!(reg.flags & IORING_ASYNC_CANCEL_ALL)) {
		reg.addr = tags[0];
		return sys_call6(__NR_io_uring_register, ring_fd(r), IORING_REGISTER_SYNC_CANCEL, (long)&reg, 1,
				 0, 0);
	}
	long found = 0;
	struct io_uring_sync_cancel_reg one = reg;
	one.flags &= ~IORING_ASYNC_CANCEL_ALL;
	for (unsigned i = 0; i < n; i++) {
		one.addr = tags[i];
		found += sys_call6(__NR_io_uring_register, ring_fd(r), IORING_REGISTER_SYNC_CANCEL,
				   (long)&one, 1, 0, 0) == 0;
	}
	long ret = sys_call6(__NR_io_uring_register, a[0], a[1], a[2], a[3], 0, 0);
	if (ret == -ENOENT)
		ret = 0;
	return ret < 0 ? ret : ret + found;
}

/* BUFSEL_KERNEL: the probe of that kernel, on bufsel's copy of the one the
 * kernel filled (a probe has at most 256 rows). */
static void probe_as_emulated(const long a[6])
{
	struct {
		struct io_uring_probe hdr;
		struct io_uring_probe_op ops[256];
	} p;
	unsigned nr = (unsigned)a[3] > 256 ? 256 : (unsigned)a[3];
	size_t len = sizeof(p.hdr) + nr * sizeof(p.ops[0]);
	if (!compat_emulating() || copy_from_prog(&p, (const void *)a[2], len))
		return;
	compat_probe(&p.hdr, nr);
	if (bufring_keeps_all())
		compat_probe_add(&p.hdr, nr, OP_READ_MULTISHOT_NR);
	copy_to_prog((void *)a[2], &p, len);
}

/* PROVIDE/REMOVE_BUFFERS are bufsel's on any kernel: the probe says so. */
static void probe_mark_emulated(const long a[6])
{
	struct io_uring_probe hdr;
	struct io_uring_probe *up = (struct io_uring_probe *)a[2];
	static const uint8_t ops[] = { IORING_OP_PROVIDE_BUFFERS, IORING_OP_REMOVE_BUFFERS };
	if (copy_from_prog(&hdr, up, sizeof(hdr)))
		return;
	for (size_t i = 0; i < sizeof(ops); i++) {
		struct io_uring_probe_op op;
		if (ops[i] >= hdr.ops_len || ops[i] >= (unsigned long)a[3] ||
		    copy_from_prog(&op, &up->ops[ops[i]], sizeof(op)))
			continue;
		op.op = ops[i];
		op.flags |= IO_URING_OP_SUPPORTED;
		copy_to_prog(&up->ops[ops[i]], &op, sizeof(op));
		if (hdr.last_op < ops[i]) {
			hdr.last_op = ops[i];
			copy_to_prog(&up->last_op, &hdr.last_op, sizeof(hdr.last_op));
		}
	}
}

long emu_register(const long a[6])
{
	if (compat_register_by_index((unsigned)a[1]))
		return -EINVAL;
	unsigned opcode = (unsigned)a[1] & ~IORING_REGISTER_USE_REGISTERED_RING;
	struct ring *r = (unsigned)a[1] & IORING_REGISTER_USE_REGISTERED_RING
				 ? ring_get_registered((unsigned)a[0])
				 : ring_get((int)a[0]);
	int shadowed = r != NULL;
	/* A SINGLE_ISSUER the shadow gives: __io_uring_register's -EEXIST
	 * for any task but the submitter; ENABLE_RINGS makes its caller the
	 * submitter of a ring set up disabled. */
	if (r && (r->shadowed_flags & IORING_SETUP_SINGLE_ISSUER)) {
		if (r->issuer_tid && r->issuer_tid != spin_self()) {
			ring_put(r);
			return -EEXIST;
		}
		if (opcode == IORING_REGISTER_ENABLE_RINGS) {
			long ret = sys_call6(__NR_io_uring_register, a[0], a[1], a[2], a[3], 0, 0);
			if (!ret && !r->issuer_tid)
				r->issuer_tid = spin_self();
			ring_put(r);
			return ret;
		}
	}
	if (r && bufring_opcode(opcode)) {
		/* Buffer rings bufsel keeps are there on any kernel. */
		long ret = bufring_register(r, opcode, a);
		if (ret != -ENOSYS) {
			ring_put(r);
			return ret;
		}
	}
	/* An older kernel does not know the opcode, ring or no ring. */
	if (compat_register_opcode(opcode)) {
		if (r)
			ring_put(r);
		return -EINVAL;
	}
	if (r && opcode == IORING_REGISTER_RESIZE_RINGS_NR) {
		/* The kernel swaps the rings bufsel submits to and reaps from:
		 * bufsel's view of them and the shadow follow (resize.c). */
		long ret = resize_rings(r, a);
		ring_put(r);
		return ret;
	}
	if (r) {
		long ret = -ENOSYS;
		complete_sync_cq_flags(r);
		if (opcode == IORING_REGISTER_PBUF_RING)
			ret = register_pbuf_ring(r, a);
		else if (opcode == IORING_UNREGISTER_PBUF_RING)
			ret = unregister_pbuf_ring(r, a);
		else if (opcode == IORING_REGISTER_SYNC_CANCEL)
			ret = sync_cancel(r, a);
		ring_put(r);
		if (ret != -ENOSYS)
			return ret;
	}
	long ret = sys_call6(__NR_io_uring_register, a[0], a[1],
			     (long)compat_register_arg(opcode, (unsigned long)a[2], (unsigned)a[3]), a[3], 0, 0);
	if (shadowed && (opcode == IORING_REGISTER_PERSONALITY || opcode == IORING_UNREGISTER_PERSONALITY)) {
		struct ring *pr = (unsigned)a[1] & IORING_REGISTER_USE_REGISTERED_RING
					  ? ring_get_registered((unsigned)a[0])
					  : ring_get((int)a[0]);
		if (pr) {
			rewrite_note_personality(pr, opcode, (unsigned)a[3], ret);
			ring_put(pr);
		}
	}
	if (shadowed && !ret &&
	    (opcode == IORING_REGISTER_FILES || opcode == IORING_REGISTER_FILES2 ||
	     opcode == IORING_UNREGISTER_FILES)) {
		struct ring *fr = (unsigned)a[1] & IORING_REGISTER_USE_REGISTERED_RING
					  ? ring_get_registered((unsigned)a[0])
					  : ring_get((int)a[0]);
		if (fr) {
			rewrite_note_files(fr, opcode, (const void *)a[2], (unsigned)a[3]);
			ring_put(fr);
		}
	}
	if (opcode == IORING_REGISTER_RING_FDS || opcode == IORING_UNREGISTER_RING_FDS)
		learn_ring_fds(opcode, (const void *)a[2], (unsigned)a[3], ret);
	if (opcode == IORING_REGISTER_PROBE && !ret)
		probe_as_emulated(a);
	if (opcode == IORING_REGISTER_PROBE && !ret && shadowed)
		probe_mark_emulated(a);
	return ret;
}
