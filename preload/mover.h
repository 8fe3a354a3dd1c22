/*
 * The completion movers.  One thread per process watches every ring without
 * SQPOLL (mover_watch, see mover.c), and one per SQPOLL ring feeds it.
 * The SQPOLL mover: a bufsel thread per SQPOLL ring.  An SQPOLL program
 * may never call io_uring_enter to reap (it reads CQ memory in a loop, as
 * the kernel allows), so for those rings completions cannot wait for the
 * program to come to bufsel: the mover sleeps on the real ring and moves
 * CQEs into the shadow as they arrive.  Program waits on such a ring then
 * sleep on the shadow CQ instead of the real one, which the mover drains.
 */
#ifndef BUFSEL_PRELOAD_MOVER_H
#define BUFSEL_PRELOAD_MOVER_H

#include <stddef.h>

struct ring;

/* The process-wide mover for rings without SQPOLL: 0 once r is watched. */
int mover_watch(struct ring *r);
void mover_after_fork(void);
/* Moves what other rings' CQs received while the program was in the kernel. */
void mover_reap_others(struct ring *r);

int mover_start(struct ring *r);
void mover_stop(struct ring *r);
/* Waits until the shadow CQ holds min_complete entries, as io_uring_enter's
 * GETEVENTS would: argp/argsz as the program passed them. */
long mover_wait(struct ring *r, unsigned min_complete, unsigned flags, const void *argp,
		size_t argsz);

#endif
