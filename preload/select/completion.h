/*
 * The completion side of the emulation (preload/select/completion.c): a real CQE
 * carrying one of bufsel's tags.
 */
#ifndef BUFSEL_PRELOAD_COMPLETION_H
#define BUFSEL_PRELOAD_COMPLETION_H

#include <linux/io_uring.h>

struct ring;

/* A real CQE: 1 to post it (patched), 0 to hide it. */
int rewrite_complete_cqe(struct ring *r, struct io_uring_cqe *cqe);
/* A CQE another process sharing the ring must move: 1 to leave it. */
int rewrite_foreign_cqe(struct ring *r, const struct io_uring_cqe *cqe);

#endif
