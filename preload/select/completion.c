/*
 * The emulation of legacy provided buffers: the completion side.  A real
 * CQE whose user_data is one of bufsel's tags is turned into what the kernel
 * with the feature would have posted (the program's user_data, the result,
 * IORING_CQE_F_BUFFER and the bid), or into the next step of an emulated
 * request: a waiting receive whose poll fired gets its buffer and is issued,
 * a chain held behind a sentinel is issued or cancelled.
 *
 * Runs under the ring's cq_lock; anything that needs the SQ is queued on
 * r->ready and issued by rewrite_followup (followup.c) once cq_lock is
 * dropped.  The CQEs of TIMEOUTs bufsel counts are counting.c's, those of
 * requests it gave a skip flag skip.c's.
 */
#define _GNU_SOURCE
#include "preload/select/completion.h"

#include <errno.h>
#include <stddef.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "preload/select/bind.h"
#include "preload/select/bundle.h"
#include "preload/select/counting.h"
#include "preload/select/fd.h"
#include "preload/select/followup.h"
#include "preload/select/multishot.h"
#include "preload/select/recv.h"
#include "preload/select/req.h"
#include "preload/select/skip.h"
#include "preload/shadow/kernel_ops.h"
#include "preload/shadow/ring.h"
#include "preload/shadow/ring_io.h"
#include "preload/sys.h"
#include "preload/uaccess.h"
#include "preload/uring_abi.h"

/* Room in the program's CQ now. */
static unsigned shadow_room(const struct ring *r)
{
	const struct shadow *s = &r->sh;
	unsigned queued = atomic_load_explicit(s->cq_tail, memory_order_relaxed) -
			  atomic_load_explicit(s->cq_head, memory_order_acquire);
	return s->cq_entries - (queued < s->cq_entries ? queued : s->cq_entries);
}

/* No room for one more CQE: the shadow is full, or CQEs wait for room. */
static int cq_full(const struct ring *r)
{
	return shadow_room(r) <= r->x->synth.len;
}

/*
 * A RECVMSG's results the kernel wrote into bufsel's msghdr, written back to
 * the program's as the kernel writes them after a receive: a msghdr the
 * program can no longer write fails the receive with -EFAULT, although the
 * data was taken.  0 or -EFAULT.
 */
static int write_back_msghdr(const struct req *q)
{
	if (!q->prog_msg || !q->msg)
		return 0;
	const struct msghdr *m = q->msg;
	struct msghdr *pm = (struct msghdr *)(uintptr_t)q->prog_msg;
	if (copy_to_prog(&pm->msg_namelen, &m->msg_namelen, sizeof(m->msg_namelen)) ||
	    copy_to_prog(&pm->msg_flags, &m->msg_flags, sizeof(m->msg_flags)) ||
	    copy_to_prog(&pm->msg_controllen, &m->msg_controllen, sizeof(m->msg_controllen)))
		return -EFAULT;
	return 0;
}

/* What the kernel posts for the receive itself, and the rest of its chain. */
static int finish_recv(struct ring *r, struct req *q, struct io_uring_cqe *cqe, int succeeded)
{
	int post_it = 1;
	if ((q->flags & REQ_SKIP_SUCCESS) && succeeded)
		post_it = 0;
	if (q->timeout && q->timeout->stashed) {
		struct req *t = q->timeout;
		if (post_it) {
			complete_post(r, cqe);
			post_it = 0;
		}
		complete_post(r, &t->stash);
		req_free(&r->reqs, t);
		q->timeout = NULL;
	}
	rewrite_release(r, q);
	return post_it;
}

/*
 * IORING_CQE_F_SOCK_NONEMPTY as the program must see it.  A kernel older
 * than 5.19 does not report it, so then bufsel asks the socket itself;
 * BUFSEL_KERNEL makes that path run on newer kernels too.
 */
static unsigned sock_nonempty_asked(struct req *q, int res);

/* A kernel without the flag (before 5.19) never sets it: bufsel works it
 * out itself. */
static unsigned sock_nonempty(struct req *q, int res, unsigned kflags)
{
	if (kernel_sets_sock_nonempty())
		return kflags & IORING_CQE_F_SOCK_NONEMPTY;
	return sock_nonempty_asked(q, res);
}

