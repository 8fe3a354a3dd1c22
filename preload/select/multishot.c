/*
 * Multishot receives (RECV, RECVMSG with IORING_RECV_MULTISHOT) and
 * READ_MULTISHOT on groups bufsel keeps.  bufsel runs such a request as a
 * stream of single receives (or reads), each on a buffer selected when data
 * is there, with a POLL_ADD between them while the file is empty.  The
 * first step is taken at drain time (rewrite_select_recv_multi); each next
 * one is written into q->next when completion.c asks for it, and
 * completion.c posts the stream's CQEs.
 */
#define _GNU_SOURCE
#include "preload/select/multishot.h"

#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "preload/heap.h"
#include "preload/select/bind.h"
#include "preload/select/bundle.h"
#include "preload/select/fd.h"
#include "preload/select/opdef.h"
#include "preload/select/prep.h"
#include "preload/select/read.h"
#include "preload/select/recv.h"
#include "preload/select/req.h"
#include "preload/select/standin.h"
#include "preload/shadow/kernel_ops.h"
#include "preload/shadow/ring.h"
#include "preload/uaccess.h"

/* The next step of a multishot receive, written into q->next: a POLL_ADD
 * while the socket may be empty, else a plain receive on a buffer selected
 * now (MSG_DONTWAIT: if the data went elsewhere, the buffer comes back). */
/* q->next as a step of q's stream: on its file, as its personality, tagged. */
static struct io_uring_sqe *stream_step(struct ring *r, struct req *q, uint8_t opcode)
{
	struct io_uring_sqe *sqe = &q->next;
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = opcode;
	sqe->fd = q->orig.fd;
	sqe->flags = q->orig.flags & IOSQE_FIXED_FILE;
	sqe->personality = q->orig.personality;
	sqe->user_data = req_tag(&r->reqs, q);
	return sqe;
}

void rewrite_multi_poll(struct ring *r, struct req *q)
{
	struct io_uring_sqe *sqe = stream_step(r, q, IORING_OP_POLL_ADD);
	sqe->poll32_events = POLLIN | POLLRDHUP;
	q->receiving = 0;
	q->loops = 0;
	q->wait_start = now_ns();
}

/* The step after a poll fired: io_recv looks at the file before it selects
 * a buffer (a pipe a multishot RECV polled from io-wq: -ENOTSOCK). */
int rewrite_multi_wake(struct ring *r, struct req *q)
{
	if (q->flags & REQ_NOT_SOCKET)
		return -ENOTSOCK;
	return rewrite_multi_recv(r, q);
}

/* A multishot RECV bundle's next receive (io_recv with REQ_F_APOLL_MULTISHOT):
 * mapped as a single bundle's, with the first CQE's cap, MSG_DONTWAIT. */
static int multi_bundle_recv(struct ring *r, struct req *q)
{
	int res = rewrite_bind_bundle(r, q, q->want ? q->want : q->orig.len, 0, q->orig.len);
	q->looping = 0;
	if (res)
		return res;
	req_recv_bound(&r->reqs, q);
	q->buf = q->bun->bufs[0];
	struct io_uring_sqe *sqe = stream_step(r, q, IORING_OP_RECV);
	sqe->msg_flags = q->orig.msg_flags | MSG_DONTWAIT;
	bundle_sqe(sqe, q->bun, IORING_OP_RECVMSG);
	q->receiving = 1;
	return 0;
}

/*
 * A READ_MULTISHOT step reads only once its poll found data, with
 * RWF_NOWAIT so that data another reader took first makes it wait again,
 * not block.  A file without FMODE_NOWAIT refuses the flag at prep
 * (-EOPNOTSUPP, nothing read: a pipe before 5.12, as make vm-test shows on
 * 5.10), and refuses it at every step: a stream on a pipe under such a
 * kernel, the one BUFSEL_KERNEL names too, reads with plain READs after
 * its polls from the start (read_marks), and one the kernel refuses all
 * the same is marked at the refusal (complete_recv_multi).
 */
static int read_waits(const struct req *q)
{
	return !!(q->flags & REQ_READ_WAITS);
}

