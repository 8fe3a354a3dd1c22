/*
 * A shadowed ring: the kernel's real ring, bufsel's shadow of it, and the fd
 * bookkeeping that ties the two to the program.  The program holds the real
 * ring's fd (so fd numbers, readiness and io_uring_register all behave as
 * natively); its mmap of that fd is answered with the shadow memory.
 *
 * Ownership: the shadow SQ head, CQ tail and SQ flags are written by bufsel
 * only; the shadow SQ tail and CQ head by the program only.  The real SQ tail
 * and CQ head are bufsel's, the real SQ head and CQ tail the kernel's.
 * sq_lock serialises draining (submitters), cq_lock reaping (any enter); a
 * program may submit on one thread and reap on another, as liburing allows.
 */
#ifndef BUFSEL_PRELOAD_RING_H
#define BUFSEL_PRELOAD_RING_H

#include <linux/io_uring.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "pool/pool.h"
#include "preload/arena.h"
#include "preload/select/req.h"
#include "preload/select/rewrite.h"
#include "preload/shadow/shadow.h"
#include "preload/spin.h"

/*
 * What the drain and completion paths call for SQEs and CQEs that need more
 * than a copy (buffer selection).  A ring without hooks is a plain shadow;
 * the copy paths stay free of system calls and testable on a fake ring.
 */
struct ring_hooks {
	int (*wants)(const struct io_uring_sqe *sqe);
	/* Rewrites *sqe in its real slot; returns a request that takes the rest
	 * of the chain (NULL: the chain goes on in the real SQ).  in_chain: an
	 * SQE before this one links to it. */
	void *(*rewrite)(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u,
			 int in_chain);
	/* An SQE of a chain a request took: 0 if held, 1 if it was rewritten
	 * in place and must take a real slot after all (undo in *u), 2 the
	 * same, and the request takes no more of the chain. */
	int (*hold)(struct ring *r, void *capture, struct io_uring_sqe *sqe, struct rewrite_undo *u);
	void (*undo)(struct ring *r, struct rewrite_undo *u);
	/* The kernel took the SQE (or will: SQPOLL, held SQEs). */
	void (*commit)(struct ring *r, struct rewrite_undo *u);
	/* A real CQE: 1 to post (possibly patched), 0 to hide. */
	int (*complete)(struct ring *r, struct io_uring_cqe *cqe);
	/* A real CQE another process sharing the ring must move (its request
	 * table answers it): 1 to leave it, and what follows, where it is. */
	int (*foreign)(struct ring *r, const struct io_uring_cqe *cqe);
	/* Would this SQE have to go to the kernel alone, after what precedes it?
	 * 0 no; 1 yes; 2 yes, and the CQEs of what precedes it must be moved
	 * before it is placed. */
	int (*barrier)(struct ring *r, const struct io_uring_sqe *sqe);
	/* Writes a NOP whose CQE is hidden: 0, or -ENOMEM (undo in *u). */
	int (*probe)(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u);
	/* The error the kernel gives this SQE at submission, as far as bufsel
	 * can tell (io_init_req's checks for every opcode, the whole prep for
	 * the ones it emulates): 0 if none. */
	int (*submit_error)(struct ring *r, const struct io_uring_sqe *sqe);
	/* BUFSEL_KERNEL: the ioprio bits of this SQE bufsel gives their
	 * meaning itself, whatever the emulated kernel knows (compat_sqe). */
	uint32_t (*offers)(struct ring *r, const struct io_uring_sqe *sqe);
	/* An SQE of a chain that fails at submission: rewritten so that the
	 * kernel fails or cancels it with the chain, and nothing runs. */
	void (*fail_member)(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u);
	/* An SQE bound for io-wq whose rewrite set u->deferred: its buffer is
	 * selected now, at the end of its batch, where a worker would. */
	void (*deferred)(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u);
	/* Work the completion path queued that needs the SQ (outside cq_lock
	 * and sq_lock); unattended: only what the mover may issue. */
	void (*followup)(struct ring *r, int unattended);
	/* The program's CQ has come to seq (ring_cq_seq): counting TIMEOUTs
	 * that reached their count complete (cq_lock held). */
	void (*counted)(struct ring *r, unsigned seq);
	/* An SQE placed with IOSQE_CQE_SKIP_SUCCESS on a ring whose kernel
	 * lacks it (compat_sqe_skip_shadowed): bufsel skips its CQE. */
	void (*skip)(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u, int in_chain);
};

