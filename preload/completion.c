/*
 * The emulation of legacy provided buffers: the completion side.  A real
 * CQE whose user_data is one of bufsel's tags is turned into what the kernel
 * with the feature would have posted (the program's user_data, the result,
 * IORING_CQE_F_BUFFER and the bid), or into the next step of an emulated
 * request: a waiting receive whose poll fired gets its buffer and is issued,
 * a chain held behind a sentinel is issued or cancelled.
 *
 * Runs under the ring's cq_lock; anything that needs the SQ is queued on
 * r->ready and issued by rewrite_followup once cq_lock is dropped.
 */
#define _GNU_SOURCE
#include "preload/rewrite.h"

#include <errno.h>
#include <stddef.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "preload/log.h"
#include "preload/req.h"
#include "preload/ring.h"
#include "preload/ring_io.h"
#include "preload/sys.h"
#include "preload/uaccess.h"
#include "preload/uring_abi.h"

static void post(struct ring *r, uint64_t ud, int res, unsigned flags)
{
	struct io_uring_cqe c = { .user_data = ud, .res = res, .flags = flags };
	complete_post(r, &c);
}

/* The held SQEs will never run: each gets -ECANCELED, as a broken chain's do. */
static void cancel_held(struct ring *r, struct req *q)
{
	for (uint32_t i = 0; i < q->nheld; i++)
		post(r, q->held[i].user_data, -ECANCELED, 0);
	q->nheld = 0;
}

static void make_ready(struct ring *r, struct req *q)
{
	struct req **tail = &r->ready;
	while (*tail)
		tail = &(*tail)->next_ready;
	q->next_ready = NULL;
	*tail = q;
}

static void release(struct ring *r, struct req *q)
{
	if (q->timeout) {
		/* Its LINK_TIMEOUT's CQE is still to come, and goes after ours. */
		q->flags |= REQ_DONE;
		return;
	}
	req_free(&r->reqs, q);
}

/* What the kernel posts for the receive itself, and the rest of its chain. */
static int finish_recv(struct ring *r, struct req *q, struct io_uring_cqe *cqe, int succeeded)
{
	int post_it = 1;
	if (q->prog_msg && q->msg) {
		/* The kernel wrote these into bufsel's msghdr. */
		const struct msghdr *m = q->msg;
		struct msghdr *pm = (struct msghdr *)(uintptr_t)q->prog_msg;
		copy_to_prog(&pm->msg_namelen, &m->msg_namelen, sizeof(m->msg_namelen));
		copy_to_prog(&pm->msg_controllen, &m->msg_controllen, sizeof(m->msg_controllen));
		copy_to_prog(&pm->msg_flags, &m->msg_flags, sizeof(m->msg_flags));
	}
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
	release(r, q);
	return post_it;
}

/*
 * IORING_CQE_F_SOCK_NONEMPTY as the program must see it.  A kernel older
 * than 5.19 does not report it, so then bufsel asks the socket itself;
 * BUFSEL_KERNEL makes that path run on newer kernels too.
 */
static unsigned sock_nonempty(const struct req *q, int res, unsigned kflags)
{
	if (!bufsel.conf.kernel || bufsel.conf.kernel >= KERNEL_SOCK_NONEMPTY)
		return kflags & IORING_CQE_F_SOCK_NONEMPTY;
	if (res < 0 || (q->orig.flags & IOSQE_FIXED_FILE))
		return 0;
	/* The kernel knows what is left only where the protocol reports it,
	 * on stream sockets; a datagram socket never gets the flag. */
	int v = 0, fd = q->orig.fd;
	socklen_t len = sizeof(v);
	if (sys_call6(SYS_getsockopt, fd, SOL_SOCKET, SO_TYPE, (long)&v, (long)&len, 0) || v != SOCK_STREAM)
		return 0;
	if (sys_call3(SYS_ioctl, fd, FIONREAD, (long)&v) == 0 && v > 0)
		return IORING_CQE_F_SOCK_NONEMPTY;
	/* TCP counts a FIN that has arrived as still queued. */
	len = sizeof(v);
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };
	int tcp = sys_call6(SYS_getsockopt, fd, SOL_SOCKET, SO_PROTOCOL, (long)&v, (long)&len, 0) == 0 &&
		  v == IPPROTO_TCP;
	if (tcp && (res == 0 || (sys_call3(SYS_poll, (long)&p, 1, 0) == 1 && (p.revents & POLLRDHUP))))
		return IORING_CQE_F_SOCK_NONEMPTY;
	return 0;
}

