#!/bin/bash
# containers.sh - the container scenarios on the GPU machine (it has no
# package registry, so what they need is carried in the ignored .gpudeps/).
#
# On a development machine, in the checkout (after ../shared/gpu-machine/fetch-debs.sh
# .gpudeps --criu, README of shared/gpu-machine):
#   tests/gpu/containers.sh prepare .gpudeps
#       into .gpudeps/containers: enroot built from ../shared/third-party for
#       the prefix /opt/gpuckpt-enroot, pyxis built against Debian's Slurm 22.05
#       (the one fetch-debs.sh carries; tests/containers/tools.sh), and a Debian
#       trixie root file system (debootstrap, compressed with xz: every Ubuntu
#       and Debian has the xz command, not always zstd's) with nothing of
#       gpuckpt in it. Trixie: its glibc (2.41) is newer than the GPU machine's (2.39), and
#       the runtime built there needs that one's (gpuckpt-bundle prints it).
# On the GPU machine, as root, in the copy of the checkout, after setup.sh and a
# build (./configure && make, as tests/gpu/README.md says; GK_BUILD=DIR for a
# build folder other than the checkout):
#   tests/gpu/containers.sh run .gpudeps
#     1. CRIU 4.1 on a process in an enroot container (user and mount namespaces,
#        no PID namespace, as pyxis runs them): criu dump and restore of a plain
#        CPU process there. Prints each step's exit status and CRIU's last
#        lines: the evidence for or against transparent mode in containers
#        (refused today: spank-plugin/README.md, "Containers").
#     2. One containerized job under real Slurm (tests/slurm/cluster.sh
#        --real-gpu, pyxis listed before gpuckpt, the enroot hook installed):
#        examples/heat/heat-drv on the GPU in the trixie container, with the
#        driver's libraries mounted in as a site's NVIDIA hook would, requeued
#        with scontrol requeue, restored, and its checksum compared with an
#        uninterrupted run outside Slurm. Ends "containers-gpu: PASS" or "FAIL".
# A dry run of the script on a machine without a GPU proves the script, not
# the GPU: the CUDA driver stand-in (tests/cuda-standin) and the heat
# example's host kernels take the driver's and the cubin's place, and any
# character device the GPU's:
#   GK_DRIVER_DIR=$PWD/build/tests/cuda-standin/.libs GK_GPU_DEVICE=/dev/null \
#   GK_BUILD=$PWD/build tests/gpu/containers.sh run DIR
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cmd=${1:?usage: containers.sh prepare|run DIR}
deps=$(cd "${2:?usage: containers.sh prepare|run DIR}" && pwd)
C=$deps/containers
SUITE=trixie
say() { echo "containers-gpu: $*"; }

if [ "$cmd" = prepare ]; then
	rm -rf "$C"
	mkdir -p "$C"
	tools=$(GK_CONTAINER_CACHE=${GK_CONTAINER_CACHE:-/var/cache/gpuckpt-test} "$top/tests/containers/tools.sh") || exit 1
	# enroot records its prefix in its scripts: built again for /opt/gpuckpt-enroot there.
	src=$(mktemp -d)
	tar -C "$src" -xzf "$(ls "$top"/../shared/third-party/enroot-*.tar.gz | head -n 1)"
	(cd "$src"/enroot-* && mkdir -p deps/dist/makeself/bin &&
		printf '#!/bin/sh\nexit 1\n' >deps/dist/makeself/bin/enroot-makeself && chmod +x deps/dist/makeself/bin/enroot-makeself &&
		make -o deps FORCE_GLIBC=1 prefix=/opt/gpuckpt-enroot DESTDIR="$C/enroot-root" install) >"$C/enroot-build.log" 2>&1 ||
		{ tail "$C/enroot-build.log"; exit 1; }
	# enroot writes DESTDIR into its paths; its own `make dist` takes it out again the same way.
	sed -i "s;$C/enroot-root;;" "$C/enroot-root/opt/gpuckpt-enroot/bin/enroot" \
		"$C/enroot-root/opt/gpuckpt-enroot/etc/enroot/enroot.conf"
	if grep -rq "$C" "$C/enroot-root"; then echo "containers.sh: $C is still named in enroot's files" >&2; exit 1; fi
	rm -rf "$src"
	cp "$tools/spank_pyxis.so" "$C/"
	# enroot lists containers with column(1), which the GPU machine lacks
	# (seen there: "Command not found: column").
	(cd "$C" && apt-get download bsdextrautils >/dev/null) || exit 1
	base=$("$top/tests/containers/images.sh" rootfs $SUITE) || exit 1
	xz -9 -T0 -c "$base" >"$C/$SUITE.tar.xz" || exit 1
	du -sh "$C"
	exit 0
fi
[ "$cmd" = run ] || { echo "usage: containers.sh prepare|run DIR" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "containers.sh run: needs root" >&2; exit 1; }
[ -f "$C/$SUITE.tar.xz" ] && [ -f "$C/spank_pyxis.so" ] ||
	{ echo "containers.sh run: $C lacks what 'prepare' makes" >&2; exit 1; }
