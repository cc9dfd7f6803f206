#!/bin/bash
# mpi-debs.sh - Open MPI 4.1 with PMIx 4.2, from Debian bookworm, for the GPU
# machine (Ubuntu 24.04, no package registry), so that the MPI example and
# tests/slurm/e2e-mpi-gpu.sh can run there under srun --mpi=pmix.
#
#   on a development machine:  tests/gpu/mpi-debs.sh fetch DIR      (apt-get download)
#   on the GPU machine, root:  tests/gpu/mpi-debs.sh setup DIR      (unpack into /)
#
# DIR travels with the checkout (keep it out of git: .gpudeps/ is ignored).
# setup unpacks like shared/gpu-machine/setup.sh does: into a staging folder,
# then copied in without replacing the merged-/usr links. What the machine
# has already (libhwloc15, libnuma1, zlib, libudev1) is not carried.
#
# A machine with an Open MPI or PMIx of its own (the Ubuntu 24.04 GPU machine
# has Open MPI 4.1.6 and a newer PMIx) must not mix them with these: ldconfig
# points each soname (libopen-rte.so.40, libpmix.so.2, ...) at the newest file
# it finds, so Debian's mpirun and orted ran the machine's libopen-rte and
# libpmix with Debian's components, and crashed in libpmix
# (pmix_preg_base_generate_ppn, called from mca_pmix_ext3x) as soon as they
# registered a job: mpirun (benchmarks/agree/run) and the orted that a
# one-process MPI run starts (the reference of e2e-mpi-gpu.sh) alike; jobs under
# srun --mpi=pmix, which need neither, ran. So setup moves every file that
# shadows one of these libraries, and every component in their component
# folders that these packages do not have, into $ASIDE (saying which), and
# stops unless each soname then resolves to the Debian file and mpirun runs.
#
#   tests/gpu/mpi-debs.sh check DIR   which of DIR's libraries the system's
#                                     sonames do not resolve to (none: exit 0)
set -euo pipefail
ASIDE=${GK_MPI_ASIDE:-/var/lib/gpuckpt-mpi-debs/aside}
PACKAGES=(
	openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev
	libpmix2 libpmix-dev
	libevent-core-2.1-7 libevent-pthreads-2.1-7
	libfabric1 libibverbs1 ibverbs-providers librdmacm1 libnl-3-200 libnl-route-3-200
	libpsm2-2 libpsm-infinipath1 libucx0
)
verb=${1:-} dir=${2:-}
[ -n "$verb" ] && [ -n "$dir" ] || { echo "usage: $0 fetch|setup|check DIR" >&2; exit 2; }

# unpack STAGE: every package of DIR unpacked into STAGE.
unpack() {
	local p f
	for p in "${PACKAGES[@]}"; do
		f=$(ls "$dir"/"${p}"_*.deb 2>/dev/null | head -n 1)
		[ -n "$f" ] || { echo "mpi-debs.sh: $p is missing in $dir (run fetch)" >&2; return 1; }
		dpkg -x "$f" "$1"
	done
}

# sonames STAGE: "SONAME PATH" for each shared library in STAGE (PATH as
# installed, without STAGE).
sonames() {
	local f so
	find "$1" -type f -name 'lib*.so.*' | sort | while read -r f; do
		so=$(readelf -d "$f" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]$/\1/p')
		[ -z "$so" ] || echo "$so ${f#"$1"}"
	done
}

# shadowed STAGE: "PATH OTHER" for each library of STAGE whose soname resolves
# (through ld.so's cache, and in the library's own folder) to OTHER, a file
# that is not one of STAGE's libraries of that soname. (A soname that resolves
# to nothing is not this check's business: libpsm_infinipath.so.1, which
# Debian links through alternatives, never resolves, on Debian either.)
shadowed() {
	local so path mine cand got
	sonames "$1" >"$1.sonames"
	while read -r so path; do
		mine=$(awk -v s="$so" '$1 == s { print $2 }' "$1.sonames" |
			while read -r p; do readlink -f "$p"; done)
		cand=$( (ldconfig -p | awk -v s="$so" '$1 == s && /x86-64/ { print $NF }'
			echo "$(dirname "$path")/$so") | sort -u)
		for c in $cand; do
			got=$(readlink -f "$c" 2>/dev/null) || got=""
			[ -e "$got" ] || continue
			grep -qxF "$got" <<<"$mine" || echo "$path $got"
		done
	done <"$1.sonames" | sort -u
}