static int complete_recv_sel(struct ring *r, struct req *q, struct io_uring_cqe *cqe)
{
	cqe->flags = (cqe->flags & ~IORING_CQE_F_SOCK_NONEMPTY) | sock_nonempty(q, cqe->res, cqe->flags);
	int got = cqe->res > 0;
	spin_lock(&r->pool_lock);
	if (got) {
		if (!(q->flags & REQ_DELIVERED))
			pool_consume_bytes(r->pool, &q->buf, (uint32_t)cqe->res);
	} else if (!(q->flags & REQ_DELIVERED)) {
		/* End of file or an error: the buffer goes back to the head. */
		pool_putback(r->pool, &q->buf);
	}
	spin_unlock(&r->pool_lock);
	cqe->user_data = q->user_data;
	if (got)
		cqe->flags |= IORING_CQE_F_BUFFER | ((uint32_t)q->buf.bid << IORING_CQE_BUFFER_SHIFT);
	int ok = cqe->res >= 0 && !((q->flags & REQ_WAITALL) && (uint32_t)cqe->res < q->want);
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
	spin_lock(&r->pool_lock);
	pool_note_wait(r->pool, q->orig.buf_group, now_ns() - q->wait_start);
	spin_unlock(&r->pool_lock);
}

static int complete_recv_wait(struct ring *r, struct req *q, struct io_uring_cqe *cqe)
{
	note_wait(r, q);
	int res = cqe->res < 0 ? cqe->res : rewrite_bind_recv(r, q);
	if (!res) {
		/* Data is there and a buffer is bound: issue the receive (and the
		 * chain behind it); the poll's CQE is bufsel's alone. */
		make_ready(r, q);
		return 0;
	}
	cqe->user_data = q->user_data;
	cqe->res = res;
	cqe->flags = res == -ENOBUFS ? q->cflags : 0;	/* a NULL buffer RECVMSG consumed */
	fail_waiting_recv(r, q, cqe);
	q->orig.opcode = 0xff;		/* nothing of the receive is left to issue */
	if ((q->orig.flags & IOSQE_IO_HARDLINK) && q->nheld) {
		make_ready(r, q);	/* the chain goes on; its head is gone */
		return 0;
	}
	cancel_held(r, q);
	release(r, q);
	return 0;
}

