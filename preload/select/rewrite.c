/*
 * The emulation of legacy provided buffers on the real ring: the drain side.
 * The kernel never sees IORING_OP_PROVIDE_BUFFERS, IORING_OP_REMOVE_BUFFERS
 * or IOSQE_BUFFER_SELECT on a legacy group.
 *
 * - An emulated opcode runs against the pool when the kernel would issue it,
 *   and leaves a stand-in in its slot, so its CQE comes in the kernel's order
 *   and link chains fail or go on as the kernel decides: a NOP for success,
 *   an SQE that fails at prep for an error the kernel finds at submission,
 *   one that fails at issue for an error it finds when the request runs.
 * - A buffer-select READ gets its buffer at its first issue and keeps it.
 * - A buffer-select RECV takes a buffer only once its socket has data: if it
 *   has none at the first attempt, a POLL_ADD stands in and the receive is
 *   issued, on a buffer selected then, when the poll fires.
 * - "When the kernel would issue it" is at submission for the head of a
 *   chain; for an SQE later in a chain, bufsel cuts the chain with a sentinel
 *   NOP and holds the rest until the sentinel's CQE says the SQEs before it
 *   are done (completion.c and followup.c issue what was held).
 *
 * The pool is shared with the completion path, hence pool_lock.
 *
 * This file is the drain side's entry: rewrite_sqe and the other ring hooks
 * (rewrite_hooks), the chain cut and held, cancels pointed at bufsel's
 * tags, undo and commit, and what register.c notes for the checks
 * (personalities, the file table).  The rest of the drain side: prep.c (the
 * kernel's checks at submission), fd.c (the file an SQE names), standin.c,
 * provide.c (PROVIDE_BUFFERS, REMOVE_BUFFERS), bind.c (binding a buffer),
 * recv.c, read.c, bundle.c and multishot.c (the selecting requests),
 * counting.c (TIMEOUTs bufsel counts) and skip.c (IOSQE_CQE_SKIP_SUCCESS
 * where the kernel lacks it); completion.c and followup.c are the
 * completion side.
 */
#define _GNU_SOURCE
#include "preload/select/rewrite.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "preload/log.h"
#include "preload/select/bind.h"
#include "preload/select/bufring.h"
#include "preload/select/bundle.h"
#include "preload/select/completion.h"
#include "preload/select/counting.h"
#include "preload/select/fd.h"
#include "preload/select/followup.h"
#include "preload/select/multishot.h"
#include "preload/select/opdef.h"
#include "preload/select/prep.h"
#include "preload/select/provide.h"
#include "preload/select/read.h"
#include "preload/select/recv.h"
#include "preload/select/req.h"
#include "preload/select/skip.h"
#include "preload/select/standin.h"
#include "preload/shadow/compat.h"
#include "preload/shadow/kernel_ops.h"
#include "preload/shadow/ring.h"
#include "preload/shadow/ring_pool.h"
#include "preload/state.h"
#include "preload/sys.h"
#include "preload/uaccess.h"
#include "preload/uring_abi.h"

void rewrite_note_personality(struct ring *r, unsigned opcode, unsigned id, long ret)
{
	spin_lock(&r->x->sq_lock);
	if (opcode == IORING_REGISTER_PERSONALITY && ret > 0) {
		if (r->npersonality < sizeof(r->personality) / sizeof(r->personality[0]))
			r->personality[r->npersonality++] = (uint16_t)ret;
		else
			r->personality_overflow = 1;
	} else if (opcode == IORING_UNREGISTER_PERSONALITY && ret == 0) {
		for (unsigned i = 0; i < r->npersonality; i++)
			if (r->personality[i] == id)
				r->personality[i] = r->personality[--r->npersonality];
	}
	spin_unlock(&r->x->sq_lock);
}

void rewrite_note_files(struct ring *r, unsigned opcode, const void *arg, unsigned nr_args)
{
	unsigned nr = 0;
	if (opcode == IORING_REGISTER_FILES) {
		nr = nr_args;
	} else if (opcode == IORING_REGISTER_FILES2) {
		struct io_uring_rsrc_register rr;
		if (copy_from_prog(&rr, arg, sizeof(rr)))
			return;
		nr = rr.nr;
	}
	spin_lock(&r->x->sq_lock);
	r->files_nr = nr;
	spin_unlock(&r->x->sq_lock);
}

