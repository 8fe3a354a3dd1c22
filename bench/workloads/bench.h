/*
 * What every workload needs besides io_uring: failing loudly, a clock, the
 * process's CPU time, a big enough descriptor limit.
 *
 * A workload is an ordinary program: the same binary runs natively and under
 * bufsel, and its stdout holds only "bench: name=value ..." lines (read by
 * `bufsel ab`) and free text lines that do not start with "bench:".
 * Everything that goes wrong is said on stderr and ends the run non-zero:
 * a benchmark that delivered a wrong byte has no result.
 */
#ifndef BUFSEL_BENCH_BENCH_H
#define BUFSEL_BENCH_BENCH_H

#include <stddef.h>
#include <stdint.h>

/* The program's name for messages; set once in main from argv[0]. */
void bench_init(const char *argv0);
const char *bench_name(void);

__attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...);
/* Like die() with ": strerror(err)" appended; err may be negative (-errno). */
__attribute__((noreturn, format(printf, 2, 3))) void die_err(int err, const char *fmt, ...);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t now_ns(void);

/* The process's user+system CPU time so far (all threads), in microseconds. */
double cpu_us(void);

/*
 * Makes sure at least `need` descriptors can be open: raises the soft limit
 * (to the hard limit, or beyond it when the process may), or fails with a
 * message that says how many are needed and what the limits are.
 */
void nofile_at_least(unsigned long need);

/* Reads exactly len bytes (a pipe record); 0 on success, -1 at EOF before any byte. */
int read_full(int fd, void *buf, size_t len);
void write_full(int fd, const void *buf, size_t len);

#endif
