#include "preload/select/req.h"

#include "preload/heap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct req *req_at(const struct req_table *t, uint32_t idx)
{
	return &t->chunk[idx / REQ_CHUNK][idx % REQ_CHUNK];
}

static int req_grow(struct req_table *t)
{
	if (t->nchunks == REQ_CHUNKS)
		return -1;
	struct req *c = heap_calloc(REQ_CHUNK, sizeof(*c), "request table");
	if (!c)
		return -1;
	uint32_t base = t->nchunks * REQ_CHUNK;
	t->chunk[t->nchunks++] = c;
	for (uint32_t i = REQ_CHUNK; i-- > 0;) {
		c[i].idx = base + i;
		c[i].next_free = t->free_head;
		t->free_head = base + i + 1;
	}
	return 0;
}

struct req *req_alloc(struct req_table *t)
{
	struct req *q = NULL;
	spin_lock(&t->lock);
	if (t->free_head || !req_grow(t)) {
		q = req_at(t, t->free_head - 1);
		t->free_head = q->next_free;
		uint32_t gen = q->gen + 1, idx = q->idx;
		memset(q, 0, sizeof(*q));
		q->gen = gen;
		q->idx = idx;
		q->live = 1;
		t->live++;
	}
	spin_unlock(&t->lock);
	return q;
}

int req_hold(struct req *q, const struct io_uring_sqe *sqe)
{
	if (q->nheld == q->capheld) {
		uint32_t cap = q->capheld ? q->capheld * 2 : 4;
		struct io_uring_sqe *v = heap_realloc(q->held, cap * sizeof(*v), "held chain");
		if (!v)
			return -ENOMEM;
		q->held = v;
		q->capheld = cap;
	}
	q->held[q->nheld++] = *sqe;
	return 0;
}

void req_recv_bound(struct req_table *t, struct req *q)
{
	if (!(q->flags & REQ_BOUND_RECV)) {
		q->flags |= REQ_BOUND_RECV;
		atomic_fetch_add_explicit(&t->bound_recvs, 1, memory_order_relaxed);
	}
}

void req_recv_unbound(struct req_table *t, struct req *q)
{
	if (q->flags & REQ_BOUND_RECV) {
		q->flags &= ~(uint32_t)REQ_BOUND_RECV;
		atomic_fetch_sub_explicit(&t->bound_recvs, 1, memory_order_relaxed);
	}
}

void req_free(struct req_table *t, struct req *q)
{
	/* A cancelled chain or a ring going away frees a receive still counted. */
	req_recv_unbound(t, q);
	heap_free(q->held);
	heap_free(q->msg);
	heap_free(q->bun);
	q->held = NULL;
	q->msg = NULL;
	q->bun = NULL;
	spin_lock(&t->lock);
	q->live = 0;
	q->gen++;
	q->next_free = t->free_head;
	t->free_head = q->idx + 1;
	t->live--;
	spin_unlock(&t->lock);
}

_Static_assert((uint64_t)REQ_CHUNKS * REQ_CHUNK <= 1ULL << REQ_SLOT_BITS, "a slot number fits its field");
_Static_assert(REQ_SLOT_BITS + REQ_PROC_BITS <= 32, "the process fits below the generation");

uint64_t req_tag(const struct req_table *t, const struct req *q)
{
	return REQ_TAG_MAGIC | ((uint64_t)(q->gen & 0xffff) << 32) |
	       ((uint64_t)(t->proc & REQ_PROC_ANY) << REQ_SLOT_BITS) | q->idx;
}

struct req *req_lookup(struct req_table *t, uint64_t user_data)
{
	if ((user_data & REQ_TAG_MASK) != REQ_TAG_MAGIC)
		return NULL;
	uint32_t idx = (uint32_t)user_data & ((1U << REQ_SLOT_BITS) - 1);
	if (req_tag_proc(user_data) != (t->proc & REQ_PROC_ANY) || idx / REQ_CHUNK >= t->nchunks)
		return NULL;
	struct req *q = req_at(t, idx);
	return q->live && (q->gen & 0xffff) == ((user_data >> 32) & 0xffff) ? q : NULL;
}

/* Requests a cancel can find: the ones standing for a program request in
 * the kernel (not stand-ins, which complete at once, nor bufsel's helpers). */
static int cancellable(const struct req *q, uint64_t ud)
{
	return q->live && q->user_data == ud && q->kind != REQ_STANDIN && q->kind != REQ_SENTINEL &&
	       q->kind != REQ_CANCEL_ALL && q->kind != REQ_PROBE && !(q->flags & REQ_DONE);
}

unsigned req_tags_of(struct req_table *t, uint64_t ud, uint64_t *tags, unsigned max)
{
	unsigned n = 0;
	spin_lock(&t->lock);
	for (uint32_t c = 0; c < t->nchunks && n < max; c++)
		for (uint32_t i = 0; i < REQ_CHUNK && n < max; i++)
			if (cancellable(&t->chunk[c][i], ud))
				tags[n++] = req_tag(t, &t->chunk[c][i]);
	spin_unlock(&t->lock);
	return n;
}

struct req *req_find_user_data(struct req_table *t, uint64_t ud)
{
	uint64_t tag;
	return req_tags_of(t, ud, &tag, 1) ? req_lookup(t, tag) : NULL;
}

struct req *req_find_timeout(struct req_table *t, uint64_t ud)
{
	/* One still counting first: one that reached its count is, for the
	 * program, complete, whatever its timer in the kernel still does. */
	struct req *found = NULL, *done = NULL;
	spin_lock(&t->lock);
	for (uint32_t c = 0; c < t->nchunks && !found; c++)
		for (uint32_t i = 0; i < REQ_CHUNK && !found; i++) {
			struct req *q = &t->chunk[c][i];
			if (q->live && q->kind == REQ_TIMEOUT && q->user_data == ud) {
				if (!(q->flags & REQ_DONE))
					found = q;
				else if (!done)
					done = q;
			}
		}
	spin_unlock(&t->lock);
	return found ? found : done;
}

struct req *req_find_skip(struct req_table *t, uint64_t ud, uint8_t opcode)
{
	struct req *found = NULL;
	spin_lock(&t->lock);
	for (uint32_t c = 0; c < t->nchunks && !found; c++)
		for (uint32_t i = 0; i < REQ_CHUNK && !found; i++) {
			struct req *q = &t->chunk[c][i];
			if (q->live && q->kind == REQ_SKIP && q->user_data == ud && q->orig.opcode == opcode)
				found = q;
		}
	spin_unlock(&t->lock);
	return found;
}

void req_table_destroy(struct req_table *t)
{
	for (uint32_t c = 0; c < t->nchunks; c++) {
		for (uint32_t i = 0; i < REQ_CHUNK; i++) {
			heap_free(t->chunk[c][i].held);
			heap_free(t->chunk[c][i].msg);
			heap_free(t->chunk[c][i].bun);
		}
		heap_free(t->chunk[c]);
	}
	memset(t, 0, sizeof(*t));
}

