/*
 * The emulation of legacy provided buffers on the real ring.  The kernel
 * never sees IORING_OP_PROVIDE_BUFFERS, IORING_OP_REMOVE_BUFFERS or
 * IOSQE_BUFFER_SELECT on a legacy group:
 *
 * - an emulated opcode runs against the pool at drain time and leaves a
 *   stand-in in its slot, so its CQE comes in the kernel's order and link
 *   chains fail or go on exactly as the kernel decides: a NOP for success
 *   (the program's own user_data: nothing to patch), an SQE that fails at
 *   prep for an error the kernel finds at submission, and one that fails at
 *   issue for an error it finds when the request runs;
 * - a buffer-select read gets its buffer here, and the real SQE reads into
 *   it; its CQE gets IORING_CQE_F_BUFFER and the bid back on the way out.
 *
 * The pool is shared with the completion path, hence pool_lock.
 */
#define _GNU_SOURCE
#include "preload/rewrite.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>

#include "preload/log.h"
#include "preload/opdef.h"
#include "preload/req.h"
#include "preload/ring.h"
#include "preload/sys.h"
#include "preload/uaccess.h"

/* io_init_req's flag rules, for SQEs whose effects bufsel applies itself. */
#define SQE_VALID_FLAGS                                                                  \
	(IOSQE_FIXED_FILE | IOSQE_IO_DRAIN | IOSQE_IO_LINK | IOSQE_IO_HARDLINK |         \
	 IOSQE_ASYNC | IOSQE_BUFFER_SELECT | IOSQE_CQE_SKIP_SUCCESS)

enum undo_kind { UNDO_NONE, UNDO_REQ, UNDO_SELECT, UNDO_PROVIDE };

/* A user_data no request can have: bufsel's own tag space, generation 0xffff
 * of a slot that never exists. */
#define NO_SUCH_REQUEST (REQ_TAG_MAGIC | 0x0000ffffffffffffULL)

enum standin_class {
	SUCCEED,	/* a NOP: it runs and succeeds */
	FAIL_AT_PREP,	/* the kernel rejects it before anything runs */
	FAIL_AT_ISSUE,	/* it runs, and fails: a link breaks here */
};

/* Replaces *sqe by an SQE of class c whose CQE bufsel turns into res. */
static void standin(struct ring *r, struct io_uring_sqe *sqe, int res, enum standin_class c,
		    struct rewrite_undo *u)
{
	struct req *q = req_alloc(&r->reqs);
	uint8_t flags = sqe->flags & ~IOSQE_BUFFER_SELECT;
	uint64_t ud = sqe->user_data;
	uint16_t personality = sqe->personality;
	memset(sqe, 0, sizeof(*sqe));
	sqe->flags = flags;
	sqe->personality = personality;
	if (!q) {
		/* No slot to carry the result: the program still gets a CQE in
		 * place, with -ENOMEM, rather than a lost completion. */
		log_warn("out of request slots: an emulated result is reported as -EINVAL");
		sqe->opcode = IORING_OP_TIMEOUT;
		sqe->len = 2;
		sqe->user_data = ud;
		return;
	}
	q->kind = REQ_STANDIN;
	q->user_data = ud;
	q->res = res;
	if (c == SUCCEED) {
		sqe->opcode = IORING_OP_NOP;
	} else if (c == FAIL_AT_PREP) {
		/* TIMEOUT insists on len 1 in every kernel since 5.4. */
		sqe->opcode = IORING_OP_TIMEOUT;
		sqe->len = 2;
	} else {
		sqe->opcode = IORING_OP_ASYNC_CANCEL;
		sqe->addr = NO_SUCH_REQUEST;
	}
	sqe->user_data = req_tag(&r->reqs, q);
	u->kind = UNDO_REQ;
	u->req = q;
}

/* Success with res 0 needs no request: the program's own user_data rides a NOP. */
static void standin_ok(struct io_uring_sqe *sqe)
{
	uint8_t flags = sqe->flags & ~IOSQE_BUFFER_SELECT;
	uint64_t ud = sqe->user_data;
	uint16_t personality = sqe->personality;
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_NOP;
	sqe->flags = flags;
	sqe->personality = personality;
	sqe->user_data = ud;
}

/* The generic checks io_init_req makes before an opcode's own prep. */
static int init_check(struct ring *r, const struct io_uring_sqe *sqe)
{
	if (sqe->flags & ~SQE_VALID_FLAGS)
		return -EINVAL;
	if ((sqe->flags & IOSQE_IO_DRAIN) && r->drain_disabled)
		return -EOPNOTSUPP;
	return 0;
}

