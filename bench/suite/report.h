/*
 * The report: OUT/latest.json (the machine, the settings, every ab result
 * whole, the idle figures, the bars) and OUT/latest.md (the ratio table,
 * the echo trap share, the idle figures, the bars, what was not measured).
 */
#ifndef BUFSEL_BENCH_SUITE_REPORT_H
#define BUFSEL_BENCH_SUITE_REPORT_H

void suite_write_json(void);
void suite_write_md(void);

#endif
