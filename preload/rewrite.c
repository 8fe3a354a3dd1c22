/*
 * The emulation of legacy provided buffers on the real ring: the drain side.
 * The kernel never sees IORING_OP_PROVIDE_BUFFERS, IORING_OP_REMOVE_BUFFERS
 * or IOSQE_BUFFER_SELECT on a legacy group.
 *
 * - An emulated opcode runs against the pool when the kernel would issue it,
 *   and leaves a stand-in in its slot, so its CQE comes in the kernel's order
 *   and link chains fail or go on as the kernel decides: a NOP for success,
 *   an SQE that fails at prep for an error the kernel finds at submission,
 *   one that fails at issue for an error it finds when the request runs.
 * - A buffer-select READ gets its buffer at its first issue and keeps it.
 * - A buffer-select RECV takes a buffer only once its socket has data: if it
 *   has none at the first attempt, a POLL_ADD stands in and the receive is
 *   issued, on a buffer selected then, when the poll fires.
 * - "When the kernel would issue it" is at submission for the head of a
 *   chain; for an SQE later in a chain, bufsel cuts the chain with a sentinel
 *   NOP and holds the rest until the sentinel's CQE says the SQEs before it
 *   are done (completion.c issues what was held).
 *
 * The pool is shared with the completion path, hence pool_lock.
 */
#define _GNU_SOURCE
#include "preload/rewrite.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <linux/capability.h>

#include "preload/bufring.h"
#include "preload/compat.h"
#include "preload/heap.h"
#include "preload/kernel_ops.h"
#include "preload/log.h"
#include "preload/opdef.h"
#include "preload/req.h"
#include "preload/ring.h"
#include "preload/state.h"
#include "preload/sys.h"
#include "preload/uaccess.h"
#include "preload/uring_abi.h"

/* io_init_req's flag rules, for SQEs whose effects bufsel applies itself. */
#define SQE_VALID_FLAGS                                                                  \
	(IOSQE_FIXED_FILE | IOSQE_IO_DRAIN | IOSQE_IO_LINK | IOSQE_IO_HARDLINK |         \
	 IOSQE_ASYNC | IOSQE_BUFFER_SELECT | IOSQE_CQE_SKIP_SUCCESS)
#define SQE_LINK_FLAGS (IOSQE_IO_LINK | IOSQE_IO_HARDLINK)
#ifndef IORING_TIMEOUT_MULTISHOT
#define IORING_TIMEOUT_MULTISHOT (1U << 6)	/* 6.4 */
#endif

/* A user_data no request can have: bufsel's own tag space, generation 0xffff
 * of a slot that never exists. */
#define NO_SUCH_REQUEST (REQ_TAG_MAGIC | 0x0000ffffffffffffULL)

static void pool_locked_putback(struct ring *r, const struct pool_buf *b)
{
	spin_lock(&r->x->pool_lock);
	pool_putback(r->x->pool, b);
	spin_unlock(&r->x->pool_lock);
}

static void pool_locked_consume(struct ring *r, const struct pool_buf *b)
{
	spin_lock(&r->x->pool_lock);
	pool_consume(r->x->pool, b);
	spin_unlock(&r->x->pool_lock);
}

