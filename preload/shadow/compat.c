/*
 * BUFSEL_KERNEL=X.Y: what a program sees of io_uring on an older kernel.
 * One table per kind of thing the kernel added over time (setup flags,
 * feature bits, enter flags, register opcodes, request opcodes, SQE flags),
 * each entry the release that brought it; whatever is newer than the
 * emulated kernel is refused with the error that kernel gives (-EINVAL: it
 * does not know the bit or the opcode), hidden from the feature bits and the
 * probe, and never used by bufsel itself.  Buffer selection and
 * PROVIDE/REMOVE_BUFFERS stay: they are what bufsel adds to such a kernel.
 *
 * Versions are major << 8 | minor, as in struct bufsel_conf.  A bit or an
 * opcode past the end of a table is newer than anything listed, so it is
 * refused whenever a kernel is emulated.
 */
#include "preload/shadow/compat.h"

#include <errno.h>
#include <linux/io_uring.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "conf/options.h"
#include "preload/uring_abi.h"

#define V(maj, min) ((uint16_t)((maj) << 8 | (min)))
#define ROW(n, maj, min) { #n, V(maj, min) }

struct compat_row {
	const char *name;
	uint16_t since;
};

/* IORING_SETUP_*, by bit. */
static const struct compat_row setup_flags[] = {
	ROW(IOPOLL, 5, 1), ROW(SQPOLL, 5, 1), ROW(SQ_AFF, 5, 1), ROW(CQSIZE, 5, 5),
	ROW(CLAMP, 5, 6), ROW(ATTACH_WQ, 5, 6), ROW(R_DISABLED, 5, 10), ROW(SUBMIT_ALL, 5, 18),
	ROW(COOP_TASKRUN, 5, 19), ROW(TASKRUN_FLAG, 5, 19), ROW(SQE128, 5, 19), ROW(CQE32, 5, 19),
	ROW(SINGLE_ISSUER, 6, 0), ROW(DEFER_TASKRUN, 6, 1), ROW(NO_MMAP, 6, 5),
	ROW(REGISTERED_FD_ONLY, 6, 5), ROW(NO_SQARRAY, 6, 6), ROW(HYBRID_IOPOLL, 6, 13),
	ROW(CQE_MIXED, 6, 18),
};

/* IORING_FEAT_*, by bit. */
static const struct compat_row features[] = {
	ROW(SINGLE_MMAP, 5, 4), ROW(NODROP, 5, 5), ROW(SUBMIT_STABLE, 5, 5), ROW(RW_CUR_POS, 5, 6),
	ROW(CUR_PERSONALITY, 5, 6), ROW(FAST_POLL, 5, 7), ROW(POLL_32BITS, 5, 9),
	ROW(SQPOLL_NONFIXED, 5, 11), ROW(EXT_ARG, 5, 11), ROW(NATIVE_WORKERS, 5, 12),
	ROW(RSRC_TAGS, 5, 13), ROW(CQE_SKIP, 5, 17), ROW(LINKED_FILE, 5, 17), ROW(REG_REG_RING, 6, 3),
	ROW(RECVSEND_BUNDLE, 6, 10), ROW(MIN_TIMEOUT, 6, 12), ROW(RW_ATTR, 6, 15), ROW(NO_IOWAIT, 6, 15),
};

/* IORING_ENTER_*, by bit. */
static const struct compat_row enter_flags[] = {
	ROW(GETEVENTS, 5, 1), ROW(SQ_WAKEUP, 5, 1), ROW(SQ_WAIT, 5, 10), ROW(EXT_ARG, 5, 11),
	ROW(REGISTERED_RING, 5, 18), ROW(ABS_TIMER, 6, 12), ROW(EXT_ARG_REG, 6, 13), ROW(NO_IOWAIT, 6, 15),
};

/* IOSQE_*, by bit.  BUFFER_SELECT is bufsel's on any kernel. */
static const struct compat_row sqe_flags[] = {
	ROW(FIXED_FILE, 5, 1), ROW(IO_DRAIN, 5, 2), ROW(IO_LINK, 5, 3), ROW(IO_HARDLINK, 5, 5),
	ROW(ASYNC, 5, 6), ROW(BUFFER_SELECT, 5, 1), ROW(CQE_SKIP_SUCCESS, 5, 17),
};

