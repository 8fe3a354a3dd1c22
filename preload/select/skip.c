/*
 * IOSQE_CQE_SKIP_SUCCESS on a kernel that refuses it (before 5.17): the
 * kernel gets the SQE without the flag, under a tag, and bufsel drops the
 * CQE of a request that succeeded, on both sides: the SQE is tagged at
 * drain time (rewrite_skip), its CQE posted or hidden when it comes
 * (rewrite_complete_skip).
 */
#define _GNU_SOURCE
#include "preload/select/skip.h"

#include <errno.h>
#include <stddef.h>
#include <sys/socket.h>

#include "preload/select/prep.h"
#include "preload/select/req.h"
#include "preload/select/standin.h"
#include "preload/shadow/ring.h"

/*
 * IOSQE_CQE_SKIP_SUCCESS on a kernel older than 5.17, which refuses it: the
 * kernel gets the SQE without it, under a tag (REQ_SKIP), and bufsel drops
 * the CQE of a request that succeeded.  "Succeeded" as the kernel decides
 * it: req_set_fail clears the skip, so an error posts, and so does a
 * receive or send with MSG_WAITALL, a splice or a tee that moved less than
 * it asked for; a CQE with F_MORE always posts.  A request that fails with
 * the flag hides the -ECANCELED of the chain it breaks (REQ_F_SKIP_LINK_CQES),
 * flagged or not, so every member after a flagged one is tagged too; a
 * member cancelled with its chain posts -ECANCELED, flag or not.  An
 * SQE bufsel rewrote under a request of its own takes the skip into that
 * request; without a slot for one, the CQE posts (the program sees one CQE
 * more, never one less).
 */
static uint32_t skip_min_res(const struct io_uring_sqe *sqe)
{
	switch (sqe->opcode) {
	case IORING_OP_SEND:
	case IORING_OP_RECV:
		return (sqe->msg_flags & MSG_WAITALL) ? sqe->len : 0;
	case IORING_OP_SPLICE:
	case IORING_OP_TEE:
		return sqe->len;
	default:
		return 0;
	}
}

/* Preps that refuse the flag (io_poll_add_prep: a multishot poll). */
static int skip_refused(const struct io_uring_sqe *sqe)
{
	return sqe->opcode == IORING_OP_POLL_ADD && (sqe->len & IORING_POLL_ADD_MULTI);
}

void rewrite_skip(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u, int in_chain)
{
	int flagged = sqe->flags & IOSQE_CQE_SKIP_SUCCESS;
	int links = sqe->flags & SQE_LINK_FLAGS;
	uint64_t prev = r->skip_chain;
	r->skip_chain = 0;
	if (u->kind == UNDO_NONE) {
		/* io_init_req's -EOPNOTSUPP for a drain once a skip turned the
		 * ring's drains off (place_one tracks it), which the kernel
		 * beneath, never shown a skip, would run as a drain. */
		int err = (sqe->flags & IOSQE_IO_DRAIN) && r->x->drain_disabled ? -EOPNOTSUPP
			  : flagged && skip_refused(sqe)				 ? -EINVAL
											 : 0;
		if (err) {
			sqe->flags &= (uint8_t)~(IOSQE_IO_DRAIN | IOSQE_CQE_SKIP_SUCCESS);
			standin(r, sqe, err, FAIL_AT_PREP, u);
			return;
		}
	}
	sqe->flags &= (uint8_t)~IOSQE_CQE_SKIP_SUCCESS;
	/* Under a request of bufsel's already: that one skips. */
	struct req *own = req_lookup(&r->reqs, sqe->user_data);
	if (own) {
		if (flagged)
			own->flags |= REQ_SKIP_SUCCESS;
		/* A stand-in that fails in a chain (a file looked up at
		 * submission) breaks it as the SQE would: it joins the chain's
		 * skip state, to hide the rest or be hidden itself. */
		if (own->kind == REQ_STANDIN && (flagged || prev)) {
			own->chain_next = 0;
			struct req *p = prev ? req_lookup(&r->reqs, prev) : NULL;
			if (p)
				p->chain_next = sqe->user_data;
			if (links)
				r->skip_chain = sqe->user_data;
		}
		return;
	}
	if (!flagged && !prev)
		return;
	struct req *q = req_alloc(&r->reqs);
	if (!q)
		return;
	q->kind = REQ_SKIP;
	q->flags = (flagged ? REQ_SKIP_SUCCESS : 0) | (in_chain ? REQ_IN_CHAIN : 0);
	q->user_data = sqe->user_data;
	q->orig.opcode = sqe->opcode;
	q->want = skip_min_res(sqe);
	q->chain_next = 0;
	sqe->user_data = req_tag(&r->reqs, q);
	u->skip = q;
	struct req *p = prev ? req_lookup(&r->reqs, prev) : NULL;
	if (p)
		p->chain_next = sqe->user_data;
	if (links)
		r->skip_chain = sqe->user_data;
}

void rewrite_skip_hide_rest(struct ring *r, uint64_t next)
{
	for (uint64_t t = next; t;) {
		struct req *n = req_lookup(&r->reqs, t);
		if (!n || (n->kind != REQ_SKIP && n->kind != REQ_STANDIN))
			break;
		n->flags |= REQ_CHAIN_HIDDEN;
		t = n->chain_next;
	}
}

/* An SQE bufsel gave IOSQE_CQE_SKIP_SUCCESS (rewrite_skip): posted unless
 * it succeeded, or its chain broke at a flagged request before it. */
int rewrite_complete_skip(struct ring *r, struct req *q, struct io_uring_cqe *cqe)
{
	int more = cqe->flags & IORING_CQE_F_MORE;
	int failed = cqe->res < 0 || (uint32_t)cqe->res < q->want;
	int posts = (q->flags & REQ_CHAIN_HIDDEN) && cqe->res == -ECANCELED ? 0
		   : (q->flags & REQ_SKIP_SUCCESS)			   ? more || failed
									   : 1;
	/* Its own failure, not its chain's cancellation, hides the rest. */
	if (failed && !more && (q->flags & REQ_SKIP_SUCCESS) &&
	    !((q->flags & REQ_IN_CHAIN) && cqe->res == -ECANCELED))
		rewrite_skip_hide_rest(r, q->chain_next);
	cqe->user_data = q->user_data;
	if (!more)
		req_free(&r->reqs, q);
	return posts;
}
