# e2e-lib.sh - shared by the end-to-end Slurm tests (tests/slurm/e2e-*.sh):
# bring up a throw-away cluster (cluster.sh), submit jobs through real
# sbatch/srun/scontrol, wait for states and output lines. The application is
# examples/heat/heat-drv with the real runtime (libgpuckpt.so, put into each
# task by the plugin) on the CUDA driver stand-in, its kernels the host
# functions of heat_kernels_host.so: `make` builds both, `make check-slurm`
# the stand-in. When one of them is missing the test stops with "Bail out!"
# (an ERROR in the summary): no other program stands in for it.
# Sourced after top_srcdir/top_builddir are known (make check exports them).

. "$top_srcdir/tests/lib/helpers.sh"

E2E_DIR=${GK_E2E_CLUSTER_DIR:-/tmp/gpuckpt-e2e}

# e2e_bail WHY: stop the test as an ERROR (TAP "Bail out!"), never a pass or skip.
e2e_bail() {
	echo "Bail out! $*"
	exit 1
}
CLUSTER=$top_srcdir/tests/slurm/cluster.sh

# e2e_standin_shepherd NAME: for a test whose programs run on the stand-in
# driver built with the checkpoint API ($top_builddir/tests/cuda-standin/ckpt),
# under the real gpuckpt-shepherd with a real CRIU ($CRIU): the site's
# shepherd folder, $E2E_DIR-NAME, holds a wrapper that gives the shepherd
# that driver and the folder where it keeps each process's checkpoint state
# (root's: only the shepherd writes it; the job's processes read theirs, to
# wait for their unlock). Sets SHEPDIR, adds it to GK_E2E_PLUGIN_ARGS (before
# e2e_start), and sets STANDIN_ENVS, what the job's programs need to find the
# same driver (with the NCCL stand-in before it).
e2e_standin_shepherd() {
	local real=$top_builddir/runtime/gpuckpt-shepherd ck=$top_builddir/tests/cuda-standin/ckpt/.libs
	SHEPDIR=$E2E_DIR-$1
	rm -rf "$SHEPDIR" && mkdir -p "$SHEPDIR/state"
	cat >"$SHEPDIR/gpuckpt-shepherd" <<EOS
#!/bin/sh
# Test wrapper: the stand-in driver with the checkpoint API, its GPUs of one
# model (one name); the rest is real.
export LD_LIBRARY_PATH=$ck GPUCKPT_STANDIN_CKPT_DIR=$SHEPDIR/state GPUCKPT_STANDIN_NAME=stand-in
exec "$(cd "$(dirname "$real")" && pwd)/$(basename "$real")" "\$@"
EOS
	chmod 0755 "$SHEPDIR" "$SHEPDIR/gpuckpt-shepherd" "$SHEPDIR/state"
	GK_E2E_PLUGIN_ARGS="criu=$CRIU shepherd=$SHEPDIR ${GK_E2E_PLUGIN_ARGS:-}"
	STANDIN_ENVS="LD_LIBRARY_PATH=$top_builddir/tests/nccl-standin/.libs:$ck GPUCKPT_STANDIN_CKPT_DIR=$SHEPDIR/state GPUCKPT_STANDIN_NAME=stand-in"
}

# e2e_require N: the plan, or N skips with the reason when this cannot run here.
e2e_require() {
	local n=$1 why=""
	if [ "$(id -u)" -ne 0 ]; then
		why="needs root (starts slurmctld, slurmd, munged, network namespaces)"
	elif ! command -v ip >/dev/null || ! ip netns list >/dev/null 2>&1; then
		why="network namespaces are not available here"
	elif [ -n "${ASAN_RUNTIME:-}" ]; then
		# The plugin appends the runtime after the user's own preloads, and an
		# ASan-built runtime must come first: run these from a normal build.
		why="sanitizer build: an ASan-built runtime cannot be preloaded into every task; run make check-slurm in a normal build"
	fi
	tap_plan "$n"
	if [ -n "$why" ]; then
		for _ in $(seq "$n"); do tap_skip "$why"; done
		exit 0
	fi
	# What the build makes is never a reason to skip.
	gk_need_built "$top_builddir/spank-plugin/.libs/spank_gpuckpt.so"
	# Not a skip: every job runs as a test user and would fail, yet the
	# machine lacks nothing.
	setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "$top_builddir" 2>/dev/null ||
		e2e_bail "the test users cannot reach $top_builddir (a folder on the way is closed to others, like /root or a 0700 home): build under a folder others can read"
	[ -n "${E2E_OWN_APP:-}" ] || e2e_pick_app
}

