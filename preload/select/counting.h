/*
 * TIMEOUTs with a completion count, which bufsel counts itself
 * (preload/select/counting.c).
 */
#ifndef BUFSEL_PRELOAD_COUNTING_H
#define BUFSEL_PRELOAD_COUNTING_H

#include <linux/io_uring.h>

struct req;
struct ring;
struct rewrite_undo;

/* A TIMEOUT whose count bufsel keeps, as far as the SQE alone tells. */
int rewrite_counts_completions(const struct io_uring_sqe *sqe);
/* Its rewrite: the kernel gets the timer alone, under a tag. */
void rewrite_count_timeout(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u);
/* A TIMEOUT_REMOVE or TIMEOUT_UPDATE pointed at the TIMEOUT bufsel counts. */
void rewrite_retarget_timeout(struct ring *r, struct io_uring_sqe *sqe, struct rewrite_undo *u);
/* The CQE of such a removal (REQ_TIMEOUT_REMOVE): 1 to post it. */
int rewrite_complete_timeout_remove(struct ring *r, struct req *rm, struct io_uring_cqe *cqe);
/* The program's CQ reached seq; and one leaves the ring's list.  Both under
 * cq_lock. */
void rewrite_counted(struct ring *r, unsigned seq);
void counting_unlink(struct ring *r, struct req *q);
/* The kernel's timer of a counting TIMEOUT: 1 to post its CQE. */
int rewrite_complete_timeout(struct ring *r, struct req *q, struct io_uring_cqe *cqe);

#endif
