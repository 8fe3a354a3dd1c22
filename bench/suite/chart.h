/*
 * The chart: OUT/latest.svg, every charted workload's throughput ratio to
 * native per bufsel arm, drawn by gnuplot.  0 when it was written.
 */
#ifndef BUFSEL_BENCH_SUITE_CHART_H
#define BUFSEL_BENCH_SUITE_CHART_H

int suite_write_chart(void);

#endif
