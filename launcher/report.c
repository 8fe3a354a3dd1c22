/*
 * bufsel report [--margin PCT] [--percentile P] [--plot OUT.svg|OUT.png] STATS.json
 *
 * The statistics say how a program used each buffer group; the question a
 * user brings is how many buffers of what length it should provide.  The
 * answer here: as many as were ever out at once plus a margin, each as long
 * as the P-th percentile of the bytes a delivery used; and what that would
 * save against what the group had.
 *
 * The file is read whole (bounded), checked by the strict reader of json.h,
 * and then checked for the fields this report uses, so that a truncated or
 * foreign file gives one line naming the problem instead of a table of
 * zeros.  Fields the report does not use are ignored, as the schema asks of
 * readers.  Files from before the group fields buf_len, peak_size and
 * peak_out are read too, with the nearest older figure in their place.
 *
 * All arithmetic is in integers (128-bit where products of 64-bit counters
 * meet), percentages in millionths: the output is exact and the same on
 * every machine, which the tests rely on.
 */
#define _GNU_SOURCE
#include "launcher/report.h"

#include "launcher/json.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

typedef unsigned __int128 u128;

#define HIST_BUCKETS 33			/* docs/stats-schema.md: always 33 entries */
#define MAX_FILE (64u << 20)		/* far above any real statistics file */
#define MICRO 1000000u			/* percentages are kept in millionths */
#define DEFAULT_MARGIN (25ull * MICRO)
#define DEFAULT_PERCENTILE (99ull * MICRO)
#define MAX_MARGIN (10000ull * MICRO)
#define EXIT_BAD_FILE 1
#define EXIT_BAD_USAGE 2

#define GNUPLOT_MISSING "bufsel: report --plot needs gnuplot (apt-get install gnuplot-nox)"

struct options {
	uint64_t margin;	/* percent, in millionths */
	uint64_t percentile;	/* in millionths */
	const char *plot;	/* output file, or NULL */
	const char *file;
};

/* What the report uses of one group of the file. */
struct group_row {
	uint64_t ring, bgid, provided, peak_in_use, selected, empty, capped, injected;
	uint64_t buf_len, peak_size, peak_out;
	bool has_buf_len, has_peak_size, has_peak_out;
	uint64_t ring_entries;	/* a buffer ring bufsel kept: its size; 0 for a legacy group */
	uint64_t bytes[HIST_BUCKETS], in_use[HIST_BUCKETS];
};

struct ring_row {
	uint64_t index, strays;
};

struct stats {
	bool has_pid;
	uint64_t pid;
	struct ring_row *rings;
	size_t nrings;
	struct group_row *groups;
	size_t ngroups;
};

/* ---- numbers as text ------------------------------------------------------- */

