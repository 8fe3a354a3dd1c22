/*
 * READ, READV and SEND, which select at their first issue (preload/select/read.c).
 */
#ifndef BUFSEL_PRELOAD_READ_H
#define BUFSEL_PRELOAD_READ_H

#include <linux/io_uring.h>
#include <stdint.h>

struct opdef;
struct pool_buf;
struct ring;
struct rewrite_undo;

/* io_read's first attempt on a file that polls, with the head entry: the
 * error, 1 if the read of nothing ends at once, 0 if it goes on. */
int rewrite_ring_read_attempt(const struct io_uring_sqe *sqe, uint32_t want, const struct pool_buf *head, int idle);
/* A SELECT_AT_ISSUE opcode at drain time; the request that holds the rest of
 * the chain, if any. */
struct req *rewrite_select_issue(struct ring *r, struct io_uring_sqe *sqe, const struct opdef *def,
				 struct rewrite_undo *u);

#endif
