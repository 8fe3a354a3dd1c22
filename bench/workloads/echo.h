/*
 * What the echo server (echo.c) and its load generator (echo_client.c) say
 * to each other over a pipe, generator to server: a START record when the
 * warm-up is over and the measurement begins, an END record with the
 * results when it is over (the server times its own CPU between the two).
 */
#ifndef BUFSEL_BENCH_ECHO_H
#define BUFSEL_BENCH_ECHO_H

#include <stdint.h>

enum echo_record_kind { ECHO_START = 1, ECHO_END = 2 };

struct echo_record {
	uint32_t kind;
	uint32_t conns;
	uint64_t msgs;	     /* messages echoed and checked inside the measurement */
	uint64_t elapsed_ns; /* the measurement's length */
	double p50_ns, p90_ns, p99_ns, p999_ns;
};

/* Message seq of connection conn holds the pattern from pattern_pos(conn, seq) on. */

#endif
