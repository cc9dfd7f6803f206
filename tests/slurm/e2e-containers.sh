#!/bin/bash
# e2e-containers.sh - --gpu-checkpoint=on jobs whose program runs in a
# container, against a real Slurm with real container runtimes:
#   pyxis and enroot (srun --container-image), built from the unmodified
#   archives in ../shared/third-party (tests/containers/tools.sh), pyxis listed
#   before gpuckpt in plugstack.conf and enroot given gpuckpt's hook
#   (etc/enroot/50-gpuckpt.sh);
#   podman from Debian's packages with gpuckpt's precreate hook
#   (etc/containers/50-gpuckpt.json, gpuckpt-oci-hook).
# Images are made from Debian's packages with debootstrap
# (tests/containers/images.sh): trixie (newer userland than this bookworm
# host), bookworm, and bullseye (older: glibc 2.31, below what the runtime
# needs). The runtime goes in through its bundle folder (gpuckpt-bundle).
# Each runtime's job is requeued onto the other node, and preempted and moved
# to the other node, and ends with the checksum of an uninterrupted run; the
# bullseye container gets a clear line in the job's output at its start.
# The nodes say they can do transparent mode (the site's shepherd folder holds
# a wrapper whose probe says yes and which otherwise execs the real
# gpuckpt-shepherd, as in e2e-shepherd.sh), so every job here runs with the
# default mode, auto, where a node could put a task under a shepherd: in a
# container that must mean application mode, with a line saying so, and an
# explicit --gpu-checkpoint-mode=transparent must be refused at the start.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

N_PYXIS=19 N_PODMAN=18
W=${GK_E2E_CONTAINERS_DIR:-/tmp/gpuckpt-e2e-containers}
why=""
heat=$top_builddir/examples/heat/heat-drv
module=$top_builddir/examples/heat/.libs/heat_kernels_host.so
if [ ! -x "$heat" ] || [ ! -f "$module" ] || [ ! -f "$GK_STANDIN_DIR/libcuda.so.1" ]; then
	why="examples/heat, its host kernels or the CUDA stand-in are not built (make check builds them)"
elif ! command -v debootstrap >/dev/null || ! command -v mksquashfs >/dev/null; then
	why="debootstrap or squashfs-tools is not installed (tests/install-deps.sh)"
elif [ ! -x "$top_builddir/runtime/gpuckpt-shepherd" ]; then
	why="gpuckpt-shepherd is not built ($top_builddir/runtime/gpuckpt-shepherd)"
elif ! ls "${GK_THIRD_PARTY:-$(cd "$top_srcdir/.." && pwd)/shared/third-party}"/enroot-*.tar.gz \
	"${GK_THIRD_PARTY:-$(cd "$top_srcdir/.." && pwd)/shared/third-party}"/pyxis-*.tar.gz >/dev/null 2>&1; then
	# Not Debian packages: the unmodified sources sit beside the checkout in
	# the project's shared folder, which a bare clone (CI) does not have.
	why="no enroot and pyxis source archives in ../shared/third-party (set GK_THIRD_PARTY): they are not Debian packages"
elif [ "$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo 0)" -eq 0 ]; then
	why="user namespaces are off here (enroot and rootless podman need them)"
fi
if [ -n "$why" ] && [ "$(id -u)" -eq 0 ]; then
	tap_plan $((N_PYXIS + N_PODMAN))
	for _ in $(seq $((N_PYXIS + N_PODMAN))); do tap_skip "$why"; done
	exit 0
fi
e2e_require $((N_PYXIS + N_PODMAN))

# --- What the site installs: the bundle, enroot with gpuckpt's hook, pyxis.
rm -rf "$W"
mkdir -p "$W"
chmod 0755 "$W"
tools=$("$top_srcdir/tests/containers/tools.sh") || { echo "Bail out! enroot/pyxis build failed"; exit 1; }
"$top_builddir/spank-plugin/gpuckpt-bundle" --runtime "$GK_RUNTIME" \
	--starter "$top_builddir/spank-plugin/gpuckpt-container-start" "$W/bundle" >"$W/bundle.log" 2>&1 ||
	{ cat "$W/bundle.log"; echo "Bail out! gpuckpt-bundle failed"; exit 1; }
tap_diag "$(cat "$W/bundle.log")"
for s in trixie bookworm bullseye; do
	SECONDS=0
	"$top_srcdir/tests/containers/images.sh" heat "$s" "$W/images" >/dev/null 2>"$W/images.$s.log" ||
		{ cat "$W/images.$s.log"; echo "Bail out! the $s image could not be made"; exit 1; }
	tap_diag "image $s: ${SECONDS} s $(grep -o 'made .* in [0-9]* s' "$W/images.$s.log" || echo '(base from the cache)')"
