#!/bin/busybox sh
# /init of make vm-test's guest (test/vm/run.sh builds the initramfs): runs
# bufsel's programs natively and under bufsel on the guest's kernel, prints
# the table, and powers off.  Its last line, "vm-test: result ...", is the
# verdict the host reads off the serial console.
#
# /bufsel/programs: "name class timeout", class one of
#   same      the kernel has what the program uses: under bufsel its stdout
#             and exit status equal the native ones on this kernel;
#   emulated  it uses what this kernel lacks (buffer rings, multishot
#             receive, bundles, incremental consumption, READ_MULTISHOT):
#             under bufsel, with no variable set, it must print what it
#             printed natively on the host's kernel (/bufsel/expected) and
#             exit 0; the native run here is shown, and must not pass;
#   mixed     as emulated, but it also uses what this kernel answers its
#             own way under bufsel too (legacy groups keep its rules; its
#             errors for what neither has): what it must print, and its
#             exit status, are its run on the host under BUFSEL_KERNEL=5.10;
#   seccomp   it does what the seccomp filter, the only trap a kernel
#             without Syscall User Dispatch has, cannot follow
#             (docs/interception.md, "What the seccomp fallback cannot
#             do"): its reference is its run on the host under
#             BUFSEL_KERNEL=5.10 BUFSEL_TRAP=seccomp, and it counts apart
#             (limited=N) from the rows that match the native run.
# /bufsel/liburing/*.t: liburing's buffer-ring tests; under bufsel each
# must end as it did natively on the host's kernel (NAME.rc: 0, or 77 for a
# test that skips there too); natively here they are shown.  NAME.known: an
# ERE for a failure on 5.10 that is the test's own (test/vm/liburing-tests):
# a run that fails with a matching line counts apart (known=N), not as a pass.
# Only fail=0 is a pass of the whole.
/bin/busybox --install -s /bin
export PATH=/bin HOME=/tmp
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mkdir -p /dev/shm && mount -t tmpfs shm /dev/shm
ip link set lo up
ulimit -l unlimited
echo "vm-test: uname -r $(uname -r)"
echo "vm-test: $(cat /proc/version)"

