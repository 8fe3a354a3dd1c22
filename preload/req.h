/*
 * Requests bufsel tracks between an SQE it rewrote and the CQE that answers
 * it.  The real SQE carries a tag instead of the program's user_data; the
 * tag names a slot and its generation, so a stale or foreign value is never
 * mistaken for a live request.  Slots live in fixed chunks that never move,
 * because the kernel may read a request's iovec after submission.
 *
 * A program's own user_data could equal a tag only by spelling out the magic
 * top 16 bits; bufsel accepts that risk (documented in the README).
 */
#ifndef BUFSEL_PRELOAD_REQ_H
#define BUFSEL_PRELOAD_REQ_H

#include <stdint.h>
#include <sys/uio.h>

#include "pool/pool.h"
#include "preload/spin.h"

#define REQ_TAG_MAGIC 0xb5e1000000000000ULL
#define REQ_TAG_MASK 0xffff000000000000ULL
#define REQ_CHUNK 256
#define REQ_CHUNKS 1024		/* 262,144 requests in flight per ring at most */

enum req_kind {
	REQ_STANDIN,		/* answers an emulated SQE: report res */
	REQ_READ_SEL,		/* READ/READV rewritten onto a selected buffer */
};

enum req_flags {
	REQ_SKIP_SUCCESS = 1 << 0,	/* the program asked for no CQE on success */
	REQ_FIXED_FILE = 1 << 1,
	REQ_LINKED = 1 << 2,		/* a short result fails the link */
	REQ_DELIVERED = 1 << 3,		/* the buffer was accounted as delivered at submission */
};

struct req {
	uint64_t user_data;	/* the program's */
	uint8_t live;
	uint32_t gen;
	uint32_t idx;		/* fixed for the slot's life */
	uint32_t next_free;
	uint8_t kind;
	uint8_t flags;
	int32_t res;		/* REQ_STANDIN: what the CQE reports */
	uint32_t want;		/* bytes asked for: a shorter result fails a link */
	struct pool_buf buf;
	struct iovec iov;	/* READV: the one iovec, now on the selected buffer */
};

struct req_table {
	struct req *chunk[REQ_CHUNKS];
	uint32_t nchunks;
	uint32_t free_head;	/* index + 1; 0 means empty */
	uint32_t live;
	struct spin lock;
};

struct req *req_alloc(struct req_table *t);	/* NULL: out of memory or slots */
void req_free(struct req_table *t, struct req *q);
uint64_t req_tag(const struct req_table *t, const struct req *q);
/* The live request a CQE's user_data names, or NULL for anything else. */
struct req *req_lookup(struct req_table *t, uint64_t user_data);
/* A live request carrying the program's user_data ud (for cancels), or NULL. */
struct req *req_find_user_data(struct req_table *t, uint64_t ud);
void req_table_destroy(struct req_table *t);

#endif
