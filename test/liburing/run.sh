#!/usr/bin/env bash
# make liburing-suite: liburing's own test suite, natively and under bufsel.
#
# Builds liburing (library and tests only) from LIBURING_TARBALL into
# $B/liburing-suite/src once, then runs every test/*.t natively and in each
# bufsel mode, as root, and the tests whose behaviour depends on the user
# also as an unprivileged user (uid/gid 65534), natively and under bufsel.
# A test's result under bufsel (pass = exit 0, skip = 77, hang = timed out,
# fail = anything else) must equal its native result; a test that fails or
# hangs natively is shown but not compared (there is no native behaviour to
# match).  Differences listed in test/liburing/exclusions are reported as
# excluded; every other difference fails the run.  A difference may be
# rechecked once, natively and in that mode one after the other with nothing
# else running; both attempts are in the table and in results.log.
#
# Environment: LIBURING_TARBALL, B (build dir), TIMEOUT (seconds per test,
# default 60, SIGINT then SIGKILL after as long again, as liburing's
# runtests.sh), SUITE_JOBS (parallel tests, default 2), SUITE_TESTS (names
# to run instead of all), SUITE_RECHECK=0 (no rechecks), NATIVE_RERUNS
# (native runs a pass/skip difference may get besides, default 30),
# FLAKY_ROUNDS (serial native-then-mode rounds a quick pass/fail difference
# that repeated may get, default 4),
# SUITE_REPORT=1 (no run: the table again from the last run's results,
# e.g. after editing the exclusions).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) ;; *) B=$ROOT/$B ;; esac
OUT=$B/liburing-suite
SRC=$OUT/src
LIB=$B/libbufsel.so
EXCL=$ROOT/test/liburing/exclusions
: "${TIMEOUT:=60}"
: "${SUITE_JOBS:=2}"
: "${SUITE_RECHECK:=1}"
: "${NATIVE_RERUNS:=30}"
: "${FLAKY_ROUNDS:=4}"
NOBODY=65534

# Mode name -> environment of the test (native has none).  The "user" modes
# run through setpriv as uid/gid 65534 with no supplementary groups.
# kernel-5.6 is that kernel as it was: buffer rings, which bufsel would
# otherwise keep there itself (rings = auto), are left to it and refused.
# The "rings" modes run only the tests that register a buffer ring: with
# every ring bufsel's, on this kernel and as on Linux 5.15 (which has none).
MODES=(native default patch-off passthrough kernel-5.6 user-native user rings rings-5.15)
declare -A MODE_ENV=(
	[native]=""
	[default]="LD_PRELOAD=@LIB@"
	[patch-off]="LD_PRELOAD=@LIB@ BUFSEL_PATCH=off"
	[passthrough]="LD_PRELOAD=@LIB@ BUFSEL_MODE=passthrough"
	[kernel-5.6]="LD_PRELOAD=@LIB@ BUFSEL_KERNEL=5.6 BUFSEL_RINGS=kernel"
	[user-native]=""
	[user]="LD_PRELOAD=@LIB@"
	[rings]="LD_PRELOAD=@LIB@ BUFSEL_RINGS=emulate"
	[rings-5.15]="LD_PRELOAD=@LIB@ BUFSEL_KERNEL=5.15 BUFSEL_RINGS=emulate"
)
# Each compared mode and the native run it must match.
declare -A BASE=([default]=native [patch-off]=native [passthrough]=native
	[kernel-5.6]=native [user]=user-native [rings]=native [rings-5.15]=native)
COMPARED=(default patch-off passthrough kernel-5.6 user rings rings-5.15)

is_user_mode() { [[ $1 == user* ]]; }
is_ring_mode() { [[ $1 == rings* ]]; }

