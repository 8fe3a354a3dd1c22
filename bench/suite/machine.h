/*
 * The machine the suite ran on, for the report: kernel, CPU, CPU count,
 * date, and the load average, which is read at the start and again at the
 * end so a report shows whether something else was running.
 */
#ifndef BUFSEL_BENCH_SUITE_MACHINE_H
#define BUFSEL_BENCH_SUITE_MACHINE_H

#include <stddef.h>

void suite_loadavg(char *buf, size_t len);
void suite_machine(void);

#endif