/* CQEs bufsel made, waiting for room in the shadow CQ (owned under cq_lock).
 * It starts on CQE_QUEUE_RESERVE entries of the ring's scratch mapping, so
 * that only a larger backlog needs the heap. */
#define CQE_QUEUE_RESERVE 64

struct cqe_queue {
	struct io_uring_cqe *v;
	unsigned head, len, cap;
	int heap;		/* v came from the heap (else it is the reserve) */
};

#define TMO_TRACKED 16
#define RING_WAITERS_TRACKED 16
#define RING_RETIRED_MAX 16
/* A ring's arena (arena.h): reserved, not committed (MAP_NORESERVE); only
 * the blocks carved are touched.  Room for 1024 groups of 65536 buffers
 * each (1 MiB of slots per such group, in its 2 MiB class). */
#define RING_ARENA_LEN ((size_t)2 << 30)
#define RING_ARENA_MIN ((size_t)2 << 20)	/* tried down to, where RLIMIT_AS is low */

/*
 * The part of a ring's bookkeeping that is one for every process that uses
 * the ring, as the kernel's ring is: its own mapping, MAP_SHARED, so that a
 * fork shares it exactly as it shares the kernel's ring and the shadow (a
 * parent and a child may both submit to, and reap from, an inherited ring:
 * liburing's across-fork).  A resize does not replace it.  The legacy
 * buffer groups (pool) are in the ring's arena, MAP_SHARED too.  The ring
 * table and everything that points into a process's heap (the request
 * table, the lists of requests) stay each process's own.  The locks here are
 * shared ones (spin.h): a waiter waits for a holder in another process.
 */
struct ring_shared {
	unsigned sq_head;	/* the shadow SQ head as bufsel keeps it: the kernel keeps
				 * its own and never reads the program-visible one back
				 * (submit.c; under sq_lock) */
	struct spin sq_lock, cq_lock;

	/*
	 * The kernel sleeps in io_uring_enter until the real CQ tail reaches
	 * the real head it read at the start plus min_complete.  A thread that
	 * moves CQEs into the shadow advances that head; had it done so after
	 * a waiter looked at the shadow and before the kernel read the head,
	 * the waiter would sleep on for CQEs that are already in the shadow.
	 * So while any thread (of any process) waits, CQEs are taken without
	 * publishing the head, and a waiter asks the kernel for the CQEs taken
	 * but not yet released on top of what it lacks (complete_wait_begin).
	 * Both under cq_lock.
	 */
	unsigned rcq_taken;	/* real CQEs bufsel has taken */
	/*
	 * A real CQE moved into the shadow keeps its real slot until the
	 * program consumes it there, so the kernel's CQ is as full as the
	 * program's would be natively and overflows (ending a multishot
	 * request) at the same point.  cq_from_real[i] (ring.cq_from_real, in
	 * the scratch mapping) says whether shadow slot i came from the real
	 * CQ; rcq_held counts those the program has not consumed by shadow head
	 * sh_released; the real head is published as rcq_taken - rcq_held.
	 * All under cq_lock.
	 */
	unsigned rcq_held, sh_released;
	unsigned cq_waiters;	/* threads between complete_wait_begin and _end */
	/* Their thread ids, as far as there is room (0: a free entry), so that
	 * a waiter whose process was killed in its wait stops counting
	 * (complete_prune_waiters); only once a fork shared the ring
	 * (forked), a single process never needs it. */
	int waiter_tid[RING_WAITERS_TRACKED];
	int forked;
	/* The processes that used the ring, by their number in request tags
	 * (req.h): the pid of each, so that a CQE left for one that died is
	 * taken by the others after all.  nprocs: numbers handed out. */
	atomic_uint nprocs;
	int proc_pid[REQ_PROC_ANY];
	/* CQEs bufsel made, waiting for room (cq_lock).  Its reserve is in
	 * the scratch mapping, shared too; a queue that outgrew it lives in
	 * the heap of the process that grew it (ring.synth_owner), which
	 * alone can read it, until it is empty again. */
	struct cqe_queue synth;
	unsigned cqe_lost;	/* CQEs bufsel made but found no memory for: in the
				 * shadow's overflow counter, as the kernel counts its own */
	int drain_disabled;	/* the program sent IOSQE_CQE_SKIP_SUCCESS: drains now fail */
	int kernel_skip;	/* and the kernel has seen such an SQE too */
	/* The kernel's ctx->drain_active and drain_next as bufsel follows them
	 * (submit.c, drain_forces; sq_lock). */
	int drain_active, drain_next;
	/* Requests the kernel took that have not posted a last CQE (without
	 * IORING_CQE_F_MORE) in the real CQ: added as SQEs are published and
	 * taken off for those the kernel does not take (sq_lock), taken off as
	 * CQEs are moved (cq_lock), never below 0.  An SQE with
	 * IOSQE_CQE_SKIP_SUCCESS is not counted: it may end without a CQE. */
	atomic_uint kinflight;
	unsigned flags_own;	/* the SQ flag bits bufsel owns on a flags_shared ring (cq_lock) */