/*
 * An SQE that needs bufsel in the middle of a chain runs only when the SQEs
 * before it are done: a sentinel NOP takes its place in the kernel's chain
 * (so it fails or runs as the chain decides) and holds it and the rest.
 */
static struct req *cut_chain(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u)
{
	struct req *q = req_alloc(&r->reqs);
	if (!q || req_hold(q, sqe)) {
		if (q)
			req_free(&r->reqs, q);
		standin(r, sqe, -ENOMEM, FAIL_AT_ISSUE, u);
		return NULL;
	}
	q->kind = REQ_SENTINEL;
	q->user_data = sqe->user_data;
	uint16_t personality = sqe->personality;
	/* A drain in the middle of a chain drains the chain's head and forces
	 * it to io-wq, where the members after it run as well (io_init_drain):
	 * the sentinel carries the drain to where the kernel sees it, at the
	 * SQE's submission.  The held SQE does not drain again when it goes to
	 * the kernel later: by then a skip may have turned drains off, and the
	 * kernel would fail it with -EOPNOTSUPP. */
	uint8_t drain = sqe->flags & IOSQE_IO_DRAIN;
	q->held[q->nheld - 1].flags &= (uint8_t)~IOSQE_IO_DRAIN;
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_NOP;
	sqe->flags = drain;
	sqe->personality = personality;
	sqe->user_data = req_tag(&r->reqs, q);
	u->kind = UNDO_REQ;
	u->req = q;
	return q;
}

/* The checks the kernel makes at submission for an emulated SQE, even in
 * the middle of a chain: 0, or the error (which then fails the chain at
 * submission, as it does natively). */
static int prep_check(struct ring *r, const struct io_uring_sqe *sqe, const struct opdef *def)
{
	int res = rewrite_init_check(r, sqe);
	if (res)
		return res;
	if (def->emulated)
		return rewrite_emulated_prep(r, sqe, def->emulated);
	if ((res = rewrite_select_prep_check(r, sqe, def)))
		return res;
	if (def->select == SELECT_INVALID)
		return -EINVAL;
	uint32_t want;
	struct msghdr msg;
	if ((res = rewrite_read_request(sqe, def, &want, &msg)))
		return res;
	/* io_read_mshot_prep: a multishot read takes its lengths from the buffers. */
	if (def->mshot_no_len && (sqe->len || (def->mshot_no_len == 2 && sqe->addr)))
		return -EINVAL;
	return 0;
}

static uint32_t rewrite_offers(struct ring *r, const struct io_uring_sqe *sqe);

/* A kernel that looks the file up at submission (KERNEL_FILE_AT_SUBMIT)
 * fails a bad one there, after io_init_req's flag and personality checks:
 * -EBADF, or 0.  Not a request only newer kernels have, which bufsel runs
 * by 6.18's rules (the file at issue). */
static int file_at_submission(struct ring *r, const struct io_uring_sqe *sqe, const struct opdef *def)
{
	if (!def->needs_file || !kernel_rule(KERNEL_FILE_AT_SUBMIT))
		return 0;
	uint32_t offered = rewrite_offers(r, sqe);
	if ((offered & COMPAT_OFFER_OPCODE) || (sqe->ioprio & offered))
		return 0;
	if (rewrite_init_check(r, sqe) || rewrite_personality_check(r, sqe->personality))
		return 0;
	return rewrite_bad_file(r, sqe) ? -EBADF : 0;
}

/* Does bufsel act on this SQE (emulate it, or select its buffer)? */
static int emulated_here(struct ring *r, const struct io_uring_sqe *sqe, const struct opdef *def)
{
	if (def->emulated)
		return 1;
	return (sqe->flags & IOSQE_BUFFER_SELECT) && def->select != SELECT_REFUSED &&
	       def->select != SELECT_NEWER_KERNEL && !ring_pool(r) && rewrite_group_kind(r, sqe) != POOL_KERNEL_RING;
}