done
chmod -R a+rX "$W"
etc=$tools/enroot/etc/enroot
cat >"$etc/enroot.conf" <<-'EOC'
	# Written by tests/slurm/e2e-containers.sh: enroot's state per user under /tmp.
	ENROOT_RUNTIME_PATH /tmp/gpuckpt-enroot/${UID}/run
	ENROOT_CACHE_PATH /tmp/gpuckpt-enroot/${UID}/cache
	ENROOT_DATA_PATH /tmp/gpuckpt-enroot/${UID}/data
	ENROOT_TEMP_PATH /tmp/gpuckpt-enroot/${UID}/tmp
EOC
install -m 0755 "$top_srcdir/etc/enroot/50-gpuckpt.sh" "$etc/hooks.d/50-gpuckpt.sh"
rm -rf /tmp/gpuckpt-enroot
mkdir -p /tmp/gpuckpt-enroot
chmod 1777 /tmp/gpuckpt-enroot
# A node that "can" do transparent mode (see the top of this file).
mkdir -p "$W/shepherd"
cat >"$W/shepherd/gpuckpt-shepherd" <<EOF
#!/bin/sh
[ "\$1" = probe ] && { echo ok; exit 0; }
exec "$(cd "$top_builddir/runtime" && pwd)/gpuckpt-shepherd" "\$@"
EOF
chmod 0755 "$W/shepherd" "$W/shepherd/gpuckpt-shepherd"
GK_E2E_PLUGIN_ARGS="shepherd=$W/shepherd ${GK_E2E_PLUGIN_ARGS:-}"
# slurmstepd hands pyxis its PATH: enroot must be on it.
export PATH=$tools/enroot/bin:$PATH
export GK_RUNTIME=$W/bundle/libgpuckpt.so.0
export GK_PLUGSTACK_BEFORE="required $tools/spank_pyxis.so runtime_path=$W/pyxis"
E2E_OWN_APP=1
e2e_start
trap 'e2e_stop; rm -rf /tmp/gpuckpt-enroot "$W"' EXIT

APP_KIND=heat
APP="$heat --module $module"
APP_ENV="export LD_LIBRARY_PATH=$GK_STANDIN_DIR"
# In the images: the same heat binaries under /opt/heat; the stand-in driver
# comes from the host, as a real driver does (enroot's and podman's NVIDIA hooks).
CAPP="/opt/heat/heat-drv --module /opt/heat/heat_kernels_host.so"
SIZE=64 STEPS=300 DELAY=50
ref=$(reference $SIZE $STEPS)
tap_diag "reference checksum (uninterrupted, outside Slurm and containers): $ref"
img() { echo "$W/images/$1.sqsh"; }

# The program's command in a pyxis container: says which userland it is in, then becomes heat-drv.
pyxis_step() {
	echo "srun --container-image=$(img "$1") --container-mounts=$GK_STANDIN_DIR bash -c 'echo \"container: debian \$(cat /etc/debian_version)\"; exec $CAPP $(app_args $SIZE $STEPS $DELAY)'"
}
# After preemption the batch shell must wait to be requeued (docs/users.md, "Job scripts").
wait_tail='rc=$?
[ $rc -eq 143 ] && sleep 600
exit $rc'

# 1. pyxis, trixie: requeued onto the other node.
drain gk2
s=$(job_script pyxis-requeue "$(pyxis_step trixie)")
j=$(submit --as gkuser1 --gres=gpu:1 --gpu-checkpoint=on "$s")
wait_running "$j" 60 && resume gk2
check "pyxis: job $j starts on gk1" [ "$(job_node "$j")" = gk1 ]
if requeue_when "$j" '^heat-drv: step 30$'; then :; else show_out "$j"; fi
drain gk1
wait_over "$j" 240
resume gk1
check_out "$j" "pyxis: the program ran in the trixie container" '^container: debian 13'
check "pyxis: no container problem reported" out_lacks "$j" 'cannot be checkpointed'
# Mode auto in a container is application mode; as on a node without a
# shepherd, nothing is said at the start (the runtime names the reason only if
# a program without the API gets the signal), and heat-drv uses the API.
check "pyxis: mode auto: no line at the start about transparent mode" \
	out_lacks "$j" 'transparent mode does not reach|will not be checkpointed'
check_out "$j" "pyxis: checkpointed in the container when requeued" "^gpuckpt: checkpoint: $E2E_DIR/bb/$j/step.0/task.0/ckpt.[0-9]+: wrote"
check_out "$j" "pyxis: restarted on gk2" '^batch: node gk2 restart 1'
check_out "$j" "pyxis: the plugin pointed the task at its checkpoint" "restart 1: restoring from $E2E_DIR/bb/$j/step.0/task.0"
check_out "$j" "pyxis: resumed in the container from a step after the start" '^heat-drv: resumed from step [1-9][0-9]*'
got=$(final_checksum "$j")
check "pyxis: same checksum as an uninterrupted run ($got = $ref)" [ -n "$ref" -a "$got" = "$ref" ]
check_state "$j" COMPLETED "pyxis: job completed"
[ "$TAP_FAILED" -eq 0 ] || show_out "$j"

