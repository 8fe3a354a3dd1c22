/*
 * A buffer ring bufsel keeps itself (GROUP_RING_EMU), as kbuf.c keeps a
 * ring-mapped group: the program writes entries and publishes them by moving
 * the tail; a selection takes the entry at the head, which only the pool
 * moves.  Legacy groups and emulated rings share the selection's counters,
 * policies and histograms (account.c); what differs is where the buffers are.
 *
 * The kernel does not consume a ring entry until the request that selected
 * it commits (a receive that finds no data leaves the head where it was);
 * bufsel selects only once the data is there, so it moves the head at once,
 * and a put-back moves it back when the entry is still the last one taken.
 */
#include "pool/table.h"

#include <errno.h>
#include <stdint.h>

#include "pool/account.h"

static uint16_t ring_mask(const struct group *g)
{
	return (uint16_t)(g->ring.nr - 1);
}

static const struct pool_ring_entry *entry_at(const struct group *g, uint16_t i)
{
	return &g->ring.entries[i & ring_mask(g)];
}

/* The tail now; what the program added since the last look was provided
 * (again: a buffer it held is no longer held). */
static uint16_t refresh(struct group *g)
{
	uint16_t tail = pool_ring_tail(&g->ring);
	uint16_t added = (uint16_t)(tail - g->ring_tail_seen);
	g->provided += added;
	if (g->held) {
		uint16_t n = added < g->ring.nr ? added : (uint16_t)g->ring.nr;
		for (uint16_t i = 0; i < n; i++)
			held_clear(g, __atomic_load_n(&entry_at(g, (uint16_t)(tail - n + i))->bid,
						      __ATOMIC_RELAXED));
	}
	g->ring_tail_seen = tail;
	uint32_t size = (uint32_t)(uint16_t)(tail - g->ring_head) + g->in_use + g->held;
	if (size > g->peak_size)
		g->peak_size = size;
	return tail;
}

/* An incremental ring's head entry is used in order: while a transfer that
 * commits when it completes has it out, the next one must wait for it. */
static int inc_busy(const struct group *g)
{
	return g->ring.incremental && g->in_use;
}

int ring_select(struct group *g, struct pool_buf *out, int count)
{
	if (inc_busy(g))
		return -EBUSY;
	uint16_t tail = refresh(g);
	int ret = group_admit(g, tail == g->ring_head, count);
	if (ret)
		return ret;
	const struct pool_ring_entry *e = entry_at(g, g->ring_head);
	/* The program may be writing other entries: each field is read once. */
	uint64_t addr = __atomic_load_n(&e->addr, __ATOMIC_RELAXED);
	uint32_t len = __atomic_load_n(&e->len, __ATOMIC_RELAXED);
	uint16_t bid = __atomic_load_n(&e->bid, __ATOMIC_RELAXED);
	if (len > g->buf_len)
		g->buf_len = len;
	group_took(g, addr, len, bid, out);
	g->ring_head++;
	return 0;
}

/* io_ring_buffers_peek, whose quirks are the kernel's: the bundle ends
 * empty only if the loop stepped past the last entry, which it does not
 * after an entry that used up max_len. */
