#include "preload/select/opdef.h"

#include <errno.h>
#include <linux/io_uring.h>

/* Opcodes newer than the system header, named by value. */
#define OP_READ_MULTISHOT 49
#define OP_LAST_KNOWN 64

/* net.c's RECVMSG_FLAGS and SENDMSG_FLAGS (6.18): POLL_FIRST, MULTISHOT,
 * BUNDLE; POLL_FIRST, BUNDLE, SEND_VECTORIZED. */
#define RECV_SR_FLAGS (0x01 | 0x02 | 0x10)
#define SEND_SR_FLAGS (0x01 | 0x10 | 0x20)

/* io_nop_prep (6.18): INJECT_RESULT, FILE, FIXED_FILE, FIXED_BUFFER, TW;
 * CQE32 only on a ring with 32-byte CQEs. */
#define NOP_FLAGS 0x1fu
#define NOP_CQE32 0x20u
#define SETUP_CQE32 (1u << 11)
#define SETUP_CQE_MIXED (1u << 18)

static int nop_prep(const struct io_uring_sqe *sqe, unsigned setup_flags)
{
	uint32_t f = sqe->rw_flags;
	if (f & NOP_CQE32)
		return setup_flags & (SETUP_CQE32 | SETUP_CQE_MIXED) ? 0 : -EINVAL;
	return f & ~NOP_FLAGS ? -EINVAL : 0;
}

/* io_async_cancel_prep: CANCEL_ALL, FD, ANY, FD_FIXED, USERDATA, OP. */
#define CANCEL_FLAGS 0x3fu
#define CANCEL_FD 0x2u
#define CANCEL_ANY 0x4u
#define CANCEL_OP 0x20u

static int cancel_prep(const struct io_uring_sqe *sqe, unsigned setup_flags)
{
	(void)setup_flags;
	uint32_t f = sqe->cancel_flags;
	if (sqe->off || sqe->splice_fd_in || (f & ~CANCEL_FLAGS))
		return -EINVAL;
	if ((f & (CANCEL_FD | CANCEL_OP)) && (f & CANCEL_ANY))
		return -EINVAL;
	return 0;
}

/* io_fsync_prep: no addr, buf_index or splice_fd_in; only DATASYNC. */
static int fsync_prep(const struct io_uring_sqe *sqe, unsigned setup_flags)
{
	(void)setup_flags;
	if (sqe->addr || sqe->buf_index || sqe->splice_fd_in || (sqe->fsync_flags & ~IORING_FSYNC_DATASYNC))
		return -EINVAL;
	return 0;
}

/* io_timeout_prep's first checks: one timespec, no buffer index, no
 * splice fd (what BUFSEL_KERNEL's refused SQEs become, compat.c). */
static int timeout_prep(const struct io_uring_sqe *sqe, unsigned setup_flags)
{
	(void)setup_flags;
	return sqe->buf_index || sqe->len != 1 || sqe->splice_fd_in ? -EINVAL : 0;
}