	/*
	 * The program's TIMEOUT requests in flight, by user_data
	 * (preload/shadow/timeouts.c): the kernel ends a wait when one of them
	 * completes (its ctx->cq_timeouts), and bufsel, which waits in rounds,
	 * must see it too.  The table under tmo_lock; cq_timeouts counts the
	 * completions bufsel moved.  Past TMO_TRACKED, later ones go untracked.
	 */
	struct spin tmo_lock;
	atomic_uint tmo_n;
	atomic_uint cq_timeouts;
	uint64_t tmo_ud[TMO_TRACKED];

	/* A mover is issuing what completions released (mover.c): an enter
	 * waits for it (sq_lock) before it reaps, in either process. */
	atomic_int followup_busy;

	/* The ring's legacy buffer groups: made on first use (ring_pool) in
	 * the ring's arena (arena.h, ring.arena), so one for every process
	 * that uses the ring, as the kernel's are; pool_lock guards it
	 * (drain and completion of any of those processes use it). */
	struct pool *pool;
	struct spin pool_lock;
	/* The iovec array the kernel's message cache hands the next bundle
	 * (io_netmsg_recycle keeps a request's array with its header): as
	 * many entries as the last bundle mapping that grew one took, 0 for
	 * none.  The cache is a stack of headers shared by every network
	 * request; bufsel follows the one its bundles pass on (pool_lock). */
	uint16_t bundle_vec;
};

/* Grouped by meaning: in order of size the 1,024 slots would save 8 bytes each. */
struct ring { // NOLINT(clang-analyzer-optin.performance.Padding)
	atomic_int prog_fd;	/* the fd number the program got from setup; -1 once a
				 * new ring took that number and only dups are left */
	int closed_fd;		/* that number, once it is lost so (lose_number) */
	unsigned serial;	/* the ring's number in this process, for statistics */
	unsigned fork_gen;	/* forks before its setup: a child reports only its own */
	int mem_fd;		/* under valgrind only: the shadow's memfd (high fd), which
				 * the program's mappings come from (valgrind refuses the
				 * mremap that copies a mapping); -1 elsewhere */
	int priv_fd;		/* bufsel's own reference to the same file, high fd;
				 * -1 on an unpinned ring (see below) */
	/*
	 * An unpinned ring: the kernel wrote its rings into bufsel's memory
	 * (IORING_SETUP_NO_MMAP), so no mapping of bufsel's refers to the file,
	 * and bufsel keeps no fd of it either: the program's last close releases
	 * the kernel ring as natively.  The file is known by its inode (every
	 * ring has its own); real calls go to real_fd, the program's fd a lookup
	 * last found to be this file.  While the program has it registered
	 * (IORING_REGISTER_RING_FDS) bufsel pins it in priv_fd, as the
	 * registration pins it in the kernel.
	 */
	int unpinned;
	/* priv_fd was taken as the program closed its last fd while it still
	 * mapped the shadow: the mappings hold the ring, as natively they hold
	 * the kernel's (ring_closing); it goes once they are gone. */
	int map_pin;
	/* DEFER_TASKRUN: the program's enter now running submits and passes
	 * GETEVENTS, so the kernel runs the ring's task work twice in it, after
	 * its SQEs and as its wait begins: work bufsel issues on a completion
	 * it reaps there (a held chain's next link, a drained SQE released),
	 * natively run by the second pass, asks for a pass too.  An enter that
	 * only waits runs one pass, which bufsel's own wait makes.  Only the
	 * ring's one submitter task enters it. */
	int enter_tw;
	/* The shadow CQ tail when an enter of the program's last returned:
	 * what came after, came without its help (enter_closed_fd). */
	atomic_uint enter_cq_tail;
	/* CLOCK_MONOTONIC ns when this process last moved CQEs into the
	 * shadow: how long the program has had them (enter_closed_fd). */
	_Atomic uint64_t posted_ns;
	atomic_int real_fd;
	unsigned long ino, dev;
	unsigned setup_flags;
	unsigned features;
	int real_own_mem;	/* the real rings are bufsel's memory (the kernel's
				 * ring has IORING_SETUP_NO_MMAP) */
	/* Setup flags the shadow gives where the kernel beneath lacks them
	 * (compat_setup_shadowed): the kernel's ring has none of them. */
	unsigned shadowed_flags;
	int commits_empty_sq;	/* an enter with to_submit writes the SQ head back
				 * even with nothing to submit (KERNEL_EMPTY_SQ_COMMIT) */
	int prog_mem;		/* the shadow is the program's own memory (a NO_MMAP
				 * the shadow gives): never bufsel's to unmap */
	int issuer_tid;		/* a SINGLE_ISSUER the shadow gives: the submitter
				 * task (0 until a disabled ring is enabled) */

