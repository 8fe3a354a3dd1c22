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
 */
#ifndef BUFSEL_POOL_POOL_H
#define BUFSEL_POOL_POOL_H

#include <stdint.h>

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

struct pool_group_stats {
	/* Since the group was created (a ring registration on its id ends it). */
	uint64_t provided, removed, selected, returned, consumed, enobufs;
	uint32_t available;	/* buffers in the group now */
	/* Selected and not yet returned or consumed; carried by the id across
	 * group lives (see above), so a new group can start with in_use > 0. */
	uint32_t in_use, peak_in_use;
};

/* 0 or -ENOMEM. */
int pool_create(struct pool **out);
/* Frees every group: the ring is gone, and its buffers with it. */
void pool_destroy(struct pool *p);

/* What the kernel checks at submission (prep), in its order: 0 or -errno. */
int pool_provide_prep(const struct pool_provide *r);
/* Prep and issue: the CQE's res, 0 or -errno.  On -ENOMEM nothing was added
 * (a group created by this request stays, empty, as in the kernel). */
int pool_provide(struct pool *p, const struct pool_provide *r);
/* Takes back a successful pool_provide that the kernel never saw (its SQE
 * was not consumed): the last `added` buffers leave the tail of group bgid
 * and its counters, and a group the provide created (created != 0) goes
 * again.  Undo in reverse order of submission, so that the provided buffers
 * are the tail again. */
void pool_provide_undo(struct pool *p, uint16_t bgid, uint32_t added, int created);
int pool_remove_prep(const struct pool_remove *r);
/* The CQE's res: the number removed (oldest first), or -errno. */
int pool_remove(struct pool *p, const struct pool_remove *r);

/* Takes the head of group bgid: 0, or -ENOBUFS if the group is empty or is
 * not a legacy group (nonexistent or ring-mapped: a ring is the kernel's). */
int pool_select(struct pool *p, uint16_t bgid, struct pool_buf *out);
/* Buffers in legacy group bgid now (0 if none or not legacy): what the
 * kernel's REQ_F_BL_EMPTY tells after a selection. */
uint32_t pool_available(const struct pool *p, uint16_t bgid);
/* The kernel gives a selected buffer back: to the head of the legacy group
 * that holds b->bgid now, or dropped if there is none.  Never allocates. */
void pool_putback(struct pool *p, const struct pool_buf *b);
/* A selected buffer was delivered to the program in a CQE: it leaves bufsel's
 * accounting. */
void pool_consume(struct pool *p, const struct pool_buf *b);
/* Put-backs and consumes that matched no selected buffer of their id: a
 * caller bug, ignored and counted here. */
uint64_t pool_strays(const struct pool *p);

/* A ring-mapped group (IORING_REGISTER_PBUF_RING) takes this id: 0, -EEXIST
 * if a legacy group with buffers or a ring already has it (an emptied legacy
 * group is replaced), or -ENOMEM.  Call it once the kernel's argument checks
 * have passed; if the registration then fails, call pool_ring_unregister: the
 * kernel, too, has destroyed the emptied legacy group by then. */
int pool_ring_register(struct pool *p, uint16_t bgid);
void pool_ring_unregister(struct pool *p, uint16_t bgid);
int pool_is_ring(const struct pool *p, uint16_t bgid);

/* Legacy groups only: 0 or -ENOENT. */
int pool_group_stats(const struct pool *p, uint16_t bgid, struct pool_group_stats *out);
/* Calls fn for every legacy group in increasing bgid order; stops at, and
 * returns, the first non-zero result; 0 when all were visited.  fn must not
 * change the pool. */
int pool_for_each_group(const struct pool *p,
			int (*fn)(uint16_t bgid, const struct pool_group_stats *, void *),
			void *arg);
/* The most buffers that were selected and not yet returned or delivered at
 * one time, over every group of the pool. */
uint64_t pool_peak_in_use(const struct pool *p);
/* Every invariant, as code: 0 or -EUCLEAN.  O(groups + buffers held). */
int pool_check(const struct pool *p);

#endif