static const struct opdef opdefs[OP_LAST_KNOWN] = {
	[IORING_OP_NOP] = { .name = "NOP", .kernel_prep = nop_prep },
	[IORING_OP_READV] = { .ioprio = 1, .rw = 1, .needs_file = 1, .name = "READV", .select = SELECT_AT_ISSUE, .buf = BUF_IOVEC },
	[IORING_OP_WRITEV] = { .ioprio = 1, .rw = 1, .needs_file = 1, .name = "WRITEV" },
	[IORING_OP_FSYNC] = { .needs_file = 1, .name = "FSYNC", .kernel_prep = fsync_prep },
	[IORING_OP_READ_FIXED] = { .ioprio = 1, .rw = 1, .needs_file = 1, .name = "READ_FIXED" },
	[IORING_OP_WRITE_FIXED] = { .ioprio = 1, .rw = 1, .needs_file = 1, .name = "WRITE_FIXED" },
	[IORING_OP_POLL_ADD] = { .needs_file = 1, .name = "POLL_ADD" },
	[IORING_OP_POLL_REMOVE] = { .name = "POLL_REMOVE" },
	[IORING_OP_SYNC_FILE_RANGE] = { .needs_file = 1, .name = "SYNC_FILE_RANGE" },
	[IORING_OP_SENDMSG] = { .ioprio = 1, .needs_file = 1, .name = "SENDMSG" },
	[IORING_OP_RECVMSG] = { .ioprio = 1, .needs_file = 1, .name = "RECVMSG", .select = SELECT_WHEN_READABLE, .buf = BUF_MSGHDR,
				.pollin = 1, .len_int = 1, .sock = 1, .sr_flags = RECV_SR_FLAGS },
	[IORING_OP_TIMEOUT] = { .name = "TIMEOUT", .kernel_prep = timeout_prep },
	[IORING_OP_TIMEOUT_REMOVE] = { .name = "TIMEOUT_REMOVE" },
	[IORING_OP_ACCEPT] = { .ioprio = 1, .needs_file = 1, .name = "ACCEPT" },
	[IORING_OP_ASYNC_CANCEL] = { .name = "ASYNC_CANCEL", .kernel_prep = cancel_prep },
	[IORING_OP_LINK_TIMEOUT] = { .name = "LINK_TIMEOUT" },
	[IORING_OP_CONNECT] = { .needs_file = 1, .name = "CONNECT" },
	[IORING_OP_FALLOCATE] = { .needs_file = 1, .name = "FALLOCATE" },
	[IORING_OP_OPENAT] = { .name = "OPENAT" },
	[IORING_OP_CLOSE] = { .name = "CLOSE" },
	[IORING_OP_FILES_UPDATE] = { .name = "FILES_UPDATE" },
	[IORING_OP_STATX] = { .name = "STATX" },
	[IORING_OP_READ] = { .ioprio = 1, .rw = 1, .needs_file = 1, .name = "READ", .select = SELECT_AT_ISSUE, .buf = BUF_ADDR_LEN },
	[IORING_OP_WRITE] = { .ioprio = 1, .rw = 1, .needs_file = 1, .name = "WRITE" },
	[IORING_OP_FADVISE] = { .needs_file = 1, .name = "FADVISE" },
	[IORING_OP_MADVISE] = { .name = "MADVISE" },
	/* 6.10+ sends from a selected buffer: bound at issue, like a read. */
	[IORING_OP_SEND] = { .ioprio = 1, .needs_file = 1, .name = "SEND", .select = SELECT_AT_ISSUE, .buf = BUF_ADDR_LEN,
			     .len_int = 1, .sock = 1, .bundle = 1, .missing_enoent = 1,
			     .send_addr = 1, .sr_flags = SEND_SR_FLAGS },
	[IORING_OP_RECV] = { .ioprio = 1, .needs_file = 1, .name = "RECV", .select = SELECT_WHEN_READABLE, .buf = BUF_ADDR_LEN,
			     .pollin = 1, .len_int = 1, .sock = 1, .null_putback = 1, .sr_flags = RECV_SR_FLAGS },
	[IORING_OP_OPENAT2] = { .name = "OPENAT2" },
	[IORING_OP_EPOLL_CTL] = { .name = "EPOLL_CTL" },
	[IORING_OP_SPLICE] = { .needs_file = 1, .name = "SPLICE" },
	[IORING_OP_PROVIDE_BUFFERS] = { .name = "PROVIDE_BUFFERS", .emulated = EMU_PROVIDE_BUFFERS },
	[IORING_OP_REMOVE_BUFFERS] = { .name = "REMOVE_BUFFERS", .emulated = EMU_REMOVE_BUFFERS },
	[IORING_OP_TEE] = { .needs_file = 1, .name = "TEE" },
	[IORING_OP_SHUTDOWN] = { .needs_file = 1, .name = "SHUTDOWN" },
	[IORING_OP_RENAMEAT] = { .name = "RENAMEAT" },
	[IORING_OP_UNLINKAT] = { .name = "UNLINKAT" },
	[IORING_OP_MKDIRAT] = { .name = "MKDIRAT" },
	[IORING_OP_SYMLINKAT] = { .name = "SYMLINKAT" },
	[IORING_OP_LINKAT] = { .name = "LINKAT" },
	[IORING_OP_MSG_RING] = { .needs_file = 1, .name = "MSG_RING" },
	[IORING_OP_FSETXATTR] = { .needs_file = 1, .name = "FSETXATTR" },
	[IORING_OP_SETXATTR] = { .name = "SETXATTR" },
	[IORING_OP_FGETXATTR] = { .needs_file = 1, .name = "FGETXATTR" },
	[IORING_OP_GETXATTR] = { .name = "GETXATTR" },
	[IORING_OP_SOCKET] = { .name = "SOCKET" },
	[IORING_OP_URING_CMD] = { .needs_file = 1, .name = "URING_CMD", .select = SELECT_INVALID },
	[IORING_OP_SEND_ZC] = { .ioprio = 1, .needs_file = 1, .name = "SEND_ZC" },
	[IORING_OP_SENDMSG_ZC] = { .ioprio = 1, .needs_file = 1, .name = "SENDMSG_ZC" },
	[OP_READ_MULTISHOT] = { .ioprio = 1, .rw = 1, .needs_file = 1, .name = "READ_MULTISHOT", .mshot_no_len = 2, .select = SELECT_MULTISHOT,
			      .buf = BUF_ADDR_LEN, .null_putback = 1 },
	[50] = { .name = "WAITID" },
	[51] = { .name = "FUTEX_WAIT" },
	[52] = { .name = "FUTEX_WAKE" },
	[53] = { .name = "FUTEX_WAITV" },
	[54] = { .needs_file = 1, .name = "FIXED_FD_INSTALL" },
	[55] = { .needs_file = 1, .name = "FTRUNCATE" },
	[56] = { .needs_file = 1, .name = "BIND" },
	[57] = { .needs_file = 1, .name = "LISTEN" },
	[58] = { .ioprio = 1, .needs_file = 1, .name = "RECV_ZC" },
	[59] = { .needs_file = 1, .name = "EPOLL_WAIT" },
	[60] = { .ioprio = 1, .rw = 1, .needs_file = 1, .name = "READV_FIXED" },
	[61] = { .ioprio = 1, .rw = 1, .needs_file = 1, .name = "WRITEV_FIXED" },
	[62] = { .name = "PIPE" },
};
_Static_assert(IORING_OP_LAST <= OP_LAST_KNOWN, "every opcode the headers know has a row");