# One test in one mode; writes "status seconds exit" to res/MODE/TEST.ATTEMPT.
run_one() {
	local mode=$1 t=$2 attempt=$3 dir env rc status start end secs
	local -a pre=()
	if is_user_mode "$mode"; then
		dir=$USERDIR/$mode
		pre=(setpriv "--reuid=$NOBODY" "--regid=$NOBODY" --clear-groups)
		env=${MODE_ENV[$mode]//@LIB@/$USERDIR/libbufsel.so}
		env="HOME=$dir $env"
	else
		dir=$OUT/run/$mode
		env=${MODE_ENV[$mode]//@LIB@/$LIB}
	fi
	local log=$OUT/logs/$mode/$t.$attempt.log
	# Tests that listen on a fixed port (recvsend_bundle, recvsend_bundle-inc
	# and send_recv share 10202) never run beside each other: the second
	# would fail to bind and wait for ever on a peer that never comes.
	local -a lock=()
	if grep -qsE '^#define[[:space:]]+PORT[[:space:]]' "$SRC/test/$t.c"; then
		lock=(flock "$OUT/port.lock")
	fi
	start=$EPOCHREALTIME
	# shellcheck disable=SC2086  # env is a list of NAME=VALUE words
	(cd "$dir" && exec "${lock[@]}" timeout -s INT -k "$TIMEOUT" "$TIMEOUT" "${pre[@]}" \
		env -u XDG_CONFIG_HOME $env "./$t.t") >"$log" 2>&1 </dev/null
	rc=$?
	end=$EPOCHREALTIME
	secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
	case $rc in
	0) status=pass ;;
	77) status=skip ;;
	124|137) status=hang ;;
	*) status=fail ;;
	esac
	echo "$status $secs $rc" >"$OUT/res/$mode/$t.$attempt"
}

if [ "${1:-}" = --job ]; then
	run_one "$2" "$3" "$4"
	exit 0
fi

# ---- build ----------------------------------------------------------------
if [ -z "${LIBURING_TARBALL:-}" ]; then
	LIBURING_TARBALL=$(ls "$ROOT"/../shared/third_party/liburing-*.tar.gz 2>/dev/null | tail -n1)
fi
if [ ! -f "${LIBURING_TARBALL:-}" ]; then
	echo "liburing-suite: no tarball (set LIBURING_TARBALL=path/liburing-X.tar.gz)" >&2
	exit 2
fi
if [ ! -f "$LIB" ]; then
	echo "liburing-suite: $LIB is missing (make first)" >&2
	exit 2
fi
mkdir -p "$OUT"
stamp="$(readlink -f "$LIBURING_TARBALL") $(stat -c '%s %Y' "$LIBURING_TARBALL")"
if [ "$(cat "$OUT/built" 2>/dev/null)" != "$stamp" ]; then
	echo "== building liburing from $LIBURING_TARBALL in $SRC"
	rm -rf "$SRC" "$OUT/built"
	mkdir -p "$SRC"
	tar -xzf "$LIBURING_TARBALL" -C "$SRC" --strip-components=1 || exit 2
	# Library and tests only: examples are not run.
	if ! (cd "$SRC" && ./configure && make -C src -j"$SUITE_JOBS" &&
		make -C test -j"$SUITE_JOBS") >"$OUT/build.log" 2>&1; then
		tail -n 30 "$OUT/build.log"
		echo "liburing-suite: build failed, see $OUT/build.log" >&2
		exit 2
	fi
	echo "$stamp" >"$OUT/built"
fi
# examples.sh needs only the build.
if [ "${1:-}" = --build-only ]; then
	exit 0
fi

# ---- what to run ----------------------------------------------------------
cd "$SRC/test" || exit 2
if [ -n "${SUITE_TESTS:-}" ]; then
	read -r -a TESTS <<<"$SUITE_TESTS"
else
	TESTS=()
	for f in *.t; do TESTS+=("${f%.t}"); done
fi
# Tests that behave differently without root: their source checks the uid,
# or they create SQPOLL rings or register buffers through helpers.c, which
# skips those for a non-root user.
declare -A USER_TEST=() RING_TEST=()
for t in "${TESTS[@]}"; do
	s=$(ls "$t".c "$t".cc 2>/dev/null | head -n1)
	[ -n "$s" ] || continue
	if grep -qE 'gete?uid\(\)' "$s" || grep -q 't_register_buffers' "$s" ||
		{ grep -q 't_create_ring' "$s" && grep -q 'SQPOLL' "$s"; }; then
		USER_TEST[$t]=1
	fi
	# What registers a ring, and the receive tests that go with them
	# (recv-multishot selects from legacy groups).
	if grep -qE 'setup_buf_ring|register_buf_ring|PBUF_RING' "$s" ||
		[[ $t =~ ^(recv-multishot|recv-mshot-.*|read-mshot.*|send_recvmsg|poll-race-mshot|mshot-shutdown-race)$ ]]; then
		RING_TEST[$t]=1
	fi
done

# Excluded differences: "test mode reason...".
declare -A EXCLUDED=()
if [ -f "$EXCL" ]; then
	while read -r t m reason; do
		case $t in ''|'#'*) continue ;; esac
		EXCLUDED["$t $m"]=$reason
	done <"$EXCL"
fi