/* The same flag, from the socket itself (no kernel CQE to take it from). */
static unsigned sock_nonempty_asked(struct req *q, int res)
{
	if (res < 0 || (q->orig.flags & IOSQE_FIXED_FILE))
		return 0;
	/* The kernel knows what is left only where the protocol reports it,
	 * on stream sockets; a datagram socket never gets the flag. */
	int v = 0, fd = q->orig.fd;
	if (req_sock_type(q) != SOCK_STREAM)
		return 0;
	if (sys_call3(SYS_ioctl, fd, FIONREAD, (long)&v) == 0 && v > 0)
		return IORING_CQE_F_SOCK_NONEMPTY;
	/* TCP counts a FIN that has arrived as still queued. */
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };
	if (req_sock_tcp(q) && (res == 0 || (sys_call3(SYS_poll, (long)&p, 1, 0) == 1 && (p.revents & POLLRDHUP))))
		return IORING_CQE_F_SOCK_NONEMPTY;
	return 0;
}

/* What a transfer used of the n entries it took from an incremental ring
 * (pool_ring_commit), as its CQE's flag; pool_lock held. */
static unsigned inc_commit(struct ring *r, const struct pool_buf *bufs, uint16_t n, uint32_t used)
{
	return pool_ring_commit(r->x->pool, bufs, n, used) ? IORING_CQE_F_BUF_MORE : 0;
}

static int incremental(struct ring *r, uint16_t bgid)
{
	return pool_ring_incremental(r->x->pool, bgid);
}

/*
 * A bundle's transfer of res bytes: the entries it touched are the
 * program's (io_bundle_nbufs: the last may be partly filled), the rest go
 * back to the ring; commit all, as a SEND's selection does.  Called with
 * pool_lock held.
 */
static unsigned bundle_settle(struct ring *r, struct req_bundle *bn, int res, int commit_all)
{
	uint16_t used = 0;
	uint32_t left = res > 0 ? (uint32_t)res : 0;
	/* (An incremental ring's SEND committed at selection: no entries here.) */
	if (left && incremental(r, bn->bufs[0].bgid)) {
		unsigned more = inc_commit(r, bn->bufs, bn->n, left);
		bn->n = 0;
		return more;
	}
	while (used < bn->n && (left || commit_all)) {
		const struct pool_buf *b = &bn->bufs[used++];
		uint32_t got = left < b->len ? left : b->len;
		pool_consume_bytes(r->x->pool, b, got);
		left -= got;
	}
	while (bn->n > used)
		pool_putback(r->x->pool, &bn->bufs[--bn->n]);
	bn->n = 0;
	return 0;
}

static int complete_recv_sel(struct ring *r, struct req *q, struct io_uring_cqe *cqe)
{
	/* MSG_TRUNC bufsel added: a datagram's whole length, the program
	 * gets what was copied, and the cut fails the receive. */
	int cut = (q->flags & REQ_TRUNC_ADDED) && cqe->res > (int)q->want;
	if (cut)
		cqe->res = (int)q->want;
	req_recv_unbound(&r->reqs, q);
	/* A READ that waited for data (REQ_RING_LAZY): end of file delivers
	 * its buffer, as a READ's does; it is no receive. */
	int read = !!(q->flags & REQ_RING_LAZY);
	if (!read)
		cqe->flags = (cqe->flags & ~IORING_CQE_F_SOCK_NONEMPTY) |
			     ((q->flags & REQ_NO_NONEMPTY) ? 0 : sock_nonempty(q, cqe->res, cqe->flags));
	if (cqe->res >= 0 && write_back_msghdr(q))
		cqe->res = -EFAULT;
	int got = read ? cqe->res >= 0 : cqe->res > 0;
	unsigned more = 0;
	if (q->flags & REQ_COMMITTED) {
		/* A READ of a regular file committed at selection (rewrite_bind_recv). */
		got = 1;
		more = q->cflags;
	}
	spin_lock(&r->x->pool_lock);
	if (q->flags & REQ_COMMITTED) {
		;
	} else if (q->bun && q->bun->n) {
		more = bundle_settle(r, q->bun, cqe->res, 0);
	} else if (got) {
		if (q->flags & REQ_DELIVERED)
			;
		else if (incremental(r, q->buf.bgid))
			more = inc_commit(r, &q->buf, 1, (uint32_t)cqe->res);
		else
			pool_consume_bytes(r->x->pool, &q->buf, (uint32_t)cqe->res);
	} else if (q->flags & REQ_KEEPS_BUF) {
		/* The kernels before 6.0 recycle nothing: an error or end of
		 * file reports the buffer; a cancellation frees it unreported. */
		if (!(q->flags & REQ_DELIVERED))
			pool_consume(r->x->pool, &q->buf);
		got = cqe->res != -ECANCELED;
	} else if (!(q->flags & REQ_DELIVERED)) {
		/* End of file or an error: the buffer goes back to the head. */
		pool_putback(r->x->pool, &q->buf);
	}
	spin_unlock(&r->x->pool_lock);
	cqe->user_data = q->user_data;
	if (got)
		cqe->flags |= cqe_buf_flags(q->buf.bid) | more;
	int ok = !cut && cqe->res >= 0 && !((q->flags & REQ_WAITALL) && (uint32_t)cqe->res < q->want) &&
		 !(read && (uint32_t)cqe->res != q->want);
	return finish_recv(r, q, cqe, ok);
}

