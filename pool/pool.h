/*
 * The pool manager: every legacy buffer group of one ring, as Linux 6.18's
 * io_uring/kbuf.c keeps them, so that PROVIDE_BUFFERS, REMOVE_BUFFERS and
 * IOSQE_BUFFER_SELECT can be answered in user space with the kernel's results
 * (KERNEL-SEMANTICS.md has the rules).  No io_uring and no system call
 * happen here: preload/ decodes the SQE, calls in, and posts what comes back.
 *
 * Threads: a pool has no lock.  The caller serialises every call on one pool
 * (bufsel holds its per-ring lock), as the kernel holds ctx->uring_lock; two
 * pools share nothing and may be used from different threads at once.
 *
 * Errors are 0 or -errno, never errno.  What is validated here is what
 * kbuf.c validates; checks the kernel makes earlier, in io_init_req, stay
 * with the caller: IOSQE_BUFFER_SELECT on PROVIDE/REMOVE is -EOPNOTSUPP and
 * wins over everything below, and a non-zero ioprio on REMOVE_BUFFERS is
 * -EINVAL (struct pool_remove does not carry ioprio).
 *
 * Buffer accounting: a buffer is "available" while in its group, "in use"
 * from pool_select until pool_putback or pool_consume.  In-use counts belong
 * to the group id, not to one group's life, because the kernel's put-back goes
 * to whatever legacy group holds the id at that moment (and drops the buffer
 * if there is none or it is ring-mapped).
 *
 * Shaping (pool_set_policy): the caller may narrow a group beyond the
 * kernel's rules (a cap on buffers in use, a shorter length handed out,
 * -ENOBUFS injected from a seed), to test how a program copes with fewer or
 * smaller buffers.  Everything a policy refuses is counted apart from what
 * the kernel itself would refuse.  Statistics (counters, two histograms)
 * are per group life, like the existing counters, and can be written out as
 * JSON or a table (report.c; docs/stats-schema.md).
 */
#ifndef BUFSEL_POOL_POOL_H
#define BUFSEL_POOL_POOL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* MAX_BIDS_PER_BGID: a CQE carries a 16-bit bid. */
#define POOL_MAX_BIDS 65536u
/* A group stops taking buffers when it holds exactly this many. */
#define POOL_GROUP_CAP 65535u
/* MAX_RW_COUNT: the kernel clamps every provided buffer's length to it. */
#define POOL_MAX_RW_COUNT 0x7ffff000u
/* x86-64 TASK_SIZE_MAX with 4-level paging: access_ok() wants the whole
 * provided range below it (the end may equal it). */
#define POOL_USER_END 0x7ffffffff000ull

struct pool;			/* every buffer group of one ring */

struct pool_buf {
	uint64_t addr;
	uint32_t len;		/* already clamped to POOL_MAX_RW_COUNT */
	uint16_t bid;
	uint16_t bgid;
	uint8_t oldest;		/* taken with POOL_SEL_OLDEST: it goes back there */
};

struct pool_provide {		/* the PROVIDE_BUFFERS SQE fields, raw */
	uint64_t addr;		/* sqe->addr */
	uint32_t len;		/* sqe->len */
	int32_t nbufs;		/* sqe->fd */
	uint64_t off;		/* sqe->off: first bid */
	uint16_t bgid;		/* sqe->buf_group */
	uint32_t rw_flags;	/* sqe->rw_flags */
	uint32_t splice_fd_in;	/* sqe->splice_fd_in */
	uint16_t ioprio;	/* sqe->ioprio */
};

struct pool_remove {		/* the REMOVE_BUFFERS SQE fields, raw */
	int32_t nbufs;		/* sqe->fd */
	uint16_t bgid;		/* sqe->buf_group */
	uint64_t addr;
	uint32_t len;
	uint64_t off;
	uint32_t rw_flags;
	uint32_t splice_fd_in;
};

