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
#include <string.h>

#include "conf/options.h"

#define V(maj, min) ((uint16_t)((maj) << 8 | (min)))

/* IORING_SETUP_*, by bit. */
static const uint16_t setup_flag_since[] = {
	V(5, 1), V(5, 1), V(5, 1), V(5, 5), V(5, 6), V(5, 6),	/* IOPOLL SQPOLL SQ_AFF CQSIZE CLAMP ATTACH_WQ */
	V(5, 10), V(5, 18), V(5, 19), V(5, 19), V(5, 19),	/* R_DISABLED SUBMIT_ALL COOP_TASKRUN TASKRUN_FLAG SQE128 */
	V(5, 19), V(6, 0), V(6, 1), V(6, 5), V(6, 5),		/* CQE32 SINGLE_ISSUER DEFER_TASKRUN NO_MMAP REGISTERED_FD_ONLY */
	V(6, 6), V(6, 13), V(6, 18),				/* NO_SQARRAY HYBRID_IOPOLL CQE_MIXED */
};

/* IORING_FEAT_*, by bit. */
static const uint16_t feature_since[] = {
	V(5, 4), V(5, 5), V(5, 5), V(5, 6), V(5, 6), V(5, 7),	/* SINGLE_MMAP NODROP SUBMIT_STABLE RW_CUR_POS CUR_PERSONALITY FAST_POLL */
	V(5, 9), V(5, 11), V(5, 11), V(5, 12), V(5, 13),	/* POLL_32BITS SQPOLL_NONFIXED EXT_ARG NATIVE_WORKERS RSRC_TAGS */
	V(5, 17), V(5, 17), V(6, 3), V(6, 10), V(6, 12),	/* CQE_SKIP LINKED_FILE REG_REG_RING RECVSEND_BUNDLE MIN_TIMEOUT */
	V(6, 15), V(6, 15),					/* RW_ATTR NO_IOWAIT */
};

/* IORING_ENTER_*, by bit. */
static const uint16_t enter_flag_since[] = {
	V(5, 1), V(5, 1), V(5, 10), V(5, 11),			/* GETEVENTS SQ_WAKEUP SQ_WAIT EXT_ARG */
	V(5, 18), V(6, 12), V(6, 13), V(6, 15),			/* REGISTERED_RING ABS_TIMER EXT_ARG_REG NO_IOWAIT */
};

/* IOSQE_*, by bit.  BUFFER_SELECT is bufsel's on any kernel. */
static const uint16_t sqe_flag_since[] = {
	V(5, 1), V(5, 2), V(5, 3), V(5, 5), V(5, 6), V(5, 1), V(5, 17),	/* FIXED_FILE DRAIN LINK HARDLINK ASYNC (BUFFER_SELECT) CQE_SKIP_SUCCESS */
};

/* IORING_REGISTER_*, by opcode. */
static const uint16_t register_since[] = {
	V(5, 1), V(5, 1), V(5, 1), V(5, 1), V(5, 2), V(5, 2),	/* BUFFERS UNBUFFERS FILES UNFILES EVENTFD UNEVENTFD */
	V(5, 5), V(5, 6), V(5, 6), V(5, 6), V(5, 6),		/* FILES_UPDATE EVENTFD_ASYNC PROBE PERSONALITY UNPERSONALITY */
	V(5, 10), V(5, 10), V(5, 13), V(5, 13), V(5, 13),	/* RESTRICTIONS ENABLE_RINGS FILES2 FILES_UPDATE2 BUFFERS2 */
	V(5, 13), V(5, 14), V(5, 14), V(5, 15), V(5, 18),	/* BUFFERS_UPDATE IOWQ_AFF UNIOWQ_AFF IOWQ_MAX_WORKERS RING_FDS */
	V(5, 18), V(5, 19), V(5, 19), V(6, 0), V(6, 0),		/* UNRING_FDS PBUF_RING UNPBUF_RING SYNC_CANCEL FILE_ALLOC_RANGE */
	V(6, 8), V(6, 9), V(6, 9), V(6, 12), V(6, 12),		/* PBUF_STATUS NAPI UNNAPI CLOCK CLONE_BUFFERS */
	V(6, 13), V(6, 15), V(6, 13), V(6, 13), V(6, 18),	/* SEND_MSG_RING ZCRX_IFQ RESIZE_RINGS MEM_REGION QUERY */
};

