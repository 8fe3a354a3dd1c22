/*
 * Requests bufsel tracks between an SQE it rewrote and the CQE that answers
 * it.  The real SQE carries a tag instead of the program's user_data; the
 * tag names a slot and its generation, so a stale or foreign value is never
 * mistaken for a live request.  Slots live in fixed chunks that never move,
 * because the kernel may read a request's iovec after submission.
 *
 * A program's own user_data could equal a tag only by spelling out the magic
 * top 16 bits; bufsel accepts that risk (documented in the README).
 */
#ifndef BUFSEL_PRELOAD_REQ_H
#define BUFSEL_PRELOAD_REQ_H

#include <stdatomic.h>
#include <stdint.h>
#include <linux/io_uring.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include "pool/pool.h"
#include "preload/spin.h"
#include "preload/uring_abi.h"

#define REQ_TAG_MAGIC 0xb5e1000000000000ULL
#define REQ_TAG_MASK 0xffff000000000000ULL
#define REQ_CHUNK 256
#define REQ_CHUNKS 1024		/* 262,144 requests in flight per ring at most */
/* The CQE flags that name a selected buffer: the kernel's
 * IORING_CQE_F_BUFFER with the bid above IORING_CQE_BUFFER_SHIFT. */
static inline uint32_t cqe_buf_flags(uint16_t bid)
{
	return IORING_CQE_F_BUFFER | ((uint32_t)bid << IORING_CQE_BUFFER_SHIFT);
}

/* How a legacy group selects for this request (pool.h): one that only the
 * kernels whose groups are FIFO (5.19 on) have takes the oldest buffer, as
 * they do, on a kernel whose groups select the newest first. */
static inline unsigned sel_how(const struct io_uring_sqe *sqe)
{
	if (sqe->opcode == OP_READ_MULTISHOT_NR || sqe->opcode == IORING_OP_SEND)
		return POOL_SEL_OLDEST;
	if ((sqe->opcode == IORING_OP_RECV || sqe->opcode == IORING_OP_RECVMSG) &&
	    (sqe->ioprio & (IORING_RECV_MULTISHOT | IORING_RECVSEND_POLL_FIRST | IORING_RECVSEND_BUNDLE)))
		return POOL_SEL_OLDEST;
	return 0;
}

/*
 * A tag: the magic (16 bits), the slot's generation (16), the process that
 * made the request (10) and the slot (18).  The request table is each
 * process's own (a ring shared across fork, ring.h): a process that moves a
 * CQE tagged by another leaves it for that one (rewrite_foreign_cqe).  The
 * ring's first process is 0, each fork child that inherits it the next
 * number; REQ_PROC_ANY, past the last, is a process any other may stand in
 * for (as all did before).
 */
#define REQ_SLOT_BITS 18
#define REQ_PROC_BITS 10
#define REQ_PROC_ANY ((1U << REQ_PROC_BITS) - 1)

static inline unsigned req_tag_proc(uint64_t tag)
{
	return (unsigned)(tag >> REQ_SLOT_BITS) & REQ_PROC_ANY;
}

enum req_kind {
	REQ_STANDIN,		/* answers an emulated SQE: report res */
	REQ_READ_SEL,		/* READ/READV rewritten onto a selected buffer */
	REQ_RECV_WAIT,		/* a RECV/RECVMSG waiting for data: a POLL_ADD stands in */
	REQ_RECV_SEL,		/* that receive, issued on the buffer selected for the data */
	REQ_SENTINEL,		/* a NOP that tells when the SQEs before it in a chain are done */
	REQ_LINK_TIMEOUT,	/* the program's LINK_TIMEOUT on a waiting receive */
	REQ_RECV_MULTI,		/* a multishot RECV: a poll, then one receive per buffer */
	REQ_CANCEL_ALL,		/* the program's cancel-all by user_data: res more were found */
	REQ_PROBE,		/* a NOP behind a part of a batch: did the kernel take it all? */
	REQ_SEND_BUNDLE,	/* a bundle SEND on a legacy group: one SEND per buffer */
	REQ_TIMEOUT,		/* the program's TIMEOUT with a completion count, which
				 * bufsel counts (the kernel's timer goes with off 0) */
	REQ_SKIP,		/* an SQE with IOSQE_CQE_SKIP_SUCCESS on a kernel that
				 * lacks it: bufsel drops its CQE if it succeeded */
	REQ_WATCH,		/* a request on a ring the kernel keeps, watched for
				 * statistics (buf.bgid: its group) */
	REQ_TIMEOUT_REMOVE,	/* the program's removal of a TIMEOUT bufsel counts, under
				 * BUFSEL_KERNEL before 5.18 (orig.addr: its tag) */
};