/*
 * How the caller shapes one legacy group (pool_set_policy).  All zero is the
 * kernel's behaviour, and what a group gets without a policy.
 */
struct pool_policy {
	/* 0: none; else at most cap buffers of the group in use at once, and a
	 * selection at in_use >= cap fails -ENOBUFS ("capped"). */
	uint32_t cap;
	/* 0: none; else a selected buffer's len is clamped to max_len. */
	uint32_t max_len;
	/* Probability that a selection which would succeed fails -ENOBUFS
	 * instead ("injected"), leaving the buffer in the group.  Below 0 or NaN
	 * is taken as 0, above 1 as 1. */
	double enobufs_rate;
	/* With the bgid, seeds the group's generator: the same seed and the same
	 * sequence of selections give the same failures. */
	uint64_t seed;
	/* Count the buffers the program holds (delivered, not yet provided
	 * again) even without a cap: what the statistics' held, peak_out and
	 * size need.  Costs a bitmap of 8 KiB per group that delivers. */
	uint8_t track_held;
};

struct pool_group_stats {
	/* Since the group was created (a ring registration on its id ends it). */
	uint64_t provided, removed, selected, returned, consumed;
	/* Every -ENOBUFS of the group: enobufs_empty + enobufs_capped +
	 * enobufs_injected. */
	uint64_t enobufs;
	uint32_t available;	/* buffers in the group now */
	/* Selected and not yet returned or consumed; carried by the id across
	 * group lives (see above), so a new group can start with in_use > 0. */
	uint32_t in_use, peak_in_use;
	/* The fields above keep their offsets; what follows came with policies.
	 * Also since the group was created. */
	uint64_t enobufs_empty;		/* no buffer in the group */
	uint64_t enobufs_capped;	/* in_use had reached policy.cap */
	uint64_t enobufs_injected;	/* policy.enobufs_rate drew a failure */
	uint64_t waits, wait_ns;	/* pool_note_wait: how many, how long in all */
	/* pool_consume_bytes: deliveries with a byte count, and the bytes. */
	uint64_t used_count, used_bytes;
	struct pool_policy policy;	/* as the group got it, rate normalised */
	/* With a cap or policy.track_held (else held is 0): buffers delivered
	 * and not provided again; the most out of the group at once (in use +
	 * held); the buffers the group has (available + in use + held) now and
	 * at most; the largest buffer length provided. */
	uint32_t held, peak_out, size, peak_size, buf_len;
};

/*
 * Power-of-two histograms: bucket 0 counts the value 0, bucket b >= 1 the
 * values 2^(b-1) .. 2^b - 1, so bucket 32 ends at UINT32_MAX.
 */
#define POOL_HIST_BUCKETS 33u

struct pool_group_hist {
	/* Bytes used per delivered buffer, as pool_consume_bytes reported them;
	 * the buckets add up to used_count. */
	uint64_t used[POOL_HIST_BUCKETS];
	/* The group's in_use right after each successful selection, the buffer
	 * just selected included; the buckets add up to selected. */
	uint64_t in_use[POOL_HIST_BUCKETS];
};

static inline unsigned pool_hist_bucket(uint32_t v)
{
	return v ? 32u - (unsigned)__builtin_clz(v) : 0u;
}

/* The smallest and largest value bucket b counts (b < POOL_HIST_BUCKETS). */
static inline uint32_t pool_hist_lo(unsigned b)
{
	return b ? 1u << (b - 1) : 0u;
}

static inline uint32_t pool_hist_hi(unsigned b)
{
	return b ? (uint32_t)((1ull << b) - 1) : 0u;
}

/* 0 or -ENOMEM. */
int pool_create(struct pool **out);
/* Frees every group: the ring is gone, and its buffers with it. */
void pool_destroy(struct pool *p);