static char *fmt_u128(char buf[40], u128 v)
{
	char t[40];
	size_t n = 0;
	do {
		t[n++] = (char)('0' + (unsigned)(v % 10));
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		buf[i] = t[n - 1 - i];
	buf[n] = '\0';
	return buf;
}

/* v / 10^decimals in decimal, trailing zeros of the fraction dropped ("25", "12.5"). */
static char *fmt_scaled(char buf[48], u128 v, unsigned decimals)
{
	u128 scale = 1;
	for (unsigned i = 0; i < decimals; i++)
		scale *= 10;
	fmt_u128(buf, v / scale);
	u128 frac = v % scale;
	if (frac) {
		size_t n = strlen(buf);
		buf[n++] = '.';
		for (unsigned i = 0; i < decimals && frac; i++) {
			scale /= 10;
			buf[n++] = (char)('0' + (unsigned)(frac / scale));
			frac %= scale;
		}
		buf[n] = '\0';
	}
	return buf;
}

/* "29 B" below 1 KiB; else "1.5 KiB (1536 B)" or "3.0 MiB (3145728 B)", rounded to a tenth. */
static char *fmt_bytes(char buf[96], u128 v)
{
	char exact[40], whole[40];
	fmt_u128(exact, v);
	if (v < 1024) {
		snprintf(buf, 96, "%s B", exact);
		return buf;
	}
	unsigned shift = v < (u128)1 << 20 ? 10 : 20;
	u128 tenths = (v * 10 + ((u128)1 << (shift - 1))) >> shift;
	snprintf(buf, 96, "%s.%u %s (%s B)", fmt_u128(whole, tenths / 10), (unsigned)(tenths % 10),
		 shift == 10 ? "KiB" : "MiB", exact);
	return buf;
}

/*
 * A decimal "D[.D]" with at most 6 places, in millionths, at most max.
 * Exact: 12.5 is 12500000, never 12.4999.
 */
static int parse_micro(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0, digits = 0;
	for (; s[i] >= '0' && s[i] <= '9'; i++, digits++) {
		if (v > max / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (!digits || v > max / MICRO)
		return -1;
	v *= MICRO;
	if (s[i] == '.') {
		uint64_t scale = MICRO;
		i++;
		if (s[i] < '0' || s[i] > '9')
			return -1;
		for (; s[i] >= '0' && s[i] <= '9'; i++) {
			scale /= 10;
			if (!scale)
				return -1;
			v += (uint64_t)(s[i] - '0') * scale;
		}
	}
	if (s[i] || v > max)
		return -1;
	*out = v;
	return 0;
}

static uint64_t bucket_hi(unsigned b)
{
	return b ? ((uint64_t)1 << b) - 1 : 0;
}

/* A bucket as its range, "0", "1", "2-3", for the plot's axis. */
static void bucket_range(char buf[48], unsigned b)
{
	if (b <= 1)
		snprintf(buf, 48, "%u", b);
	else
		snprintf(buf, 48, "%" PRIu64 "-%" PRIu64, (uint64_t)1 << (b - 1), bucket_hi(b));
}

/*
 * The bucket holding the ceil(n * pct)-th smallest of the n values counted
 * (the first when that is 0), as pool/report.c ranks them; -1 when n is 0.
 */
static int percentile_bucket(const uint64_t *h, uint64_t pct_micro)
{
	u128 n = 0, seen = 0;
	for (unsigned b = 0; b < HIST_BUCKETS; b++)
		n += h[b];
	if (!n)
		return -1;
	u128 whole = (u128)100 * MICRO;
	u128 rank = (n * pct_micro + whole - 1) / whole;
	if (!rank)
		rank = 1;
	for (unsigned b = 0; b < HIST_BUCKETS; b++) {
		seen += h[b];
		if (seen >= rank)
			return (int)b;
	}
	return HIST_BUCKETS - 1;
}

/* ---- reading the file -------------------------------------------------------- */

static int read_file(const char *path, char **text, size_t *len, char *err, size_t errlen)
{
	/* parse_args sets the path whenever it lets report_run go on. */
	int fd = open(path, O_RDONLY | O_CLOEXEC); // NOLINT(clang-analyzer-core.NonNullParamChecker)
	if (fd < 0) {
		snprintf(err, errlen, "%s", strerror(errno));
		return -1;
	}
	struct stat st;
	if (!fstat(fd, &st) && S_ISDIR(st.st_mode)) {
		close(fd);
		snprintf(err, errlen, "is a directory");
		return -1;
	}
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (!buf) {
			snprintf(err, errlen, "out of memory");
			break;
		}
		if (n == cap) {
			/* Room for one byte past the limit tells a file at the limit from a longer one. */
			if (cap > MAX_FILE) {
				snprintf(err, errlen, "larger than %u MiB: not a statistics file", MAX_FILE >> 20);
				break;
			}
			size_t more_cap = cap * 2 > MAX_FILE ? MAX_FILE + 1 : cap * 2;
			char *more = realloc(buf, more_cap);
			if (!more) {
				snprintf(err, errlen, "out of memory");
				break;
			}
			buf = more;
			cap = more_cap;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(err, errlen, "%s", strerror(errno));
			break;
		}
		if (r == 0) {
			close(fd);
			*text = buf;
			*len = n;
			return 0;
		}
		n += (size_t)r;
	}
	free(buf);
	close(fd);
	return -1;
}

struct loader {
	const struct json_doc *doc;
	char *err;
	size_t errlen;
};

static const char *type_name(enum json_type t)
{
	static const char *const names[] = { "null", "false", "true", "a number", "a string", "an array",
					     "an object" };
	return names[t];
}

/* "PATH: what (line N)"; always -1. */
static int bad(struct loader *L, int node, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int bad(struct loader *L, int node, const char *path, const char *fmt, ...)
{
	size_t line, col;
	json_where(L->doc, node, &line, &col);
	int n = snprintf(L->err, L->errlen, "%s%s", path, *path ? ": " : "");
	if (n >= 0 && (size_t)n < L->errlen) {
		va_list ap;
		va_start(ap, fmt);
		int k = vsnprintf(L->err + n, L->errlen - (size_t)n, fmt, ap);
		va_end(ap);
		/* n and k are each below errlen: their int sum cannot overflow. */
		if (k >= 0 && (size_t)(n + k) < L->errlen) // NOLINT(bugprone-misplaced-widening-cast)
			snprintf(L->err + n + k, L->errlen - (size_t)(n + k), " (line %zu)", line);
	}
	return -1;
}

/*
 * The member of obj at a dotted name ("enobufs.empty"): its index; -2 when
 * optional and absent; -1 with the error set otherwise.
 */
static int member(struct loader *L, int obj, const char *path, const char *name, bool optional)
{
	const struct json_doc *d = L->doc;
	char seg[64];
	int node = obj;
	const char *s = name;
	for (;;) {
		const char *dot = strchr(s, '.');
		size_t n = dot ? (size_t)(dot - s) : strlen(s);
		snprintf(seg, sizeof(seg), "%.*s", (int)n, s);
		int m = json_member(d, node, seg);
		if (m == JSON_DUPLICATE)
			return bad(L, node, path, "\"%.*s\" given twice", (int)(s - name + (ptrdiff_t)n), name);
		if (m < 0) {
			if (optional)
				return -2;
			return bad(L, node, path, "no \"%.*s\"", (int)(s - name + (ptrdiff_t)n), name);
		}
		if (!dot)
			return m;
		if (d->nodes[m].type != JSON_OBJECT)
			return bad(L, m, path, "%.*s: %s, expected an object", (int)(s - name + (ptrdiff_t)n), name,
				   type_name(d->nodes[m].type));
		node = m;
		s = dot + 1;
	}
}

/* An integer member: 1 and *out set, 0 when optional and absent, -1 on error. */
static int get_u64(struct loader *L, int obj, const char *path, const char *name, bool optional, uint64_t max,
		   uint64_t *out)
{
	int m = member(L, obj, path, name, optional);
	if (m == -2)
		return 0;
	if (m < 0)
		return -1;
	if (json_u64(L->doc, m, out) || *out > max) {
		enum json_type t = L->doc->nodes[m].type;
		if (t != JSON_NUMBER)
			return bad(L, m, path, "%s: %s, expected an integer", name, type_name(t));
		return bad(L, m, path, "%s: %.*s is not an integer in 0..%" PRIu64, name,
			   (int)(L->doc->nodes[m].len > 40 ? 40 : L->doc->nodes[m].len), L->doc->nodes[m].text, max);
	}
	return 1;
}

static int get_hist(struct loader *L, int obj, const char *path, const char *name, uint64_t *out)
{
	const struct json_doc *d = L->doc;
	int m = member(L, obj, path, name, false);
	if (m < 0)
		return -1;
	if (d->nodes[m].type != JSON_ARRAY || d->nodes[m].count != HIST_BUCKETS)
		return bad(L, m, path, "%s: not an array of %d integers", name, HIST_BUCKETS);
	unsigned b = 0;
	for (int e = d->nodes[m].first; e >= 0; e = d->nodes[e].next, b++)
		if (json_u64(d, e, &out[b]))
			return bad(L, e, path, "%s[%u]: not an integer in 0..%" PRIu64, name, b, UINT64_MAX);
	return 0;
}

static int load_group(struct loader *L, int g, const char *path, uint64_t ring, struct group_row *row)
{
	const struct json_doc *d = L->doc;
	if (d->nodes[g].type != JSON_OBJECT)
		return bad(L, g, path, "%s, expected an object", type_name(d->nodes[g].type));
	memset(row, 0, sizeof(*row));
	row->ring = ring;
	int r;
	if (get_u64(L, g, path, "bgid", false, UINT16_MAX, &row->bgid) < 0 ||
	    get_u64(L, g, path, "provided", false, UINT64_MAX, &row->provided) < 0 ||
	    get_u64(L, g, path, "peak_in_use", false, UINT64_MAX, &row->peak_in_use) < 0 ||
	    get_u64(L, g, path, "selected", false, UINT64_MAX, &row->selected) < 0 ||
	    get_u64(L, g, path, "enobufs.empty", false, UINT64_MAX, &row->empty) < 0 ||
	    get_u64(L, g, path, "enobufs.capped", false, UINT64_MAX, &row->capped) < 0 ||
	    get_u64(L, g, path, "enobufs.injected", false, UINT64_MAX, &row->injected) < 0 ||
	    get_hist(L, g, path, "bytes_used.hist", row->bytes) < 0 ||
	    get_hist(L, g, path, "in_use_hist", row->in_use) < 0)
		return -1;
	/* A buffer's length is a 32-bit field of the SQE. */
	if ((r = get_u64(L, g, path, "buf_len", true, UINT32_MAX, &row->buf_len)) < 0)
		return -1;
	row->has_buf_len = r;
	if ((r = get_u64(L, g, path, "peak_size", true, UINT64_MAX, &row->peak_size)) < 0)
		return -1;
	row->has_peak_size = r;
	if ((r = get_u64(L, g, path, "peak_out", true, UINT64_MAX, &row->peak_out)) < 0)
		return -1;
	row->has_peak_out = r;
	if (get_u64(L, g, path, "ring_entries", true, 32768, &row->ring_entries) < 0)
		return -1;
	/* The figures an older bufsel wrote that come nearest: the buffers it
	 * provided, and those in use (its count of out ignores the ones the
	 * program held). */
	if (!row->has_peak_size)
		row->peak_size = row->provided;
	if (!row->has_peak_out)
		row->peak_out = row->peak_in_use;
	return 0;
}

static int load(struct stats *st, const struct json_doc *d, char *err, size_t errlen)
{
	struct loader L = { d, err, errlen };
	char path[64], gpath[96];
	memset(st, 0, sizeof(*st));
	if (d->nodes[0].type != JSON_OBJECT)
		return bad(&L, 0, "", "%s, expected an object with \"rings\": not a statistics file",
			   type_name(d->nodes[0].type));
	int r = get_u64(&L, 0, "", "pid", true, UINT64_MAX, &st->pid);
	if (r < 0)
		return -1;
	st->has_pid = r;
	int rings = member(&L, 0, "", "rings", false);
	if (rings < 0)
		return -1;
	if (d->nodes[rings].type != JSON_ARRAY)
		return bad(&L, rings, "rings", "%s, expected an array", type_name(d->nodes[rings].type));
	st->rings = calloc((size_t)d->nodes[rings].count + 1, sizeof(*st->rings));
	if (!st->rings)
		return bad(&L, rings, "rings", "out of memory");
	size_t groups_cap = 0;
	for (int ring = d->nodes[rings].first; ring >= 0; ring = d->nodes[ring].next) {
		snprintf(path, sizeof(path), "rings[%zu]", st->nrings);
		if (d->nodes[ring].type != JSON_OBJECT)
			return bad(&L, ring, path, "%s, expected an object", type_name(d->nodes[ring].type));
		struct ring_row *rr = &st->rings[st->nrings++];
		if (get_u64(&L, ring, path, "ring", false, UINT64_MAX, &rr->index) < 0 ||
		    get_u64(&L, ring, path, "strays", false, UINT64_MAX, &rr->strays) < 0)
			return -1;
		int groups = member(&L, ring, path, "groups", false);
		if (groups < 0)
			return -1;
		if (d->nodes[groups].type != JSON_ARRAY)
			return bad(&L, groups, path, "groups: %s, expected an array", type_name(d->nodes[groups].type));
		size_t i = 0;
		for (int g = d->nodes[groups].first; g >= 0; g = d->nodes[g].next, i++) {
			if (st->ngroups == groups_cap) {
				size_t cap = groups_cap ? 2 * groups_cap : 16;
				struct group_row *more = realloc(st->groups, cap * sizeof(*more));
				if (!more)
					return bad(&L, g, path, "out of memory");
				st->groups = more;
				groups_cap = cap;
			}
			snprintf(gpath, sizeof(gpath), "%s.groups[%zu]", path, i);
			if (load_group(&L, g, gpath, rr->index, &st->groups[st->ngroups]) < 0)
				return -1;
			st->ngroups++;
		}
	}
	return 0;
}

static void stats_free(struct stats *st)
{
	free(st->rings);
	free(st->groups);
	memset(st, 0, sizeof(*st));
}

/* ---- the recommendation ------------------------------------------------------ */

struct advice {
	u128 count;
	bool length_known;	/* false: no bytes recorded and no buf_len */
	bool no_bytes;		/* nothing recorded: the length is buf_len */
	uint64_t length;
	bool memory_known;	/* buf_len is known */
	bool saves;		/* now >= recommended */
	u128 difference;	/* |now - recommended|, bytes */
};

static void advise(const struct group_row *g, const struct options *o, struct advice *a)
{
	memset(a, 0, sizeof(*a));
	u128 whole = (u128)100 * MICRO;
	a->count = ((u128)g->peak_out * (whole + o->margin) + whole - 1) / whole;
	if (!a->count)
		a->count = 1;
	/* A ring's size is a power of two, below 65536. */
	if (g->ring_entries) {
		u128 n = 1;
		while (n < a->count && n < 32768)
			n <<= 1;
		a->count = n;
	}
	int b = percentile_bucket(g->bytes, o->percentile);
	if (b < 0) {
		a->no_bytes = true;
		a->length_known = g->has_buf_len;
		a->length = g->buf_len;
	} else {
		a->length_known = true;
		a->length = bucket_hi((unsigned)b);
		/* No delivery is longer than its buffer: a bucket reaching past
		 * buf_len says nothing about needing more. */
		if (g->has_buf_len && a->length > g->buf_len)
			a->length = g->buf_len;
		if (!a->length)
			a->length = 1;
	}
	a->memory_known = g->has_buf_len;
	if (a->memory_known) {
		u128 now = (u128)g->peak_size * g->buf_len, rec = a->count * a->length;
		a->saves = now >= rec;
		a->difference = a->saves ? now - rec : rec - now;
	}
}

/* ---- the text ---------------------------------------------------------------- */

enum { COL_RING, COL_BGID, COL_BUFFERS, COL_BUF_LEN, COL_PEAK_OUT, COL_SELECTED, COL_ENOBUFS, COL_P50, COL_P99,
       NCOLS };

static const char *const titles[NCOLS] = { "ring",     "bgid",		 "buffers",   "buf_len",  "peak out",
					   "selected", "-ENOBUFS e/c/i", "bytes p50", "bytes p99" };

typedef char cell[72];	/* the longest: three 20-digit counters and two '/' */

static void fill_row(cell *c, const struct group_row *g)
{
	snprintf(c[COL_RING], sizeof(cell), "%" PRIu64, g->ring);
	snprintf(c[COL_BGID], sizeof(cell), "%" PRIu64, g->bgid);
	snprintf(c[COL_BUFFERS], sizeof(cell), "%" PRIu64, g->peak_size);
	if (g->has_buf_len)
		snprintf(c[COL_BUF_LEN], sizeof(cell), "%" PRIu64, g->buf_len);
	else
		snprintf(c[COL_BUF_LEN], sizeof(cell), "?");
	snprintf(c[COL_PEAK_OUT], sizeof(cell), "%" PRIu64, g->peak_out);
	snprintf(c[COL_SELECTED], sizeof(cell), "%" PRIu64, g->selected);
	snprintf(c[COL_ENOBUFS], sizeof(cell), "%" PRIu64 "/%" PRIu64 "/%" PRIu64, g->empty, g->capped,
		 g->injected);
	int p50 = percentile_bucket(g->bytes, 50ull * MICRO), p99 = percentile_bucket(g->bytes, 99ull * MICRO);
	if (p50 < 0)
		snprintf(c[COL_P50], sizeof(cell), "-");
	else
		snprintf(c[COL_P50], sizeof(cell), "%" PRIu64, bucket_hi((unsigned)p50));
	if (p99 < 0)
		snprintf(c[COL_P99], sizeof(cell), "-");
	else
		snprintf(c[COL_P99], sizeof(cell), "%" PRIu64, bucket_hi((unsigned)p99));
}

static void print_cells(FILE *out, const cell *c, const size_t *width)
{
	for (int i = 0; i < NCOLS; i++)
		fprintf(out, "%s%*s", i ? "  " : "", (int)width[i], c[i]);
	fputc('\n', out);
}

static void print_table(FILE *out, const struct stats *st)
{
	size_t width[NCOLS];
	cell *rows = calloc(st->ngroups + 1, sizeof(cell) * NCOLS);
	cell head[NCOLS];
	for (int i = 0; i < NCOLS; i++) {
		snprintf(head[i], sizeof(cell), "%s", titles[i]);
		width[i] = strlen(titles[i]);
	}
	if (rows)
		for (size_t g = 0; g < st->ngroups; g++) {
			fill_row(rows + g * NCOLS, &st->groups[g]);
			for (int i = 0; i < NCOLS; i++)
				if (strlen(rows[g * NCOLS + i]) > width[i])
					width[i] = strlen(rows[g * NCOLS + i]);
		}
	print_cells(out, head, width);
	for (size_t g = 0; g < st->ngroups; g++) {
		cell one[NCOLS];
		if (rows) {
			print_cells(out, rows + g * NCOLS, width);
		} else {
			/* Out of memory for the whole table: each row in its own widths. */
			fill_row(one, &st->groups[g]);
			print_cells(out, one, width);
		}
	}
	free(rows);
}

static void print_legend(FILE *out, const struct stats *st)
{
	fputs("\n"
	      "buffers: the most the group had; buf_len: its longest buffer, in bytes;\n"
	      "peak out: the most buffers in use or held by the program at once;\n"
	      "-ENOBUFS e/c/i: selections refused because the group was empty / at its cap / by injection;\n"
	      "bytes p50, p99: the upper bound of the power-of-two bucket holding that percentile\n"
	      "of the bytes delivered in a buffer ('-': none recorded).\n",
	      out);
	bool no_len = false, no_size = false, no_out = false;
	for (size_t g = 0; g < st->ngroups; g++) {
		no_len |= !st->groups[g].has_buf_len;
		no_size |= !st->groups[g].has_peak_size;
		no_out |= !st->groups[g].has_peak_out;
	}
	if (no_len || no_size || no_out) {
		fputs("note: groups without", out);
		const char *sep = " ";
		if (no_size) {
			fprintf(out, "%speak_size", sep);
			sep = ", ";
		}
		if (no_out) {
			fprintf(out, "%speak_out", sep);
			sep = ", ";
		}
		if (no_len)
			fprintf(out, "%sbuf_len", sep);
		fputs(" (a file from an older bufsel):", out);
		sep = " ";
		if (no_size) {
			fprintf(out, "%sbuffers is the number provided", sep);
			sep = "; ";
		}
		if (no_out) {
			fprintf(out, "%speak out counts only buffers in use, not those the program held", sep);
			sep = "; ";
		}
		if (no_len)
			fprintf(out, "%sbuf_len is '?' and memory is not estimated", sep);
		fputs(".\n", out);
	}
	for (size_t r = 0; r < st->nrings; r++)
		if (st->rings[r].strays)
			fprintf(out,
				"warning: ring %" PRIu64 ": %" PRIu64 " strays (put-backs or deliveries that matched no "
				"buffer: a bufsel bug; the counts may be off)\n",
				st->rings[r].index, st->rings[r].strays);
}

static void print_advice(FILE *out, const struct stats *st, const struct options *o)
{
	char margin[48], factor[48], pct[48], n[40], len[40], now[40], bytes[96];
	fmt_scaled(margin, o->margin, 6);
	fmt_scaled(factor, (u128)100 * MICRO + o->margin, 8);
	fmt_scaled(pct, o->percentile, 6);
	fprintf(out,
		"\n"
		"recommendation (margin %s%%, percentile %s):\n"
		"count = ceil(peak out x %s), at least 1; length = bytes p%s, at most buf_len, at least 1\n"
		"(buf_len when no bytes were recorded); saves = buffers x buf_len - count x length.\n",
		margin, pct, factor, pct);
	for (size_t i = 0; i < st->ngroups; i++)
		if (st->groups[i].ring_entries) {
			fputs("A buffer ring's count is the power of two at or above it (at most 32768).\n", out);
			break;
		}
	u128 saved = 0, added = 0;
	size_t known = 0;
	for (size_t i = 0; i < st->ngroups; i++) {
		const struct group_row *g = &st->groups[i];
		struct advice a;
		advise(g, o, &a);
		fmt_u128(n, a.count);
		if (a.length_known)
			fmt_u128(len, a.length);
		else
			snprintf(len, sizeof(len), "?");
		if (g->has_buf_len)
			fmt_u128(now, g->buf_len);
		else
			snprintf(now, sizeof(now), "?");
		if (g->ring_entries)
			fprintf(out, "  ring %" PRIu64 " bgid %" PRIu64 ": a buffer ring of %s entr%s, buffers of %s bytes%s, now %" PRIu64 " entries, %" PRIu64 " buffers of %s: ",
				g->ring, g->bgid, n, a.count == 1 ? "y" : "ies", len,
				a.no_bytes ? " (no bytes recorded)" : "", g->ring_entries, g->peak_size, now);
		else
			fprintf(out, "  ring %" PRIu64 " bgid %" PRIu64 ": %s buffer%s of %s bytes%s, now %" PRIu64 " of %s: ",
				g->ring, g->bgid, n, a.count == 1 ? "" : "s", len,
				a.no_bytes ? " (no bytes recorded)" : "", g->peak_size, now);
		if (!a.memory_known) {
			fputs("memory not estimated (no buf_len)\n", out);
			continue;
		}
		known++;
		fmt_bytes(bytes, a.difference);
		if (a.saves) {
			saved += a.difference;
			fprintf(out, "saves %s\n", bytes);
		} else {
			added += a.difference;
			fprintf(out, "needs %s more\n", bytes);
		}
	}
	if (!known) {
		fputs("total: memory not estimated (no buf_len in the file)\n", out);
		return;
	}
	fmt_bytes(bytes, saved >= added ? saved - added : added - saved);
	fprintf(out, "total: %s %s%s", saved >= added ? "saves" : "needs", bytes, saved >= added ? "" : " more");
	if (known < st->ngroups)
		fprintf(out, " over %zu of %zu groups (the others have no buf_len)", known, st->ngroups);
	fputc('\n', out);
}

static void print_report(FILE *out, const struct stats *st, const struct options *o)
{
	fprintf(out, "bufsel report: %s", o->file);
	if (st->has_pid)
		fprintf(out, " (pid %" PRIu64 ")", st->pid);
	fprintf(out, ": %zu ring%s, %zu buffer group%s\n", st->nrings, st->nrings == 1 ? "" : "s", st->ngroups,
		st->ngroups == 1 ? "" : "s");
	if (!st->ngroups) {
		fputs("no legacy buffer groups: nothing to recommend\n", out);
		return;
	}
	fputc('\n', out);
	print_table(out, st);
	print_legend(out, st);
	print_advice(out, st, o);
}

/* ---- the plot ---------------------------------------------------------------- */

/*
 * gnuplot runs in a fresh directory of its own with relative names only, so
 * no path, however odd, is ever written into its script; the picture is
 * then copied to where the user asked.
 */
struct plot_dir {
	char path[4096];
	bool made;
};

static const char *const plot_files[] = { "in_use.dat", "bytes.dat", "plot.gp", "plot.svg", "plot.png" };

static void plot_dir_remove(struct plot_dir *pd)
{
	if (!pd->made)
		return;
	char f[4200];
	for (size_t i = 0; i < sizeof(plot_files) / sizeof(plot_files[0]); i++) {
		snprintf(f, sizeof(f), "%s/%s", pd->path, plot_files[i]);
		unlink(f);
	}
	rmdir(pd->path);
	pd->made = false;
}

static FILE *plot_open(const struct plot_dir *pd, const char *name)
{
	char f[4200];
	snprintf(f, sizeof(f), "%s/%s", pd->path, name);
	return fopen(f, "we");
}

/*
 * One histogram of every group as a data file: a row per bucket from the
 * lowest to the highest holding anything in any group, a column per group.
 * *max is the highest count, 0 when the histogram is empty everywhere.
 * Returns 0, or -1 on a write error.
 */
static int write_hist_data(FILE *f, const struct stats *st, bool bytes, uint64_t *max)
{
	int lo = -1, hi = -1;
	*max = 0;
	for (size_t g = 0; g < st->ngroups; g++) {
		const uint64_t *h = bytes ? st->groups[g].bytes : st->groups[g].in_use;
		for (int b = 0; b < HIST_BUCKETS; b++)
			if (h[b]) {
				if (lo < 0 || b < lo)
					lo = b;
				if (b > hi)
					hi = b;
				if (h[b] > *max)
					*max = h[b];
			}
	}
	if (lo < 0)
		lo = hi = bytes ? 0 : 1;	/* in use is at least 1 right after a selection */
	fputs("\"bucket\"", f);
	for (size_t g = 0; g < st->ngroups; g++)
		fprintf(f, " \"ring %" PRIu64 " bgid %" PRIu64 "\"", st->groups[g].ring, st->groups[g].bgid);
	fputc('\n', f);
	for (int b = lo; b <= hi; b++) {
		char range[48];
		bucket_range(range, (unsigned)b);
		fprintf(f, "\"%s\"", range);
		for (size_t g = 0; g < st->ngroups; g++)
			fprintf(f, " %" PRIu64, (bytes ? st->groups[g].bytes : st->groups[g].in_use)[b]);
		fputc('\n', f);
	}
	return ferror(f) ? -1 : 0;
}

static void script_panel(FILE *f, const char *data, const char *title, const char *xlabel, const char *ylabel,
			 uint64_t max, size_t ngroups)
{
	fprintf(f, "set title '%s%s'\n", title, max ? "" : " (no data)");
	fprintf(f, "set xlabel '%s'\nset ylabel '%s'\n", xlabel, ylabel);
	/* An all-zero histogram would leave gnuplot an empty y range to complain about. */
	if (max)
		fputs("set yrange [0:*]\n", f);
	else
		fputs("set yrange [0:1]\n", f);
	/* Counts are whole: small ones get a tic per count, not gnuplot's 0.5 steps. */
	fputs(max && max <= 10 ? "set ytics 1\n" : "set ytics autofreq\n", f);
	fprintf(f, "plot for [i=2:%zu] '%s' using i:xtic(1) title columnheader(i)\n", ngroups + 1, data);
}

static int write_script(FILE *f, const struct stats *st, bool svg, uint64_t max_in_use, uint64_t max_bytes)
{
	if (svg) {
		fputs("set terminal svg size 1000,1100 dynamic noenhanced font 'sans,11' background rgb 'white'\n"
		      "set output 'plot.svg'\n",
		      f);
	} else {
		/* pngcairo draws better, but a gnuplot built without cairo has only png. */
		fputs("if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
		      "    set terminal pngcairo size 1000,1100 noenhanced font 'sans,10' background rgb 'white'\n"
		      "} else {\n"
		      "    set terminal png size 1000,1100 noenhanced background rgb 'white'\n"
		      "}\n"
		      "set output 'plot.png'\n",
		      f);
	}
	fputs("set multiplot layout 2,1\n"
	      "set style data histograms\n"
	      "set style histogram clustered gap 1\n"
	      "set style fill solid 0.85 border -1\n"
	      "set key outside right top vertical noenhanced\n"
	      "set xtics nomirror rotate by 30 right\n"
	      "set ytics nomirror\n"
	      "set grid ytics\n",
	      f);
	script_panel(f, "in_use.dat", "Buffers in use right after each selection",
		     "buffers in use (power-of-two buckets)", "selections", max_in_use, st->ngroups);
	script_panel(f, "bytes.dat", "Bytes the program got per delivered buffer", "bytes (power-of-two buckets)",
		     "deliveries", max_bytes, st->ngroups);
	fputs("unset multiplot\n", f);
	return ferror(f) ? -1 : 0;
}

/* Runs gnuplot on plot.gp in dir: 0, or -1 with the problem on err. */
static int run_gnuplot(const char *dir, FILE *err)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	char *argv[] = { "gnuplot", "plot.gp", NULL };
	if (posix_spawn_file_actions_init(&fa)) {
		fprintf(err, "bufsel: report: --plot: out of memory\n");
		return -1;
	}
	/* gnuplot's stdout is not the report's: anything it says goes to stderr. */
	int r = posix_spawn_file_actions_addchdir_np(&fa, dir);
	if (!r)
		r = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (!r)
		r = posix_spawn_file_actions_adddup2(&fa, 2, 1);
	if (!r)
		r = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r == ENOENT) {
		fprintf(err, "%s\n", GNUPLOT_MISSING);
		return -1;
	}
	if (r) {
		fprintf(err, "bufsel: report: --plot: cannot run gnuplot: %s\n", strerror(r));
		return -1;
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			fprintf(err, "bufsel: report: --plot: waiting for gnuplot: %s\n", strerror(errno));
			return -1;
		}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status))
		fprintf(err, "bufsel: report: --plot: gnuplot failed (exit status %d)\n", WEXITSTATUS(status));
	else
		fprintf(err, "bufsel: report: --plot: gnuplot killed by signal %d (%s)\n", WTERMSIG(status),
			strsignal(WTERMSIG(status)));
	return -1;
}

