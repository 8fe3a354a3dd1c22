#!/bin/sh
# Runs build/bench/enter_cost natively, under bufsel, under bufsel without
# site patching (BUFSEL_PATCH=off: every inline call traps) and under bufsel
# in passthrough mode, ROUNDS times interleaved (the modes alternate so that
# machine noise spreads over all three), prints every line with its mode and
# round, then one summary line per mode and variant: the median of the
# rounds' medians, and their minimum and maximum.  Usage, from the project
# root, after `make` and the build line at the top of bench/enter_cost.c:
#   sh bench/enter_cost.sh [ROUNDS [N]]
set -eu
ROUNDS=${1:-5}
N=${2:-200000}
LIB=$PWD/build/libbufsel.so
BIN=build/bench/enter_cost
ALL=$(mktemp)
r=1
while [ "$r" -le "$ROUNDS" ]; do
	$BIN "$N" | sed "s/^/mode=native round=$r /"
	env LD_PRELOAD="$LIB" $BIN "$N" | sed "s/^/mode=bufsel round=$r /"
	env BUFSEL_PATCH=off LD_PRELOAD="$LIB" $BIN "$N" | sed "s/^/mode=trap round=$r /"
	env BUFSEL_MODE=passthrough LD_PRELOAD="$LIB" $BIN "$N" | sed "s/^/mode=passthrough round=$r /"
	r=$((r + 1))
done | tee "$ALL"
for v in $(sed -n 's/.*variant=\([^ ]*\).*/\1/p' "$ALL" | awk '!seen[$0]++'); do
	for m in native bufsel trap passthrough; do
		grep "^mode=$m .* variant=$v " "$ALL" | sed 's/.*ns_per_op=\([0-9.]*\).*/\1/' | sort -n |
			awk -v m="$m" -v v="$v" '{ x[NR] = $1 }
				END { if (NR) printf "summary variant=%s mode=%s median=%.0f min=%.0f max=%.0f rounds=%d\n",
					v, m, (NR % 2 ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2), x[1], x[NR], NR }'
	done
done
rm -f "$ALL"
