#!/bin/bash
# tools.sh - NVIDIA enroot and pyxis for the container tests, built from the
# unmodified source archives in ../shared/third-party/ (its README says what
# they are) in a scratch folder, never in the tree.
#
#   tests/containers/tools.sh        prints DIR: DIR/enroot (prefix: bin/, etc/enroot,
#                                    lib/enroot) and DIR/spank_pyxis.so
#
# enroot's git submodules are not in its archive: its C helpers are built
# against glibc (FORCE_GLIBC=1) and Debian's libbsd.a (libbsd-dev) and kernel
# headers (linux-libc-dev) instead of its own musl, libbsd and linux-headers;
# makeself (only for `enroot bundle`, unused here) is replaced by a script
# that says so. pyxis is built against this machine's Slurm headers
# (libslurm-dev), as any Slurm plugin must be. The result is kept in
# $GK_CONTAINER_CACHE/tools under a name made from the archives, the Slurm
# version and this recipe; a fresh machine builds it again.
set -Eeuo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
cache=${GK_CONTAINER_CACHE:-/var/cache/gpuckpt-test}
third=${GK_THIRD_PARTY:-$(cd "$top_srcdir/.." && pwd)/shared/third-party}
die() { echo "tools.sh: $*" >&2; exit 1; }

enroot_tgz=$(ls "$third"/enroot-*.tar.gz 2>/dev/null | head -n 1)
pyxis_tgz=$(ls "$third"/pyxis-*.tar.gz 2>/dev/null | head -n 1)
[ -f "$enroot_tgz" ] && [ -f "$pyxis_tgz" ] || die "no enroot or pyxis archive in $third (GK_THIRD_PARTY)"

build() {
	local out=$1 src
	src=$(mktemp -d)
	trap 'rm -rf "$src"' RETURN
	tar -C "$src" -xzf "$enroot_tgz"
	(
		cd "$src"/enroot-*
		mkdir -p deps/dist/makeself/bin
		printf '#!/bin/sh\necho "enroot-makeself: not part of this test build" >&2\nexit 1\n' \
			>deps/dist/makeself/bin/enroot-makeself
		chmod +x deps/dist/makeself/bin/enroot-makeself
		# -o deps: the submodules' build is replaced by Debian's packages (above).
		make -o deps FORCE_GLIBC=1 prefix="$out/enroot" install
	) >"$out/enroot-build.log" 2>&1 || { tail -n 20 "$out/enroot-build.log" >&2; die "enroot build failed"; }
	tar -C "$src" -xzf "$pyxis_tgz"
	(cd "$src"/pyxis-* && make && cp spank_pyxis.so "$out/") >"$out/pyxis-build.log" 2>&1 ||
		{ tail -n 20 "$out/pyxis-build.log" >&2; die "pyxis build failed"; }
}

missing=()
for p in libbsd-dev linux-libc-dev libslurm-dev squashfs-tools; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] || die "missing Debian packages: ${missing[*]} (tests/install-deps.sh installs them)"

key=$( { sha256sum "$enroot_tgz" "$pyxis_tgz" | cut -d' ' -f1; dpkg-query -W -f='${Version}' libslurm-dev
	declare -f build; } | sha256sum | cut -c1-16)
out=$cache/tools/$key
if [ ! -f "$out/built" ]; then
	# enroot records its prefix in its scripts: built in place, marked whole at the end.
	rm -rf "$out"
	mkdir -p "$out"
	SECONDS=0
	build "$out" || exit 1
	echo "tools.sh: built enroot and pyxis in ${SECONDS} s" >&2
	touch "$out/built"
fi
echo "$out"
