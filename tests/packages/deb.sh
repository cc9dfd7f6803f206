#!/bin/bash
# deb.sh - the Debian packages, built, checked and installed on a clean
# machine, and the demo run from the installed files (make check-packages;
# root; take the cluster lock: it starts a Slurm cluster).
#
# 1. dpkg-buildpackage -b from a copy of this source tree (debian/), into
#    $top_builddir/packages/ (inside the tree, which is what the root sees);
# 2. lintian over them: no errors;
# 3. what each package holds: the libraries (runtime and MPI), headers, tool, shepherd, plugin
#    with its plugstack.conf.d drop-in, staging script, the six man pages,
#    the containers' bundle maker and hooks;
#    the plugin's dependency names the Slurm release it was built against;
# 4. a throw-away Debian bookworm root (tests/slurm/debian-root.sh, an
#    overlay over the cached root, so nothing stays): apt-get installs the
#    .deb files, with their dependencies from the mirror; the files are in
#    place; sbatch --help, through the package's drop-in, has
#    --gpu-checkpoint; then tests/slurm/demo.sh --installed --fake-gpus runs
#    with the installed plugin, runtime, staging script and tool (the
#    application and the CUDA stand-in are the build tree's: test fixtures),
#    and its job must end with the uninterrupted run's checksum, and each of
#    its "restored:" lines name the step that restart resumed from in the
#    job's output (tests/slurm/demo-check.sh); the packages are purged.
#
# GK_DEBS=DIR: test the .deb files in DIR instead of building them.
# GK_PKG_DEMO=0: leave the demo out (a SKIP): all the rest starts no cluster
# and needs no cluster lock.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"

N=20
why=""
if [ "$(id -u)" -ne 0 ]; then
	why="needs root (builds a Debian root, installs packages into it, starts Slurm)"
elif [ -z "${GK_DEBS:-}" ] && ! command -v dpkg-buildpackage >/dev/null; then
	why="dpkg-buildpackage is not installed (dpkg-dev)"
elif [ -z "${GK_DEBS:-}" ] && ! command -v dh >/dev/null; then
	why="debhelper is not installed"
elif ! command -v lintian >/dev/null; then
	why="lintian is not installed"
elif ! command -v debootstrap >/dev/null; then
	why="debootstrap is not installed"
elif [ -n "${ASAN_RUNTIME:-}" ]; then
	why="sanitizer build: the demo needs the build's heat app without ASan; run make check-packages in a normal build"
