/*
 * A mover's passes over a ring and the release's wait for them
 * (mover_pass.c).
 */
#ifndef BUFSEL_PRELOAD_MOVER_PASS_H
#define BUFSEL_PRELOAD_MOVER_PASS_H

struct ring;

/* Begins a pass over r: 1, or 0 when r is no longer live (no pass). */
int mover_pass_begin(struct ring *r);
void mover_pass_end(struct ring *r);
/* This thread's pass is over, its count dropped by whoever puts the
 * reference (ring_put_ending_pass). */
void mover_pass_leave(void);
/* The ring is no longer live: stops its movers, and returns once none is in
 * a pass over it (a mover stopping its own ring does not wait). */
void mover_stop(struct ring *r);

#endif
