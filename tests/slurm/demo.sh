#!/bin/bash
# demo.sh - gpuckpt under Slurm, start to end, on this machine: a throw-away
# cluster (tests/slurm/cluster.sh), a --gpu-checkpoint=on job that is
# requeued (and comes back on the other node), then preempted by a job of a
# higher partition (and comes back again), and its final checksum compared
# with an uninterrupted run. It says what happened at each step.
#
#   tests/slurm/demo.sh                one node with /dev/nvidia0 where there is
#                                      one, else two nodes in network namespaces
#                                      with fake GPUs
#   tests/slurm/demo.sh --real-gpu     the former, or fail
#   tests/slurm/demo.sh --fake-gpus    the latter
#   tests/slurm/demo.sh --installed [--real-gpu | --fake-gpus]
#                                      the plugin, runtime, staging script and
#                                      tool installed from the packages (/usr),
#                                      not the build tree's; the application
#                                      (and the CUDA stand-in) still the build's
#
# Needs root and a built tree with the CUDA stand-in (./demo makes one; or
# ./configure && make && make -C tests standin, or set top_builddir).
# Everything it starts is stopped at the end.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
if [ -z "${top_builddir:-}" ]; then
	# ./demo's build, else a build in place.
	if [ -f "$top_srcdir/build/demo/spank-plugin/.libs/spank_gpuckpt.so" ]; then
		top_builddir=$top_srcdir/build/demo
	else
		top_builddir=$top_srcdir
	fi
fi
export top_srcdir top_builddir
real=""
installed=""
[ "${1:-}" = --installed ] && { installed=1; shift; }
case ${1:-} in
--real-gpu) real=--real-gpu ;;
--fake-gpus) ;;
"") [ -c /dev/nvidia0 ] && real=--real-gpu ;;
*) echo "usage: $0 [--installed] [--real-gpu | --fake-gpus]" >&2; exit 2 ;;
esac

