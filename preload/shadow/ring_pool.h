/*
 * A ring's legacy buffer pool, made on first use (ring_pool.c).
 */
#ifndef BUFSEL_PRELOAD_RING_POOL_H
#define BUFSEL_PRELOAD_RING_POOL_H

struct ring;

int ring_pool(struct ring *r);		/* 0, or -ENOMEM */

#endif
