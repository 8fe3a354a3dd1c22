/*
 * Binding a buffer to a request: the group an SQE selects from (its kind,
 * whether it is an incremental ring, the rules the program's kernel has
 * for legacy groups), a buffer selected at once and the SQE rewritten onto
 * it (rewrite_select_now, bind_buffer), what the kernel commits at
 * selection, and the undo that takes a selection back if the kernel does
 * not take the SQE.  The single-shot paths (recv.c, read.c), bundles
 * (bundle.c) and multishot streams (multishot.c) bind through here.
 */
#define _GNU_SOURCE
#include "preload/select/bind.h"

#include <errno.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "preload/heap.h"
#include "preload/select/fd.h"
#include "preload/select/opdef.h"
#include "preload/select/prep.h"
#include "preload/select/req.h"
#include "preload/select/standin.h"
#include "preload/shadow/kernel_ops.h"
#include "preload/shadow/ring.h"
#include "preload/uring_abi.h"

/* The length a selection gives a request that asks for want bytes (0: the
 * whole entry), as io_ring_buffer_select clamps it. */
uint32_t rewrite_sel_len(uint32_t want, uint32_t len)
{
	return want && want < len ? want : len;
}

/* A selected entry's length as the SQE handed on may carry it: the kernel's
 * own request imports the entry capped at MAX_RW_COUNT (import_ubuf), where
 * a plain RECV or READ of more than INT_MAX bytes is refused. */
uint32_t rewrite_rw_count(uint32_t len)
{
	return len > MAX_RW_COUNT_KERNEL ? MAX_RW_COUNT_KERNEL : len;
}

/* The rules of the kernel the program meets for legacy groups
 * (kernel_ops.h) that apply to sqe: all of them for a single request (none
 * of the multishot, bundle or poll-first receives, which only kernels with
 * 6.18's rules have) on a legacy group, else none. */
static unsigned legacy_rules_of(struct ring *r, const struct io_uring_sqe *sqe)
{
	unsigned rules = kernel_legacy_rules();
	if (!rules || sel_how(sqe) == POOL_SEL_OLDEST)
		return 0;
	spin_lock(&r->x->pool_lock);
	int legacy = pool_kind(r->x->pool, sqe->buf_group) == POOL_LEGACY;
	spin_unlock(&r->x->pool_lock);
	return legacy ? rules : 0;
}

/* Does rule apply to sqe?  Asked of the group only when the kernel has it. */
int rewrite_legacy_rule(struct ring *r, const struct io_uring_sqe *sqe, unsigned rule)
{
	return (kernel_legacy_rules() & rule) && (legacy_rules_of(r, sqe) & rule);
}

/* Points the SQE at q's buffer: q->buf is selected, want is what was asked. */
int bind_buffer(struct ring *r, struct req *q, struct io_uring_sqe *sqe,
		const struct opdef *def, uint32_t want, const struct msghdr *msg)
{
	/* io_buffers_select (6.18 SEND) hands a legacy buffer out whole:
	 * sqe->len caps only ring-mapped buffers. */
	if (def->missing_enoent)
		want = 0;
	uint32_t len = want || !rewrite_legacy_rule(r, sqe, LEGACY_LEN0_READS_NOTHING) ? rewrite_sel_len(want, q->buf.len) : 0;
	q->want = len;
	q->flags |= (sqe->flags & IOSQE_FIXED_FILE ? REQ_FIXED_FILE : 0) |
		    (sqe->flags & SQE_LINK_FLAGS ? REQ_LINKED : 0) |
		    (sqe->flags & IOSQE_IO_HARDLINK ? REQ_HARDLINK : 0);
	if (def->buf != BUF_ADDR_LEN) {
		q->iov.iov_base = (void *)(uintptr_t)q->buf.addr;
		q->iov.iov_len = rewrite_rw_count(len);
		/* Its callers failed it already if bytes were to be copied
		 * (rewrite_msghdr_entry_unreachable). */
		if (def->buf == BUF_MSGHDR && rewrite_entry_unreachable(&q->buf, len))
			q->iov = (struct iovec){ 0 };
	}
	if (def->buf == BUF_IOVEC) {
		sqe->addr = (uint64_t)(uintptr_t)&q->iov;
	} else if (def->buf == BUF_MSGHDR) {
		if (!q->msg && !(q->msg = heap_malloc(sizeof(*q->msg), "msghdr")))
			return -ENOMEM;
		*q->msg = *msg;
		q->msg->msg_iov = &q->iov;
		q->msg->msg_iovlen = 1;
		q->prog_msg = sqe->addr;
		sqe->addr = (uint64_t)(uintptr_t)q->msg;
	} else {
		sqe->addr = q->buf.addr;
		sqe->len = rewrite_rw_count(len);
	}
	if (sqe->flags & IOSQE_CQE_SKIP_SUCCESS) {
		/* The completion must reach bufsel to account for the buffer, so
		 * the kernel's skip becomes ours, except the ring's first: the
		 * kernel has to see one, since it turns IOSQE_IO_DRAIN off.  That
		 * one request may never come back; its buffer counts as delivered
		 * now and its slot stays with the ring. */
		if (r->x->kernel_skip) {
			q->flags |= REQ_SKIP_SUCCESS;
			sqe->flags &= ~IOSQE_CQE_SKIP_SUCCESS;
		} else {
			q->flags |= REQ_DELIVERED;	/* consumed at rewrite_commit */
		}
	}
	/* io_recv fails a MSG_WAITALL receive whose datagram was cut to the
	 * buffer (MSG_TRUNC out), and a failed request posts its CQE despite
	 * the skip; the result (the bytes copied) does not show the cut, the
	 * datagram's whole length does (complete_recv_sel). */
	if ((q->flags & REQ_SKIP_SUCCESS) && sqe->opcode == IORING_OP_RECV &&
	    (sqe->msg_flags & (MSG_WAITALL | MSG_TRUNC)) == MSG_WAITALL &&
	    !(sqe->flags & IOSQE_FIXED_FILE) && fd_sock_type(sqe->fd) > SOCK_STREAM) {
		sqe->msg_flags |= MSG_TRUNC;
		q->flags |= REQ_TRUNC_ADDED;
	}
	sqe->flags &= ~IOSQE_BUFFER_SELECT;
	sqe->buf_index = 0;
	sqe->user_data = req_tag(&r->reqs, q);
	return 0;
}