int ring_bundle(struct group *g, struct pool_bundle *b, struct pool_buf *out)
{
	if (inc_busy(g))
		return -EBUSY;
	uint16_t tail = refresh(g);
	uint16_t avail = (uint16_t)(tail - g->ring_head);
	int ret = group_admit(g, !avail, b->count);
	if (ret)
		return ret;
	uint32_t max_len = b->max_len;
	uint32_t nr = b->nr_iovs ? b->nr_iovs : 1;
	if (max_len) {
		uint32_t len = __atomic_load_n(&entry_at(g, g->ring_head)->len, __ATOMIC_RELAXED);
		if (!len)
			return -ENOBUFS;
		uint32_t needed = (uint32_t)(((uint64_t)max_len + len - 1) / len);
		if (needed > POOL_BUNDLE_MAX)
			needed = POOL_BUNDLE_MAX;
		if (avail > needed)
			avail = (uint16_t)needed;
	}
	b->expanded = 0;
	if (b->expand && avail > nr && max_len) {
		nr = avail;
		b->expanded = 1;
	} else if (avail < nr) {
		nr = avail;
	}
	if (nr > POOL_BUNDLE_MAX)
		nr = POOL_BUNDLE_MAX;
	if (!max_len)
		max_len = INT32_MAX;
	b->partial = 0;
	b->total = 0;
	uint16_t head = g->ring_head;
	int n = 0;
	do {
		const struct pool_ring_entry *e = entry_at(g, head);
		uint64_t addr = __atomic_load_n(&e->addr, __ATOMIC_RELAXED);
		uint32_t len = __atomic_load_n(&e->len, __ATOMIC_RELAXED);
		uint16_t bid = __atomic_load_n(&e->bid, __ATOMIC_RELAXED);
		/* An incremental ring's entry is mapped in part, never cut. */
		if (len > max_len) {
			len = max_len;
			if (!g->ring.incremental) {
				b->partial = 1;
				if (n)
					break;
			}
		}
		/* A policy's cap stops the bundle where a single selection
		 * would be refused; the first entry passed group_admit. */
		if (n && g->policy.cap && (uint64_t)g->in_use + g->held >= g->policy.cap)
			break;
		if (len > g->buf_len)
			g->buf_len = len;
		group_took(g, addr, len, bid, &out[n++]);
		b->total += out[n - 1].len;
		max_len -= len;
		if (!max_len)
			break;
		head++;
	} while (--nr);
	g->ring_head = (uint16_t)(g->ring_head + n);
	b->emptied = head == tail;
	return n;
}

int ring_commit(struct group *g, const struct pool_buf *bufs, uint16_t n, uint32_t used,
		const struct pool_allocator *a)
{
	uint16_t first = (uint16_t)(g->ring_head - n);
	int last_taken = (uint16_t)(g->ring_tail_seen - first) <= g->ring.nr;
	for (uint16_t i = 0; i < n && last_taken; i++) {
		const struct pool_ring_entry *e = entry_at(g, (uint16_t)(first + i));
		last_taken = __atomic_load_n(&e->bid, __ATOMIC_RELAXED) == bufs[i].bid;
	}
	if (!last_taken) {
		/* Another selection came between: these stay taken, done. */
		for (uint16_t i = 0; i < n; i++)
			group_consume(g, bufs[i].bid, i ? 0 : used, a);
		return 0;
	}
	uint32_t min_left_sub_one = g->ring.min_left ? g->ring.min_left - 1 : 0;
	uint16_t i = 0;
	int more = 0;
	uint32_t kept_used = 0;	/* bytes the transfer put in the entry that stays */
	for (;;) {
		struct pool_ring_entry *e = &g->ring.entries[(uint16_t)(first + i) & ring_mask(g)];
		uint32_t len = __atomic_load_n(&e->len, __ATOMIC_RELAXED);
		uint32_t this_len = used < len ? used : len;
		len -= this_len;
		if (len > min_left_sub_one || !this_len) {
			__atomic_store_n(&e->addr, __atomic_load_n(&e->addr, __ATOMIC_RELAXED) + this_len,
					 __ATOMIC_RELAXED);
			__atomic_store_n(&e->len, len, __ATOMIC_RELAXED);
			more = 1;
			kept_used = this_len;
			break;
		}
		__atomic_store_n(&e->len, 0, __ATOMIC_RELAXED);
		group_consume(g, bufs[i].bid, this_len, a);
		used -= this_len;
		if (++i == n || !used)
			break;
	}
	g->ring_head = (uint16_t)(first + i);
	if (more) {
		/* Delivered in part, and offered again where it is: the
		 * program holds nothing of it. */
		g->in_use--;
		g->consumed++;
		g->provided++;
		g->used_count++;
		g->used_bytes += kept_used;
		g->used_hist[pool_hist_bucket(kept_used)]++;
		i++;
	}
	/* Those after it the transfer never reached are the ring's again. */
	g->in_use -= (uint32_t)(n - i);
	g->returned += (uint16_t)(n - i);
	return more;
}

void ring_putback(struct group *g, const struct pool_buf *b)
{
	/* Only if nothing was taken since, and the program has not published
	 * a new entry over the slot (the ring would then hold more than nr). */
	uint16_t last = (uint16_t)(g->ring_head - 1);
	const struct pool_ring_entry *e = entry_at(g, last);
	if ((uint16_t)(g->ring_tail_seen - last) <= g->ring.nr &&
	    __atomic_load_n(&e->bid, __ATOMIC_RELAXED) == b->bid &&
	    __atomic_load_n(&e->addr, __ATOMIC_RELAXED) == b->addr) {
		g->ring_head = last;
		g->returned++;
	}
}

