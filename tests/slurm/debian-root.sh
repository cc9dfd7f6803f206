#!/bin/bash
# debian-root.sh - another Debian release in a root folder of its own, to build
# and test gpuckpt against the Slurm that release carries (trixie: Slurm 24.11,
# sid: 26.05) on a Debian bookworm machine (Slurm 22.05). Everything comes from the Debian
# mirror apt already uses; nothing is installed on this machine itself.
#
#   tests/slurm/debian-root.sh path SUITE         make SUITE's root unless cached; print its folder
#   tests/slurm/debian-root.sh run SUITE CMD...   run CMD as root inside it
#                 (GK_ROOT_THROWAWAY=DIR: in an overlay of it, changes kept in DIR)
#   tests/slurm/debian-root.sh check-slurm SUITE [BUILD]
#                 configure and build this tree inside the root (in BUILD,
#                 default build/SUITE, without sanitizers) and run
#                 `make check-slurm` there, against SUITE's own slurmctld and
#                 slurmd; the TAP logs land in BUILD/tests as usual, the
#                 versions of the packages tested in BUILD/packages.txt, and
#                 the check of SUITE's Slurm release (expected_slurm, below)
#                 in BUILD/tests/release.log, a test of its own: a release
#                 other than the expected one fails, saying so
#   tests/slurm/debian-root.sh expected SUITE   the Slurm release SUITE should have
#
# The root: `debootstrap --variant=minbase SUITE` from this machine's mirror,
# then tests/install-deps.sh run inside it (what building and testing gpuckpt
# needs, from SUITE's packages; daemons kept from starting). It is kept in
# $GK_ROOT_CACHE (default /var/cache/gpuckpt-test/debian-root) under a name
# made from the suite, the mirror and this recipe, so a fresh machine makes it
# anew and a changed recipe misses the cache. install-deps.sh runs again at
# each `run` (a no-op when nothing is missing), so packages added to it later
# reach a cached root too. It runs with --criu: a release whose packages have
# CRIU 4 or later (trixie: 4.1.1) gets it, so the tests that need a real CRIU
# (tests/shepherd/stdio-criu.sh, tests/security/criu-attacks.sh) run there.
#
# How CMD runs: in a mount namespace of its own (unshare), with /proc, /sys
# (cgroups), /dev and a fresh /run, /tmp and /dev/shm mounted in the root, this source
# tree and the CUDA toolkit (/usr/local/cuda, read-only) bind-mounted at the
# same paths, then chroot. No init system is needed: the test cluster
# (cluster.sh) starts munged, slurmctld and slurmd itself. With `run`, the
# network and the kernel are this machine's: take the cluster lock (flock
# /tmp/gk-cluster.lock) around a run that starts a cluster, as for the
# bookworm tests. check-slurm runs in a network namespace (a loopback only)
# and an IPC namespace of its own, with its own /dev/shm besides /run and
# /tmp: its clusters' namespace names, ports, munged, test users (the root's
# own /etc/passwd) and /tmp/gpuckpt-e2e are its own, so it needs no lock and
# may run beside the bookworm tests and another root's check-slurm
# (tests/run-all does). The kernel, /sys (cgroups: the test clusters use
# proctrack/linuxproc and make none) and the process table stay shared: no
# test looks for processes by name or user beyond its own cluster's. Every
# mount goes away with the namespace when CMD and what it started have ended.
set -Eeuo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
cache=${GK_ROOT_CACHE:-/var/cache/gpuckpt-test/debian-root}
cuda=${CUDA_PREFIX:-/usr/local/cuda}
die() { echo "debian-root.sh: $*" >&2; exit 1; }
say() { echo "debian-root.sh: $*" >&2; }

