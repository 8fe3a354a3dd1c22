#!/bin/sh
# make valgrind: bufsel's code under memcheck.
# Usage: test/valgrind/run.sh BUILD_DIR [PROGRAM...]
# With program names, only those programs run (preloaded by hand).
#
# 1. Integration programs (test/prog) with libbufsel.so preloaded, under
#    memcheck, each compared with its native run (same binary, no valgrind, no
#    bufsel): same stdout, exit status 0.  Under valgrind bufsel installs no
#    seccomp filter (preload/valgrind.h), so liburing's inline system calls
#    would go past it; test/valgrind/uring_via_libc.so, preloaded with it,
#    gives the unmodified program liburing's functions over libc syscall() and
#    mmap(), which bufsel hooks.  A run counts only if bufsel's exit report
#    proves it intercepted the program: setup >= 1 (0 for no_uring), every
#    call through the hooks (hooked >= setup, trapped = 0), and bufsel's own
#    line saying it saw valgrind.
# 2. The launcher: the same programs through `bufsel -- PROGRAM` (the launcher
#    under memcheck as well), and its own commands (--check-conf, report on a
#    statistics file bufsel wrote under memcheck, errors), each compared with
#    the same command run natively.
# 3. The Criterion unit tests, every worker process under memcheck.
#
# Every valgrind process must report "ERROR SUMMARY: 0 errors": memcheck
# errors and definite leaks both count (--errors-for-leak-kinds=definite).
# Suppressions: test/valgrind/memcheck.supp.  What is not covered, and why:
# docs/reliability.md, "Sanitizers and analysers", and the EXCLUDED list below.

set -u
B=${1:?usage: $0 BUILD_DIR [PROGRAM...]}
B=$(cd "$B" && pwd) || exit 2
shift
ONLY=$*
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LIB=$B/libbufsel.so
GLUE=$B/test/valgrind/uring_via_libc.so
LAUNCHER=$B/bufsel
SUPP=$ROOT/test/valgrind/memcheck.supp
URING_SO=/usr/lib/x86_64-linux-gnu/liburing.so.2

# Programs run under memcheck, preloaded by hand; the second list also
# through the launcher.
PROGRAMS="nop_batch file_rw pipe_read poll_multishot spin_reap mshot_overflow socket_recv link_fail timeout
	cancel eventfd reg_files sqpoll sqpoll_spin defer_taskrun setup_flags cq_overflow threads
	fork wait_timeout dup_fd fd_reuse registered_ring sq128 raw_syscall sigblock cycles
	bs_provide bs_read bs_recv bs_multishot bs_link bs_cancel bs_groups bs_idle bs_echo bs_eof_wave
	stress_overflow fault_sqe fault_alloc fault_close patch_race resize_rings no_sqarray no_mmap skip_success msg_ring
	pol_cap pol_maxlen pol_inject pol_stats no_uring compat_kernel inline_close sec_probe
	bs_ring_basic bs_ring_attempt bs_ring_multishot bs_ring_bundle bs_ring_inc bs_ring_stream pol_ring_cap bs_ring_echo
	bs_recvmsg_edge bs_bundle bs_tiny_ring sq_chaos bs_prep_checks wait_early
	bs_send_nogroup bs_recv_addr2 compat_fields close_mapped bs_submit_order fork_shared_ring fork_shared_pool
	closed_fd_wait cq_unattended sqpoll_wakeup ring_pages tmo_remove_order"
LAUNCHED="nop_batch raw_syscall bs_read pol_cap no_uring"
# Run once more with every buffer ring bufsel's own (BUFSEL_RINGS=emulate):
# on this kernel the default leaves them to it.
RINGS_EMULATED="bs_ring_basic bs_ring_attempt bs_ring_multishot bs_ring_bundle bs_ring_inc bs_ring_stream pol_ring_cap
	ring_pages"
