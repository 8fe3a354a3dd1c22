/*
 * Binding a buffer to a request (preload/select/bind.c): the group it comes from,
 * a selection made at once and the SQE rewritten onto it, and what the
 * kernel commits at selection.
 */
#ifndef BUFSEL_PRELOAD_BIND_H
#define BUFSEL_PRELOAD_BIND_H

#include <linux/io_uring.h>
#include <stdint.h>

#include "pool/pool.h"

struct msghdr;
struct opdef;
struct req;
struct ring;
struct rewrite_undo;

/* The length a selection gives a request that asks for want bytes (0: the
 * whole entry). */
uint32_t rewrite_sel_len(uint32_t want, uint32_t len);
/* A selected entry's length as the SQE handed on may carry it. */
uint32_t rewrite_rw_count(uint32_t len);
/* Does the rule for legacy groups (kernel_ops.h) apply to sqe? */
int rewrite_legacy_rule(struct ring *r, const struct io_uring_sqe *sqe, unsigned rule);
/* The request flags those rules give a single receive. */
uint32_t rewrite_legacy_recv_flags(struct ring *r, const struct io_uring_sqe *sqe);
/* What the SQE's group id holds now. */
enum pool_kind rewrite_group_kind(struct ring *r, const struct io_uring_sqe *sqe);
/* Is it an incremental ring? */
int rewrite_incremental_group(struct ring *r, const struct io_uring_sqe *sqe);
/* Points the SQE at q's buffer (q->buf is selected, want is what was asked). */
int bind_buffer(struct ring *r, struct req *q, struct io_uring_sqe *sqe,
		const struct opdef *def, uint32_t want, const struct msghdr *msg);
/* An incremental ring's entries committed at selection. */
void rewrite_commit_at_selection(struct ring *r, struct req *q, const struct pool_buf *bufs, uint16_t n,
				 uint32_t mapped);
/* A ring entry the kernel's import would refuse with -EFAULT, taken for a
 * request that asks for want bytes (0: the entry's length). */
int rewrite_entry_unreachable(const struct pool_buf *b, uint32_t want);
/* Selects a buffer for the SQE and rewrites it onto it, or stands in for
 * the kernel's failure; -EBUSY if an incremental ring's entry is out. */
int rewrite_select_now(struct ring *r, struct io_uring_sqe *sqe, const struct opdef *def,
		       uint32_t want, const struct msghdr *msg, struct rewrite_undo *u, int lazy);

#endif