/* A selection the kernel's not taking the SQE takes back; one delivered
 * without a CQE (REQ_DELIVERED) is consumed only once it is taken. */
static void undo_select(struct rewrite_undo *u, struct req *q)
{
	u->kind = UNDO_SELECT;
	u->req = q;
	u->deliver = !!(q->flags & REQ_DELIVERED);
	u->buf = q->buf;
}

int rewrite_incremental_group(struct ring *r, const struct io_uring_sqe *sqe)
{
	spin_lock(&r->x->pool_lock);
	int inc = pool_ring_incremental(r->x->pool, sqe->buf_group);
	spin_unlock(&r->x->pool_lock);
	return inc;
}

/* An incremental ring's entry taken by a request that does not wait for a
 * file to be ready (a regular file, io-wq, a SEND): io_should_commit
 * commits what was mapped, now; the CQE says whether the entry stays. */
void rewrite_commit_at_selection(struct ring *r, struct req *q, const struct pool_buf *bufs, uint16_t n,
				 uint32_t mapped)
{
	spin_lock(&r->x->pool_lock);
	int more = pool_ring_commit(r->x->pool, bufs, n, mapped);
	spin_unlock(&r->x->pool_lock);
	q->flags |= REQ_COMMITTED;
	q->cflags = more ? IORING_CQE_F_BUF_MORE : 0;
}

/* A ring entry's range, as the request would take it, fails access_ok
 * (import_ubuf caps it at MAX_RW_COUNT first).  A legacy buffer never
 * does: PROVIDE_BUFFERS checked it. */
int rewrite_entry_unreachable(const struct pool_buf *b, uint32_t want)
{
	uint32_t len = rewrite_sel_len(want, b->len);
	return rewrite_user_range_check(b->addr, rewrite_rw_count(len)) != 0;
}

/*
 * Selects a buffer for the SQE and rewrites it onto it.  The stand-in
 * outcomes (-ENOBUFS, the kernel's NULL-buffer case) are the kernel's.
 */