	struct shadow sh;	/* bufsel's mapping of the shadow */
	/* Personalities registered on the ring (prep.c checks an emulated
	 * SQE's as io_init_req does); past the table's size, all are taken. */
	uint16_t personality[32];
	uint8_t npersonality, personality_overflow;
	/* Slots in the ring's registered file table (rewrite_note_files). */
	unsigned files_nr;
	struct ring_shared *x;	/* what every process using the ring shares (above) */

	/* The real ring, as mapped by bufsel (or bufsel's memory the kernel
	 * uses for it, on an unpinned ring). */
	void *real_sq_map, *real_cq_map, *real_sqes_map;
	size_t real_sq_len, real_cq_len, real_sqes_len;
	_Atomic unsigned *rsq_head, *rsq_tail, *rsq_flags, *rsq_array;
	unsigned rsq_mask, rsq_entries;
	_Atomic unsigned *rcq_head, *rcq_tail, *rcq_overflow, *rcq_flags;
	unsigned rcq_mask, rcq_entries;
	struct io_uring_sqe *rsqes;
	struct io_uring_cqe *rcqes;

	/* Whether shadow slot i came from the real CQ (struct ring_shared):
	 * in the scratch mapping, under cq_lock. */
	uint8_t *cq_from_real;

	/* Buffer selection: the requests bufsel rewrote (the legacy groups
	 * are x->pool, in the arena); the request table has its own lock. */
	const struct ring_hooks *hooks;
	struct arena *arena;		/* MAP_SHARED, arena_len bytes, mapped with x */
	size_t arena_len;
	struct req_table reqs;
	struct req *ready;		/* chains completions made ready to issue (cq_lock) */
	struct req *parked;		/* receives whose data came while their group was empty
					 * but bufsel's own receives held its buffers (cq_lock) */
	struct io_uring_cqe *synth_reserve;	/* x->synth's reserve, in the scratch mapping */
	int synth_owner;		/* x->synth is in this process's heap (cq_lock) */
	struct rewrite_undo *undo;	/* one per SQ entry: the batch being drained */
	unsigned *prog_end;		/* per real slot: program SQEs consumed through it */
	void *scratch;			/* the mapping undo and prog_end live in (MAP_SHARED:
					 * a fork shares it, with x) */
	size_t scratch_len;
	int to_wq;			/* the SQE being placed goes to io-wq (place_one) */
	uint64_t skip_chain;		/* the tag of the chain being placed's last SKIP
					 * request (rewrite_skip), 0 if none */
	int forced_async;		/* and the kernel marks it REQ_F_FORCE_ASYNC */
	int drain_waits;		/* and waits in the kernel's defer list for what precedes it */
	struct req *batch_recvs;	/* receives selected for in the batch being placed (sq_lock) */
	/*
	 * A TIMEOUT with a count (sqe->off) completes once the CQ has had that
	 * many more CQEs than when it was issued, those of fired timeouts not
	 * counted (the kernel's cached_cq_tail - cq_timeouts).  The kernel's CQ
	 * under bufsel also gets CQEs the program never sees (bufsel's polls
	 * and probes), so bufsel counts such TIMEOUTs itself, against the
	 * program's CQ (ring_cq_seq): cq_seq0 is where it stood when the batch
	 * being submitted began (sq_lock; the CQEs of requests that complete at
	 * submission count, as the kernel posts them after the batch), and
	 * counting lists the TIMEOUTs still counting (cq_lock).  The TIMEOUTs
	 * are requests, each process's own, as the request table is.
	 */
	unsigned cq_seq0;
	struct req *counting;

