/*
 * What the completion path hands on to the SQ, and the steps the completion
 * side shares (preload/select/followup.c).  All but rewrite_followup run under
 * cq_lock.
 */
#ifndef BUFSEL_PRELOAD_FOLLOWUP_H
#define BUFSEL_PRELOAD_FOLLOWUP_H

#include <stdint.h>

struct req;
struct ring;

/* Posts a CQE of bufsel's own. */
void rewrite_post(struct ring *r, uint64_t ud, int res, unsigned flags);
/* The held SQEs will never run: each gets -ECANCELED. */
void rewrite_cancel_held(struct ring *r, struct req *q);
/* Queues q on r->ready, for rewrite_followup. */
void rewrite_make_ready(struct ring *r, struct req *q);
/* Frees a finished request, or leaves it to its LINK_TIMEOUT's CQE. */
void rewrite_release(struct ring *r, struct req *q);
/* Issues the chains and steps completions made ready (outside cq_lock);
 * unattended: only what the mover may issue. */
void rewrite_followup(struct ring *r, int unattended);

#endif
