/*
 * The bytes every workload sends, writes and checks: one pseudo-random
 * stream with a period of PATTERN_PERIOD bytes, a prime. Any run of up to
 * `max_len` bytes of it starting anywhere is contiguous in memory, so a
 * writer sends straight from the table and a reader checks with memcmp.
 *
 * Because the period is prime, two block-aligned positions that differ by
 * less than 4096 x PATTERN_PERIOD bytes (4 GiB) never show the same bytes:
 * data read from the wrong offset, message or connection does not pass.
 */
#ifndef BUFSEL_BENCH_PATTERN_H
#define BUFSEL_BENCH_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#define PATTERN_PERIOD 1048573u

/* Builds the table once; max_len is the longest run pattern_at() will be asked for. */
void pattern_init(size_t max_len);

/* The stream's bytes from position pos on (pos taken modulo the period). */
const unsigned char *pattern_at(uint64_t pos);

/* A position for message `seq` of stream `stream` (a connection, a pipe). */
uint64_t pattern_pos(uint64_t stream, uint64_t seq);

/*
 * Checks that buf holds the len bytes of the stream at pos; on a mismatch
 * fails the program, naming `what` and the first wrong byte.
 */
void pattern_check(const void *buf, size_t len, uint64_t pos, const char *what);

#endif