/*
 * The error the kernel gives the SQE at submission, for a look ahead along a
 * chain: io_init_req's generic checks for any opcode, the whole prep for an
 * SQE bufsel acts on.  0 where bufsel cannot tell.
 */
static int rewrite_submit_error(struct ring *r, const struct io_uring_sqe *sqe)
{
	const struct opdef *def = opdef_get(sqe->opcode);
	if (!opdef_known(sqe->opcode))
		return -EINVAL;
	int res = rewrite_init_check(r, sqe);
	if (res)
		return res;
	if ((sqe->flags & IOSQE_BUFFER_SELECT) && def->select == SELECT_REFUSED)
		return -EOPNOTSUPP;
	if (sqe->ioprio && !def->ioprio)
		return -EINVAL;
	if ((res = rewrite_personality_check(r, sqe->personality)))
		return res;
	if ((res = file_at_submission(r, sqe, def)))
		return res;
	if (!emulated_here(r, sqe, def)) {
		if (sqe->flags & IOSQE_BUFFER_SELECT)
			return 0;
		if (def->rw)
			return rewrite_rw_kernel_prep(sqe);
		if (def->sr_flags && def->buf != BUF_NONE)
			return rewrite_net_kernel_prep(sqe, def);
		return def->kernel_prep ? def->kernel_prep(sqe, r->setup_flags) : 0;
	}
	return prep_check(r, sqe, def);
}

/*
 * A member of a chain that fails at submission: the kernel runs none of it.
 * An SQE bufsel acts on becomes the stand-in that fails there with its own
 * error, or, if it passes, a NOP under its user_data, which the failed chain
 * cancels; the kernel's own SQEs go as they are.
 */
static void rewrite_fail_member(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u)
{
	const struct opdef *def = opdef_get(sqe->opcode);
	u->kind = UNDO_NONE;
	/* The member that fails the chain must fail in the kernel too. */
	int res = file_at_submission(r, sqe, def);
	if (res) {
		standin(r, sqe, res, FAIL_AT_PREP, u);
		return;
	}
	if (!emulated_here(r, sqe, def))
		return;
	if (!rewrite_reject_at_submission(r, sqe, prep_check(r, sqe, def), u))
		standin_ok(sqe);
}

/* Cancels one of bufsel's requests now: 1 if the kernel found it. */
static int cancel_tag_now(struct ring *r, uint64_t tag)
{
	struct io_uring_sync_cancel_reg reg = {
		.addr = tag, .fd = -1, .timeout = { .tv_sec = 1, .tv_nsec = 0 },
	};
	return sys_call6(__NR_io_uring_register, ring_fd(r), IORING_REGISTER_SYNC_CANCEL, (long)&reg, 1,
			 0, 0) == 0;
}

/*
 * A cancel by user_data must find the requests bufsel renamed.  One of them:
 * the cancel is pointed at its tag.  All of them (IORING_ASYNC_CANCEL_ALL):
 * bufsel's are cancelled right here (their -ECANCELED CQEs come first, as
 * the kernel posts a cancelled request's before the cancel's), the cancel
 * itself finds the program's others, and its CQE counts both.
 */
static void retarget_cancel(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u)
{
	uint64_t tags[64];
	if (sqe->cancel_flags & (IORING_ASYNC_CANCEL_FD | IORING_ASYNC_CANCEL_ANY))
		return;
	if (!(sqe->cancel_flags & IORING_ASYNC_CANCEL_ALL)) {
		if (req_tags_of(&r->reqs, sqe->addr, tags, 1))
			sqe->addr = tags[0];
		return;
	}
	unsigned n = req_tags_of(&r->reqs, sqe->addr, tags, 64), found = 0;
	for (unsigned i = 0; i < n; i++)
		found += (unsigned)cancel_tag_now(r, tags[i]);
	if (!found)
		return;
	struct req *q = req_alloc(&r->reqs);
	if (!q)
		return;
	q->kind = REQ_CANCEL_ALL;
	q->user_data = sqe->user_data;
	q->res = (int32_t)found;
	sqe->user_data = req_tag(&r->reqs, q);
	u->kind = UNDO_REQ;
	u->req = q;
}