t0=$EPOCHREALTIME
if [ "${SUITE_REPORT:-0}" = 0 ]; then
	# ---- run directories: one per mode, so tests' files never meet -----------
	rm -rf "$OUT/run" "$OUT/res" "$OUT/logs"
	mkdir -p "$OUT/run"
	for m in "${MODES[@]}"; do
		mkdir -p "$OUT/res/$m" "$OUT/logs/$m"
		is_user_mode "$m" || cp -al "$SRC/test" "$OUT/run/$m"
	done
	# The unprivileged runs need every directory on the way readable: a private
	# copy of the tests and the library under a fresh directory in /tmp.
	USERDIR=$(mktemp -d /tmp/bufsel-liburing-suite.XXXXXX)
	trap 'rm -rf "$USERDIR"' EXIT
	chmod 755 "$USERDIR"
	cp "$LIB" "$USERDIR/libbufsel.so"
	for m in user-native user; do
		cp -a "$SRC/test" "$USERDIR/$m"
		chown -R $NOBODY:$NOBODY "$USERDIR/$m"
	done
	export OUT LIB USERDIR TIMEOUT

	# ---- the parallel pass: mode after mode, as liburing's runtests-parallel --
	# runs different tests side by side, never one test twice at once.
	echo "== liburing-suite: ${#TESTS[@]} tests (${#USER_TEST[@]} also unprivileged," \
		"${#RING_TEST[@]} also with bufsel's rings)," \
		"${SUITE_JOBS} jobs, timeout ${TIMEOUT}s"
	for m in "${MODES[@]}"; do
		for t in "${TESTS[@]}"; do
			if is_user_mode "$m" && [ -z "${USER_TEST[$t]:-}" ]; then continue; fi
			if is_ring_mode "$m" && [ -z "${RING_TEST[$t]:-}" ]; then continue; fi
			echo "$m $t 1"
		done
	done | xargs -P "$SUITE_JOBS" -L 1 bash "$ROOT/test/liburing/run.sh" --job
else
	SUITE_RECHECK=0
fi

res() { # mode test attempt field(1 status, 2 seconds)
	local f=$OUT/res/$1/$2.$3
	[ -f "$f" ] || { echo -; return; }
	awk -v n="$4" '{ print $n }' "$f"
}

