#!/usr/bin/env bash
# make liburing-examples: two of liburing's own example servers, which use
# buffer rings the way servers written today do, natively and under bufsel
# with the rings bufsel's, on loopback.  Every byte must arrive.
#
#  - examples/proxy (multishot RECV on a buffer ring, DEFER_TASKRUN, direct
#    descriptors, registered ring fd): a client sends N pseudo-random bytes
#    to it, it forwards them to a sink, and the sink's count and SHA-256
#    must be the client's.  In several forms: multishot or single receives,
#    receive bundles, sends from a buffer ring, send bundles, larger buffers.
#    (Its NO_MMAP form, -a, needs huge pages, which this machine lacks.)
#  - examples/io_uring-udp (multishot RECVMSG on a buffer ring, SUBMIT_ALL):
#    an echo server; a client sends datagrams of random size one at a time
#    and each must come back unchanged.
#
# Modes: native; BUFSEL_RINGS=emulate (every ring bufsel's); and as older
# kernels: BUFSEL_KERNEL=6.1 BUFSEL_RINGS=emulate for the proxy (bundles,
# 6.10, on rings bufsel keeps; 6.1 is the oldest kernel
# the proxy runs on: it needs registered ring fds, 5.18, and direct
# descriptors, 5.19), BUFSEL_KERNEL=5.15 and 5.10 for io_uring-udp (buffer
# rings and multishot RECVMSG, which they lack, with bufsel's defaults).
# A case that passes natively and fails under bufsel fails the run; one
# that fails natively is reported and not compared.
#
# Environment: LIBURING_TARBALL, B (build dir), EXAMPLE_BYTES (default 250000,
# sent through the proxy in each case), EXAMPLE_DATAGRAMS (default 1000).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) ;; *) B=$ROOT/$B ;; esac
SRC=$B/liburing-suite/src
EX=$SRC/examples
LIB=$B/libbufsel.so
PEER="python3 $ROOT/test/liburing/examples_peer.py"
: "${EXAMPLE_BYTES:=250000}"
: "${EXAMPLE_DATAGRAMS:=1000}"

B=$B bash "$ROOT/test/liburing/run.sh" --build-only || exit 2
if ! make -C "$EX" proxy io_uring-udp >"$B/liburing-suite/examples-build.log" 2>&1; then
	tail -n 20 "$B/liburing-suite/examples-build.log"
	echo "liburing-examples: build failed" >&2
	exit 2
fi

LOGS=$B/liburing-suite/examples
rm -rf "$LOGS"
mkdir -p "$LOGS"
port=23000
failed=0 passed=0 notcmp=0
declare -A NATIVE=()

# Kills a server and waits for it, so that its port is free again.
stop() {
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# proxy_case NAME OPTIONS ENV...: 0 if every byte reached the sink.
proxy_case() {
	local name=$1 opts=$2
	shift 2
	port=$((port + 2))
	local log=$LOGS/proxy.$name
	$PEER sink $((port + 1)) >"$log.sink" 2>&1 &
	local sink=$!
	sleep 0.3
	env "$@" timeout 120 "$EX/proxy" -H 127.0.0.1 -r "$port" -p $((port + 1)) $opts >"$log.proxy" 2>&1 &
	local proxy=$!
	sleep 0.5
	timeout 60 $PEER send "$port" "$EXAMPLE_BYTES" 7 >"$log.send" 2>&1
	# The sink prints when the proxy closes its side (the client's EOF).
	timeout 60 tail --pid="$sink" -f /dev/null
	stop "$sink"
	stop "$proxy"
	[ -s "$log.send" ] && cmp -s "$log.send" "$log.sink"
}

# udp_case NAME ENV...: 0 if every datagram came back unchanged.
udp_case() {
	local name=$1
	shift
	port=$((port + 2))
	local log=$LOGS/udp.$name
	env "$@" timeout 120 "$EX/io_uring-udp" -p "$port" >"$log.server" 2>&1 &
	local server=$!
	sleep 0.5
	timeout 90 $PEER udp-client "$port" "$EXAMPLE_DATAGRAMS" 3 >"$log.client" 2>&1
	local rc=$?
	stop "$server"
	return $rc
}

# report KIND NAME MODE RC: a native result is kept; a bufsel one compared.
report() {
	local kind=$1 name=$2 mode=$3 rc=$4 key="$1 $2"
	local got=pass
	[ "$rc" = 0 ] || got=fail
	if [ "$mode" = native ]; then
		NATIVE[$key]=$got
		echo "$kind $name native: $got"
		return
	fi
	if [ "${NATIVE[$key]}" != pass ]; then
		notcmp=$((notcmp + 1))
		echo "$kind $name $mode: $got (not compared: native $got)"
	elif [ "$got" = pass ]; then
		passed=$((passed + 1))
		echo "$kind $name $mode: pass"
	else
		failed=$((failed + 1))
		echo "$kind $name $mode: FAIL (native pass); logs in $LOGS/$kind.$name.$mode.*"
		tail -n 3 "$LOGS/$kind.$name.$mode".* | sed 's/^/    /'
	fi
}

PROXY_FORMS=(
	"mshot|"
	"single|-m 0"
	"recv-bundle|-c 1"
	"send-ring|-u 1"
	"send-bundle|-u 1 -C 1"
	"bigbuf|-b 4096 -n 64"
)
PROXY_MODES=(
	"native|X_NATIVE=1"
	"rings|LD_PRELOAD=$LIB BUFSEL_RINGS=emulate"
	"rings-6.1|LD_PRELOAD=$LIB BUFSEL_KERNEL=6.1 BUFSEL_RINGS=emulate"
)
UDP_MODES=(
	"native|X_NATIVE=1"
	"rings|LD_PRELOAD=$LIB BUFSEL_RINGS=emulate"
	"kernel-5.15|LD_PRELOAD=$LIB BUFSEL_KERNEL=5.15"
	"kernel-5.10|LD_PRELOAD=$LIB BUFSEL_KERNEL=5.10"
)

echo "== liburing-examples: proxy ($EXAMPLE_BYTES bytes), io_uring-udp ($EXAMPLE_DATAGRAMS datagrams)"
for m in "${PROXY_MODES[@]}"; do
	mode=${m%%|*}
	read -r -a envs <<<"${m#*|}"
	for f in "${PROXY_FORMS[@]}"; do
		form=${f%%|*}
		proxy_case "$form.$mode" "${f#*|}" "${envs[@]}"
		report proxy "$form" "$mode" $?
	done
done
for m in "${UDP_MODES[@]}"; do
	mode=${m%%|*}
	read -r -a envs <<<"${m#*|}"
	udp_case "echo.$mode" "${envs[@]}"
	report udp echo "$mode" $?
done
echo "liburing-examples: $passed passed, $failed failed, $notcmp not compared"
[ "$failed" = 0 ]
