/*
 * The bufsel arms' statistics files (ab_pool_stats.h).  A file that cannot
 * be read or is not a statistics file is warned about and kept with its
 * error, so the JSON can still list it; the others are kept whole for the
 * JSON, and summarized per buffer group for the report.
 */
#define _GNU_SOURCE
#include "launcher/ab_pool_stats.h"

#include "launcher/ab_messages.h"
#include "launcher/json.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define AB_STATS_MAX (16u << 20)	/* far above any statistics file */

static int read_whole(const char *path, char **text, size_t *len, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st)) {
		snprintf(err, errlen, "%s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > AB_STATS_MAX) {
		snprintf(err, errlen, "not a regular file of at most %u MiB", AB_STATS_MAX >> 20);
		close(fd);
		return -1;
	}
	size_t cap = (size_t)st.st_size + 1, n = 0;
	char *buf = ab_xcalloc(cap, 1);
	for (;;) {
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(err, errlen, "%s", strerror(errno));
			free(buf);
			close(fd);
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n == cap) {
			snprintf(err, errlen, "grew while being read");
			free(buf);
			close(fd);
			return -1;
		}
	}
	close(fd);
	*text = buf;
	*len = n;
	return 0;
}

/* The integer at a dotted path below obj ("enobufs.empty"); false when absent or not one. */
static bool get_u64(const struct json_doc *d, int obj, const char *path, uint64_t *out)
{
	char seg[64];
	int node = obj;
	for (const char *s = path;;) {
		size_t n = strcspn(s, ".");
		if (d->nodes[node].type != JSON_OBJECT)
			return false;
		snprintf(seg, sizeof(seg), "%.*s", (int)n, s);
		node = json_member(d, node, seg);
		if (node < 0)
			return false;
		if (!s[n])
			return !json_u64(d, node, out);
		s += n + 1;
	}
}

static void add_group(struct arm *a, const struct group_summary *g)
{
	struct group_summary *more = realloc(a->groups, (a->ngroups + 1) * sizeof(*more));
	if (!more)
		ab_fatal("out of memory");
	a->groups = more;
	a->groups[a->ngroups++] = *g;
}

/* Reads one statistics file into the arm's groups; false with f->error set when it is not one. */
static bool summarize(struct arm *a, struct stats_file *f)
{
	struct json_doc doc;
	char err[256];
	if (json_parse(&doc, f->text, f->len, err, sizeof(err))) {
		snprintf(f->error, sizeof(f->error), "not JSON: %s", err);
		return false;
	}
	struct group_summary g = { 0 };
	g.has_pid = get_u64(&doc, 0, "pid", &g.pid);
	int rings = doc.nodes[0].type == JSON_OBJECT ? json_member(&doc, 0, "rings") : -1;
	bool ok = rings >= 0 && doc.nodes[rings].type == JSON_ARRAY;
	for (int r = ok ? doc.nodes[rings].first : -1; ok && r >= 0; r = doc.nodes[r].next) {
		int groups = doc.nodes[r].type == JSON_OBJECT ? json_member(&doc, r, "groups") : -1;
		ok = groups >= 0 && doc.nodes[groups].type == JSON_ARRAY && get_u64(&doc, r, "ring", &g.ring) &&
		     get_u64(&doc, r, "strays", &g.strays);
		for (int e = ok ? doc.nodes[groups].first : -1; ok && e >= 0; e = doc.nodes[e].next) {
			ok = get_u64(&doc, e, "bgid", &g.bgid) && get_u64(&doc, e, "selected", &g.selected) &&
			     get_u64(&doc, e, "enobufs.empty", &g.empty) &&
			     get_u64(&doc, e, "enobufs.capped", &g.capped) &&
			     get_u64(&doc, e, "enobufs.injected", &g.injected);
			/* Older files lack these: the nearest figures they have (as bufsel report). */
			if (ok && !get_u64(&doc, e, "peak_size", &g.buffers))
				ok = get_u64(&doc, e, "provided", &g.buffers);
			if (ok && !get_u64(&doc, e, "peak_out", &g.peak_out))
				ok = get_u64(&doc, e, "peak_in_use", &g.peak_out);
			if (ok && !get_u64(&doc, e, "buf_len", &g.buf_len))
				g.buf_len = 0;
			if (ok)
				add_group(a, &g);
		}
	}
	json_free(&doc);
	if (!ok)
		snprintf(f->error, sizeof(f->error), "not a bufsel statistics file (docs/stats-schema.md)");
	return ok;
}

static int cmp_name(const void *a, const void *b)
{
	const struct stats_file *x = a, *y = b;
	size_t lx = strlen(x->name), ly = strlen(y->name);
	/* The names are pids: shorter is smaller. */
	return lx != ly ? (lx < ly ? -1 : 1) : strcmp(x->name, y->name);
}

void ab_read_stats(struct arm *a)
{
	DIR *d = opendir(a->stats_dir);
	if (!d)
		ab_fatal(a->stats_dir);
	for (struct dirent *e; (e = readdir(d));) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		struct stats_file *more = realloc(a->files, (a->nfiles + 1) * sizeof(*more));
		if (!more)
			ab_fatal("out of memory");
		a->files = more;
		struct stats_file *f = &a->files[a->nfiles++];
		memset(f, 0, sizeof(*f));
		snprintf(f->name, sizeof(f->name), "%s", e->d_name);
	}
	closedir(d);
	if (a->nfiles)
		qsort(a->files, a->nfiles, sizeof(*a->files), cmp_name);
	for (size_t i = 0; i < a->nfiles; i++) {
		struct stats_file *f = &a->files[i];
		char path[PATH_MAX + 256], err[256];
		snprintf(path, sizeof(path), "%s/%s", a->stats_dir, f->name);
		if (read_whole(path, &f->text, &f->len, err, sizeof(err)))
			snprintf(f->error, sizeof(f->error), "%s", err);
		else if (!summarize(a, f)) {
			free(f->text);
			f->text = NULL;
		}
		if (f->error[0])
			ab_warn("%s arm: the statistics file of the last round, %s: %s", a->def->name, f->name, f->error);
	}
}

uint64_t ab_held_bytes(const struct group_summary *g)
{
	return g->buf_len && g->peak_out > UINT64_MAX / g->buf_len ? UINT64_MAX : g->peak_out * g->buf_len;
}