/* The receive failed while it waited.  A LINK_TIMEOUT that fired came
 * first: the kernel posts the timeout's -ETIME before the request it
 * cancelled. */
static void fail_waiting_recv(struct ring *r, struct req *q, struct io_uring_cqe *cqe)
{
	struct req *t = q->timeout;
	if (t && t->stashed) {
		complete_post(r, &t->stash);
		req_free(&r->reqs, t);
		q->timeout = NULL;
	}
	complete_post(r, cqe);
}

/* How long a receive waited for data while holding no buffer. */
static void note_wait(struct ring *r, const struct req *q)
{
	spin_lock(&r->x->pool_lock);
	pool_note_wait(r->x->pool, q->orig.buf_group, now_ns() - q->wait_start);
	spin_unlock(&r->x->pool_lock);
}

/* A waiting receive ends without running: res is its CQE's result. */
static void recv_wait_fail(struct ring *r, struct req *q, int res)
{
	/* A NULL buffer a RECVMSG consumed is reported with the failure. */
	struct io_uring_cqe cqe = { .user_data = q->user_data, .res = res, .flags = res == -ENOBUFS ? q->cflags : 0 };
	fail_waiting_recv(r, q, &cqe);
	q->orig.opcode = 0xff;		/* nothing of the receive is left to issue */
	if ((q->orig.flags & IOSQE_IO_HARDLINK) && q->nheld) {
		rewrite_make_ready(r, q);	/* the chain goes on; its head is gone */
		return;
	}
	rewrite_cancel_held(r, q);
	rewrite_release(r, q);
}

/*
 * The kernel selects and receives in one step, so a receive it runs never
 * keeps a buffer out of the group for longer than that.  bufsel selects
 * when the poll fires and receives afterwards: until its receives in flight
 * come back (an end of file, say, gives the buffer back) the group may look
 * empty to a receive the kernel would have served.  Such a receive waits
 * here until a buffer comes back or none of bufsel's receives is left in
 * flight, and only then gets -ENOBUFS.
 */
static void park(struct ring *r, struct req *q)
{
	struct req **tail = &r->parked;
	while (*tail)
		tail = &(*tail)->next_parked;
	q->next_parked = NULL;
	*tail = q;
}

static void unpark(struct ring *r)
{
	for (struct req **p = &r->parked; *p;) {
		struct req *q = *p;
		int res = rewrite_bind_recv(r, q, 1);
		if (res == -ENOBUFS && !q->cflags && atomic_load_explicit(&r->reqs.bound_recvs, memory_order_relaxed)) {
			p = &q->next_parked;
			continue;
		}
		*p = q->next_parked;
		if (res)
			recv_wait_fail(r, q, res);
		else
			rewrite_make_ready(r, q);
	}
}

/*
 * The peer of a stream socket closed and nothing is queued: the receive
 * would select a buffer, read end of file and put the buffer straight back.
 * bufsel does just that, without issuing it, so a wave of closes holds no
 * buffers.  Only for a RECV that stands alone (no chain, no LINK_TIMEOUT,
 * no MSG_WAITALL), whose end is then its CQE alone.
 */