/*
 * The kernel's rules for legacy groups where they are not 6.18's.
 * POOL_NEWEST_FIRST, the kernels before 5.18 (a group was a list whose
 * head was its first buffer): a selection takes the newest buffer and the
 * group's first one last; a removal takes the oldest after that first
 * one; a group emptied by either ends (REMOVE_BUFFERS then -ENOENT) until
 * a PROVIDE_BUFFERS starts it again.  Set before the first provide.
 */
#define POOL_NEWEST_FIRST 1u
/* The prep of the kernels before 5.15 (pool_provide_prep): a count above
 * 65535 fails, and neither a length of 0, nor the range's overflow (beyond
 * access_ok's -EFAULT), nor splice_fd_in, nor the last bid is checked. */
#define POOL_PREP_5_10 2u
void pool_set_legacy_rules(struct pool *p, unsigned rules);

/* What the kernel checks at submission (prep), in its order, under rules
 * (POOL_PREP_5_10 or 0): 0 or -errno. */
int pool_provide_prep(const struct pool_provide *r, unsigned rules);
/* Prep and issue: the CQE's res, 0 or -errno.  On -ENOMEM nothing was added
 * (a group created by this request stays, empty, as in the kernel). */
int pool_provide(struct pool *p, const struct pool_provide *r);
/* Takes back a successful pool_provide that the kernel never saw (its SQE
 * was not consumed): the last `added` buffers leave the tail of group bgid
 * and its counters, and a group the provide created (created != 0) goes
 * again.  Undo in reverse order of submission, so that the provided buffers
 * are the tail again. */
void pool_provide_undo(struct pool *p, uint16_t bgid, uint32_t added, int created);
int pool_remove_prep(const struct pool_remove *r, unsigned rules);
/* The CQE's res: the number removed (oldest first), or -errno. */
int pool_remove(struct pool *p, const struct pool_remove *r);
/* What a pool_remove_kept took, until the kernel takes the SQE (or not). */
struct pool_kept {
	void *slots;		/* the pool's allocation, n slots; NULL: nothing kept */
	uint32_t n;
	uint16_t bgid;
};
/* pool_remove, keeping what it took so that pool_remove_undo can give it
 * back: with no memory for that, it removes all the same (kept->slots NULL,
 * the removal then cannot be undone). */
int pool_remove_kept(struct pool *p, const struct pool_remove *r, struct pool_kept *kept);
/* The kernel never saw the REMOVE: what it took is the group's head again.
 * Undo in reverse order of submission, as pool_provide_undo.  Frees kept. */
void pool_remove_undo(struct pool *p, struct pool_kept *kept);
/* The kernel took the REMOVE: the removal stands.  Frees kept. */
void pool_kept_free(struct pool *p, struct pool_kept *kept);

/* Takes the head of group bgid: 0, or -ENOBUFS if the group is empty or is
 * not a legacy group (nonexistent or ring-mapped: a ring is the kernel's),
 * or -EBUSY while an incremental ring's entry is out (pool_ring_commit). */
int pool_select(struct pool *p, uint16_t bgid, struct pool_buf *out);
/*
 * pool_select and pool_head with how: POOL_SEL_AGAIN (for a request whose
 * earlier selection was refused and counted: a refusal now is not counted
 * again) and POOL_SEL_OLDEST, for a request only
 * kernels from 5.19 on have (a multishot, bundle or poll-first receive,
 * SEND, READ_MULTISHOT): it takes the oldest buffer, as those kernels do,
 * whatever the group's rules (POOL_NEWEST_FIRST), and a put-back returns it
 * where it came from.
 */
#define POOL_SEL_AGAIN 1u
#define POOL_SEL_OLDEST 2u
int pool_select_how(struct pool *p, uint16_t bgid, struct pool_buf *out, unsigned how);
int pool_head_how(const struct pool *p, uint16_t bgid, struct pool_buf *out, unsigned how);
/* Buffers in legacy group bgid now (0 if none or not legacy): what the
 * kernel's REQ_F_BL_EMPTY tells after a selection. */
