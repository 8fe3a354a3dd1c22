#!/bin/bash
# make deb: builds build/bufsel_<version>_amd64.deb with Debian's own tools
# (dpkg-buildpackage, debhelper) from a copy of the tree, so that the build
# tree and the tests stay as they are.
#   pkg/make-deb.sh BUILD_DIR VERSION	(make deb gives VERSION, read from version.h)
set -euo pipefail

out=$(realpath -m "${1:?usage: pkg/make-deb.sh BUILD_DIR VERSION}")
version=${2:-}
cd "$(dirname "$0")/.."
[[ -n $version ]] || { echo "make deb: no version (BUFSEL_VERSION in version.h)" >&2; exit 1; }
for tool in dpkg-buildpackage dh; do
	command -v "$tool" >/dev/null || { echo "make deb: $tool is missing: apt-get install -y dpkg-dev debhelper" >&2; exit 1; }
done

stage=$out/deb
src=$stage/bufsel-$version
rm -rf "$stage"
mkdir -p "$src"
# The sources only: no build tree, no version-control data.
tar --exclude=./build --exclude='./build-*' --exclude=./.git -cf - . | tar -xf - -C "$src"
cp -r pkg/debian/. "$src/debian"

# The changelog carries the version; its date is the last commit's when
# there is one, so that the same tree gives the same package.
when=$(git log -1 --format=%cD 2>/dev/null || date -R)
maint=$(sed -n 's/^Maintainer: //p' pkg/debian/control)
cat > "$src/debian/changelog" <<END
bufsel ($version) unstable; urgency=medium

  * Version $version (version.h).

 -- $maint  $when
END

# The maintainer scripts know the shipped /etc/bufsel.conf: postrm by its
# digest, preinst by its text.
md5=$(md5sum < pkg/bufsel.conf | cut -d' ' -f1)
sed "s/@CONF_MD5@/$md5/" pkg/debian/bufsel.postrm.in > "$src/debian/bufsel.postrm"
awk -v conf=pkg/bufsel.conf '
	$0 == "@CONF_TEXT@" { while ((getline line < conf) > 0) print line; next }
	{ print }' pkg/debian/bufsel.preinst.in > "$src/debian/bufsel.preinst"
rm -f "$src"/debian/*.in

(cd "$src" && SOURCE_DATE_EPOCH=$(date -d "$when" +%s) dpkg-buildpackage -b -us -uc >"$stage/build.log" 2>&1) || {
	tail -40 "$stage/build.log" >&2
	echo "make deb: dpkg-buildpackage failed; the whole log is $stage/build.log" >&2
	exit 1
}
rm -f "$out"/bufsel_*.deb
mv "$stage/bufsel_${version}_amd64.deb" "$out/"
echo "make deb: $out/bufsel_${version}_amd64.deb"
