/*
 * TIMEOUTs with a completion count.  The kernel's CQ under bufsel also gets
 * CQEs the program never sees, so bufsel counts such a TIMEOUT itself,
 * against the program's CQ (ring.h, cq_seq0), on both sides: at drain time
 * the kernel gets the timer alone under a tag (rewrite_count_timeout) and a
 * TIMEOUT_REMOVE is pointed at that tag (rewrite_retarget_timeout); on the
 * completion side a TIMEOUT whose count the program's CQ reached completes
 * (rewrite_counted), and its timer's CQE is answered
 * (rewrite_complete_timeout).  The list of TIMEOUTs still counting,
 * r->counting, is under cq_lock.
 */
#define _GNU_SOURCE
#include "preload/select/counting.h"

#include <errno.h>
#include <string.h>

#include "preload/select/followup.h"
#include "preload/select/prep.h"
#include "preload/select/req.h"
#include "preload/select/standin.h"
#include "preload/shadow/compat.h"
#include "preload/shadow/kernel_ops.h"
#include "preload/shadow/ring.h"

#ifndef IORING_TIMEOUT_MULTISHOT
#define IORING_TIMEOUT_MULTISHOT (1U << 6)	/* 6.4 */
#endif

/* A TIMEOUT whose count bufsel keeps (rewrite_count_timeout), as far as the SQE
 * alone tells. */
int rewrite_counts_completions(const struct io_uring_sqe *sqe)
{
	return sqe->opcode == IORING_OP_TIMEOUT && (uint32_t)sqe->off && !(sqe->flags & SQE_LINK_FLAGS) &&
	       !(sqe->timeout_flags & IORING_TIMEOUT_MULTISHOT);
}

/*
 * The program's TIMEOUT with a completion count, alone (a chain's member is
 * issued only when its turn comes, and a TIMEOUT that links on must fail or
 * go on as the kernel's does): the kernel gets the timer alone (off 0)
 * under a tag, and bufsel counts the program's CQEs (ring.h, cq_seq0).
 * Without a request slot it goes as it is, counted by the kernel.
 */
void rewrite_count_timeout(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u)
{
	struct req *q = req_alloc(&r->reqs);
	if (!q)
		return;
	q->kind = REQ_TIMEOUT;
	q->user_data = sqe->user_data;
	q->target = r->cq_seq0 + (uint32_t)sqe->off;
	if (sqe->flags & IOSQE_CQE_SKIP_SUCCESS)
		q->flags |= REQ_SKIP_SUCCESS;
	sqe->off = 0;
	sqe->user_data = req_tag(&r->reqs, q);
	/* In the order they complete in, as the kernel's timeout list is. */
	spin_lock(&r->x->cq_lock);
	struct req **at = &r->counting;
	while (*at && (int32_t)(q->target - (*at)->target) >= 0)
		at = &(*at)->next_counting;
	q->next_counting = *at;
	*at = q;
	spin_unlock(&r->x->cq_lock);
	u->kind = UNDO_REQ;
	u->req = q;
}

/*
 * Before 5.18 io_timeout_cancel posted the removed TIMEOUT's -ECANCELED at
 * once, before the removal's own CQE; 6.18 posts it from task work, after.
 * Under BUFSEL_KERNEL the removal of a TIMEOUT bufsel counts goes under a
 * tag, and its CQE brings the TIMEOUT's first (the timer's own is hidden).
 * A kernel beneath that old posts them so itself.
 */
static void remove_first(struct ring *r, struct io_uring_sqe *sqe, struct req *target, struct rewrite_undo *u)
{
	if (!compat_emulating() || !kernel_rule(KERNEL_TIMEOUT_CANCEL_FIRST))
		return;
	struct req *rm = req_alloc(&r->reqs);
	if (!rm)
		return;	/* the order is 6.18's, nothing lost */
	rm->kind = REQ_TIMEOUT_REMOVE;
	rm->user_data = sqe->user_data;
	rm->orig.addr = req_tag(&r->reqs, target);
	sqe->user_data = req_tag(&r->reqs, rm);
	u->kind = UNDO_REQ;
	u->req = rm;
}

