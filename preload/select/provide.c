/*
 * PROVIDE_BUFFERS and REMOVE_BUFFERS on bufsel's groups, which the kernel
 * never sees: checked at submission as the kernel checks them, run against
 * the pool when the kernel would issue them (at once, or at the end of the
 * batch for one a worker would issue), and answered by a stand-in in their
 * slot.  What they did is taken back if the kernel does not take the SQE
 * (rewrite_undo in rewrite.c).
 */
#define _GNU_SOURCE
#include "preload/select/provide.h"

#include <errno.h>

#include "preload/log.h"
#include "preload/select/opdef.h"
#include "preload/select/prep.h"
#include "preload/select/standin.h"
#include "preload/shadow/kernel_ops.h"
#include "preload/shadow/ring.h"

static struct pool_provide provide_args(const struct io_uring_sqe *sqe)
{
	return (struct pool_provide){
		.addr = sqe->addr, .len = sqe->len, .nbufs = sqe->fd, .off = sqe->off,
		.bgid = sqe->buf_group, .rw_flags = sqe->rw_flags,
		.splice_fd_in = (uint32_t)sqe->splice_fd_in, .ioprio = sqe->ioprio,
	};
}

static struct pool_remove remove_args(const struct io_uring_sqe *sqe)
{
	return (struct pool_remove){
		.nbufs = sqe->fd, .bgid = sqe->buf_group, .addr = sqe->addr, .len = sqe->len,
		.off = sqe->off, .rw_flags = sqe->rw_flags, .splice_fd_in = (uint32_t)sqe->splice_fd_in,
	};
}

/* What the kernel checks of PROVIDE/REMOVE_BUFFERS at submission, after
 * io_init_req's generic checks: 0 or the error. */
int rewrite_emulated_prep(const struct ring *r, const struct io_uring_sqe *sqe,
			  enum opdef_emulated kind)
{
	/* io_init_req: neither opcode takes a buffer or an ioprio; then the
	 * personality, all before the opcode's own prep. */
	if (sqe->flags & IOSQE_BUFFER_SELECT)
		return -EOPNOTSUPP;
	if (sqe->ioprio)
		return -EINVAL;
	int res = rewrite_personality_check(r, sqe->personality);
	if (res)
		return res;
	if (kind == EMU_PROVIDE_BUFFERS) {
		struct pool_provide p = provide_args(sqe);
		return pool_provide_prep(&p, kernel_legacy_rules());
	}
	struct pool_remove p = remove_args(sqe);
	return pool_remove_prep(&p, kernel_legacy_rules());
}

/* Does io-wq issue sqe after the batch, as a worker gets to it?  Not one with
 * IOSQE_CQE_SKIP_SUCCESS, which turns the kernel's skip rule on as it is
 * placed, nor a drained one, nor one the kernel holds in its defer list
 * (selects_in_worker says why). */
int rewrite_worker_after_batch(const struct ring *r, const struct io_uring_sqe *sqe)
{
	return r->to_wq && !r->drain_waits && !(sqe->flags & (IOSQE_CQE_SKIP_SUCCESS | IOSQE_IO_DRAIN));
}

/*
 * A PROVIDE_BUFFERS or REMOVE_BUFFERS the kernel hands to io-wq acts when a
 * worker issues it, after the submitting task has gone through the rest of
 * the batch: a PROVIDE_BUFFERS released at once from a drain the SQE before
 * it left on fills its group after an inline READ behind it found it empty,
 * and a REMOVE_BUFFERS there finds what a PROVIDE_BUFFERS behind it gave.
 * Its prep, which may stop the batch, is the submitting task's.  The
 * exceptions are those of selects_in_worker, for the same reasons, and one
 * the drain stays on behind (the SQE after a drained chain, which the
 * kernel drains in turn): the SQEs after it wait for it.
 */
static int emulated_in_worker(const struct ring *r, const struct io_uring_sqe *sqe, struct rewrite_undo *u)
{
	if (!rewrite_worker_after_batch(r, sqe) || r->x->drain_active || (sqe->flags & SQE_LINK_FLAGS))
		return 0;
	u->deferred = 1;
	u->forced = (uint8_t)r->forced_async;
	return 1;
}

static void provide_issue(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u)
{
	struct pool_provide p = provide_args(sqe);
	int res;
	spin_lock(&r->x->pool_lock);
	struct pool_group_stats before, after;
	int existed = !pool_group_stats(r->x->pool, p.bgid, &before);
	res = pool_provide(r->x->pool, &p);
	if (!res) {
		pool_group_stats(r->x->pool, p.bgid, &after);
		u->kind = UNDO_PROVIDE;
		u->bgid = p.bgid;
		u->created = !existed;
		u->added = after.available - (existed ? before.available : 0);
	}
	spin_unlock(&r->x->pool_lock);
	if (res) {
		standin(r, sqe, res, FAIL_AT_ISSUE, u);
	} else if ((kernel_legacy_rules() & LEGACY_PROVIDE_COUNT) && existed && before.available) {
		/* UNDO_PROVIDE still: the stand-in goes with it. */
		u->req = standin(r, sqe, p.nbufs, SUCCEED, u);
		u->kind = UNDO_PROVIDE;
	} else {
		standin_ok(sqe);
	}
}

static void remove_issue(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u)
{
	struct pool_remove p = remove_args(sqe);
	int res;
	struct pool_kept kept;
	spin_lock(&r->x->pool_lock);
	res = pool_remove_kept(r->x->pool, &p, &kept);
	spin_unlock(&r->x->pool_lock);
	if (res > 0 && !kept.slots)
		log_once(BUFSEL_LOG_WARN, ONCE_REMOVE_KEEP,
			 "out of memory keeping removed buffers: a REMOVE_BUFFERS the kernel does not take still removes");
	/* Kept until the kernel takes the SQE: if it stops before, the
	 * buffers are the group's head again (rewrite_undo). */
	u->req = standin(r, sqe, res, res < 0 ? FAIL_AT_ISSUE : SUCCEED, u);
	u->kind = UNDO_REMOVE;
	u->kept = kept;
}

void rewrite_emulated_issue(struct ring *r, struct io_uring_sqe *sqe, const struct opdef *def,
			    struct rewrite_undo *u)
{
	if (def->emulated == EMU_PROVIDE_BUFFERS)
		provide_issue(r, sqe, u);
	else
		remove_issue(r, sqe, u);
}

/* PROVIDE_BUFFERS and REMOVE_BUFFERS on bufsel's groups. */
void rewrite_emulate_buffers(struct ring *r, struct io_uring_sqe *sqe, const struct opdef *def,
			     struct rewrite_undo *u)
{
	int res = rewrite_init_check(r, sqe);
	if (rewrite_reject_at_submission(r, sqe, res ? res : rewrite_emulated_prep(r, sqe, def->emulated), u))
		return;
	if (!emulated_in_worker(r, sqe, u))
		rewrite_emulated_issue(r, sqe, def, u);
}