/* IORING_REGISTER_*, by opcode. */
static const struct compat_row register_ops[] = {
	ROW(BUFFERS, 5, 1), ROW(UNREGISTER_BUFFERS, 5, 1), ROW(FILES, 5, 1), ROW(UNREGISTER_FILES, 5, 1),
	ROW(EVENTFD, 5, 2), ROW(UNREGISTER_EVENTFD, 5, 2), ROW(FILES_UPDATE, 5, 5),
	ROW(EVENTFD_ASYNC, 5, 6), ROW(PROBE, 5, 6), ROW(PERSONALITY, 5, 6),
	ROW(UNREGISTER_PERSONALITY, 5, 6), ROW(RESTRICTIONS, 5, 10), ROW(ENABLE_RINGS, 5, 10),
	ROW(FILES2, 5, 13), ROW(FILES_UPDATE2, 5, 13), ROW(BUFFERS2, 5, 13), ROW(BUFFERS_UPDATE, 5, 13),
	ROW(IOWQ_AFF, 5, 14), ROW(UNREGISTER_IOWQ_AFF, 5, 14), ROW(IOWQ_MAX_WORKERS, 5, 15),
	ROW(RING_FDS, 5, 18), ROW(UNREGISTER_RING_FDS, 5, 18), ROW(PBUF_RING, 5, 19),
	ROW(UNREGISTER_PBUF_RING, 5, 19), ROW(SYNC_CANCEL, 6, 0), ROW(FILE_ALLOC_RANGE, 6, 0),
	ROW(PBUF_STATUS, 6, 8), ROW(NAPI, 6, 9), ROW(UNREGISTER_NAPI, 6, 9), ROW(CLOCK, 6, 12),
	ROW(CLONE_BUFFERS, 6, 12), ROW(SEND_MSG_RING, 6, 13), ROW(ZCRX_IFQ, 6, 15),
	ROW(RESIZE_RINGS, 6, 13), ROW(MEM_REGION, 6, 13), ROW(QUERY, 6, 18),
};

/* IORING_OP_*, by opcode.  PROVIDE/REMOVE_BUFFERS are bufsel's on any kernel. */
static const struct compat_row ops[] = {
	ROW(NOP, 5, 1), ROW(READV, 5, 1), ROW(WRITEV, 5, 1), ROW(FSYNC, 5, 1), ROW(READ_FIXED, 5, 1),
	ROW(WRITE_FIXED, 5, 1), ROW(POLL_ADD, 5, 1), ROW(POLL_REMOVE, 5, 1), ROW(SYNC_FILE_RANGE, 5, 2),
	ROW(SENDMSG, 5, 3), ROW(RECVMSG, 5, 3), ROW(TIMEOUT, 5, 4), ROW(TIMEOUT_REMOVE, 5, 5),
	ROW(ACCEPT, 5, 5), ROW(ASYNC_CANCEL, 5, 5), ROW(LINK_TIMEOUT, 5, 5), ROW(CONNECT, 5, 5),
	ROW(FALLOCATE, 5, 6), ROW(OPENAT, 5, 6), ROW(CLOSE, 5, 6), ROW(FILES_UPDATE, 5, 6),
	ROW(STATX, 5, 6), ROW(READ, 5, 6), ROW(WRITE, 5, 6), ROW(FADVISE, 5, 6), ROW(MADVISE, 5, 6),
	ROW(SEND, 5, 6), ROW(RECV, 5, 6), ROW(OPENAT2, 5, 6), ROW(EPOLL_CTL, 5, 6), ROW(SPLICE, 5, 7),
	ROW(PROVIDE_BUFFERS, 5, 1), ROW(REMOVE_BUFFERS, 5, 1), ROW(TEE, 5, 8), ROW(SHUTDOWN, 5, 11),
	ROW(RENAMEAT, 5, 11), ROW(UNLINKAT, 5, 11), ROW(MKDIRAT, 5, 15), ROW(SYMLINKAT, 5, 15),
	ROW(LINKAT, 5, 15), ROW(MSG_RING, 5, 18), ROW(FSETXATTR, 5, 19), ROW(SETXATTR, 5, 19),
	ROW(FGETXATTR, 5, 19), ROW(GETXATTR, 5, 19), ROW(SOCKET, 5, 19), ROW(URING_CMD, 5, 19),
	ROW(SEND_ZC, 6, 0), ROW(SENDMSG_ZC, 6, 1), ROW(READ_MULTISHOT, 6, 7), ROW(WAITID, 6, 7),
	ROW(FUTEX_WAIT, 6, 7), ROW(FUTEX_WAKE, 6, 7), ROW(FUTEX_WAITV, 6, 7),
	ROW(FIXED_FD_INSTALL, 6, 8), ROW(FTRUNCATE, 6, 9), ROW(BIND, 6, 11), ROW(LISTEN, 6, 11),
	ROW(RECV_ZC, 6, 15), ROW(EPOLL_WAIT, 6, 15), ROW(READV_FIXED, 6, 15), ROW(WRITEV_FIXED, 6, 15),
	ROW(PIPE, 6, 16),
};

#define N(t) (sizeof(t) / sizeof((t)[0]))

