#!/bin/bash
# public-fetch.sh [CACHE] - fetch the public OpenCL program opencl-public.sh
# runs (CLBlast's clblast_test_xaxpy, Debian trixie's clblast-tests 1.6.3-1+b1,
# with libclblast1 and libblas3) into CACHE (default $GK_PUBLIC_CACHE or
# /var/cache/gpuckpt-test/opencl-public), each .deb checked against its
# SHA-256 from trixie's package index. What is already there and right is
# kept. Prints the .debs' paths, one a line; on failure, one line saying why
# on standard output, and exits 1.
#
# Separate from the test so that it can run where there is a network:
# tests/slurm/debian-root.sh runs it in a root before the root's tests go
# into a network namespace of their own (GK_ROOT_OWN_NET=1, as CI does).
set -u
MIRROR=${GK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
CACHE=${1:-${GK_PUBLIC_CACHE:-/var/cache/gpuckpt-test/opencl-public}}
DEBS=(
	"pool/main/c/clblast/clblast-tests_1.6.3-1+b1_amd64.deb 2de74db905840ce57c67350f51e92f416cc6a0f5cb47a9469fa809ebc4a41d65"
	"pool/main/c/clblast/libclblast1_1.6.3-1+b1_amd64.deb 37050693717d248b608bbef346058b2969c8fcad2b4c473fdc148c202f876b51"
	"pool/main/l/lapack/libblas3_3.12.1-6_amd64.deb 4af245ecafc30bfa1de9d20af02fec96654ead2f06b1dac40cb03fc9eb0bfbe6"
)
mkdir -p "$CACHE" 2>/dev/null || { echo "cannot make the cache $CACHE"; exit 1; }
err=$(mktemp) || exit 1
trap 'rm -f "$err"' EXIT
for d in "${DEBS[@]}"; do
	path=${d% *} sum=${d#* } f=$CACHE/${path##*/}
	if ! echo "$sum  $f" | sha256sum -c --status 2>/dev/null; then
		rm -f "$f"
		if command -v curl >/dev/null; then
			curl -fsS --max-time 120 -o "$f.part" "$MIRROR/$path" 2>"$err"
		else
			wget -q -T 120 -O "$f.part" "$MIRROR/$path" 2>"$err"
		fi || { echo "cannot fetch $MIRROR/$path (no network?): $(head -c 200 "$err")"; rm -f "$f.part"; exit 1; }
		echo "$sum  $f.part" | sha256sum -c --status || {
			echo "$MIRROR/$path is not the file trixie's index listed (SHA-256 differs): the archive moved on; update DEBS in $0"
			rm -f "$f.part"
			exit 1
		}
		mv "$f.part" "$f"
	fi
	echo "$f"
done