LIB=/bufsel/libbufsel.so
# VM_LOG on the host: bufsel's log level here, and a failure's whole log.
LOG=
[ -e /bufsel/log ] && LOG=$(cat /bufsel/log)
# Timeouts: the program's own (test/integration/compare.c's table) times
# SCALE, since qemu without KVM runs the guest several times slower.
SCALE=3
t_start=$(date +%s)
fail=0
pass=0
limited=0
known=0
# threads PID: where each thread of a process that outlived its timeout
# waits (the kernel's stack; the system call, or -1 outside one, then the
# stack pointer and the user-space pc, with the code there and the
# executable mappings to place it), before it is killed: a hang in the
# guest cannot be caught again at will.  Stopped first: a thread that is
# running shows no pc.
threads() {
	echo "--- pid $1 outlived its timeout: its threads"
	kill -STOP $1
	sleep 1
	for d in /proc/$1/task/*; do
		echo "thread ${d##*/} $(cat $d/comm) state $(cut -d' ' -f3 $d/stat) wchan $(cat $d/wchan)"
		sc=$(cat $d/syscall)
		echo "  syscall $sc"
		pc=${sc##* }
		case $pc in 0x*) echo "  code at pc: $(dd if=/proc/$1/mem bs=1 skip=$((pc)) count=16 2>/dev/null | od -An -tx1)" ;; esac
		sed 's/^/  /' $d/stack
	done
	grep ' r-xp ' /proc/$1/maps
}
# killer PID SECONDS ERR: run's timeout.
killer() {
	sleep $2
	[ -d /proc/$1 ] || return
	threads $1 >>"$3" 2>&1
	kill -KILL $1
}
# status NAME TIMEOUT OUT ERR [ENV...] -- runs /bufsel/prog/NAME (or NAME,
# a path) in /tmp/run; 137 when killed at TIMEOUT, its threads at ERR's end.
# The seconds it took go to /tmp/secs.
run() {
	n=$1 t=$2 out=$3 err=$4
	shift 4
	rm -rf /tmp/run && mkdir /tmp/run
	case $n in /*) ;; *) n=/bufsel/prog/$n ;; esac
	up0=$(cut -d' ' -f1 /proc/uptime)
	(cd /tmp/run && exec env -i PATH=/bin HOME=/tmp "$@" $n) </dev/null >"$out" 2>"$err" &
	pid=$!
	killer $pid $((t * SCALE)) "$err" >/dev/null 2>&1 &
	k=$!
	wait $pid
	rc=$?
	kill $k 2>/dev/null
	awk -v a=$up0 -v b=$(cut -d' ' -f1 /proc/uptime) 'BEGIN { printf "%.1f\n", b - a }' >/tmp/secs
	echo $rc
}
same_out() { cmp -s "$1" "$2"; }
# record NAME STATUS FILE: a transcript for the host to keep (VM_RECORD).
record() {
	echo "vm-record: begin $1 $2"
	base64 <"$3"
	echo "vm-record: end $1"
}
# The library's exit report: bufsel was loaded and saw the program's setup.
# A run killed at its timeout has none, nor one that failed in two threads
# at once (both in exit(3): the stress programs, as natively on 5.10), and
# any line of bufsel's will do.
loaded() {
	grep -q '^bufsel: exit: ' "$1" || { [ "$2" != 0 ] && grep -q '^bufsel: ' "$1"; }
}
show() {
	echo "--- $1: $2"
	diff "$3" "$4" | head -n 20
	if [ -n "$LOG" ]; then
		cat "$5"
	elif grep -q 'outlived its timeout' "$5"; then
		sed -n '/outlived its timeout/,$p' "$5"
	else
		tail -n 8 "$5"
	fi
}

echo
echo "| program | class | native $(uname -r) | bufsel | verdict | bufsel s |"
echo "|---|---|---|---|---|---|"
# VM_REPEAT on the host: each row that many times over.
REPEAT=$(cat /bufsel/repeat 2>/dev/null || echo 1)
repeat() {
	i=0
	while [ $i -lt $REPEAT ]; do
		"$@"
		i=$((i + 1))
	done
}
while read -r n class t; do
	case $n in ''|'#'*) continue ;; esac
	# A program that needs what this kernel lacks may wait for ever
	# natively: that it does not pass shows in a few seconds.
	nt=$t
	[ $class != same ] && [ "$nt" -gt 5 ] && nt=5
	nrc=$(run "$n" "$nt" /tmp/n.out /tmp/n.err)
	brc=$(run "$n" "$t" /tmp/b.out /tmp/b.err LD_PRELOAD=$LIB BUFSEL_LOG=${LOG:-info})
	# VM_RECORD: both transcripts, for the host to keep.
	if [ -e /bufsel/record ]; then
		record "$n" "$nrc" /tmp/n.out
		record "$n.bufsel" "$brc" /tmp/b.out
	fi
	verdict=ok
	case $class in
	same)
		if [ "$nrc" != "$brc" ] || ! same_out /tmp/n.out /tmp/b.out; then
			verdict=DIFFERS
		elif ! loaded /tmp/b.err "$brc"; then
			verdict=NOT-LOADED
		fi
		;;
	emulated|mixed|seccomp)
		if [ "$brc" != "$(cat /bufsel/expected/$n.rc)" ] || ! same_out /bufsel/expected/$n.out /tmp/b.out; then
			verdict=DIFFERS
		elif ! loaded /tmp/b.err "$brc"; then
			verdict=NOT-LOADED
		elif [ "$nrc" = "$(cat /bufsel/expected/$n.rc)" ] && same_out /bufsel/expected/$n.out /tmp/n.out; then
			verdict=NATIVE-HAS-IT
		fi
		;;
	*) verdict=BAD-CLASS ;;
	esac
	echo "| $n | $class | exit $nrc | exit $brc | $verdict | $(cat /tmp/secs) |"
	if [ $verdict = ok ] && [ $class = seccomp ]; then
		limited=$((limited + 1))
	elif [ $verdict = ok ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		if [ $class = same ]; then
			show "$n" "native ($nrc) against bufsel ($brc)" /tmp/n.out /tmp/b.out /tmp/b.err
		else
			show "$n" "the host's reference against bufsel ($brc)" /bufsel/expected/$n.out /tmp/b.out /tmp/b.err
		fi
	fi
done <<EOF
$(repeat cat /bufsel/programs)
EOF

if [ -d /bufsel/liburing ]; then
	echo
	echo "| liburing test | native $(uname -r) | bufsel | host native | verdict | bufsel s |"
	echo "|---|---|---|---|---|---|"
	for f in $(repeat echo /bufsel/liburing/*.t); do
		[ -e "$f" ] || continue
		n=${f##*/}
			# Natively they are shown, not judged: a few seconds tell.
		nrc=$(run "$f" 5 /tmp/n.out /tmp/n.err)
		brc=$(run "$f" 30 /tmp/b.out /tmp/b.err LD_PRELOAD=$LIB ${LOG:+BUFSEL_LOG=$LOG})
		cat /tmp/b.err >>/tmp/b.out
		want=$(cat "${f%.t}.rc")
		if [ "$brc" = "$want" ]; then
			verdict=ok
			pass=$((pass + 1))
		elif [ -f "${f%.t}.known" ] && grep -Eq -f "${f%.t}.known" /tmp/b.out; then
			verdict=KNOWN
			known=$((known + 1))
		else
			verdict=FAILS
			fail=$((fail + 1))
		fi
		echo "| ${n%.t} | exit $nrc | exit $brc | exit $want | $verdict | $(cat /tmp/secs) |"
		if [ $verdict = ok ]; then
			:
		elif grep -q 'outlived its timeout' /tmp/b.out; then
			sed -n '/outlived its timeout/,$p' /tmp/b.out
		else
			tail -n 10 /tmp/b.out
		fi
		[ $verdict != KNOWN ] || echo "(known on 5.10: $(cat "${f%.t}.known"))"
	done
fi

echo
echo "vm-test: $(($(date +%s) - t_start)) s in the guest"
echo "vm-test: result $(uname -r) pass=$pass limited=$limited known=$known fail=$fail"
sync
poweroff -f
