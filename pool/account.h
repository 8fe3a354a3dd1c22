/*
 * What a selection and a delivery count in a group (account.c), for group.c's
 * legacy deque and ring.c's rings alike.  Internal to pool/.
 */
#ifndef BUFSEL_POOL_ACCOUNT_H
#define BUFSEL_POOL_ACCOUNT_H

#include <stdint.h>

#include "pool/alloc.h"
#include "pool/group.h"

/* Whether a selection may go on, the kernel's reason (empty) first and
 * then the policy's: 0, or -ENOBUFS, counted under its reason if count. */
int group_admit(struct group *g, int empty, int count);
/* A selection that was admitted took this buffer: *out, its len clamped to
 * the policy's max_len, and the group's counters. */
void group_took(struct group *g, uint64_t addr, uint32_t len, uint16_t bid, struct pool_buf *out);
/* The program provided bid again: it no longer holds it. */
void held_clear(struct group *g, uint16_t bid);
/* Frees the bitmap of held buffers and counts none held (group_release). */
void held_free(struct group *g, const struct pool_allocator *a);
/* One of in_use was delivered (the caller checked in_use > 0); used is the
 * bytes the program got, or -1 if unknown. */
void group_consume(struct group *g, uint16_t bid, int64_t used, const struct pool_allocator *a);
/* The counting part of a delivery (used < 0: no byte count), for one whose
 * buffer the program does not hold: an incremental entry left at the head. */
void group_delivered(struct group *g, int64_t used);

#endif
