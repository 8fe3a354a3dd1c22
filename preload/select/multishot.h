/*
 * Multishot receives and READ_MULTISHOT, run as a stream of single steps
 * (preload/select/multishot.c).
 */
#ifndef BUFSEL_PRELOAD_MULTISHOT_H
#define BUFSEL_PRELOAD_MULTISHOT_H

#include <linux/io_uring.h>

struct opdef;
struct req;
struct ring;
struct rewrite_undo;

/* The stream's first step, at drain time; the request that holds the rest
 * of the chain, if any. */
struct req *rewrite_select_recv_multi(struct ring *r, struct io_uring_sqe *sqe,
				      const struct opdef *def, struct rewrite_undo *u);
/* A multishot receive's next step into q->next: a poll, or (0, or -ENOBUFS
 * when the group is empty) a receive on a buffer selected now. */
void rewrite_multi_poll(struct ring *r, struct req *q);
int rewrite_multi_recv(struct ring *r, struct req *q);
/* rewrite_multi_recv after a poll: -ENOTSOCK first if the file is no socket. */
int rewrite_multi_wake(struct ring *r, struct req *q);

#endif
