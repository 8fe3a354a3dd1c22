/*
 * PROVIDE_BUFFERS and REMOVE_BUFFERS on bufsel's groups (preload/select/provide.c).
 */
#ifndef BUFSEL_PRELOAD_PROVIDE_H
#define BUFSEL_PRELOAD_PROVIDE_H

#include <linux/io_uring.h>

#include "preload/select/opdef.h"

struct ring;
struct rewrite_undo;

/* What the kernel checks of them at submission, after io_init_req's generic
 * checks. */
int rewrite_emulated_prep(const struct ring *r, const struct io_uring_sqe *sqe,
			  enum opdef_emulated kind);
/* Does io-wq issue sqe after the batch, as a worker gets to it? */
int rewrite_worker_after_batch(const struct ring *r, const struct io_uring_sqe *sqe);
/* Runs one against the pool now, and stands in for it. */
void rewrite_emulated_issue(struct ring *r, struct io_uring_sqe *sqe, const struct opdef *def,
			    struct rewrite_undo *u);
/* One at drain time: checked, then run now or at the end of the batch. */
void rewrite_emulate_buffers(struct ring *r, struct io_uring_sqe *sqe, const struct opdef *def,
			     struct rewrite_undo *u);

#endif