build=${GK_BUILD:-$top}
export PATH=/opt/gpuckpt-enroot/bin:$PATH
tar -C "$C/enroot-root" -cf - . | tar -C / -xf - --keep-directory-symlink --no-overwrite-dir
W=/tmp/gpuckpt-containers-gpu
rm -rf "$W"; mkdir -p "$W/root"; chmod 0755 "$W"
xz -dc "$C/$SUITE.tar.xz" | tar -C "$W/root" -xf -
rm -rf "$W/root/dev/"*
mkdir -p "$W/root/opt/heat"
cp "$build/examples/heat/heat-drv" "$W/root/opt/heat/" ||
	{ say "FAIL: examples/heat is not built in $build (GK_BUILD)"; exit 1; }
cp "$build/examples/heat/heat_kernels.cubin" "$build/examples/heat/.libs/heat_kernels_host.so" \
	"$W/root/opt/heat/" 2>/dev/null
cat >/opt/gpuckpt-enroot/etc/enroot/enroot.conf <<-'EOC'
	ENROOT_RUNTIME_PATH /tmp/gpuckpt-enroot/${UID}/run
	ENROOT_CACHE_PATH /tmp/gpuckpt-enroot/${UID}/cache
	ENROOT_DATA_PATH /tmp/gpuckpt-enroot/${UID}/data
	ENROOT_TEMP_PATH /tmp/gpuckpt-enroot/${UID}/tmp
	ENROOT_ALLOW_SUPERUSER yes
EOC
install -m 0755 "$top/etc/enroot/50-gpuckpt.sh" /opt/gpuckpt-enroot/etc/enroot/hooks.d/50-gpuckpt.sh
# enroot's own NVIDIA hook needs nvidia-container-cli, which is not here: the
# driver's libraries are mounted in below instead, as that hook would.
rm -f /opt/gpuckpt-enroot/etc/enroot/hooks.d/98-nvidia.sh
if ! command -v column >/dev/null; then
	# Unpacked beside /, then copied in without replacing merged-/usr links.
	stage=$(mktemp -d)
	dpkg -x "$(ls "$C"/bsdextrautils_*.deb | head -n 1)" "$stage" &&
		tar -C "$stage" -cf - . | tar -C / -xf - --keep-directory-symlink --no-overwrite-dir
	rm -rf "$stage"
	command -v column >/dev/null || { say "FAIL: column(1) could not be installed"; exit 1; }
fi
rm -rf /tmp/gpuckpt-enroot
mkdir -p /tmp/gpuckpt-enroot/0/{run,cache,data,tmp}
# The container, already unpacked where enroot keeps them: pyxis's
# --container-name=gkheat finds it as "pyxis_gkheat" (no import, so no
# squashfs-tools needed there).
cp -a "$W/root" /tmp/gpuckpt-enroot/0/data/pyxis_gkheat
# The driver's user-space libraries, as NVIDIA's container hook would mount
# them (there is no nvidia-container-cli here): copied into one folder, mounted
# at /usr/local/nvidia/lib64, found through LD_LIBRARY_PATH. The container's
# own C library stays its own.
mkdir -p "$W/driver"
if [ -n "${GK_DRIVER_DIR:-}" ]; then
	cp -L "$GK_DRIVER_DIR"/libcuda.so* "$W/driver/"
else
	for lib in libcuda.so.1 libnvidia-ptxjitcompiler.so.1 libnvidia-nvvm.so.4 libnvidia-ml.so.1 \
		$(ldconfig -p | awk '/libnvidia-gpucomp\.so/ { print $1 }'); do
		path=$(ldconfig -p | awk -v l="$lib" '$1 == l { print $NF; exit }')
		[ -n "$path" ] && cp -L "$path" "$W/driver/$lib"
	done
fi
[ -f "$W/driver/libcuda.so.1" ] || { say "FAIL: no libcuda.so.1 in ldconfig's cache"; exit 1; }
say "driver libraries for the container: $(ls "$W/driver" | paste -sd' ' -)"
criu() {
	LD_LIBRARY_PATH=/opt/criu/usr/lib/x86_64-linux-gnu:/opt/criu/lib/x86_64-linux-gnu \
		/opt/criu/usr/sbin/criu "$@"
}