uint32_t pool_available(const struct pool *p, uint16_t bgid);
/* Non-zero when the group has a list (provided at least once). */
int pool_has_group(const struct pool *p, uint16_t bgid);
/* The buffer a selection would take now, left where it is and counted
 * nowhere: 0, or -ENOBUFS if the group has none (policies are not asked). */
int pool_head(const struct pool *p, uint16_t bgid, struct pool_buf *out);
/* The kernel gives a selected buffer back: to the legacy group that holds
 * b->bgid now, where its next selection of that kind takes from (the head,
 * or the newest end under POOL_NEWEST_FIRST), or dropped if there is none.
 * Never allocates. */
void pool_putback(struct pool *p, const struct pool_buf *b);
/* A selected buffer was delivered to the program in a CQE: it leaves bufsel's
 * accounting. */
void pool_consume(struct pool *p, const struct pool_buf *b);
/* pool_consume, and the program used `used` bytes of the buffer (the CQE's
 * res for a read or receive): counted in the group's bytes-used histogram. */
void pool_consume_bytes(struct pool *p, const struct pool_buf *b, uint32_t used);
/* A request on group bgid waited ns nanoseconds for data while holding no
 * buffer (a receive bound only once readable): summed with a count.  Ignored
 * when bgid is not a legacy group now. */
void pool_note_wait(struct pool *p, uint16_t bgid, uint64_t ns);
/* Put-backs and consumes that matched no selected buffer of their id: a
 * caller bug, ignored and counted here. */
uint64_t pool_strays(const struct pool *p);

/*
 * Policies: policy_for is called once each time a legacy group is created on
 * an id (its first provide, or the first after the id was a ring or had no
 * group), with the id and arg, and returns 0 with *out filled (it starts
 * zeroed), or non-zero for no policy.  It runs inside pool_provide under the
 * caller's serialisation and must not call into the pool.  Groups that exist
 * already keep what they got; NULL stops the lookups.
 *
 * A selection on a legacy group is refused, in this order: no buffer
 * (empty), in_use >= cap (capped), then a draw from the group's generator
 * (injected); only a selection that reaches the draw advances the generator,
 * so capped and empty attempts do not shift the failure sequence.  A refused
 * selection changes nothing but its counter.  A buffer put back keeps the
 * length it was selected with.
 */
void pool_set_policy(struct pool *p,
		     int (*policy_for)(uint16_t bgid, struct pool_policy *out, void *arg),
		     void *arg);

/*
 * Buffer rings bufsel keeps itself (emulated): the program fills a ring of
 * entries laid out as the kernel's struct io_uring_buf, the ring's tail in
 * the last two bytes of entry 0 (struct io_uring_buf_ring), and advances the
 * tail with release ordering; a selection reads the tail with acquire
 * ordering and takes the entry at head & (entries - 1), as kbuf.c does, and
 * the head, which the program never sees but through
 * IORING_REGISTER_PBUF_STATUS, is the pool's.  Reading the ring is plain
 * memory access: the caller makes sure the memory stays mapped.
 */
struct pool_ring_entry {
	uint64_t addr;
	uint32_t len;
	uint16_t bid;
	uint16_t resv;		/* entry 0's is the ring's tail */
};

struct pool_ring {
	struct pool_ring_entry *entries;	/* as the caller reads them */
	uint32_t nr;				/* a power of two below 65536 */
	uint16_t flags;				/* the registration's, kept for the caller */
	uint8_t incremental;			/* IOU_PBUF_RING_INC: entries are used up in parts */
	uint32_t min_left;			/* the registration's: an entry left with fewer
						 * bytes is done */
	void *mem;		/* the caller's own mapping of the ring, or NULL */
	size_t mem_len;
	int mem_fd;		/* the caller's fd of that memory, or -1 */
	uint64_t user_addr;	/* a ring in the program's memory that the caller
				 * moved into mem (its pages, pinned): where the
				 * program maps it; 0 for none */
};