static int at_plain_eof(struct req *q, int revents)
{
	int v = 0;
	/* RECV only: a RECVMSG's end of file also writes the msghdr back. */
	if (q->orig.opcode != IORING_OP_RECV || q->nheld || q->timeout || (q->flags & REQ_WAITALL) ||
	    (q->orig.flags & IOSQE_FIXED_FILE) ||
	    !(revents & (POLLRDHUP | POLLHUP)) || (revents & POLLERR) || (q->orig.msg_flags & MSG_PEEK))
		return 0;
	if (req_sock_type(q) != SOCK_STREAM)
		return 0;
	return sys_call3(SYS_ioctl, q->orig.fd, FIONREAD, (long)&v) == 0 && v == 0;
}

/* The selection and put-back of a receive that met end of file: 0, -ENOBUFS,
 * or 1 when the head is a NULL buffer or one the kernel cannot write
 * (rewrite_bind_recv handles those). */
static int select_for_eof(struct ring *r, struct req *q)
{
	struct pool_buf b;
	spin_lock(&r->x->pool_lock);
	int res = pool_select_how(r->x->pool, q->orig.buf_group, &b, sel_how(&q->orig));
	if (!res) {
		pool_putback(r->x->pool, &b);
		if (!b.addr || rewrite_entry_unreachable(&b, q->want))
			res = 1;	/* the full selection decides what such an entry means */
	}
	spin_unlock(&r->x->pool_lock);
	return res;
}

static int complete_recv_wait(struct ring *r, struct req *q, struct io_uring_cqe *cqe)
{
	note_wait(r, q);
	int res;
	if (cqe->res < 0) {
		res = cqe->res;
	} else if (at_plain_eof(q, cqe->res) && (res = select_for_eof(r, q)) <= 0) {
		if (!res) {
			rewrite_post(r, q->user_data, 0, sock_nonempty_asked(q, 0));
			rewrite_release(r, q);
			return 0;
		}
	} else {
		res = rewrite_bind_recv(r, q, 0);
	}
	if (!res) {
		/* Data is there and a buffer is bound: issue the receive (and the
		 * chain behind it); the poll's CQE is bufsel's alone. */
		rewrite_make_ready(r, q);
		return 0;
	}
	if (res == -ENOBUFS && !q->cflags && atomic_load_explicit(&r->reqs.bound_recvs, memory_order_relaxed)) {
		park(r, q);
		return 0;
	}
	recv_wait_fail(r, q, res);
	return 0;
}

static int complete_read_sel(struct ring *r, struct req *q, struct io_uring_cqe *cqe)
{
	int post_it = 1;
	spin_lock(&r->x->pool_lock);
	/* An unregistered fixed file fails before selection; a READ from a
	 * file that polls (REQ_RING_LAZY) never committed its ring entry.  A
	 * buffer delivered without a CQE is rewrite_commit's to consume, before
	 * or after this: giving it back too would count it twice. */
	if (q->flags & REQ_COMMITTED) {
		/* Committed at selection: the buffer is reported whatever the
		 * read gave. */
		cqe->flags |= cqe_buf_flags(q->buf.bid) | q->cflags;
		if ((q->flags & REQ_SKIP_SUCCESS) && cqe->res >= 0 && (uint32_t)cqe->res == q->want)
			post_it = 0;
	} else if (((q->flags & REQ_FIXED_FILE) && cqe->res == -EBADF) || ((q->flags & REQ_RING_LAZY) && cqe->res < 0)) {
		if (!(q->flags & REQ_DELIVERED))
			pool_putback(r->x->pool, &q->buf);
	} else {
		unsigned more = 0;
		uint32_t got = cqe->res > 0 ? (uint32_t)cqe->res : 0;
		/* An incremental ring commits what a file that polls gave, else
		 * what was mapped, at selection (io_should_commit). */
		if (q->flags & REQ_DELIVERED)
			;
		else if (incremental(r, q->buf.bgid))
			more = inc_commit(r, &q->buf, 1, (q->flags & REQ_RING_LAZY) ? got : q->want);
		else
			pool_consume_bytes(r->x->pool, &q->buf, got);
		/* Before 6.0 a cancelled request frees its buffer unreported
		 * (LEGACY_KEEPS_ON_FAILURE). */
		if (!((q->flags & REQ_KEEPS_BUF) && cqe->res == -ECANCELED))
			cqe->flags |= cqe_buf_flags(q->buf.bid) | more;
		/* A read "succeeds" only if it got what it asked for: any other
		 * result fails it (the kernel compares with the length). */
		int ok = cqe->res >= 0 && (uint32_t)cqe->res == q->want;
		if ((q->flags & REQ_SKIP_SUCCESS) && ok)
			post_it = 0;
	}
	spin_unlock(&r->x->pool_lock);
	cqe->user_data = q->user_data;
	req_free(&r->reqs, q);
	return post_it;
}