	/*
	 * SQPOLL: a bufsel thread of its own (mover.c) is the program's SQ
	 * thread: it polls the shadow SQ as the kernel's polls its own, moves
	 * what the program adds to the real SQ and completions to the shadow,
	 * and after sq_idle_ms without work sets IORING_SQ_NEED_WAKEUP in the
	 * shadow and sleeps until an enter with IORING_ENTER_SQ_WAKEUP (or a
	 * completion to move) wakes it.  The shadow's NEED_WAKEUP bit is that
	 * thread's alone.
	 */
	int has_mover;
	atomic_int poller_started;	/* its thread was started (mover_sq_launch) */
	unsigned sq_idle_ms;	/* the program's sq_thread_idle; 0 means 1 s, as the kernel's HZ */
	/*
	 * DEFER_TASKRUN with TASKRUN_FLAG: the kernel sets IORING_SQ_TASKRUN
	 * when it queues task work, from any context and without anything
	 * that would wake bufsel.  For these rings the program's SQ flags word
	 * is the kernel's own (the real ring's first page is mapped into the
	 * program's view, shadow.h): bufsel adds only the bits it owns
	 * (flags_own: TASKRUN while released work waits for an enter,
	 * CQ_OVERFLOW while it holds CQEs) and takes back only those.
	 */
	int flags_shared;	/* bufsel's bits: x->flags_own */
	/*
	 * Completions reach the shadow CQ without waiting for the program to
	 * enter, as they reach the kernel's CQ natively: the process's mover
	 * watches the ring, or the ring (DEFER_TASKRUN) fills its CQ only
	 * inside the program's own enters anyway.  Without it the shadow shows
	 * IORING_SQ_TASKRUN always, to send the program in.
	 */
	int cq_moved;
	/* A fork child's: the ring came from its parent, and this process's
	 * mover does not watch it (yet).  It does from the child's first
	 * enter on the ring (mover_adopt): until then the parent's mover,
	 * which shares x and the shadow, moves its completions. */
	atomic_int inherited;
	/* This process's threads waiting in the kernel's enter for any one new
	 * CQE (enter.c): each moves what came as it returns, so the mover,
	 * woken by the same CQE, leaves the ring to them instead of taking
	 * the locks they are about to take. */
	atomic_int enter_waits_any;
	/* The process mover's epoll, when it watches this ring's file (this
	 * process's, not a parent's), else -1.  Epoll drops a file as the
	 * file's last reference goes: a ring missing from that epoll's fdinfo
	 * has no fd left anywhere (ring_alive), which spares a walk of the fd
	 * table, as long as bufsel's own highest fd. */
	int watch_ep;
	/*
	 * A CQ commit wakes the mover once (EPOLLONESHOT), and the mover arms
	 * the watch again only when the program has not entered the ring since
	 * it last looked: an enter moves the CQEs itself on its way out, and a
	 * wake-up for each commit made inside a busy program's enters cost a
	 * page-cache READ a third of its rate.  enters is the program's count
	 * (ring_enter, any thread); the rest is the mover's own: the watch is
	 * armed, the count it saw when it left the watch off, and when it
	 * looks again (MOVER_RECHECK_MS).
	 */
	atomic_uint enters;
	int mover_armed;
	unsigned mover_enters_seen;
	uint64_t mover_recheck_ns;
	int mover_wake_fd;	/* SQPOLL: eventfd that wakes the poller (IORING_ENTER_SQ_WAKEUP,
				 * or the ring is gone) */
	int mover_ep;		/* SQPOLL: the epoll the sleeping poller waits in: that
				 * eventfd, and the ring fd edge-triggered (a CQ that holds
				 * CQEs the program has not consumed stays readable) */

	/* Mappings of bufsel's that a resize replaced (resize.c): a thread that
	 * reads the ring without a lock (another ring's enter moving its CQEs,
	 * an mmap) may still hold a pointer into one, so they are unmapped with
	 * the ring, or once RING_RETIRED_MAX newer ones followed them. */
	struct {
		void *addr;
		size_t len;
	} retired[RING_RETIRED_MAX];
	unsigned nretired;

	/* IORING_REGISTER_RING_FDS entries that name the ring: the kernel keeps
	 * a registered ring for them, fd or no fd, and so does bufsel. */
	atomic_int registered;

	/* Table bookkeeping: the table holds one reference while live is set,
	 * every user of a lookup one more; the last put tears the ring down and
	 * only then frees the slot (claimed back to 0). */
	atomic_int claimed;
	atomic_int refs;
	atomic_int live;
	/* Movers in a pass over the ring (mover.c): the release waits for
	 * them, since the program may unmap its buffer rings next. */
	atomic_int mover_pass;
};