static int complete_read_sel(struct ring *r, struct req *q, struct io_uring_cqe *cqe)
{
	int post_it = 1;
	spin_lock(&r->pool_lock);
	if ((q->flags & REQ_FIXED_FILE) && cqe->res == -EBADF) {
		/* An unregistered fixed file fails before selection. */
		pool_putback(r->pool, &q->buf);
	} else {
		if (!(q->flags & REQ_DELIVERED))
			pool_consume_bytes(r->pool, &q->buf, cqe->res > 0 ? (uint32_t)cqe->res : 0);
		cqe->flags |= IORING_CQE_F_BUFFER | ((uint32_t)q->buf.bid << IORING_CQE_BUFFER_SHIFT);
		/* A read "succeeds" only if it got what it asked for: any other
		 * result fails it (the kernel compares with the length). */
		int ok = cqe->res >= 0 && (uint32_t)cqe->res == q->want;
		if ((q->flags & REQ_SKIP_SUCCESS) && ok)
			post_it = 0;
	}
	spin_unlock(&r->pool_lock);
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
		make_ready(r, q);
		return;
	}
	cancel_held(r, q);
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
	if (!q->receiving) {
		note_wait(r, q);
		if (res < 0)
			goto end;
		if ((res = rewrite_multi_recv(r, q)))
			goto end;
		make_ready(r, q);
		return 0;
	}
	int msg = q->orig.opcode == IORING_OP_RECVMSG;
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
			spin_lock(&r->pool_lock);
			pool_putback(r->pool, &q->buf);
			spin_unlock(&r->pool_lock);
			res = -EFAULT;
			nonempty = kflags & IORING_CQE_F_SOCK_NONEMPTY;
			goto end;
		}
		spin_lock(&r->pool_lock);
		pool_consume_bytes(r->pool, &q->buf, (uint32_t)res);
		spin_unlock(&r->pool_lock);
		cqe->flags = IORING_CQE_F_BUFFER | IORING_CQE_F_MORE |
			     (kflags & IORING_CQE_F_SOCK_NONEMPTY) |
			     ((uint32_t)q->buf.bid << IORING_CQE_BUFFER_SHIFT);
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
		complete_post(r, cqe);
		/* More is queued (or the socket cannot tell): the next buffer is
		 * taken at once, and an empty group ends the stream now, as the
		 * kernel's retry does.  Known empty: wait, or end with -EAGAIN if
		 * the request may not wait. */
		if ((kflags & IORING_CQE_F_SOCK_NONEMPTY) || q->inq_unknown) {
			/* 6.18 receives at most 32 more times in one go
			 * (MULTISHOT_MAX_RETRY), then queues the request again;
			 * one that may not wait ends there with -EAGAIN. */
			if ((q->orig.msg_flags & MSG_DONTWAIT) && ++q->loops > 32) {
				res = -EAGAIN;
				goto end;
			}
			if ((res = rewrite_multi_recv(r, q))) {
				cqe->flags = 0;
				goto end;
			}
		} else if (q->orig.msg_flags & MSG_DONTWAIT) {
			res = -EAGAIN;
			goto end;
		} else {
			rewrite_multi_poll(r, q);
		}
		make_ready(r, q);
		return 0;
	}
	spin_lock(&r->pool_lock);
	pool_putback(r->pool, &q->buf);
	spin_unlock(&r->pool_lock);
	if (res == -EAGAIN && !(q->orig.msg_flags & MSG_DONTWAIT)) {
		/* The data went elsewhere: wait for more.  A RECV keeps the
		 * length of the buffer it tried (first_attempt in rewrite.c). */
		if (q->orig.opcode == IORING_OP_RECV)
			q->want = q->next.len;
		rewrite_multi_poll(r, q);
		make_ready(r, q);
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

int rewrite_complete_cqe(struct ring *r, struct io_uring_cqe *cqe)
{
	struct req *q = req_lookup(&r->reqs, cqe->user_data);
	if (!q)
		return 1;
	switch (q->kind) {
	case REQ_STANDIN:
		cqe->user_data = q->user_data;
		/* A stand-in that did not run as planned (a broken chain, a
		 * drain the ring refuses) reports what the kernel said. */
		if (cqe->res == q->expect) {
			cqe->res = q->res;
			cqe->flags = q->cflags;
		}
		if (q->flags & REQ_STANDIN_BUF) {
			spin_lock(&r->pool_lock);
			if (cqe->res == q->res && (cqe->flags & IORING_CQE_F_BUFFER))
				pool_consume(r->pool, &q->buf);
			else
				pool_putback(r->pool, &q->buf);
			spin_unlock(&r->pool_lock);
		}
		req_free(&r->reqs, q);
		return 1;
	case REQ_READ_SEL:
		return complete_read_sel(r, q, cqe);
	case REQ_RECV_SEL:
		return complete_recv_sel(r, q, cqe);
	case REQ_RECV_WAIT:
		return complete_recv_wait(r, q, cqe);
	case REQ_RECV_MULTI:
		return complete_recv_multi(r, q, cqe);
	case REQ_PROBE:
		req_free(&r->reqs, q);
		return 0;
	case REQ_CANCEL_ALL:
		cqe->user_data = q->user_data;
		cqe->res = (cqe->res >= 0 ? cqe->res : 0) + q->res;
		req_free(&r->reqs, q);
		return 1;
	case REQ_SENTINEL:
		if (cqe->res < 0) {
			cancel_held(r, q);
			req_free(&r->reqs, q);
		} else {
			make_ready(r, q);
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

void rewrite_followup(struct ring *r)
{
	if (!r->ready)
		return;
	spin_lock(&r->cq_lock);
	struct req *list = r->ready;
	r->ready = NULL;
	spin_unlock(&r->cq_lock);
	if (!list)
		return;

	spin_lock(&r->sq_lock);
	unsigned placed = 0;
	for (struct req *q = list, *next; q; q = next) {
		next = q->next_ready;
		const struct io_uring_sqe *first = q->kind == REQ_RECV_SEL     ? &q->orig
						   : q->kind == REQ_RECV_MULTI ? &q->next
									       : NULL;
		/* A stream's next step goes alone: its chain waits for its end. */
		int multi = q->kind == REQ_RECV_MULTI;
		int n = submit_held(r, first, multi ? NULL : q->held, multi ? 0 : q->nheld);
		if (n < 0) {
			log_error("no room in the real SQ for a held chain: its SQEs are cancelled");
			spin_lock(&r->cq_lock);
			if (first)
				post(r, q->user_data, -EBUSY, 0);
			cancel_held(r, q);
			spin_unlock(&r->cq_lock);
			n = 0;
		}
		placed += (unsigned)n;
		if (!multi)
			q->nheld = 0;
		if (q->kind == REQ_SENTINEL || (q->kind == REQ_RECV_WAIT && !first))
			release(r, q);
	}
	if (placed || (r->setup_flags & IORING_SETUP_SQPOLL)) {
		long ret = sys_call6(__NR_io_uring_enter, r->priv_fd, placed, 0,
				     r->setup_flags & IORING_SETUP_SQPOLL ? IORING_ENTER_SQ_WAKEUP : 0, 0, 0);
		if (ret >= 0 && (unsigned long)ret < placed && !(r->setup_flags & IORING_SETUP_SQPOLL))
			log_error("the kernel took %ld of %u held SQEs", ret, placed);
	}
	spin_unlock(&r->sq_lock);
}
