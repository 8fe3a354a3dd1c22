#!/bin/bash
# make deb-test: builds the Debian package and checks it on this machine as
# a user would meet it: lintian finds nothing, dpkg -i installs it, the
# installed launcher runs a program under the installed library with the
# native program's output, the man pages and the completion are there, and
# dpkg -r leaves no file of the package (an edited /etc/bufsel.conf stays,
# as dpkg keeps an edited conffile, and purge takes it). It installs into
# the machine's own /usr and /etc, so it refuses to run where bufsel is
# already installed.
#   pkg/test-deb.sh BUILD_DIR VERSION	(make deb-test gives VERSION, read from version.h)
set -euo pipefail

b=$(realpath "${1:?usage: pkg/test-deb.sh BUILD_DIR VERSION}")
version=${2:?usage: pkg/test-deb.sh BUILD_DIR VERSION}
cd "$(dirname "$0")/.."
deb=$b/bufsel_${version}_amd64.deb
prog=$b/test/prog/bs_recv
fails=0

ok() { echo "deb-test: ok   $*"; }
bad() { echo "deb-test: FAIL $*"; fails=$((fails + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
quiet() { "$@" >/dev/null; }

[[ $(id -u) == 0 ]] || { echo "deb-test: needs root (dpkg -i)" >&2; exit 1; }
status=$(dpkg-query -W -f='${Status}' bufsel 2>/dev/null || true)
# What dpkg -r of an unedited package leaves is only dpkg's record of it.
if [[ $status == *config-files* && ! -e /etc/bufsel.conf ]]; then
	dpkg -P bufsel >/dev/null
elif [[ -n $status && $status != *not-installed* ]]; then
	echo "deb-test: a bufsel package is installed or has its configuration here; dpkg -P bufsel first" >&2
	exit 1
fi
[[ -x $prog ]] || { echo "deb-test: $prog is missing (make $prog)" >&2; exit 1; }

pkg/make-deb.sh "$b" "$version"
check "one package, no debug package beside it" test "$(ls "$b"/*.deb)" = "$deb"
tags=$(lintian --pedantic -I "$deb" 2>&1 | grep -v '^running with root' || true)
check "lintian --pedantic -I: no tag${tags:+ ($tags)}" test -z "$tags"

dpkg -i "$deb" >/dev/null
dpkg -L bufsel > "$b/deb/files"
hash -r
check "bufsel is /usr/bin/bufsel" test "$(command -v bufsel)" = /usr/bin/bufsel
check "bufsel --version says $version" test "$(bufsel --version)" = "bufsel $version"
check "bufsel -- true" bufsel -- true
lib=$(bufsel --log info -- true 2>&1 | sed -n 's/.* with \(.*\) preloaded$/\1/p')
check "the installed library is preloaded ($lib)" test "$lib" = "/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/bufsel/libbufsel.so"
native=$("$prog" 2>&1)
under=$(cd / && BUFSEL_LOG=info bufsel -- "$prog" 2>&1)
check "$(basename "$prog") under the installed bufsel prints the native output" \
	test "$(grep -v '^bufsel:' <<<"$under")" = "$native"
check "the library's exit line names version $version" grep -q "^bufsel: exit: .* emulated=[1-9][0-9]* .* version=$version\$" <<<"$under"
check "/etc/bufsel.conf is a conffile" grep -qx /etc/bufsel.conf <(dpkg-query -W -f='${Conffiles}\n' bufsel | awk '{print $1}')
check "/etc/bufsel.conf as shipped is valid" quiet bufsel --check-conf /etc/bufsel.conf
# Every key it shows, uncommented, is a key bufsel takes.
sed -n 's/^#\([a-z_.0-9]* = .*\)/\1/p' /etc/bufsel.conf > "$b/deb/uncommented.conf"
check "/etc/bufsel.conf's commented settings are valid ($(wc -l < "$b/deb/uncommented.conf") lines)" \
	quiet bufsel --check-conf "$b/deb/uncommented.conf"
if command -v man >/dev/null; then
	check "man bufsel" quiet man -w bufsel
	check "man 5 bufsel.conf" quiet man -w 5 bufsel.conf
fi
# The completion, as bash-completion loads it, completes an option and a key.
comp=$(bash -c '
	source /usr/share/bash-completion/bash_completion 2>/dev/null || exit 3
	source /usr/share/bash-completion/completions/bufsel
	COMP_WORDS=(bufsel --set ri); COMP_CWORD=2; COMP_LINE="bufsel --set ri"; COMP_POINT=${#COMP_LINE}
	_bufsel bufsel ri --set 2>/dev/null; printf "%s " "${COMPREPLY[@]}"
	COMP_WORDS=(bufsel --mode ""); COMP_CWORD=2; COMP_LINE="bufsel --mode "; COMP_POINT=${#COMP_LINE}
	_bufsel bufsel "" --mode 2>/dev/null; printf "%s " "${COMPREPLY[@]}"') || true
check "bash completion: --set ri, --mode (got: $comp)" test "$comp" = "rings= emulate passthrough "

dpkg -r bufsel >/dev/null
left=$(while read -r f; do if [[ -L $f || -f $f ]]; then echo "$f"; fi; done < "$b/deb/files")
check "dpkg -r leaves no file of the package${left:+ (left: $left)}" test -z "$left"
dpkg -i "$deb" >/dev/null
check "reinstalled: /etc/bufsel.conf is back" cmp -s /etc/bufsel.conf pkg/bufsel.conf
echo "cap = 8" >> /etc/bufsel.conf
dpkg -r bufsel >/dev/null
check "dpkg -r keeps an edited /etc/bufsel.conf" test -f /etc/bufsel.conf
dpkg -P bufsel >/dev/null
check "dpkg -P takes it" test ! -e /etc/bufsel.conf

echo "deb-test: result: $fails failed"
[[ $fails == 0 ]]