# e2e_start [cluster.sh start options]: a fresh cluster, taken down on exit
# whatever happens; its logs are shown when a test failed.
e2e_start() {
	export GK_CLUSTER_DIR=$E2E_DIR
	export GK_PLUGIN_ARGS="log_level=info ${GK_E2E_PLUGIN_ARGS:-}"
	# A cluster left set up by a run that was killed (a test, the demo) goes
	# first: this one's folder, and the one cluster.sh has on record.
	if [ -e "$E2E_DIR/mode" ]; then "$CLUSTER" stop >/dev/null 2>&1 || true; fi
	if [ -s /run/gpuckpt-test-cluster ]; then env -u GK_CLUSTER_DIR "$CLUSTER" stop >/dev/null 2>&1 || true; fi
	GK_E2E_START_LOG=$(mktemp /tmp/gpuckpt-e2e-start.XXXXXX)
	trap e2e_stop EXIT
	local t0=$SECONDS
	if ! "$CLUSTER" start "$@" >"$GK_E2E_START_LOG" 2>&1; then
		tap_diag "cluster.sh start failed:"
		tap_diag "$(cat "$GK_E2E_START_LOG")"
		e2e_bail "no cluster: $(grep -v '^+' "$GK_E2E_START_LOG" | tail -n 3 | tr '\n' ' ')"
	fi
	. "$E2E_DIR/env.sh"
	JOBS=$E2E_DIR/jobs
	tap_diag "cluster up in $((SECONDS - t0)) s"
}

e2e_stop() {
	local rc=$?
	if [ "$TAP_FAILED" -gt 0 ] && [ -d "$E2E_DIR/log" ]; then
		tap_diag "--- slurmctld.log (tail)"
		tap_diag "$(tail -n 30 "$E2E_DIR/log/slurmctld.log" 2>/dev/null)"
		for f in "$E2E_DIR"/log/slurmd.*.log; do
			tap_diag "--- $(basename "$f") (gpuckpt and errors)"
			tap_diag "$(grep -E 'gpuckpt|error' "$f" | tail -n 30)"
		done
		tap_diag "--- nodes: $(nodes_diag)"
	fi
	local t0=$SECONDS
	"$CLUSTER" stop >/dev/null 2>&1 || true
	tap_diag "cluster stopped in $((SECONDS - t0)) s"
	rm -f "$GK_E2E_START_LOG"
	exit $rc
}

# The application and how to run it inside a job: heat-drv on the stand-in.
# (A test that brings its own program sets E2E_OWN_APP before e2e_require.)
e2e_pick_app() {
	local heat=$top_builddir/examples/heat/heat-drv
	local module=$top_builddir/examples/heat/.libs/heat_kernels_host.so
	local f missing=""
	for f in "$heat" "$module" "$GK_STANDIN_DIR/libcuda.so.1" "$GK_RUNTIME"; do
		[ -e "$f" ] || missing="$missing $f"
	done
	if [ -n "$missing" ]; then
		e2e_bail "not built:$missing (make; make check-slurm builds the CUDA stand-in)"
	fi
	APP="$heat --module $module"
	APP_ENV="export LD_LIBRARY_PATH=$GK_STANDIN_DIR\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
}

# app_args SIZE STEPS DELAY_MS: the application's arguments.
app_args() { echo "--size $1 --steps $2 --delay-ms $3 --report-every 10"; }

# reference SIZE STEPS: the checksum of an uninterrupted run, outside Slurm.
reference() {
	local out
	out=$(with_standin $APP $(app_args "$1" "$2" 0) 2>/dev/null)
	sed -n 's/^heat-drv: done: .*checksum=\(0x[0-9a-f]*\).*/\1/p' <<<"$out" | tail -n 1
}

# job_script NAME BODY: a batch script in $JOBS, readable by the test users.
# Its first line names the node by Slurm's name for it (a node of the GPU
# machine's cluster runs under the host's own hostname).
job_script() {
	local f=$JOBS/$1.sh
	{
		echo "#!/bin/bash"
		echo "echo \"batch: node \${SLURMD_NODENAME:-\$(hostname)} restart \${SLURM_RESTART_COUNT:-0} GPU \${CUDA_VISIBLE_DEVICES:-none}\""
		echo "$APP_ENV"
		echo "$2"
	} >"$f"
	chmod 0755 "$f"
	echo "$f"
}

# submit [--as USER] SBATCH-ARGS...: the job id; output goes to $JOBS/JOBID.out
# (appended across restarts).
submit() {
	local as=""
	if [ "$1" = --as ]; then as=$2; shift 2; fi
	if [ -n "$as" ]; then
		asuser "$as" sbatch --parsable --open-mode=append -D "$JOBS" -o "$JOBS/%j.out" "$@"
	else
		sbatch --parsable --open-mode=append -D "$JOBS" -o "$JOBS/%j.out" "$@"
	fi
}

