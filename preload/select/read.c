/*
 * The opcodes that select at their first issue (SELECT_AT_ISSUE: READ,
 * READV, SEND): at once and for good from a regular file, from io-wq or for
 * a SEND; from a file that polls, the head entry decides at once and the
 * READ waits for data as a receive does (recv.c).  A SEND bundle goes to
 * bundle.c.
 */
#define _GNU_SOURCE
#include "preload/select/read.h"

#include <errno.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "preload/log.h"
#include "preload/select/bind.h"
#include "preload/select/bundle.h"
#include "preload/select/fd.h"
#include "preload/select/opdef.h"
#include "preload/select/prep.h"
#include "preload/select/recv.h"
#include "preload/select/req.h"
#include "preload/select/standin.h"
#include "preload/shadow/compat.h"
#include "preload/shadow/kernel_ops.h"
#include "preload/shadow/ring.h"
#include "preload/uring_abi.h"

/*
 * A READ from a buffer ring on a file that polls (a pipe, a socket, a tty):
 * the kernel takes the head entry, and keeps it only if data came
 * (io_should_commit: inline, and the file polls).  On an empty file the
 * READ waits holding nothing, and takes its buffer when data is there, as
 * a receive does; an error leaves the entry at the head.  Issued from
 * io-wq, or on a regular file, the entry is taken at once, for good.
 */
static int ring_read_lazy(struct ring *r, const struct io_uring_sqe *sqe, const struct opdef *def)
{
	return !def->sr_flags && !(sqe->flags & IOSQE_FIXED_FILE) && !r->to_wq &&
	       rewrite_group_kind(r, sqe) == POOL_EMULATED_RING && !rewrite_cannot_poll(sqe->fd);
}

/*
 * io_read's first attempt on a file that polls selects the head entry
 * without committing it and imports it before it reads, so the entry
 * decides at once, data or not: a NULL one is -ENOBUFS, one past the user
 * address space -EFAULT (import_ubuf); then a file not open for reading is
 * -EBADF (io_rw_init_file; only an idle file can be one, and waiting for
 * data there would wait for ever), a socket read at an offset -ESPIPE
 * (sock_read_iter); each leaves the entry at the head
 * (io_kbuf_recycle).  1: the entry is empty, and the read of nothing ends
 * at once.  0: the attempt goes on to the file.
 */
int rewrite_ring_read_attempt(const struct io_uring_sqe *sqe, uint32_t want, const struct pool_buf *head, int idle)
{
	int fixed = sqe->flags & IOSQE_FIXED_FILE;
	if (!head->addr)
		return -ENOBUFS;
	if (rewrite_entry_unreachable(head, want))
		return -EFAULT;
	if (!fixed && idle && rewrite_write_only(sqe->fd))
		return -EBADF;
	if (!fixed && sqe->off && sqe->off != UINT64_MAX && fd_sock_type(sqe->fd) > 0)
		return -ESPIPE;
	return !rewrite_sel_len(want, head->len);
}

/*
 * Under BUFSEL_KERNEL only: a legacy READ of nothing (LEGACY_LEN0_READS_NOTHING)
 * on an empty pipe without FMODE_NOWAIT (before 5.12) is punted to a poll,
 * holding the buffer it selected, and reads nothing once data is there;
 * 6.18's pipe ends it at once.  On such a kernel beneath, the kernel waits
 * itself.
 */
static int len0_waits(struct ring *r, const struct io_uring_sqe *sqe, uint32_t want)
{
	return compat_emulating() && !want && sqe->opcode == IORING_OP_READ && !(sqe->flags & IOSQE_FIXED_FILE) &&
	       kernel_rule(KERNEL_PIPES_BLOCK) && rewrite_legacy_rule(r, sqe, LEGACY_LEN0_READS_NOTHING) &&
	       fd_is_pipe(sqe->fd) && !fd_readable(sqe->fd);
}

