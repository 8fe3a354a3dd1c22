/*
 * What the kernel checks of an SQE at submission, before anything of it
 * runs: io_init_req's generic rules (flags, ioprio, personality), then the
 * prep of the opcodes bufsel selects for or looks at along a chain
 * (io_prep_rw, io_recvmsg_prep, io_sendmsg_prep), in the kernel's order and
 * with its errors.  Only the SQE and the program's memory are read: no
 * pool, no file.  The personalities checked here are noted by rewrite.c
 * (rewrite_note_personality).
 */
#define _GNU_SOURCE
#include "preload/select/prep.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <linux/capability.h>

#include "preload/select/opdef.h"
#include "preload/shadow/kernel_ops.h"
#include "preload/shadow/ring.h"
#include "preload/sys.h"
#include "preload/uaccess.h"
#include "preload/uring_abi.h"

/* The generic checks io_init_req makes before an opcode's own prep. */
int rewrite_init_check(struct ring *r, const struct io_uring_sqe *sqe)
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

/* io_init_req: a personality the ring does not have is -EINVAL. */
int rewrite_personality_check(const struct ring *r, uint16_t id)
{
	if (!id || r->personality_overflow)
		return 0;
	for (unsigned i = 0; i < r->npersonality; i++)
		if (r->personality[i] == id)
			return 0;
	return -EINVAL;
}

#define RW_ATTR_FLAG_PI 1ULL	/* the only attribute 6.18 knows */

/* sqe->attr_type_mask, where older headers have __pad2[0]; 0 for a kernel
 * that never reads it (a real 5.10 takes a READ with any mask there). */
static uint64_t sqe_attr_type_mask(const struct io_uring_sqe *sqe)
{
	uint64_t mask;
	memcpy(&mask, (const char *)sqe + 56, sizeof(mask));
	return mask && kernel_rule(KERNEL_RW_ATTR_UNREAD) ? 0 : mask;
}

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

/* access_ok for a range the kernel takes whole: 0 or -EFAULT. */
int rewrite_user_range_check(uint64_t addr, uint64_t len)
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
		if (rewrite_user_range_check((uint64_t)(uintptr_t)iov.iov_base, len))
			return -EFAULT;
	}
	return 0;
}

/* io_prep_rw for a request without buffer select, after io_init_req: the
 * ioprio class, the attribute, then the buffer imported (a plain READ or
 * WRITE range checked, READV/WRITEV's iovec read).  0 or the error. */
int rewrite_rw_kernel_prep(const struct io_uring_sqe *sqe)
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
		return rewrite_user_range_check(sqe->addr, sqe->len > MAX_RW_COUNT_KERNEL ? MAX_RW_COUNT_KERNEL : sqe->len);
	case IORING_OP_READV:
	case IORING_OP_WRITEV:
		return iovec_prep_check(sqe->addr, sqe->len);
	default:
		return 0;
	}
}

/*
 * What the kernel rejects before a buffer-select SQE selects anything, past
 * rewrite_init_check: io_init_req's opcode, BUFFER_SELECT and ioprio rules, in its
 * order, then io_prep_rw's ioprio class and attribute mask.  The rest of an
 * opcode's prep is rewrite_read_request's.  0 or the error.
 */
int rewrite_select_prep_check(const struct ring *r, const struct io_uring_sqe *sqe,
			      const struct opdef *def)
{
	if (!opdef_known(sqe->opcode))
		return -EINVAL;
	if ((sqe->flags & IOSQE_BUFFER_SELECT) && def->select == SELECT_REFUSED)
		return -EOPNOTSUPP;
	if (sqe->ioprio && !def->ioprio)
		return -EINVAL;
	int res = rewrite_personality_check(r, sqe->personality);
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

/* io_uring_sqe's bytes 44-47, where older headers lack the names: optlen
 * (RECV/RECVMSG) or addr_len and __pad3[0] (SEND). */
uint32_t rewrite_sqe_word44(const struct io_uring_sqe *sqe)
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
	uint32_t w44 = rewrite_sqe_word44(sqe);
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
int rewrite_read_request(const struct io_uring_sqe *sqe, const struct opdef *def, uint32_t *want,
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
 * rewrite_read_request's checks, a multishot receive refused, then the buffer
 * imported at prep (import_ubuf's range; RECVMSG's msghdr and iovec).
 * A vectored or bundle SEND is left to the kernel.  0 or the error.
 */
int rewrite_net_kernel_prep(const struct io_uring_sqe *sqe, const struct opdef *def)
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
		return rewrite_user_range_check(sqe->addr, sqe->len > MAX_RW_COUNT_KERNEL ? MAX_RW_COUNT_KERNEL : sqe->len);
	struct msghdr msg;
	if (read_msghdr(&msg, sqe->addr))
		return -EFAULT;
	if (msg.msg_name && (int)msg.msg_namelen < 0)
		return -EINVAL;
	if (msg.msg_iovlen > UIO_MAXIOV_KERNEL)
		return -EMSGSIZE;
	return iovec_prep_check((uint64_t)(uintptr_t)msg.msg_iov, (uint32_t)msg.msg_iovlen);
}