# strays STAGE: the components in STAGE's component folders that STAGE lacks.
strays() {
	local d f
	find "$1" -type f -name 'mca_*.so' -printf '%h\n' | sort -u | while read -r d; do
		for f in "${d#"$1"}"/*.so; do
			if [ -e "$f" ] && [ ! -e "$1$f" ]; then echo "$f"; fi
		done
	done
}

# aside FILE: moved into $ASIDE under its own path.
aside() {
	mkdir -p "$ASIDE$(dirname "$1")"
	mv -f "$1" "$ASIDE$1"
	echo "mpi-debs.sh: moved aside the machine's own $1 (into $ASIDE)"
}
case $verb in
fetch)
	mkdir -p "$dir"
	(cd "$dir" && apt-get download "${PACKAGES[@]}" 2>&1 | grep -v unsandboxed || true)
	ls "$dir"/*.deb | wc -l
	;;
setup)
	[ "$(id -u)" -eq 0 ] || { echo "mpi-debs.sh setup: needs root" >&2; exit 1; }
	stage=$(mktemp -d)
	trap 'rm -rf "$stage" "$stage.sonames"' EXIT
	unpack "$stage"
	tar -C "$stage" -cf - . | tar -C / -xf - --keep-directory-symlink --no-overwrite-dir
	# What Debian's postinst scripts would have made.
	ln -sf mpirun.openmpi /usr/bin/mpirun
	ln -sf mpicc.openmpi /usr/bin/mpicc
	for f in $(strays "$stage"); do aside "$f"; done
	ldconfig
	# Each round moves aside what ldconfig preferred; the next one sees
	# whether an older file of the machine comes next.
	for _ in 1 2 3 4; do
		left=$(shadowed "$stage")
		[ -n "$left" ] || break
		# One file can shadow several libraries (same soname): once.
		for f in $(awk '{ print $2 }' <<<"$left" | sort -u); do
			[ ! -e "$f" ] || aside "$f"
		done
		ldconfig
	done
	left=$(shadowed "$stage")
	if [ -n "$left" ]; then
		echo "mpi-debs.sh: these libraries still do not resolve to Debian's (library, what it resolves to):" >&2
		echo "$left" | sed 's/^/mpi-debs.sh:   /' >&2
		exit 1
	fi
	# mpirun registers a job with its PMIx server: what crashed with the mix.
	if ! out=$(timeout 60 mpirun --allow-run-as-root -n 1 true 2>&1); then
		echo "mpi-debs.sh: mpirun -n 1 true failed:" >&2
		echo "$out" | tail -n 20 >&2
		exit 1
	fi
	echo "mpi-debs.sh: ${#PACKAGES[@]} packages unpacked; $(mpirun --version 2>&1 | head -n 1); PMIx $(dpkg-deb -f "$(ls "$dir"/libpmix2_*.deb | head -n 1)" Version); mpirun -n 1 runs"
	;;
check)
	stage=$(mktemp -d)
	trap 'rm -rf "$stage" "$stage.sonames"' EXIT
	unpack "$stage"
	left=$(shadowed "$stage")
	strays "$stage" | sed 's/^/stray component: /'
	echo "mpi-debs.sh: $(wc -l <"$stage.sonames") libraries with a soname in $dir; resolved elsewhere: ${left:-none}"
	[ -z "$left" ] && [ -z "$(strays "$stage")" ]
	;;
*) echo "usage: $0 fetch|setup|check DIR" >&2; exit 2 ;;
esac
