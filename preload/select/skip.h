/*
 * IOSQE_CQE_SKIP_SUCCESS where the kernel lacks it (preload/select/skip.c).
 */
#ifndef BUFSEL_PRELOAD_SKIP_H
#define BUFSEL_PRELOAD_SKIP_H

#include <linux/io_uring.h>
#include <stdint.h>

struct req;
struct ring;
struct rewrite_undo;

/* An SQE placed with the flag: the kernel gets it without, under a tag. */
void rewrite_skip(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u, int in_chain);
/* Its CQE: 1 to post it, 0 to hide it. */
int rewrite_complete_skip(struct ring *r, struct req *q, struct io_uring_cqe *cqe);
/* A member with the skip flag failed on its own: the -ECANCELED of the
 * chain members after it (from the tag next on) are hidden. */
void rewrite_skip_hide_rest(struct ring *r, uint64_t next);

#endif
