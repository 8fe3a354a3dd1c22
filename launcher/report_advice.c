/*
 * The recommendation (report_advice.h): as many buffers as were ever out at
 * once plus a margin, each as long as the P-th percentile of the bytes a
 * delivery used.
 *
 * All arithmetic is in integers (128-bit where products of 64-bit counters
 * meet), percentages in millionths: the output is exact and the same on
 * every machine, which the tests rely on.
 */
#include "launcher/report_advice.h"

#include <string.h>

uint64_t report_bucket_hi(unsigned b)
{
	return b ? ((uint64_t)1 << b) - 1 : 0;
}

/*
 * The bucket holding the ceil(n * pct)-th smallest of the n values counted
 * (the first when that is 0), as pool/report.c ranks them; -1 when n is 0.
 */
int report_percentile_bucket(const uint64_t *h, uint64_t pct_micro)
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

void report_advise(const struct group_row *g, const struct options *o, struct advice *a)
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
	int b = report_percentile_bucket(g->bytes, o->percentile);
	if (b < 0) {
		a->no_bytes = true;
		a->length_known = g->has_buf_len;
		a->length = g->buf_len;
	} else {
		a->length_known = true;
		a->length = report_bucket_hi((unsigned)b);
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