/* Copies the picture gnuplot made to the user's file, refusing an empty one. */
static int copy_plot(const struct plot_dir *pd, const char *name, const char *dest, FILE *err)
{
	char src[4200], buf[65536];
	snprintf(src, sizeof(src), "%s/%s", pd->path, name);
	int in = open(src, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (in < 0 || fstat(in, &st) || st.st_size <= 0) {
		fprintf(err, "bufsel: report: --plot: gnuplot exited without writing a picture\n");
		if (in >= 0)
			close(in);
		return -1;
	}
	int out = open(dest, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (out < 0) {
		fprintf(err, "bufsel: report: %s: %s\n", dest, strerror(errno));
		close(in);
		return -1;
	}
	int ret = 0;
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n < 0) {
				fprintf(err, "bufsel: report: --plot: reading %s: %s\n", src, strerror(errno));
				ret = -1;
			}
			break;
		}
		for (ssize_t done = 0; done < n;) {
			ssize_t w = write(out, buf + done, (size_t)(n - done));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				fprintf(err, "bufsel: report: %s: %s\n", dest, strerror(errno));
				ret = -1;
				break;
			}
			done += w;
		}
		if (ret)
			break;
	}
	close(in);
	if (close(out) && !ret) {
		fprintf(err, "bufsel: report: %s: %s\n", dest, strerror(errno));
		ret = -1;
	}
	return ret;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n > k && !strcasecmp(s + n - k, suffix);
}

