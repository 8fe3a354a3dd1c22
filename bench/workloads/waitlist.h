#ifndef BUFSEL_BENCH_WAITLIST_H
#define BUFSEL_BENCH_WAITLIST_H

/*
 * Requests that found their group empty (-ENOBUFS), to be issued again in
 * the order they failed as buffers come back (oldest first: none starves).
 *
 * Waiting for a buffer to come back only works while the program holds one
 * that it will provide again. A group can also be empty because requests in
 * flight hold its buffers and will give them back when they complete (a
 * READ keeps its buffer while it waits; an emulation may bind buffers to
 * receives in flight), and then no PROVIDE is coming: such a request is
 * issued again at once (waitlist_retry), and the waiters are all issued
 * again when the program's last buffer is back.
 */
struct waitlist {
	int *item;
	unsigned head, n, cap;
	unsigned long total;   /* how many -ENOBUFS in all */
	unsigned long at_once; /* of which issued again at once */
};

void waitlist_push(struct waitlist *w, int item);
/* 1 and the oldest in *item when one was waiting. */
int waitlist_pop(struct waitlist *w, int *item);
/* Counts an -ENOBUFS whose request the caller issues again at once. */
static inline void waitlist_retry(struct waitlist *w)
{
	w->total++;
	w->at_once++;
}
void waitlist_free(struct waitlist *w);

#endif