/* A cancel of every request with a user_data: bufsel cancels its own at
 * once (retarget_cancel), which cannot be undone. */
static int cancels_all_by_user_data(const struct io_uring_sqe *sqe)
{
	return sqe->opcode == IORING_OP_ASYNC_CANCEL && (sqe->cancel_flags & IORING_ASYNC_CANCEL_ALL) &&
	       !(sqe->cancel_flags & (IORING_ASYNC_CANCEL_FD | IORING_ASYNC_CANCEL_ANY));
}

static int rewrite_wants(const struct io_uring_sqe *sqe)
{
	return rewrite_wanted(sqe) || rewrite_counts_completions(sqe) || sqe->opcode == IORING_OP_TIMEOUT_REMOVE ||
	       (sqe->opcode == IORING_OP_POLL_REMOVE && compat_sqe_skip_shadowed()) ||
	       (compat_emulating() && opdef_get(sqe->opcode)->needs_file && kernel_rule(KERNEL_FILE_AT_SUBMIT));
}

static struct req *select_by_opcode(struct ring *r, struct io_uring_sqe *sqe, const struct opdef *def,
				    struct rewrite_undo *u);

/*
 * An SQE the kernel hands to io-wq selects its buffer when a worker issues
 * it, which is after the submitting task has gone through the rest of the
 * batch: an inline READ behind it takes the group's first buffer, and a
 * PROVIDE_BUFFERS behind it fills the group it reads from.  Not one whose
 * selection decides what the SQEs after it do (a receive that would hold
 * the rest of its chain), nor one with IOSQE_CQE_SKIP_SUCCESS, which turns
 * the kernel's skip rule on as it is placed, nor a drained one, nor one
 * the kernel holds in its defer list (r->drain_waits): behind a drain that
 * waits, the SQEs after it wait too (the kernel forces them to io-wq while
 * the drain is active) and issue in SQE order, so selecting in SQE order,
 * now, is the closer answer.
 */
static int selects_in_worker(const struct ring *r, const struct io_uring_sqe *sqe, const struct opdef *def)
{
	if (!rewrite_worker_after_batch(r, sqe))
		return 0;
	if (def->select == SELECT_AT_ISSUE)
		return !def->bundle || !(sqe->ioprio & IORING_RECVSEND_BUNDLE);
	return def->select == SELECT_WHEN_READABLE && !(sqe->ioprio & IORING_RECV_MULTISHOT) &&
	       !(sqe->flags & SQE_LINK_FLAGS);
}

static void rewrite_deferred(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u)
{
	u->deferred = 0;
	r->to_wq = 1;
	r->forced_async = u->forced;
	const struct opdef *def = opdef_get(sqe->opcode);
	if (def->emulated)
		rewrite_emulated_issue(r, sqe, def, u);
	else
		select_by_opcode(r, sqe, def, u);
}

/*
 * A request that selects from a ring the kernel keeps goes to the kernel as
 * it is; when statistics are wanted, under a tag (REQ_WATCH), so that its
 * CQEs count for the ring (pool_ring_observe).  Not one with
 * IOSQE_CQE_SKIP_SUCCESS, whose successes never come back to be counted.
 */
static void watch_kernel_ring(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u)
{
	if (!bufsel.conf.stats[0] || (sqe->flags & IOSQE_CQE_SKIP_SUCCESS))
		return;
	struct req *q = req_alloc(&r->reqs);
	if (!q)
		return;
	q->kind = REQ_WATCH;
	q->user_data = sqe->user_data;
	q->buf = (struct pool_buf){ .bgid = sqe->buf_group };
	if ((sqe->ioprio & IORING_RECVSEND_BUNDLE) &&
	    (sqe->opcode == IORING_OP_RECV || sqe->opcode == IORING_OP_SEND))
		q->flags |= REQ_WATCH_BUNDLE;
	sqe->user_data = req_tag(&r->reqs, q);
	u->kind = UNDO_REQ;
	u->req = q;
}