static uint32_t read_marks(const struct io_uring_sqe *sqe)
{
	if (sqe->opcode != OP_READ_MULTISHOT_NR || (sqe->flags & IOSQE_FIXED_FILE) || !kernel_rule(KERNEL_PIPES_BLOCK))
		return 0;
	return fd_is_pipe(sqe->fd) ? REQ_READ_WAITS : 0;
}

int rewrite_multi_recv(struct ring *r, struct req *q)
{
	if (rewrite_recv_bundle_multi_on_ring(r, &q->orig))
		return multi_bundle_recv(r, q);
	spin_lock(&r->x->pool_lock);
	int res = pool_select_how(r->x->pool, q->orig.buf_group, &q->buf, sel_how(&q->orig));
	/* The kernel's retry after this receive's CQE comes at once, before
	 * anything the program submits next: the group as this leaves it. */
	q->emptied = !res && !pool_available(r->x->pool, q->orig.buf_group);
	if (!res && !q->buf.addr) {
		/* As at the first attempt (rewrite_first_attempt): a ring's entry
		 * stays, RECVMSG names it. */
		int putback = opdef_get(q->orig.opcode)->null_putback;
		if (putback || pool_kind(r->x->pool, q->orig.buf_group) == POOL_EMULATED_RING)
			pool_putback(r->x->pool, &q->buf);
		else
			pool_consume(r->x->pool, &q->buf);
		if (!putback)
			q->cflags = cqe_buf_flags(q->buf.bid);
		res = -ENOBUFS;
	}
	spin_unlock(&r->x->pool_lock);
	if (res)
		return res;
	req_recv_bound(&r->reqs, q);
	uint32_t len = rewrite_sel_len(q->orig.len, q->buf.len);
	struct io_uring_sqe *sqe = stream_step(r, q, 0);	/* the opcode below */
	q->receiving = 1;
	switch (q->orig.opcode) {
	case IORING_OP_RECVMSG: {
		/* The kernel's layout in the buffer: struct io_uring_recvmsg_out,
		 * room for the name and the control data as the program's
		 * msghdr sizes them, then the payload. */
		const struct msghdr *t = &q->tmpl;
		size_t head = sizeof(struct io_uring_recvmsg_out) + t->msg_namelen + t->msg_controllen;
		/* The iovec's length caps the buffer until the stream's first
		 * CQE; 6.18 then takes whole buffers. */
		uint32_t room = rewrite_sel_len(q->want, q->buf.len);
		/* The header is written into the entry after the receive: one
		 * the kernel cannot write fails it once data is there, and
		 * handed on, its iovec would be refused at prep. */
		if (head <= room && rewrite_entry_unreachable(&q->buf, room) &&
		    !(q->orig.flags & IOSQE_FIXED_FILE) && !(fd_readable(q->orig.fd) & POLLIN)) {
			req_recv_unbound(&r->reqs, q);
			rewrite_pool_locked_putback(r, &q->buf);
			return -EBUSY;	/* the retry's -EAGAIN: it waits */
		}
		if (head > room || rewrite_entry_unreachable(&q->buf, room)) {
			if (head <= room)
				rewrite_drop_faulted_datagram(&q->orig);
			req_recv_unbound(&r->reqs, q);
			rewrite_pool_locked_putback(r, &q->buf);
			return -EFAULT;
		}
		char *base = (char *)(uintptr_t)q->buf.addr;
		*q->msg = (struct msghdr){
			.msg_name = t->msg_namelen ? base + sizeof(struct io_uring_recvmsg_out) : NULL,
			.msg_namelen = t->msg_namelen,
			.msg_control = t->msg_controllen ? base + sizeof(struct io_uring_recvmsg_out) + t->msg_namelen : NULL,
			.msg_controllen = t->msg_controllen,
			.msg_iov = &q->iov,
			.msg_iovlen = 1,
		};
		q->iov.iov_base = base + head;
		q->iov.iov_len = room - head;
		sqe->opcode = IORING_OP_RECVMSG;
		sqe->addr = (uint64_t)(uintptr_t)q->msg;
		sqe->len = 1;
		sqe->msg_flags = q->orig.msg_flags | MSG_DONTWAIT;
		break;
	}
	case IORING_OP_RECV:
		/* A cap kept from an attempt that found no data (rewrite_first_attempt). */
		if (q->want && q->want < len)
			len = q->want;
		sqe->opcode = IORING_OP_RECV;
		sqe->addr = q->buf.addr;
		sqe->len = rewrite_rw_count(len);
		sqe->msg_flags = q->orig.msg_flags | MSG_DONTWAIT;
		break;
	default:	/* READ_MULTISHOT */
		sqe->opcode = IORING_OP_READ;
		sqe->addr = q->buf.addr;
		sqe->len = rewrite_rw_count(q->buf.len);
		sqe->off = (uint64_t)-1;
		sqe->rw_flags = read_waits(q) ? 0 : RWF_NOWAIT;
		break;
	}
	return 0;
}

