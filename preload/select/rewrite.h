/*
 * Rewriting one program SQE on its way to the real SQ: emulated opcodes
 * become stand-ins that hold their place (and their link flags) in the
 * kernel's order, buffer-select reads get a buffer from the ring's pool.
 * Everything is decided at drain time, in SQE order, as the kernel decides
 * at its first issue attempt; what the kernel then did not consume is undone.
 */
#ifndef BUFSEL_PRELOAD_REWRITE_H
#define BUFSEL_PRELOAD_REWRITE_H

#include <linux/io_uring.h>
#include <stdint.h>

#include "pool/pool.h"

struct ring;
struct req;
struct ring_hooks;

enum undo_kind { UNDO_NONE, UNDO_REQ, UNDO_SELECT, UNDO_PROVIDE, UNDO_REMOVE };

struct rewrite_undo {
	uint8_t kind;		/* what to take back if the kernel never saw the SQE */
	uint8_t created;	/* PROVIDE made the group */
	uint16_t bgid;
	uint32_t added;		/* PROVIDE: buffers added */
	struct req *req;
	/* The ring's state as it was before the SQE (submit.c): the kernel
	 * disables drains and sees a skip only for SQEs it takes. */
	uint8_t drain_was, skip_was, active_was, next_was;
	/* UNDO_SELECT: buf is delivered once the kernel takes the SQE
	 * (rewrite_commit), which may never post a CQE for it. */
	uint8_t deliver;
	/* Its selection waits for the end of the batch (rewrite_deferred), in
	 * a worker the kernel forced it to (REQ_F_FORCE_ASYNC) or not. */
	uint8_t deferred, forced;
	struct pool_buf buf;
	struct pool_kept kept;	/* UNDO_REMOVE: what it took (req: its stand-in) */
	struct req *skip;	/* a SKIP request that tags it (rewrite_skip), besides */
};

/* Does this SQE need bufsel at all?  The fast test for the drain loop. */
static inline int rewrite_wanted(const struct io_uring_sqe *sqe)
{
	return (sqe->flags & IOSQE_BUFFER_SELECT) || sqe->opcode == IORING_OP_PROVIDE_BUFFERS ||
	       sqe->opcode == IORING_OP_REMOVE_BUFFERS || sqe->opcode == IORING_OP_ASYNC_CANCEL;
}

/* Rewrites *sqe in place; records in *u how to take it back; returns the
 * request that takes the rest of the chain, if any. */
void *rewrite_sqe(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u, int in_chain);
/* The kernel did not consume the SQE: undo its effects (in reverse order). */
void rewrite_undo(struct ring *r, struct rewrite_undo *u);
/* The kernel consumed it: what waited for that happens now. */
void rewrite_commit(struct ring *r, struct rewrite_undo *u);

extern const struct ring_hooks rewrite_hooks;

/* register.c: the program's IORING_(UN)REGISTER_PERSONALITY returned ret. */
void rewrite_note_personality(struct ring *r, unsigned opcode, unsigned id, long ret);
/* A file table registered (or unregistered) on the ring: its size, for the
 * fixed-file lookup the kernel makes before it selects a buffer. */
void rewrite_note_files(struct ring *r, unsigned opcode, const void *arg, unsigned nr_args);

#endif