. "$top_srcdir/tests/slurm/e2e-lib.sh"
say() { printf '%s  %s\n' "$(date +%T)" "$*"; }
die() { say "demo: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (it starts slurmctld, slurmd and munged)"
if [ -n "$installed" ]; then
	# What the packages put in place (debian/*.install); cluster.sh takes these.
	multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
	export GK_PLUGIN=/usr/lib/$multiarch/slurm-wlm/spank_gpuckpt.so
	export GK_RUNTIME=/usr/lib/$multiarch/libgpuckpt.so.0
	export GK_STAGE=/usr/libexec/gpuckpt/gpuckpt-stage
	export GK_TOOL=/usr/bin/gpuckpt
	for f in "$GK_PLUGIN" "$GK_RUNTIME" "$GK_STAGE" "$GK_TOOL"; do
		[ -f "$f" ] || die "--installed: $f is not there (install the gpuckpt packages)"
	done
	say "using the installed gpuckpt: $GK_PLUGIN, $GK_RUNTIME, $GK_STAGE, $GK_TOOL"
else
	[ -f "$top_builddir/spank-plugin/.libs/spank_gpuckpt.so" ] ||
		die "build first: ./demo does, or ./autogen.sh && ./configure && make && make -C tests standin"
	export GK_PLUGIN=$top_builddir/spank-plugin/.libs/spank_gpuckpt.so
	export GK_RUNTIME GK_TOOL
fi

E2E_DIR=${GK_DEMO_CLUSTER_DIR:-/tmp/gpuckpt-demo}
# An earlier demo or test killed half-way leaves its cluster behind: say so;
# e2e_start takes it down.
if [ -s /run/gpuckpt-test-cluster ] && [ -e "$(cat /run/gpuckpt-test-cluster)/mode" ]; then
	say "stopping the test cluster an earlier run left in $(cat /run/gpuckpt-test-cluster)"
fi
if [ -n "$real" ]; then
	say "starting a one-node Slurm cluster in $E2E_DIR with the real GPU /dev/nvidia0"
else
	say "starting a two-node Slurm cluster in $E2E_DIR (network namespaces, fake GPU device files: no GPU here)"
fi
tap_diag() { :; } # e2e-lib's diagnostics are for the tests
e2e_bail() { die "$*"; }
[ -n "$real" ] || e2e_pick_app
e2e_start $real
nodes=$(sinfo -h -N -o %N | sort -u | paste -sd' ' -)
say "cluster up: nodes $nodes; partitions low (preemptable, GraceTime) and high"

# What runs: the heat app on the real GPU, or on the CUDA stand-in. Said plainly.
SIZE=256 STEPS=600 DELAY=40
if [ -n "$real" ]; then
	[ -f "$top_builddir/examples/heat/heat_kernels.cubin" ] ||
		die "examples/heat/heat_kernels.cubin is not built (nvcc): cannot run on the GPU"
	APP="$top_builddir/examples/heat/heat-drv --module $top_builddir/examples/heat/heat_kernels.cubin"
	APP_ENV=":"
	say "application: examples/heat/heat-drv on the real GPU"
	ref=$($APP $(app_args $SIZE $STEPS 0) 2>/dev/null | sed -n 's/.*checksum=\(0x[0-9a-f]*\).*/\1/p')
else
	say "application: examples/heat/heat-drv on the CUDA driver stand-in (host memory; this machine has no GPU)"
	ref=$(reference $SIZE $STEPS)
fi
say "reference: an uninterrupted run outside Slurm ends with checksum $ref"

s=$(job_script demo "srun $APP $(app_args $SIZE $STEPS $DELAY)
rc=\$?
# Preempted: the step stopped after its checkpoint; wait here to be requeued.
[ \$rc -eq 143 ] && sleep 600
exit \$rc")
j=$(submit --as gkuser1 -p low --gres=gpu:1 --gpu-checkpoint=on "$s")
say "submitted job $j as gkuser1: sbatch -p low --gres=gpu:1 --gpu-checkpoint=on"
wait_running "$j" 60 || die "job $j did not start"
first=$(job_node "$j")
say "job $j running on $first"

ckpt_line() { grep '^gpuckpt: checkpoint: .*wrote' "$(job_out "$j")" | sed -n "${1}p"; }
report_ckpt() {
	local l
	l=$(ckpt_line "$1")
	if [ -n "$l" ]; then
		say "checkpointed: $(sed 's/.*checkpoint: \([^:]*\): wrote \([0-9]*\) bytes ([^)]*) in \([0-9.]*\) s.*/\2 bytes in \3 s to \1/' <<<"$l")"
	else
		say "no checkpoint line in the job's output:"
		tail -n 5 "$(job_out "$j")"
	fi
}
# resumed_line N: the application's "resumed from step" line of restart N - the
# first after that restart's batch line, and before the next one's - or
# nothing while restart N has not printed it (a line of an earlier restart
# is not this one's: the output is appended across restarts).
resumed_line() {
	awk -v n="$1" '/^batch: node / { if (on) exit; on = ($0 ~ ("^batch: node .* restart " n " ")); next }
		on && /^heat-drv: resumed from step/ { print; exit }' "$(job_out "$j")"
}
# report_restore N: waits for restart N's own "resumed" line, then says it.
report_restore() {
	local n=$1 b r
	b=$(grep "^batch: node .* restart $n " "$(job_out "$j")" | tail -n 1)
	wait_until 30 '[ -n "$(resumed_line "$n")" ]'
	r=$(resumed_line "$n")
	if [ -n "$r" ]; then r=${r#heat-drv: }; else r="no \"resumed\" line of this restart in the job's output"; fi
	say "restored: $(sed 's/^batch: node \([^ ]*\) restart \([0-9]*\) GPU \(.*\)/restart \2 on node \1, GPU \3 (CUDA_VISIBLE_DEVICES)/' <<<"$b"), $r"
}

# 1. scontrol requeue, and the job's node drained so it comes back elsewhere.
wait_out "$j" '^heat-drv: step 60$' 90
say "scontrol requeue $j (SIGTERM to the job; the runtime checkpoints within KillWait)"
scontrol requeue "$j"
wait_until 60 '[ "$(job_state "$j")" = PENDING ]'
report_ckpt 1
[ -n "$(grep "stage-out: job $j: staged out" "$E2E_DIR"/log/slurmd.*.log)" ] &&
	say "staged out: $(grep -h "stage-out: job $j: staged out" "$E2E_DIR"/log/slurmd.*.log | tail -n 1 | sed 's/.*staged out //')"
say "requeued (state $(job_state "$j"))"
if [ -z "$real" ]; then
	drain "$first"
	say "drained $first, so the job must come back on another node"
fi
wait_out "$j" '^batch: node .* restart 1 ' 120 || die "job $j did not come back"
[ -z "$real" ] && resume "$first"
report_restore 1

# 2. Preemption by a job of the high partition that needs every GPU.
wait_until 60 '[ "$(out_count "$j" "^heat-drv: step")" -ge 15 ]'
nn=$(sinfo -h -N -o %N | sort -u | wc -l)
ngpu=2; [ -n "$real" ] && ngpu=1
h=$(submit -p high -N "$nn" --gres=gpu:$ngpu --exclusive --wrap 'sleep 10')
say "submitted job $h to partition high, needing every GPU: job $j is preempted (PreemptMode=REQUEUE)"
wait_until 60 '[ "$(grep -c "^gpuckpt: checkpoint: .*wrote" "$(job_out "$j")")" -ge 2 ]'
report_ckpt 2
wait_running "$h" 60 && say "job $h running; job $j is $(job_state "$j")"
wait_over "$h" 60
say "job $h finished"
wait_out "$j" '^batch: node .* restart 2 ' 120 || die "job $j did not come back after the preemption"
report_restore 2

wait_over "$j" 300
got=$(final_checksum "$j")
say "job $j finished: $(job_state "$j")"
if [ -n "$got" ] && [ "$got" = "$ref" ]; then
	say "checksum matches: $got (same as the uninterrupted run)"
	rc=0
else
	say "checksum DIFFERS: $got, expected $ref"
	rc=1
fi
job_copy=${GK_DEMO_JOB_OUT:-/tmp/gpuckpt-demo-job.out}
cp "$(job_out "$j")" "$job_copy" 2>/dev/null && say "the job's output: $job_copy"
say "stopping the cluster"
exit $rc