/* ---- stand-ins ---- */

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
static struct req *standin(struct ring *r, struct io_uring_sqe *sqe, int res, enum standin_class c,
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
static void standin_takes(struct ring *r, struct req *s, const struct pool_buf *b)
{
	if (!b)
		return;
	if (!s) {
		pool_locked_putback(r, b);
		return;
	}
	s->buf = *b;
	s->flags |= REQ_STANDIN_BUF;
	s->cflags = cqe_buf_flags(b->bid);
}

/* Success with res 0 needs no request: the program's own user_data rides a NOP. */
static void standin_ok(struct io_uring_sqe *sqe)
{
	clear_sqe(sqe, IORING_OP_NOP, sqe->user_data);
}

/* The generic checks io_init_req makes before an opcode's own prep. */
static int init_check(struct ring *r, const struct io_uring_sqe *sqe)
{
	if (sqe->flags & ~SQE_VALID_FLAGS)
		return -EINVAL;
	if ((sqe->flags & IOSQE_IO_DRAIN) && r->x->drain_disabled)
		return -EOPNOTSUPP;
	return 0;
}

/* ioprio_check_cap (block/ioprio.c), for io_prep_rw: 0 or the error. */
static int ioprio_check(uint16_t ioprio)
{
	unsigned class = ioprio >> 13, level = ioprio & 7;
	if (class == 1) {		/* RT: CAP_SYS_NICE or CAP_SYS_ADMIN */
		struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
		struct __user_cap_data_struct d[2] = { 0 };
		if (sys_call3(SYS_capget, (long)&h, (long)d, 0) ||
		    !(d[0].effective & ((1U << CAP_SYS_NICE) | (1U << CAP_SYS_ADMIN))))
			return -EPERM;
		return 0;
	}
	if (class == 2 || class == 3)	/* BE: every 3-bit level is valid; IDLE */
		return 0;
	return class == 0 && !level ? 0 : -EINVAL;
}

void rewrite_note_personality(struct ring *r, unsigned opcode, unsigned id, long ret)
{
	spin_lock(&r->x->sq_lock);
	if (opcode == IORING_REGISTER_PERSONALITY && ret > 0) {
		if (r->npersonality < sizeof(r->personality) / sizeof(r->personality[0]))
			r->personality[r->npersonality++] = (uint16_t)ret;
		else
			r->personality_overflow = 1;
	} else if (opcode == IORING_UNREGISTER_PERSONALITY && ret == 0) {
		for (unsigned i = 0; i < r->npersonality; i++)
			if (r->personality[i] == id)
				r->personality[i] = r->personality[--r->npersonality];
	}
	spin_unlock(&r->x->sq_lock);
}

void rewrite_note_files(struct ring *r, unsigned opcode, const void *arg, unsigned nr_args)
{
	unsigned nr = 0;
	if (opcode == IORING_REGISTER_FILES) {
		nr = nr_args;
	} else if (opcode == IORING_REGISTER_FILES2) {
		struct io_uring_rsrc_register rr;
		if (copy_from_prog(&rr, arg, sizeof(rr)))
			return;
		nr = rr.nr;
	}
	spin_lock(&r->x->sq_lock);
	r->files_nr = nr;
	spin_unlock(&r->x->sq_lock);
}

/* A descriptor the kernel cannot resolve: a plain fd that is not open, or a
 * fixed-file index past the ring's table (io_file_get_fixed: -EBADF). */
static int bad_file(const struct ring *r, const struct io_uring_sqe *sqe)
{
	if (sqe->flags & IOSQE_FIXED_FILE)
		return (unsigned)sqe->fd >= r->files_nr;
	return sys_call3(SYS_fcntl, sqe->fd, F_GETFD, 0) < 0;
}

/* io_init_req: a personality the ring does not have is -EINVAL. */
static int personality_check(const struct ring *r, uint16_t id)
{
	if (!id || r->personality_overflow)
		return 0;
	for (unsigned i = 0; i < r->npersonality; i++)
		if (r->personality[i] == id)
			return 0;
	return -EINVAL;
}

#define RW_ATTR_FLAG_PI 1ULL	/* the only attribute 6.18 knows */

/* sqe->attr_type_mask, where older headers have __pad2[0]. */
static uint64_t sqe_attr_type_mask(const struct io_uring_sqe *sqe)
{
	uint64_t mask;
	memcpy(&mask, (const char *)sqe + 56, sizeof(mask));
	return mask;
}

#define MAX_RW_COUNT_KERNEL (INT_MAX & ~4095u)

/* io_prep_rw_pi: the attribute at sqe->attr_ptr (addr3) is read, its
 * reserved word must be 0, and its buffer must be user memory.  struct
 * io_uring_attr_pi (6.15, which older headers lack), as four words: flags,
 * app_tag and len; addr; seed; rsvd. */
static int pi_attr_check(const struct io_uring_sqe *sqe)
{
	uint64_t pi[4];
	if (copy_from_prog(pi, (const void *)(uintptr_t)sqe->addr3, sizeof(pi)))
		return -EFAULT;
	if (pi[3])
		return -EINVAL;
	uint32_t plen = (uint32_t)(pi[0] >> 32);
	uint64_t len = plen > MAX_RW_COUNT_KERNEL ? MAX_RW_COUNT_KERNEL : plen, end;
	if (__builtin_add_overflow(pi[1], len, &end) || end > POOL_USER_END)
		return -EFAULT;
	return 0;
}

/* The length a selection gives a request that asks for want bytes (0: the
 * whole entry), as io_ring_buffer_select clamps it. */
static uint32_t sel_len(uint32_t want, uint32_t len)
{
	return want && want < len ? want : len;
}

/* A selected entry's length as the SQE handed on may carry it: the kernel's
 * own request imports the entry capped at MAX_RW_COUNT (import_ubuf), where
 * a plain RECV or READ of more than INT_MAX bytes is refused. */
static uint32_t rw_count(uint32_t len)
{
	return len > MAX_RW_COUNT_KERNEL ? MAX_RW_COUNT_KERNEL : len;
}

static int write_only(int fd);

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
static int legacy_rule(struct ring *r, const struct io_uring_sqe *sqe, unsigned rule)
{
	return (kernel_legacy_rules() & rule) && (legacy_rules_of(r, sqe) & rule);
}

/* access_ok for a range the kernel takes whole: 0 or -EFAULT. */
static int user_range_check(uint64_t addr, uint64_t len)
{
	uint64_t end;
	return __builtin_add_overflow(addr, len, &end) || end > POOL_USER_END ? -EFAULT : 0;
}

/* __import_iovec at prep (READV, WRITEV without buffer select): the iovec
 * array read, a negative length -EINVAL, each range access_ok (one
 * segment: import_ubuf, which caps the length first). */
static int iovec_prep_check(uint64_t uvec, uint32_t nr)
{
	if (nr > 1024)	/* UIO_MAXIOV */
		return -EINVAL;
	if (!nr)
		return 0;
	struct iovec iov;
	for (uint32_t i = 0; i < nr; i++) {
		if (copy_from_prog(&iov, (const void *)(uintptr_t)(uvec + i * sizeof(iov)), sizeof(iov)))
			return -EFAULT;
		if ((ssize_t)iov.iov_len < 0)
			return -EINVAL;
	}
	for (uint32_t i = 0; i < nr; i++) {
		copy_from_prog(&iov, (const void *)(uintptr_t)(uvec + i * sizeof(iov)), sizeof(iov));
		uint64_t len = iov.iov_len;
		if (nr == 1 && len > MAX_RW_COUNT_KERNEL)
			len = MAX_RW_COUNT_KERNEL;
		if (user_range_check((uint64_t)(uintptr_t)iov.iov_base, len))
			return -EFAULT;
	}
	return 0;
}

/* io_prep_rw for a request without buffer select, after io_init_req: the
 * ioprio class, the attribute, then the buffer imported (a plain READ or
 * WRITE range checked, READV/WRITEV's iovec read).  0 or the error. */
static int rw_kernel_prep(const struct io_uring_sqe *sqe)
{
	int res = sqe->ioprio ? ioprio_check(sqe->ioprio) : 0;
	if (res)
		return res;
	uint64_t mask = sqe_attr_type_mask(sqe);
	if (mask && mask != RW_ATTR_FLAG_PI)
		return -EINVAL;
	if (mask && (res = pi_attr_check(sqe)))
		return res;
	switch (sqe->opcode) {
	case IORING_OP_READ:
	case IORING_OP_WRITE:
		return user_range_check(sqe->addr, sqe->len > MAX_RW_COUNT_KERNEL ? MAX_RW_COUNT_KERNEL : sqe->len);
	case IORING_OP_READV:
	case IORING_OP_WRITEV:
		return iovec_prep_check(sqe->addr, sqe->len);
	default:
		return 0;
	}
}

/*
 * What the kernel rejects before a buffer-select SQE selects anything, past
 * init_check: io_init_req's opcode, BUFFER_SELECT and ioprio rules, in its
 * order, then io_prep_rw's ioprio class and attribute mask.  The rest of an
 * opcode's prep is read_request's.  0 or the error.
 */
static int select_prep_check(const struct ring *r, const struct io_uring_sqe *sqe,
			     const struct opdef *def)
{
	if (!opdef_known(sqe->opcode))
		return -EINVAL;
	if ((sqe->flags & IOSQE_BUFFER_SELECT) && def->select == SELECT_REFUSED)
		return -EOPNOTSUPP;
	if (sqe->ioprio && !def->ioprio)
		return -EINVAL;
	int res = personality_check(r, sqe->personality);
	if (res)
		return res;
	if (def->rw) {
		res = sqe->ioprio ? ioprio_check(sqe->ioprio) : 0;
		if (res)
			return res;
		uint64_t mask = sqe_attr_type_mask(sqe);
		if (mask && mask != RW_ATTR_FLAG_PI)
			return -EINVAL;
		if (mask)
			return pi_attr_check(sqe);
	}
	return 0;
}

/* ---- emulated opcodes ---- */

static struct pool_provide provide_args(const struct io_uring_sqe *sqe)
{
	return (struct pool_provide){
		.addr = sqe->addr, .len = sqe->len, .nbufs = sqe->fd, .off = sqe->off,
		.bgid = sqe->buf_group, .rw_flags = sqe->rw_flags,
		.splice_fd_in = (uint32_t)sqe->splice_fd_in, .ioprio = sqe->ioprio,
	};
}

static struct pool_remove remove_args(const struct io_uring_sqe *sqe)
{
	return (struct pool_remove){
		.nbufs = sqe->fd, .bgid = sqe->buf_group, .addr = sqe->addr, .len = sqe->len,
		.off = sqe->off, .rw_flags = sqe->rw_flags, .splice_fd_in = (uint32_t)sqe->splice_fd_in,
	};
}

/* What the kernel checks of PROVIDE/REMOVE_BUFFERS at submission, after
 * io_init_req's generic checks: 0 or the error. */
static int emulated_prep(const struct ring *r, const struct io_uring_sqe *sqe,
			 enum opdef_emulated kind)
{
	/* io_init_req: neither opcode takes a buffer or an ioprio; then the
	 * personality, all before the opcode's own prep. */
	if (sqe->flags & IOSQE_BUFFER_SELECT)
		return -EOPNOTSUPP;
	if (sqe->ioprio)
		return -EINVAL;
	int res = personality_check(r, sqe->personality);
	if (res)
		return res;
	if (kind == EMU_PROVIDE_BUFFERS) {
		struct pool_provide p = provide_args(sqe);
		return pool_provide_prep(&p, kernel_legacy_rules());
	}
	struct pool_remove p = remove_args(sqe);
	return pool_remove_prep(&p, kernel_legacy_rules());
}

/*
 * An SQE the kernel rejects at submission (res != 0) gets the stand-in that
 * fails there: a NOP that hits the kernel's own generic check, or one that
 * fails at prep, reporting res.  Returns 1 if the SQE was rejected.
 */
static int reject_at_submission(struct ring *r, struct io_uring_sqe *sqe, int res,
				struct rewrite_undo *u)
{
	if (!res)
		return 0;
	int init = init_check(r, sqe);
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

/* Does io-wq issue sqe after the batch, as a worker gets to it?  Not one with
 * IOSQE_CQE_SKIP_SUCCESS, which turns the kernel's skip rule on as it is
 * placed, nor a drained one, nor one the kernel holds in its defer list
 * (selects_in_worker says why). */
static int worker_after_batch(const struct ring *r, const struct io_uring_sqe *sqe)
{
	return r->to_wq && !r->drain_waits && !(sqe->flags & (IOSQE_CQE_SKIP_SUCCESS | IOSQE_IO_DRAIN));
}

/*
 * A PROVIDE_BUFFERS or REMOVE_BUFFERS the kernel hands to io-wq acts when a
 * worker issues it, after the submitting task has gone through the rest of
 * the batch: a PROVIDE_BUFFERS released at once from a drain the SQE before
 * it left on fills its group after an inline READ behind it found it empty,
 * and a REMOVE_BUFFERS there finds what a PROVIDE_BUFFERS behind it gave.
 * Its prep, which may stop the batch, is the submitting task's.  The
 * exceptions are those of selects_in_worker, for the same reasons, and one
 * the drain stays on behind (the SQE after a drained chain, which the
 * kernel drains in turn): the SQEs after it wait for it.
 */
static int emulated_in_worker(const struct ring *r, const struct io_uring_sqe *sqe, struct rewrite_undo *u)
{
	if (!worker_after_batch(r, sqe) || r->x->drain_active || (sqe->flags & SQE_LINK_FLAGS))
		return 0;
	u->deferred = 1;
	u->forced = (uint8_t)r->forced_async;
	return 1;
}

static void provide_issue(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u)
{
	struct pool_provide p = provide_args(sqe);
	int res;
	spin_lock(&r->x->pool_lock);
	struct pool_group_stats before, after;
	int existed = !pool_group_stats(r->x->pool, p.bgid, &before);
	res = pool_provide(r->x->pool, &p);
	if (!res) {
		pool_group_stats(r->x->pool, p.bgid, &after);
		u->kind = UNDO_PROVIDE;
		u->bgid = p.bgid;
		u->created = !existed;
		u->added = after.available - (existed ? before.available : 0);
	}
	spin_unlock(&r->x->pool_lock);
	if (res) {
		standin(r, sqe, res, FAIL_AT_ISSUE, u);
	} else if ((kernel_legacy_rules() & LEGACY_PROVIDE_COUNT) && existed && before.available) {
		/* UNDO_PROVIDE still: the stand-in goes with it. */
		u->req = standin(r, sqe, p.nbufs, SUCCEED, u);
		u->kind = UNDO_PROVIDE;
	} else {
		standin_ok(sqe);
	}
}

static void remove_issue(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u)
{
	struct pool_remove p = remove_args(sqe);
	int res;
	struct pool_kept kept;
	spin_lock(&r->x->pool_lock);
	res = pool_remove_kept(r->x->pool, &p, &kept);
	spin_unlock(&r->x->pool_lock);
	if (res > 0 && !kept.slots)
		log_once(BUFSEL_LOG_WARN, ONCE_REMOVE_KEEP,
			 "out of memory keeping removed buffers: a REMOVE_BUFFERS the kernel does not take still removes");
	/* Kept until the kernel takes the SQE: if it stops before, the
	 * buffers are the group's head again (rewrite_undo). */
	u->req = standin(r, sqe, res, res < 0 ? FAIL_AT_ISSUE : SUCCEED, u);
	u->kind = UNDO_REMOVE;
	u->kept = kept;
}

static void emulated_issue(struct ring *r, struct io_uring_sqe *sqe, const struct opdef *def,
			   struct rewrite_undo *u)
{
	if (def->emulated == EMU_PROVIDE_BUFFERS)
		provide_issue(r, sqe, u);
	else
		remove_issue(r, sqe, u);
}

/* PROVIDE_BUFFERS and REMOVE_BUFFERS on bufsel's groups. */
static void emulate_buffers(struct ring *r, struct io_uring_sqe *sqe, const struct opdef *def,
			    struct rewrite_undo *u)
{
	int res = init_check(r, sqe);
	if (reject_at_submission(r, sqe, res ? res : emulated_prep(r, sqe, def->emulated), u))
		return;
	if (!emulated_in_worker(r, sqe, u))
		emulated_issue(r, sqe, def, u);
}

/* ---- buffer selection ---- */

/*
 * The kernel fails a bad plain fd before it selects a buffer: such an SQE
 * goes to the kernel without IOSQE_BUFFER_SELECT and fails there, at issue,
 * taking no buffer.  Its prep is done (read_request): what goes is an SQE of
 * the same kind on the same fd that the kernel's prep cannot fail (no
 * buffer, no msghdr, no iovec to import), so the fd decides, as natively.
 * Returns 1 if that is what happened to sqe.
 */
static int left_to_kernel_bad_fd(const struct ring *r, struct io_uring_sqe *sqe, const struct opdef *def)
{
	if (!bad_file(r, sqe))
		return 0;
	uint8_t opcode = def->buf == BUF_IOVEC ? IORING_OP_READ
			 : def->buf == BUF_MSGHDR ? IORING_OP_RECV : sqe->opcode;
	int32_t fd = sqe->fd;
	clear_sqe(sqe, opcode, sqe->user_data);
	sqe->fd = fd;
	return 1;
}

/* SO_TYPE (SOCK_STREAM, SOCK_DGRAM, ...), or -errno. */
static int fd_sock_type(int fd)
{
	int type;
	socklen_t len = sizeof(type);
	long err = sys_call6(SYS_getsockopt, fd, SOL_SOCKET, SO_TYPE, (long)&type, (long)&len, 0);
	return err ? (int)err : type;
}

/*
 * The kernel looks at the file before it selects a buffer: a request that
 * needs a socket fails on anything else with -ENOTSOCK at issue, taking no
 * buffer.  A RECV that polls first finds out only once its poll fires, so
 * it waits like any other (rewrite_bind_recv then gives the error).
 */
static int fd_not_socket(int fd)
{
	return fd_sock_type(fd) == -ENOTSOCK;
}

static int not_a_socket(const struct io_uring_sqe *sqe, const struct opdef *def)
{
	return def->sock && !(sqe->flags & IOSQE_FIXED_FILE) && fd_not_socket(sqe->fd);
}

/* file_can_poll: epoll_ctl refuses a file without ->poll with EPERM. */
static int cannot_poll(int fd)
{
	int ep = (int)sys_call3(SYS_epoll_create1, O_CLOEXEC, 0, 0);
	if (ep < 0)
		return 0;
	struct epoll_event ev = { .events = EPOLLIN };
	long err = sys_call6(SYS_epoll_ctl, ep, EPOLL_CTL_ADD, fd, (long)&ev, 0, 0);
	sys_close(ep);
	return err == -EPERM;
}

/*
 * io_wq_submit_work polls for a multishot request only on a file that is
 * O_NONBLOCK or FMODE_NOWAIT; on another it drops multishot and makes one
 * blocking attempt.  Sockets and pipes are FMODE_NOWAIT; a ring's own file
 * is not (a multishot RECV there fails with -ENOTSOCK at once).
 */
static int wq_single_shot(int fd)
{
	long fl = sys_call3(SYS_fcntl, fd, F_GETFL, 0);
	return fl >= 0 && !(fl & O_NONBLOCK) && ring_is_fd(fd);
}

static int polls_first(const struct io_uring_sqe *sqe)
{
	return sqe->opcode == IORING_OP_RECV && (sqe->ioprio & IORING_RECVSEND_POLL_FIRST);
}

/* IORING_RECVSEND_POLL_FIRST with MSG_DONTWAIT: the attempt that would poll
 * may not wait, so the request ends at once with -EAGAIN, data or not. */
static int polling_without_waiting(const struct io_uring_sqe *sqe)
{
	return (sqe->ioprio & IORING_RECVSEND_POLL_FIRST) && (sqe->msg_flags & MSG_DONTWAIT);
}

/* The same for a single-shot receive on a file that cannot poll
 * (io_arm_poll_handler refuses it, and io-wq's attempt is -EAGAIN again),
 * and from io-wq (IOSQE_ASYNC or IOSQE_IO_DRAIN, or the head of a chain the
 * batch leaves open), which arms a poll only for the first two, which
 * io_init_req marks REQ_F_FORCE_ASYNC (io_wq_submit_work's
 * needs_poll): otherwise the first attempt's -EAGAIN, which POLL_FIRST
 * makes before anything is read, is final.  (A multishot one io-wq polls
 * for itself.) */
static int poll_first_ends_at_once(const struct ring *r, const struct io_uring_sqe *sqe)
{
	if (polling_without_waiting(sqe))
		return 1;
	if (!(sqe->ioprio & IORING_RECVSEND_POLL_FIRST))
		return 0;
	if (r->to_wq && !r->forced_async)
		return 1;
	/* A socket always polls: one getsockopt, no probe fd (which would
	 * take a number the program's next open might get natively). */
	return !(sqe->flags & IOSQE_FIXED_FILE) && fd_not_socket(sqe->fd) && cannot_poll(sqe->fd);
}

/* A bad plain fd, for requests the kernel cannot be handed without
 * IOSQE_BUFFER_SELECT (a multishot one fails prep without it). */
static int bad_fd(const struct ring *r, const struct io_uring_sqe *sqe)
{
	return bad_file(r, sqe);
}

/* Has a socket data (or an end) for a receive now?  The poll events, 0 if
 * none. */
static int fd_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDHUP };
	return sys_call3(SYS_poll, (long)&p, 1, 0) == 1 && !(p.revents & POLLNVAL) ? p.revents : 0;
}