void *rewrite_sqe(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u, int in_chain)
{
	const struct opdef *def = opdef_get(sqe->opcode);
	u->kind = UNDO_NONE;
	/* Simulated: this kernel would find the bad file only at issue. */
	if (compat_emulating() && file_at_submission(r, sqe, def)) {
		standin(r, sqe, -EBADF, FAIL_AT_PREP, u);
		return NULL;
	}
	if (sqe->opcode == IORING_OP_TIMEOUT) {
		if (!in_chain && rewrite_counts_completions(sqe))
			rewrite_count_timeout(r, sqe, u);
		return NULL;
	}
	if (sqe->opcode == IORING_OP_TIMEOUT_REMOVE) {
		if (r->reqs.live)
			rewrite_retarget_timeout(r, sqe, u);
		return NULL;
	}
	if (sqe->opcode == IORING_OP_POLL_REMOVE) {
		/* A poll bufsel gave a skip flag, found by its tag. */
		struct req *q = r->reqs.live ? req_find_skip(&r->reqs, sqe->addr, IORING_OP_POLL_ADD) : NULL;
		if (q)
			sqe->addr = req_tag(&r->reqs, q);
		return NULL;
	}
	if (sqe->opcode == IORING_OP_ASYNC_CANCEL) {
		/* In a chain it cancels when its turn comes, not now. */
		if (in_chain && r->reqs.live && cancels_all_by_user_data(sqe))
			return cut_chain(r, sqe, u);
		if (r->reqs.live)
			retarget_cancel(r, sqe, u);
		return NULL;
	}
	int select = sqe->flags & IOSQE_BUFFER_SELECT;
	if (select || def->emulated)
		atomic_fetch_add_explicit(&bufsel.n.emulated, 1, memory_order_relaxed);
	if (ring_pool(r)) {
		standin(r, sqe, -ENOMEM, FAIL_AT_ISSUE, u);
		return NULL;
	}
	if (select) {
		if (rewrite_group_kind(r, sqe) == POOL_KERNEL_RING) {
			watch_kernel_ring(r, sqe, u);
			return NULL;	/* the kernel's group */
		}
		if (rewrite_init_check(r, sqe))
			return NULL;	/* the kernel's error */
		int res = rewrite_select_prep_check(r, sqe, def);
		if (res) {
			standin(r, sqe, res, FAIL_AT_PREP, u);
			return NULL;
		}
	}
	if (in_chain && (def->emulated || (select && def->select != SELECT_REFUSED &&
					   def->select != SELECT_NEWER_KERNEL))) {
		if (rewrite_reject_at_submission(r, sqe, prep_check(r, sqe, def), u))
			return NULL;
		return cut_chain(r, sqe, u);
	}
	if (def->emulated) {
		rewrite_emulate_buffers(r, sqe, def, u);
		return NULL;
	}
	if (!select)
		return NULL;
	if (selects_in_worker(r, sqe, def)) {
		u->deferred = 1;
		u->forced = (uint8_t)r->forced_async;
		return NULL;
	}
	return select_by_opcode(r, sqe, def, u);
}

static struct req *select_by_opcode(struct ring *r, struct io_uring_sqe *sqe, const struct opdef *def,
				    struct rewrite_undo *u)
{
	switch (def->select) {
	case SELECT_AT_ISSUE:
		return rewrite_select_issue(r, sqe, def, u);
	case SELECT_WHEN_READABLE:
		if (sqe->ioprio & IORING_RECV_MULTISHOT)
			return rewrite_select_recv_multi(r, sqe, def, u);
		return rewrite_select_recv(r, sqe, def, u);
	case SELECT_MULTISHOT:
		return rewrite_select_recv_multi(r, sqe, def, u);
	case SELECT_INVALID:
		standin(r, sqe, -EINVAL, FAIL_AT_PREP, u);
		return NULL;
	default:
		standin(r, sqe, -EOPNOTSUPP, FAIL_AT_PREP, u);
		return NULL;
	}
}

