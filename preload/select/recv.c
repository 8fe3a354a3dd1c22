/*
 * A single RECV or RECVMSG that selects a buffer.  Its first attempt takes
 * the head buffer's verdict at once, data or not; then, if the socket has
 * data, a buffer is bound now, else a POLL_ADD holds the receive's place
 * (recv_defer) until the poll fires and completion.c has the buffer bound
 * (rewrite_bind_recv), as for a READ that waits for data (read.c).  Also
 * the receives of a batch that may give their buffer back before the next
 * SQE selects (rewrite_batch_recv_add, recv_may_return).
 */
#define _GNU_SOURCE
#include "preload/select/recv.h"

#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

#include "preload/select/bind.h"
#include "preload/select/bundle.h"
#include "preload/select/fd.h"
#include "preload/select/opdef.h"
#include "preload/select/prep.h"
#include "preload/select/req.h"
#include "preload/select/standin.h"
#include "preload/shadow/kernel_ops.h"
#include "preload/shadow/ring.h"
#include "preload/uaccess.h"

/*
 * A receive handed to the kernel with its buffer (or a READ from a file that
 * polls, from a ring): one that gets no data (an end of file, an error, a
 * fault on the buffer; a READ only the fault) gives the buffer back when
 * bufsel reaps its CQE, where the kernel, which runs it inline, gives it
 * back before the next SQE of the batch selects.  rewrite_barrier sends such
 * an SQE to the kernel after the receive.  may_return: the poll saw more
 * than data (or none was asked, a fixed file).
 */
void rewrite_batch_recv_add(struct ring *r, struct req *q, int may_return)
{
	if (may_return)
		q->flags |= REQ_MAY_RETURN;
	q->next_batch = r->batch_recvs;
	r->batch_recvs = q;
}

/* The buffer's first byte is one the kernel can write (read, then written
 * back as it was: the buffer is the pool's, not the program's, until the
 * receive's CQE): tried once, when an SQE behind it asks. */
int recv_may_return(struct req *q)
{
	if (!(q->flags & REQ_PROBED)) {
		char c;
		void *at = (void *)(uintptr_t)q->buf.addr;
		q->flags |= REQ_PROBED;
		if (q->buf.len && (copy_from_prog(&c, at, 1) || copy_to_prog(at, &c, 1)))
			q->flags |= REQ_MAY_RETURN;
	}
	return !!(q->flags & REQ_MAY_RETURN);
}

enum { ATTEMPT_TOOK = 1, ATTEMPT_NAMED };

/* A stand-in for a first attempt's failure: the buffer it took, or the
 * one its CQE names without taking it. */
void rewrite_standin_attempt(struct ring *r, struct req *s, int took, const struct pool_buf *taken)
{
	if (took == ATTEMPT_NAMED) {
		if (s)
			s->cflags = cqe_buf_flags(taken->bid);
		return;
	}
	standin_takes(r, s, took ? taken : NULL);
}

/*
 * A receive's first attempt (without IORING_RECVSEND_POLL_FIRST) selects
 * the head buffer before it looks at the socket, so that buffer decides at
 * once, data or not: none is -ENOBUFS; a NULL one is -ENOBUFS, consumed
 * with its bid (*taken) unless the opcode leaves it at the head (RECV), or
 * named and left there (RECVMSG on a ring: ATTEMPT_NAMED); one too
 * short for a multishot RECVMSG's header (with the iovec's cap), or a
 * RECV's one past the user address space, is -EFAULT and stays.  0: the
 * attempt goes on to the socket, holding nothing; then
 * *keep is what a RECV asks for from there on: 6.18 keeps the length it
 * took from that first buffer as the request's (io_recv_buf_select).
 */
int rewrite_first_attempt(struct ring *r, const struct io_uring_sqe *sqe, const struct opdef *def,
			  uint32_t want, const struct msghdr *tmpl, int multi, struct pool_buf *taken,
			  int *took, uint32_t *keep)
{
	struct pool_buf b;
	*took = 0;
	*keep = 0;
	int null_ok = !multi && rewrite_legacy_rule(r, sqe, LEGACY_NULL_IS_A_BUFFER);
	spin_lock(&r->x->pool_lock);
	int res = pool_head_how(r->x->pool, sqe->buf_group, &b, sel_how(sqe));
	if (!res && !b.addr && !null_ok) {
		res = -ENOBUFS;
		/* io_recvmsg returns before it records the ring it selected
		 * from, so the CQE names the entry and nothing commits it. */
		if (def->null_putback)
			;
		else if (pool_kind(r->x->pool, sqe->buf_group) == POOL_EMULATED_RING)
			*taken = b, *took = ATTEMPT_NAMED;
		else
			*took = !pool_select_how(r->x->pool, sqe->buf_group, taken, sel_how(sqe)) ? ATTEMPT_TOOK : 0;
	} else if (!res && multi && def->buf == BUF_MSGHDR) {
		uint32_t room = rewrite_sel_len(want, b.len);
		if (sizeof(struct io_uring_recvmsg_out) + tmpl->msg_namelen + tmpl->msg_controllen > room)
			res = -EFAULT;
	} else if (!res && def->buf == BUF_ADDR_LEN && rewrite_entry_unreachable(&b, want)) {
		res = -EFAULT;	/* io_recv_buf_select's import_ubuf; the entry stays */
	} else if (!res && def->buf == BUF_ADDR_LEN) {
		*keep = rewrite_sel_len(want, b.len);
	}
	spin_unlock(&r->x->pool_lock);
	return res;
}