job_out() { echo "$JOBS/$1.out"; }
# (For an array's first job id scontrol shows every element: take the one line.)
job_state() { scontrol show job -o "$1" 2>/dev/null | sed -n "s/^JobId=$1 .*JobState=\([A-Z_]*\).*/\1/p"; }
job_node() { squeue -h -j "$1" -o %N 2>/dev/null; }

# wait_for SECONDS CMD...: poll CMD every fifth of a second until it succeeds
# (a wait ends on average half a poll after its event: the tests wait
# hundreds of times, so the poll is short; a poll is a grep or one scontrol).
wait_for() {
	local limit=$1 t=0
	shift
	while ! "$@"; do
		sleep 0.2
		t=$((t + 1))
		[ "$t" -ge $((limit * 5)) ] && return 1
	done
	return 0
}
# wait_until SECONDS EXPR: the same for a shell expression, evaluated anew each time.
# EXPR is evaluated inside wait_until, where $1 and $2 are its own (SECONDS,
# EXPR): a caller's argument goes in through a variable (local is enough).
wait_until() {
	local limit=$1 t=0
	while ! eval "$2"; do
		sleep 0.2
		t=$((t + 1))
		[ "$t" -ge $((limit * 5)) ] && return 1
	done
	return 0
}
state_is() { [ "$(job_state "$1")" = "$2" ]; }
# job_held JOB: back in the queue after `scontrol requeuehold`, its epilog
# over (COMPLETING shows until then): PENDING, held; REQUEUE_HOLD where Slurm
# held it itself after failed launches.
job_held() { case $(job_state "$1") in PENDING | REQUEUE_HOLD) return 0 ;; esac; return 1; }
out_has() { grep -Eq "$2" "$(job_out "$1")" 2>/dev/null; }
out_lacks() { ! out_has "$@"; }
out_count() { grep -Ec "$2" "$(job_out "$1")" 2>/dev/null; }
is_over() { case $(job_state "$1") in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) return 0 ;; esac; return 1; }
wait_running() { wait_for "${2:-90}" state_is "$1" RUNNING; }
wait_out() { wait_for "${3:-60}" out_has "$1" "$2"; }
wait_over() { wait_for "${2:-180}" is_over "$1"; }

# The final checksum printed by the application (last one in the output).
final_checksum() { sed -n 's/^heat-drv: done: .*checksum=\(0x[0-9a-f]*\).*/\1/p' "$(job_out "$1")" | tail -n 1; }

# show_out JOB: the job's output as TAP diagnostics (for failures).
show_out() { tap_diag "--- job $1 output:"; tap_diag "$(cat "$(job_out "$1")" 2>/dev/null)"; }

# job_diag JOB: what Slurm says of the job (state, reason, exit code) and of
# the nodes, two lines (a job that never started is a node's story).
job_diag() {
	tap_diag "job $1: $(scontrol show job -o "$1" 2>/dev/null | grep -oE '(JobState|Reason|ExitCode|RunTime|NodeList|Restarts)=[^ ]*' | tr '\n' ' ')"
	tap_diag "nodes: $(nodes_diag)"
}
# nodes_diag: each node's state, and the reason of one drained or down.
nodes_diag() { sinfo -h -N -p low -o '%N %T %E' 2>/dev/null | sed 's/ none$//' | paste -sd, - | sed 's/,/, /g'; }

# check_state JOB STATE DESC: one test point on the job's state; when it
# fails, what Slurm says of the job (state, reason, exit code) and its output.
check_state() {
	if state_is "$1" "$2"; then tap_ok "$3"; return; fi
	tap_not_ok "$3"
	job_diag "$1"
	tap_diag "slurmctld on job $1: $(grep -h "JobId=$1 \|job $1\b\|JobId=$1\$" "$E2E_DIR"/log/slurmctld.log 2>/dev/null | tail -n 8)"
	show_out "$1"
}

# check_out JOB DESC REGEX: one test point on the job's output; when it
# fails, the job's state and the nodes' (job_diag), then its output.
check_out() {
	if out_has "$1" "$3"; then tap_ok "$2"; else tap_not_ok "$2"; job_diag "$1"; show_out "$1"; fi
}

# requeue_when JOB REGEX: wait for REGEX in the output, then requeue the job.
requeue_when() {
	wait_out "$1" "$2" 90 || return 1
	scontrol requeue "$1"
}

drain() { scontrol update nodename="$1" state=drain reason="gpuckpt test"; }
resume() { scontrol update nodename="$1" state=resume; }