# 1. CRIU on a process in an enroot container.
say "1. CRIU $(criu --version 2>/dev/null | head -n 1) on a process in an enroot container"
# The process to dump carries a name of its own (exec -a), so that it, and
# only it, is found and killed by its pid.
measure() {
	local name=$1 mark=gpuckpt-criu-probe-$$ d=$W/criu-$1 pid rc
	mkdir -p "$d"
	enroot start --root --rw pyxis_gkheat bash -c "exec -a $mark sleep 1000" >"$d/out" 2>&1 &
	for _ in $(seq 50); do pid=$(pgrep -n -f "^$mark ") && break; sleep 0.2; done
	[ -n "$pid" ] || { say "criu $name: no process to dump: $(cat "$d/out")"; return; }
	say "criu $name: pid $pid, mount ns $(readlink /proc/$pid/ns/mnt), user ns $(readlink /proc/$pid/ns/user) (host $(readlink /proc/self/ns/mnt) $(readlink /proc/self/ns/user))"
	SECONDS=0
	criu dump -t "$pid" -D "$d" --shell-job -v4 -o dump.log >/dev/null 2>&1; rc=$?
	say "criu $name: dump exit $rc in ${SECONDS} s; last lines:"; tail -n 5 "$d/dump.log" | sed 's/^/    /'
	[ $rc -eq 0 ] || { kill -9 "$pid" 2>/dev/null; return; }
	SECONDS=0
	criu restore -D "$d" --shell-job -d -v4 -o restore.log >/dev/null 2>&1; rc=$?
	say "criu $name: restore exit $rc in ${SECONDS} s; last lines:"; tail -n 5 "$d/restore.log" | sed 's/^/    /'
	kill -9 "$pid" 2>/dev/null || true
}
measure cpu
say "(a CUDA process in the container would add the driver's lock and checkpoint before the dump, as runtime/shepherd does; measure it when the CPU case works)"

# 2. One containerized job under real Slurm, requeued, with the reference checksum.
say "2. a containerized job requeued under real Slurm"
job_env=""
if [ -n "${GK_DRIVER_DIR:-}" ]; then
	say "a dry run: the driver stand-in from $GK_DRIVER_DIR, the host kernels, no GPU"
	export LD_LIBRARY_PATH=$GK_DRIVER_DIR HEAT_MODULE=$build/examples/heat/.libs/heat_kernels_host.so
	job_env="export HEAT_MODULE=/opt/heat/heat_kernels_host.so"
fi
ref=$("$build/examples/heat/heat-drv" --size 1024 --steps 400 --report-every 50 2>/dev/null | sed -n 's/.*checksum=\(0x[0-9a-f]*\).*/\1/p' | tail -n 1)
say "reference checksum (uninterrupted, outside Slurm and containers): ${ref:-none}"
"$build/spank-plugin/gpuckpt-bundle" --runtime "$build/runtime/.libs/libgpuckpt.so.0" \
	--starter "$build/spank-plugin/gpuckpt-container-start" "$W/bundle" || exit 1
export GK_RUNTIME=$W/bundle/libgpuckpt.so.0
export GK_PLUGSTACK_BEFORE="required $C/spank_pyxis.so runtime_path=$W/pyxis"
export GK_CLUSTER_DIR=$W/cluster top_srcdir=$top top_builddir=$build
"$top/tests/slurm/cluster.sh" start --real-gpu || exit 1
trap '"$top/tests/slurm/cluster.sh" stop >/dev/null 2>&1' EXIT
. "$W/cluster/env.sh"
cat >"$W/cluster/jobs/heat.sh" <<EOS
#!/bin/bash
echo "batch: restart \${SLURM_RESTART_COUNT:-0}"
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
# A root job (CRIU there needs root: shared/gpu-machine/README.md): pyxis runs
# it without a user namespace only when the job says so.
export ENROOT_ALLOW_SUPERUSER=yes
$job_env
srun --container-name=gkheat --container-mounts=$W/driver:/usr/local/nvidia/lib64:ro,/dev bash -c 'echo "container: debian \$(cat /etc/debian_version)"; exec /opt/heat/heat-drv --size 1024 --steps 400 --report-every 50 --delay-ms 20'
EOS
chmod 0755 "$W/cluster/jobs/heat.sh"
j=$(sbatch --parsable --open-mode=append -o "$W/cluster/jobs/%j.out" --gres=gpu:1 --gpu-checkpoint=on "$W/cluster/jobs/heat.sh")
out=$W/cluster/jobs/$j.out
for _ in $(seq 120); do grep -q '^heat-drv: step 100' "$out" 2>/dev/null && break; sleep 1; done
scontrol requeue "$j"
for _ in $(seq 300); do scontrol show job "$j" | grep -q 'JobState=COMPLETED\|JobState=FAILED' && break; sleep 2; done
cat "$out"
got=$(sed -n 's/^heat-drv: done: .*checksum=\(0x[0-9a-f]*\).*/\1/p' "$out" | tail -n 1)
if grep -q '^container: debian 13' "$out" && ! grep -q 'cannot be checkpointed' "$out" &&
	grep -q '^gpuckpt: checkpoint: .*wrote' "$out" && grep -q '^batch: restart 1' "$out" &&
	grep -q '^heat-drv: resumed from step' "$out" && [ -n "$ref" ] && [ "$got" = "$ref" ]; then
	say "PASS: in the container, checkpointed when requeued, resumed, checksum $got = $ref"
else
	say "FAIL: checksum ${got:-none} (reference ${ref:-none}); see the output above"
	exit 1
fi