/*
 * A multishot stream posted its last CQE: the rest of its chain (held since
 * submission) runs now, or gets -ECANCELED if the stream failed, unless the
 * link is a hard one.
 */
static void multi_end(struct ring *r, struct req *q, int res)
{
	if (q->nheld && (res >= 0 || (q->flags & REQ_HARDLINK))) {
		q->kind = REQ_SENTINEL;		/* only the held chain is left to issue */
		rewrite_make_ready(r, q);
		return;
	}
	rewrite_cancel_held(r, q);
	req_free(&r->reqs, q);
}

/* One step of a multishot receive came back. */
static int complete_recv_multi(struct ring *r, struct req *q, struct io_uring_cqe *cqe)
{
	int res = cqe->res;
	unsigned kflags = q->receiving ? sock_nonempty(q, res, cqe->flags) : 0;
	/* The last CQE keeps "more is queued" when a receive ended the stream
	 * (an end of file, a fault): the kernel's is set by what that
	 * receive saw, whatever its result. */
	unsigned nonempty = 0;
	cqe->user_data = q->user_data;
	cqe->flags = 0;
	if (q->receiving)
		req_recv_unbound(&r->reqs, q);
	if (!q->receiving) {
		note_wait(r, q);
		if (res < 0)
			goto end;
		if ((res = rewrite_multi_wake(r, q)) == -EBUSY)
			rewrite_multi_poll(r, q);	/* an incremental entry is out: its turn comes */
		else if (res)
			goto end;
		rewrite_make_ready(r, q);
		return 0;
	}
	int msg = q->orig.opcode == IORING_OP_RECVMSG;
	/* A bundle's step: its entries, how many it mapped, and whether it
	 * mapped the ring's last (then the stream ends with this CQE). */
	struct req_bundle *bn = q->bun && q->bun->n ? q->bun : NULL;
	uint16_t mapped = bn ? bn->n : 0;
	if (res > 0 || (msg && res == 0)) {
		struct io_uring_recvmsg_out out = {
			.namelen = msg ? q->msg->msg_namelen : 0,
			.controllen = msg ? (uint32_t)q->msg->msg_controllen : 0,
			.payloadlen = (uint32_t)res,
			.flags = msg ? (uint32_t)q->msg->msg_flags : 0,
		};
		/* The header the kernel writes at the buffer's start: where it
		 * cannot, the stream ends with -EFAULT and the buffer goes back. */
		if (msg && copy_to_prog((void *)(uintptr_t)q->buf.addr, &out, sizeof(out))) {
			spin_lock(&r->x->pool_lock);
			pool_putback(r->x->pool, &q->buf);
			spin_unlock(&r->x->pool_lock);
			res = -EFAULT;
			nonempty = kflags & IORING_CQE_F_SOCK_NONEMPTY;
			goto end;
		}
		/* With MSG_TRUNC a datagram's whole length comes back: the header
		 * says so (payloadlen), the result counts only what the buffer
		 * holds, as io_recvmsg_multishot clamps it. */
		if (msg && (size_t)res > q->iov.iov_len)
			res = (int)q->iov.iov_len;
		unsigned more = 0;
		/* What the buffer took: a RECVMSG's header and room for name
		 * and control as well. */
		uint32_t took = (uint32_t)res;
		if (msg)
			took += (uint32_t)(sizeof(out) + q->tmpl.msg_namelen + q->tmpl.msg_controllen);
		spin_lock(&r->x->pool_lock);
		if (bn)
			more = bundle_settle(r, bn, res, 0);
		else if (incremental(r, q->buf.bgid))
			more = inc_commit(r, &q->buf, 1, took);
		else
			pool_consume_bytes(r->x->pool, &q->buf, (uint32_t)res);
		spin_unlock(&r->x->pool_lock);
		/* An incremental entry that stays is there for the next receive. */
		if (more && !bn)
			q->emptied = 0;
		cqe->flags = cqe_buf_flags(q->buf.bid) | IORING_CQE_F_MORE | more |
			     (kflags & IORING_CQE_F_SOCK_NONEMPTY);
		if (bn && q->emptied) {
			/* io_recv_finish: a bundle with no more entries is done. */
			cqe->flags &= ~IORING_CQE_F_MORE;
			complete_post(r, cqe);
			multi_end(r, q, res);
			return 0;
		}
		if (msg) {
			/* The result counts the header and the room for name and
			 * control. */
			cqe->res = (int)(sizeof(out) + q->tmpl.msg_namelen + q->tmpl.msg_controllen) + res;
			if (res == 0) {
				/* End of file: the stream's last CQE still carries a buffer. */
				cqe->flags &= ~IORING_CQE_F_MORE;
				complete_post(r, cqe);
				multi_end(r, q, 0);
				return 0;
			}
		}
		q->want = 0;	/* a first cap (iovec, kept length) holds until the first CQE */
		/* io_recv_finish: optlen's byte limit reached ends the stream
		 * with this CQE; a bundle as long as the length asked for
		 * (IORING_RECV_MSHOT_CAP) goes to the back of the queue. */
		int limit_done = 0;
		if (q->mshot_lim) {
			q->mshot_left -= (uint32_t)res < q->mshot_left ? (uint32_t)res : q->mshot_left;
			limit_done = !q->mshot_left;
		}
		int capped = bn && q->orig.len && (uint32_t)res >= q->orig.len;
		if (limit_done) {
			cqe->flags &= ~IORING_CQE_F_MORE;
			complete_post(r, cqe);
			multi_end(r, q, res);
			return 0;
		}
		if (cq_full(r)) {
			/* io_req_post_cqe finds no room: the stream ends with
			 * this CQE, which overflows. */
			cqe->flags &= ~IORING_CQE_F_MORE;
			complete_post(r, cqe);
			multi_end(r, q, res);
			return 0;
		}
		complete_post(r, cqe);
		/* More is queued (or the socket cannot tell): the next buffer is
		 * taken at once, and an empty group ends the stream now, as the
		 * kernel's retry does.  Known empty: wait, or end with -EAGAIN if
		 * the request may not wait. */
		if ((kflags & IORING_CQE_F_SOCK_NONEMPTY) || q->inq_unknown) {
			/* 6.18 receives at most 32 more times in one go
			 * (MULTISHOT_MAX_RETRY), then queues the request again;
			 * one that may not wait ends there with -EAGAIN. */
			int requeue = ++q->loops > 32 || capped;
			if ((q->orig.msg_flags & MSG_DONTWAIT) && requeue) {
				res = -EAGAIN;
				goto end;
			}
			/* Queued again: it goes behind what else is ready (a
			 * poll that fires at once), for fairness among streams. */
			if (requeue) {
				rewrite_multi_poll(r, q);
				rewrite_make_ready(r, q);
				return 0;
			}
			/* The retry found the group as the receive left it: a
			 * PROVIDE the program submitted since came too late. */
			if (q->emptied) {
				q->cflags = 0;
				res = -ENOBUFS;
				goto end;
			}
			q->looping = 1;
			if ((res = rewrite_multi_recv(r, q)) == -EBUSY) {
				rewrite_multi_poll(r, q);
			} else if (res) {
				cqe->flags = 0;
				goto end;
			}
		} else if (q->orig.msg_flags & MSG_DONTWAIT) {
			res = -EAGAIN;
			goto end;
		} else {
			rewrite_multi_poll(r, q);
		}
		rewrite_make_ready(r, q);
		return 0;
	}
	spin_lock(&r->x->pool_lock);
	if (bn)
		bundle_settle(r, bn, 0, 0);
	else
		pool_putback(r->x->pool, &q->buf);
	spin_unlock(&r->x->pool_lock);
	if (res == -EOPNOTSUPP && q->orig.opcode == OP_READ_MULTISHOT_NR && !(q->flags & REQ_READ_WAITS)) {
		/* The step's RWF_NOWAIT, refused at prep (read_waits in
		 * multishot.c): nothing was read; it polls and reads again,
		 * as every later step does. */
		q->flags |= REQ_READ_WAITS;
		rewrite_multi_poll(r, q);
		rewrite_make_ready(r, q);
		return 0;
	}
	if (res == -EAGAIN && !(q->orig.msg_flags & MSG_DONTWAIT)) {
		/* The data went elsewhere: wait for more.  A RECV keeps the
		 * length of the buffer it tried (rewrite_first_attempt in recv.c);
		 * a bundle, only if it mapped one entry. */
		if (q->orig.opcode == IORING_OP_RECV && (!bn || mapped == 1))
			q->want = bn ? q->buf.len : q->next.len;
		rewrite_multi_poll(r, q);
		rewrite_make_ready(r, q);
		return 0;
	}
	nonempty = kflags & IORING_CQE_F_SOCK_NONEMPTY;
end:
	cqe->res = res;
	cqe->flags = res == -ENOBUFS ? q->cflags	/* a NULL buffer RECVMSG consumed */
				     : nonempty;
	complete_post(r, cqe);
	multi_end(r, q, res);
	return 0;
}