/* IORING_OP_*, by opcode.  PROVIDE/REMOVE_BUFFERS are bufsel's on any kernel. */
static const uint16_t op_since[] = {
	V(5, 1), V(5, 1), V(5, 1), V(5, 1), V(5, 1), V(5, 1),	/* NOP READV WRITEV FSYNC READ_FIXED WRITE_FIXED */
	V(5, 1), V(5, 1), V(5, 2), V(5, 3), V(5, 3), V(5, 4),	/* POLL_ADD POLL_REMOVE SYNC_FILE_RANGE SENDMSG RECVMSG TIMEOUT */
	V(5, 5), V(5, 5), V(5, 5), V(5, 5), V(5, 5), V(5, 6),	/* TIMEOUT_REMOVE ACCEPT ASYNC_CANCEL LINK_TIMEOUT CONNECT FALLOCATE */
	V(5, 6), V(5, 6), V(5, 6), V(5, 6), V(5, 6), V(5, 6),	/* OPENAT CLOSE FILES_UPDATE STATX READ WRITE */
	V(5, 6), V(5, 6), V(5, 6), V(5, 6), V(5, 6), V(5, 6),	/* FADVISE MADVISE SEND RECV OPENAT2 EPOLL_CTL */
	V(5, 7), V(5, 1), V(5, 1), V(5, 8), V(5, 11), V(5, 11),	/* SPLICE (PROVIDE_BUFFERS) (REMOVE_BUFFERS) TEE SHUTDOWN RENAMEAT */
	V(5, 11), V(5, 15), V(5, 15), V(5, 15), V(5, 18),	/* UNLINKAT MKDIRAT SYMLINKAT LINKAT MSG_RING */
	V(5, 19), V(5, 19), V(5, 19), V(5, 19), V(5, 19),	/* FSETXATTR SETXATTR FGETXATTR GETXATTR SOCKET */
	V(5, 19), V(6, 0), V(6, 1), V(6, 7), V(6, 7), V(6, 7),	/* URING_CMD SEND_ZC SENDMSG_ZC READ_MULTISHOT WAITID FUTEX_WAIT */
	V(6, 7), V(6, 7), V(6, 8), V(6, 9), V(6, 11), V(6, 11),	/* FUTEX_WAKE FUTEX_WAITV FIXED_FD_INSTALL FTRUNCATE BIND LISTEN */
	V(6, 15), V(6, 15), V(6, 15), V(6, 15), V(6, 16),	/* RECV_ZC EPOLL_WAIT READV_FIXED WRITEV_FIXED PIPE */
};

#define N(t) (sizeof(t) / sizeof((t)[0]))

_Static_assert(N(op_since) == 63, "one row per request opcode up to IORING_OP_PIPE");
_Static_assert(N(register_since) == 36, "one row per register opcode up to IORING_REGISTER_QUERY");

/* Set once by the constructor, before any ring exists; kept here rather
 * than read from the process state so the drain path's unit tests link
 * this file alone. */
static unsigned compat_kernel;

void compat_init(const struct bufsel_conf *c)
{
	/* The control arm of an A/B run leaves everything to the kernel. */
	compat_kernel = c->mode == BUFSEL_MODE_PASSTHROUGH ? 0 : c->kernel;
}

static unsigned emulated(void)
{
	return compat_kernel;
}

int compat_emulating(void)
{
	return compat_kernel != 0;
}

/* The bits of v (from a table of n entries) that the emulated kernel knows. */
static uint64_t known_bits(const uint16_t *since, size_t n)
{
	uint64_t m = 0;
	for (size_t i = 0; i < n && i < 64; i++)
		if (since[i] <= emulated())
			m |= 1ULL << i;
	return m;
}

static int known_index(const uint16_t *since, size_t n, unsigned i)
{
	return i < n && since[i] <= emulated();
}

int compat_setup_flags(unsigned flags)
{
	if (emulated() && (flags & ~known_bits(setup_flag_since, N(setup_flag_since))))
		return -EINVAL;
	return 0;
}

unsigned compat_features(unsigned features)
{
	return emulated() ? features & (unsigned)known_bits(feature_since, N(feature_since)) : features;
}

int compat_enter_flags(unsigned flags)
{
	if (emulated() && (flags & ~known_bits(enter_flag_since, N(enter_flag_since))))
		return -EINVAL;
	return 0;
}

int compat_register_opcode(unsigned opcode)
{
	if (emulated() && !known_index(register_since, N(register_since), opcode))
		return -EINVAL;
	return 0;
}

int compat_op_known(unsigned opcode)
{
	return !emulated() || known_index(op_since, N(op_since), opcode);
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
	if (!known_index(op_since, N(op_since), sqe->opcode))
		sqe->opcode = OP_UNKNOWN;
	uint8_t known = (uint8_t)known_bits(sqe_flag_since, N(sqe_flag_since));
	if (sqe->flags & ~known & 0x7f)
		sqe->flags = (uint8_t)((sqe->flags & known) | SQE_FLAG_UNKNOWN);
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
	while (known_index(op_since, N(op_since), last + 1))
		last++;
	for (unsigned i = 0; i < nr_ops && i < p->ops_len; i++)
		if (i > last || !known_index(op_since, N(op_since), i))
			memset(&p->ops[i], 0, sizeof(p->ops[i]));
	p->last_op = (uint8_t)last;
	/* The rows reach as far as the opcodes bufsel adds. */
	unsigned len = (last > IORING_OP_REMOVE_BUFFERS ? last : IORING_OP_REMOVE_BUFFERS) + 1;
	if (p->ops_len > len)
		p->ops_len = (uint8_t)len;
}