/* io_uring_sqe's bytes 44-47, where older headers lack the names: optlen
 * (RECV/RECVMSG) or addr_len and __pad3[0] (SEND). */
static uint32_t sqe_word44(const struct io_uring_sqe *sqe)
{
	uint32_t v;
	memcpy(&v, (const char *)sqe + 44, sizeof(v));
	return v;
}

#define SOCKADDR_STORAGE_SIZE 128u	/* sizeof(struct sockaddr_storage) */
#define UIO_MAXIOV_KERNEL 1024u

/*
 * io_recvmsg_prep (RECV, RECVMSG) and io_sendmsg_prep with io_send_setup
 * (SEND) up to the point where a buffer-select request stops preparing, in
 * the kernel's order: the ioprio flags the opcode knows, the multishot and
 * bundle rules, optlen, a SEND's destination address.  0 or the error.
 */
static int net_prep_check(const struct io_uring_sqe *sqe, const struct opdef *def)
{
	if (sqe->ioprio & ~def->sr_flags)
		return -EINVAL;
	uint32_t w44 = sqe_word44(sqe);
	if (def->send_addr) {
		if (w44 >> 16)			/* __pad3[0] */
			return -EINVAL;
		uint16_t addr_len = (uint16_t)w44;
		if (sqe->addr2 && addr_len) {
			char a[SOCKADDR_STORAGE_SIZE];
			if (addr_len > sizeof(a))
				return -EINVAL;
			if (copy_from_prog(a, (const void *)(uintptr_t)sqe->addr2, addr_len))
				return -EFAULT;
		}
		return 0;
	}
	if (sqe->ioprio & IORING_RECV_MULTISHOT) {
		if (sqe->msg_flags & MSG_WAITALL)
			return -EINVAL;
		if (def->buf == BUF_MSGHDR && w44)
			return -EINVAL;
	} else if (w44) {
		return -EINVAL;
	}
	if ((sqe->ioprio & IORING_RECVSEND_BUNDLE) && def->buf == BUF_MSGHDR)
		return -EINVAL;
	return 0;
}

/* io_msg_copy_hdr reads a user_msghdr field by field up to msg_controllen:
 * msg_flags is never read, so a msghdr whose last word runs into memory
 * the program cannot read is no fault. */
static int read_msghdr(struct msghdr *msg, uint64_t addr)
{
	if (!msg)	/* only opcodes with a msghdr get here (opdef.c) */
		return -EFAULT;
	memset(msg, 0, sizeof(*msg));
	return copy_from_prog(msg, (const void *)(uintptr_t)addr, offsetof(struct msghdr, msg_flags));
}

/* The program's request as bufsel needs it: what it asks for, read the way
 * the kernel reads it at prep.  0, or the prep error. */
static int read_request(const struct io_uring_sqe *sqe, const struct opdef *def, uint32_t *want,
			struct msghdr *msg)
{
	struct iovec iov;
	*want = sqe->len;
	/* io_recvmsg_prep (RECV and RECVMSG) refuses an addr2 first of all,
	 * before it reads the msghdr or looks at the file. */
	if (def->select == SELECT_WHEN_READABLE && sqe->addr2)
		return -EINVAL;
	if (def->len_int && (int32_t)sqe->len < 0)
		return -EINVAL;
	if (def->sr_flags) {
		int res = net_prep_check(sqe, def);
		if (res)
			return res;
	}
	/* The kernel keeps an iovec's length in 32 bits: the rest is dropped,
	 * not clamped. */
	if (def->buf == BUF_IOVEC) {
		if (sqe->len != 1)
			return -EINVAL;
		if (copy_from_prog(&iov, (const void *)(uintptr_t)sqe->addr, sizeof(iov)))
			return -EFAULT;
		*want = (uint32_t)iov.iov_len;
	} else if (def->buf == BUF_MSGHDR) {
		if (read_msghdr(msg, sqe->addr))
			return -EFAULT;
		/* __copy_msghdr: a negative name length (with a name), then an
		 * iovec count past UIO_MAXIOV; then io_msg_copy_hdr's one iovec. */
		// NOLINTNEXTLINE(clang-analyzer-core.NullDereference): msg is NULL only for opcodes without a msghdr (opdef.c)
		if (msg->msg_name && (int)msg->msg_namelen < 0)
			return -EINVAL;
		if (msg->msg_iovlen > UIO_MAXIOV_KERNEL)
			return -EMSGSIZE;
		if (msg->msg_iovlen > 1)
			return -EINVAL;
		*want = 0;
		if (msg->msg_iovlen == 1) {
			if (copy_from_prog(&iov, msg->msg_iov, sizeof(iov)))
				return -EFAULT;
			*want = (uint32_t)iov.iov_len;
		}
		/* io_recvmsg_mshot_prep: the header, the name and the control data
		 * must fit in an int together. */
		if ((sqe->ioprio & IORING_RECV_MULTISHOT) &&
		    ((int)msg->msg_namelen < 0 ||
		     msg->msg_controllen > INT_MAX ||
		     sizeof(struct io_uring_recvmsg_out) + msg->msg_namelen + msg->msg_controllen > INT_MAX))
			return -EOVERFLOW;
	}
	return 0;
}

/*
 * io_recvmsg_prep and io_sendmsg_prep for a RECV, RECVMSG or SEND without
 * buffer select (the kernel runs it; bufsel only looks along a chain):
 * read_request's checks, a multishot receive refused, then the buffer
 * imported at prep (import_ubuf's range; RECVMSG's msghdr and iovec).
 * A vectored or bundle SEND is left to the kernel.  0 or the error.
 */
static int net_kernel_prep(const struct io_uring_sqe *sqe, const struct opdef *def)
{
	if (def->select == SELECT_WHEN_READABLE && sqe->addr2)
		return -EINVAL;
	if (def->len_int && (int32_t)sqe->len < 0)
		return -EINVAL;	/* io_sendmsg_prep too, before the address */
	int res = net_prep_check(sqe, def);
	if (res)
		return res;
	if (def->send_addr) {
		if (sqe->ioprio & ~IORING_RECVSEND_POLL_FIRST)
			return 0;
	} else if (sqe->ioprio & IORING_RECV_MULTISHOT) {
		return -EINVAL;
	}
	if (def->buf == BUF_ADDR_LEN)
		return user_range_check(sqe->addr, sqe->len > MAX_RW_COUNT_KERNEL ? MAX_RW_COUNT_KERNEL : sqe->len);
	struct msghdr msg;
	if (read_msghdr(&msg, sqe->addr))
		return -EFAULT;
	if (msg.msg_name && (int)msg.msg_namelen < 0)
		return -EINVAL;
	if (msg.msg_iovlen > UIO_MAXIOV_KERNEL)
		return -EMSGSIZE;
	return iovec_prep_check((uint64_t)(uintptr_t)msg.msg_iov, (uint32_t)msg.msg_iovlen);
}

