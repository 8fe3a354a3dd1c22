/*
 * The program's TIMEOUT requests, seen from bufsel's waits.  The kernel ends
 * a wait in io_uring_enter as soon as a TIMEOUT completes (io_should_wake
 * compares ctx->cq_timeouts with its value when the wait began), however few
 * CQEs the wait has: liburing bounds every wait that way on kernels without
 * IORING_ENTER_EXT_ARG (before 5.11).  bufsel waits in rounds while requests
 * of its own are live (enter.c), each round a wait of its own in the kernel,
 * so the timeout that woke one round would be forgotten by the next: bufsel
 * counts the completions of the program's TIMEOUTs itself, by user_data.
 */
#include "preload/shadow/timeouts.h"

#include <errno.h>
#include <linux/io_uring.h>

void timeouts_submitted(struct ring *r, uint64_t user_data)
{
	spin_lock(&r->x->tmo_lock);
	unsigned n = atomic_load_explicit(&r->x->tmo_n, memory_order_relaxed);
	if (n < TMO_TRACKED) {
		r->x->tmo_ud[n] = user_data;
		atomic_store_explicit(&r->x->tmo_n, n + 1, memory_order_release);
	}
	spin_unlock(&r->x->tmo_lock);
}

/* The index of an entry for user_data, or -1.  Under tmo_lock. */
static int find_locked(struct ring *r, uint64_t user_data)
{
	unsigned n = atomic_load_explicit(&r->x->tmo_n, memory_order_relaxed);
	for (unsigned i = 0; i < n; i++)
		if (r->x->tmo_ud[i] == user_data)
			return (int)i;
	return -1;
}

/* Under tmo_lock. */
static void drop_locked(struct ring *r, int i)
{
	unsigned n = atomic_load_explicit(&r->x->tmo_n, memory_order_relaxed);
	r->x->tmo_ud[i] = r->x->tmo_ud[n - 1];
	atomic_store_explicit(&r->x->tmo_n, n - 1, memory_order_release);
}

void timeouts_not_taken(struct ring *r, uint64_t user_data)
{
	spin_lock(&r->x->tmo_lock);
	int i = find_locked(r, user_data);
	if (i >= 0)
		drop_locked(r, i);
	spin_unlock(&r->x->tmo_lock);
}

void timeouts_completed(struct ring *r, const struct io_uring_cqe *cqe)
{
	spin_lock(&r->x->tmo_lock);
	int i = find_locked(r, cqe->user_data);
	/* A multishot timeout stays armed while its CQEs carry F_MORE. */
	if (i >= 0 && !(cqe->flags & IORING_CQE_F_MORE))
		drop_locked(r, i);
	spin_unlock(&r->x->tmo_lock);
	/* The kernel counts those that expired (-ETIME, or 0 with
	 * IORING_TIMEOUT_ETIME_SUCCESS) or reached their count (0); not one
	 * taken away by TIMEOUT_REMOVE (-ECANCELED) or refused at prep. */
	if (i >= 0 && (cqe->res == -ETIME || cqe->res == 0))
		atomic_fetch_add_explicit(&r->x->cq_timeouts, 1, memory_order_release);
}