static int plot(const struct stats *st, const struct options *o, FILE *err)
{
	bool svg = ends_with(o->plot, ".svg");
	if (!st->ngroups) {
		fprintf(err, "bufsel: report: --plot: %s has no buffer groups to draw\n", o->file);
		return -1;
	}
	struct plot_dir pd = { .made = false };
	const char *tmp = getenv("TMPDIR");
	if (!tmp || tmp[0] != '/')
		tmp = "/tmp";
	snprintf(pd.path, sizeof(pd.path), "%s/bufsel-report-XXXXXX", tmp);
	if (!mkdtemp(pd.path)) {
		fprintf(err, "bufsel: report: --plot: cannot make a directory in %s: %s\n", tmp, strerror(errno));
		return -1;
	}
	pd.made = true;
	int ret = -1;
	uint64_t max_in_use = 0, max_bytes = 0;
	errno = 0;
	FILE *f1 = plot_open(&pd, "in_use.dat"), *f2 = plot_open(&pd, "bytes.dat"), *f3 = plot_open(&pd, "plot.gp");
	bool ok = f1 && f2 && f3 && !write_hist_data(f1, st, false, &max_in_use) &&
		  !write_hist_data(f2, st, true, &max_bytes) && !write_script(f3, st, svg, max_in_use, max_bytes);
	int e = errno;
	/* A full disk may show only when the buffers are written out. */
	FILE *files[] = { f1, f2, f3 };
	for (int i = 0; i < 3; i++)
		if (files[i] && fclose(files[i]) && ok) {
			ok = false;
			e = errno;
		}
	if (!ok)
		fprintf(err, "bufsel: report: --plot: cannot write gnuplot's files in %s: %s\n", pd.path,
			e ? strerror(e) : "write error");
	else if (!run_gnuplot(pd.path, err))
		ret = copy_plot(&pd, svg ? "plot.svg" : "plot.png", o->plot, err);
	plot_dir_remove(&pd);
	return ret;
}

