/*
 * What the completion path hands on to the SQ.  It runs under cq_lock and
 * cannot submit: a receive whose buffer is bound, a chain held behind a
 * sentinel or a finished stream, a stream's next step and bufsel's own
 * TIMEOUT_REMOVE are queued on r->ready (rewrite_make_ready) and issued by
 * rewrite_followup once cq_lock is dropped, under sq_lock.  Also the small
 * steps the completion side shares: posting a CQE of bufsel's own,
 * cancelling a held chain that will never run, freeing a finished request.
 */
#define _GNU_SOURCE
#include "preload/select/followup.h"

#include <errno.h>
#include <stddef.h>
#include <sys/syscall.h>

#include "preload/log.h"
#include "preload/select/req.h"
#include "preload/shadow/ring.h"
#include "preload/shadow/ring_io.h"
#include "preload/sys.h"

void rewrite_post(struct ring *r, uint64_t ud, int res, unsigned flags)
{
	struct io_uring_cqe c = { .user_data = ud, .res = res, .flags = flags };
	complete_post(r, &c);
}

/* The held SQEs will never run: each gets -ECANCELED, as a broken chain's do. */
void rewrite_cancel_held(struct ring *r, struct req *q)
{
	for (uint32_t i = 0; i < q->nheld; i++)
		rewrite_post(r, q->held[i].user_data, -ECANCELED, 0);
	q->nheld = 0;
}

void rewrite_make_ready(struct ring *r, struct req *q)
{
	struct req **tail = &r->ready;
	while (*tail)
		tail = &(*tail)->next_ready;
	q->next_ready = NULL;
	*tail = q;
}

void rewrite_release(struct ring *r, struct req *q)
{
	if (q->timeout) {
		/* Its LINK_TIMEOUT's CQE is still to come, and goes after ours. */
		q->flags |= REQ_DONE;
		return;
	}
	req_free(&r->reqs, q);
}

/* A receive whose data came, with nothing chained behind it (nor a
 * LINK_TIMEOUT), bufsel's own TIMEOUT_REMOVE, or a multishot stream's next
 * step: what the mover issues between the program's enters, as the
 * kernel's task work runs while the program does something else (a
 * READ_MULTISHOT on a pipe reads each write apart).  A stream whose CQE
 * finds the program's CQ full ends there (complete_recv_multi, cq_full). */
static int unattended_ok(const struct req *q)
{
	return (q->kind == REQ_RECV_SEL && !q->nheld && !q->timeout) || q->kind == REQ_PROBE ||
	       q->kind == REQ_RECV_MULTI;
}

/*
 * Takes what is ready to issue, in order; unattended (the mover): only up
 * to the first request that is not unattended_ok.  A stream's steps are
 * paced by the program's enters (a multishot receive ends where the
 * program's CQ overflows), and a held chain's CQEs keep their order against
 * what the program submits next.  Under sq_lock: what is taken is issued
 * before anyone else submits.
 */
static struct req *take_ready(struct ring *r, int unattended)
{
	spin_lock(&r->x->cq_lock);
	struct req *list = r->ready, **cut = &list;
	while (*cut && (!unattended || unattended_ok(*cut)))
		cut = &(*cut)->next_ready;
	r->ready = *cut;
	*cut = NULL;
	spin_unlock(&r->x->cq_lock);
	return list;
}

void rewrite_followup(struct ring *r, int unattended)
{
	if (!r->ready)
		return;
	spin_lock(&r->x->sq_lock);
	struct req *list = take_ready(r, unattended);
	if (!list) {
		spin_unlock(&r->x->sq_lock);
		return;
	}
	unsigned placed = 0;
	for (struct req *q = list, *next; q; q = next) {
		next = q->next_ready;
		const struct io_uring_sqe *first = q->kind == REQ_RECV_SEL || q->kind == REQ_PROBE ? &q->orig
						   : q->kind == REQ_RECV_MULTI ||
							     q->kind == REQ_SEND_BUNDLE ? &q->next
											: NULL;
		/* A stream's next step goes alone: its chain waits for its end. */
		int multi = q->kind == REQ_RECV_MULTI || q->kind == REQ_SEND_BUNDLE;
		int n = submit_held(r, first, multi ? NULL : q->held, multi ? 0 : q->nheld);
		if (n < 0 && q->kind == REQ_PROBE) {
			/* A TIMEOUT_REMOVE of bufsel's: the timer fires unseen. */
			spin_lock(&r->x->cq_lock);
			req_free(&r->reqs, q);
			spin_unlock(&r->x->cq_lock);
			continue;
		}
		if (n < 0) {
			log_once(BUFSEL_LOG_ERROR, ONCE_HELD_NO_ROOM, "no room in the real SQ for a held chain: its SQEs are cancelled");
			spin_lock(&r->x->cq_lock);
			if (first)
				rewrite_post(r, q->user_data, -EBUSY, 0);
			rewrite_cancel_held(r, q);
			spin_unlock(&r->x->cq_lock);
			n = 0;
		}
		placed += (unsigned)n;
		if (!multi)
			q->nheld = 0;
		if (q->kind == REQ_SENTINEL || (q->kind == REQ_RECV_WAIT && !first))
			rewrite_release(r, q);
	}
	if (placed || (r->setup_flags & IORING_SETUP_SQPOLL)) {
		unsigned flags = r->setup_flags & IORING_SETUP_SQPOLL ? IORING_ENTER_SQ_WAKEUP
				 : !unattended && r->enter_tw	      ? IORING_ENTER_GETEVENTS
									      : 0;
		ring_kernel_ran();
		long ret = sys_call6(__NR_io_uring_enter, ring_fd(r), placed, 0, flags, 0, 0);
		if (ret >= 0 && (unsigned long)ret < placed && !(r->setup_flags & IORING_SETUP_SQPOLL))
			log_once(BUFSEL_LOG_ERROR, ONCE_HELD_SHORT, "the kernel took %ld of %u held SQEs", ret, placed);
	}
	spin_unlock(&r->x->sq_lock);
}
