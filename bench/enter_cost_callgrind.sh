#!/bin/sh
# User-space instructions per operation of enter_cost's variants under
# callgrind, natively and through bufsel's libc hooks (see
# bench/callgrind_activate.c for why a helper is needed and why the trap path
# cannot be measured this way).  Each count is (Ir at 2N - Ir at N) / N with
# ENTER_COST_RUNS=1, so start-up and ring setup cancel out.  Usage, from the
# project root, after `make` and the build lines in the two .c files:
#   sh bench/enter_cost_callgrind.sh [N [MODE:VARIANT ...]]
# MODE is native, bufsel or passthrough; the default list is below.
set -eu
N=${1:-20000}
[ $# -gt 0 ] && shift
SPECS=${*:-"native:liburing native:libc_syscall native:libc_all native:dup_close
	bufsel:libc_syscall bufsel:libc_all bufsel:dup_close
	passthrough:libc_syscall passthrough:libc_all"}
N2=$((N * 2))
BIN=build/bench/enter_cost
LIB=$PWD/build/libbufsel.so
HELPER=$PWD/build/bench/callgrind_activate.so
OFF=0x$(nm build/libbufsel.so | awk '$3 == "bufsel" { print $1 }')
TOOL=/usr/libexec/valgrind/callgrind-amd64-linux
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

ir() { # mode variant n
	st=0
	case $1 in
	native) env ENTER_COST_RUNS=1 VALGRIND_LIB=/usr/libexec/valgrind VALGRIND_LAUNCHER=/usr/bin/valgrind \
		$TOOL --callgrind-out-file="$OUT/cg" $BIN "$3" "$2" >"$OUT/log" 2>&1 || st=$? ;;
	bufsel|passthrough)
		m=emulate; [ "$1" = passthrough ] && m=passthrough
		env ENTER_COST_RUNS=1 BUFSEL_MODE=$m ENTER_COST_STATE_OFF="$OFF" \
		VALGRIND_LIB=/usr/libexec/valgrind VALGRIND_LAUNCHER=/usr/bin/valgrind \
		LD_PRELOAD="$HELPER:$LIB" $TOOL --callgrind-out-file="$OUT/cg" $BIN "$3" "$2" >"$OUT/log" 2>&1 || st=$? ;;
	esac
	# A failed run, a missing result, or (under bufsel) a helper that did not
	# mark bufsel active stops the script with the run's log: none of them may
	# yield a count.
	if [ "$st" -ne 0 ] || ! grep -q "^variant=$2 " "$OUT/log" ||
		{ [ "$1" != native ] && ! grep -q "^callgrind_activate: bufsel marked active" "$OUT/log"; }; then
		cat "$OUT/log" >&2
		exit 1
	fi
	awk '/^summary:/ { print $2 }' "$OUT/cg"
}

for spec in $SPECS; do
	mode=${spec%%:*}
	var=${spec#*:}
	a=$(ir "$mode" "$var" "$N")
	b=$(ir "$mode" "$var" "$N2")
	echo "mode=$mode variant=$var instr_per_op=$(( (b - a) / N ))"
done