# ---- compare, recheck -----------------------------------------------------
: >"$OUT/results.log"
declare -A MARK=()   # "test mode" -> ok | diff | excluded | rechecked | nc
DIFFS=()             # "test mode" of each difference, for the report's end
passed=0 failed=0 excluded=0 notcmp=0 rechecked=0
for t in "${TESTS[@]}"; do
	for m in "${COMPARED[@]}"; do
		[ -f "$OUT/res/$m/$t.1" ] || continue
		base=${BASE[$m]}
		nat=$(res "$base" "$t" 1 1)
		got=$(res "$m" "$t" 1 1)
		key="$t $m"
		if [ "$nat" != pass ] && [ "$nat" != skip ]; then
			MARK[$key]=nc; notcmp=$((notcmp + 1)); continue
		fi
		if [ "$nat" = "$got" ]; then
			MARK[$key]=ok; passed=$((passed + 1))
			if [ -n "${EXCLUDED[$key]:-}" ]; then
				echo "liburing-suite: warning: stale exclusion, $t in $m matches native ($got)" |
					tee -a "$OUT/results.log"
			fi
			continue
		fi
		if [ -n "${EXCLUDED[$key]:-}" ]; then
			MARK[$key]=excluded; excluded=$((excluded + 1))
			echo "$t $m: native $nat, $m $got: excluded (${EXCLUDED[$key]})" >>"$OUT/results.log"
			continue
		fi
		# A hang where the native run took under a quarter of the timeout
		# is not timing noise: no recheck.
		natsecs=$(res "$base" "$t" 1 2)
		if [ -f "$OUT/res/$m/$t.2" ] || { [ "$SUITE_RECHECK" != 0 ] && { [ "$got" != hang ] ||
			awk -v s="$natsecs" -v t="$TIMEOUT" 'BEGIN { exit !(s >= t / 4) }'; }; }; then
			if [ ! -f "$OUT/res/$m/$t.2" ]; then
				run_one "$base" "$t" "2-$m"
				run_one "$m" "$t" 2
			fi
			nat2=$(res "$base" "$t" "2-$m" 1)
			got2=$(res "$m" "$t" 2 1)
			echo "$t $m: attempt 1 native $nat $natsecs s, $m $got $(res "$m" "$t" 1 2) s;" \
				"attempt 2 (serial) native $nat2 $(res "$base" "$t" "2-$m" 2) s," \
				"$m $got2 $(res "$m" "$t" 2 2) s" >>"$OUT/results.log"
			if [ "$nat2" = "$got2" ] && { [ "$nat2" = pass ] || [ "$nat2" = skip ]; }; then
				MARK[$key]=rechecked; rechecked=$((rechecked + 1)); passed=$((passed + 1))
				continue
			fi
			# The native run went two ways itself (wq-aff skips when
			# the SQ thread's name is not yet in /proc as it looks):
			# each of the mode's results is one the kernel gave.
			if [ "$nat" != "$nat2" ] && [[ $nat$nat2 =~ ^(pass|skip)(pass|skip)$ ]] &&
				{ [ "$got" = "$nat" ] || [ "$got" = "$nat2" ]; } &&
				{ [ "$got2" = "$nat" ] || [ "$got2" = "$nat2" ]; }; then
				echo "$t $m: the native run gave $nat and $nat2, $m $got and $got2: each a native result" \
					>>"$OUT/results.log"
				MARK[$key]=rechecked; rechecked=$((rechecked + 1)); passed=$((passed + 1))
				continue
			fi
			# A pass the mode never gave, or a skip, against a native run
			# that gave the other both times: a test that skips by luck
			# natively (wq-aff skips when another task took the pid it
			# guesses for io-wq's worker: 3 of 30 native runs here) gets
			# up to NATIVE_RERUNS more serial native runs, if it is quick.
			# The mode's results count as the kernel's once some native
			# run gives each of them.
			if [[ $nat$nat2$got$got2 =~ ^((pass|skip)){4}$ ]] &&
				awk -v s="$natsecs" 'BEGIN { exit !(s < 2) }'; then
				seen=" $nat $nat2 "
				for ((k = 3; k < 3 + NATIVE_RERUNS; k++)); do
					[[ $seen == *" $got "* && $seen == *" $got2 "* ]] && break
					if [ ! -f "$OUT/res/$base/$t.$k-$m" ]; then
						[ "$SUITE_RECHECK" != 0 ] || break
						run_one "$base" "$t" "$k-$m"
					fi
					seen="$seen$(res "$base" "$t" "$k-$m" 1) "
				done
				if [[ $seen == *" $got "* && $seen == *" $got2 "* ]]; then
					echo "$t $m: $m gave $got and $got2; native gave each of them in $((k - 1))" \
						"runs ($(echo $seen | tr ' ' '\n' | sort | uniq -c | xargs))" >>"$OUT/results.log"
					MARK[$key]=rechecked; rechecked=$((rechecked + 1)); passed=$((passed + 1))
					continue
				fi
				echo "$t $m: native gave only $nat in $((k - 1)) runs" >>"$OUT/results.log"
			fi
			# A fail where the native run passed, in both attempts: a
			# test that times itself (min-timeout-wait's 9 to 12 ms
			# window) fails natively too when the machine is busy. A
			# quick one gets FLAKY_ROUNDS more serial rounds, native then
			# the mode, and counts as passed on recheck when the mode
			# passed in some round and failed in no more rounds than the
			# native run did; a mode that fails more often than the
			# kernel under the same load still differs.
			if [ "$nat" = pass ] && [ "$got" = fail ] && [ "$got2" = fail ] &&
				[ "$FLAKY_ROUNDS" -gt 0 ] &&
				awk -v s="$natsecs" 'BEGIN { exit !(s < 10) }'; then
				nfail=0 mfail=0 mpass=0
				for ((k = 1; k <= FLAKY_ROUNDS; k++)); do
					if [ ! -f "$OUT/res/$m/$t.f$k" ]; then
						[ "$SUITE_RECHECK" != 0 ] || break
						run_one "$base" "$t" "f$k-$m"
						run_one "$m" "$t" "f$k"
					fi
					[ "$(res "$base" "$t" "f$k-$m" 1)" = fail ] && nfail=$((nfail + 1))
					case $(res "$m" "$t" "f$k" 1) in
					fail) mfail=$((mfail + 1)) ;;
					pass) mpass=$((mpass + 1)) ;;
					esac
				done
				echo "$t $m: $((k - 1)) more serial rounds: native failed $nfail, $m failed" \
					"$mfail and passed $mpass" >>"$OUT/results.log"
				if [ "$k" -gt "$FLAKY_ROUNDS" ] && [ "$mpass" -gt 0 ] && [ "$mfail" -le "$nfail" ]; then
					MARK[$key]=rechecked; rechecked=$((rechecked + 1)); passed=$((passed + 1))
					continue
				fi
			fi
		else
			echo "$t $m: native $nat $natsecs s, $m $got $(res "$m" "$t" 1 2) s (not rechecked)" \
				>>"$OUT/results.log"
		fi
		MARK[$key]="diff"; failed=$((failed + 1))
		DIFFS+=("$t $m")
	done
