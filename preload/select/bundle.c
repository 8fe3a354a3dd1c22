/*
 * Bundles (IORING_RECVSEND_BUNDLE).  A RECV bundle on a ring bufsel keeps
 * maps as many entries as the data needs, once the data is there, and
 * receives into them with one RECVMSG.  A SEND bundle sends buffer after
 * buffer: on a legacy group one SEND per buffer, on a ring one SENDMSG of
 * every entry there is.  The first step is taken at drain time; the next
 * ones when a step completes (completion.c, through rewrite_bundle_send),
 * and a multishot RECV bundle's by multishot.c.
 */
#define _GNU_SOURCE
#include "preload/select/bundle.h"

#include <errno.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "preload/heap.h"
#include "preload/select/bind.h"
#include "preload/select/fd.h"
#include "preload/select/opdef.h"
#include "preload/select/prep.h"
#include "preload/select/req.h"
#include "preload/select/standin.h"
#include "preload/shadow/ring.h"
#include "preload/uring_abi.h"

/*
 * A RECV bundle on a ring bufsel keeps maps as many entries as the data
 * needs, which bufsel learns only when the data is there: such a receive
 * always waits for it (recv_defer; a poll on a readable socket fires at
 * once) and maps its entries then (rewrite_bind_bundle).  A multishot one maps
 * at each receive of its stream (multi_bundle_recv).
 */
int rewrite_recv_bundle_on_ring(struct ring *r, const struct io_uring_sqe *sqe)
{
	return sqe->opcode == IORING_OP_RECV && (sqe->ioprio & IORING_RECVSEND_BUNDLE) &&
	       !(sqe->ioprio & IORING_RECV_MULTISHOT) && rewrite_group_kind(r, sqe) == POOL_EMULATED_RING;
}

int rewrite_recv_bundle_multi_on_ring(struct ring *r, const struct io_uring_sqe *sqe)
{
	return sqe->opcode == IORING_OP_RECV &&
	       (sqe->ioprio & (IORING_RECVSEND_BUNDLE | IORING_RECV_MULTISHOT)) ==
		       (IORING_RECVSEND_BUNDLE | IORING_RECV_MULTISHOT) &&
	       rewrite_group_kind(r, sqe) == POOL_EMULATED_RING;
}

/* The room the kernel's next bundle mapping starts with (ring.h, bundle_vec). */
static uint16_t bundle_room(const struct ring *r)
{
	return r->x->bundle_vec ? r->x->bundle_vec : 1;
}

/*
 * A bundle RECV's first attempt found no data: with a single entry mapped,
 * io_recv_buf_select kept its length as the request's (sr->len), which then
 * caps the mapping when the data comes; with several it kept nothing.
 */
uint32_t bundle_keep(struct ring *r, const struct io_uring_sqe *sqe, uint32_t keep)
{
	if (sqe->len)
		return 0;
	spin_lock(&r->x->pool_lock);
	uint32_t avail = pool_available(r->x->pool, sqe->buf_group);
	uint16_t room = bundle_room(r);
	spin_unlock(&r->x->pool_lock);
	return (avail < room ? avail : room) == 1 ? keep : 0;
}

/*
 * The entries of a bundle RECV whose data is there, as 6.18 maps them: once
 * (up to what the request asks, or with the room it has), and if that filled
 * every entry, ended on none cut and left the ring some, and more than a
 * byte is still queued, once more for what is queued (io_recv_finish's
 * retry).  The kernel receives twice; bufsel receives once into both
 * mappings.  0 and q->bun filled, or -ENOBUFS / -ENOMEM.
 */
int rewrite_bind_bundle(struct ring *r, struct req *q, uint32_t max_len, int again, uint32_t mshot_len)
{
	const struct io_uring_sqe *sqe = &q->orig;
	uint32_t inq = (sqe->flags & IOSQE_FIXED_FILE) ? 0 : rewrite_sock_queued(sqe->fd);
	if (!q->bun && !(q->bun = heap_malloc(sizeof(*q->bun), "bundle")))
		return -ENOMEM;
	struct req_bundle *bn = q->bun;
	/* In a multishot stream, a receive that follows another at once
	 * maps for what that one left queued (its msg_inq). */
	if (!max_len && q->looping && inq > 1)
		max_len = inq;
	/* A multishot stream's byte limit caps each mapping (optlen). */
	if (q->mshot_lim && (!max_len || max_len > q->mshot_left))
		max_len = q->mshot_left;
	spin_lock(&r->x->pool_lock);
	struct pool_bundle a = { .max_len = max_len, .nr_iovs = bundle_room(r), .expand = 1, .count = !again };
	int n = pool_select_bundle(r->x->pool, sqe->buf_group, &a, bn->bufs);
	if (n > 0) {
		if (a.expanded)
			r->x->bundle_vec = (uint16_t)n;
		q->emptied = a.emptied;
		/* No second mapping once the stream's length or limit is met
		 * (IORING_RECV_MSHOT_CAP, _DONE). */
		uint32_t more = inq >= a.total ? inq - a.total : 0;
		int met = (mshot_len && a.total >= mshot_len) || (q->mshot_lim && a.total >= q->mshot_left);
		if (q->mshot_lim && more > q->mshot_left - a.total)
			more = q->mshot_left - a.total;
		if (!a.emptied && !a.partial && !met && inq >= a.total && more > 1) {
			struct pool_bundle b = { .max_len = more, .nr_iovs = bundle_room(r), .expand = 1 };
			int m = pool_select_bundle(r->x->pool, sqe->buf_group, &b, bn->bufs + n);
			if (m > 0) {
				if (b.expanded)
					r->x->bundle_vec = (uint16_t)m;
				q->emptied = b.emptied;
				n += m;
			}
		}
	}
	spin_unlock(&r->x->pool_lock);
	if (n < 0)
		return n;
	bn->n = (uint16_t)n;
	return 0;
}

