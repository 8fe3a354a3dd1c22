/*
 * Stand-ins (preload/select/standin.c): the SQE the kernel runs, or fails, in the
 * slot of one bufsel answers itself, whose CQE completion.c turns into the
 * answer.
 */
#ifndef BUFSEL_PRELOAD_STANDIN_H
#define BUFSEL_PRELOAD_STANDIN_H

#include <linux/io_uring.h>

#include "preload/select/req.h"

struct opdef;
struct pool_buf;
struct ring;
struct rewrite_undo;

/* How a stand-in SQE behaves in the kernel. */
enum standin_class {
	SUCCEED,	/* a NOP: it runs and succeeds */
	FAIL_AT_PREP,	/* the kernel rejects it before anything runs */
	FAIL_AT_ISSUE,	/* it runs, and fails: a link breaks here */
	SUCCEED_WHEN_READABLE,	/* a POLL_ADD on the SQE's file: it succeeds once
				 * there is data (or an end) to read */
};

/* A user_data no request can have: bufsel's own tag space, generation 0xffff
 * of a slot that never exists. */
#define NO_SUCH_REQUEST (REQ_TAG_MAGIC | 0x0000ffffffffffffULL)

/* pool_putback and pool_consume under pool_lock. */
void rewrite_pool_locked_putback(struct ring *r, const struct pool_buf *b);
void rewrite_pool_locked_consume(struct ring *r, const struct pool_buf *b);
/* Replaces *sqe by an SQE of class c whose CQE bufsel turns into res; the
 * request, or NULL (no slot: the CQE says -EINVAL). */
struct req *standin(struct ring *r, struct io_uring_sqe *sqe, int res, enum standin_class c,
		    struct rewrite_undo *u);
/* The stand-in s reports buffer b, which leaves the group only if it ran. */
void standin_takes(struct ring *r, struct req *s, const struct pool_buf *b);
/* Success with res 0: a NOP under the program's own user_data. */
void standin_ok(struct io_uring_sqe *sqe);
/* An SQE the kernel rejects at submission with res (if not 0): 1 if so. */
int rewrite_reject_at_submission(struct ring *r, struct io_uring_sqe *sqe, int res,
				 struct rewrite_undo *u);
/* A bad plain fd: the SQE goes to the kernel without its buffer select and
 * fails there; 1 if so. */
int rewrite_left_to_kernel_bad_fd(const struct ring *r, struct io_uring_sqe *sqe, const struct opdef *def);

#endif