static int complete_one(struct ring *r, struct req *q, struct io_uring_cqe *cqe);

/* One SEND of a bundle came back: its buffer is the program's again (the
 * kernel consumes a legacy buffer whatever the send's result), and the
 * bundle goes on to the next buffer unless the send failed or its selection
 * emptied the group (io_send_finish). */
static int complete_send_bundle(struct ring *r, struct req *q, struct io_uring_cqe *cqe)
{
	int res = cqe->res;
	spin_lock(&r->x->pool_lock);
	unsigned more = 0;
	if (q->flags & REQ_COMMITTED)
		more = q->cflags;	/* an incremental ring's, at selection */
	else if (q->bun && q->bun->n)
		more = bundle_settle(r, q->bun, res, 1);
	else
		pool_consume_bytes(r->x->pool, &q->buf, res > 0 ? (uint32_t)res : 0);
	spin_unlock(&r->x->pool_lock);
	cqe->user_data = q->user_data;
	cqe->flags = cqe_buf_flags(q->buf.bid) | more;
	if (res <= 0 || q->emptied) {
		complete_post(r, cqe);
		multi_end(r, q, res);
		return 0;
	}
	cqe->flags |= IORING_CQE_F_MORE;
	complete_post(r, cqe);
	if ((res = rewrite_bundle_send(r, q))) {
		struct io_uring_cqe end = { .user_data = q->user_data, .res = res,
					    .flags = res == -ENOBUFS ? q->cflags : 0 };
		complete_post(r, &end);
		multi_end(r, q, res);
		return 0;
	}
	rewrite_make_ready(r, q);
	return 0;
}

