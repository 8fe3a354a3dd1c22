#!/bin/sh
# Trap cost by mechanism (docs/interception.md, "Syscall User Dispatch against
# the seccomp filter"): ROUNDS rounds (default 7) of build/bench/enter_cost in
# five modes, interleaved: native, Syscall User Dispatch and the seccomp
# filter with every inline enter trapped (BUFSEL_PATCH=off), and both with
# site patching.  One line per run: mode, variant, ns per operation.  From
# the project root, after `make` and the build line of bench/enter_cost.c.
set -eu
L=$PWD/build/libbufsel.so
E=$PWD/build/bench/enter_cost
for r in $(seq 1 ${1:-7}); do
  for v in liburing getppid libc_syscall; do
    echo "native $v $($E 100000 $v | sed -E 's/.*ns_per_op=([0-9.]+).*/\1/')"
    echo "dispatch-trap $v $(env LD_PRELOAD=$L BUFSEL_PATCH=off $E 100000 $v | sed -E 's/.*ns_per_op=([0-9.]+).*/\1/')"
    echo "seccomp-trap $v $(env LD_PRELOAD=$L BUFSEL_PATCH=off BUFSEL_TRAP=seccomp $E 100000 $v | sed -E 's/.*ns_per_op=([0-9.]+).*/\1/')"
    echo "dispatch $v $(env LD_PRELOAD=$L $E 100000 $v | sed -E 's/.*ns_per_op=([0-9.]+).*/\1/')"
    echo "seccomp $v $(env LD_PRELOAD=$L BUFSEL_TRAP=seccomp $E 100000 $v | sed -E 's/.*ns_per_op=([0-9.]+).*/\1/')"
  done
done
