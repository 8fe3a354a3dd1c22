/*
 * A single RECV or RECVMSG that selects a buffer (preload/select/recv.c): at once
 * if its socket has data, else when its poll fires.
 */
#ifndef BUFSEL_PRELOAD_RECV_H
#define BUFSEL_PRELOAD_RECV_H

#include <linux/io_uring.h>
#include <stdint.h>

struct msghdr;
struct opdef;
struct pool_buf;
struct req;
struct ring;
struct rewrite_undo;

/* A receive handed to the kernel with its buffer, which it may give back
 * after the next SQE of the batch selected (rewrite_barrier). */
void rewrite_batch_recv_add(struct ring *r, struct req *q, int may_return);
/* Can the kernel write the buffer's first byte?  Tried once. */
int recv_may_return(struct req *q);
/* A stand-in for a first attempt's failure: the buffer it took, or named. */
void rewrite_standin_attempt(struct ring *r, struct req *s, int took, const struct pool_buf *taken);
/* A receive's first attempt: 0 if it goes on to the socket, else the error. */
int rewrite_first_attempt(struct ring *r, const struct io_uring_sqe *sqe, const struct opdef *def,
			  uint32_t want, const struct msghdr *tmpl, int multi, struct pool_buf *taken,
			  int *took, uint32_t *keep);
/* A receive with nothing to read: a POLL_ADD holds its place. */
struct req *recv_defer(struct ring *r, struct io_uring_sqe *sqe, uint32_t want,
		       const struct msghdr *msg, struct rewrite_undo *u);
/* A RECVMSG on a stream whose head entry holds more than INT_MAX bytes. */
int rewrite_recvmsg_reads_nothing(struct ring *r, const struct io_uring_sqe *sqe, uint32_t want, uint32_t hdr);
/* A single RECV or RECVMSG at drain time; the request that holds the rest
 * of the chain, if any. */
struct req *rewrite_select_recv(struct ring *r, struct io_uring_sqe *sqe, const struct opdef *def,
				struct rewrite_undo *u);
/* For the completion side (completion.c): selects a buffer for a receive
 * whose socket now has data and rewrites q->orig onto it; 0 or -errno.
 * again: a parked receive tries again, its refusal already counted. */
int rewrite_bind_recv(struct ring *r, struct req *q, int again);

#endif