enum req_flags {
	REQ_SKIP_SUCCESS = 1 << 0,	/* the program asked for no CQE on success */
	REQ_FIXED_FILE = 1 << 1,
	REQ_LINKED = 1 << 2,		/* a short result fails the link */
	REQ_DELIVERED = 1 << 3,		/* the buffer was accounted as delivered at submission */
	REQ_HARDLINK = 1 << 4,		/* the chain goes on after a failure */
	REQ_DONE = 1 << 5,		/* its CQE is posted; only a LINK_TIMEOUT keeps it */
	REQ_WAITALL = 1 << 6,		/* MSG_WAITALL: a short receive fails the link */
	REQ_BOUND_RECV = 1 << 7,	/* a receive in the kernel on a selected buffer (counted) */
	REQ_STANDIN_BUF = 1 << 8,	/* STANDIN: holds buf, consumed when its CQE reports it */
	REQ_NOT_SOCKET = 1 << 9,	/* RECV_MULTI: polled before its file was looked at,
					 * which is no socket: its wake fails -ENOTSOCK */
	REQ_TRUNC_ADDED = 1 << 10,	/* RECV: bufsel asked for MSG_TRUNC (bind_buffer) */
	REQ_MAY_RETURN = 1 << 11,	/* RECV_SEL: may end without data, its buffer put back */
	REQ_PROBED = 1 << 12,		/* RECV_SEL: its buffer's first byte was tried */
	REQ_RING_LAZY = 1 << 13,	/* READ on an emulated ring's buffer, from a file that
					 * polls: the kernel commits the entry only if the read
					 * succeeds (an error leaves it, and the CQE, without it) */
	REQ_CHAIN_HIDDEN = 1 << 15,	/* SKIP, STANDIN: a member after one that failed with the skip
					 * flag, whose -ECANCELED the kernel hides
					 * (REQ_F_SKIP_LINK_CQES) */
	REQ_IN_CHAIN = 1 << 16,		/* SKIP: an earlier SQE links to it, so its
					 * -ECANCELED is the chain's, not its own failure */
	REQ_WATCH_BUNDLE = 1 << 17,	/* WATCH: a bundle, whose CQE may span entries */
	REQ_READ_WAITS = 1 << 18,	/* RECV_MULTI, READ_MULTISHOT: the kernel refuses
					 * RWF_NOWAIT on the file (pipes before 5.12):
					 * every step's READ is a plain one, after its poll */
	REQ_KEEPS_BUF = 1 << 19,	/* RECV_SEL, READ_SEL under LEGACY_KEEPS_ON_FAILURE (kernel_ops.h):
					 * its buffer is the CQE's whatever the result, and
					 * lost if it is cancelled */
	REQ_NO_NONEMPTY = 1 << 20,	/* RECV_SEL under LEGACY_NO_SOCK_NONEMPTY */
	REQ_STANDIN_POLL = 1 << 21,	/* STANDIN: a poll, whose any mask is what it gives */
	REQ_COMMITTED = 1 << 14,	/* an incremental ring's entry committed at selection
					 * (io_should_commit): its CQE takes cflags, the pool
					 * has nothing more to do */
};

/* A bundle's ring entries (IORING_RECVSEND_BUNDLE on a ring bufsel keeps):
 * the kernel's request maps them into one iovec array and commits those the
 * transfer touched.  Up to two mappings of a receive (io_recv_finish maps
 * again once for what is still queued). */
struct req_bundle {
	uint16_t n;
	struct pool_buf bufs[2 * POOL_BUNDLE_MAX];
	struct iovec iov[2 * POOL_BUNDLE_MAX];
	struct msghdr msg;
};

struct req {
	uint64_t user_data;	/* the program's */
	uint8_t live;
	uint32_t gen;
	uint32_t idx;		/* fixed for the slot's life */
	uint32_t next_free;
	uint8_t kind;
	uint32_t flags;
	int32_t res;		/* REQ_STANDIN: what the CQE reports */
	uint32_t cflags;	/* REQ_STANDIN: and its flags */
	uint32_t want;		/* bytes asked for: a shorter result fails a link */
	int32_t expect;		/* REQ_STANDIN: what the stand-in gives when it runs */
	struct pool_buf buf;
	struct iovec iov;	/* READV/RECVMSG: the one iovec, now on the selected buffer */
	struct msghdr *msg;	/* RECVMSG: bufsel's copy, pointing at iov */
	struct req_bundle *bun;	/* a bundle on a ring bufsel keeps: its entries */
	uint64_t prog_msg;	/* RECVMSG: the program's msghdr, for the write-back */
	struct msghdr tmpl;	/* RECVMSG multishot: name and control sizes to lay out */