/*
 * A multishot receive on a legacy group: bufsel runs it as a sequence of
 * single receives, each on a buffer selected when data is there, and posts
 * them as the kernel posts a multishot stream (IORING_CQE_F_MORE on all but
 * the last).  The first step is taken here, the rest by completion.c.
 */
struct req *rewrite_select_recv_multi(struct ring *r, struct io_uring_sqe *sqe,
				      const struct opdef *def, struct rewrite_undo *u)
{
	struct msghdr tmpl = { 0 };
	uint32_t want = 0;
	int res = 0;
	if (def->select == SELECT_WHEN_READABLE)
		res = rewrite_read_request(sqe, def, &want, &tmpl);
	/* io_recvmsg_prep, io_read_mshot_prep: a multishot request takes its
	 * lengths from the buffers. */
	if (!res && def->mshot_no_len && (sqe->len || (def->mshot_no_len == 2 && sqe->addr)))
		res = -EINVAL;
	if (res) {
		standin(r, sqe, res, FAIL_AT_PREP, u);
		return NULL;
	}
	int fixed = sqe->flags & IOSQE_FIXED_FILE;
	if (rewrite_bad_fd(r, sqe))
		res = -EBADF;
	/* No multishot from io-wq but by poll (io_wq_submit_work), and a
	 * READ_MULTISHOT on a file that polls or nothing (io_read_mshot). */
	else if ((r->to_wq || def->select != SELECT_WHEN_READABLE) && !fixed && rewrite_cannot_poll(sqe->fd))
		res = -EBADFD;
	else if (!rewrite_polls_first(sqe) && (!r->to_wq || (!fixed && rewrite_wq_single_shot(sqe->fd))) &&
		 rewrite_not_a_socket(sqe, def))
		res = -ENOTSOCK;
	else if (!r->to_wq && rewrite_polling_without_waiting(sqe))
		res = -EAGAIN;
	if (res) {
		standin(r, sqe, res, FAIL_AT_ISSUE, u);
		return NULL;
	}
	struct req *q = req_alloc(&r->reqs);
	if (!q) {
		standin(r, sqe, -ENOMEM, FAIL_AT_ISSUE, u);
		return NULL;
	}
	q->kind = REQ_RECV_MULTI;
	q->user_data = sqe->user_data;
	q->orig = *sqe;
	q->want = want;
	q->flags |= read_marks(sqe);
	if (sqe->opcode == IORING_OP_RECV && rewrite_sqe_word44(sqe)) {
		q->mshot_lim = 1;
		q->mshot_left = rewrite_sqe_word44(sqe);
	}
	/* io_wq_submit_work arms a multishot request's poll before any
	 * attempt on a file that is O_NONBLOCK or FMODE_NOWAIT (sockets and
	 * pipes are): no buffer, no MSG_DONTWAIT -EAGAIN, no -ENOTSOCK until
	 * the file is readable (rewrite_multi_wake). */
	int poll_first = (sqe->ioprio & IORING_RECVSEND_POLL_FIRST) || r->to_wq;
	/* One look at the file, here rather than at every wake: the kernel's
	 * request holds the file, not the number. */
	int type = SOCK_STREAM;
	if (def->select == SELECT_WHEN_READABLE && !fixed)
		req_sock_known(q, type = fd_sock_type(sqe->fd));
	if (type == -ENOTSOCK && def->sock && poll_first)
		q->flags |= REQ_NOT_SOCKET;
	q->inq_unknown = type > 0 && type != SOCK_STREAM;
	if (def->buf == BUF_MSGHDR) {
		q->tmpl = tmpl;
		q->prog_msg = sqe->addr;
		if (!(q->msg = heap_malloc(sizeof(*q->msg), "msghdr"))) {
			req_free(&r->reqs, q);
			standin(r, sqe, -ENOMEM, FAIL_AT_ISSUE, u);
			return NULL;
		}
	}
	uint32_t cflags = 0, keep = 0;
	struct pool_buf taken;
	int took = 0;
	if (!poll_first && def->select == SELECT_WHEN_READABLE) {
		res = rewrite_first_attempt(r, sqe, def, want, &tmpl, 1, &taken, &took, &keep);
		if (!res && rewrite_recv_bundle_multi_on_ring(r, sqe))
			keep = bundle_keep(r, sqe, keep);
	}
	else if (!poll_first) {
		/* io_read_mshot's first attempt, as a READ's on a file that
		 * polls: the head entry decides at once, data or not, and an
		 * entry that fails it stays, a legacy buffer too
		 * (io_kbuf_recycle).  An empty one reads nothing: the stream
		 * ends with 0, naming no buffer. */
		struct pool_buf head;
		spin_lock(&r->x->pool_lock);
		res = pool_head_how(r->x->pool, sqe->buf_group, &head, sel_how(sqe));
		spin_unlock(&r->x->pool_lock);
		if (!res)
			res = rewrite_ring_read_attempt(sqe, 0, &head, !fixed && !fd_readable(sqe->fd));
		if (res == 1) {
			req_free(&r->reqs, q);
			standin(r, sqe, 0, SUCCEED, u);
			return NULL;
		}
	}
	uint32_t hdr = (uint32_t)sizeof(struct io_uring_recvmsg_out) + tmpl.msg_namelen + (uint32_t)tmpl.msg_controllen;
	if (!res && !poll_first && def->buf == BUF_MSGHDR && rewrite_recvmsg_reads_nothing(r, sqe, want, hdr)) {
		/* As for one RECVMSG (rewrite_recvmsg_reads_nothing): the stream ends
		 * at once with a header that says nothing came, in its entry. */
		req_free(&r->reqs, q);
		spin_lock(&r->x->pool_lock);
		took = !pool_select_how(r->x->pool, sqe->buf_group, &taken, sel_how(sqe));
		spin_unlock(&r->x->pool_lock);
		struct io_uring_recvmsg_out none = { 0 };
		if (took)
			copy_to_prog((void *)(uintptr_t)taken.addr, &none, sizeof(none));
		struct req *s = standin(r, sqe, took ? (int)hdr : -ENOBUFS, took ? SUCCEED : FAIL_AT_ISSUE, u);
		standin_takes(r, s, took ? &taken : NULL);
		return NULL;
	}
	int readable = !fixed && fd_readable(sqe->fd);
	if (!res && !poll_first && (sqe->msg_flags & MSG_DONTWAIT) &&
	    !fixed && !readable)
		res = -EAGAIN;	/* as for a single receive (rewrite_select_recv) */
	if (!res && !poll_first && ((sqe->msg_flags & MSG_DONTWAIT) || readable)) {
		int err = rewrite_multi_recv(r, q);
		res = err == -EBUSY ? 0 : err ? err : 1;	/* busy: its turn comes by poll */
		cflags = err ? q->cflags : 0;
	}
	if (res < 0) {
		req_free(&r->reqs, q);
		struct req *s = standin(r, sqe, res, FAIL_AT_ISSUE, u);
		rewrite_standin_attempt(r, s, took, &taken);
		if (s && !took)
			s->cflags = cflags;
		return NULL;
	}
	if (!res) {
		rewrite_multi_poll(r, q);
		if (keep)
			q->want = keep;	/* RECV: the cap until the stream's first CQE */
	}
	/* The kernel runs the rest of the chain when the stream ends, so bufsel
	 * holds it until then (multi_end in completion.c). */
	uint8_t links = sqe->flags & SQE_LINK_FLAGS;
	q->flags |= (links ? REQ_LINKED : 0) | (links & IOSQE_IO_HARDLINK ? REQ_HARDLINK : 0);
	/* The first step is the program's SQE to the kernel: drained, it
	 * waits for what came before, and what comes after waits for it. */
	uint8_t drain = sqe->flags & IOSQE_IO_DRAIN;
	*sqe = q->next;
	sqe->flags |= drain;
	u->kind = q->receiving ? UNDO_SELECT : UNDO_REQ;
	u->req = q;
	return links ? q : NULL;
}
