/*
 * The recommendation of `bufsel report` for one buffer group: how many
 * buffers of what length, and what that saves against what the group had;
 * and the histogram buckets (docs/stats-schema.md) it is worked out from.
 */
#ifndef BUFSEL_LAUNCHER_REPORT_ADVICE_H
#define BUFSEL_LAUNCHER_REPORT_ADVICE_H

#include "launcher/report_load.h"
#include "launcher/report_options.h"

#include <stdbool.h>
#include <stdint.h>

typedef unsigned __int128 u128;

struct advice {
	u128 count;
	bool length_known;	/* false: no bytes recorded and no buf_len */
	bool no_bytes;		/* nothing recorded: the length is buf_len */
	uint64_t length;
	bool memory_known;	/* buf_len is known */
	bool saves;		/* now >= recommended */
	u128 difference;	/* |now - recommended|, bytes */
};

/* The largest value bucket b of a histogram counts. */
uint64_t report_bucket_hi(unsigned b);
int report_percentile_bucket(const uint64_t *h, uint64_t pct_micro);
void report_advise(const struct group_row *g, const struct options *o, struct advice *a);

#endif
