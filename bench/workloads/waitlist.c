#include "bench/workloads/waitlist.h"
#include "bench/workloads/bench.h"

#include <stdlib.h>

void waitlist_push(struct waitlist *w, int item)
{
	if (w->n == w->cap) {
		unsigned cap = w->cap ? 2 * w->cap : 64;
		int *p = malloc(cap * sizeof(*p));
		if (!p)
			die("waitlist: out of memory");
		for (unsigned i = 0; i < w->n; i++)
			p[i] = w->item[(w->head + i) % w->cap];
		free(w->item);
		w->item = p;
		w->head = 0;
		w->cap = cap;
	}
	w->item[(w->head + w->n++) % w->cap] = item;
	w->total++;
}

int waitlist_pop(struct waitlist *w, int *item)
{
	if (w->n == 0)
		return 0;
	*item = w->item[w->head];
	w->head = (w->head + 1) % w->cap;
	w->n--;
	return 1;
}

void waitlist_free(struct waitlist *w)
{
	free(w->item);
	*w = (struct waitlist){ 0 };
}