static void emulate_provide(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u)
{
	struct pool_provide p = {
		.addr = sqe->addr, .len = sqe->len, .nbufs = sqe->fd, .off = sqe->off,
		.bgid = sqe->buf_group, .rw_flags = sqe->rw_flags,
		.splice_fd_in = (uint32_t)sqe->splice_fd_in, .ioprio = sqe->ioprio,
	};
	int res = init_check(r, sqe);
	if (res)
		return;		/* the stand-in NOP fails at init just the same */
	if (sqe->flags & IOSQE_BUFFER_SELECT) {
		standin(r, sqe, -EOPNOTSUPP, FAIL_AT_PREP, u);
		return;
	}
	if ((res = pool_provide_prep(&p))) {
		standin(r, sqe, res, FAIL_AT_PREP, u);
		return;
	}
	spin_lock(&r->pool_lock);
	struct pool_group_stats before;
	int existed = !pool_group_stats(r->pool, p.bgid, &before);
	res = pool_provide(r->pool, &p);
	if (!res) {
		struct pool_group_stats after;
		pool_group_stats(r->pool, p.bgid, &after);
		u->kind = UNDO_PROVIDE;
		u->bgid = p.bgid;
		u->created = !existed;
		u->added = after.available - (existed ? before.available : 0);
	}
	spin_unlock(&r->pool_lock);
	if (res)
		standin(r, sqe, res, FAIL_AT_ISSUE, u);
	else
		standin_ok(sqe);
}

static void emulate_remove(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u)
{
	struct pool_remove p = {
		.nbufs = sqe->fd, .bgid = sqe->buf_group, .addr = sqe->addr, .len = sqe->len,
		.off = sqe->off, .rw_flags = sqe->rw_flags, .splice_fd_in = (uint32_t)sqe->splice_fd_in,
	};
	int res = init_check(r, sqe);
	if (res)
		return;
	if (sqe->flags & IOSQE_BUFFER_SELECT)
		res = -EOPNOTSUPP;
	else if (sqe->ioprio)
		res = -EINVAL;
	else
		res = pool_remove_prep(&p);
	if (res) {
		standin(r, sqe, res, FAIL_AT_PREP, u);
		return;
	}
	spin_lock(&r->pool_lock);
	res = pool_remove(r->pool, &p);
	spin_unlock(&r->pool_lock);
	if (res < 0) {
		standin(r, sqe, res, FAIL_AT_ISSUE, u);
		return;
	}
	/* Removal cannot be undone, so the drain loop hands what precedes a
	 * REMOVE to the kernel first (see rewrite_barrier). */
	standin(r, sqe, res, SUCCEED, u);
	u->kind = UNDO_NONE;
}

/* Is a plain fd open?  The kernel fails a bad fd before it selects. */
static int fd_open(int fd)
{
	return sys_call3(SYS_fcntl, fd, F_GETFD, 0) >= 0;
}

static void select_read(struct ring *r, struct io_uring_sqe *sqe, const struct opdef *def,
			struct rewrite_undo *u)
{
	uint32_t want = sqe->len;
	struct iovec iov;

	if (def->buf == BUF_IOVEC) {
		if (sqe->len != 1) {
			standin(r, sqe, -EINVAL, FAIL_AT_PREP, u);
			return;
		}
		if (copy_from_prog(&iov, (const void *)(uintptr_t)sqe->addr, sizeof(iov))) {
			standin(r, sqe, -EFAULT, FAIL_AT_PREP, u);
			return;
		}
		want = iov.iov_len > UINT32_MAX ? UINT32_MAX : (uint32_t)iov.iov_len;
	}
	if (!(sqe->flags & IOSQE_FIXED_FILE) && !fd_open(sqe->fd)) {
		/* Let the kernel fail it as it would: no buffer is taken. */
		sqe->flags &= ~IOSQE_BUFFER_SELECT;
		sqe->buf_index = 0;
		return;
	}
	struct req *q = req_alloc(&r->reqs);
	if (!q) {
		standin(r, sqe, -ENOMEM, FAIL_AT_ISSUE, u);
		return;
	}
	spin_lock(&r->pool_lock);
	int res = pool_select(r->pool, sqe->buf_group, &q->buf);
	spin_unlock(&r->pool_lock);
	if (res) {
		req_free(&r->reqs, q);
		standin(r, sqe, res, FAIL_AT_ISSUE, u);
		return;
	}
	uint32_t len = want && want < q->buf.len ? want : q->buf.len;
	q->kind = REQ_READ_SEL;
	q->user_data = sqe->user_data;
	q->want = len;
	q->flags = (sqe->flags & IOSQE_FIXED_FILE ? REQ_FIXED_FILE : 0) |
		   (sqe->flags & (IOSQE_IO_LINK | IOSQE_IO_HARDLINK) ? REQ_LINKED : 0);
	if (sqe->flags & IOSQE_CQE_SKIP_SUCCESS) {
		/* The completion must reach bufsel to account for the buffer, so
		 * the kernel's skip becomes ours, except the ring's first: the
		 * kernel has to see one, since it turns IOSQE_IO_DRAIN off.  That
		 * one request may never come back; its buffer counts as delivered
		 * now and its slot stays with the ring. */
		if (r->kernel_skip) {
			q->flags |= REQ_SKIP_SUCCESS;
			sqe->flags &= ~IOSQE_CQE_SKIP_SUCCESS;
		} else {
			q->flags |= REQ_DELIVERED;
			spin_lock(&r->pool_lock);
			pool_consume(r->pool, &q->buf);
			spin_unlock(&r->pool_lock);
		}
	}
	if (def->buf == BUF_IOVEC) {
		q->iov.iov_base = (void *)(uintptr_t)q->buf.addr;
		q->iov.iov_len = len;
		sqe->addr = (uint64_t)(uintptr_t)&q->iov;
	} else {
		sqe->addr = q->buf.addr;
		sqe->len = len;
	}
	sqe->flags &= ~IOSQE_BUFFER_SELECT;
	sqe->buf_index = 0;
	sqe->user_data = req_tag(&r->reqs, q);
	u->kind = UNDO_SELECT;
	u->req = q;
}

