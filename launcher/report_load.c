/*
 * Reading a statistics file for `bufsel report` (report_load.h).
 *
 * The file is read whole (bounded), checked by the strict reader of json.h,
 * and then checked for the fields this report uses, so that a truncated or
 * foreign file gives one line naming the problem instead of a table of
 * zeros.  Fields the report does not use are ignored, as the schema asks of
 * readers.  Files from before the group fields buf_len, peak_size and
 * peak_out are read too, with the nearest older figure in their place.
 */
#define _GNU_SOURCE
#include "launcher/report_load.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILE (64u << 20)		/* far above any real statistics file */

int report_read_file(const char *path, char **text, size_t *len, char *err, size_t errlen)
{
	/* report_parse_args sets the path whenever it lets report_run go on. */
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

int report_load(struct stats *st, const struct json_doc *d, char *err, size_t errlen)
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

void report_stats_free(struct stats *st)
{
	free(st->rings);
	free(st->groups);
	memset(st, 0, sizeof(*st));
}