/* ---- the command --------------------------------------------------------------- */

static void usage(FILE *out)
{
	fputs("Usage: bufsel report [--margin PCT] [--percentile P] [--plot OUT.svg|OUT.png] STATS.json\n"
	      "\n"
	      "Reads the statistics a program wrote under bufsel with BUFSEL_STATS=STATS.json\n"
	      "(docs/stats-schema.md) and prints a line per buffer group, then how many buffers\n"
	      "of what length each group needs and the memory that would save:\n"
	      "  count  = ceil(peak out x (1 + PCT/100)), at least 1, where peak out is the\n"
	      "           most buffers in use or held by the program at once;\n"
	      "  length = the upper bound of the power-of-two bucket holding the P-th\n"
	      "           percentile of the bytes delivered per buffer, at most the group's\n"
	      "           buffer length, at least 1 (that length when none were recorded).\n"
	      "\n"
	      "Options:\n"
	      "  --margin PCT      headroom over peak out, in percent (default 25; 0..10000)\n"
	      "  --percentile P    percentile of the bytes used (default 99; above 0, at most 100)\n"
	      "  --plot OUT        draw the in-use and bytes-used histograms of every group with\n"
	      "                    gnuplot: SVG for a name ending in .svg, PNG for .png\n"
	      "  -h, --help        print this help and exit\n"
	      "\n"
	      "Exit status: 0; 1 when STATS.json cannot be read or is not a statistics file,\n"
	      "or the plot fails; 2 for a bad command line.\n",
	      out);
}

