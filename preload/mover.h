/*
 * The completion movers.  One thread per process watches every ring without
 * SQPOLL (mover_watch, see mover.c), and one per SQPOLL ring feeds it.
 * The SQPOLL mover: a bufsel thread per SQPOLL ring.  An SQPOLL program
 * may never call io_uring_enter to reap (it reads CQ memory in a loop, as
 * the kernel allows), so for those rings completions cannot wait for the
 * program to come to bufsel: the mover sleeps on the real ring and moves
 * CQEs into the shadow as they arrive.  Waits on every ring are the
 * kernel's own (enter.c): a mover takes CQEs without releasing them while a
 * thread waits, so the kernel counts them as its wait requires.
 */
#ifndef BUFSEL_PRELOAD_MOVER_H
#define BUFSEL_PRELOAD_MOVER_H

#include <stddef.h>

struct ring;

/* The process-wide mover for rings without SQPOLL: 0 once r is watched. */
int mover_watch(struct ring *r);
/* pthread_atfork's prepare: a fork waits until no bufsel thread is starting. */
void mover_before_fork(void);
void mover_after_fork(void);
/* Moves what other rings' CQs received while the program was in the kernel. */
void mover_reap_others(struct ring *r);

int mover_start(struct ring *r);
void mover_stop(struct ring *r);

#endif