/*
 * Flags carried inside an SQE's own fields, per opcode: the field, the bits
 * a release gave a meaning to, that release, and the release from which the
 * opcode's prep reads the field at all.  On an emulated kernel older than
 * `since`, those bits are refused with -EINVAL if that kernel's prep checks
 * the field (it returns -EINVAL for what it does not know: 5.6's
 * io_accept_prep, io_timeout_prep, io_async_cancel_prep, io_poll_*_prep),
 * and cleared if it never reads it (5.6's io_sendmsg_prep and
 * io_recvmsg_prep ignore ioprio, so a multishot or bundle recv there is one
 * plain recv; io_poll_add_prep reads 16 bits of poll_events).  A row with
 * every bit set stands for any non-zero value (a file index, an update).
 * Bits no row names are left to the kernel beneath, which refuses what it
 * does not know either.
 */
enum sqe_field { F_IOPRIO, F_OP_FLAGS, F_LEN, F_OFF, F_FILE_INDEX, F_FLAGS, F_ATTR_MASK };

struct field_row {
	uint8_t op;
	uint8_t field;
	uint16_t since;
	uint16_t read_since;
	uint32_t bits;
	const char *name;
};

#define NEVER V(255, 255)
#define FROW(op, f, bits, smaj, smin, rmaj, rmin, name) \
	{ IORING_OP_##op, f, V(smaj, smin), V(rmaj, rmin), bits, name }

static const struct field_row field_rows[] = {
	/* io_accept_prep: ioprio refused since 5.5; file_index read since 5.14. */
	FROW(ACCEPT, F_IOPRIO, 1u << 0, 5, 19, 5, 5, "ACCEPT ioprio IORING_ACCEPT_MULTISHOT"),
	FROW(ACCEPT, F_IOPRIO, 1u << 1, 6, 10, 5, 5, "ACCEPT ioprio IORING_ACCEPT_DONTWAIT"),
	FROW(ACCEPT, F_IOPRIO, 1u << 2, 6, 10, 5, 5, "ACCEPT ioprio IORING_ACCEPT_POLL_FIRST"),
	FROW(ACCEPT, F_FILE_INDEX, ~0u, 5, 15, 5, 14, "ACCEPT file_index"),
	/* io_sendmsg_prep/io_recvmsg_prep: ioprio unread before 5.18. */
	FROW(SENDMSG, F_IOPRIO, 0xffff, 5, 18, 5, 18, "SENDMSG ioprio"),
	FROW(SENDMSG, F_IOPRIO, 1u << 0, 5, 19, 5, 18, "SENDMSG ioprio IORING_RECVSEND_POLL_FIRST"),
	FROW(SEND, F_IOPRIO, 0xffff, 5, 18, 5, 18, "SEND ioprio"),
	FROW(SEND, F_IOPRIO, 1u << 0, 5, 19, 5, 18, "SEND ioprio IORING_RECVSEND_POLL_FIRST"),
	FROW(SEND, F_IOPRIO, 1u << 4, 6, 10, 5, 18, "SEND ioprio IORING_RECVSEND_BUNDLE"),
	FROW(RECVMSG, F_IOPRIO, 0xffff, 5, 18, 5, 18, "RECVMSG ioprio"),
	FROW(RECVMSG, F_IOPRIO, 1u << 0, 5, 19, 5, 18, "RECVMSG ioprio IORING_RECVSEND_POLL_FIRST"),
	FROW(RECVMSG, F_IOPRIO, 1u << 1, 6, 0, 5, 18, "RECVMSG ioprio IORING_RECV_MULTISHOT"),
	FROW(RECV, F_IOPRIO, 0xffff, 5, 18, 5, 18, "RECV ioprio"),
	FROW(RECV, F_IOPRIO, 1u << 0, 5, 19, 5, 18, "RECV ioprio IORING_RECVSEND_POLL_FIRST"),
	FROW(RECV, F_IOPRIO, 1u << 1, 6, 0, 5, 18, "RECV ioprio IORING_RECV_MULTISHOT"),
	FROW(RECV, F_IOPRIO, 1u << 4, 6, 10, 5, 18, "RECV ioprio IORING_RECVSEND_BUNDLE"),
	/* io_timeout_prep: timeout_flags beyond ABS refused. */
	FROW(TIMEOUT, F_OP_FLAGS, 3u << 2, 5, 15, 5, 4, "TIMEOUT IORING_TIMEOUT_BOOTTIME/REALTIME"),
	FROW(TIMEOUT, F_OP_FLAGS, 1u << 5, 5, 16, 5, 4, "TIMEOUT IORING_TIMEOUT_ETIME_SUCCESS"),
	FROW(TIMEOUT, F_OP_FLAGS, 1u << 6, 6, 4, 5, 4, "TIMEOUT IORING_TIMEOUT_MULTISHOT"),
	FROW(TIMEOUT, F_OP_FLAGS, 1u << 7, 7, 1, 5, 4, "TIMEOUT IORING_TIMEOUT_IMMEDIATE_ARG"),
	FROW(LINK_TIMEOUT, F_OP_FLAGS, 3u << 2, 5, 15, 5, 5, "LINK_TIMEOUT IORING_TIMEOUT_BOOTTIME/REALTIME"),
	FROW(LINK_TIMEOUT, F_OP_FLAGS, 1u << 5, 5, 16, 5, 5, "LINK_TIMEOUT IORING_TIMEOUT_ETIME_SUCCESS"),
	/* io_timeout_remove_prep: any flag refused until updates (5.11). */
	FROW(TIMEOUT_REMOVE, F_OP_FLAGS, (1u << 0) | (1u << 1), 5, 11, 5, 5,
	     "TIMEOUT_REMOVE IORING_TIMEOUT_UPDATE"),
	FROW(TIMEOUT_REMOVE, F_OP_FLAGS, (3u << 2) | (1u << 4), 5, 15, 5, 5,
	     "TIMEOUT_REMOVE IORING_LINK_TIMEOUT_UPDATE/BOOTTIME/REALTIME"),
	/* 5.6's cancel, timeout-remove and files-update preps refuse any SQE
	 * flag (a link among them); 5.7 only FIXED_FILE and BUFFER_SELECT. */
	FROW(ASYNC_CANCEL, F_FLAGS, 0x7f, 5, 7, 5, 5, "ASYNC_CANCEL with IOSQE_* flags"),
	FROW(TIMEOUT_REMOVE, F_FLAGS, 0x7f, 5, 7, 5, 5, "TIMEOUT_REMOVE with IOSQE_* flags"),
	FROW(FILES_UPDATE, F_FLAGS, 0x7f, 5, 7, 5, 6, "FILES_UPDATE with IOSQE_* flags"),
	/* io_async_cancel_prep: cancel_flags refused. */
	FROW(ASYNC_CANCEL, F_OP_FLAGS, 7u, 5, 19, 5, 5, "ASYNC_CANCEL IORING_ASYNC_CANCEL_ALL/FD/ANY"),
	FROW(ASYNC_CANCEL, F_OP_FLAGS, 1u << 3, 6, 0, 5, 5, "ASYNC_CANCEL IORING_ASYNC_CANCEL_FD_FIXED"),
	FROW(ASYNC_CANCEL, F_OP_FLAGS, 3u << 4, 6, 6, 5, 5, "ASYNC_CANCEL IORING_ASYNC_CANCEL_USERDATA/OP"),
	/* len must be 0 until it names the opcode (IORING_ASYNC_CANCEL_OP). */
	FROW(ASYNC_CANCEL, F_LEN, ~0u, 6, 6, 5, 5, "ASYNC_CANCEL len"),
	/* io_poll_add_prep: len refused (multishot and level flags live
	 * there now); the upper 16 bits of poll32_events unread before 5.9. */
	FROW(POLL_ADD, F_LEN, 1u << 0, 5, 13, 5, 1, "POLL_ADD IORING_POLL_ADD_MULTI"),
	FROW(POLL_ADD, F_LEN, 1u << 3, 6, 0, 5, 1, "POLL_ADD IORING_POLL_ADD_LEVEL"),
	FROW(POLL_ADD, F_OP_FLAGS, 0xffff0000u, 5, 9, 5, 9, "POLL_ADD poll32_events upper bits"),
	/* io_poll_remove_prep: len, off and poll_events refused until updates. */
	FROW(POLL_REMOVE, F_LEN, 7u, 5, 13, 5, 1, "POLL_REMOVE IORING_POLL_UPDATE_*"),
	FROW(POLL_REMOVE, F_OFF, ~0u, 5, 13, 5, 1, "POLL_REMOVE off (update user_data)"),
	FROW(POLL_REMOVE, F_OP_FLAGS, 0xffff, 5, 13, 5, 1, "POLL_REMOVE poll_events (update)"),
	FROW(POLL_REMOVE, F_OP_FLAGS, 0xffff0000u, 5, 13, 5, 13, "POLL_REMOVE poll32_events upper bits"),
	/* Direct descriptors (5.15): file_index unread before 5.14. */
	FROW(OPENAT, F_FILE_INDEX, ~0u, 5, 15, 5, 14, "OPENAT file_index"),
	FROW(OPENAT2, F_FILE_INDEX, ~0u, 5, 15, 5, 14, "OPENAT2 file_index"),
	FROW(CLOSE, F_FILE_INDEX, ~0u, 5, 15, 5, 14, "CLOSE file_index"),
	/* Read/write attributes (protection information, 6.15): unread before. */
	FROW(READ, F_ATTR_MASK, ~0u, 6, 15, 6, 15, "READ attr_type_mask"),
	FROW(WRITE, F_ATTR_MASK, ~0u, 6, 15, 6, 15, "WRITE attr_type_mask"),
	FROW(READV, F_ATTR_MASK, ~0u, 6, 15, 6, 15, "READV attr_type_mask"),
	FROW(WRITEV, F_ATTR_MASK, ~0u, 6, 15, 6, 15, "WRITEV attr_type_mask"),
	FROW(READ_FIXED, F_ATTR_MASK, ~0u, 6, 15, 6, 15, "READ_FIXED attr_type_mask"),
	FROW(WRITE_FIXED, F_ATTR_MASK, ~0u, 6, 15, 6, 15, "WRITE_FIXED attr_type_mask"),
};

_Static_assert(N(ops) == 63, "one row per request opcode up to IORING_OP_PIPE");
_Static_assert(N(register_ops) == 36, "one row per register opcode up to IORING_REGISTER_QUERY");
_Static_assert(N(setup_flags) <= 64 && N(ops) <= 64 && N(register_ops) <= 64 && N(field_rows) < 64,
	       "a row is a bit of a mask");

/* What bufsel refused, each named once (by table, one bit a row; the last
 * bit stands for everything past the table). */
enum { T_SETUP, T_ENTER, T_REGISTER, T_OP, T_SQE_FLAG, T_FIELD, T_COUNT };
static const struct {
	const char *kind;
	const struct compat_row *rows;
	size_t n;
} tables[T_COUNT] = {
	[T_SETUP] = { "setup flag IORING_SETUP_", setup_flags, N(setup_flags) },
	[T_ENTER] = { "enter flag IORING_ENTER_", enter_flags, N(enter_flags) },
	[T_REGISTER] = { "register opcode IORING_REGISTER_", register_ops, N(register_ops) },
	[T_OP] = { "opcode IORING_OP_", ops, N(ops) },
	[T_SQE_FLAG] = { "SQE flag IOSQE_", sqe_flags, N(sqe_flags) },
	[T_FIELD] = { "", NULL, N(field_rows) },
};

/* Set once by the constructor, before any ring exists; kept here rather
 * than read from the process state so the drain path's unit tests link
 * this file alone. */
static struct {
	unsigned kernel;
	int shadow_offers;	/* BUFSEL_RINGS is not kernel: SHADOW_SETUP is offered */
	void (*report)(const char *kind, const char *name, unsigned since);
	_Atomic uint64_t reported[T_COUNT];
	/* The kernel beneath lacks IORING_FEAT_CQE_SKIP (its first ring said
	 * so: kernel_ops.c asks before the program's first ring). */
	atomic_int kernel_lacks_skip;
} compat;

void compat_note_kernel_features(unsigned f)
{
	atomic_store_explicit(&compat.kernel_lacks_skip, !(f & IORING_FEAT_CQE_SKIP), memory_order_relaxed);
}

void compat_init(const struct bufsel_conf *c,
		 void (*report)(const char *kind, const char *name, unsigned since))
{
	/* The control arm of an A/B run leaves everything to the kernel. */
	compat.kernel = c->mode == BUFSEL_MODE_PASSTHROUGH ? 0 : c->kernel;
	compat.shadow_offers = c->rings != BUFSEL_RINGS_KERNEL;
	compat.report = report;
}

int compat_emulating(void)
{
	return compat.kernel != 0;
}

unsigned compat_kernel(void)
{
	return compat.kernel;
}

unsigned compat_release_of_last_op(unsigned last_op)
{
	unsigned v = 0;
	for (size_t i = 0; i <= last_op && i < N(ops); i++)
		if (ops[i].since > v)
			v = ops[i].since;
	return v;
}

/* Says once per row that the emulated kernel refused it: a program that
 * fails under BUFSEL_KERNEL usually fails on the first of these. */
static void refused(int t, unsigned i)
{
	unsigned bit = i < tables[t].n ? i : 63;
	uint64_t m = 1ULL << bit;
	if (!compat.report || (atomic_fetch_or(&compat.reported[t], m) & m))
		return;
	if (t == T_FIELD)
		compat.report("SQE field flag ", field_rows[i].name, field_rows[i].since);
	else if (i < tables[t].n)
		compat.report(tables[t].kind, tables[t].rows[i].name, tables[t].rows[i].since);
	else
		compat.report(tables[t].kind, "<unknown>", 0);
}


/*
 * What stable updates of a long-term release took from later ones.  Every
 * 5.10 since 5.10.162 (January 2023) carries 5.15's io_uring core, with
 * 5.11's request opcodes: Debian 11's 5.10.223 (make vm-test) reports the
 * feature bits up to IORING_FEAT_RSRC_TAGS, takes IORING_ENTER_EXT_ARG,
 * knows IORING_REGISTER_IOWQ_AFF and 5.15's timeout and poll flags, and its
 * IORING_REGISTER_PROBE says last_op UNLINKAT (5.11).  So BUFSEL_KERNEL=5.10
 * is that kernel, the 5.10 in use.
 */
static const struct stable_row {
	uint16_t release;
	uint16_t ops;		/* the release whose request opcodes it has */
	uint16_t core;		/* ... whose flags, features and register opcodes */
} stable_rows[] = {
	{ V(5, 10), V(5, 11), V(5, 15) },
};

/* The release whose rows of table t (T_COUNT: the feature bits) the
 * emulated kernel has. */
static unsigned table_release(int t)
{
	unsigned k = compat_kernel();
	for (size_t i = 0; i < N(stable_rows); i++)
		if (stable_rows[i].release == k)
			return t == T_OP ? stable_rows[i].ops : stable_rows[i].core;
	return k;
}

/* Fields a stable release checks before the release that gave them a
 * meaning: 5.10.223's send and receive preps refuse any ioprio
 * (IORING_RECVSEND_POLL_FIRST: -EINVAL, compat_fields), where 5.10 to
 * 5.17 ignored it. */
static const struct {
	uint16_t release;
	uint8_t op, field;
} stable_reads[] = {
	{ V(5, 10), IORING_OP_SEND, F_IOPRIO }, { V(5, 10), IORING_OP_SENDMSG, F_IOPRIO },
	{ V(5, 10), IORING_OP_RECV, F_IOPRIO }, { V(5, 10), IORING_OP_RECVMSG, F_IOPRIO },
};

static unsigned read_release(const struct field_row *r)
{
	for (size_t i = 0; i < N(stable_reads); i++)
		if (stable_reads[i].release == compat_kernel() && stable_reads[i].op == r->op &&
		    stable_reads[i].field == r->field)
			return 0;
	return r->read_since;
}

static uint64_t known_bits(int t)
{
	uint64_t m = 0;
	for (size_t i = 0; i < tables[t].n; i++)
		if (tables[t].rows[i].since <= table_release(t))
			m |= 1ULL << i;
	return m;
}

static int known_index(int t, unsigned i)
{
	return i < tables[t].n && tables[t].rows[i].since <= table_release(t);
}

/* -EINVAL if v has a bit of table t the kernel lacks (each reported). */
static int check_bits(int t, uint64_t v)
{
	if (!compat_kernel())
		return 0;
	uint64_t bad = v & ~known_bits(t);
	for (unsigned i = 0; i < 64; i++)
		if (bad & (1ULL << i))
			refused(t, i);
	return bad ? -EINVAL : 0;
}

int compat_has_setup(unsigned flags)
{
	return !compat_kernel() || !(flags & ~known_bits(T_SETUP));
}

int compat_setup_flags(unsigned flags)
{
	return check_bits(T_SETUP, flags & ~compat_setup_shadowed(flags));
}

/*
 * Setup flags whose whole meaning the shadow ring can carry, so that bufsel
 * gives them on a kernel that lacks them, as it gives buffer rings (and
 * under the same switch: BUFSEL_RINGS=kernel keeps to what the kernel has).
 * The ring memory the program supplies (NO_MMAP) is the shadow itself; an
 * SQ without an array (NO_SQARRAY) and the single issuer (SINGLE_ISSUER,
 * and DEFER_TASKRUN's completions only in the issuer's waits) are rules of
 * the program's side of the ring, which bufsel keeps; so is SUBMIT_ALL (a
 * submit that goes on past an SQE that failed at submission, in as many
 * enters as it takes); COOP_TASKRUN is a hint that promises nothing a
 * program can see.  The kernel beneath sees none of them.  TASKRUN_FLAG is not among them: its bit would have to
 * rise while the program is away, when the shadow moves nothing.
 */
#define SHADOW_SETUP                                                                    \
	(IORING_SETUP_NO_MMAP | IORING_SETUP_NO_SQARRAY | IORING_SETUP_SINGLE_ISSUER | \
	 IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SUBMIT_ALL)

/* IOSQE_CQE_SKIP_SUCCESS (5.17) is bufsel's on an older kernel, under
 * the same switch (rewrite_skip). */
int compat_sqe_skip_shadowed(void)
{
	if (!compat.shadow_offers)
		return 0;
	return compat_kernel() ? !known_index(T_SQE_FLAG, IOSQE_CQE_SKIP_SUCCESS_BIT)
			       : atomic_load_explicit(&compat.kernel_lacks_skip, memory_order_relaxed);
}

unsigned compat_setup_lacked(unsigned flags)
{
	return compat_kernel() || !compat.shadow_offers ? 0 : flags & SHADOW_SETUP;
}

unsigned compat_setup_shadowed(unsigned flags)
{
	if (!compat_kernel() || !compat.shadow_offers)
		return 0;
	return flags & SHADOW_SETUP & ~(unsigned)known_bits(T_SETUP);
}

int compat_enter_flags(unsigned flags)
{
	return check_bits(T_ENTER, flags);
}

int compat_ext_arg_before_min_wait(void)
{
	return compat_kernel() && compat_kernel() < V(6, 12);
}

unsigned compat_features(unsigned f)
{
	if (!compat_kernel())
		return f;
	uint64_t m = 0;
	for (size_t i = 0; i < N(features); i++)
		if (features[i].since <= table_release(T_COUNT))
			m |= 1ULL << i;
	return f & (unsigned)m;
}

int compat_register_by_index(unsigned raw)
{
	if (!compat_kernel() || !(raw & IORING_REGISTER_USE_REGISTERED_RING) || compat_kernel() >= V(6, 3))
		return 0;
	refused(T_REGISTER, (unsigned)N(register_ops));	/* past the table: "<unknown>" */
	return -EINVAL;
}

int compat_register_opcode(unsigned opcode)
{
	if (!compat_kernel() || known_index(T_REGISTER, opcode))
		return 0;
	refused(T_REGISTER, opcode);
	return -EINVAL;
}

unsigned long compat_register_arg(unsigned opcode, unsigned long arg, unsigned nr_args)
{
	if (arg || nr_args || !compat_kernel() || compat_kernel() >= V(5, 19) ||
	    (opcode != IORING_REGISTER_BUFFERS && opcode != IORING_REGISTER_FILES))
		return arg;
	/* With a count of 0 the array is never read: any non-NULL address
	 * gets the older kernel's answer from this one. */
	return 1;
}

/* The opcode a kernel that lacks it does not know either: past every table. */
#define OP_UNKNOWN 0xff
/* An SQE flag no kernel knows: the kernel fails the SQE with -EINVAL. */
#define SQE_FLAG_UNKNOWN (1u << 7)

/* Where each field of a row lives in the SQE.  A 64-bit field counts as
 * one value: any non-zero value is all of its row's bits. */
static const struct {
	uint8_t at, size;
} field_at[] = {
	[F_IOPRIO] = { offsetof(struct io_uring_sqe, ioprio), 2 },
	[F_OP_FLAGS] = { offsetof(struct io_uring_sqe, rw_flags), 4 },
	[F_LEN] = { offsetof(struct io_uring_sqe, len), 4 },
	[F_OFF] = { offsetof(struct io_uring_sqe, off), 8 },
	[F_FILE_INDEX] = { offsetof(struct io_uring_sqe, file_index), 4 },
	[F_FLAGS] = { offsetof(struct io_uring_sqe, flags), 1 },
	/* attr_type_mask follows attr_ptr, which shares addr3's place. */
	[F_ATTR_MASK] = { offsetof(struct io_uring_sqe, addr3) + 8, 8 },
};

static uint32_t field_get(const struct io_uring_sqe *sqe, int f)
{
	uint64_t v = 0;
	memcpy(&v, (const char *)sqe + field_at[f].at, field_at[f].size);
	return field_at[f].size == 8 ? (v ? ~0u : 0) : (uint32_t)v;
}

static void field_clear(struct io_uring_sqe *sqe, int f, uint32_t bits)
{
	uint64_t v = 0;
	memcpy(&v, (char *)sqe + field_at[f].at, field_at[f].size);
	v = field_at[f].size == 8 ? 0 : v & ~(uint64_t)bits;
	memcpy((char *)sqe + field_at[f].at, &v, field_at[f].size);
}

/*
 * The SQE's own fields as the emulated kernel's prep sees them: 1 if it
 * refuses them (-EINVAL), after clearing whatever that kernel never reads.
 * Refusals are decided before anything is cleared, on the fields as the
 * program wrote them.
 */
static int fields_refused(struct io_uring_sqe *sqe, uint32_t offered)
{
	int bad = 0;
	uint32_t clear[N(field_at)] = { 0 };
	for (unsigned i = 0; i < N(field_rows); i++) {
		const struct field_row *r = &field_rows[i];
		if (r->op != sqe->opcode || r->since <= table_release(T_FIELD))
			continue;
		uint32_t v = field_get(sqe, r->field) & r->bits;
		if (r->field == F_IOPRIO)
			v &= ~offered;
		if (!v)
			continue;
		if (read_release(r) <= table_release(T_FIELD)) {
			refused(T_FIELD, i);
			bad = 1;
		} else {
			clear[r->field] |= v;
		}
	}
	if (bad)
		return 1;
	for (int f = 0; f < (int)N(field_at); f++)
		if (clear[f])
			field_clear(sqe, f, clear[f]);
	return 0;
}

/* IORING_NOP_INJECT_RESULT (6.10): the NOP completes with sqe->len. */
#define NOP_INJECT_RESULT (1u << 0)
/* The SQE flags a refused SQE keeps: those that place it in a chain or
 * order it, which the old kernel honoured before its prep failed. */
#define KEEP_FLAGS (IOSQE_IO_LINK | IOSQE_IO_HARDLINK | IOSQE_IO_DRAIN | IOSQE_ASYNC)

/* sqe becomes a bare SQE of opcode under the same user_data, personality
 * and ordering flags. */
static void become(struct io_uring_sqe *sqe, uint8_t opcode)
{
	struct io_uring_sqe t;
	memset(&t, 0, sizeof(t));
	t.opcode = opcode;
	t.flags = (uint8_t)(sqe->flags & KEEP_FLAGS);
	t.user_data = sqe->user_data;
	t.personality = sqe->personality;
	memcpy(sqe, &t, sizeof(t));
}

/*
 * An SQE whose prep the emulated kernel fails.  Before 5.12 (5.6) the kernel
 * preps at issue: the request completes with the error, the chain it heads
 * fails, and the submission goes on.  A NOP that injects -EINVAL does
 * exactly that here (a kernel without NOP_INJECT_RESULT refuses the flag at
 * prep, which only ends the submit as well).  Inside a chain 5.6 preps at
 * submit and stops there, failing the chain: an opcode no kernel knows
 * comes closest (the kernel fails it and the chain).
 */
static void fail_at_prep(struct io_uring_sqe *sqe, int in_chain)
{
	/* From 5.12 io_submit_sqe preps at submission: the prep's error stops
	 * the submission there, or fails the chain the SQE is in, after the
	 * drain and skip rules of io_init_req (a TIMEOUT whose len is not 1
	 * fails in io_timeout_prep, as 5.12's preps do). */
	if (table_release(T_FIELD) >= V(5, 12)) {
		become(sqe, IORING_OP_TIMEOUT);
		sqe->len = 2;
		return;
	}
	if (in_chain) {
		sqe->opcode = OP_UNKNOWN;
		return;
	}
	become(sqe, IORING_OP_NOP);
	sqe->rw_flags = NOP_INJECT_RESULT;
	sqe->len = (uint32_t)-EINVAL;
}

void compat_sqe(struct io_uring_sqe *sqe, int in_chain, uint32_t offered)
{
	if (!compat_kernel())
		return;
	/* Both fail at prep with -EINVAL, and a chain they head or sit in
	 * fails as it does on the old kernel; the old kernel's
	 * io_submit_sqes stops at either (before its prep). */
	int op_known = known_index(T_OP, sqe->opcode);
	if (!op_known && !(offered & COMPAT_OFFER_OPCODE)) {
		refused(T_OP, sqe->opcode);
		sqe->opcode = OP_UNKNOWN;
	}
	uint8_t known = (uint8_t)known_bits(T_SQE_FLAG);
	if (compat_sqe_skip_shadowed())
		known |= IOSQE_CQE_SKIP_SUCCESS;
	if (sqe->flags & ~known & 0x7f) {
		check_bits(T_SQE_FLAG, sqe->flags & 0x7f);
		sqe->flags = (uint8_t)((sqe->flags & known) | SQE_FLAG_UNKNOWN);
		return;
	}
	/* The fields only once the SQE got past those two: 5.6's
	 * io_submit_sqe checks the flags before anything reaches a prep. */
	if (op_known && fields_refused(sqe, offered))
		fail_at_prep(sqe, in_chain);
}

/*
 * The probe a kernel of that version fills: last_op is its last opcode and
 * nothing newer is marked; the caller then adds what bufsel emulates.  Runs
 * on bufsel's copy of the probe the kernel filled.
 */
void compat_probe(struct io_uring_probe *p, unsigned nr_ops)
{
	if (!compat_kernel())
		return;
	unsigned last = 0;
	while (known_index(T_OP, last + 1))
		last++;
	for (unsigned i = 0; i < nr_ops && i < p->ops_len; i++)
		if (i > last || !known_index(T_OP, i))
			memset(&p->ops[i], 0, sizeof(p->ops[i]));
	p->last_op = (uint8_t)last;
	/* The rows reach as far as the opcodes bufsel adds. */
	unsigned len = (last > IORING_OP_REMOVE_BUFFERS ? last : IORING_OP_REMOVE_BUFFERS) + 1;
	if (p->ops_len > len)
		p->ops_len = (uint8_t)len;
}

void compat_probe_add(struct io_uring_probe *p, unsigned nr_ops, unsigned op)
{
	if (op >= nr_ops || op > UINT8_MAX)
		return;
	for (unsigned i = p->ops_len; i <= op; i++)
		memset(&p->ops[i], 0, sizeof(p->ops[i]));
	p->ops[op].op = (uint8_t)op;
	p->ops[op].flags |= IO_URING_OP_SUPPORTED;
	if (p->ops_len <= op)
		p->ops_len = (uint8_t)(op + 1);
	if (p->last_op < op)
		p->last_op = (uint8_t)op;
}
