/*
 * Stand-ins.  An SQE bufsel answers itself leaves in its slot one that the
 * kernel runs, or fails, in the same place and with the same link flags: a
 * NOP for success, an SQE that fails at prep for an error the kernel finds
 * at submission, one that fails at issue for an error it finds when the
 * request runs.  Its CQE comes in the kernel's order, a chain breaks or
 * goes on where the kernel's would, and completion.c turns the CQE into the
 * answer (the request's res, and a buffer the stand-in took).  Also the SQE
 * handed to the kernel without its buffer select to fail there (a bad fd),
 * and the pool calls under pool_lock that every part of the rewrite uses.
 */
#define _GNU_SOURCE
#include "preload/select/standin.h"

#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>

#include "preload/log.h"
#include "preload/select/fd.h"
#include "preload/select/opdef.h"
#include "preload/select/prep.h"
#include "preload/select/req.h"
#include "preload/shadow/ring.h"

void rewrite_pool_locked_putback(struct ring *r, const struct pool_buf *b)
{
	spin_lock(&r->x->pool_lock);
	pool_putback(r->x->pool, b);
	spin_unlock(&r->x->pool_lock);
}

void rewrite_pool_locked_consume(struct ring *r, const struct pool_buf *b)
{
	spin_lock(&r->x->pool_lock);
	pool_consume(r->x->pool, b);
	spin_unlock(&r->x->pool_lock);
}

/* An SQE flag bit no kernel knows: io_init_req fails it with -EINVAL first. */
#define SQE_FLAG_UNKNOWN 0x80

static void clear_sqe(struct io_uring_sqe *sqe, uint8_t opcode, uint64_t ud)
{
	uint8_t flags = sqe->flags & ~IOSQE_BUFFER_SELECT;
	/* An SQE io_init_req fails on its opcode or buffer select has its
	 * flags in the request (a skip flag hides its chain's CQEs) but never
	 * gets to the skip and drain rules: its stand-in fails in io_init_req
	 * too, on a flag bit no kernel knows, before those rules, so the real
	 * ring's drains stay as the program's would. */
	struct io_uring_sqe with_skip = *sqe;
	with_skip.flags |= IOSQE_CQE_SKIP_SUCCESS;
	if (!(sqe->flags & ~SQE_VALID_FLAGS) && !opdef_skip_disables_drain(&with_skip) &&
	    (sqe->flags & (IOSQE_CQE_SKIP_SUCCESS | IOSQE_IO_DRAIN)))
		flags |= SQE_FLAG_UNKNOWN;
	uint16_t personality = sqe->personality;
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = opcode;
	sqe->flags = flags;
	sqe->personality = personality;
	sqe->user_data = ud;
}

/* Replaces *sqe by an SQE of class c whose CQE bufsel turns into res. */
struct req *standin(struct ring *r, struct io_uring_sqe *sqe, int res, enum standin_class c,
		    struct rewrite_undo *u)
{
	struct req *q = req_alloc(&r->reqs);
	if (!q) {
		/* No slot to carry the result: the program still gets a CQE in
		 * place (-EINVAL), never a lost completion. */
		log_once(BUFSEL_LOG_WARN, ONCE_REQ_SLOTS, "out of request slots: an emulated result is reported as -EINVAL");
		clear_sqe(sqe, IORING_OP_TIMEOUT, sqe->user_data);
		sqe->len = 2;
		return NULL;
	}
	q->kind = REQ_STANDIN;
	q->user_data = sqe->user_data;
	q->res = res;
	switch (c) {
	case SUCCEED:
		clear_sqe(sqe, IORING_OP_NOP, req_tag(&r->reqs, q));
		q->expect = 0;
		break;
	case FAIL_AT_PREP:
		/* TIMEOUT insists on len 1 in every kernel since 5.4. */
		clear_sqe(sqe, IORING_OP_TIMEOUT, req_tag(&r->reqs, q));
		sqe->len = 2;
		q->expect = -EINVAL;
		break;
	case FAIL_AT_ISSUE:
		clear_sqe(sqe, IORING_OP_ASYNC_CANCEL, req_tag(&r->reqs, q));
		sqe->addr = NO_SUCH_REQUEST;
		q->expect = -ENOENT;
		break;
	case SUCCEED_WHEN_READABLE: {
		int32_t fd = sqe->fd;
		clear_sqe(sqe, IORING_OP_POLL_ADD, req_tag(&r->reqs, q));
		sqe->fd = fd;
		sqe->poll32_events = POLLIN;
		q->flags |= REQ_STANDIN_POLL;
		break;
	}
	}
	u->kind = UNDO_REQ;
	u->req = q;
	return q;
}

/*
 * A stand-in that reports a buffer it took (a NULL buffer a READ consumes):
 * the buffer leaves the group only when the stand-in's CQE says it ran, so
 * that an SQE the kernel never took, or a chain that failed before it,
 * leaves the group as it was.  b NULL, or no stand-in: nothing is taken.
 */
void standin_takes(struct ring *r, struct req *s, const struct pool_buf *b)
{
	if (!b)
		return;
	if (!s) {
		rewrite_pool_locked_putback(r, b);
		return;
	}
	s->buf = *b;
	s->flags |= REQ_STANDIN_BUF;
	s->cflags = cqe_buf_flags(b->bid);
}

/* Success with res 0 needs no request: the program's own user_data rides a NOP. */
void standin_ok(struct io_uring_sqe *sqe)
{
	clear_sqe(sqe, IORING_OP_NOP, sqe->user_data);
}

/*
 * An SQE the kernel rejects at submission (res != 0) gets the stand-in that
 * fails there: a NOP that hits the kernel's own generic check, or one that
 * fails at prep, reporting res.  Returns 1 if the SQE was rejected.
 */
int rewrite_reject_at_submission(struct ring *r, struct io_uring_sqe *sqe, int res,
				 struct rewrite_undo *u)
{
	if (!res)
		return 0;
	int init = rewrite_init_check(r, sqe);
	if (init) {
		standin_ok(sqe);
		/* A drain after drains were disabled: the NOP fails on it with
		 * the same -EOPNOTSUPP that an opcode or buffer-select refusal
		 * first would give, and drains are off already, so the bit that
		 * keeps drains as they were would only turn it into -EINVAL. */
		if (init == -EOPNOTSUPP)
			sqe->flags &= (uint8_t)~SQE_FLAG_UNKNOWN;
	} else
		standin(r, sqe, res, FAIL_AT_PREP, u);
	return 1;
}

/*
 * The kernel fails a bad plain fd before it selects a buffer: such an SQE
 * goes to the kernel without IOSQE_BUFFER_SELECT and fails there, at issue,
 * taking no buffer.  Its prep is done (rewrite_read_request): what goes is an SQE of
 * the same kind on the same fd that the kernel's prep cannot fail (no
 * buffer, no msghdr, no iovec to import), so the fd decides, as natively.
 * Returns 1 if that is what happened to sqe.
 */
int rewrite_left_to_kernel_bad_fd(const struct ring *r, struct io_uring_sqe *sqe, const struct opdef *def)
{
	if (!rewrite_bad_file(r, sqe))
		return 0;
	uint8_t opcode = def->buf == BUF_IOVEC ? IORING_OP_READ
			 : def->buf == BUF_MSGHDR ? IORING_OP_RECV : sqe->opcode;
	int32_t fd = sqe->fd;
	clear_sqe(sqe, opcode, sqe->user_data);
	sqe->fd = fd;
	return 1;
}
