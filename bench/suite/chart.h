/*
 * The charts, drawn by gnuplot: OUT/latest.svg, every charted workload's
 * throughput ratio to native per arm (native2, the noise floor, first), and
 * OUT/latest-latency.svg, the round trip's p50, p90, p99 and p99.9 per echo
 * workload and arm.  0 when both were written.
 */
#ifndef BUFSEL_BENCH_SUITE_CHART_H
#define BUFSEL_BENCH_SUITE_CHART_H

int suite_write_chart(void);

#endif
