/*
 * The statistics of rings that are gone, kept as the text the report will
 * print (a ring's pool goes with it), and what decides whether a ring is
 * this process's to report.  The ring table (ring.c) hands a ring over here
 * before tearing it down; the report (stats.c) reads the list.  Neither
 * this file nor the list needs the ring table.
 */
#define _GNU_SOURCE
#include "preload/stats_closed.h"

#include <string.h>

#include "pool/pool.h"
#include "preload/heap.h"
#include "preload/shadow/ring.h"
#include "preload/state.h"

static struct {
	struct stats_closed_ring *head, **tail;
	struct spin lock;
} closed = { NULL, &closed.head, { 0 } };

/* Set while the SIGUSR2 report runs: locks are tried, never waited for, and
 * a ring whose lock is held is left out of that report. */
static __thread int in_signal;

void stats_set_in_signal(int on)
{
	in_signal = on;
}

int stats_take(struct spin *l)
{
	if (!in_signal) {
		spin_lock(l);
		return 1;
	}
	return spin_trylock(l);
}

/* Rings made since the last fork (the ones this process reports); a forked
 * child's inherited pools are its parent's (one pool per ring, in the ring's
 * arena), which reports them. */
static unsigned fork_gen;

void stats_after_fork(void)
{
	fork_gen++;
	closed.head = NULL;	/* the parent's, copied: it reports them */
	closed.tail = &closed.head;
	spin_unlock(&closed.lock);
}

unsigned stats_fork_gen(void)
{
	return fork_gen;
}

int stats_ours(const struct ring *r)
{
	return r->x && r->x->pool && r->fork_gen == fork_gen;
}

int stats_wanted(void)
{
	return bufsel.conf.stats[0] != '\0';
}

int stats_to_stderr(void)
{
	return !strcmp(bufsel.conf.stats, "-");
}

void stats_ring_closed(struct ring *r)
{
	if (!stats_wanted() || !stats_ours(r))
		return;
	/* What the ring would print: measure, then render into one block.
	 * The pool is shared with any process the ring was forked into, which
	 * may change it meanwhile: each pass reads it under its lock, and a
	 * text that grew between measuring and rendering is measured again. */
	struct stats_closed_ring *c = NULL;
	for (size_t room = 0;;) {
		if (!stats_take(&r->x->pool_lock)) {
			heap_free(c);
			return;
		}
		size_t n = stats_to_stderr() ? pool_stats_table(r->x->pool, c ? c->text : NULL, c ? room + 1 : 0)
				       : pool_stats_json(r->x->pool, r->serial, c ? c->text : NULL, c ? room + 1 : 0);
		spin_unlock(&r->x->pool_lock);
		if (c && n <= room) {
			c->len = n;
			break;
		}
		heap_free(c);
		/* heap_malloc, not malloc: a close can be a trapped call (SIGSYS handler). */
		c = heap_malloc(sizeof(*c) + n + 1, "stats of a closed ring");
		if (!c)
			return;
		c->next = NULL;
		room = n;
	}
	spin_lock(&closed.lock);
	*closed.tail = c;
	closed.tail = &c->next;
	spin_unlock(&closed.lock);
}

int stats_closed_lock(void)
{
	return stats_take(&closed.lock);
}

void stats_closed_unlock(void)
{
	spin_unlock(&closed.lock);
}

const struct stats_closed_ring *stats_closed_head(void)
{
	return closed.head;
}
