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

struct ring;
struct req;
struct ring_hooks;

struct rewrite_undo {
	uint8_t kind;		/* what to take back if the kernel never saw the SQE */
	uint8_t created;	/* PROVIDE made the group */
	uint16_t bgid;
	uint32_t added;		/* PROVIDE: buffers added */
	struct req *req;
};

/* Does this SQE need bufsel at all?  The fast test for the drain loop. */
static inline int rewrite_wanted(const struct io_uring_sqe *sqe)
{
	return (sqe->flags & IOSQE_BUFFER_SELECT) || sqe->opcode == IORING_OP_PROVIDE_BUFFERS ||
	       sqe->opcode == IORING_OP_REMOVE_BUFFERS || sqe->opcode == IORING_OP_ASYNC_CANCEL;
}

/* Rewrites *sqe in place; records in *u how to take it back. */
void rewrite_sqe(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u);
/* The kernel did not consume the SQE: undo its effects (in reverse order). */
void rewrite_undo(struct ring *r, struct rewrite_undo *u);

extern const struct ring_hooks rewrite_hooks;

/* A real CQE that names one of bufsel's requests: turns it into what the
 * program must see.  Returns 1 to post *cqe, 0 to hide it. */
int rewrite_complete(struct ring *r, struct req *q, struct io_uring_cqe *cqe);

#endif