need_root() { [ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, mounts, chroot)"; }

# The mirror of this machine's apt sources (deb822 or one-line format).
mirror() {
	local uri
	uri=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | awk '{print $1; exit}')
	[ -n "$uri" ] || uri=$(awk '$1=="deb" && $2 ~ /debian\/?$/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
	[ -n "$uri" ] || die "no Debian mirror found in /etc/apt/sources.list(.d)"
	echo "$uri"
}

# The recipe; hashed into the cache key with the suite and the mirror.
make_root() {
	local suite=$1 dir=$2 uri=$3
	debootstrap --variant=minbase --components=main "$suite" "$dir" "$uri" >"$dir.log" 2>&1 ||
		{ tail -n 20 "$dir.log" >&2; die "debootstrap $suite from $uri failed (log: $dir.log)"; }
	# Packages come from the mirror only: no suggested or recommended extras.
	printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' \
		>"$dir/etc/apt/apt.conf.d/90gpuckpt-test"
	rm -rf "$dir"/var/cache/apt/archives/*.deb
}

root_of() {
	local suite=$1 uri key
	uri=$(mirror)
	key=$( { echo "$suite $uri"; declare -f make_root; } | sha256sum | cut -c1-16)
	echo "$cache/$suite-$key"
}

cmd_path() {
	local suite=$1 root tmp
	root=$(root_of "$suite")
	if [ -f "$root/.gpuckpt-root-made" ]; then echo "$root"; return 0; fi
	need_root
	command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
	mkdir -p "$cache"
	# One maker at a time; a second waits and then finds it made.
	exec 9>"$cache/.lock"
	flock 9
	if [ -f "$root/.gpuckpt-root-made" ]; then echo "$root"; return 0; fi
	tmp=$(mktemp -d "$cache/.make.$suite.XXXXXX")
	SECONDS=0
	say "making the $suite root from $(mirror) (minutes; kept in $cache)"
	make_root "$suite" "$tmp/root" "$(mirror)"
	touch "$tmp/root/.gpuckpt-root-made"
	rm -rf "$root"
	mv "$tmp/root" "$root"
	rm -rf "$tmp"
	say "made the $suite root in ${SECONDS} s: $root"
	echo "$root"
}

# Inside a mount namespace of our own: mount what the root needs, chroot, run.
# With GK_ROOT_THROWAWAY=DIR (an empty folder, not on overlayfs), the root is
# an overlay whose changes go to DIR and vanish with it: a clean machine for
# one run (tests/packages/deb.sh installs packages into it), the cache untouched.
inside() {
	local root=$1
	shift
	mount --make-rprivate /
	if [ -n "${GK_ROOT_THROWAWAY:-}" ]; then
		local t=$GK_ROOT_THROWAWAY
		mkdir -p "$t/upper" "$t/work" "$t/merged"
		mount -t overlay overlay -o "lowerdir=$root,upperdir=$t/upper,workdir=$t/work" "$t/merged"
		root=$t/merged
	fi
	# The root a mount point of its own: inside, "/" must be one for the
	# test cluster's `unshare --mount --propagation slave` (EINVAL otherwise).
	mount --bind "$root" "$root"
	mount -t proc proc "$root/proc"
	mount --rbind /sys "$root/sys"
	mount --rbind /dev "$root/dev"
	mount -t tmpfs -o mode=0755 tmpfs "$root/run"
	mkdir -p "$root/run/lock"
	chmod 1777 "$root/run/lock"
	mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
	# POSIX shared memory of its own too (/dev is this machine's): MPI and
	# PMIx name their segments by host name and job id, which are the same
	# in every test cluster.
	mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
	mkdir -p "$root$top"
	mount --bind "$top" "$root$top"
	if [ -d "$cuda" ]; then
		mkdir -p "$root$cuda"
		mount --bind "$cuda" "$root$cuda"
		mount -o remount,bind,ro "$root$cuda"
	fi
	# apt inside the root reaches the mirror by this machine's resolver.
	cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
	# A network namespace of its own (GK_ROOT_OWN_NET=1, check-slurm): only
	# a loopback, up. No name server answers there, so this machine's name
	# (the root shares its UTS namespace) is in the root's hosts file, on
	# the loopback, as on a Debian machine: munged puts the address of its
	# host in every credential, and Slurm 24.11 and later answer a client
	# (srun, scontrol) by it; with none (0.0.0.0) slurmctld cannot reach
	# the gpuckpt tool's srun, and its scontrol gets "Unexpected message".
	if [ "${GK_ROOT_OWN_NET:-0}" = 1 ]; then
		ip link set lo up || return 1
		{ cat "$root/etc/hosts"; echo "127.0.0.1 $(hostname)"; } >"$root/run/gpuckpt-hosts"
		mount --bind "$root/run/gpuckpt-hosts" "$root/etc/hosts"
	fi
	exec chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" ${CUDA_PREFIX:+CUDA_PREFIX=$CUDA_PREFIX} "$@"
}

cmd_run() {
	local suite=$1 root
	shift
	[ $# -gt 0 ] || die "run: no command"
	need_root
	root=$(cmd_path "$suite")
	# sid's (and testing's) Release files carry a Valid-Until date a week or
	# so ahead; a mirror that is a snapshot, or a machine whose clock is ahead,
	# finds it expired and apt refuses the suite. The signatures are still
	# checked. (Outside make_root: the cache key of the roots made stays.)
	[ -e "$root/etc/apt/apt.conf.d/91gpuckpt-valid-until" ] ||
		echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/91gpuckpt-valid-until"
	if [ "${GK_ROOT_OWN_NET:-0}" = 1 ]; then
		# No network to reach the mirror: the packages first, with this
		# machine's network, then CMD alone in namespaces of its own.
		unshare --mount --propagation private -- "$0" __inside "$root" \
			"$top/tests/install-deps.sh" --criu >&2 || return 1
		# The public program opencl-public.sh runs, while there is a
		# network; without it that test skips, saying why.
		unshare --mount --propagation private -- "$0" __inside "$root" \
			/bin/bash "$top/tests/opencl/public-fetch.sh" >/dev/null || true
		unshare --mount --propagation private --net --ipc -- "$0" __inside "$root" "$@"
		return
	fi
	unshare --mount --propagation private -- "$0" __inside "$root" \
		/bin/sh -c '"$0" --criu >&2 && exec "$@"' "$top/tests/install-deps.sh" "$@"
}

# The Slurm release each suite is expected to carry (Debian's slurm-wlm,
# major.minor): check-slurm fails, saying so, when the root has another.
# sid moves on by itself; when it does, this is the line to change, after
# the suite has passed against the new release (spank-plugin/README.md
# lists what differs between releases).
expected_slurm() {
	case $1 in
	bookworm) echo 22.05 ;;
	trixie) echo 24.11 ;;
	sid) echo 26.05 ;;
	*) echo "" ;;
	esac
}

cmd_check_slurm() {
	local suite=$1 build=${2:-$top/build/$suite} root
	need_root
	mkdir -p "$build"
	build=$(cd "$build" && pwd)
	case $build in "$top"/*) ;; *) die "check-slurm: BUILD must be inside the tree ($top), which is what the root sees" ;; esac
	[ -x "$top/configure" ] || die "no configure in $top: run ./autogen.sh first"
	# One check-slurm per root at a time: the test users and munge's key go
	# into the root's own /etc, which two runs of one suite would share.
	root=$(cmd_path "$suite")
	exec 8>"$root.check-slurm.lock"
	flock -n 8 || { say "another check-slurm runs in the $suite root; waiting for it"; flock 8; }
	# Its own network namespace (and System V IPC, /dev/shm, /run, /tmp): its
	# test clusters' namespace names, addresses, ports, munged and
	# /tmp/gpuckpt-e2e cannot meet this machine's or another root's, so
	# check-slurm may run beside them (tests/run-all does) without the
	# cluster lock (/tmp/gk-cluster.lock).
	GK_ROOT_OWN_NET=1 cmd_run "$suite" /bin/bash -c '
		set -uo pipefail
		top=$1 build=$2 cuda=$3 suite=$4 want=$5
		cd "$build" || exit 1
		got=$(dpkg-query -W -f="\${Version}" slurmd)
		echo "=== $(. /etc/os-release && echo "$PRETTY_NAME"), Slurm $got"
		# Results of an earlier run must not count for this one.
		find . -name "*.trs" -delete
		mkdir -p tests
		# What was tested: the versions of the packages that matter.
		dpkg-query -W -f="\${Package} \${Version}\n" slurm-wlm slurmctld slurmd \
			slurm-client libslurm-dev slurm-wlm-basic-plugins munge libmunge2 \
			libpmix2t64 libpmix2 openmpi-bin criu podman runc gcc libc6 \
			2>/dev/null | awk "NF == 2" >packages.txt
		sed "s/^/=== /" packages.txt
		# The release it got, as a test of its own (tests/release.log):
		# a suite that moved on is a failure that says so, not a pass.
		{
			echo "1..1"
			case $want/$got in
			/*) echo "ok 1 # SKIP no release expected for $suite (expected_slurm in debian-root.sh)" ;;
			"$want/$want".*) echo "ok 1 - $suite has Slurm $got, the release expected ($want)" ;;
			*) echo "not ok 1 - $suite has Slurm ${got:-(none)}, not $want as expected"
				echo "# Debian $suite moved on: run the suite against it, then change"
				echo "# expected_slurm in tests/slurm/debian-root.sh (and spank-plugin/README.md)" ;;
			esac
		} >tests/release.log
		cat tests/release.log
		case $(sed -n 2p tests/release.log) in
		*"# SKIP"*) r=SKIP ;; ok*) r=PASS ;; *) r=FAIL ;;
		esac
		printf ":test-result: %s\n:global-test-result: %s\n:recheck: no\n:copy-in-global-log: no\n" $r $r >tests/release.trs
		"$top/configure" --enable-werror --with-cuda="$cuda" >configure.out 2>&1 ||
			{ tail -30 configure.out; exit 1; }
		make -j"$(nproc)" >make.out 2>&1 || { grep -E -A3 "error|Error" make.out | head -60; exit 1; }
		make check-slurm && [ $r != FAIL ]
	' check-slurm "$top" "$build" "$cuda" "$suite" "$(expected_slurm "$suite")"
}

case ${1:-} in
path) cmd_path "${2:?suite}" ;;
run) shift; suite=${1:?suite}; shift; cmd_run "$suite" "$@" ;;
check-slurm) shift; cmd_check_slurm "${1:?suite}" "${2:-}" ;;
expected) expected_slurm "${2:?suite}" ;;
__inside) shift; inside "$@" ;;
-h | --help) sed -n '2,/^set -Eeuo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' ;;
*) echo "usage: $0 path SUITE | run SUITE CMD... | check-slurm SUITE [BUILD] | expected SUITE" >&2; exit 2 ;;
esac
