#!/bin/sh
# The single entry for `make test`: every unit test binary, then the
# native-vs-bufsel integration runner, the emulation proof and the policy tests.
# Usage: test/run-all.sh BUILD_DIR
# Exits non-zero if any binary failed or an integration runner is missing.
# Extra Criterion options (e.g. --filter 'preload/*', --verbose) can be passed
# in CRITERION_ARGS.

set -u
B=${1:?usage: $0 BUILD_DIR}
BUFSEL_BUILD=$(cd "$B" && pwd) || exit 2
export BUFSEL_BUILD

pass=0
fail=0
failed=""

run() {
	name=$1
	shift
	echo "=== $name"
	if "$@"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		failed="$failed $name"
	fi
}

for t in "$B"/test/unit/*; do
	[ -f "$t" ] && [ -x "$t" ] || continue
	# shellcheck disable=SC2086
	run "unit/$(basename "$t")" "$t" ${CRITERION_ARGS:-}
done

# compare: native vs bufsel output; emulated: the kernel's trace shows that
# bufsel, not the kernel, handled the provided buffers; policy: what the
# configured caps, lengths and -ENOBUFS injection, the statistics and
# configuration errors do to a program's run; report: bufsel report on the
# statistics of such a run; ab: bufsel ab, native against bufsel, on real
# programs; faults: bufsel's own allocations failing, and a ring with no fd
# left for its shadow; security: hostile statistics targets, host limits, a
# setuid program run by an unprivileged user (docs/security.md).
for t in compare emulated policy report ab faults security; do
	if [ -x "$B/test/integration/$t" ]; then
		# shellcheck disable=SC2086
		run "integration/$t" "$B/test/integration/$t" ${CRITERION_ARGS:-}
	else
		echo "=== integration/$t: $B/test/integration/$t not built"
		fail=$((fail + 1))
		failed="$failed integration/$t"
	fi
done

# fuzz-quick: 10,000 random sequences, native vs bufsel (docs/reliability.md)
run fuzz-quick "$B/test/fuzz/difffuzz" --build "$B" --sequences 10000 --seed 1

echo
echo "summary: $pass passed, $fail failed"
if [ "$fail" -ne 0 ]; then
	echo "failed:$failed"
	exit 1
fi
exit 0