static int usage_error(FILE *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int usage_error(FILE *err, const char *fmt, ...)
{
	va_list ap;
	fputs("bufsel: report: ", err);
	va_start(ap, fmt);
	vfprintf(err, fmt, ap);
	va_end(ap);
	fputs(" (bufsel report --help)\n", err);
	return EXIT_BAD_USAGE;
}

/* Parses argv into *o: -1 to go on, else the exit status to return. */
static int parse_args(int argc, char **argv, struct options *o, FILE *out, FILE *err)
{
	bool options_done = false;
	*o = (struct options){ .margin = DEFAULT_MARGIN, .percentile = DEFAULT_PERCENTILE };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (options_done || a[0] != '-' || !a[1]) {
			if (o->file)
				return usage_error(err, "one statistics file, but '%s' follows '%s'", a, o->file);
			o->file = a;
			continue;
		}
		if (!strcmp(a, "--")) {
			options_done = true;
			continue;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(out);
			return 0;
		}
		const char *eq = strchr(a, '=');
		size_t klen = eq ? (size_t)(eq - a) : strlen(a);
		const char *names[] = { "--margin", "--percentile", "--plot" };
		int which = -1;
		for (int k = 0; k < 3; k++)
			if (strlen(names[k]) == klen && !strncmp(a, names[k], klen))
				which = k;
		if (which < 0)
			return usage_error(err, "unknown option '%.*s'", (int)klen, a);
		const char *val = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
		if (!val || !*val)
			return usage_error(err, "%s needs a value", names[which]);
		if (which == 0 && parse_micro(val, MAX_MARGIN, &o->margin))
			return usage_error(err, "--margin: '%s' is not a percentage in 0..10000 (at most 6 decimals)",
					   val);
		if (which == 1 && (parse_micro(val, 100ull * MICRO, &o->percentile) || !o->percentile))
			return usage_error(err,
					   "--percentile: '%s' is not a number above 0 and at most 100 (at most 6 "
					   "decimals)",
					   val);
		if (which == 2) {
			if (!ends_with(val, ".svg") && !ends_with(val, ".png"))
				return usage_error(err, "--plot: '%s' should end in .svg or .png", val);
			o->plot = val;
		}
	}
	if (!o->file)
		return usage_error(err, "no statistics file given");
	return -1;
}

