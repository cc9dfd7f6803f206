#!/bin/bash
# images.sh - container images for the container tests, made from Debian's own
# packages with debootstrap from the mirror apt already uses; nothing comes from
# an image registry.
#
#   tests/containers/images.sh rootfs SUITE      print the path of SUITE's base tarball
#   tests/containers/images.sh heat SUITE DIR    DIR/SUITE.tar and DIR/SUITE.sqsh: the base
#                                                with examples/heat inside (/opt/heat)
#
# The base (debootstrap --variant=minbase, docs and locales taken out) costs
# minutes on a small machine, so it is kept in $GK_CONTAINER_CACHE (default
# /var/cache/gpuckpt-test) under a name made from everything that goes into it
# (suite, mirror, package list, this file's recipe); a fresh machine makes it
# again. The heat image is cheap (a copy and an uncompressed squashfs) and is
# made anew for each run from the build's binaries.
set -Eeuo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$top_srcdir/build}"
cache=${GK_CONTAINER_CACHE:-/var/cache/gpuckpt-test}
die() { echo "images.sh: $*" >&2; exit 1; }

# The mirror of this machine's apt sources (deb822 or one-line format).
mirror() {
	local uri
	uri=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | awk '{print $1; exit}')
	[ -n "$uri" ] || uri=$(awk '$1=="deb" && $2 ~ /debian\/?$/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
	[ -n "$uri" ] || die "no Debian mirror found in /etc/apt/sources.list(.d)"
	echo "$uri"
}

# What the images hold besides minbase: nothing; the heat example needs only libc.
INCLUDE=""

# The recipe, also hashed into the cache key: change it and the cache misses.
make_rootfs() {
	local suite=$1 dir=$2 uri=$3
	debootstrap --variant=minbase ${INCLUDE:+--include=$INCLUDE} "$suite" "$dir" "$uri" >"$dir.log" 2>&1 ||
		{ tail -n 20 "$dir.log" >&2; die "debootstrap $suite from $uri failed"; }
	rm -rf "$dir"/usr/share/doc/* "$dir"/usr/share/man/* "$dir"/usr/share/locale/* "$dir"/usr/share/info/* \
		"$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/* "$dir"/var/log/*.log
}

cmd_rootfs() {
	local suite=$1 uri key out
	uri=$(mirror)
	key=$( { echo "$suite $uri $INCLUDE"; declare -f make_rootfs; } | sha256sum | cut -c1-16)
	out=$cache/rootfs/$suite-$key.tar
	if [ -s "$out" ]; then echo "$out"; return 0; fi
	command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
	mkdir -p "$cache/rootfs"
	tmp=$(mktemp -d "$cache/rootfs/.make.$suite.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	SECONDS=0
	make_rootfs "$suite" "$tmp/root" "$uri"
	rm -f "$tmp/root.log"
	tar -C "$tmp/root" --numeric-owner -cf "$tmp/rootfs.tar" .
	mv "$tmp/rootfs.tar" "$out"
	echo "images.sh: made $suite base from $uri in ${SECONDS} s: $out" >&2
	echo "$out"
}

cmd_heat() {
	local suite=$1 dir=$2 base heat module root
	heat=$top_builddir/examples/heat/heat-drv
	module=$top_builddir/examples/heat/.libs/heat_kernels_host.so
	[ -x "$heat" ] && [ -f "$module" ] || die "examples/heat is not built ($heat, $module)"
	base=$(cmd_rootfs "$suite")
	mkdir -p "$dir"
	root=$dir/$suite.root
	rm -rf "$root"
	mkdir -p "$root"
	tar -C "$root" -xf "$base"
	# Device nodes: containers get /dev from the runtime, and an unprivileged
	# unsquashfs (enroot) cannot make them.
	rm -rf "$root"/dev/*
	mkdir -p "$root/opt/heat"
	cp "$heat" "$module" "$root/opt/heat/"
	tar -C "$root" --numeric-owner -cf "$dir/$suite.tar" .
	rm -f "$dir/$suite.sqsh"
	# Uncompressed: made every run, read once per job; compression would only cost time.
	mksquashfs "$root" "$dir/$suite.sqsh" -noappend -noI -noD -noF -noX -quiet -no-progress >/dev/null ||
		die "mksquashfs $dir/$suite.sqsh failed"
	rm -rf "$root"
}

case ${1:-} in
rootfs) cmd_rootfs "${2:?suite}" ;;
heat) cmd_heat "${2:?suite}" "${3:?dir}" ;;
*) echo "usage: $0 rootfs SUITE | heat SUITE DIR" >&2; exit 2 ;;
esac
