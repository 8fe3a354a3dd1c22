/*
 * A latency histogram in nanoseconds: 64 buckets per power of two, so a
 * percentile is within 1/64 (1.6%) of the true value, with constant memory
 * however many samples a run takes.
 */
#ifndef BUFSEL_BENCH_LATENCY_H
#define BUFSEL_BENCH_LATENCY_H

#include <stdint.h>

#define LAT_SUB_BITS 6
#define LAT_BUCKETS ((64 - LAT_SUB_BITS + 1) << LAT_SUB_BITS)

struct latency {
	uint64_t count;
	uint64_t bucket[LAT_BUCKETS];
};

void latency_add(struct latency *l, uint64_t ns);

/* The p-th percentile (0 < p <= 100) in nanoseconds: the middle of its bucket; 0 without samples. */
double latency_percentile(const struct latency *l, double p);

#endif