	/* SQEs held back until this request is done: the rest of its chain,
	 * or for a sentinel the SQEs it stands before. */
	struct io_uring_sqe *held;
	uint32_t nheld, capheld;
	struct io_uring_sqe orig;	/* RECV_WAIT, RECV_MULTI: the program's receive */
	struct io_uring_sqe next;	/* RECV_MULTI: the SQE to issue next */
	uint8_t receiving;		/* RECV_MULTI: a receive (not a poll) is in the kernel */
	uint8_t inq_unknown;		/* RECV_MULTI: the socket's receive does not report
					 * what is left queued (datagrams): the kernel tries
					 * again at once after every CQE */
	uint8_t loops;			/* RECV_MULTI, MSG_DONTWAIT: receives in a row */
	uint8_t looping;		/* RECV_MULTI: the next receive follows one at once */
	uint8_t mshot_lim;		/* RECV_MULTI: optlen set a byte limit (6.15) */
	uint32_t mshot_left;		/* RECV_MULTI: bytes before that limit ends the stream */
	uint8_t emptied;		/* SEND_BUNDLE, RECV_MULTI: its latest selection emptied
					 * the group (the kernel's REQ_F_BL_EMPTY) */
	uint64_t wait_start;		/* CLOCK_MONOTONIC ns when a poll stood in for it */
	struct req *timeout;		/* RECV_WAIT/SEL: its LINK_TIMEOUT request */
	struct io_uring_sqe *poll_slot;	/* RECV_WAIT: its POLL_ADD's real slot, while the batch drains */
	struct req *owner;		/* LINK_TIMEOUT: the receive it guards */
	struct io_uring_cqe stash;	/* LINK_TIMEOUT's CQE, posted after the receive's */
	uint8_t stashed;
	struct req *next_ready;		/* on the ring's list of chains to issue */
	struct req *next_parked;	/* on the ring's list of receives waiting for a buffer */
	struct req *next_batch;		/* RECV_SEL: on the ring's list of this batch's receives */
	uint32_t target;		/* TIMEOUT: the CQE count (ring.h, cq_seq) that ends it */
	struct req *next_counting;	/* TIMEOUT: on the ring's list of counting timeouts */
	uint64_t chain_next;		/* SKIP, STANDIN: the tag of the next member of its chain */
	int8_t sock_type;		/* req_sock_type's answer; 0: not asked yet */
	uint8_t sock_tcp;		/* req_sock_tcp's: 2 TCP, 1 not, 0 not asked yet */
};

struct req_table {
	struct req *chunk[REQ_CHUNKS];
	uint32_t nchunks;
	uint32_t free_head;	/* index + 1; 0 means empty */
	uint32_t live;
	uint32_t proc;		/* this process's number on the ring (tags) */
	struct spin lock;
	/* Receives in the kernel on a buffer bufsel selected for them: their
	 * buffers are out of the group only until they complete. */
	atomic_uint bound_recvs;
};

struct req *req_alloc(struct req_table *t);	/* NULL: out of memory or slots */
void req_free(struct req_table *t, struct req *q);
/* Marks q as such a receive, or no longer one (both idempotent). */
void req_recv_bound(struct req_table *t, struct req *q);
void req_recv_unbound(struct req_table *t, struct req *q);
/* Appends an SQE to q's held list: 0 or -ENOMEM. */
int req_hold(struct req *q, const struct io_uring_sqe *sqe);
uint64_t req_tag(const struct req_table *t, const struct req *q);
/* The live request a CQE's user_data names, or NULL for anything else. */
struct req *req_lookup(struct req_table *t, uint64_t user_data);
/* A live request carrying the program's user_data ud (for cancels), or NULL. */
struct req *req_find_user_data(struct req_table *t, uint64_t ud);
/* A live counting TIMEOUT with the program's user_data ud (one that has not
 * reached its count, if there is one), or NULL. */
struct req *req_find_timeout(struct req_table *t, uint64_t ud);
/* The tags of up to max live requests carrying ud; returns how many. */
unsigned req_tags_of(struct req_table *t, uint64_t ud, uint64_t *tags, unsigned max);
/* A live SKIP request for the program's ud and opcode (what a removal by
 * user_data finds in the kernel), or NULL. */
struct req *req_find_skip(struct req_table *t, uint64_t ud, uint8_t opcode);
void req_table_destroy(struct req_table *t);

/* CLOCK_MONOTONIC in ns (vDSO: no system call). */
static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