/*
 * Rings live in a fixed array that is never freed, so a lookup racing with a
 * teardown on another thread touches valid memory and sees refs/live change;
 * lookups take no lock, which the SIGSYS handler requires.
 */
#define RING_SLOTS 1024

struct ring *ring_alloc(void);			/* a claimed slot, zeroed, refs 1, not live; with x */
void ring_publish(struct ring *r);		/* make it findable */
void ring_abandon(struct ring *r);		/* undo ring_alloc after a failed setup */
struct ring *ring_get(int fd);			/* by fd (or a dup of it); takes a ref */
/* The mapped ring whose fd the program closed while it was fd; takes a ref. */
struct ring *ring_get_closed(int fd);
struct ring *ring_get_registered(unsigned index);
void ring_put(struct ring *r);
void ring_set_registered(unsigned index, struct ring *r);
int ring_is_fd(int fd);				/* cheap: is fd some ring's prog_fd? */
int ring_owns_fd(int fd);			/* one of bufsel's private fds? */
int ring_next_owned_fd(unsigned lo, unsigned hi);	/* lowest private fd in [lo, hi], or -1 */
/* The fd bufsel's own io_uring_enter/register calls on r go to. */
static inline int ring_fd(struct ring *r)
{
	return r->priv_fd >= 0 ? r->priv_fd : atomic_load_explicit(&r->real_fd, memory_order_relaxed);
}
/* Does ring_fd(r) name r's file still (an unpinned ring's is the program's
 * fd, which it may have closed unseen)?  1 or 0. */
int ring_fd_names(const struct ring *r);
/* Fills ino/dev from fd and tells whether the ring can go unpinned (its
 * file has an inode of its own): 1, or 0. */
int ring_identify(struct ring *r, int fd);
/* A real call on r failed with -EBADF or -EOPNOTSUPP, or a poll saw POLLNVAL:
 * the program's fd may have been closed unseen.  Finds another fd of the
 * file or releases the ring; returns 1 if it is gone. */
int ring_file_gone(struct ring *r);
/* The program is about to close fds lo..hi: a ring it still maps keeps its
 * file (map_pin). */
void ring_closing(unsigned lo, unsigned hi);
void ring_closed(int fd);			/* the program closed fd: release if unused */
void ring_sweep(void);				/* release rings no fd refers to any more */
/* Does the trap miss a close the program makes with its own `syscall`
 * (under the seccomp filter)?  1 or 0. */
int ring_closes_unseen(void);
/* Under the seccomp filter, whose trap sees no inline close: a sweep if a
 * pinned ring is live (bufsel's fd and mappings would keep it past the
 * program's last close).  1 if one was, else 0. */
int ring_look_for_closes(void);
void ring_fd_reused(int fd);			/* the kernel gave fd to a new ring */
void ring_after_fork(void);
int ring_scratch_alloc(struct ring *r, unsigned sq_entries, unsigned cq_entries);
/* A mapping of bufsel's that r no longer uses, unmapped later (retired). */
void ring_retire(struct ring *r, void *addr, size_t len);
/* How many CQEs the program's CQ has had, less fired timeouts' (cq_seq0).
 * Under cq_lock. */
static inline unsigned ring_cq_seq(const struct ring *r)
{
	return atomic_load_explicit(r->sh.cq_tail, memory_order_relaxed) -
	       atomic_load_explicit(&r->x->cq_timeouts, memory_order_relaxed);
}
/* Calls fn for every live ring, holding a reference. */
/* Slot numbers, for references that must not hold the ring (the mover's
 * epoll): ring_get_slot takes a reference if the slot still holds the
 * ring with that serial. */
unsigned ring_slot(const struct ring *r);
struct ring *ring_get_slot(unsigned slot, unsigned serial);
/*
 * A mover's put of the reference it took for a pass, then the pass's end
 * (mover_pass): a close waiting for the pass (mover_stop) then finds its
 * own put the last, and tears the ring down, bufsel's fds of it included,
 * before the program's close returns, as a closed ring fd natively leaves
 * nothing behind.
 */
void ring_put_ending_pass(struct ring *r);
void ring_for_each_live(void (*fn)(int fd, struct ring *r, int *first), int fd, int *first);
/* The most buffers any ring had bound to requests at once. */
unsigned long ring_held_peak(void);


#endif