/* A bundle's entries back to the ring, last first (the ring's head moves
 * back over them only in that order). */
void bundle_putback(struct ring *r, struct req_bundle *bn)
{
	spin_lock(&r->x->pool_lock);
	while (bn->n)
		pool_putback(r->x->pool, &bn->bufs[--bn->n]);
	spin_unlock(&r->x->pool_lock);
}

/* The SQE onto the bundle's entries: one is a plain RECV or SEND, more a
 * RECVMSG or SENDMSG over them. */
void bundle_sqe(struct io_uring_sqe *sqe, struct req_bundle *bn, uint8_t msg_opcode)
{
	uint32_t total = 0;
	for (uint16_t i = 0; i < bn->n; i++) {
		bn->iov[i] = (struct iovec){ (void *)(uintptr_t)bn->bufs[i].addr, bn->bufs[i].len };
		total += bn->bufs[i].len;
	}
	if (bn->n == 1) {
		sqe->addr = bn->bufs[0].addr;
		sqe->len = total;
		return;
	}
	bn->msg = (struct msghdr){ .msg_iov = bn->iov, .msg_iovlen = bn->n };
	if (sqe->addr2 && sqe->addr_len) {
		bn->msg.msg_name = (void *)(uintptr_t)sqe->addr2;
		bn->msg.msg_namelen = sqe->addr_len;
	}
	sqe->opcode = msg_opcode;
	sqe->addr = (uint64_t)(uintptr_t)&bn->msg;
	sqe->len = 0;
	sqe->addr2 = 0;
	sqe->addr_len = 0;
}

/* A waiting bundle RECV whose data came: its entries, and its SQE onto them. */
int rewrite_rebind_bundle(struct ring *r, struct req *q, int again)
{
	struct io_uring_sqe *sqe = &q->orig;
	int res = rewrite_bind_bundle(r, q, q->want, again, 0);
	if (res)
		return res;
	q->kind = REQ_RECV_SEL;
	if (sqe->msg_flags & MSG_WAITALL)
		q->flags |= REQ_WAITALL;
	sqe->ioprio = 0;
	q->buf = q->bun->bufs[0];
	struct msghdr none = { 0 };
	res = bind_buffer(r, q, sqe, opdef_get(sqe->opcode), 0, &none);
	if (res) {
		bundle_putback(r, q->bun);
		return res;
	}
	/* bufsel settles the entries from the CQE, so it needs every one. */
	if (q->flags & REQ_DELIVERED) {
		q->flags = (q->flags & ~(uint32_t)REQ_DELIVERED) | REQ_SKIP_SUCCESS;
		sqe->flags &= (uint8_t)~IOSQE_CQE_SKIP_SUCCESS;
	}
	bundle_sqe(sqe, q->bun, IORING_OP_RECVMSG);
	q->want = 0;
	for (uint16_t i = 0; i < q->bun->n; i++)
		q->want += q->bun->bufs[i].len;
	req_recv_bound(&r->reqs, q);
	return 0;
}

/*
 * A bundle SEND's step on a ring bufsel keeps: io_send_select_buffer maps
 * every entry there is (up to the SQE's length on the first step, up to
 * POOL_BUNDLE_MAX) and commits them all; one SENDMSG sends them whole.
 */