/* The ring's tail as the program published it. */
static inline uint16_t pool_ring_tail(const struct pool_ring *r)
{
	return __atomic_load_n(&r->entries[0].resv, __ATOMIC_ACQUIRE);
}

/* An emulated ring takes this id, as pool_ring_register: 0, -EEXIST or
 * -ENOMEM.  Its policy is looked up as a legacy group's. */
int pool_ring_emulate(struct pool *p, uint16_t bgid, const struct pool_ring *ring);
/* The emulated ring on the id: 0 and *out, or -ENOENT (no group) or -EINVAL
 * (a legacy group or the kernel's ring), as io_register_pbuf_status. */
int pool_ring_get(const struct pool *p, uint16_t bgid, struct pool_ring *out, uint16_t *head);
/* What the id holds, for the caller's choice of who answers. */
enum pool_kind { POOL_NONE, POOL_LEGACY, POOL_KERNEL_RING, POOL_EMULATED_RING };
enum pool_kind pool_kind(const struct pool *p, uint16_t bgid);
/* Calls fn for every emulated ring (the pool must not change meanwhile). */
void pool_for_each_ring(const struct pool *p, void (*fn)(uint16_t bgid, const struct pool_ring *, void *),
			void *arg);

/*
 * A bundle's selection from an emulated ring (IORING_RECVSEND_BUNDLE), as
 * io_ring_buffers_peek maps entries: from the head, up to max_len bytes
 * (0: no limit), with room for nr_iovs of them unless expand may grow it to
 * what max_len needs (at most POOL_BUNDLE_MAX).  An entry longer than what
 * is left of max_len is cut when it is the first, else left with the rest
 * (partial).  The entries taken are out of the ring until consumed or put
 * back (in reverse order).  Returns how many (> 0), -ENOBUFS (empty, or a
 * policy refused: counted only with count) or -EBUSY (pool_ring_commit).
 */
#define POOL_BUNDLE_MAX 256
struct pool_bundle {
	uint32_t max_len;	/* in */
	uint16_t nr_iovs;	/* in: at least 1 */
	uint8_t expand;		/* in */
	uint8_t count;		/* in: a refusal counts as a receive's -ENOBUFS */
	uint8_t partial;	/* out: an entry was cut or left for max_len */
	uint8_t emptied;	/* out: no entry is left behind the last taken */
	uint8_t expanded;	/* out: the room grew to the entries taken */
	uint32_t total;		/* out: bytes mapped */
};
int pool_select_bundle(struct pool *p, uint16_t bgid, struct pool_bundle *b, struct pool_buf *out);

/*
 * An incremental ring (IOU_PBUF_RING_INC) commits what a transfer used, as
 * io_kbuf_inc_commit: from the first of the n entries taken (the last n
 * taken, in order), each used up is done (its len set to 0 in the ring),
 * and the one the transfer ended in, if left with min_left bytes or more (or
 * not touched at all), stays at the head, its addr and len moved past what
 * was used; the entries after it go back.  Returns 1 when an entry stays
 * (IORING_CQE_F_BUF_MORE), 0 when none does.  Entries taken since by
 * another selection leave these as taken, done.  Until its entries are
 * committed (or put back), a selection from the ring fails with -EBUSY,
 * uncounted: the kernel runs such transfers one after the other.
 */
int pool_ring_commit(struct pool *p, const struct pool_buf *bufs, uint16_t n, uint32_t used);
/* The id holds an incremental ring bufsel keeps. */
int pool_ring_incremental(const struct pool *p, uint16_t bgid);

/* A ring-mapped group (IORING_REGISTER_PBUF_RING) takes this id: 0, -EEXIST
 * if a legacy group with buffers or a ring already has it (an emptied legacy
 * group is replaced), or -ENOMEM.  Call it once the kernel's argument checks
 * have passed; if the registration then fails, call pool_ring_unregister: the
 * kernel, too, has destroyed the emptied legacy group by then. */