else
	case $(cd "$top_builddir" && pwd) in "$(cd "$top_srcdir" && pwd)"/*) ;;
	*) why="the build folder must be inside the source tree (the Debian root sees only the tree)" ;; esac
fi
tap_plan $N
if [ -n "$why" ]; then
	for _ in $(seq $N); do tap_skip "$why"; done
	exit 0
fi

top=$(cd "$top_srcdir" && pwd)
out=$(cd "$top_builddir" && pwd)/packages
PKGS="libgpuckpt0 libgpuckpt-dev libgpuckpt-mpi0 libgpuckpt-mpi-dev gpuckpt gpuckpt-shepherd slurm-spank-gpuckpt gpuckpt-stage"
gk_scratch

# 1. Build, in a copy: dpkg-buildpackage writes into the tree and its parent.
if [ -n "${GK_DEBS:-}" ]; then
	rm -rf "$out" && mkdir -p "$out" && cp "$GK_DEBS"/*.deb "$GK_DEBS"/*.changes "$GK_DEBS"/*.buildinfo "$out"/ 2>/dev/null
	tap_skip "GK_DEBS=$GK_DEBS: not built here"
else
	src=$GK_SCRATCH/gpuckpt-0.1.0
	mkdir -p "$src"
	if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
		(cd "$top" && git ls-files -co --exclude-standard | grep -v '^build/' | tar -cf - -T -) | tar -xf - -C "$src"
	else
		tar -C "$top" --exclude=./build --exclude=./debian/build -cf - . | tar -xf - -C "$src"
	fi
	log=$GK_SCRATCH/build.log
	(cd "$src" && CUDA_PREFIX=${CUDA_PREFIX:-/usr/local/cuda} dpkg-buildpackage -us -uc -b -j"$(nproc)") >"$log" 2>&1
	rc=$?
	check "dpkg-buildpackage -b succeeds" [ $rc -eq 0 ]
	[ $rc -eq 0 ] || tap_diag "$(tail -n 40 "$log")"
	rm -rf "$out" && mkdir -p "$out"
	mv "$GK_SCRATCH"/*.deb "$GK_SCRATCH"/*.changes "$GK_SCRATCH"/*.buildinfo "$out"/ 2>/dev/null
fi
missing=""
for p in $PKGS; do ls "$out/${p}_"*.deb >/dev/null 2>&1 || missing+=" $p"; done
check "eight packages: $PKGS${missing:+ (missing:$missing)}" [ -z "$missing" ]

# 2. lintian.
lint=$(lintian --tag-display-limit 0 "$out"/*.changes 2>&1)
errors=$(grep '^E: ' <<<"$lint")
check "lintian: no errors ($(grep -c '^W: ' <<<"$lint") warnings)" [ -z "$errors" ]
[ -z "$lint" ] || tap_diag "$lint"

# 3. What each holds.
holds() {
	local pkg=$1 list missing="" f
	shift
	# Each entry's path (a link's: the name before "->").
	list=$(dpkg-deb -c "$out/${pkg}_"*.deb 2>/dev/null | awk '{ print ($(NF - 1) == "->") ? $(NF - 2) : $NF }')
	for f in "$@"; do grep -qE "^\./$f\$" <<<"$list" || missing+=" $f"; done
	[ -z "$missing" ] || tap_diag "$pkg lacks:$missing"
	[ -z "$missing" ]
}
check "libgpuckpt0: the runtime library" holds libgpuckpt0 'usr/lib/[^/]+/libgpuckpt\.so\.0.*'
check "libgpuckpt-dev: the headers and the link" holds libgpuckpt-dev usr/include/gpuckpt.h \
	usr/include/gpuckpt_coord.h 'usr/lib/[^/]+/libgpuckpt\.so'
check "libgpuckpt-mpi0: the MPI library" holds libgpuckpt-mpi0 'usr/lib/[^/]+/libgpuckpt-mpi\.so\.0.*'
check "libgpuckpt-mpi-dev: gpuckpt_mpi.h and the link" holds libgpuckpt-mpi-dev usr/include/gpuckpt_mpi.h \
	'usr/lib/[^/]+/libgpuckpt-mpi\.so'
check "gpuckpt: the tool, its site file, gpuckpt(1) and gpuckpt.conf(5)" holds gpuckpt usr/bin/gpuckpt \
	etc/gpuckpt/gpuckpt.conf 'usr/share/man/man1/gpuckpt\.1\.gz' 'usr/share/man/man5/gpuckpt\.conf\.5\.gz'
check "gpuckpt-shepherd: the shepherd and its page" holds gpuckpt-shepherd \
	usr/libexec/gpuckpt/gpuckpt-shepherd 'usr/share/man/man8/gpuckpt-shepherd\.8\.gz'
check "slurm-spank-gpuckpt: the plugin, the plugstack.conf.d drop-in, spank-gpuckpt(8), the containers' parts" holds slurm-spank-gpuckpt \
	'usr/lib/[^/]+/slurm-wlm/spank_gpuckpt\.so' etc/slurm/plugstack.conf.d/gpuckpt.conf \
	'usr/share/man/man8/spank-gpuckpt\.8\.gz' usr/sbin/gpuckpt-bundle \
	usr/libexec/gpuckpt/gpuckpt-oci-hook usr/libexec/gpuckpt/gpuckpt-container-start \
	'usr/share/man/man8/gpuckpt-bundle\.8\.gz' usr/share/doc/slurm-spank-gpuckpt/enroot/50-gpuckpt.sh
check "gpuckpt-stage: the staging script, the hooks, gpuckpt-stage(8)" holds gpuckpt-stage \
	usr/libexec/gpuckpt/gpuckpt-stage usr/share/gpuckpt/job_submit.lua 'usr/share/man/man8/gpuckpt-stage\.8\.gz'
slurm=$(dpkg-query -W -f='${Version}' libslurm-dev 2>/dev/null | sed -E 's/^([0-9]+:)?([0-9]+\.[0-9]+).*/\2/')
dep=$(dpkg-deb -f "$out/slurm-spank-gpuckpt_"*.deb Depends 2>/dev/null)
check "slurm-spank-gpuckpt depends on the Slurm release it was built for ($slurm)" \
	grep -q "slurm-wlm-basic-plugins (>= $slurm)" <<<"$dep"
[ -n "$dep" ] && tap_diag "Depends: $dep"

