/*
 * Bundles, IORING_RECVSEND_BUNDLE (preload/select/bundle.c): a RECV bundle's
 * entries mapped once its data is there, a SEND bundle's buffers sent one
 * step after another.
 */
#ifndef BUFSEL_PRELOAD_BUNDLE_H
#define BUFSEL_PRELOAD_BUNDLE_H

#include <linux/io_uring.h>
#include <stdint.h>

struct req;
struct req_bundle;
struct ring;
struct rewrite_undo;

/* A RECV bundle, single or multishot, on a ring bufsel keeps. */
int rewrite_recv_bundle_on_ring(struct ring *r, const struct io_uring_sqe *sqe);
int rewrite_recv_bundle_multi_on_ring(struct ring *r, const struct io_uring_sqe *sqe);
/* The length a bundle RECV's first attempt kept as the request's. */
uint32_t bundle_keep(struct ring *r, const struct io_uring_sqe *sqe, uint32_t keep);
/* The entries of a bundle RECV whose data is there, into q->bun. */
int rewrite_bind_bundle(struct ring *r, struct req *q, uint32_t max_len, int again, uint32_t mshot_len);
/* A bundle's entries back to the ring, last first. */
void bundle_putback(struct ring *r, struct req_bundle *bn);
/* The SQE onto the bundle's entries (more than one: msg_opcode over them). */
void bundle_sqe(struct io_uring_sqe *sqe, struct req_bundle *bn, uint8_t msg_opcode);
/* A waiting bundle RECV whose data came: its entries, and its SQE onto them. */
int rewrite_rebind_bundle(struct ring *r, struct req *q, int again);
/* A bundle SEND's next step into q->next: a SEND on the group's next buffer
 * (q->emptied says whether that emptied the group); 0, or -ENOBUFS with
 * q->cflags set if a NULL buffer was consumed. */
int rewrite_bundle_send(struct ring *r, struct req *q);
/* A bundle SEND's first step, at drain time; the request that holds the rest
 * of the chain, if any. */
struct req *rewrite_select_send_bundle(struct ring *r, struct io_uring_sqe *sqe,
				       struct rewrite_undo *u);

#endif
