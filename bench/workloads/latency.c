#include "bench/workloads/latency.h"

#include <math.h>

/* Values below 2^LAT_SUB_BITS have a bucket each; above, 64 per power of two. */
static unsigned bucket_of(uint64_t v)
{
	if (v < (1u << LAT_SUB_BITS))
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v);
	unsigned sub = (unsigned)(v >> (e - LAT_SUB_BITS)) & ((1u << LAT_SUB_BITS) - 1);
	return ((e - LAT_SUB_BITS + 1) << LAT_SUB_BITS) + sub;
}

static double bucket_mid(unsigned b)
{
	if (b < (1u << LAT_SUB_BITS))
		return b;
	unsigned e = (b >> LAT_SUB_BITS) + LAT_SUB_BITS - 1;
	unsigned sub = b & ((1u << LAT_SUB_BITS) - 1);
	double width = ldexp(1.0, (int)(e - LAT_SUB_BITS));
	return ldexp(1.0, (int)e) + sub * width + width / 2;
}

void latency_add(struct latency *l, uint64_t ns)
{
	l->bucket[bucket_of(ns)]++;
	l->count++;
}

double latency_percentile(const struct latency *l, double p)
{
	if (l->count == 0)
		return 0;
	uint64_t rank = (uint64_t)ceil(p / 100.0 * (double)l->count);
	if (rank < 1)
		rank = 1;
	uint64_t seen = 0;
	for (unsigned b = 0; b < LAT_BUCKETS; b++) {
		seen += l->bucket[b];
		if (seen >= rank)
			return bucket_mid(b);
	}
	return bucket_mid(LAT_BUCKETS - 1);
}