uint32_t ring_available(const struct group *g)
{
	return (uint16_t)(pool_ring_tail(&g->ring) - g->ring_head);
}

int ring_peek(const struct group *g, struct pool_buf *out)
{
	if (pool_ring_tail(&g->ring) == g->ring_head)
		return -ENOBUFS;
	const struct pool_ring_entry *e = entry_at(g, g->ring_head);
	*out = (struct pool_buf){
		.addr = __atomic_load_n(&e->addr, __ATOMIC_RELAXED),
		.len = __atomic_load_n(&e->len, __ATOMIC_RELAXED),
		.bid = __atomic_load_n(&e->bid, __ATOMIC_RELAXED),
		.bgid = g->bgid,
	};
	return 0;
}

int ring_check(const struct group *g)
{
	if (!g->ring.entries || !g->ring.nr || g->ring.nr >= 65536 || (g->ring.nr & (g->ring.nr - 1)))
		return -EUCLEAN;
	if (g->cap || g->slots || g->count)
		return -EUCLEAN;
	return 0;
}

/*
 * The kernel's rings, watched for statistics.  The kernel selects; bufsel
 * sees each CQE of a request that selected from the ring and reads the
 * ring's tail and entries, as the program wrote them.  A buffer a CQE
 * delivers is held by the program until an entry with its bid is published
 * again, as an emulated ring's is; the kernel's head is where the CQEs seen
 * put it.  Only counters and histograms: nothing here changes what the
 * kernel does.
 */
int pool_ring_watch(struct pool *p, uint16_t bgid, const struct pool_ring *ring)
{
	struct group *g = table_get(p, bgid);
	if (!g || g->kind != GROUP_RING)
		return -ENOENT;
	g->ring = *ring;
	g->watched = 1;
	g->policy.track_held = 1;
	g->ring_head = g->ring_tail_seen = 0;
	return 0;
}

int pool_ring_watch_mem(struct pool *p, uint16_t bgid, struct pool_ring_entry *entries)
{
	struct group *g = table_get(p, bgid);
	if (!g || g->kind != GROUP_RING || !g->watched)
		return -ENOENT;
	if (!g->ring.entries)
		g->ring.entries = entries;
	return 0;
}

/* Entries a bundle of res bytes took from the head (at least one). */
static uint16_t bundle_entries(const struct group *g, int32_t res)
{
	uint16_t n = 0;
	uint64_t got = 0;
	uint16_t avail = (uint16_t)(g->ring_tail_seen - g->ring_head);
	do {
		got += __atomic_load_n(&entry_at(g, (uint16_t)(g->ring_head + n))->len, __ATOMIC_RELAXED);
		n++;
	} while (got < (uint64_t)(res > 0 ? res : 0) && n < avail && n < POOL_BUNDLE_MAX);
	return n;
}

void pool_ring_observe(struct pool *p, uint16_t bgid, const struct pool_seen *s)
{
	int32_t res = s->res;
	struct group *g = table_get(p, bgid);
	if (!g || g->kind != GROUP_RING || !g->watched)
		return;
	if (g->ring.entries)
		refresh(g);
	if (!s->buffer) {
		if (res == -ENOBUFS) {
			g->enobufs++;
			g->enobufs_empty++;
		}
		return;
	}
	uint16_t n = s->bundle && g->ring.entries ? bundle_entries(g, res) : 1;
	uint32_t left = res > 0 ? (uint32_t)res : 0;
	for (uint16_t i = 0; i < n; i++) {
		uint16_t bid = s->bid;
		uint32_t len = 0;
		if (g->ring.entries) {
			const struct pool_ring_entry *e = entry_at(g, g->ring_head);
			len = __atomic_load_n(&e->len, __ATOMIC_RELAXED);
			if (i)
				bid = __atomic_load_n(&e->bid, __ATOMIC_RELAXED);
		}
		if (len > g->buf_len)
			g->buf_len = len;
		struct pool_buf b;
		group_took(g, 0, len, bid, &b);
		uint32_t used = n == 1 || left < len ? left : len;
		left -= used;
		/* An incremental ring's entry the transfer did not use up stays
		 * at the head: the program does not hold it. */
		if (s->buf_more) {
			group_delivered(g, used);
			continue;
		}
		g->ring_head++;
		group_consume(g, bid, used, &p->a);
	}
}