int pool_ring_register(struct pool *p, uint16_t bgid);
/* Either kind of ring leaves the id (an emulated ring's memory is the
 * caller's to free: pool_ring_get first). */
void pool_ring_unregister(struct pool *p, uint16_t bgid);
/* The kernel's ring: the id is not bufsel's. */
int pool_is_ring(const struct pool *p, uint16_t bgid);

/*
 * The kernel's ring on the id, watched for statistics (pool/ring.c): ring
 * as the program's memory shows it (entries NULL when the program has yet
 * to map an IOU_PBUF_RING_MMAP ring: pool_ring_watch_mem then).  0 or
 * -ENOENT (the id is not the kernel's ring).
 */
int pool_ring_watch(struct pool *p, uint16_t bgid, const struct pool_ring *ring);
int pool_ring_watch_mem(struct pool *p, uint16_t bgid, struct pool_ring_entry *entries);
/* A CQE of a request that selected from a watched kernel ring. */
struct pool_seen {
	int32_t res;
	uint8_t buffer;		/* IORING_CQE_F_BUFFER, with bid */
	uint8_t buf_more;	/* IORING_CQE_F_BUF_MORE: the entry stays at the head */
	uint8_t bundle;		/* the request was a bundle: res may span entries */
	uint16_t bid;
};
void pool_ring_observe(struct pool *p, uint16_t bgid, const struct pool_seen *s);

/* Legacy groups, emulated rings and watched kernel rings: 0 or -ENOENT. */
int pool_group_stats(const struct pool *p, uint16_t bgid, struct pool_group_stats *out);
int pool_group_hist(const struct pool *p, uint16_t bgid, struct pool_group_hist *out);
/* Calls fn for every legacy group in increasing bgid order; stops at, and
 * returns, the first non-zero result; 0 when all were visited.  fn must not
 * change the pool. */
int pool_for_each_group(const struct pool *p,
			int (*fn)(uint16_t bgid, const struct pool_group_stats *, void *),
			void *arg);
/* The most buffers that were selected and not yet returned or delivered at
 * one time, over every group of the pool. */
uint64_t pool_peak_in_use(const struct pool *p);
/*
 * The statistics as text (docs/stats-schema.md): a JSON object for the ring
 * (ring_index is only printed) holding an array of its legacy groups in
 * bgid order, and a short table, a header and one line per group.  Both
 * write into the caller's buffer with no allocation and no system call.
 *
 * pool_stats_json and pool_stats_table behave as snprintf: they return the
 * length of the whole text and write as much of it as fits in len - 1 bytes
 * plus a NUL (nothing when len is 0).
 *
 * The _next forms write a large text in chunks: zero a cursor, then call
 * until 0 comes back.  Each call writes whole pieces (the opening, one group,
 * the closing) while they fit in len - 1 bytes, NUL-terminates, and returns
 * the bytes written; 0 once all was written; -ENOSPC if not even the next
 * piece fits (len >= POOL_STATS_PIECE_MAX always fits one).  The text is
 * consistent if the pool does not change between calls, and well-formed in
 * any case (the cursor remembers a bgid, not a pointer).
 */
#define POOL_STATS_PIECE_MAX 4096u

struct pool_stats_cursor {
	uint32_t stage;		/* private */
	uint32_t bgid;		/* private: the next group to write */
};

size_t pool_stats_json(const struct pool *p, unsigned ring_index, char *buf, size_t len);
ssize_t pool_stats_json_next(const struct pool *p, unsigned ring_index,
			     struct pool_stats_cursor *c, char *buf, size_t len);
size_t pool_stats_table(const struct pool *p, char *buf, size_t len);
ssize_t pool_stats_table_next(const struct pool *p, struct pool_stats_cursor *c,
			      char *buf, size_t len);

/* Every invariant, as code: 0 or -EUCLEAN.  O(groups + buffers held). */
int pool_check(const struct pool *p);

#endif
