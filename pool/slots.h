/*
 * The memory of a legacy group's deque (slots.c): growing it before a
 * provide, shrinking it after a removal or a delivery.  Internal to pool/.
 */
#ifndef BUFSEL_POOL_SLOTS_H
#define BUFSEL_POOL_SLOTS_H

#include <stdint.h>

#include "pool/alloc.h"
#include "pool/group.h"

/* Small enough that 65536 one-buffer groups stay cheap; below it, doubling
 * would reallocate at each of a group's first few buffers. */
#define GROUP_MIN_CAP 4u

/* Room for need slots (count + in_use + what comes): 0, or -ENOMEM with
 * nothing changed. */
int slots_reserve(struct group *g, uint64_t need, const struct pool_allocator *a);
/* Shrinks the array once three quarters of it are unused. */
void slots_trim(struct group *g, const struct pool_allocator *a);

#endif