static const struct opdef opdef_unknown = { .name = "UNKNOWN" };

int opdef_known(uint8_t opcode)
{
	return opcode < OP_LAST_KNOWN && opdefs[opcode].name;
}

int opdef_passes_flag_checks(const struct io_uring_sqe *sqe)
{
	const uint8_t valid = IOSQE_FIXED_FILE | IOSQE_IO_DRAIN | IOSQE_IO_LINK | IOSQE_IO_HARDLINK |
			      IOSQE_ASYNC | IOSQE_BUFFER_SELECT | IOSQE_CQE_SKIP_SUCCESS;
	if (!opdef_known(sqe->opcode) || (sqe->flags & ~valid))
		return 0;
	return !(sqe->flags & IOSQE_BUFFER_SELECT) || opdefs[sqe->opcode].select != SELECT_REFUSED;
}

int opdef_skip_disables_drain(const struct io_uring_sqe *sqe)
{
	return (sqe->flags & IOSQE_CQE_SKIP_SUCCESS) && opdef_passes_flag_checks(sqe);
}

const struct opdef *opdef_get(uint8_t opcode)
{
	if (opcode < OP_LAST_KNOWN && opdefs[opcode].name)
		return &opdefs[opcode];
	return &opdef_unknown;
}

int opdef_check(void)
{
	for (unsigned op = 0; op < IORING_OP_LAST; op++)
		if (!opdefs[op].name)
			return -EINVAL;
	return 0;
}