static int rewrite_hold(struct ring *r, void *capture, struct io_uring_sqe *sqe,
			struct rewrite_undo *u)
{
	struct req *q = capture;
	u->kind = UNDO_NONE;
	int first = q->kind == REQ_RECV_WAIT && !q->nheld && !q->timeout;
	if (first && sqe->opcode != IORING_OP_LINK_TIMEOUT && q->poll_slot) {
		/* What follows is held, so the POLL_ADD ends the kernel's chain:
		 * linked to nothing, the kernel would take it for a chain whose
		 * end never came and hand it to a worker thread, where a cancel
		 * can find it running (-EALREADY) and miss it. */
		q->poll_slot->flags &= ~SQE_LINK_FLAGS;
	}
	q->poll_slot = NULL;
	if (first && sqe->opcode == IORING_OP_LINK_TIMEOUT) {
		/* The timeout guards the wait: it stays linked to the POLL_ADD,
		 * and what follows it waits with the receive. */
		struct req *t = req_alloc(&r->reqs);
		if (t) {
			t->kind = REQ_LINK_TIMEOUT;
			t->user_data = sqe->user_data;
			t->owner = q;
			q->timeout = t;
			sqe->user_data = req_tag(&r->reqs, t);
			sqe->flags &= ~SQE_LINK_FLAGS;
			u->kind = UNDO_REQ;
			u->req = t;
			return 1;
		}
	}
	if (!req_hold(q, sqe))
		return 0;
	/* No memory to hold it: it fails with -ENOMEM from its own real slot,
	 * and the rest of the chain goes to the kernel linked behind it (so it
	 * is cancelled, as behind any failed link); what was held before it
	 * now ends the held part of the chain. */
	log_once(BUFSEL_LOG_ERROR, ONCE_HOLD_NOMEM, "out of memory holding a chain: an SQE of it fails with -ENOMEM");
	struct io_uring_sqe *last = q->nheld ? &q->held[q->nheld - 1] : q->kind == REQ_RECV_WAIT ? &q->orig : NULL;
	if (last)
		last->flags &= ~SQE_LINK_FLAGS;
	standin(r, sqe, -ENOMEM, FAIL_AT_ISSUE, u);
	return 2;
}

void rewrite_undo(struct ring *r, struct rewrite_undo *u)
{
	switch (u->kind) {
	case UNDO_SELECT:
		/* Not yet consumed, delivered or not (rewrite_commit). */
		if (u->req->bun && u->req->bun->n)
			bundle_putback(r, u->req->bun);
		else if (!(u->req->flags & REQ_COMMITTED))	/* committed, for good */
			rewrite_pool_locked_putback(r, &u->req->buf);
		req_free(&r->reqs, u->req);
		break;
	case UNDO_REQ:
		if (u->req->flags & REQ_STANDIN_BUF)
			rewrite_pool_locked_putback(r, &u->req->buf);
		if (u->req->kind == REQ_TIMEOUT) {
			spin_lock(&r->x->cq_lock);
			counting_unlink(r, u->req);
			spin_unlock(&r->x->cq_lock);
		}
		req_free(&r->reqs, u->req);
		break;
	case UNDO_REMOVE:
		if (u->req)
			req_free(&r->reqs, u->req);
		spin_lock(&r->x->pool_lock);
		pool_remove_undo(r->x->pool, &u->kept);
		spin_unlock(&r->x->pool_lock);
		break;
	case UNDO_PROVIDE:
		if (u->req)
			req_free(&r->reqs, u->req);
		spin_lock(&r->x->pool_lock);
		pool_provide_undo(r->x->pool, u->bgid, u->added, u->created);
		spin_unlock(&r->x->pool_lock);
		break;
	}
	if (u->skip)
		req_free(&r->reqs, u->skip);
	u->skip = NULL;
	u->kind = UNDO_NONE;
	u->deliver = 0;
}

/* The request may be done and freed by now: the buffer is u's copy. */
void rewrite_commit(struct ring *r, struct rewrite_undo *u)
{
	if (u->kind == UNDO_SELECT && u->deliver)
		rewrite_pool_locked_consume(r, &u->buf);
	if (u->kind == UNDO_REMOVE && u->kept.slots) {
		spin_lock(&r->x->pool_lock);
		pool_kept_free(r->x->pool, &u->kept);
		spin_unlock(&r->x->pool_lock);
	}
	u->deliver = 0;
	u->skip = NULL;
}