static int bundle_send_step(struct ring *r, struct req *q)
{
	if (!q->bun && !(q->bun = heap_malloc(sizeof(*q->bun), "bundle")))
		return -ENOMEM;
	spin_lock(&r->x->pool_lock);
	struct pool_bundle b = { .max_len = q->want && q->want <= INT32_MAX ? q->want : INT32_MAX,
				 .nr_iovs = bundle_room(r), .expand = 1, .count = 1 };
	int n = pool_select_bundle(r->x->pool, q->orig.buf_group, &b, q->bun->bufs);
	if (n > 0 && b.expanded)
		r->x->bundle_vec = (uint16_t)n;
	spin_unlock(&r->x->pool_lock);
	if (n == -EBUSY)
		n = -ENOBUFS;	/* an incremental ring's entry is out: as select_read */
	if (n < 0)
		return n;
	q->want = 0;	/* io_mshot_prep_retry: later steps have no length */
	q->bun->n = (uint16_t)n;
	q->emptied = b.emptied;
	q->buf = q->bun->bufs[0];
	struct io_uring_sqe *sqe = &q->next;
	*sqe = q->orig;
	sqe->flags &= IOSQE_FIXED_FILE;
	sqe->ioprio = 0;
	sqe->buf_index = 0;
	sqe->msg_flags |= MSG_WAITALL;	/* a bundle wants its entries whole */
	sqe->user_data = req_tag(&r->reqs, q);
	bundle_sqe(sqe, q->bun, IORING_OP_SENDMSG);
	q->flags &= ~(uint32_t)REQ_COMMITTED;
	if (rewrite_incremental_group(r, &q->orig)) {
		/* io_buffers_select commits a send's mapping at once: nothing
		 * is left to settle at completion, or to put back on undo. */
		rewrite_commit_at_selection(r, q, q->bun->bufs, (uint16_t)n, b.total);
		q->bun->n = 0;
	}
	return 0;
}

int rewrite_bundle_send(struct ring *r, struct req *q)
{
	if (rewrite_group_kind(r, &q->orig) == POOL_EMULATED_RING)
		return bundle_send_step(r, q);
	spin_lock(&r->x->pool_lock);
	int res = pool_select_how(r->x->pool, q->orig.buf_group, &q->buf, sel_how(&q->orig));
	if (!res && !q->buf.addr) {
		pool_consume(r->x->pool, &q->buf);
		q->cflags = cqe_buf_flags(q->buf.bid);
		res = -ENOBUFS;
	}
	else if (res == -ENOBUFS && opdef_get(q->orig.opcode)->missing_enoent &&
		 !pool_has_group(r->x->pool, q->orig.buf_group))
		res = -ENOENT;	/* io_buffers_select finds no list */
	q->emptied = !res && !pool_available(r->x->pool, q->orig.buf_group);
	spin_unlock(&r->x->pool_lock);
	if (res)
		return res;
	struct io_uring_sqe *sqe = &q->next;
	*sqe = q->orig;
	sqe->flags &= IOSQE_FIXED_FILE;
	sqe->ioprio = 0;
	sqe->buf_index = 0;
	sqe->addr = q->buf.addr;
	sqe->len = q->buf.len;
	sqe->msg_flags |= MSG_WAITALL;	/* a bundle wants each buffer whole */
	sqe->user_data = req_tag(&r->reqs, q);
	return 0;
}

/*
 * A bundle SEND (IORING_RECVSEND_BUNDLE) on a legacy group: 6.18 maps one
 * legacy buffer per pass (io_provided_buffers_select), sends it, posts a CQE
 * with IORING_CQE_F_MORE and goes round again until a send fails or a
 * selection empties the group (REQ_F_BL_EMPTY): one CQE per buffer.  bufsel
 * issues one SEND per buffer the same way (completion.c takes the steps).
 */
struct req *rewrite_select_send_bundle(struct ring *r, struct io_uring_sqe *sqe,
				       struct rewrite_undo *u)
{
	struct req *q = req_alloc(&r->reqs);
	if (!q) {
		standin(r, sqe, -ENOMEM, FAIL_AT_ISSUE, u);
		return NULL;
	}
	q->kind = REQ_SEND_BUNDLE;
	q->user_data = sqe->user_data;
	q->orig = *sqe;
	q->want = sqe->len;
	int res = rewrite_bundle_send(r, q);
	if (res) {
		uint32_t cflags = q->cflags;
		req_free(&r->reqs, q);
		struct req *s = standin(r, sqe, res, FAIL_AT_ISSUE, u);
		if (s)
			s->cflags = cflags;
		return NULL;
	}
	uint8_t links = sqe->flags & SQE_LINK_FLAGS;
	q->flags |= (links ? REQ_LINKED : 0) | (links & IOSQE_IO_HARDLINK ? REQ_HARDLINK : 0);
	uint8_t keep = sqe->flags & (IOSQE_IO_DRAIN | IOSQE_ASYNC);
	*sqe = q->next;
	sqe->flags |= keep;
	u->kind = UNDO_SELECT;
	u->req = q;
	/* The rest of the chain runs when the bundle ends (multi_end). */
	return links ? q : NULL;
}