int report_run(int argc, char **argv, FILE *out, FILE *err)
{
	struct options o;
	int status = parse_args(argc, argv, &o, out, err);
	if (status >= 0)
		return status;

	char *text = NULL, problem[512];
	size_t len = 0;
	struct json_doc doc;
	struct stats st;
	if (read_file(o.file, &text, &len, problem, sizeof(problem))) {
		fprintf(err, "bufsel: report: %s: %s\n", o.file, problem);
		return EXIT_BAD_FILE;
	}
	if (json_parse(&doc, text, len, problem, sizeof(problem))) {
		fprintf(err, "bufsel: report: %s: not JSON: %s\n", o.file, problem);
		free(text);
		return EXIT_BAD_FILE;
	}
	if (load(&st, &doc, problem, sizeof(problem))) {
		fprintf(err, "bufsel: report: %s: %s\n", o.file, problem);
		stats_free(&st);
		json_free(&doc);
		free(text);
		return EXIT_BAD_FILE;
	}
	json_free(&doc);
	free(text);

	print_report(out, &st, &o);
	status = 0;
	if (fflush(out) || ferror(out)) {
		fprintf(err, "bufsel: report: writing the report: %s\n", strerror(errno));
		status = EXIT_BAD_FILE;
	} else if (o.plot && plot(&st, &o, err)) {
		status = EXIT_BAD_FILE;
	}
	stats_free(&st);
	return status;
}

int report_main(int argc, char **argv)
{
	return report_run(argc, argv, stdout, stderr);
}
