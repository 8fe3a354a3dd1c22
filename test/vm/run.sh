#!/usr/bin/env bash
# make vm-test: bufsel on a real Linux 5.10 (Debian 11's kernel) under qemu.
#
# Fetches Debian 11's kernel package with apt-get, through a sources list
# and state of its own under $B/vm/apt (the machine's apt configuration is
# not touched), and busybox-static from the machine's own sources; records
# each program's native output on this (the host's) kernel; builds an
# initramfs holding bufsel, its launcher, the test programs, liburing's
# buffer-ring tests and the shared libraries they need, with
# test/vm/init.sh as its /init; boots it in qemu (TCG when there is no
# /dev/kvm) on the serial console; and exits with the guest's verdict.
# A guest that has not reported by VM_TIMEOUT seconds is killed and
# reported.  qemu-system-x86 and cpio are installed with apt-get when
# missing and the user is root.
#
# Environment: B (build dir), LIBURING_TARBALL, VM_TIMEOUT (default 1080),
# VM_PROGRAMS (names to run instead of test/vm/programs' list),
# VM_RECORD=DIR (the guest's native stdout and status of each program
# into DIR/NAME.out and NAME.rc, under bufsel into NAME.bufsel.out/.rc),
# VM_ACCEL=kvm (KVM instead of TCG, where it works: see the boot),
# VM_LIBURING=0 (no liburing tests), VM_LIBURING_TESTS (names instead of
# test/vm/liburing-tests', whose "known:" failures still apply), VM_LOG=LEVEL (BUFSEL_LOG in the guest's bufsel
# runs, and their whole stderr shown for a row that fails), VM_REPEAT=N (each
# row N times over, for a failure that comes now and then).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-build}
case $B in /*) ;; *) B=$ROOT/$B ;; esac
V=$B/vm
KVER=5.10.0-32-amd64
KPKG=linux-image-$KVER-unsigned
: "${VM_TIMEOUT:=1080}"
: "${VM_LIBURING:=1}"

die() { echo "vm-test: $*" >&2; exit 2; }

# ---- tools ------------------------------------------------------------------
missing=()
command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
command -v cpio >/dev/null || missing+=(cpio)
if [ ${#missing[@]} -gt 0 ]; then
	[ "$(id -u)" = 0 ] || die "needs ${missing[*]}: apt-get install ${missing[*]}"
	echo "== installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
[ -f "$B/libbufsel.so" ] && [ -x "$B/bufsel" ] || die "$B/libbufsel.so or $B/bufsel missing (make first)"

# ---- Debian 11's kernel, through apt-get with a configuration of its own ----
APT=$V/apt
aptp() {
	apt-get -q -o Dir::Etc::SourceList="$APT/sources.list" -o Dir::Etc::SourceParts=/nonexistent \
		-o Dir::State="$APT/state" -o Dir::State::status=/dev/null -o Dir::Cache="$APT/cache" \
		-o APT::Sandbox::User=root "$@"
}
if [ ! -f "$V/kernel/vmlinuz" ]; then
	echo "== fetching $KPKG (Debian 11) into $V/kernel"
	rm -rf "$APT" "$V/kernel"
	mkdir -p "$APT/state/lists/partial" "$APT/cache/archives/partial" "$APT/debs" "$V/kernel"
	echo "deb http://deb.debian.org/debian bullseye main" >"$APT/sources.list"
	aptp update >"$APT/update.log" 2>&1 || { tail -n 5 "$APT/update.log"; die "apt-get update (bullseye) failed"; }
	(cd "$APT/debs" && aptp download "$KPKG") >"$APT/download.log" 2>&1 ||
		{ tail -n 5 "$APT/download.log"; die "apt-get download $KPKG failed"; }
	mkdir -p "$APT/x"
	dpkg-deb -x "$APT/debs/${KPKG}_"*.deb "$APT/x"
	grep -q '^CONFIG_IO_URING=y' "$APT/x/boot/config-$KVER" || die "$KPKG has no built-in io_uring"
	cp "$APT/x/boot/vmlinuz-$KVER" "$V/kernel/vmlinuz.tmp"
	rm -rf "$APT/x"
	mv "$V/kernel/vmlinuz.tmp" "$V/kernel/vmlinuz"
fi
if [ ! -x "$V/busybox/bin/busybox" ]; then
	echo "== fetching busybox-static into $V/busybox"
	rm -rf "$V/busybox" "$V/bb-deb" && mkdir -p "$V/bb-deb"
	(cd "$V/bb-deb" && apt-get -q -o APT::Sandbox::User=root download busybox-static) >/dev/null 2>&1 ||
		die "apt-get download busybox-static failed"
	dpkg-deb -x "$V/bb-deb/"busybox-static_*.deb "$V/busybox"
fi

# ---- what runs ----------------------------------------------------------------
mapfile -t LIST < <(grep -vE '^[[:space:]]*(#|$)' "$ROOT/test/vm/programs")
if [ -n "${VM_PROGRAMS:-}" ]; then
	sel=()
	for l in "${LIST[@]}"; do
		for n in $VM_PROGRAMS; do [ "${l%% *}" = "$n" ] && sel+=("$l"); done
	done
	LIST=("${sel[@]}")
fi
LURING=()
declare -A KNOWN=()
while read -r t rest; do
	case $rest in "known: "*) KNOWN[$t]=${rest#known: } ;; esac
done < <(grep -vE '^[[:space:]]*(#|$)' "$ROOT/test/vm/liburing-tests")
if [ "$VM_LIBURING" = 1 ]; then
	LIBURING_TARBALL=${LIBURING_TARBALL:-} B=$B bash "$ROOT/test/liburing/run.sh" --build-only ||
		die "liburing's tests could not be built"
	T=$B/liburing-suite/src/test
	while read -r t _; do
		[ -x "$T/$t.t" ] || die "liburing test $t.t not built"
		LURING+=("$T/$t.t")
	done < <(if [ -n "${VM_LIBURING_TESTS:-}" ]; then printf '%s\n' $VM_LIBURING_TESTS; else
		grep -vE '^[[:space:]]*(#|$)' "$ROOT/test/vm/liburing-tests"; fi)
fi

# ---- the initramfs ----------------------------------------------------------------
R=$V/root
rm -rf "$R"
mkdir -p "$R"/{bin,proc,sys,dev,tmp,bufsel/prog,bufsel/expected,bufsel/liburing}
cp "$V/busybox/bin/busybox" "$R/bin/"
cp "$ROOT/test/vm/init.sh" "$R/init"
chmod 755 "$R/init"
cp "$B/libbufsel.so" "$B/bufsel" "$R/bufsel/"
[ -n "${VM_RECORD:-}" ] && : >"$R/bufsel/record"
[ -n "${VM_LOG:-}" ] && echo "$VM_LOG" >"$R/bufsel/log"
echo "${VM_REPEAT:-1}" >"$R/bufsel/repeat"
: >"$R/bufsel/programs"
echo "== recording the programs' native output on $(uname -r)"
for l in "${LIST[@]}"; do
	read -r n class t <<<"$l"
	[ -x "$B/test/prog/$n" ] || die "$B/test/prog/$n not built (make $B/test/prog/$n)"
	cp "$B/test/prog/$n" "$R/bufsel/prog/"
	echo "$n $class $t" >>"$R/bufsel/programs"
	[ "$class" = same ] && continue
	d=$(mktemp -d)
	rc=0
	# mixed: bufsel here as on 5.10 (BUFSEL_KERNEL), which keeps 5.10's
	# rules for its legacy groups and gives the rest.
	pre=()
	[ "$class" = mixed ] && pre=(LD_PRELOAD="$B/libbufsel.so" BUFSEL_KERNEL=5.10)
	# seccomp: and with the only trap 5.10 has.
	[ "$class" = seccomp ] && pre=(LD_PRELOAD="$B/libbufsel.so" BUFSEL_KERNEL=5.10 BUFSEL_TRAP=seccomp)
	(cd "$d" && env -u LD_PRELOAD $(env | grep -o '^BUFSEL_[A-Z0-9_]*' | sed 's/^/-u /') "${pre[@]}" \
		timeout -s KILL "$t" "$B/test/prog/$n") >"$R/bufsel/expected/$n.out" 2>"$d/err" || rc=$?
	[ $rc = 0 ] || [ "$class" = mixed ] || [ "$class" = seccomp ] || { tail -n 5 "$d/err"; die "$n fails natively here (exit $rc): nothing to expect"; }
	[ $rc != 137 ] || { tail -n 5 "$d/err"; die "$n timed out here: nothing to expect"; }
	echo $rc >"$R/bufsel/expected/$n.rc"
	rm -rf "$d"
done
if [ ${#LURING[@]} -gt 0 ]; then
	echo "== recording liburing's tests' native results on $(uname -r)"
fi
for f in "${LURING[@]}"; do
	cp "$f" "$R/bufsel/liburing/"
	d=$(mktemp -d)
	rc=0
	(cd "$d" && env -u LD_PRELOAD timeout -s KILL 60 "$f") >/dev/null 2>&1 || rc=$?
	rm -rf "$d"
	n=$(basename "$f" .t)
	case $rc in
	0|77) echo $rc >"$R/bufsel/liburing/$n.rc" ;;
	*) die "$n.t fails natively here (exit $rc): nothing to expect" ;;
	esac
	[ -z "${KNOWN[$n]:-}" ] || printf '%s\n' "${KNOWN[$n]}" >"$R/bufsel/liburing/$n.known"
done
[ -d "$B/test/prog/lib" ] && cp -r "$B/test/prog/lib" "$R/bufsel/prog/"
# The shared libraries every binary there needs, at their paths here.
for f in "$R"/bufsel/bufsel "$R"/bufsel/libbufsel.so "$R"/bufsel/prog/* "$R"/bufsel/prog/lib/* "$R"/bufsel/liburing/*; do
	[ -f "$f" ] || continue
	ldd "$f" 2>/dev/null | grep -oE '/[^ ]+' || true
done | sort -u | while read -r so; do
	cp -L --parents "$so" "$R/"
done
(cd "$R" && find . | cpio -o -H newc --quiet | gzip -1) >"$V/initrd.gz"
echo "== initramfs $(du -h "$V/initrd.gz" | cut -f1): ${#LIST[@]} programs, ${#LURING[@]} liburing tests"

# ---- boot -----------------------------------------------------------------------
# TCG (software emulation: slow, but correct, and the same on every machine)
# unless VM_ACCEL=kvm.  KVM is not taken just because /dev/kvm is there: on a
# nested host it refused `-cpu max` (qemu aborted setting the
# IA32_ARCH_CAPABILITIES MSR) and, without that feature, hung the 5.10 guest
# at boot with no output.
accel=${VM_ACCEL:-tcg}
cpu=max
[ "$accel" = kvm ] && cpu=max,-arch-capabilities
LOG=$V/console.log
echo "== booting $KVER (qemu, $accel), at most $VM_TIMEOUT s; console in $LOG"
start=$SECONDS
rc=0
timeout -s KILL "$VM_TIMEOUT" qemu-system-x86_64 -accel "$accel" -cpu "$cpu" -smp 2 -m 2048 \
	-nographic -no-reboot -kernel "$V/kernel/vmlinuz" -initrd "$V/initrd.gz" \
	-append "console=ttyS0 quiet loglevel=3 panic=-1 oops=panic ${VM_APPEND:-}" </dev/null 2>&1 |
	sed -u 's/\r$//' | tee "$LOG" | sed -n '/vm-test: uname/,$p' || rc=$?
echo "== guest ran $((SECONDS - start)) s"
if [ -n "${VM_RECORD:-}" ]; then
	# The guest's native transcripts: NAME.out, and NAME.rc with its status.
	mkdir -p "$VM_RECORD"
	awk -v dir="$VM_RECORD" '
		/^vm-record: begin / { name = $3; rc = $4; b64 = dir "/" name ".b64"; printf "" > b64; next }
		/^vm-record: end / { close(b64); system("base64 -d < \"" b64 "\" > \"" dir "/" name ".out\" && rm \"" b64 "\"");
			print rc > (dir "/" name ".rc"); close(dir "/" name ".rc"); name = ""; next }
		name != "" { print > b64 }
	' "$LOG"
	echo "== the guest's transcripts in $VM_RECORD: $(ls "$VM_RECORD" | grep -c '\.out$')"
fi
res=$(grep -a '^vm-test: result ' "$LOG" | tail -n1 || true)
if [ -z "$res" ]; then
	echo "vm-test: the guest gave no verdict (killed after $VM_TIMEOUT s, or it crashed: $LOG)" >&2
	exit 1
fi
case $res in
*" 5.10."*) ;;
*) echo "vm-test: the guest did not run 5.10: $res" >&2; exit 1 ;;
esac
case $res in
*" fail=0") exit 0 ;;
*) exit 1 ;;
esac
