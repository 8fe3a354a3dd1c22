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
#include "preload/compat.h"

#include <errno.h>
#include <linux/io_uring.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "conf/options.h"

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

_Static_assert(N(ops) == 63, "one row per request opcode up to IORING_OP_PIPE");
_Static_assert(N(register_ops) == 36, "one row per register opcode up to IORING_REGISTER_QUERY");
_Static_assert(N(setup_flags) <= 64 && N(ops) <= 64 && N(register_ops) <= 64, "a row is a bit of a mask");

/* What bufsel refused, each named once (by table, one bit a row; the last
 * bit stands for everything past the table). */
enum { T_SETUP, T_ENTER, T_REGISTER, T_OP, T_SQE_FLAG, T_COUNT };
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
};

/* Set once by the constructor, before any ring exists; kept here rather
 * than read from the process state so the drain path's unit tests link
 * this file alone. */
static struct {
	unsigned kernel;
	void (*report)(const char *kind, const char *name, unsigned since);
	_Atomic uint64_t reported[T_COUNT];
} compat;

void compat_init(const struct bufsel_conf *c,
		 void (*report)(const char *kind, const char *name, unsigned since))
{
	/* The control arm of an A/B run leaves everything to the kernel. */
	compat.kernel = c->mode == BUFSEL_MODE_PASSTHROUGH ? 0 : c->kernel;
	compat.report = report;
}

int compat_emulating(void)
{
	return compat.kernel != 0;
}

static unsigned emulated(void)
{
	return compat.kernel;
}

/* Says once per row that the emulated kernel refused it: a program that
 * fails under BUFSEL_KERNEL usually fails on the first of these. */
static void refused(int t, unsigned i)
{
	unsigned bit = i < tables[t].n ? i : 63;
	uint64_t m = 1ULL << bit;
	if (!compat.report || (atomic_fetch_or(&compat.reported[t], m) & m))
		return;
	if (i < tables[t].n)
		compat.report(tables[t].kind, tables[t].rows[i].name, tables[t].rows[i].since);
	else
		compat.report(tables[t].kind, "<unknown>", 0);
}


static uint64_t known_bits(int t)
{
	uint64_t m = 0;
	for (size_t i = 0; i < tables[t].n; i++)
		if (tables[t].rows[i].since <= emulated())
			m |= 1ULL << i;
	return m;
}

static int known_index(int t, unsigned i)
{
	return i < tables[t].n && tables[t].rows[i].since <= emulated();
}

/* -EINVAL if v has a bit of table t the kernel lacks (each reported). */
static int check_bits(int t, uint64_t v)
{
	if (!emulated())
		return 0;
	uint64_t bad = v & ~known_bits(t);
	for (unsigned i = 0; i < 64; i++)
		if (bad & (1ULL << i))
			refused(t, i);
	return bad ? -EINVAL : 0;
}

int compat_setup_flags(unsigned flags)
{
	return check_bits(T_SETUP, flags);
}

int compat_enter_flags(unsigned flags)
{
	return check_bits(T_ENTER, flags);
}

unsigned compat_features(unsigned f)
{
	if (!emulated())
		return f;
	uint64_t m = 0;
	for (size_t i = 0; i < N(features); i++)
		if (features[i].since <= emulated())
			m |= 1ULL << i;
	return f & (unsigned)m;
}

int compat_register_opcode(unsigned opcode)
{
	if (!emulated() || known_index(T_REGISTER, opcode))
		return 0;
	refused(T_REGISTER, opcode);
	return -EINVAL;
}

/* The opcode a kernel that lacks it does not know either: past every table. */
#define OP_UNKNOWN 0xff
/* An SQE flag no kernel knows: the kernel fails the SQE with -EINVAL. */
#define SQE_FLAG_UNKNOWN (1u << 7)

void compat_sqe(struct io_uring_sqe *sqe)
{
	if (!emulated())
		return;
	/* Both fail at prep with -EINVAL, and a chain they head or sit in
	 * fails as it does on the old kernel. */
	if (!known_index(T_OP, sqe->opcode)) {
		refused(T_OP, sqe->opcode);
		sqe->opcode = OP_UNKNOWN;
	}
	uint8_t known = (uint8_t)known_bits(T_SQE_FLAG);
	if (sqe->flags & ~known & 0x7f) {
		check_bits(T_SQE_FLAG, sqe->flags & 0x7f);
		sqe->flags = (uint8_t)((sqe->flags & known) | SQE_FLAG_UNKNOWN);
	}
}

/*
 * The probe a kernel of that version fills: last_op is its last opcode and
 * nothing newer is marked; the caller then adds what bufsel emulates.  Runs
 * on bufsel's copy of the probe the kernel filled.
 */
void compat_probe(struct io_uring_probe *p, unsigned nr_ops)
{
	if (!emulated())
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