/* Points the SQE at q's buffer: q->buf is selected, want is what was asked. */
static int bind_buffer(struct ring *r, struct req *q, struct io_uring_sqe *sqe,
		       const struct opdef *def, uint32_t want, const struct msghdr *msg)
{
	/* io_buffers_select (6.18 SEND) hands a legacy buffer out whole:
	 * sqe->len caps only ring-mapped buffers. */
	if (def->missing_enoent)
		want = 0;
	uint32_t len = want || !legacy_rule(r, sqe, LEGACY_LEN0_READS_NOTHING) ? sel_len(want, q->buf.len) : 0;
	q->want = len;
	q->flags |= (sqe->flags & IOSQE_FIXED_FILE ? REQ_FIXED_FILE : 0) |
		    (sqe->flags & SQE_LINK_FLAGS ? REQ_LINKED : 0) |
		    (sqe->flags & IOSQE_IO_HARDLINK ? REQ_HARDLINK : 0);
	if (def->buf != BUF_ADDR_LEN) {
		q->iov.iov_base = (void *)(uintptr_t)q->buf.addr;
		q->iov.iov_len = rw_count(len);
		/* Its callers failed it already if bytes were to be copied
		 * (msghdr_entry_unreachable). */
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
		sqe->len = rw_count(len);
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

static int incremental_group(struct ring *r, const struct io_uring_sqe *sqe)
{
	spin_lock(&r->x->pool_lock);
	int inc = pool_ring_incremental(r->x->pool, sqe->buf_group);
	spin_unlock(&r->x->pool_lock);
	return inc;
}

/* An incremental ring's entry taken by a request that does not wait for a
 * file to be ready (a regular file, io-wq, a SEND): io_should_commit
 * commits what was mapped, now; the CQE says whether the entry stays. */
static void commit_at_selection(struct ring *r, struct req *q, const struct pool_buf *bufs, uint16_t n,
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
	uint32_t len = sel_len(want, b->len);
	return user_range_check(b->addr, rw_count(len)) != 0;
}

/* The socket's queued bytes, as msg_inq reports them to io_recv_finish. */
static uint32_t sock_queued(int fd)
{
	int v = 0;
	if (sys_call3(SYS_ioctl, fd, FIONREAD, (long)&v) || v < 0)
		return 0;
	return (uint32_t)v;
}

/* A RECVMSG whose copy into its entry faults has taken the datagram off
 * the queue (unix_dgram_recvmsg, udp_recvmsg free it); a stream keeps its
 * bytes. */
static void drop_faulted_datagram(const struct io_uring_sqe *sqe)
{
	if (sqe->flags & IOSQE_FIXED_FILE || (sqe->msg_flags & MSG_PEEK))
		return;
	int type = fd_sock_type(sqe->fd);
	if (type == SOCK_DGRAM || type == SOCK_SEQPACKET)
		sys_call6(SYS_recvfrom, sqe->fd, 0, 0, MSG_DONTWAIT, 0, 0);
}

/*
 * A RECVMSG on an entry the kernel cannot write: its iovec is not checked
 * (io_recvmsg's iov_iter_ubuf), so it faults only if there are bytes to
 * copy; an end of file or an empty datagram completes as on any entry,
 * which bind_buffer hands on as an empty iovec.  -EFAULT or 0.
 */
static int msghdr_entry_unreachable(const struct io_uring_sqe *sqe)
{
	if ((sqe->flags & IOSQE_FIXED_FILE) || sock_queued(sqe->fd)) {
		drop_faulted_datagram(sqe);
		return -EFAULT;
	}
	return 0;
}

/*
 * Selects a buffer for the SQE and rewrites it onto it.  The stand-in
 * outcomes (-ENOBUFS, the kernel's NULL-buffer case) are the kernel's.
 */
static int select_now(struct ring *r, struct io_uring_sqe *sqe, const struct opdef *def,
		      uint32_t want, const struct msghdr *msg, struct rewrite_undo *u, int lazy)
{
	struct req *q = req_alloc(&r->reqs);
	if (!q) {
		standin(r, sqe, -ENOMEM, FAIL_AT_ISSUE, u);
		return 0;
	}
	int null_ok = legacy_rule(r, sqe, LEGACY_NULL_IS_A_BUFFER);
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
	    (def->buf != BUF_MSGHDR || msghdr_entry_unreachable(sqe))) {
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
				(r->to_wq || (sqe->flags & IOSQE_FIXED_FILE) || cannot_poll(sqe->fd));
		uint32_t len = sel_len(want, bad.len);
		if (committed && len <= INT32_MAX) {
			standin_takes(r, s, &bad);
			return 0;
		}
		pool_locked_putback(r, &bad);
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
		pool_locked_putback(r, &q->buf);
		req_free(&r->reqs, q);
		standin(r, sqe, -ENOMEM, FAIL_AT_ISSUE, u);
		return 0;
	}
	if (q->kind == REQ_RECV_SEL)
		req_recv_bound(&r->reqs, q);
	else if (lazy)
		q->flags |= REQ_RING_LAZY;
	else if (incremental_group(r, sqe))
		commit_at_selection(r, q, &q->buf, 1, q->want);
	else if (q->want > INT32_MAX) {
		/* Committed at selection with the length as an int, which
		 * io_kbuf_commit takes for an error: the head stays, and the
		 * CQE names the entry all the same. */
		pool_locked_putback(r, &q->buf);
		q->flags |= REQ_COMMITTED;
		q->cflags = 0;
	}
	undo_select(u, q);
	return 0;
}

/*
 * A receive handed to the kernel with its buffer (or a READ from a file that
 * polls, from a ring): one that gets no data (an end of file, an error, a
 * fault on the buffer; a READ only the fault) gives the buffer back when
 * bufsel reaps its CQE, where the kernel, which runs it inline, gives it
 * back before the next SQE of the batch selects.  rewrite_barrier sends such
 * an SQE to the kernel after the receive.  may_return: the poll saw more
 * than data (or none was asked, a fixed file).
 */
static void batch_recv_add(struct ring *r, struct req *q, int may_return)
{
	if (may_return)
		q->flags |= REQ_MAY_RETURN;
	q->next_batch = r->batch_recvs;
	r->batch_recvs = q;
}

/* The buffer's first byte is one the kernel can write (read, then written
 * back as it was: the buffer is the pool's, not the program's, until the
 * receive's CQE): tried once, when an SQE behind it asks. */
static int recv_may_return(struct req *q)
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
static void standin_attempt(struct ring *r, struct req *s, int took, const struct pool_buf *taken)
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
static int first_attempt(struct ring *r, const struct io_uring_sqe *sqe, const struct opdef *def,
			 uint32_t want, const struct msghdr *tmpl, int multi, struct pool_buf *taken,
			 int *took, uint32_t *keep)
{
	struct pool_buf b;
	*took = 0;
	*keep = 0;
	int null_ok = !multi && legacy_rule(r, sqe, LEGACY_NULL_IS_A_BUFFER);
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
		uint32_t room = sel_len(want, b.len);
		if (sizeof(struct io_uring_recvmsg_out) + tmpl->msg_namelen + tmpl->msg_controllen > room)
			res = -EFAULT;
	} else if (!res && def->buf == BUF_ADDR_LEN && rewrite_entry_unreachable(&b, want)) {
		res = -EFAULT;	/* io_recv_buf_select's import_ubuf; the entry stays */
	} else if (!res && def->buf == BUF_ADDR_LEN) {
		*keep = sel_len(want, b.len);
	}
	spin_unlock(&r->x->pool_lock);
	return res;
}

/*
 * A receive with nothing to read: a POLL_ADD holds its place (and its link
 * flags, so a LINK_TIMEOUT behind it guards the wait).  Returns the request
 * that holds the rest of the chain.
 */
