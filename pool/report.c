/*
 * A pool's statistics as text: the JSON document of docs/stats-schema.md and
 * a short table for people.  Written into the caller's buffer by hand (no
 * stdio, no allocation, no locale), because the caller may be deep inside a
 * host program with its ring lock held.
 *
 * Both texts are a sequence of pieces (an opening, one piece per legacy group
 * in bgid order, a closing), each produced by one call of a piece function
 * that advances a cursor.  The snprintf-style writers run every piece into a
 * sink that counts past its end; the chunked writers keep whole pieces only,
 * putting the cursor back when one does not fit.  A piece is bounded
 * (POOL_STATS_PIECE_MAX; the test fills every counter to check it).
 */
#include "pool/table.h"

#include <errno.h>
#include <string.h>

/* Writes what fits below cap and counts everything in pos. */
struct sink {
	char *buf;
	size_t cap, pos;
};

static void put_mem(struct sink *s, const char *m, size_t n)
{
	if (s->pos < s->cap) {
		size_t k = s->cap - s->pos < n ? s->cap - s->pos : n;
		memcpy(s->buf + s->pos, m, k);
	}
	s->pos += n;
}

static void put_s(struct sink *s, const char *str)
{
	put_mem(s, str, strlen(str));
}

/* Decimal digits of v into d (at least 21 bytes), NUL-terminated: the length. */
static size_t fmt_u64(char *d, uint64_t v)
{
	char t[20];
	size_t n = 0;
	do {
		t[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		d[i] = t[n - 1 - i];
	d[n] = 0;
	return n;
}

static void put_u(struct sink *s, uint64_t v)
{
	char d[21];
	put_mem(s, d, fmt_u64(d, v));
}

/* A rate in [0, 1] to 9 decimal places, trailing zeros dropped: "0", "0.5",
 * "1".  JSON has no other way to spell a fraction, and %g would need stdio. */
static void put_rate(struct sink *s, double rate)
{
	uint64_t n = (uint64_t)(rate * 1e9 + 0.5);
	put_u(s, n / 1000000000u);
	uint64_t frac = n % 1000000000u;
	if (!frac)
		return;
	char d[10];
	int k = 9;
	for (int i = 8; i >= 0; i--, frac /= 10)
		d[i] = (char)('0' + frac % 10);
	while (d[k - 1] == '0')
		k--;
	put_mem(s, ".", 1);
	put_mem(s, d, (size_t)k);
}

/* "key":v, with the comma unless last. */
static void put_kv(struct sink *s, const char *key, uint64_t v, int last)
{
	put_mem(s, "\"", 1);
	put_s(s, key);
	put_mem(s, "\":", 2);
	put_u(s, v);
	if (!last)
		put_mem(s, ",", 1);
}

static void put_hist(struct sink *s, const uint64_t *h)
{
	put_mem(s, "[", 1);
	for (unsigned b = 0; b < POOL_HIST_BUCKETS; b++) {
		if (b)
			put_mem(s, ",", 1);
		put_u(s, h[b]);
	}
	put_mem(s, "]", 1);
}

/* The first group with statistics (group_reported) with an id >= from, or NULL. */
static const struct group *next_legacy(const struct pool *p, uint32_t from)
{
	for (uint32_t d = from >> TABLE_SHIFT; d < TABLE_FAN; d++) {
		const struct table_chunk *c = p->dir[d];
		if (!c)
			continue;
		uint32_t i = d == from >> TABLE_SHIFT ? from & (TABLE_FAN - 1) : 0;
		for (; i < TABLE_FAN; i++)
			if (c->g[i] && group_reported(c->g[i]))
				return c->g[i];
	}
	return NULL;
}

enum stage {
	STAGE_OPEN,		/* nothing written */
	STAGE_FIRST,		/* opening written, no group yet */
	STAGE_MORE,		/* at least one group written */
	STAGE_DONE,		/* closing written */
};

/* What the piece at c is: 0 when the text is finished; else 1, and among
 * the groups *g is the next one to write (NULL: the closing is next), with
 * the cursor's bgid already past it.  The piece function writes the piece
 * and sets the stage that follows. */
static int next_piece(const struct pool *p, struct pool_stats_cursor *c, const struct group **g)
{
	*g = NULL;
	if (c->stage == STAGE_FIRST || c->stage == STAGE_MORE) {
		*g = c->bgid <= UINT16_MAX ? next_legacy(p, c->bgid) : NULL;
		if (*g)
			c->bgid = (uint32_t)(*g)->bgid + 1;
	}
	return c->stage != STAGE_DONE;
}

static void json_group(struct sink *s, const struct group *g)
{
	const struct pool_policy *pol = &g->policy;
	put_mem(s, "{", 1);
	put_kv(s, "bgid", g->bgid, 0);
	put_s(s, "\"policy\":{");
	put_kv(s, "cap", pol->cap, 0);
	put_kv(s, "max_len", pol->max_len, 0);
	put_s(s, "\"enobufs_rate\":");
	put_rate(s, pol->enobufs_rate);
	put_s(s, ",\"seed\":\"");
	put_u(s, pol->seed);
	put_s(s, "\"},");
	put_kv(s, "available", group_available(g), 0);
	put_kv(s, "in_use", g->in_use, 0);
	put_kv(s, "peak_in_use", g->peak_in_use, 0);
	put_kv(s, "held", g->held, 0);
	put_kv(s, "peak_out", g->peak_out, 0);
	put_kv(s, "size", (uint64_t)group_available(g) + g->in_use + g->held, 0);
	put_kv(s, "peak_size", g->peak_size, 0);
	put_kv(s, "buf_len", g->buf_len, 0);
	put_kv(s, "provided", g->provided, 0);
	put_kv(s, "removed", g->removed, 0);
	put_kv(s, "selected", g->selected, 0);
	put_kv(s, "returned", g->returned, 0);
	put_kv(s, "consumed", g->consumed, 0);
	put_s(s, "\"enobufs\":{");
	put_kv(s, "total", g->enobufs, 0);
	put_kv(s, "empty", g->enobufs_empty, 0);
	put_kv(s, "capped", g->enobufs_capped, 0);
	put_kv(s, "injected", g->enobufs_injected, 1);
	put_s(s, "},\"wait\":{");
	put_kv(s, "count", g->waits, 0);
	put_kv(s, "ns", g->wait_ns, 1);
	put_s(s, "},\"bytes_used\":{");
	put_kv(s, "count", g->used_count, 0);
	put_kv(s, "sum", g->used_bytes, 0);
	put_s(s, "\"hist\":");
	put_hist(s, g->used_hist);
	put_s(s, "},\"in_use_hist\":");
	put_hist(s, g->in_use_hist);
	if (g->kind == GROUP_RING_EMU || g->watched || g->ended) {
		put_s(s, ",\"ring_entries\":");
		put_u(s, g->ring.nr);
	}
	if (g->watched || g->ended == 2)
		put_s(s, ",\"kernel_ring\":true");
	put_mem(s, "}", 1);
}

static int json_piece(const struct pool *p, unsigned ring, struct pool_stats_cursor *c,
		      struct sink *s)
{
	const struct group *g;
	if (!next_piece(p, c, &g))
		return 0;
	if (c->stage == STAGE_OPEN) {
		put_mem(s, "{", 1);
		put_kv(s, "ring", ring, 0);
		put_kv(s, "peak_in_use", p->peak_outstanding, 0);
		put_kv(s, "strays", p->strays, 0);
		put_s(s, "\"groups\":[");
		c->stage = STAGE_FIRST;
	} else if (g) {
		put_s(s, c->stage == STAGE_MORE ? ",\n" : "\n");
		json_group(s, g);
		c->stage = STAGE_MORE;
	} else {
		put_s(s, c->stage == STAGE_MORE ? "\n]}" : "]}");
		c->stage = STAGE_DONE;
	}
	return 1;
}

/* The smallest bucket holding the ceil(n * pct / 100)-th smallest value. */
static int percentile_bucket(const uint64_t *h, uint64_t n, unsigned pct)
{
	uint64_t rank = n / 100 * pct + (n % 100 * pct + 99) / 100, seen = 0;
	if (!rank)
		rank = 1;
	for (unsigned b = 0; b < POOL_HIST_BUCKETS; b++) {
		seen += h[b];
		if (seen >= rank)
			return (int)b;
	}
	return -1;
}

/* The table's columns, titles right-aligned like the values below them,
 * two spaces apart; a longer value pushes the rest of its line. */
enum { COL_BGID, COL_PROVIDED, COL_PEAK, COL_SELECTED, COL_ENOBUFS, COL_P50, COL_P99, NCOLS };

static const struct column {
	const char *title;
	size_t width;
} columns[NCOLS] = {
	[COL_BGID] = { "bgid", 5 },
	[COL_PROVIDED] = { "provided", 9 },
	[COL_PEAK] = { "peak in use", 11 },
	[COL_SELECTED] = { "selected", 9 },
	[COL_ENOBUFS] = { "-ENOBUFS e/c/i", 14 },
	[COL_P50] = { "bytes p50", 11 },
	[COL_P99] = { "bytes p99", 11 },
};

static void put_col(struct sink *s, int col, const char *text)
{
	size_t n = strlen(text), width = columns[col].width + (col ? 2 : 0);
	for (; n < width; n++)
		put_mem(s, " ", 1);
	put_s(s, text);
}

static void put_col_u(struct sink *s, int col, uint64_t v)
{
	char d[21];
	fmt_u64(d, v);
	put_col(s, col, d);
}

/* A bucket as "lo-hi" ("0" and "1" alone), or "-" for no data. */
static void put_col_bucket(struct sink *s, int col, int b)
{
	char t[2 * 21 + 1] = "-";
	if (b >= 0) {
		size_t n = fmt_u64(t, pool_hist_lo((unsigned)b));
		if (b > 1) {
			t[n++] = '-';
			fmt_u64(t + n, pool_hist_hi((unsigned)b));
		}
	}
	put_col(s, col, t);
}

static int table_piece(const struct pool *p, unsigned ring, struct pool_stats_cursor *c,
		       struct sink *s)
{
	(void)ring;
	const struct group *g;
	if (!next_piece(p, c, &g))
		return 0;
	if (c->stage == STAGE_OPEN) {
		for (int i = 0; i < NCOLS; i++)
			put_col(s, i, columns[i].title);
		put_mem(s, "\n", 1);
		c->stage = STAGE_FIRST;
		return 1;
	}
	if (!g) {
		c->stage = STAGE_DONE;
		return 1;
	}
	char e[3 * 21], *at = e;
	at += fmt_u64(at, g->enobufs_empty);
	*at++ = '/';
	at += fmt_u64(at, g->enobufs_capped);
	*at++ = '/';
	fmt_u64(at, g->enobufs_injected);
	put_col_u(s, COL_BGID, g->bgid);
	put_col_u(s, COL_PROVIDED, g->provided);
	put_col_u(s, COL_PEAK, g->peak_in_use);
	put_col_u(s, COL_SELECTED, g->selected);
	put_col(s, COL_ENOBUFS, e);
	put_col_bucket(s, COL_P50, percentile_bucket(g->used_hist, g->used_count, 50));
	put_col_bucket(s, COL_P99, percentile_bucket(g->used_hist, g->used_count, 99));
	put_mem(s, "\n", 1);
	c->stage = STAGE_MORE;
	return 1;
}

/* Writes the piece the cursor is at, then advances it: 1, or 0 if done. */
typedef int piece_fn(const struct pool *p, unsigned ring, struct pool_stats_cursor *c,
		     struct sink *s);

static size_t write_all(piece_fn *piece, const struct pool *p, unsigned ring,
			char *buf, size_t len)
{
	struct sink s = { .buf = buf, .cap = len ? len - 1 : 0 };
	struct pool_stats_cursor c = { 0 };
	while (piece(p, ring, &c, &s))
		;
	if (len)
		buf[s.pos < s.cap ? s.pos : s.cap] = 0;
	return s.pos;
}

static ssize_t write_next(piece_fn *piece, const struct pool *p, unsigned ring,
			  struct pool_stats_cursor *c, char *buf, size_t len)
{
	if (c->stage == STAGE_DONE)
		return 0;
	if (!len)
		return -ENOSPC;
	struct sink s = { .buf = buf, .cap = len - 1 };
	for (;;) {
		struct pool_stats_cursor before = *c;
		size_t at = s.pos;
		if (!piece(p, ring, c, &s))
			break;
		if (s.pos > s.cap) {
			*c = before;
			s.pos = at;
			break;
		}
	}
	buf[s.pos] = 0;
	/* Nothing fitted, or only the table's empty closing piece: the latter
	 * is a finished text, the former a buffer too small. */
	if (!s.pos && c->stage != STAGE_DONE)
		return -ENOSPC;
	return (ssize_t)s.pos;
}

size_t pool_stats_json(const struct pool *p, unsigned ring_index, char *buf, size_t len)
{
	return write_all(json_piece, p, ring_index, buf, len);
}

ssize_t pool_stats_json_next(const struct pool *p, unsigned ring_index,
			     struct pool_stats_cursor *c, char *buf, size_t len)
{
	return write_next(json_piece, p, ring_index, c, buf, len);
}

size_t pool_stats_table(const struct pool *p, char *buf, size_t len)
{
	return write_all(table_piece, p, 0, buf, len);
}

ssize_t pool_stats_table_next(const struct pool *p, struct pool_stats_cursor *c,
			      char *buf, size_t len)
{
	return write_next(table_piece, p, 0, c, buf, len);
}