int rewrite_complete_timeout_remove(struct ring *r, struct req *rm, struct io_uring_cqe *cqe)
{
	struct req *q = cqe->res ? NULL : req_lookup(&r->reqs, rm->orig.addr);
	int skipped = (rm->flags & REQ_SKIP_SUCCESS) && cqe->res >= 0;
	cqe->user_data = rm->user_data;
	req_free(&r->reqs, rm);
	if (!q || q->kind != REQ_TIMEOUT || (q->flags & REQ_DONE))
		return !skipped;
	/* Both through the queue of bufsel's own CQEs, which would post
	 * after this one. */
	q->flags |= REQ_DONE;
	rewrite_post(r, q->user_data, -ECANCELED, 0);
	if (!skipped)
		rewrite_post(r, cqe->user_data, cqe->res, cqe->flags);
	return 0;
}

/* A TIMEOUT_REMOVE or TIMEOUT_UPDATE finds the program's TIMEOUT by
 * user_data: one bufsel counts goes by its tag, or, having reached its
 * count, is found no more. */
void rewrite_retarget_timeout(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u)
{
	if (sqe->timeout_flags & IORING_LINK_TIMEOUT_UPDATE)
		return;
	struct req *q = req_find_timeout(&r->reqs, sqe->addr);
	if (!q) {
		/* One bufsel gave a skip flag is in the kernel under its tag. */
		if ((q = req_find_skip(&r->reqs, sqe->addr, IORING_OP_TIMEOUT)))
			sqe->addr = req_tag(&r->reqs, q);
		return;
	}
	if (q->flags & REQ_DONE) {
		sqe->addr = NO_SUCH_REQUEST;
		return;
	}
	sqe->addr = req_tag(&r->reqs, q);
	/* A removal that passes io_timeout_remove_prep takes the TIMEOUT off
	 * the kernel's list before its own CQE is posted: that CQE, and those
	 * after it, no longer count for it. */
	if (!sqe->timeout_flags && !sqe->buf_index && !sqe->len && !sqe->splice_fd_in &&
	    !(sqe->flags & (IOSQE_FIXED_FILE | IOSQE_BUFFER_SELECT))) {
		spin_lock(&r->x->cq_lock);
		counting_unlink(r, q);
		spin_unlock(&r->x->cq_lock);
		remove_first(r, sqe, q, u);
	}
}

void counting_unlink(struct ring *r, struct req *q)
{
	for (struct req **at = &r->counting; *at; at = &(*at)->next_counting)
		if (*at == q) {
			*at = q->next_counting;
			return;
		}
}

/*
 * As io_flush_timeouts: a TIMEOUT whose count is reached completes with 0
 * (nothing with CQE_SKIP_SUCCESS) and counts as fired.  Its timer in the
 * kernel goes with a TIMEOUT_REMOVE of bufsel's; whatever the timer posts
 * before that is hidden (REQ_DONE).
 */
void rewrite_counted(struct ring *r, unsigned seq)
{
	struct req *q;
	while ((q = r->counting) && (int32_t)(seq - q->target) >= 0) {
		r->counting = q->next_counting;
		q->flags |= REQ_DONE;
		atomic_fetch_add_explicit(&r->x->cq_timeouts, 1, memory_order_release);
		if (!(q->flags & REQ_SKIP_SUCCESS))
			rewrite_post(r, q->user_data, 0, 0);
		struct req *rm = req_alloc(&r->reqs);
		if (!rm)
			continue;	/* the timer fires in its time, unseen */
		rm->kind = REQ_PROBE;
		memset(&rm->orig, 0, sizeof(rm->orig));
		rm->orig.opcode = IORING_OP_TIMEOUT_REMOVE;
		rm->orig.addr = req_tag(&r->reqs, q);
		rm->orig.user_data = req_tag(&r->reqs, rm);
		rewrite_make_ready(r, rm);
	}
}

/* The kernel's timer of a counting TIMEOUT: the program's CQE, unless the
 * count came first. */
int rewrite_complete_timeout(struct ring *r, struct req *q, struct io_uring_cqe *cqe)
{
	int done = q->flags & REQ_DONE;
	if (!done)
		counting_unlink(r, q);
	cqe->user_data = q->user_data;
	req_free(&r->reqs, q);
	if (done)
		return 0;
	if (cqe->res == -ETIME)
		atomic_fetch_add_explicit(&r->x->cq_timeouts, 1, memory_order_release);
	return 1;
}