/*
 * A ring shared across fork: each process's request table is its own, so a
 * CQE tagged by another process is left for that one to move (its mover
 * watches the ring from its first enter on it; the parent's from setup).
 * If that process is gone, nobody can answer it: the others take it, and
 * hide it (rewrite_complete_cqe).
 */
int rewrite_foreign_cqe(struct ring *r, const struct io_uring_cqe *cqe)
{
	uint64_t ud = cqe->user_data;
	if ((ud & REQ_TAG_MASK) != REQ_TAG_MAGIC)
		return 0;
	unsigned proc = req_tag_proc(ud);
	if (proc == REQ_PROC_ANY || proc == r->reqs.proc)
		return 0;
	int pid = r->x->proc_pid[proc];
	return pid > 0 && sys_call3(SYS_kill, pid, 0, 0) != -ESRCH;
}

int rewrite_complete_cqe(struct ring *r, struct io_uring_cqe *cqe)
{
	struct req *q = req_lookup(&r->reqs, cqe->user_data);
	if (!q) {
		/* A request of a process that died (above). */
		unsigned proc = req_tag_proc(cqe->user_data);
		return (cqe->user_data & REQ_TAG_MASK) != REQ_TAG_MAGIC || proc == REQ_PROC_ANY ||
		       proc == r->reqs.proc;
	}
	int post_it = complete_one(r, q, cqe);
	/* Any completion may have given a buffer back, or ended the last of
	 * bufsel's receives in flight. */
	if (r->parked)
		unpark(r);
	return post_it;
}

