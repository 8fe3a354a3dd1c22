#!/bin/sh
# Runs every workload briefly, natively and in each bufsel arm (emulate,
# passthrough, BUFSEL_KERNEL=5.6, the launcher), and under policies that make
# the group run dry (a cap, injected -ENOBUFS) or cut reads short. A run
# passes when the program exits 0, prints at least one "bench:" line, every
# "bench:" line is name=number pairs only, and under bufsel the server's
# exit line shows the library was loaded in it and in no other process (the
# load generators run without it). The last cases must fail: a file READ cut
# short by BUFSEL_MAX_LEN is a wrong result the program has to catch.
# Usage: bench/workloads/smoke.sh BUILD_DIR
set -u
B=${1:?usage: $0 BUILD_DIR}
LIB=$(cd "$B" && pwd)/libbufsel.so
BIN=$B/bench
OUT=$(mktemp)
ERR=$(mktemp)
trap 'rm -f "$OUT" "$ERR"' EXIT
pass=0
fail=0

# Nothing of the caller's bufsel settings may leak into a run.
for v in $(env | sed -n 's/^\(BUFSEL_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
unset LD_PRELOAD
export BUFSEL_CONF=

bad() {
	echo "FAIL [$arm] $*"
	sed 's/^/    stdout: /' "$OUT"
	sed 's/^/    stderr: /' "$ERR" | head -20
	fail=$((fail + 1))
}

# check ARM EXPECT PROG ARGS...: EXPECT is ok or fail.
check() {
	arm=$1 expect=$2
	shift 2
	case $arm in
	native) set -- "$@" ;;
	emulate) set -- env LD_PRELOAD="$LIB" BUFSEL_LOG=info "$@" ;;
	passthrough) set -- env LD_PRELOAD="$LIB" BUFSEL_LOG=info BUFSEL_MODE=passthrough "$@" ;;
	kernel56) set -- env LD_PRELOAD="$LIB" BUFSEL_LOG=info BUFSEL_KERNEL=5.6 "$@" ;;
	launcher) set -- "$B/bufsel" --log info -- "$@" ;;
	*) set -- env LD_PRELOAD="$LIB" BUFSEL_LOG=info $arm "$@" ;;
	esac
	timeout 60 "$@" >"$OUT" 2>"$ERR"
	rc=$?
	if [ "$expect" = fail ]; then
		if [ $rc -eq 0 ] || ! grep -q "${FAIL_TEXT:?}" "$ERR"; then
			bad "expected a failure saying '$FAIL_TEXT' (exit $rc): $*"
		else
			pass=$((pass + 1))
		fi
		return
	fi
	if [ $rc -ne 0 ]; then
		bad "exit $rc: $*"
		return
	fi
	if ! grep -q '^bench: ' "$OUT"; then
		bad "no bench: line: $*"
		return
	fi
	if grep '^bench:' "$OUT" | grep -Evq '^bench:( [a-z][a-z0-9_]*=-?[0-9]+(\.[0-9]+)?)+$'; then
		bad "a malformed bench: line: $*"
		return
	fi
	if [ "$arm" != native ]; then
		n=$(grep -c '^bufsel: exit: .* setup=[1-9]' "$ERR")
		all=$(grep -c '^bufsel: exit:' "$ERR")
		if [ "$n" -ne 1 ] || [ "$all" -ne 1 ]; then
			bad "expected one bufsel exit line, from the server, got $all ($n with a ring): $*"
			return
		fi
	fi
	pass=$((pass + 1))
	echo "ok   [$arm] $* | $(grep '^bench:' "$OUT" | tr '\n' ' ')"
}

run_all() {
	for arm in native emulate passthrough kernel56 launcher; do
		check $arm ok "$@"
	done
}

S="--seconds 0.3 --warmup 0.1"
run_all "$BIN/echo" --conns 1 --size 64 $S
run_all "$BIN/echo" --conns 64 --size 64 $S
run_all "$BIN/echo" --conns 64 --size 4096 $S
run_all "$BIN/echo" --conns 1000 --size 4096 $S
run_all "$BIN/echo" --conns 16 --size 100 --messages 3000 --warmup 0
run_all "$BIN/pipe" --pipes 4 --chunk 4096 $S
run_all "$BIN/pipe" --pipes 8 --chunk 65536 --bytes 50000000 --bufs 2 --warmup 0
run_all "$BIN/file" --file-mb 16 --qd 32 $S
run_all "$BIN/file" --file-mb 16 --qd 32 --bufs 4 --ops 20000 --warmup 0
run_all "$BIN/idle_prealloc" --conns 2000 --active 100 --rounds 100
run_all "$BIN/idle_select" --conns 2000 --active 100 --rounds 100
run_all "$BIN/idle_select" --conns 10000 --active 100 --rounds 20

# The group runs dry: every workload must still deliver every byte.
for pol in BUFSEL_CAP=3 BUFSEL_ENOBUFS_RATE=0.3 BUFSEL_MAX_LEN=100; do
	check $pol ok "$BIN/echo" --conns 64 --size 4096 $S
	check $pol ok "$BIN/pipe" --pipes 8 $S
	check $pol ok "$BIN/idle_select" --conns 2000 --active 100 --rounds 50
done
for pol in BUFSEL_CAP=3 BUFSEL_ENOBUFS_RATE=0.3; do
	check $pol ok "$BIN/file" --file-mb 16 $S
done

# A short READ is a wrong result for the file workload: it must say so and fail.
FAIL_TEXT="100 bytes, expected 4096"
check BUFSEL_MAX_LEN=100 fail "$BIN/file" --file-mb 16 $S
echo "expected failure seen: $(head -1 "$ERR")"

echo
echo "bench smoke: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