static struct req *select_read(struct ring *r, struct io_uring_sqe *sqe, const struct opdef *def,
			       struct rewrite_undo *u)
{
	uint32_t want;
	int res = rewrite_read_request(sqe, def, &want, NULL);
	if (res) {
		standin(r, sqe, res, FAIL_AT_PREP, u);
		return NULL;
	}
	if (rewrite_left_to_kernel_bad_fd(r, sqe, def))
		return NULL;
	if (!def->sr_flags && !(sqe->flags & IOSQE_FIXED_FILE) && rewrite_legacy_rule(r, sqe, LEGACY_READ_MODE_AT_PREP) &&
	    rewrite_write_only(sqe->fd)) {
		standin(r, sqe, -EBADF, FAIL_AT_PREP, u);
		return NULL;
	}
	if (rewrite_not_a_socket(sqe, def)) {
		standin(r, sqe, -ENOTSOCK, FAIL_AT_ISSUE, u);
		return NULL;
	}
	if (def->sr_flags && rewrite_poll_first_ends_at_once(r, sqe)) {
		standin(r, sqe, -EAGAIN, FAIL_AT_ISSUE, u);	/* io_send: before it selects */
		return NULL;
	}
	struct msghdr none = { 0 };
	if (len0_waits(r, sqe, want)) {
		struct pool_buf b;
		spin_lock(&r->x->pool_lock);
		res = pool_select_how(r->x->pool, sqe->buf_group, &b, sel_how(sqe));
		spin_unlock(&r->x->pool_lock);
		if (res)
			standin(r, sqe, res, FAIL_AT_ISSUE, u);
		else
			standin_takes(r, standin(r, sqe, 0, SUCCEED_WHEN_READABLE, u), &b);
		return NULL;
	}
	if (!ring_read_lazy(r, sqe, def)) {
		uint32_t old = def->sr_flags ? 0 : rewrite_legacy_recv_flags(r, sqe) & REQ_KEEPS_BUF;
		/* An incremental ring's entry out with a transfer: a READ
		 * waits its turn (as on a file that polls); a SEND cannot. */
		int sel = rewrite_select_now(r, sqe, def, want, NULL, u, 0);
		if (u->kind == UNDO_SELECT)
			u->req->flags |= old;
		if (sel == -EBUSY) {
			if (!def->sr_flags)
				return recv_defer(r, sqe, want, &none, u);
			log_once(BUFSEL_LOG_WARN, ONCE_RING_INC_SEND,
				 "a SEND selected from incremental ring %u while a receive had its entry: -ENOBUFS",
				 sqe->buf_group);
			standin(r, sqe, -ENOBUFS, FAIL_AT_ISSUE, u);
		}
		return NULL;
	}
	int readable = fd_readable(sqe->fd);
	struct pool_buf head;
	spin_lock(&r->x->pool_lock);
	res = pool_head_how(r->x->pool, sqe->buf_group, &head, sel_how(sqe));
	spin_unlock(&r->x->pool_lock);
	if (!res)
		res = rewrite_ring_read_attempt(sqe, want, &head, !readable);
	if (res < 0) {
		standin(r, sqe, res, FAIL_AT_ISSUE, u);
		return NULL;
	}
	/* With RWF_NOWAIT the attempt is the whole request, and on an idle
	 * file -EAGAIN, answered here: handed on, it would hold the entry
	 * until bufsel reaps it, where the kernel gives it back before the
	 * next SQE selects. */
	int nowait = sqe->rw_flags & RWF_NOWAIT;
	if (!readable && !res && nowait) {
		standin(r, sqe, -EAGAIN, FAIL_AT_ISSUE, u);
		return NULL;
	}
	/* The read of nothing ends at once, from bufsel: handed on, it would
	 * wait for data on a pipe without FMODE_NOWAIT (before 5.12).  Not
	 * one whose CQE may be skipped, which the stand-in needs to take the
	 * entry. */
	if (res == 1 && !readable && !(sqe->flags & IOSQE_CQE_SKIP_SUCCESS) && !rewrite_incremental_group(r, sqe)) {
		struct pool_buf b;
		spin_lock(&r->x->pool_lock);
		int taken = !pool_select_how(r->x->pool, sqe->buf_group, &b, sel_how(sqe));
		spin_unlock(&r->x->pool_lock);
		if (taken) {
			standin_takes(r, standin(r, sqe, 0, SUCCEED, u), &b);
			return NULL;
		}
	}
	/* An incremental ring's READ takes its entry in turn, when data is
	 * there (rewrite_bind_recv). */
	if ((!readable || rewrite_incremental_group(r, sqe)) && !nowait && !res) {
		/* The attempt clamped the request's length to the head entry's
		 * (io_ring_buffer_select), and the retry keeps it, as a RECV's
		 * does (rewrite_first_attempt). */
		if (!rewrite_incremental_group(r, sqe))
			want = rewrite_sel_len(want, head.len);
		return recv_defer(r, sqe, want, &none, u);
	}
	if (rewrite_select_now(r, sqe, def, want, NULL, u, 1) == -EBUSY)
		standin(r, sqe, -EAGAIN, FAIL_AT_ISSUE, u);	/* NOWAIT: it would have to wait */
	else if (u->kind == UNDO_SELECT)
		rewrite_batch_recv_add(r, u->req, 0);	/* a fault on the entry gives it back */
	return NULL;
}

struct req *rewrite_select_issue(struct ring *r, struct io_uring_sqe *sqe, const struct opdef *def,
				 struct rewrite_undo *u)
{
	if (!def->bundle || !(sqe->ioprio & IORING_RECVSEND_BUNDLE))
		return select_read(r, sqe, def, u);
	uint32_t want;
	int res = rewrite_read_request(sqe, def, &want, NULL);
	if (res) {
		standin(r, sqe, res, FAIL_AT_PREP, u);
		return NULL;
	}
	if (rewrite_bad_fd(r, sqe))
		res = -EBADF;
	else if (rewrite_not_a_socket(sqe, def))
		res = -ENOTSOCK;
	else if (rewrite_poll_first_ends_at_once(r, sqe))
		res = -EAGAIN;
	if (res) {
		standin(r, sqe, res, FAIL_AT_ISSUE, u);
		return NULL;
	}
	return rewrite_select_send_bundle(r, sqe, u);
}