/*
 * A receive with nothing to read: a POLL_ADD holds its place (and its link
 * flags, so a LINK_TIMEOUT behind it guards the wait).  Returns the request
 * that holds the rest of the chain.
 */
struct req *recv_defer(struct ring *r, struct io_uring_sqe *sqe, uint32_t want,
		       const struct msghdr *msg, struct rewrite_undo *u)
{
	struct req *q = req_alloc(&r->reqs);
	if (!q) {
		standin(r, sqe, -ENOMEM, FAIL_AT_ISSUE, u);
		return NULL;
	}
	q->kind = REQ_RECV_WAIT;
	q->user_data = sqe->user_data;
	q->orig = *sqe;
	/* The kernel reads the msghdr and its iovec once, at submission: what
	 * the program does to them while the receive waits changes nothing. */
	q->want = want;
	q->tmpl = *msg;
	q->wait_start = now_ns();
	uint8_t flags = sqe->flags & (IOSQE_FIXED_FILE | IOSQE_IO_DRAIN | IOSQE_ASYNC | SQE_LINK_FLAGS);
	uint16_t personality = sqe->personality;
	int32_t fd = sqe->fd;
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_POLL_ADD;
	sqe->fd = fd;
	sqe->flags = flags;
	sqe->personality = personality;
	sqe->poll32_events = POLLIN | POLLRDHUP;
	sqe->user_data = req_tag(&r->reqs, q);
	q->poll_slot = sqe;
	u->kind = UNDO_REQ;
	u->req = q;
	return q;
}

/*
 * A RECVMSG on a stream socket whose head entry holds more than INT_MAX
 * bytes: io_recvmsg hands the socket the entry's length uncapped
 * (iov_iter_ubuf), which sock_rcvlowat takes for a negative int: the
 * receive stops at its first check, after what was queued, and with nothing
 * queued ends at once having read nothing, where it would wait.  hdr: what a
 * multishot one's header takes of the entry first (0 for one RECVMSG).
 */
int rewrite_recvmsg_reads_nothing(struct ring *r, const struct io_uring_sqe *sqe, uint32_t want, uint32_t hdr)
{
	struct pool_buf b;
	spin_lock(&r->x->pool_lock);
	int res = pool_head_how(r->x->pool, sqe->buf_group, &b, sel_how(sqe));
	spin_unlock(&r->x->pool_lock);
	uint32_t len = rewrite_sel_len(want, b.len);
	return !res && len >= hdr && len - hdr > INT32_MAX && !(sqe->flags & IOSQE_FIXED_FILE) &&
	       fd_sock_type(sqe->fd) == SOCK_STREAM && !rewrite_sock_queued(sqe->fd);
}