/* A cancel by user_data must find a request bufsel renamed. */
static void retarget_cancel(struct ring *r, struct io_uring_sqe *sqe)
{
	if (sqe->cancel_flags & (IORING_ASYNC_CANCEL_FD | IORING_ASYNC_CANCEL_ANY))
		return;
	struct req *q = req_find_user_data(&r->reqs, sqe->addr);
	if (q)
		sqe->addr = req_tag(&r->reqs, q);
}

void rewrite_sqe(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u)
{
	const struct opdef *def = opdef_get(sqe->opcode);
	u->kind = UNDO_NONE;
	if (def->emulated == EMU_PROVIDE_BUFFERS) {
		emulate_provide(r, sqe, u);
		return;
	}
	if (def->emulated == EMU_REMOVE_BUFFERS) {
		emulate_remove(r, sqe, u);
		return;
	}
	if (sqe->opcode == IORING_OP_ASYNC_CANCEL && r->reqs.live)
		retarget_cancel(r, sqe);
	if (!(sqe->flags & IOSQE_BUFFER_SELECT))
		return;
	spin_lock(&r->pool_lock);
	int ring_group = pool_is_ring(r->pool, sqe->buf_group);
	spin_unlock(&r->pool_lock);
	if (ring_group || init_check(r, sqe))
		return;		/* the kernel's group, or the kernel's error */
	switch (def->select) {
	case SELECT_AT_ISSUE:
	case SELECT_WHEN_READABLE:
		select_read(r, sqe, def, u);
		return;
	default:
		standin(r, sqe, -EOPNOTSUPP, FAIL_AT_PREP, u);
		return;
	}
}

void rewrite_undo(struct ring *r, struct rewrite_undo *u)
{
	switch (u->kind) {
	case UNDO_SELECT:
		spin_lock(&r->pool_lock);
		if (!(u->req->flags & REQ_DELIVERED))
			pool_putback(r->pool, &u->req->buf);
		spin_unlock(&r->pool_lock);
		req_free(&r->reqs, u->req);
		break;
	case UNDO_REQ:
		req_free(&r->reqs, u->req);
		break;
	case UNDO_PROVIDE:
		spin_lock(&r->pool_lock);
		pool_provide_undo(r->pool, u->bgid, u->added, u->created);
		spin_unlock(&r->pool_lock);
		break;
	}
	u->kind = UNDO_NONE;
}

static int read_succeeded(const struct req *q, const struct io_uring_cqe *cqe)
{
	return cqe->res >= 0 && !((q->flags & REQ_LINKED) && (uint32_t)cqe->res < q->want);
}

int rewrite_complete(struct ring *r, struct req *q, struct io_uring_cqe *cqe)
{
	int post = 1;
	cqe->user_data = q->user_data;
	switch (q->kind) {
	case REQ_STANDIN:
		cqe->res = q->res;
		cqe->flags = 0;
		break;
	case REQ_READ_SEL:
		spin_lock(&r->pool_lock);
		if ((q->flags & REQ_FIXED_FILE) && cqe->res == -EBADF) {
			/* An unregistered fixed file fails before selection. */
			pool_putback(r->pool, &q->buf);
		} else {
			if (!(q->flags & REQ_DELIVERED))
				pool_consume(r->pool, &q->buf);
			cqe->flags |= IORING_CQE_F_BUFFER | ((uint32_t)q->buf.bid << IORING_CQE_BUFFER_SHIFT);
			if ((q->flags & REQ_SKIP_SUCCESS) && read_succeeded(q, cqe))
				post = 0;
		}
		spin_unlock(&r->pool_lock);
		break;
	}
	req_free(&r->reqs, q);
	return post;
}

static int rewrite_barrier(const struct io_uring_sqe *sqe)
{
	return sqe->opcode == IORING_OP_REMOVE_BUFFERS;
}

static int complete_cqe(struct ring *r, struct io_uring_cqe *cqe)
{
	struct req *q = req_lookup(&r->reqs, cqe->user_data);
	return q ? rewrite_complete(r, q, cqe) : 1;
}

const struct ring_hooks rewrite_hooks = {
	.wants = rewrite_wanted,
	.rewrite = rewrite_sqe,
	.undo = rewrite_undo,
	.complete = complete_cqe,
	.barrier = rewrite_barrier,
};