/* What cannot be undone if the kernel does not take the SQE: the SQEs
 * before it go to the kernel first.  Not a REMOVE_BUFFERS, which keeps
 * what it took until then (going alone would let the task work of what
 * precedes it, a failed chain's members, post before its CQE, which the
 * kernel posts with the batch). */
static int rewrite_barrier(struct ring *r, const struct io_uring_sqe *sqe)
{
	if (cancels_all_by_user_data(sqe))
		return 1;
	/* One that takes from a group a receive before it may give back to
	 * (rewrite_batch_recv_add). */
	if (!(sqe->flags & IOSQE_BUFFER_SELECT) && opdef_get(sqe->opcode)->emulated != EMU_REMOVE_BUFFERS)
		return 0;
	for (struct req *q = r->batch_recvs; q; q = q->next_batch)
		if (q->orig.buf_group == sqe->buf_group && recv_may_return(q))
			return 2;
	return 0;
}

/* A receive that selects from a group bufsel keeps is bufsel's from its
 * poll to its last CQE: its multishot and poll-first forms are there on
 * any kernel, unless the kernel is to keep the rings, and BUFSEL_KERNEL
 * then means that kernel as it was. */
static uint32_t rewrite_offers(struct ring *r, const struct io_uring_sqe *sqe)
{
	if (bufsel.conf.rings == BUFSEL_RINGS_KERNEL)
		return 0;
	/* Multishot receive is bufsel's: on a receive without a buffer to
	 * select the flag stays, for the kernel beneath to refuse (-EINVAL)
	 * as every kernel with multishot receive does; cleared, it would make
	 * a plain receive that waits. */
	if (!(sqe->flags & IOSQE_BUFFER_SELECT))
		return sqe->opcode == IORING_OP_RECV || sqe->opcode == IORING_OP_RECVMSG
			       ? sqe->ioprio & IORING_RECV_MULTISHOT
			       : 0;
	if (r->x->pool && rewrite_group_kind(r, sqe) == POOL_KERNEL_RING)
		return 0;
	/* Bundles only where the features said so (setup.c). */
	uint32_t bundle = (sqe->ioprio & IORING_RECVSEND_BUNDLE) && bufring_keeps_all() ? IORING_RECVSEND_BUNDLE : 0;
	if (sqe->opcode == IORING_OP_SEND)
		return bundle;
	if (sqe->opcode == IORING_OP_RECV)
		return IORING_RECV_MULTISHOT | IORING_RECVSEND_POLL_FIRST | bundle;
	if (sqe->opcode == IORING_OP_RECVMSG)
		return IORING_RECV_MULTISHOT | IORING_RECVSEND_POLL_FIRST;
	/* A stream of READs and polls: nothing of it reaches the kernel. */
	if (sqe->opcode == OP_READ_MULTISHOT_NR)
		return COMPAT_OFFER_OPCODE;
	return 0;
}

static int rewrite_probe(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u)
{
	struct req *q = req_alloc(&r->reqs);
	u->kind = UNDO_NONE;
	if (!q)
		return -ENOMEM;
	q->kind = REQ_PROBE;
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_NOP;
	sqe->user_data = req_tag(&r->reqs, q);
	u->kind = UNDO_REQ;
	u->req = q;
	return 0;
}

const struct ring_hooks rewrite_hooks = {
	.wants = rewrite_wants,
	.rewrite = rewrite_sqe,
	.hold = rewrite_hold,
	.undo = rewrite_undo,
	.commit = rewrite_commit,
	.complete = rewrite_complete_cqe,
	.foreign = rewrite_foreign_cqe,
	.barrier = rewrite_barrier,
	.probe = rewrite_probe,
	.submit_error = rewrite_submit_error,
	.fail_member = rewrite_fail_member,
	.offers = rewrite_offers,
	.deferred = rewrite_deferred,
	.followup = rewrite_followup,
	.counted = rewrite_counted,
	.skip = rewrite_skip,
};