# Programs left out, each with its reason (checked by hand, not here;
# docs/reliability.md has the details).  A program in neither list fails.
EXCLUDED="nop_static:liburing is linked into the executable, whose inline system calls no libc hook can see
own_sigsys:installs its own seccomp filter, and valgrind 3.19 has no seccomp(2)
exec_child:re-executes /proc/self/exe, which under valgrind is the tool, not the program
exec_nopreload:re-executes /proc/self/exe, which under valgrind is the tool, not the program
init_fail:re-executes /proc/self/exe, which under valgrind is the tool, not the program; and tests the seccomp filter, which valgrind 3.19 lacks
eintr:a thread blocked in io_uring_enter stops every other thread under valgrind 3.19, so the signalling thread never runs
stress_signals:a thread blocked in io_uring_enter stops every other thread under valgrind 3.19, so the signalling thread never runs
stress_recv:threads block in io_uring_enter waiting for data other threads send: under valgrind 3.19 it does not finish in minutes, natively (without bufsel) either
patch_regs:makes io_uring calls with syscall instructions of its own, which no libc hook sees, and loads AVX-512 registers, which valgrind 3.19 does not emulate
stress_fork:re-executes /proc/self/exe, which under valgrind is the tool, not the program
fault_ring:passes unmapped pointers to io_uring_enter and io_uring_register on purpose: memcheck reports those arguments natively too
fault_args:passes unmapped pointers to io_uring_enter and io_uring_register on purpose: memcheck reports those arguments natively too
clone_lock:300 raw clones while a thread provides buffers in a loop: under valgrind 3.19, one thread at a time, it runs past the 120 s limit when the machine is busy
sig_submit:its signal handler submits with a syscall instruction of its own, which no libc hook sees (the patch_regs case)
sqe_race:a thread rewrites the SQE being submitted; which opcodes the race lets through depends on timing, and valgrind 3.19 runs one thread at a time
sec_novm:installs its own seccomp filter (process_vm_readv denied), and valgrind 3.19 has no seccomp(2)
sec_mdwe:sets PR_SET_MDWE, under which valgrind 3.19 itself cannot continue (natively, without bufsel, too: it makes its translations executable after writing them); and re-executes /proc/self/exe
sec_wx_filter:installs its own seccomp filter refusing executable writable memory, under which valgrind 3.19 itself cannot continue (natively too); and re-executes /proc/self/exe
sec_wx_fork:counts the process's writable and executable mappings, and valgrind's own translation cache is such a mapping (natively too)
ring_close_unmap:its point is the close liburing makes with an inline system call, which bufsel sees only through Syscall User Dispatch, and valgrind 3.19 issues the program's system calls itself
bs_wait_many:a thread blocked in io_uring_enter stops every other thread under valgrind 3.19, so its sending thread runs only once the wait's timeout has ended it (natively under valgrind, without bufsel, too)
exec_uring_nopreload:re-executes /proc/self/exe, which under valgrind is the tool, not the program; and checks what the trap leaves behind exec, and valgrind 3.19 runs bufsel without one
gate_addr:prints where the trap's gate is, and under valgrind 3.19 bufsel installs no trap
raw_signals:checks signal frames the trap rewrites (rt_sigreturn, raw sigprocmask) and under valgrind 3.19 bufsel installs no trap
fork_setup_race:400 processes, each started under memcheck, run past the time limit; and the race it checks is in thread start, which valgrind 3.19 serialises
taskrun_flag:under valgrind bufsel cannot map the kernel's SQ flags word into the program's view of the ring (valgrind refuses the mremap that makes a second mapping of a page), so a DEFER_TASKRUN | TASKRUN_FLAG ring shows IORING_SQ_TASKRUN always (docs/ARCHITECTURE.md)
bs_timeout_wait:a thread blocked in io_uring_enter stops every other thread under valgrind 3.19, so its writing thread runs only once the wait's timeout has ended it
bs_timeout_count:its case 3 writes from a second thread while the main thread waits in io_uring_enter, which valgrind 3.19 does not let run until the wait ends
fault_limits:lowers RLIMIT_NOFILE, which valgrind refuses (EPERM: it keeps descriptors of its own above the program's limit)"

# --fair-sched=yes: with valgrind's default lock a thread spinning on CQ
# memory takes the lock back at the end of each time slice, and the bufsel
# thread that must move its completions (a fork child's mover, the SQPOLL
# poller) may not run for seconds; the kernel's scheduler is fair.
VG="valgrind --fair-sched=yes --error-exitcode=99 --leak-check=full --show-leak-kinds=definite
	--errors-for-leak-kinds=definite --suppressions=$SUPP --trace-children=yes"
UNIT_TIMEOUT=900
PROG_TIMEOUT=120

for f in "$LIB" "$GLUE" "$LAUNCHER" "$URING_SO"; do
	[ -e "$f" ] || { echo "valgrind: $f not built" >&2; exit 2; }
done
command -v valgrind >/dev/null || { echo "valgrind: valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }

# Nothing of the caller's bufsel settings may leak into a run.
unset LD_PRELOAD
for v in $(env | sed -n 's/^\(BUFSEL_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$v"
done

T=$(mktemp -d /tmp/bufsel-valgrind-XXXXXX) || exit 2
trap 'rm -rf "$T"' EXIT

# Verdicts go to a file, one line each, so that checks can run in subshells.
: >"$T/verdicts"
JOBS=$(nproc 2>/dev/null || echo 2)

# ok NAME
ok() {
	echo "ok $1" >>"$T/verdicts"
	echo "    ok"
}

# not_ok NAME WHY [FILE...]: the files (valgrind's log, stderr) are shown.
not_ok() {
	echo "FAIL $1" >>"$T/verdicts"
	echo "    FAIL: $2"
	shift 2
	for f in "$@"; do
		[ -s "$f" ] || continue
		echo "    --- $(basename "$f") (last 60 lines)"
		tail -n 60 "$f" | sed 's/^/    /'
	done
}

# each_program preload|rings|launcher PROGRAM...: check_prog on each, JOBS at a
# time, every batch's output printed in order once it is done.
each_program() {
	how=$1
	shift
	batch=""
	n=0
	for p in "$@"; do
		check_prog "$p" "$how" >"$T/$p.$how.log" 2>&1 &
		batch="$batch $p"
		n=$((n + 1))
		[ $n -lt "$JOBS" ] || flush_batch
	done
	flush_batch
}

flush_batch() {
	wait
	for q in $batch; do
		cat "$T/$q.$how.log"
	done
	batch=""
	n=0
}

# elapsed SECONDS-AT-START: for the section headers.
elapsed() {
	echo "($(($(date +%s) - $1)) s)"
}

# vg_clean LOG: every valgrind process in LOG finished with no error, and there was one.
vg_clean() {
	grep -q 'ERROR SUMMARY: 0 errors' "$1" && ! grep -q 'ERROR SUMMARY: [1-9]' "$1"
}

# glue_gaps PROGRAM DIR: the liburing functions PROGRAM imports that
# uring_via_libc.so does not define.
glue_gaps() {
	nm -D --undefined-only "$1" | awk '{ sub(/@.*/, "", $2); print $2 }' | sort -u >"$2/imports"
	nm -D --defined-only "$URING_SO" | awk '{ sub(/@.*/, "", $3); print $3 }' | sort -u >"$2/uring"
	nm -D --defined-only "$GLUE" | awk '{ print $3 }' | sort -u >"$2/glue"
	comm -12 "$2/imports" "$2/uring" | comm -23 - "$2/glue" | tr '\n' ' '
}

# exit_sums ERRFILE: "lines setup hooked trapped" over every bufsel exit report.
exit_sums() {
	sed -n 's/^bufsel: exit: .* setup=\([0-9]*\) .* trapped=\([0-9]*\) hooked=\([0-9]*\) .*/\1 \2 \3/p' "$1" |
		awk '{ n++; s += $1; t += $2; h += $3 } END { printf "%d %d %d %d\n", n, s, h, t }'
}

# check_prog NAME preload|rings|launcher
check_prog() {
	name=$1 how=$2
	exe=$B/test/prog/$name
	d=$T/$name.$how
	mkdir -p "$d"
	echo "=== $how/$name"
	if [ ! -x "$exe" ]; then
		not_ok "$how/$name" "$exe not built"
		return
	fi
	gaps=$(glue_gaps "$exe" "$d")
	if [ -n "$gaps" ]; then
		not_ok "$how/$name" "imports liburing functions uring_via_libc.c lacks: $gaps"
		return
	fi
	timeout -s KILL $PROG_TIMEOUT "$exe" >"$d/native.out" 2>"$d/native.err" </dev/null
	st=$?
	if [ $st -ne 0 ]; then
		not_ok "$how/$name" "the native run exited with status $st" "$d/native.err"
		return
	fi
	if [ "$how" = preload ]; then
		set -- env LD_PRELOAD="$GLUE:$LIB" BUFSEL_LOG=info "$exe"
	elif [ "$how" = rings ]; then
		set -- env LD_PRELOAD="$GLUE:$LIB" BUFSEL_LOG=info BUFSEL_RINGS=emulate "$exe"
	else
		set -- env LD_PRELOAD="$GLUE" BUFSEL_LOG=info "$LAUNCHER" -- "$exe"
	fi
	# The log goes to fd 9, opened here: a log file valgrind opened itself
	# would take a low fd in the program and shift the numbers it prints.
	# shellcheck disable=SC2086
	timeout -s KILL $PROG_TIMEOUT $VG --log-fd=9 "$@" 9>"$d/vg.log" >"$d/out" 2>"$d/err" </dev/null
	st=$?
	if [ $st -eq 99 ] || ! vg_clean "$d/vg.log"; then
		not_ok "$how/$name" "memcheck reported errors (exit status $st)" "$d/vg.log"
		return
	fi
	if [ $st -ne 0 ]; then
		not_ok "$how/$name" "exited with status $st under memcheck" "$d/err" "$d/vg.log"
		return
	fi
	if ! cmp -s "$d/native.out" "$d/out"; then
		not_ok "$how/$name" "stdout differs from the native run" "$d/err"
		diff "$d/native.out" "$d/out" | head -n 20 | sed 's/^/    /'
		return
	fi
	read -r lines setup hooked trapped <<-EOF
	$(exit_sums "$d/err")
	EOF
	if [ "$lines" -eq 0 ]; then
		not_ok "$how/$name" "no \"bufsel: exit:\" report: bufsel was not loaded" "$d/err"
	elif ! grep -q '^bufsel: running under valgrind:' "$d/err"; then
		not_ok "$how/$name" "bufsel did not notice valgrind" "$d/err"
	elif [ "$trapped" -ne 0 ]; then
		not_ok "$how/$name" "trapped=$trapped: a seccomp trap under valgrind" "$d/err"
	elif [ "$name" = no_uring ] && [ "$setup" -ne 0 ]; then
		not_ok "$how/$name" "setup=$setup for a program without io_uring" "$d/err"
	elif [ "$name" != no_uring ] && { [ "$setup" -lt 1 ] || [ "$hooked" -lt "$setup" ]; }; then
		not_ok "$how/$name" "setup=$setup hooked=$hooked: bufsel did not intercept the program" "$d/err"
	else
		echo "    $lines exit report(s): setup=$setup hooked=$hooked trapped=$trapped"
		ok "$how/$name"
	fi
}

# check_cmd NAME STATUS CMD...: the launcher command under memcheck exits
# with STATUS and prints what it prints natively, on stdout and stderr.
check_cmd() {
	name=$1 want=$2
	shift 2
	d=$T/launcher-$name
	mkdir -p "$d"
	echo "=== launcher/$name"
	"$@" >"$d/native.out" 2>"$d/native.err" </dev/null
	nst=$?
	# shellcheck disable=SC2086
	timeout -s KILL $PROG_TIMEOUT $VG --log-fd=9 "$@" 9>"$d/vg.log" >"$d/out" 2>"$d/err" </dev/null
	st=$?
	if [ $st -eq 99 ] || ! vg_clean "$d/vg.log"; then
		not_ok "launcher/$name" "memcheck reported errors (exit status $st)" "$d/vg.log"
	elif [ $st -ne "$want" ] || [ $nst -ne "$want" ]; then
		not_ok "launcher/$name" "exit status $st under memcheck, $nst natively, wanted $want" "$d/err"
	elif ! cmp -s "$d/native.out" "$d/out" || ! cmp -s "$d/native.err" "$d/err"; then
		not_ok "launcher/$name" "output differs from the native run" "$d/err"
		diff "$d/native.out" "$d/out" | head -n 20 | sed 's/^/    /'
		diff "$d/native.err" "$d/err" | head -n 20 | sed 's/^/    /'
	else
		ok "launcher/$name"
	fi
}

# ---- 1. integration programs, preloaded by hand --------------------------------
start=$(date +%s)
if [ -z "$ONLY" ]; then
	echo "=== every program is run or left out with a reason"
	missing=""
	# shellcheck disable=SC2086
	listed=" $(printf '%s ' $PROGRAMS)$(echo "$EXCLUDED" | sed 's/:.*//' | tr '\n' ' ')"
	for f in "$B"/test/prog/*; do
		if [ ! -f "$f" ] || [ ! -x "$f" ]; then
			continue
		fi
		n=$(basename "$f")
		case "$listed" in
		*" $n "*) ;;
		*) missing="$missing $n" ;;
		esac
	done
	if [ -n "$missing" ]; then
		not_ok programs-listed "built but neither run nor left out in test/valgrind/run.sh:$missing"
	else
		ok programs-listed
	fi
fi
# shellcheck disable=SC2086
each_program preload ${ONLY:-$PROGRAMS}
# shellcheck disable=SC2086
[ -z "$ONLY" ] && each_program rings $RINGS_EMULATED
echo "--- integration programs $(elapsed "$start")"

# ---- 2. the launcher ------------------------------------------------------------
start=$(date +%s)
if [ -z "$ONLY" ]; then

# shellcheck disable=SC2086
each_program launcher $LAUNCHED

# Statistics written under memcheck, then read by the report under memcheck.
echo "=== launcher/stats-file"
stats=$T/pol_stats.json
# shellcheck disable=SC2086
timeout -s KILL $PROG_TIMEOUT $VG --log-fd=9 env LD_PRELOAD="$GLUE:$LIB" BUFSEL_STATS="$stats" \
	"$B/test/prog/pol_stats" 9>"$T/stats.vg.log" >/dev/null 2>"$T/stats.err" </dev/null
st=$?
if [ $st -ne 0 ] || ! vg_clean "$T/stats.vg.log" || [ ! -s "$stats" ]; then
	not_ok launcher/stats-file "pol_stats with BUFSEL_STATS: status $st, statistics file $( [ -s "$stats" ] && echo written || echo missing)" \
		"$T/stats.err" "$T/stats.vg.log"
else
	ok launcher/stats-file
fi
printf '{"pid":1,"rings":[{"ring":0,"groups":[' >"$T/bad.json"
printf 'mode = emulate\nlog = warn\ncap = 8\ngroup.7.max_len = 100\nenobufs_rate = 0.25\n' >"$T/good.conf"
printf 'mode = emulate\ncap = lots\nnot_a_key = 1\n' >"$T/bad.conf"
check_cmd help 0 "$LAUNCHER" --help
check_cmd check-conf 0 env BUFSEL_GROUP_3_CAP=2 "$LAUNCHER" --log info --check-conf "$T/good.conf"
check_cmd check-conf-errors 1 env BUFSEL_SEED=x "$LAUNCHER" --check-conf "$T/bad.conf"
check_cmd report 0 "$LAUNCHER" report "$stats"
check_cmd report-margin 0 "$LAUNCHER" report --margin 50 --percentile 90 "$stats"
check_cmd report-bad-file 1 "$LAUNCHER" report "$T/bad.json"
check_cmd bad-option 2 "$LAUNCHER" --no-such-option -- /bin/true
echo "--- launcher $(elapsed "$start")"

# ---- 3. unit tests ----------------------------------------------------------------
start=$(date +%s)
# Criterion runs each test in a worker process it executes anew; memcheck
# follows them (--trace-children) into their own logs.  A worker's memcheck
# errors do not fail its test, so the logs decide.  The shell, python3 and
# gnuplot that some tests start run natively.  report::plot_problems is left
# out: glibc's posix_spawnp cannot report a missing program under valgrind
# (it sees exit status 127, not ENOENT), so that test's "no gnuplot" line
# differs; the other plot tests run.  preload_heap's two stress tests (four
# threads and a 50 us signal, hundreds of thousands of allocations each) are
# left out: under memcheck, one thread at a time, they do not finish in
# minutes, and the memory they stress is bufsel's own mappings, which
# memcheck does not track; its other tests run.
for t in "$B"/test/unit/*; do
	if [ ! -f "$t" ] || [ ! -x "$t" ]; then
		continue
	fi
	n=$(basename "$t")
	d=$T/unit-$n
	mkdir -p "$d"
	echo "=== unit/$n"
	filter=""
	[ "$n" = launcher_report ] && filter="--filter=!(report/plot_problems)"
	[ "$n" = preload_heap ] && filter="--filter=!(heap/threads_at_once|heap/signal_handler_interrupting_the_heap)"
	# shellcheck disable=SC2086
	timeout -s KILL $UNIT_TIMEOUT $VG --trace-children-skip='/bin/sh,*/python3*,*/gnuplot*' \
		--log-file="$d/vg.%p.log" "$t" --jobs 2 $filter >"$d/out" 2>&1 </dev/null
	st=$?
	bad=$(grep -l 'ERROR SUMMARY: [1-9]' "$d"/vg.*.log 2>/dev/null | head -n 3)
	procs=$(grep -l 'ERROR SUMMARY: 0 errors' "$d"/vg.*.log 2>/dev/null | wc -l)
	if [ -n "$bad" ]; then
		# shellcheck disable=SC2086
		not_ok "unit/$n" "memcheck reported errors" $bad
	elif [ $st -ne 0 ]; then
		not_ok "unit/$n" "exited with status $st under memcheck" "$d/out"
	elif [ "$procs" -lt 2 ]; then
		not_ok "unit/$n" "only $procs process(es) ran under memcheck: the workers were not followed" "$d/out"
	else
		echo "    $procs processes under memcheck, $(tail -n 1 "$d/out" | sed 's/^\[====\] //')"
		ok "unit/$n"
	fi
done

echo "--- unit tests $(elapsed "$start")"
echo
echo "not run under memcheck:"
echo "$EXCLUDED" | sed 's/^\([^:]*\):/  \1: /'
fi

pass=$(grep -c '^ok ' "$T/verdicts")
fail=$(grep -c '^FAIL ' "$T/verdicts")
echo
echo "valgrind summary: $pass passed, $fail failed"
if [ "$fail" -ne 0 ]; then
	echo "failed: $(sed -n 's/^FAIL //p' "$T/verdicts" | tr '\n' ' ')"
	echo "every run's files are kept in $T"
	trap - EXIT
	exit 1
fi
exit 0