struct req *rewrite_select_recv(struct ring *r, struct io_uring_sqe *sqe, const struct opdef *def,
				struct rewrite_undo *u)
{
	uint32_t want;
	struct msghdr msg = { 0 };
	int res = rewrite_read_request(sqe, def, &want, &msg);
	if (res) {
		standin(r, sqe, res, FAIL_AT_PREP, u);
		return NULL;
	}
	int fixed = sqe->flags & IOSQE_FIXED_FILE;
	if (rewrite_left_to_kernel_bad_fd(r, sqe, def))
		return NULL;
	if (!rewrite_polls_first(sqe) && rewrite_not_a_socket(sqe, def)) {
		standin(r, sqe, -ENOTSOCK, FAIL_AT_ISSUE, u);
		return NULL;
	}
	if (rewrite_poll_first_ends_at_once(r, sqe)) {
		standin(r, sqe, -EAGAIN, FAIL_AT_ISSUE, u);
		return NULL;
	}
	uint32_t keep = 0;
	if (!(sqe->ioprio & IORING_RECVSEND_POLL_FIRST)) {
		struct pool_buf taken;
		int took;
		res = rewrite_first_attempt(r, sqe, def, want, &msg, 0, &taken, &took, &keep);
		if (res) {
			struct req *s = standin(r, sqe, res, FAIL_AT_ISSUE, u);
			rewrite_standin_attempt(r, s, took, &taken);
			return NULL;
		}
		if (def->buf == BUF_MSGHDR && rewrite_recvmsg_reads_nothing(r, sqe, want, 0)) {
			/* The msghdr comes back as a stream's empty receive
			 * leaves it: no name, no flags. */
			struct msghdr *pm = (struct msghdr *)(uintptr_t)sqe->addr;
			socklen_t nolen = 0;
			int noflags = 0;
			copy_to_prog(&pm->msg_namelen, &nolen, sizeof(nolen));
			copy_to_prog(&pm->msg_flags, &noflags, sizeof(noflags));
			standin_ok(sqe);
			return NULL;
		}
		/* MSG_DONTWAIT never waits: the attempt is the whole request.
		 * On an idle socket it is -EAGAIN, answered here: a receive
		 * handed to the kernel would give its buffer back only when
		 * its CQE is reaped, after the rest of the batch selected,
		 * where the kernel gives it back before the next SQE. */
		int readable = !fixed ? fd_readable(sqe->fd) : 0;
		if ((sqe->msg_flags & MSG_DONTWAIT) && !fixed && !readable) {
			standin(r, sqe, -EAGAIN, FAIL_AT_ISSUE, u);
			return NULL;
		}
		if (rewrite_recv_bundle_on_ring(r, sqe))
			keep = readable ? 0 : bundle_keep(r, sqe, keep);
		else if (rewrite_incremental_group(r, sqe))
			;	/* its entry is taken in turn, once the data is there */
		else if ((sqe->msg_flags & MSG_DONTWAIT) || readable ||
			 rewrite_legacy_rule(r, sqe, LEGACY_BIND_AT_FIRST_ATTEMPT)) {
			/* A receive that keeps its buffer whatever it gets
			 * gives nothing back to the batch. */
			uint32_t old = rewrite_legacy_recv_flags(r, sqe);
			rewrite_select_now(r, sqe, def, want, &msg, u, 0);
			if (u->kind == UNDO_SELECT) {
				u->req->flags |= old;
				if (!(old & REQ_KEEPS_BUF))
					rewrite_batch_recv_add(r, u->req, fixed || (readable & ~(POLLIN | POLLRDNORM)));
			}
			return NULL;
		}
	}
	uint32_t old = rewrite_legacy_recv_flags(r, sqe);
	struct req *q = recv_defer(r, sqe, want, &msg, u);
	if (q)
		q->flags |= old;
	if (q && keep) {
		/* RECV: the length 6.18 kept from the attempt (rewrite_first_attempt). */
		q->orig.len = keep;
		q->want = keep;
	}
	return q;
}

int rewrite_bind_recv(struct ring *r, struct req *q, int again)
{
	struct io_uring_sqe *sqe = &q->orig;
	const struct opdef *def = opdef_get(sqe->opcode);
	/* The request as read at submission (recv_defer). */
	uint32_t want = q->want;
	struct msghdr msg = q->tmpl;
	if (rewrite_not_a_socket(sqe, def))
		return -ENOTSOCK;
	if (rewrite_recv_bundle_on_ring(r, sqe))
		return rewrite_rebind_bundle(r, q, again);
	spin_lock(&r->x->pool_lock);
	int res = pool_select_how(r->x->pool, sqe->buf_group, &q->buf,
				  sel_how(sqe) | (again ? POOL_SEL_AGAIN : 0));
	if (!res && !q->buf.addr) {
		/* As at the first attempt (rewrite_first_attempt, rewrite_ring_read_attempt):
		 * a ring's entry is never consumed here; RECVMSG names it. */
		int ring = pool_kind(r->x->pool, sqe->buf_group) == POOL_EMULATED_RING;
		if (def->null_putback || ring)
			pool_putback(r->x->pool, &q->buf);
		else
			pool_consume(r->x->pool, &q->buf);
		if (!def->null_putback && !(ring && def->select == SELECT_AT_ISSUE))
			q->cflags = cqe_buf_flags(q->buf.bid);
		res = -ENOBUFS;
	}
	spin_unlock(&r->x->pool_lock);
	if (res == -EBUSY)
		return -ENOBUFS;	/* parked behind the transfer that has the entry */
	if (res)
		return res;
	if (rewrite_entry_unreachable(&q->buf, want) &&
	    (def->buf != BUF_MSGHDR || rewrite_msghdr_entry_unreachable(sqe))) {
		rewrite_pool_locked_putback(r, &q->buf);
		return -EFAULT;	/* the retry's import_ubuf; the entry stays */
	}
	q->kind = REQ_RECV_SEL;
	/* A READ that waited: from a file that polls (ring_read_lazy), the
	 * entry is committed with the data; from a regular file (it waited for
	 * an incremental ring's turn), at selection. */
	int at_selection = def->select == SELECT_AT_ISSUE && (sqe->flags & IOSQE_FIXED_FILE || rewrite_cannot_poll(sqe->fd)) &&
			   rewrite_incremental_group(r, sqe);
	if (def->select == SELECT_AT_ISSUE)
		q->flags |= at_selection ? 0 : REQ_RING_LAZY;
	else if (sqe->msg_flags & MSG_WAITALL)
		q->flags |= REQ_WAITALL;
	if (def->select != SELECT_AT_ISSUE)
		sqe->ioprio &= ~IORING_RECVSEND_POLL_FIRST;
	res = bind_buffer(r, q, sqe, def, want, &msg);
	if (res)
		rewrite_pool_locked_putback(r, &q->buf);
	else if (at_selection)
		rewrite_commit_at_selection(r, q, &q->buf, 1, q->want);
	else
		req_recv_bound(&r->reqs, q);
	return res;
}