static int complete_one(struct ring *r, struct req *q, struct io_uring_cqe *cqe)
{
	switch (q->kind) {
	case REQ_STANDIN: {
		cqe->user_data = q->user_data;
		/* A stand-in that did not run as planned (a broken chain, a
		 * drain the ring refuses) reports what the kernel said. */
		int planned = cqe->res == q->expect || ((q->flags & REQ_STANDIN_POLL) && cqe->res > 0);
		if (planned) {
			cqe->res = q->res;
			cqe->flags = q->cflags;
		}
		int skipped = ((q->flags & REQ_SKIP_SUCCESS) && cqe->res >= 0) ||
			      ((q->flags & REQ_CHAIN_HIDDEN) && cqe->res == -ECANCELED);
		if (planned && cqe->res < 0 && (q->flags & REQ_SKIP_SUCCESS))
			rewrite_skip_hide_rest(r, q->chain_next);
		if (q->flags & REQ_STANDIN_BUF) {
			spin_lock(&r->x->pool_lock);
			if (cqe->res == q->res && (cqe->flags & IORING_CQE_F_BUFFER))
				pool_consume(r->x->pool, &q->buf);
			else
				pool_putback(r->x->pool, &q->buf);
			spin_unlock(&r->x->pool_lock);
		}
		req_free(&r->reqs, q);
		return !skipped;
	}
	case REQ_SKIP:
		return rewrite_complete_skip(r, q, cqe);
	case REQ_WATCH: {
		struct pool_seen seen = {
			.res = cqe->res, .buffer = !!(cqe->flags & IORING_CQE_F_BUFFER),
			.buf_more = !!(cqe->flags & IORING_CQE_F_BUF_MORE),
			.bundle = !!(q->flags & REQ_WATCH_BUNDLE),
			.bid = (uint16_t)(cqe->flags >> IORING_CQE_BUFFER_SHIFT),
		};
		spin_lock(&r->x->pool_lock);
		pool_ring_observe(r->x->pool, q->buf.bgid, &seen);
		spin_unlock(&r->x->pool_lock);
		cqe->user_data = q->user_data;
		if (!(cqe->flags & IORING_CQE_F_MORE))
			req_free(&r->reqs, q);
		return 1;
	}
	case REQ_READ_SEL:
		return complete_read_sel(r, q, cqe);
	case REQ_RECV_SEL:
		return complete_recv_sel(r, q, cqe);
	case REQ_RECV_WAIT:
		return complete_recv_wait(r, q, cqe);
	case REQ_RECV_MULTI:
		return complete_recv_multi(r, q, cqe);
	case REQ_SEND_BUNDLE:
		return complete_send_bundle(r, q, cqe);
	case REQ_PROBE:
		req_free(&r->reqs, q);
		return 0;
	case REQ_TIMEOUT:
		return rewrite_complete_timeout(r, q, cqe);
	case REQ_TIMEOUT_REMOVE:
		return rewrite_complete_timeout_remove(r, q, cqe);
	case REQ_CANCEL_ALL: {
		cqe->user_data = q->user_data;
		cqe->res = (cqe->res >= 0 ? cqe->res : 0) + q->res;
		int skipped = (q->flags & REQ_SKIP_SUCCESS) && cqe->res >= 0;
		req_free(&r->reqs, q);
		return !skipped;
	}
	case REQ_SENTINEL:
		if (cqe->res < 0) {
			rewrite_cancel_held(r, q);
			req_free(&r->reqs, q);
		} else {
			rewrite_make_ready(r, q);
		}
		return 0;
	case REQ_LINK_TIMEOUT: {
		struct req *owner = q->owner;
		cqe->user_data = q->user_data;
		if (owner && !(owner->flags & REQ_DONE) && owner->timeout == q) {
			q->stash = *cqe;
			q->stashed = 1;
			return 0;
		}
		if (owner && owner->timeout == q) {
			owner->timeout = NULL;
			req_free(&r->reqs, owner);
		}
		req_free(&r->reqs, q);
		return 1;
	}
	}
	return 1;
}
