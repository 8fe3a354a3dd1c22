#!/bin/sh
# make demo: install what bufsel needs (Debian), build it, then run an ordinary
# liburing program natively and under bufsel and show that both print the same.
set -eu

cd "$(dirname "$0")/.."
B=build
CC=${CC:-cc}
PKGS="build-essential liburing-dev libcriterion-dev libunwind-dev gnuplot-nox"

missing=""
for p in $PKGS; do
	dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
	if [ "$(id -u)" = 0 ]; then
		sudo=""
	elif command -v sudo >/dev/null 2>&1; then
		sudo="sudo"
	else
		sudo="none"
	fi
	if [ "$sudo" = none ] || ! command -v apt-get >/dev/null 2>&1; then
		echo "demo: missing packages:$missing" >&2
		echo "demo: install them as root (apt-get install -y$missing) and run make demo again" >&2
		exit 1
	fi
	echo "== installing:$missing"
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update
	# shellcheck disable=SC2086
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y $missing
fi

echo "== building bufsel"
make

echo "== building $B/demo from test/demo/demo.c (an unmodified liburing program)"
mkdir -p "$B"
$CC -std=gnu11 -O2 -g -Wall -Wextra -Werror -o "$B/demo" test/demo/demo.c -luring

out=$(mktemp -d "${TMPDIR:-/tmp}/bufsel-demo.XXXXXX")
trap 'rm -rf "$out"' EXIT INT TERM

status=0
echo
echo "== native: $B/demo"
"$B/demo" >"$out/native.out" 2>"$out/native.err" || status=$?
cat "$out/native.out" "$out/native.err"
if [ "$status" != 0 ]; then
	echo "demo: the native run failed (exit $status); io_uring may be unavailable here" >&2
	exit 1
fi

echo
echo "== under bufsel: $B/bufsel --log info -- $B/demo"
"$B/bufsel" --log info -- "$B/demo" >"$out/bufsel.out" 2>"$out/bufsel.err" || status=$?
cat "$out/bufsel.out"
echo
echo "== stderr under bufsel (the bufsel: lines come from bufsel)"
cat "$out/bufsel.err"

echo
if [ "$status" != 0 ]; then
	echo "== result: the run under bufsel failed (exit $status)"
	exit 1
fi
if ! cmp -s "$out/native.out" "$out/bufsel.out"; then
	echo "== result: the outputs differ"
	diff -u --label native "$out/native.out" --label bufsel "$out/bufsel.out" || true
	exit 1
fi
echo "== result: same output natively and under bufsel"