int rewrite_select_now(struct ring *r, struct io_uring_sqe *sqe, const struct opdef *def,
		       uint32_t want, const struct msghdr *msg, struct rewrite_undo *u, int lazy)
{
	struct req *q = req_alloc(&r->reqs);
	if (!q) {
		standin(r, sqe, -ENOMEM, FAIL_AT_ISSUE, u);
		return 0;
	}
	int null_ok = rewrite_legacy_rule(r, sqe, LEGACY_NULL_IS_A_BUFFER);
	spin_lock(&r->x->pool_lock);
	int res = pool_select_how(r->x->pool, sqe->buf_group, &q->buf, sel_how(sqe));
	if (res == -ENOBUFS && def->missing_enoent && !pool_has_group(r->x->pool, sqe->buf_group))
		res = -ENOENT;
	spin_unlock(&r->x->pool_lock);
	if (res == -EBUSY) {
		req_free(&r->reqs, q);
		return res;	/* the caller waits, or answers */
	}
	if (res) {
		req_free(&r->reqs, q);
		standin(r, sqe, res, FAIL_AT_ISSUE, u);
		return 0;
	}
	if (!q->buf.addr && !null_ok) {
		/* The kernel takes a NULL buffer for "none left".  A read
		 * consumes it and says so; a receive leaves it at the head. */
		struct pool_buf nul = q->buf;
		req_free(&r->reqs, q);
		struct req *s = standin(r, sqe, -ENOBUFS, FAIL_AT_ISSUE, u);
		standin_takes(r, s, def->null_putback ? NULL : &nul);
		return 0;
	}
	if (rewrite_entry_unreachable(&q->buf, want) &&
	    (def->buf != BUF_MSGHDR || rewrite_msghdr_entry_unreachable(sqe))) {
		/* Handed on, the kernel would refuse the SQE at prep and stop
		 * the submission there; its own request imports the entry at
		 * issue (a RECVMSG copies into it) and fails alone.  Where the
		 * selection was committed at once (io_should_commit: no poll,
		 * or io-wq), the entry is gone and the CQE says so; elsewhere
		 * it stays at the head. */
		struct pool_buf bad = q->buf;
		req_free(&r->reqs, q);
		struct req *s = standin(r, sqe, -EFAULT, FAIL_AT_ISSUE, u);
		int committed = !def->sr_flags && !lazy &&
				(r->to_wq || (sqe->flags & IOSQE_FIXED_FILE) || rewrite_cannot_poll(sqe->fd));
		uint32_t len = rewrite_sel_len(want, bad.len);
		if (committed && len <= INT32_MAX) {
			standin_takes(r, s, &bad);
			return 0;
		}
		rewrite_pool_locked_putback(r, &bad);
		if (committed && s)	/* the commit takes the length for an error (below) */
			s->cflags = cqe_buf_flags(bad.bid);
		return 0;
	}
	q->kind = def->select == SELECT_WHEN_READABLE ? REQ_RECV_SEL : REQ_READ_SEL;
	q->user_data = sqe->user_data;
	q->orig = *sqe;
	if (def->select == SELECT_WHEN_READABLE && (sqe->msg_flags & MSG_WAITALL))
		q->flags |= REQ_WAITALL;
	if (bind_buffer(r, q, sqe, def, want, msg)) {
		rewrite_pool_locked_putback(r, &q->buf);
		req_free(&r->reqs, q);
		standin(r, sqe, -ENOMEM, FAIL_AT_ISSUE, u);
		return 0;
	}
	if (q->kind == REQ_RECV_SEL)
		req_recv_bound(&r->reqs, q);
	else if (lazy)
		q->flags |= REQ_RING_LAZY;
	else if (rewrite_incremental_group(r, sqe))
		rewrite_commit_at_selection(r, q, &q->buf, 1, q->want);
	else if (q->want > INT32_MAX) {
		/* Committed at selection with the length as an int, which
		 * io_kbuf_commit takes for an error: the head stays, and the
		 * CQE names the entry all the same. */
		rewrite_pool_locked_putback(r, &q->buf);
		q->flags |= REQ_COMMITTED;
		q->cflags = 0;
	}
	undo_select(u, q);
	return 0;
}

/* The flags of a single receive that the kernel's rules for legacy groups
 * give (kernel_ops.h), taken before the SQE is rewritten. */
uint32_t rewrite_legacy_recv_flags(struct ring *r, const struct io_uring_sqe *sqe)
{
	unsigned rules = legacy_rules_of(r, sqe);
	return (rules & LEGACY_KEEPS_ON_FAILURE ? REQ_KEEPS_BUF : 0) |
	       (rules & LEGACY_NO_SOCK_NONEMPTY ? REQ_NO_NONEMPTY : 0);
}

/* What the SQE's group id holds now: a legacy group, a buffer ring bufsel
 * keeps, one the kernel keeps (its own, passed through), or nothing. */
enum pool_kind rewrite_group_kind(struct ring *r, const struct io_uring_sqe *sqe)
{
	spin_lock(&r->x->pool_lock);
	enum pool_kind kind = pool_kind(r->x->pool, sqe->buf_group);
	spin_unlock(&r->x->pool_lock);
	return kind;
}
