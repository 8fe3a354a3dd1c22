/*
 * A statistics file (docs/stats-schema.md) as `bufsel report` uses it: read
 * whole, parsed, and loaded into struct stats, with one line naming the
 * first problem when it is not a statistics file.
 */
#ifndef BUFSEL_LAUNCHER_REPORT_LOAD_H
#define BUFSEL_LAUNCHER_REPORT_LOAD_H

#include "launcher/json.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HIST_BUCKETS 33			/* docs/stats-schema.md: always 33 entries */

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

/* The file at path, whole, into a new *text: 0, or -1 with the problem in err. */
int report_read_file(const char *path, char **text, size_t *len, char *err, size_t errlen);
/* What the report uses of the parsed file d: 0, or -1 with the problem in err; report_stats_free() either way. */
int report_load(struct stats *st, const struct json_doc *d, char *err, size_t errlen);
void report_stats_free(struct stats *st);

#endif