static struct req *recv_defer(struct ring *r, struct io_uring_sqe *sqe, uint32_t want,
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

static enum pool_kind group_kind(struct ring *r, const struct io_uring_sqe *sqe);

/*
 * A RECV bundle on a ring bufsel keeps maps as many entries as the data
 * needs, which bufsel learns only when the data is there: such a receive
 * always waits for it (recv_defer; a poll on a readable socket fires at
 * once) and maps its entries then (bind_bundle).  A multishot one maps
 * at each receive of its stream (multi_bundle_recv).
 */
static int recv_bundle_on_ring(struct ring *r, const struct io_uring_sqe *sqe)
{
	return sqe->opcode == IORING_OP_RECV && (sqe->ioprio & IORING_RECVSEND_BUNDLE) &&
	       !(sqe->ioprio & IORING_RECV_MULTISHOT) && group_kind(r, sqe) == POOL_EMULATED_RING;
}

static int recv_bundle_multi_on_ring(struct ring *r, const struct io_uring_sqe *sqe)
{
	return sqe->opcode == IORING_OP_RECV &&
	       (sqe->ioprio & (IORING_RECVSEND_BUNDLE | IORING_RECV_MULTISHOT)) ==
		       (IORING_RECVSEND_BUNDLE | IORING_RECV_MULTISHOT) &&
	       group_kind(r, sqe) == POOL_EMULATED_RING;
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
static uint32_t bundle_keep(struct ring *r, const struct io_uring_sqe *sqe, uint32_t keep)
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
static int bind_bundle(struct ring *r, struct req *q, uint32_t max_len, int again, uint32_t mshot_len)
{
	const struct io_uring_sqe *sqe = &q->orig;
	uint32_t inq = (sqe->flags & IOSQE_FIXED_FILE) ? 0 : sock_queued(sqe->fd);
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
static void bundle_putback(struct ring *r, struct req_bundle *bn)
{
	spin_lock(&r->x->pool_lock);
	while (bn->n)
		pool_putback(r->x->pool, &bn->bufs[--bn->n]);
	spin_unlock(&r->x->pool_lock);
}

/* The SQE onto the bundle's entries: one is a plain RECV or SEND, more a
 * RECVMSG or SENDMSG over them. */
static void bundle_sqe(struct io_uring_sqe *sqe, struct req_bundle *bn, uint8_t msg_opcode)
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

/*
 * A RECVMSG on a stream socket whose head entry holds more than INT_MAX
 * bytes: io_recvmsg hands the socket the entry's length uncapped
 * (iov_iter_ubuf), which sock_rcvlowat takes for a negative int: the
 * receive stops at its first check, after what was queued, and with nothing
 * queued ends at once having read nothing, where it would wait.  hdr: what a
 * multishot one's header takes of the entry first (0 for one RECVMSG).
 */
static int recvmsg_reads_nothing(struct ring *r, const struct io_uring_sqe *sqe, uint32_t want, uint32_t hdr)
{
	struct pool_buf b;
	spin_lock(&r->x->pool_lock);
	int res = pool_head_how(r->x->pool, sqe->buf_group, &b, sel_how(sqe));
	spin_unlock(&r->x->pool_lock);
	uint32_t len = sel_len(want, b.len);
	return !res && len >= hdr && len - hdr > INT32_MAX && !(sqe->flags & IOSQE_FIXED_FILE) &&
	       fd_sock_type(sqe->fd) == SOCK_STREAM && !sock_queued(sqe->fd);
}

/* The flags of a single receive that the kernel's rules for legacy groups
 * give (kernel_ops.h), taken before the SQE is rewritten. */
static uint32_t legacy_recv_flags(struct ring *r, const struct io_uring_sqe *sqe)
{
	unsigned rules = legacy_rules_of(r, sqe);
	return (rules & LEGACY_KEEPS_ON_FAILURE ? REQ_KEEPS_BUF : 0) |
	       (rules & LEGACY_NO_SOCK_NONEMPTY ? REQ_NO_NONEMPTY : 0);
}

static struct req *select_recv(struct ring *r, struct io_uring_sqe *sqe, const struct opdef *def,
			       struct rewrite_undo *u)
{
	uint32_t want;
	struct msghdr msg = { 0 };
	int res = read_request(sqe, def, &want, &msg);
	if (res) {
		standin(r, sqe, res, FAIL_AT_PREP, u);
		return NULL;
	}
	int fixed = sqe->flags & IOSQE_FIXED_FILE;
	if (left_to_kernel_bad_fd(r, sqe, def))
		return NULL;
	if (!polls_first(sqe) && not_a_socket(sqe, def)) {
		standin(r, sqe, -ENOTSOCK, FAIL_AT_ISSUE, u);
		return NULL;
	}
	if (poll_first_ends_at_once(r, sqe)) {
		standin(r, sqe, -EAGAIN, FAIL_AT_ISSUE, u);
		return NULL;
	}
	uint32_t keep = 0;
	if (!(sqe->ioprio & IORING_RECVSEND_POLL_FIRST)) {
		struct pool_buf taken;
		int took;
		res = first_attempt(r, sqe, def, want, &msg, 0, &taken, &took, &keep);
		if (res) {
			struct req *s = standin(r, sqe, res, FAIL_AT_ISSUE, u);
			standin_attempt(r, s, took, &taken);
			return NULL;
		}
		if (def->buf == BUF_MSGHDR && recvmsg_reads_nothing(r, sqe, want, 0)) {
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
		if (recv_bundle_on_ring(r, sqe))
			keep = readable ? 0 : bundle_keep(r, sqe, keep);
		else if (incremental_group(r, sqe))
			;	/* its entry is taken in turn, once the data is there */
		else if ((sqe->msg_flags & MSG_DONTWAIT) || readable ||
			 legacy_rule(r, sqe, LEGACY_BIND_AT_FIRST_ATTEMPT)) {
			/* A receive that keeps its buffer whatever it gets
			 * gives nothing back to the batch. */
			uint32_t old = legacy_recv_flags(r, sqe);
			select_now(r, sqe, def, want, &msg, u, 0);
			if (u->kind == UNDO_SELECT) {
				u->req->flags |= old;
				if (!(old & REQ_KEEPS_BUF))
					batch_recv_add(r, u->req, fixed || (readable & ~(POLLIN | POLLRDNORM)));
			}
			return NULL;
		}
	}
	uint32_t old = legacy_recv_flags(r, sqe);
	struct req *q = recv_defer(r, sqe, want, &msg, u);
	if (q)
		q->flags |= old;
	if (q && keep) {
		/* RECV: the length 6.18 kept from the attempt (first_attempt). */
		q->orig.len = keep;
		q->want = keep;
	}
	return q;
}

/* A waiting bundle RECV whose data came: its entries, and its SQE onto them. */
static int rebind_bundle(struct ring *r, struct req *q, int again)
{
	struct io_uring_sqe *sqe = &q->orig;
	int res = bind_bundle(r, q, q->want, again, 0);
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

int rewrite_bind_recv(struct ring *r, struct req *q, int again)
{
	struct io_uring_sqe *sqe = &q->orig;
	const struct opdef *def = opdef_get(sqe->opcode);
	/* The request as read at submission (recv_defer). */
	uint32_t want = q->want;
	struct msghdr msg = q->tmpl;
	if (not_a_socket(sqe, def))
		return -ENOTSOCK;
	if (recv_bundle_on_ring(r, sqe))
		return rebind_bundle(r, q, again);
	spin_lock(&r->x->pool_lock);
	int res = pool_select_how(r->x->pool, sqe->buf_group, &q->buf,
				  sel_how(sqe) | (again ? POOL_SEL_AGAIN : 0));
	if (!res && !q->buf.addr) {
		/* As at the first attempt (first_attempt, ring_read_attempt):
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
	    (def->buf != BUF_MSGHDR || msghdr_entry_unreachable(sqe))) {
		pool_locked_putback(r, &q->buf);
		return -EFAULT;	/* the retry's import_ubuf; the entry stays */
	}
	q->kind = REQ_RECV_SEL;
	/* A READ that waited: from a file that polls (ring_read_lazy), the
	 * entry is committed with the data; from a regular file (it waited for
	 * an incremental ring's turn), at selection. */
	int at_selection = def->select == SELECT_AT_ISSUE && (sqe->flags & IOSQE_FIXED_FILE || cannot_poll(sqe->fd)) &&
			   incremental_group(r, sqe);
	if (def->select == SELECT_AT_ISSUE)
		q->flags |= at_selection ? 0 : REQ_RING_LAZY;
	else if (sqe->msg_flags & MSG_WAITALL)
		q->flags |= REQ_WAITALL;
	if (def->select != SELECT_AT_ISSUE)
		sqe->ioprio &= ~IORING_RECVSEND_POLL_FIRST;
	res = bind_buffer(r, q, sqe, def, want, &msg);
	if (res)
		pool_locked_putback(r, &q->buf);
	else if (at_selection)
		commit_at_selection(r, q, &q->buf, 1, q->want);
	else
		req_recv_bound(&r->reqs, q);
	return res;
}

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
	int res = bind_bundle(r, q, q->want ? q->want : q->orig.len, 0, q->orig.len);
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
 * 5.10); the step's completion then marks the request, and that step is
 * read again as a plain READ after its poll (complete_recv_multi); the
 * mark goes with the step's buffer (req_recv_unbound).
 */
static int read_waits(const struct req *q)
{
	return !!(q->flags & REQ_READ_WAITS);
}

int rewrite_multi_recv(struct ring *r, struct req *q)
{
	if (recv_bundle_multi_on_ring(r, &q->orig))
		return multi_bundle_recv(r, q);
	spin_lock(&r->x->pool_lock);
	int res = pool_select_how(r->x->pool, q->orig.buf_group, &q->buf, sel_how(&q->orig));
	/* The kernel's retry after this receive's CQE comes at once, before
	 * anything the program submits next: the group as this leaves it. */
	q->emptied = !res && !pool_available(r->x->pool, q->orig.buf_group);
	if (!res && !q->buf.addr) {
		/* As at the first attempt (first_attempt): a ring's entry
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
	uint32_t len = sel_len(q->orig.len, q->buf.len);
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
		uint32_t room = sel_len(q->want, q->buf.len);
		/* The header is written into the entry after the receive: one
		 * the kernel cannot write fails it once data is there, and
		 * handed on, its iovec would be refused at prep. */
		if (head <= room && rewrite_entry_unreachable(&q->buf, room) &&
		    !(q->orig.flags & IOSQE_FIXED_FILE) && !(fd_readable(q->orig.fd) & POLLIN)) {
			req_recv_unbound(&r->reqs, q);
			pool_locked_putback(r, &q->buf);
			return -EBUSY;	/* the retry's -EAGAIN: it waits */
		}
		if (head > room || rewrite_entry_unreachable(&q->buf, room)) {
			if (head <= room)
				drop_faulted_datagram(&q->orig);
			req_recv_unbound(&r->reqs, q);
			pool_locked_putback(r, &q->buf);
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
		/* A cap kept from an attempt that found no data (first_attempt). */
		if (q->want && q->want < len)
			len = q->want;
		sqe->opcode = IORING_OP_RECV;
		sqe->addr = q->buf.addr;
		sqe->len = rw_count(len);
		sqe->msg_flags = q->orig.msg_flags | MSG_DONTWAIT;
		break;
	default:	/* READ_MULTISHOT */
		sqe->opcode = IORING_OP_READ;
		sqe->addr = q->buf.addr;
		sqe->len = rw_count(q->buf.len);
		sqe->off = (uint64_t)-1;
		sqe->rw_flags = read_waits(q) ? 0 : RWF_NOWAIT;
		break;
	}
	return 0;
}

static int ring_read_attempt(const struct io_uring_sqe *sqe, uint32_t want, const struct pool_buf *head, int idle);

/*
 * A multishot receive on a legacy group: bufsel runs it as a sequence of
 * single receives, each on a buffer selected when data is there, and posts
 * them as the kernel posts a multishot stream (IORING_CQE_F_MORE on all but
 * the last).  The first step is taken here, the rest by completion.c.
 */
static struct req *select_recv_multi(struct ring *r, struct io_uring_sqe *sqe,
				     const struct opdef *def, struct rewrite_undo *u)
{
	struct msghdr tmpl = { 0 };
	uint32_t want = 0;
	int res = 0;
	if (def->select == SELECT_WHEN_READABLE)
		res = read_request(sqe, def, &want, &tmpl);
	/* io_recvmsg_prep, io_read_mshot_prep: a multishot request takes its
	 * lengths from the buffers. */
	if (!res && def->mshot_no_len && (sqe->len || (def->mshot_no_len == 2 && sqe->addr)))
		res = -EINVAL;
	if (res) {
		standin(r, sqe, res, FAIL_AT_PREP, u);
		return NULL;
	}
	int fixed = sqe->flags & IOSQE_FIXED_FILE;
	if (bad_fd(r, sqe))
		res = -EBADF;
	/* No multishot from io-wq but by poll (io_wq_submit_work), and a
	 * READ_MULTISHOT on a file that polls or nothing (io_read_mshot). */
	else if ((r->to_wq || def->select != SELECT_WHEN_READABLE) && !fixed && cannot_poll(sqe->fd))
		res = -EBADFD;
	else if (!polls_first(sqe) && (!r->to_wq || (!fixed && wq_single_shot(sqe->fd))) &&
		 not_a_socket(sqe, def))
		res = -ENOTSOCK;
	else if (!r->to_wq && polling_without_waiting(sqe))
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
	if (sqe->opcode == IORING_OP_RECV && sqe_word44(sqe)) {
		q->mshot_lim = 1;
		q->mshot_left = sqe_word44(sqe);
	}
	/* io_wq_submit_work arms a multishot request's poll before any
	 * attempt on a file that is O_NONBLOCK or FMODE_NOWAIT (sockets and
	 * pipes are): no buffer, no MSG_DONTWAIT -EAGAIN, no -ENOTSOCK until
	 * the file is readable (rewrite_multi_wake). */
	int poll_first = (sqe->ioprio & IORING_RECVSEND_POLL_FIRST) || r->to_wq;
	/* One look at the file, here rather than at every wake: the kernel's
	 * request holds the file, not the number. */
	int type = def->select == SELECT_WHEN_READABLE && !fixed ? fd_sock_type(sqe->fd) : SOCK_STREAM;
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
		res = first_attempt(r, sqe, def, want, &tmpl, 1, &taken, &took, &keep);
		if (!res && recv_bundle_multi_on_ring(r, sqe))
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
			res = ring_read_attempt(sqe, 0, &head, !fixed && !fd_readable(sqe->fd));
		if (res == 1) {
			req_free(&r->reqs, q);
			standin(r, sqe, 0, SUCCEED, u);
			return NULL;
		}
	}
	uint32_t hdr = (uint32_t)sizeof(struct io_uring_recvmsg_out) + tmpl.msg_namelen + (uint32_t)tmpl.msg_controllen;
	if (!res && !poll_first && def->buf == BUF_MSGHDR && recvmsg_reads_nothing(r, sqe, want, hdr)) {
		/* As for one RECVMSG (recvmsg_reads_nothing): the stream ends
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
		res = -EAGAIN;	/* as for a single receive (select_recv) */
	if (!res && !poll_first && ((sqe->msg_flags & MSG_DONTWAIT) || readable)) {
		int err = rewrite_multi_recv(r, q);
		res = err == -EBUSY ? 0 : err ? err : 1;	/* busy: its turn comes by poll */
		cflags = err ? q->cflags : 0;
	}
	if (res < 0) {
		req_free(&r->reqs, q);
		struct req *s = standin(r, sqe, res, FAIL_AT_ISSUE, u);
		standin_attempt(r, s, took, &taken);
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
	if (incremental_group(r, &q->orig)) {
		/* io_buffers_select commits a send's mapping at once: nothing
		 * is left to settle at completion, or to put back on undo. */
		commit_at_selection(r, q, q->bun->bufs, (uint16_t)n, b.total);
		q->bun->n = 0;
	}
	return 0;
}

int rewrite_bundle_send(struct ring *r, struct req *q)
{
	if (group_kind(r, &q->orig) == POOL_EMULATED_RING)
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
static struct req *select_send_bundle(struct ring *r, struct io_uring_sqe *sqe,
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

/* What the SQE's group id holds now: a legacy group, a buffer ring bufsel
 * keeps, one the kernel keeps (its own, passed through), or nothing. */
static enum pool_kind group_kind(struct ring *r, const struct io_uring_sqe *sqe)
{
	spin_lock(&r->x->pool_lock);
	enum pool_kind kind = pool_kind(r->x->pool, sqe->buf_group);
	spin_unlock(&r->x->pool_lock);
	return kind;
}

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
	       group_kind(r, sqe) == POOL_EMULATED_RING && !cannot_poll(sqe->fd);
}

/* A file open for writing only: a READ fails on it with -EBADF
 * (io_rw_init_file). */
static int write_only(int fd)
{
	long fl = sys_call3(SYS_fcntl, fd, F_GETFL, 0);
	return fl >= 0 && (fl & O_ACCMODE) == O_WRONLY;
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
static int ring_read_attempt(const struct io_uring_sqe *sqe, uint32_t want, const struct pool_buf *head, int idle)
{
	int fixed = sqe->flags & IOSQE_FIXED_FILE;
	if (!head->addr)
		return -ENOBUFS;
	if (rewrite_entry_unreachable(head, want))
		return -EFAULT;
	if (!fixed && idle && write_only(sqe->fd))
		return -EBADF;
	if (!fixed && sqe->off && sqe->off != UINT64_MAX && fd_sock_type(sqe->fd) > 0)
		return -ESPIPE;
	return !sel_len(want, head->len);
}

static struct req *select_read(struct ring *r, struct io_uring_sqe *sqe, const struct opdef *def,
			       struct rewrite_undo *u)
{
	uint32_t want;
	int res = read_request(sqe, def, &want, NULL);
	if (res) {
		standin(r, sqe, res, FAIL_AT_PREP, u);
		return NULL;
	}
	if (left_to_kernel_bad_fd(r, sqe, def))
		return NULL;
	if (!def->sr_flags && !(sqe->flags & IOSQE_FIXED_FILE) && legacy_rule(r, sqe, LEGACY_READ_MODE_AT_PREP) &&
	    write_only(sqe->fd)) {
		standin(r, sqe, -EBADF, FAIL_AT_PREP, u);
		return NULL;
	}
	if (not_a_socket(sqe, def)) {
		standin(r, sqe, -ENOTSOCK, FAIL_AT_ISSUE, u);
		return NULL;
	}
	if (def->sr_flags && poll_first_ends_at_once(r, sqe)) {
		standin(r, sqe, -EAGAIN, FAIL_AT_ISSUE, u);	/* io_send: before it selects */
		return NULL;
	}
	struct msghdr none = { 0 };
	if (!ring_read_lazy(r, sqe, def)) {
		uint32_t old = def->sr_flags ? 0 : legacy_recv_flags(r, sqe) & REQ_KEEPS_BUF;
		/* An incremental ring's entry out with a transfer: a READ
		 * waits its turn (as on a file that polls); a SEND cannot. */
		int sel = select_now(r, sqe, def, want, NULL, u, 0);
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
		res = ring_read_attempt(sqe, want, &head, !readable);
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
	if (res == 1 && !readable && !(sqe->flags & IOSQE_CQE_SKIP_SUCCESS) && !incremental_group(r, sqe)) {
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
	if ((!readable || incremental_group(r, sqe)) && !nowait && !res) {
		/* The attempt clamped the request's length to the head entry's
		 * (io_ring_buffer_select), and the retry keeps it, as a RECV's
		 * does (first_attempt). */
		if (!incremental_group(r, sqe))
			want = sel_len(want, head.len);
		return recv_defer(r, sqe, want, &none, u);
	}
	if (select_now(r, sqe, def, want, NULL, u, 1) == -EBUSY)
		standin(r, sqe, -EAGAIN, FAIL_AT_ISSUE, u);	/* NOWAIT: it would have to wait */
	else if (u->kind == UNDO_SELECT)
		batch_recv_add(r, u->req, 0);	/* a fault on the entry gives it back */
	return NULL;
}

static struct req *select_issue(struct ring *r, struct io_uring_sqe *sqe, const struct opdef *def,
				struct rewrite_undo *u)
{
	if (!def->bundle || !(sqe->ioprio & IORING_RECVSEND_BUNDLE))
		return select_read(r, sqe, def, u);
	uint32_t want;
	int res = read_request(sqe, def, &want, NULL);
	if (res) {
		standin(r, sqe, res, FAIL_AT_PREP, u);
		return NULL;
	}
	if (bad_fd(r, sqe))
		res = -EBADF;
	else if (not_a_socket(sqe, def))
		res = -ENOTSOCK;
	else if (poll_first_ends_at_once(r, sqe))
		res = -EAGAIN;
	if (res) {
		standin(r, sqe, res, FAIL_AT_ISSUE, u);
		return NULL;
	}
	return select_send_bundle(r, sqe, u);
}

/* ---- chains ---- */

/*
 * An SQE that needs bufsel in the middle of a chain runs only when the SQEs
 * before it are done: a sentinel NOP takes its place in the kernel's chain
 * (so it fails or runs as the chain decides) and holds it and the rest.
 */
static struct req *cut_chain(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u)
{
	struct req *q = req_alloc(&r->reqs);
	if (!q || req_hold(q, sqe)) {
		if (q)
			req_free(&r->reqs, q);
		standin(r, sqe, -ENOMEM, FAIL_AT_ISSUE, u);
		return NULL;
	}
	q->kind = REQ_SENTINEL;
	q->user_data = sqe->user_data;
	uint16_t personality = sqe->personality;
	/* A drain in the middle of a chain drains the chain's head and forces
	 * it to io-wq, where the members after it run as well (io_init_drain):
	 * the sentinel carries the drain to where the kernel sees it, at the
	 * SQE's submission.  The held SQE does not drain again when it goes to
	 * the kernel later: by then a skip may have turned drains off, and the
	 * kernel would fail it with -EOPNOTSUPP. */
	uint8_t drain = sqe->flags & IOSQE_IO_DRAIN;
	q->held[q->nheld - 1].flags &= (uint8_t)~IOSQE_IO_DRAIN;
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_NOP;
	sqe->flags = drain;
	sqe->personality = personality;
	sqe->user_data = req_tag(&r->reqs, q);
	u->kind = UNDO_REQ;
	u->req = q;
	return q;
}

/* The checks the kernel makes at submission for an emulated SQE, even in
 * the middle of a chain: 0, or the error (which then fails the chain at
 * submission, as it does natively). */
static int prep_check(struct ring *r, const struct io_uring_sqe *sqe, const struct opdef *def)
{
	int res = init_check(r, sqe);
	if (res)
		return res;
	if (def->emulated)
		return emulated_prep(r, sqe, def->emulated);
	if ((res = select_prep_check(r, sqe, def)))
		return res;
	if (def->select == SELECT_INVALID)
		return -EINVAL;
	uint32_t want;
	struct msghdr msg;
	if ((res = read_request(sqe, def, &want, &msg)))
		return res;
	/* io_read_mshot_prep: a multishot read takes its lengths from the buffers. */
	if (def->mshot_no_len && (sqe->len || (def->mshot_no_len == 2 && sqe->addr)))
		return -EINVAL;
	return 0;
}

/* Does bufsel act on this SQE (emulate it, or select its buffer)? */
static int emulated_here(struct ring *r, const struct io_uring_sqe *sqe, const struct opdef *def)
{
	if (def->emulated)
		return 1;
	return (sqe->flags & IOSQE_BUFFER_SELECT) && def->select != SELECT_REFUSED &&
	       def->select != SELECT_NEWER_KERNEL && !ring_pool(r) && group_kind(r, sqe) != POOL_KERNEL_RING;
}

/*
 * The error the kernel gives the SQE at submission, for a look ahead along a
 * chain: io_init_req's generic checks for any opcode, the whole prep for an
 * SQE bufsel acts on.  0 where bufsel cannot tell.
 */
static int rewrite_submit_error(struct ring *r, const struct io_uring_sqe *sqe)
{
	const struct opdef *def = opdef_get(sqe->opcode);
	if (!opdef_known(sqe->opcode))
		return -EINVAL;
	int res = init_check(r, sqe);
	if (res)
		return res;
	if ((sqe->flags & IOSQE_BUFFER_SELECT) && def->select == SELECT_REFUSED)
		return -EOPNOTSUPP;
	if (sqe->ioprio && !def->ioprio)
		return -EINVAL;
	if ((res = personality_check(r, sqe->personality)))
		return res;
	if (!emulated_here(r, sqe, def)) {
		if (sqe->flags & IOSQE_BUFFER_SELECT)
			return 0;
		if (def->rw)
			return rw_kernel_prep(sqe);
		if (def->sr_flags && def->buf != BUF_NONE)
			return net_kernel_prep(sqe, def);
		return def->kernel_prep ? def->kernel_prep(sqe, r->setup_flags) : 0;
	}
	return prep_check(r, sqe, def);
}

/*
 * A member of a chain that fails at submission: the kernel runs none of it.
 * An SQE bufsel acts on becomes the stand-in that fails there with its own
 * error, or, if it passes, a NOP under its user_data, which the failed chain
 * cancels; the kernel's own SQEs go as they are.
 */
static void rewrite_fail_member(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u)
{
	const struct opdef *def = opdef_get(sqe->opcode);
	u->kind = UNDO_NONE;
	if (!emulated_here(r, sqe, def))
		return;
	if (!reject_at_submission(r, sqe, prep_check(r, sqe, def), u))
		standin_ok(sqe);
}

/* Cancels one of bufsel's requests now: 1 if the kernel found it. */
static int cancel_tag_now(struct ring *r, uint64_t tag)
{
	struct io_uring_sync_cancel_reg reg = {
		.addr = tag, .fd = -1, .timeout = { .tv_sec = 1, .tv_nsec = 0 },
	};
	return sys_call6(__NR_io_uring_register, ring_fd(r), IORING_REGISTER_SYNC_CANCEL, (long)&reg, 1,
			 0, 0) == 0;
}

/*
 * A cancel by user_data must find the requests bufsel renamed.  One of them:
 * the cancel is pointed at its tag.  All of them (IORING_ASYNC_CANCEL_ALL):
 * bufsel's are cancelled right here (their -ECANCELED CQEs come first, as
 * the kernel posts a cancelled request's before the cancel's), the cancel
 * itself finds the program's others, and its CQE counts both.
 */
static void retarget_cancel(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u)
{
	uint64_t tags[64];
	if (sqe->cancel_flags & (IORING_ASYNC_CANCEL_FD | IORING_ASYNC_CANCEL_ANY))
		return;
	if (!(sqe->cancel_flags & IORING_ASYNC_CANCEL_ALL)) {
		if (req_tags_of(&r->reqs, sqe->addr, tags, 1))
			sqe->addr = tags[0];
		return;
	}
	unsigned n = req_tags_of(&r->reqs, sqe->addr, tags, 64), found = 0;
	for (unsigned i = 0; i < n; i++)
		found += (unsigned)cancel_tag_now(r, tags[i]);
	if (!found)
		return;
	struct req *q = req_alloc(&r->reqs);
	if (!q)
		return;
	q->kind = REQ_CANCEL_ALL;
	q->user_data = sqe->user_data;
	q->res = (int32_t)found;
	sqe->user_data = req_tag(&r->reqs, q);
	u->kind = UNDO_REQ;
	u->req = q;
}

/* A cancel of every request with a user_data: bufsel cancels its own at
 * once (retarget_cancel), which cannot be undone. */
static int cancels_all_by_user_data(const struct io_uring_sqe *sqe)
{
	return sqe->opcode == IORING_OP_ASYNC_CANCEL && (sqe->cancel_flags & IORING_ASYNC_CANCEL_ALL) &&
	       !(sqe->cancel_flags & (IORING_ASYNC_CANCEL_FD | IORING_ASYNC_CANCEL_ANY));
}

/* A TIMEOUT whose count bufsel keeps (count_timeout), as far as the SQE
 * alone tells. */
static int counts_completions(const struct io_uring_sqe *sqe)
{
	return sqe->opcode == IORING_OP_TIMEOUT && (uint32_t)sqe->off && !(sqe->flags & SQE_LINK_FLAGS) &&
	       !(sqe->timeout_flags & IORING_TIMEOUT_MULTISHOT);
}

static int rewrite_wants(const struct io_uring_sqe *sqe)
{
	return rewrite_wanted(sqe) || counts_completions(sqe) || sqe->opcode == IORING_OP_TIMEOUT_REMOVE ||
	       (sqe->opcode == IORING_OP_POLL_REMOVE && compat_sqe_skip_shadowed());
}

/*
 * The program's TIMEOUT with a completion count, alone (a chain's member is
 * issued only when its turn comes, and a TIMEOUT that links on must fail or
 * go on as the kernel's does): the kernel gets the timer alone (off 0)
 * under a tag, and bufsel counts the program's CQEs (ring.h, cq_seq0).
 * Without a request slot it goes as it is, counted by the kernel.
 */
static void count_timeout(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u)
{
	struct req *q = req_alloc(&r->reqs);
	if (!q)
		return;
	q->kind = REQ_TIMEOUT;
	q->user_data = sqe->user_data;
	q->target = r->cq_seq0 + (uint32_t)sqe->off;
	if (sqe->flags & IOSQE_CQE_SKIP_SUCCESS)
		q->flags |= REQ_SKIP_SUCCESS;
	sqe->off = 0;
	sqe->user_data = req_tag(&r->reqs, q);
	/* In the order they complete in, as the kernel's timeout list is. */
	spin_lock(&r->x->cq_lock);
	struct req **at = &r->counting;
	while (*at && (int32_t)(q->target - (*at)->target) >= 0)
		at = &(*at)->next_counting;
	q->next_counting = *at;
	*at = q;
	spin_unlock(&r->x->cq_lock);
	u->kind = UNDO_REQ;
	u->req = q;
}

/* A TIMEOUT_REMOVE or TIMEOUT_UPDATE finds the program's TIMEOUT by
 * user_data: one bufsel counts goes by its tag, or, having reached its
 * count, is found no more. */
static void retarget_timeout(struct ring *r, struct io_uring_sqe *sqe)
{
	if (sqe->timeout_flags & IORING_LINK_TIMEOUT_UPDATE)
		return;
	struct req *q = req_find_timeout(&r->reqs, sqe->addr);
	if (!q) {
		/* One bufsel gave a skip flag is in the kernel under its tag. */
		if ((q = req_find_skip(&r->reqs, sqe->addr, IORING_OP_TIMEOUT)))
			sqe->addr = req_tag(&r->reqs, q);
		return;
	}
	if (q->flags & REQ_DONE) {
		sqe->addr = NO_SUCH_REQUEST;
		return;
	}
	sqe->addr = req_tag(&r->reqs, q);
	/* A removal that passes io_timeout_remove_prep takes the TIMEOUT off
	 * the kernel's list before its own CQE is posted: that CQE, and those
	 * after it, no longer count for it. */
	if (!sqe->timeout_flags && !sqe->buf_index && !sqe->len && !sqe->splice_fd_in &&
	    !(sqe->flags & (IOSQE_FIXED_FILE | IOSQE_BUFFER_SELECT))) {
		spin_lock(&r->x->cq_lock);
		counting_unlink(r, q);
		spin_unlock(&r->x->cq_lock);
	}
}

static struct req *select_by_opcode(struct ring *r, struct io_uring_sqe *sqe, const struct opdef *def,
				    struct rewrite_undo *u);

/*
 * An SQE the kernel hands to io-wq selects its buffer when a worker issues
 * it, which is after the submitting task has gone through the rest of the
 * batch: an inline READ behind it takes the group's first buffer, and a
 * PROVIDE_BUFFERS behind it fills the group it reads from.  Not one whose
 * selection decides what the SQEs after it do (a receive that would hold
 * the rest of its chain), nor one with IOSQE_CQE_SKIP_SUCCESS, which turns
 * the kernel's skip rule on as it is placed, nor a drained one, nor one
 * the kernel holds in its defer list (r->drain_waits): behind a drain that
 * waits, the SQEs after it wait too (the kernel forces them to io-wq while
 * the drain is active) and issue in SQE order, so selecting in SQE order,
 * now, is the closer answer.
 */
static int selects_in_worker(const struct ring *r, const struct io_uring_sqe *sqe, const struct opdef *def)
{
	if (!worker_after_batch(r, sqe))
		return 0;
	if (def->select == SELECT_AT_ISSUE)
		return !def->bundle || !(sqe->ioprio & IORING_RECVSEND_BUNDLE);
	return def->select == SELECT_WHEN_READABLE && !(sqe->ioprio & IORING_RECV_MULTISHOT) &&
	       !(sqe->flags & SQE_LINK_FLAGS);
}

static void rewrite_deferred(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u)
{
	u->deferred = 0;
	r->to_wq = 1;
	r->forced_async = u->forced;
	const struct opdef *def = opdef_get(sqe->opcode);
	if (def->emulated)
		emulated_issue(r, sqe, def, u);
	else
		select_by_opcode(r, sqe, def, u);
}

/*
 * A request that selects from a ring the kernel keeps goes to the kernel as
 * it is; when statistics are wanted, under a tag (REQ_WATCH), so that its
 * CQEs count for the ring (pool_ring_observe).  Not one with
 * IOSQE_CQE_SKIP_SUCCESS, whose successes never come back to be counted.
 */
static void watch_kernel_ring(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u)
{
	if (!bufsel.conf.stats[0] || (sqe->flags & IOSQE_CQE_SKIP_SUCCESS))
		return;
	struct req *q = req_alloc(&r->reqs);
	if (!q)
		return;
	q->kind = REQ_WATCH;
	q->user_data = sqe->user_data;
	q->buf = (struct pool_buf){ .bgid = sqe->buf_group };
	if ((sqe->ioprio & IORING_RECVSEND_BUNDLE) &&
	    (sqe->opcode == IORING_OP_RECV || sqe->opcode == IORING_OP_SEND))
		q->flags |= REQ_WATCH_BUNDLE;
	sqe->user_data = req_tag(&r->reqs, q);
	u->kind = UNDO_REQ;
	u->req = q;
}

void *rewrite_sqe(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u, int in_chain)
{
	const struct opdef *def = opdef_get(sqe->opcode);
	u->kind = UNDO_NONE;
	if (sqe->opcode == IORING_OP_TIMEOUT) {
		if (!in_chain && counts_completions(sqe))
			count_timeout(r, sqe, u);
		return NULL;
	}
	if (sqe->opcode == IORING_OP_TIMEOUT_REMOVE) {
		if (r->reqs.live)
			retarget_timeout(r, sqe);
		return NULL;
	}
	if (sqe->opcode == IORING_OP_POLL_REMOVE) {
		/* A poll bufsel gave a skip flag, found by its tag. */
		struct req *q = r->reqs.live ? req_find_skip(&r->reqs, sqe->addr, IORING_OP_POLL_ADD) : NULL;
		if (q)
			sqe->addr = req_tag(&r->reqs, q);
		return NULL;
	}
	if (sqe->opcode == IORING_OP_ASYNC_CANCEL) {
		/* In a chain it cancels when its turn comes, not now. */
		if (in_chain && r->reqs.live && cancels_all_by_user_data(sqe))
			return cut_chain(r, sqe, u);
		if (r->reqs.live)
			retarget_cancel(r, sqe, u);
		return NULL;
	}
	int select = sqe->flags & IOSQE_BUFFER_SELECT;
	if (select || def->emulated)
		atomic_fetch_add_explicit(&bufsel.n.emulated, 1, memory_order_relaxed);
	if (ring_pool(r)) {
		standin(r, sqe, -ENOMEM, FAIL_AT_ISSUE, u);
		return NULL;
	}
	if (select) {
		if (group_kind(r, sqe) == POOL_KERNEL_RING) {
			watch_kernel_ring(r, sqe, u);
			return NULL;	/* the kernel's group */
		}
		if (init_check(r, sqe))
			return NULL;	/* the kernel's error */
		int res = select_prep_check(r, sqe, def);
		if (res) {
			standin(r, sqe, res, FAIL_AT_PREP, u);
			return NULL;
		}
	}
	if (in_chain && (def->emulated || (select && def->select != SELECT_REFUSED &&
					   def->select != SELECT_NEWER_KERNEL))) {
		if (reject_at_submission(r, sqe, prep_check(r, sqe, def), u))
			return NULL;
		return cut_chain(r, sqe, u);
	}
	if (def->emulated) {
		emulate_buffers(r, sqe, def, u);
		return NULL;
	}
	if (!select)
		return NULL;
	if (selects_in_worker(r, sqe, def)) {
		u->deferred = 1;
		u->forced = (uint8_t)r->forced_async;
		return NULL;
	}
	return select_by_opcode(r, sqe, def, u);
}

static struct req *select_by_opcode(struct ring *r, struct io_uring_sqe *sqe, const struct opdef *def,
				    struct rewrite_undo *u)
{
	switch (def->select) {
	case SELECT_AT_ISSUE:
		return select_issue(r, sqe, def, u);
	case SELECT_WHEN_READABLE:
		if (sqe->ioprio & IORING_RECV_MULTISHOT)
			return select_recv_multi(r, sqe, def, u);
		return select_recv(r, sqe, def, u);
	case SELECT_MULTISHOT:
		return select_recv_multi(r, sqe, def, u);
	case SELECT_INVALID:
		standin(r, sqe, -EINVAL, FAIL_AT_PREP, u);
		return NULL;
	default:
		standin(r, sqe, -EOPNOTSUPP, FAIL_AT_PREP, u);
		return NULL;
	}
}

static int rewrite_hold(struct ring *r, void *capture, struct io_uring_sqe *sqe,
			struct rewrite_undo *u)
{
	struct req *q = capture;
	u->kind = UNDO_NONE;
	int first = q->kind == REQ_RECV_WAIT && !q->nheld && !q->timeout;
	if (first && sqe->opcode != IORING_OP_LINK_TIMEOUT && q->poll_slot) {
		/* What follows is held, so the POLL_ADD ends the kernel's chain:
		 * linked to nothing, the kernel would take it for a chain whose
		 * end never came and hand it to a worker thread, where a cancel
		 * can find it running (-EALREADY) and miss it. */
		q->poll_slot->flags &= ~SQE_LINK_FLAGS;
	}
	q->poll_slot = NULL;
	if (first && sqe->opcode == IORING_OP_LINK_TIMEOUT) {
		/* The timeout guards the wait: it stays linked to the POLL_ADD,
		 * and what follows it waits with the receive. */
		struct req *t = req_alloc(&r->reqs);
		if (t) {
			t->kind = REQ_LINK_TIMEOUT;
			t->user_data = sqe->user_data;
			t->owner = q;
			q->timeout = t;
			sqe->user_data = req_tag(&r->reqs, t);
			sqe->flags &= ~SQE_LINK_FLAGS;
			u->kind = UNDO_REQ;
			u->req = t;
			return 1;
		}
	}
	if (!req_hold(q, sqe))
		return 0;
	/* No memory to hold it: it fails with -ENOMEM from its own real slot,
	 * and the rest of the chain goes to the kernel linked behind it (so it
	 * is cancelled, as behind any failed link); what was held before it
	 * now ends the held part of the chain. */
	log_once(BUFSEL_LOG_ERROR, ONCE_HOLD_NOMEM, "out of memory holding a chain: an SQE of it fails with -ENOMEM");
	struct io_uring_sqe *last = q->nheld ? &q->held[q->nheld - 1] : q->kind == REQ_RECV_WAIT ? &q->orig : NULL;
	if (last)
		last->flags &= ~SQE_LINK_FLAGS;
	standin(r, sqe, -ENOMEM, FAIL_AT_ISSUE, u);
	return 2;
}

void rewrite_undo(struct ring *r, struct rewrite_undo *u)
{
	switch (u->kind) {
	case UNDO_SELECT:
		/* Not yet consumed, delivered or not (rewrite_commit). */
		if (u->req->bun && u->req->bun->n)
			bundle_putback(r, u->req->bun);
		else if (!(u->req->flags & REQ_COMMITTED))	/* committed, for good */
			pool_locked_putback(r, &u->req->buf);
		req_free(&r->reqs, u->req);
		break;
	case UNDO_REQ:
		if (u->req->flags & REQ_STANDIN_BUF)
			pool_locked_putback(r, &u->req->buf);
		if (u->req->kind == REQ_TIMEOUT) {
			spin_lock(&r->x->cq_lock);
			counting_unlink(r, u->req);
			spin_unlock(&r->x->cq_lock);
		}
		req_free(&r->reqs, u->req);
		break;
	case UNDO_REMOVE:
		if (u->req)
			req_free(&r->reqs, u->req);
		spin_lock(&r->x->pool_lock);
		pool_remove_undo(r->x->pool, &u->kept);
		spin_unlock(&r->x->pool_lock);
		break;
	case UNDO_PROVIDE:
		if (u->req)
			req_free(&r->reqs, u->req);
		spin_lock(&r->x->pool_lock);
		pool_provide_undo(r->x->pool, u->bgid, u->added, u->created);
		spin_unlock(&r->x->pool_lock);
		break;
	}
	if (u->skip)
		req_free(&r->reqs, u->skip);
	u->skip = NULL;
	u->kind = UNDO_NONE;
	u->deliver = 0;
}

/* The request may be done and freed by now: the buffer is u's copy. */
void rewrite_commit(struct ring *r, struct rewrite_undo *u)
{
	if (u->kind == UNDO_SELECT && u->deliver)
		pool_locked_consume(r, &u->buf);
	if (u->kind == UNDO_REMOVE && u->kept.slots) {
		spin_lock(&r->x->pool_lock);
		pool_kept_free(r->x->pool, &u->kept);
		spin_unlock(&r->x->pool_lock);
	}
	u->deliver = 0;
	u->skip = NULL;
}

/* What cannot be undone if the kernel does not take the SQE: the SQEs
 * before it go to the kernel first.  Not a REMOVE_BUFFERS, which keeps
 * what it took until then (going alone would let the task work of what
 * precedes it, a failed chain's members, post before its CQE, which the
 * kernel posts with the batch). */
static int rewrite_barrier(struct ring *r, const struct io_uring_sqe *sqe)
{
	if (cancels_all_by_user_data(sqe))
		return 1;
	/* One that takes from a group a receive before it may give back to
	 * (batch_recv_add). */
	if (!(sqe->flags & IOSQE_BUFFER_SELECT) && opdef_get(sqe->opcode)->emulated != EMU_REMOVE_BUFFERS)
		return 0;
	for (struct req *q = r->batch_recvs; q; q = q->next_batch)
		if (q->orig.buf_group == sqe->buf_group && recv_may_return(q))
			return 2;
	return 0;
}

/* A receive that selects from a group bufsel keeps is bufsel's from its
 * poll to its last CQE: its multishot and poll-first forms are there on
 * any kernel, unless the kernel is to keep the rings, and BUFSEL_KERNEL
 * then means that kernel as it was. */
static uint32_t rewrite_offers(struct ring *r, const struct io_uring_sqe *sqe)
{
	if (bufsel.conf.rings == BUFSEL_RINGS_KERNEL)
		return 0;
	/* Multishot receive is bufsel's: on a receive without a buffer to
	 * select the flag stays, for the kernel beneath to refuse (-EINVAL)
	 * as every kernel with multishot receive does; cleared, it would make
	 * a plain receive that waits. */
	if (!(sqe->flags & IOSQE_BUFFER_SELECT))
		return sqe->opcode == IORING_OP_RECV || sqe->opcode == IORING_OP_RECVMSG
			       ? sqe->ioprio & IORING_RECV_MULTISHOT
			       : 0;
	if (r->x->pool && group_kind(r, sqe) == POOL_KERNEL_RING)
		return 0;
	/* Bundles only where the features said so (setup.c). */
	uint32_t bundle = (sqe->ioprio & IORING_RECVSEND_BUNDLE) && bufring_keeps_all() ? IORING_RECVSEND_BUNDLE : 0;
	if (sqe->opcode == IORING_OP_SEND)
		return bundle;
	if (sqe->opcode == IORING_OP_RECV)
		return IORING_RECV_MULTISHOT | IORING_RECVSEND_POLL_FIRST | bundle;
	if (sqe->opcode == IORING_OP_RECVMSG)
		return IORING_RECV_MULTISHOT | IORING_RECVSEND_POLL_FIRST;
	/* A stream of READs and polls: nothing of it reaches the kernel. */
	if (sqe->opcode == OP_READ_MULTISHOT_NR)
		return COMPAT_OFFER_OPCODE;
	return 0;
}

static int rewrite_probe(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u)
{
	struct req *q = req_alloc(&r->reqs);
	u->kind = UNDO_NONE;
	if (!q)
		return -ENOMEM;
	q->kind = REQ_PROBE;
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_NOP;
	sqe->user_data = req_tag(&r->reqs, q);
	u->kind = UNDO_REQ;
	u->req = q;
	return 0;
}

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

static void rewrite_skip(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u, int in_chain)
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

const struct ring_hooks rewrite_hooks = {
	.wants = rewrite_wants,
	.rewrite = rewrite_sqe,
	.hold = rewrite_hold,
	.undo = rewrite_undo,
	.commit = rewrite_commit,
	.complete = rewrite_complete_cqe,
	.foreign = rewrite_foreign_cqe,
	.barrier = rewrite_barrier,
	.probe = rewrite_probe,
	.submit_error = rewrite_submit_error,
	.fail_member = rewrite_fail_member,
	.offers = rewrite_offers,
	.deferred = rewrite_deferred,
	.followup = rewrite_followup,
	.counted = rewrite_counted,
	.skip = rewrite_skip,
};