done
# Exclusions naming a test or mode that did not run are stale as well.
for key in "${!EXCLUDED[@]}"; do
	read -r t m <<<"$key"
	if [ -z "${MARK[$key]:-}" ] && [ -z "${SUITE_TESTS:-}" ]; then
		echo "liburing-suite: warning: stale exclusion, $t in $m was not run" | tee -a "$OUT/results.log"
	fi
done
if [ "${SUITE_REPORT:-0}" = 0 ]; then
	wall=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')
	echo "$wall" >"$OUT/wall"
else
	wall=$(cat "$OUT/wall" 2>/dev/null || echo "?")
fi

# ---- the table ------------------------------------------------------------
# Cell: status and seconds; "!" a difference, "x" an excluded difference,
# "~" a difference that did not reproduce on the serial recheck (both
# attempts shown), "?" not compared (the native run failed or hung).
cell() { # mode test
	local m=$1 t=$2 s mark=""
	[ -f "$OUT/res/$m/$t.1" ] || { echo "-"; return; }
	s="$(res "$m" "$t" 1 1) $(res "$m" "$t" 1 2)"
	case ${MARK["$t $m"]:-} in
	diff) mark="!" ;;
	excluded) mark="x" ;;
	nc) mark="?" ;;
	rechecked) mark="~" ;;
	esac
	if [ -f "$OUT/res/$m/$t.2" ]; then
		s="$s / $(res "$m" "$t" 2 1) $(res "$m" "$t" 2 2)"
	fi
	echo "$mark$s"
}
{
	echo "| test | native | default | patch-off | passthrough | kernel-5.6 | user native | user | rings | rings 5.15 |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	for t in "${TESTS[@]}"; do
		row="| $t"
		for m in "${MODES[@]}"; do row="$row | $(cell "$m" "$t")"; done
		echo "$row |"
	done
} >"$OUT/table.md"
fmt="%-28s %-14s %-14s %-14s %-14s %-14s %-14s %-14s %-14s %s\n"
# shellcheck disable=SC2059
printf "$fmt" test native default patch-off passthrough kernel-5.6 user-native user rings rings-5.15
tail -n +3 "$OUT/table.md" | while IFS='|' read -r _ t a b c d e f g h i _; do
	# shellcheck disable=SC2059
	printf "$fmt" $t "$(echo $a)" "$(echo $b)" "$(echo $c)" "$(echo $d)" "$(echo $e)" "$(echo $f)" "$(echo $g)" \
		"$(echo $h)" "$(echo $i)"
done
{
	echo "# liburing-suite"
	echo
	echo "liburing $(basename "$LIBURING_TARBALL" .tar.gz), kernel $(uname -r), ${SUITE_JOBS} jobs," \
		"timeout ${TIMEOUT}s, wall ${wall}s. Cells: status and seconds;" \
		"! a difference, x an excluded difference, ~ a difference that did not reproduce" \
		"on the serial recheck (second attempt after /), ? not compared (fails or hangs natively)."
	echo
	cat "$OUT/table.md"
	echo
	echo "$passed passed, $failed failed, $excluded excluded, $notcmp not compared, $rechecked passed on recheck"
} >"$OUT/results.md"
grep -v '^liburing-suite: warning' "$OUT/results.log" | sed 's/^/  /'
# The differences come last, with the end of each side's output: CI keeps
# the tail of a long report, and a difference must be readable from it.
for d in "${DIFFS[@]}"; do
	read -r t m <<<"$d"
	echo "== difference: $t in $m"
	awk -v k="$t $m: " 'index($0, k) == 1 { print "  " $0 }' "$OUT/results.log"
	for f in "$OUT/logs/${BASE[$m]}/$t.1.log" "$OUT/logs/$m/$t.1.log"; do
		[ -f "$f" ] || continue
		echo "  -- tail of $f"
		tail -n 15 "$f" | cut -c1-200 | sed 's/^/    /'
	done
done
echo "liburing-suite: $excluded excluded, $notcmp not compared (native fail or hang)," \
	"$rechecked passed only on recheck; wall ${wall}s; table in $OUT/results.md"
echo "liburing-suite: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