# 2. pyxis, bookworm: preempted by a job of the high partition, back on the other node.
s=$(job_script pyxis-preempt "$(pyxis_step bookworm)
$wait_tail")
low=$(submit --as gkuser2 -p low --gres=gpu:2 --gpu-checkpoint=on "$s")
wait_out "$low" '^heat-drv: step 30$' 120
first=$(job_node "$low")
other=gk1; [ "$first" = gk1 ] && other=gk2
high=$(submit -p high -w "$first" --gres=gpu:2 --exclusive --wrap 'sleep 20')
wait_out "$low" '^gpuckpt: checkpoint: .*: wrote [0-9]+ bytes' 60
# Keep the high job's node from taking the low job back: it must come back on the other.
wait_running "$high" 60 && drain "$first"
wait_over "$low" 240
resume "$first"
check_out "$low" "pyxis preempted: checkpointed in the container" '^gpuckpt: checkpoint: .*: wrote [0-9]+ bytes'
check_out "$low" "pyxis preempted: back on the other node ($other)" "^batch: node $other restart 1"
check_out "$low" "pyxis preempted: resumed from its checkpoint" '^heat-drv: resumed from step [1-9][0-9]*'
got=$(final_checksum "$low")
check "pyxis preempted: same checksum as an uninterrupted run ($got = $ref)" [ -n "$ref" -a "$got" = "$ref" ]

# 3. pyxis, bullseye (glibc 2.31): said in the job's output before the program starts.
# The program's line goes to stderr, the stream gpuckpt's line is on: the
# order of lines of two streams in the file need not be the order they were
# written in (tests/containers/podman.sh).
k=$(submit --as gkuser1 --gpu-checkpoint=on --wrap "srun --container-image=$(img bullseye) bash -c 'echo \"container: debian \$(cat /etc/debian_version)\" >&2'")
wait_over "$k" 120
check_out "$k" "pyxis, bullseye: the job's output names the glibc the runtime needs" \
	"^gpuckpt: job $k step.0 task 0: this container cannot be checkpointed: its C library is older than the runtime needs: GLIBC_2.34 not found \(glibc 2.34 or later is needed\); it runs without checkpoints"
first_msg=$(grep -n 'cannot be checkpointed' "$(job_out "$k")" | head -n 1 | cut -d: -f1)
first_out=$(grep -n '^container: debian 11' "$(job_out "$k")" | head -n 1 | cut -d: -f1)
if [ -n "$first_msg" -a -n "$first_out" -a "${first_msg:-0}" -lt "${first_out:-0}" ]; then
	tap_ok "pyxis, bullseye: the line comes at the start, before the program's own output"
else
	tap_not_ok "pyxis, bullseye: the line comes at the start, before the program's own output"
	show_out "$k"
fi

# 4. pyxis, --gpu-checkpoint-mode=transparent: refused at the start, not found out at preemption.
k=$(submit --as gkuser1 --gpu-checkpoint=on --wrap "srun --gpu-checkpoint-mode=transparent --container-image=$(img bookworm) bash -c 'echo \"container: debian \$(cat /etc/debian_version)\"'")
wait_over "$k" 120
check "pyxis, transparent asked for: refused at the start, saying what to use" \
	eval "out_has $k 'GPUCKPT_MODE=transparent\) but the program runs in a pyxis container, which it does not reach yet: use --gpu-checkpoint-mode=app or auto' && out_lacks $k '^container: '"

# 5. No container, a wrapper that empties the environment: the runtime's exec
# functions say so before the program's first line. (Application mode: under
# a shepherd the program is checkpointed whatever its environment holds.)
k=$(submit --as gkuser1 --gpu-checkpoint=on --wrap "srun --gpu-checkpoint-mode=app env -i /bin/echo wrapped")
wait_over "$k" 60
check_out "$k" "env -i: the job's output names the wrapper and the program that loses the runtime" \
	"^gpuckpt: job $k step.0 task 0: env starts /bin/echo without the gpuckpt runtime \(its environment no longer preloads it, as after env -i\): it will not be checkpointed"
first_msg=$(grep -n 'without the gpuckpt runtime' "$(job_out "$k")" | head -n 1 | cut -d: -f1)
first_out=$(grep -n '^wrapped$' "$(job_out "$k")" | head -n 1 | cut -d: -f1)
check "env -i: the line comes before the program's own output" \
	[ -n "$first_msg" -a -n "$first_out" -a "${first_msg:-0}" -lt "${first_out:-0}" ]

# --- podman (Debian's), with gpuckpt's precreate hook.
. "$top_srcdir/tests/containers/podman.sh"
tap_done
