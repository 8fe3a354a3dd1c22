/*
 * Starting a workload's load generator: a sibling program (next to
 * /proc/self/exe) run with LD_PRELOAD and every BUFSEL_* variable removed
 * from its environment, so that under bufsel only the server is measured.
 *
 * bufsel's seccomp filter is inherited over exec and cannot be removed; it
 * traps only io_uring calls and MAP_SHARED|MAP_POPULATE mappings, so a load
 * generator must use plain sockets, poll and epoll (the clients here do).
 */
#ifndef BUFSEL_BENCH_SPAWN_H
#define BUFSEL_BENCH_SPAWN_H

#include <sys/types.h>

/*
 * Forks and execs the sibling `prog` with argv (argv[0] is filled in; the
 * array ends with NULL). Every descriptor the child gets beyond 0-2 must be
 * listed in keep_fds (they lose FD_CLOEXEC in the child); the caller's others
 * should be close-on-exec. Returns the child's pid.
 */
pid_t spawn_sibling(const char *prog, char **argv, const int *keep_fds, unsigned nkeep);

/* Waits for the child and fails the program unless it exited with status 0. */
void spawn_wait(pid_t pid, const char *prog);

#endif
