/*
 * The completion movers.  One thread per process watches every ring without
 * SQPOLL (mover_watch, see mover.c), and one per SQPOLL ring is that ring's
 * SQ thread as the program sees it.
 * The SQPOLL poller: a bufsel thread per SQPOLL ring.  An SQPOLL program
 * publishes SQEs and reads completions without calling io_uring_enter for as
 * long as IORING_SQ_NEED_WAKEUP is clear, so the poller polls the shadow SQ
 * and the real CQ while awake, sleeps after sq_thread_idle without work
 * (setting NEED_WAKEUP), and is woken by IORING_ENTER_SQ_WAKEUP.  Waits on every ring are the
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
/* A fork child's first enter on a ring it inherited: its own mover watches
 * the ring from now on (the parent's goes on too). */
void mover_adopt(struct ring *r);
/* Moves what other rings' CQs received while the program was in the kernel. */
void mover_reap_others(struct ring *r);

int mover_start(struct ring *r);
/* SQPOLL: starts the poller's thread at the program's first wake-up. */
void mover_sq_launch(struct ring *r);
/* An enter's IORING_ENTER_SQ_WAKEUP: wakes the ring's poller if it sleeps
 * (NEED_WAKEUP clears at once). */
void mover_sq_wake(struct ring *r);
/* What an awake poller takes at once, taken by an enter itself. */
void mover_sq_drain(struct ring *r);
/* An enter's IORING_ENTER_SQ_WAIT: returns once the program's SQ has room. */
void mover_sq_wait(struct ring *r);

#endif