# 4. A clean bookworm root: install, look, run the demo, purge. Its results
# come back as "PASS|FAIL description" lines.
res=$out/inside.results
rm -f "$res"
mkdir -p "$GK_SCRATCH/root"
GK_ROOT_THROWAWAY=$GK_SCRATCH/root "$top/tests/slurm/debian-root.sh" run bookworm /bin/bash -c '
	top=$1 build=$2 out=$3 res=$4 demo=$5
	shift 5
	r() { if [ "$1" -eq 0 ]; then echo "PASS $2"; else echo "FAIL $2"; fi >>"$res"; }
	export DEBIAN_FRONTEND=noninteractive
	printf "#!/bin/sh\nexit 101\n" >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
	dpkg -s gpuckpt >/dev/null 2>&1; r $((!$?)) "the root is clean: no gpuckpt installed before"
	apt-get install -y -q $(ls "$out"/*.deb | grep -v -- -dbgsym_) >"$out/apt.log" 2>&1; r $? "apt-get install of the .deb files (dependencies from the mirror)"
	ok=0; for p in "$@"; do dpkg -s "$p" 2>/dev/null | grep -q "^Status: install ok installed" || ok=1; done
	r $ok "all eight installed: $*"
	ok=0; for m in man1/gpuckpt.1 man5/gpuckpt.conf.5 man8/spank-gpuckpt.8 man8/gpuckpt-shepherd.8 man8/gpuckpt-stage.8; do
		[ -f /usr/share/man/$m.gz ] || ok=1; done
	gpuckpt --version >/dev/null || ok=1
	/usr/libexec/gpuckpt/gpuckpt-stage --help >/dev/null || ok=1
	r $ok "installed: the five man pages; gpuckpt --version and gpuckpt-stage --help run"
	# A site has a slurm.conf; sbatch reads it before its plugins. Only the
	# plugin stack is loaded: no daemon is asked.
	[ -f /etc/slurm/slurm.conf ] || printf "%s\n" ClusterName=pkgtest SlurmctldHost=localhost \
		"NodeName=localhost CPUs=1 State=UNKNOWN" "PartitionName=debug Nodes=localhost Default=YES" \
		>/etc/slurm/slurm.conf
	sbatch --help 2>&1 | grep -q -- "--gpu-checkpoint=on|off"; r $? "sbatch --help has --gpu-checkpoint (the plugin, loaded through /etc/slurm/plugstack.conf.d/gpuckpt.conf)"
	if [ "$demo" = 0 ]; then
		echo "SKIP the demo from the installed files: GK_PKG_DEMO=0" >>"$res"
		echo "SKIP the demo'"'"'s restore lines: GK_PKG_DEMO=0" >>"$res"
	else
		rm -f "$out/demo-job.out"
		GK_DEMO_CLUSTER_DIR=/tmp/gpuckpt-demo GK_DEMO_JOB_OUT=$out/demo-job.out top_srcdir=$top top_builddir=$build \
			"$top/tests/slurm/demo.sh" --installed --fake-gpus >"$out/demo.log" 2>&1
		rc=$?
		grep -q "using the installed gpuckpt" "$out/demo.log" && grep -q "checksum matches" "$out/demo.log" && [ $rc -eq 0 ]
		r $? "the demo from the installed files: the job ends with the uninterrupted run'"'"'s checksum"
		# Each "restored:" line reports its own restart, not an earlier one'"'"'s (issue 28).
		[ -f "$out/demo-job.out" ] && "$top/tests/slurm/demo-check.sh" "$out/demo.log" "$out/demo-job.out" >"$out/demo-check.log" 2>&1
		r $? "the demo'"'"'s restore lines name the step each restart resumed from in the job'"'"'s output: $(paste -sd";" "$out/demo-check.log" 2>/dev/null)"
	fi
	apt-get purge -y -q "$@" >>"$out/apt.log" 2>&1 && ! dpkg -s gpuckpt >/dev/null 2>&1
	r $? "apt-get purge removes them"
' deb-inside "$top" "$(cd "$top_builddir" && pwd)" "$out" "$res" "${GK_PKG_DEMO:-1}" $PKGS >"$out/inside.log" 2>&1
rc=$?
n=0
while read -r verdict desc; do
	n=$((n + 1))
	case $verdict in
	PASS) tap_ok "bookworm root: $desc" ;;
	SKIP) tap_skip "bookworm root: $desc" ;;
	*) tap_not_ok "bookworm root: $desc" ;;
	esac
done <"${res:-/dev/null}" 2>/dev/null
[ $rc -eq 0 ] || tap_diag "debian-root.sh run: exit $rc; $(tail -n 20 "$out/inside.log")"
for _ in $(seq $((8 - n))); do tap_not_ok "bookworm root: a step did not report (see $out/inside.log)"; done
grep -q "^FAIL" "$res" 2>/dev/null && tap_diag "$(tail -n 40 "$out/demo.log" 2>/dev/null)" && tap_diag "$(tail -n 20 "$out/apt.log" 2>/dev/null)"
tap_diag "packages in $out"
tap_done
