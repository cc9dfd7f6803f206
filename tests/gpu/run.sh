#!/bin/bash
# run.sh - the GPU scenarios against the real CUDA driver (make check-gpu),
# TAP on stdout. See README.md here for what each test proves.
#
# Every test is skipped, with the reason, when there is no usable GPU (no
# nvidia-smi, or the driver cannot be initialised or sees no device). Each
# program's output and checkpoints stay under $GK_GPU_LOGDIR (default
# tests/gpu/logs in the build tree); a failing test prints the tail of them.
# Settings: GK_GPU_TIMEOUT (seconds one run may take, 120), GK_GPU_WAIT
# (seconds to wait for a line of output, 60), GK_GPU_BUDGET (seconds for the
# whole suite, 480: after that every wait gives up at once, so that hung runs
# fail the rest quickly instead of holding the GPU machine).

: "${top_srcdir:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
. "$top_srcdir/tests/lib/helpers.sh"
. "$top_srcdir/tests/gpu/scenario.sh"

GPU_DIR=$top_builddir/tests/gpu
HEAT_DIR=$top_builddir/examples/heat
SC_LOGDIR=${GK_GPU_LOGDIR:-$GPU_DIR/logs}
SC_TIMEOUT=${GK_GPU_TIMEOUT:-120}
SC_WAIT=${GK_GPU_WAIT:-60}
SC_DEADLINE=$((SECONDS + ${GK_GPU_BUDGET:-480}))

# The settings of the runs come from here, not from whoever runs the suite.
unset GPUCKPT_DIR GPUCKPT_RESTORE GPUCKPT_CONFIG

# What each scenario program is run with: size, steps, and a report every 20
# steps so that SC_SIGNAL_AT (100) and SC_MULTI_AT (60 120 180) are printed.
STEPS=(--steps 400 --report-every 20)
declare -A ARGS=(
	[heat-drv]="--size 512"
	[heat-rt]="--size 512"
	[gpu-streams]="--size 1048576"
	[gpu-linked]="--size 1024"
	[gpu-cublas]="--size 256"
	[gpu-tables]="--size 256"
	[gpu-slack]="--module $GPU_DIR/slack_kernels.cubin"
)
declare -A BIN=(
	[heat-drv]=$HEAT_DIR/heat-drv
	[heat-rt]=$HEAT_DIR/heat-rt
	[gpu-streams]=$GPU_DIR/gpu-streams
	[gpu-linked]=$GPU_DIR/gpu-linked
	[gpu-cublas]=$GPU_DIR/gpu-cublas
	[gpu-tables]=$GPU_DIR/gpu-tables
	[gpu-slack]=$GPU_DIR/gpu-slack
)
# What a program needs beside its binary.
declare -A NEEDS=([gpu-slack]=$GPU_DIR/slack_kernels.cubin)
SCENARIO_PROGS=(heat-drv heat-rt gpu-streams gpu-linked gpu-cublas gpu-tables gpu-slack)
MULTI_PROG=gpu-streams
OTHER_PROG=heat-rt
CORRUPT_PROG=heat-rt
# Background and incremental checkpoints: a mostly static state.
TABLES_PROG=gpu-tables
ROUTE_PROGS=(route-rt-static route-rt-shared route-drv)
BROKEN_TESTS=2
# Peer access between two GPUs of one process (the driver API's copies and
# cuMemGetAccess; the CUDA runtime's kernels reading and writing the peer's
# memory): each a scenario, and a restore with the two GPUs in the other order.
PEER_PROGS=(gpu-peer gpu-peer-rt)
declare -A PEER_CMD=(
	[gpu-peer]="$GPU_DIR/gpu-peer --steps 400"
	[gpu-peer-rt]="$GPU_DIR/gpu-peer-rt ${STEPS[*]}"
)
PEER_TESTS=$((${#PEER_PROGS[@]} * (SC_SCENARIO_TESTS + SC_OTHER_GPU_TESTS)))

TOTAL=$((${#SCENARIO_PROGS[@]} * SC_SCENARIO_TESTS + SC_MULTI_TESTS + SC_OTHER_GPU_TESTS +
	SC_CORRUPT_TESTS + SC_BACKGROUND_TESTS + SC_INCREMENT_TESTS +
	${#ROUTE_PROGS[@]} * SC_ROUTE_TESTS + BROKEN_TESTS + PEER_TESTS))

# why_no_gpu: empty when the tests can run here, else the reason.
why_no_gpu() {
	local out
	if ! command -v nvidia-smi >/dev/null 2>&1; then
		echo "no GPU: nvidia-smi not found"
		return
	fi
	if ! out=$(timeout 30 nvidia-smi -L 2>&1); then
		echo "no GPU: nvidia-smi -L failed: $(head -n 1 <<<"$out")"
		return
	fi
	if ! out=$(timeout 60 "$GPU_DIR/gpu-probe" 2>&1 >/dev/null); then
		echo "no GPU: $(head -n 1 <<<"$out")"
		return
	fi
	if [ -z "${NVCC:-}" ]; then
		echo "nvcc not found by configure: the GPU programs are not built"
		return
	fi
}

tap_plan "$TOTAL"
gk_need_built "$GPU_DIR/gpu-probe"
why=$(why_no_gpu)
if [ -n "$why" ]; then
	sc_skip_n "$TOTAL" "$why"
	sc_summary
	exit 0
fi

# nvcc was found and the GPU is there: what `make check-gpu` builds must be.
gk_need_built "$GK_RUNTIME" "${BIN[@]}" "${NEEDS[@]}" "$top_builddir/runtime/gpuckpt-shepherd"
for prog in "${ROUTE_PROGS[@]}"; do gk_need_built "$GPU_DIR/$prog"; done

rm -rf "$SC_LOGDIR"
mkdir -p "$SC_LOGDIR"
timeout 60 "$GPU_DIR/gpu-probe" >"$SC_LOGDIR/gpu-probe.out" 2>&1
tap_diag "$(cat "$SC_LOGDIR/gpu-probe.out")"
tap_diag "logs and checkpoints: $SC_LOGDIR"

SC_NATIVE=()
if [ -n "${ASAN_RUNTIME:-}" ]; then
	# A sanitizer build: heat-drv and the preloaded runtime carry ASan, and
	# the CUDA driver maps memory where ASan keeps its shadow gap.
	SC_NATIVE+=(ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:protect_shadow_gap=0}")
fi
SC_RUNTIME=("${SC_NATIVE[@]}" LD_PRELOAD="$(gk_preload)"
	GPUCKPT_LOG_LEVEL="${GPUCKPT_LOG_LEVEL:-info}")

# cmd_of PROG: the command line of a scenario program (in CMD).
cmd_of() {
	local -a args
	read -r -a args <<<"${ARGS[$1]}"
	CMD=("${BIN[$1]}" "${args[@]}" "${STEPS[@]}")
}

declare -A REF CKPT
for prog in "${SCENARIO_PROGS[@]}"; do
	cmd_of "$prog"
	sc_scenario "$prog" "$prog" "${CMD[@]}"
	REF[$prog]=$SC_REF
	CKPT[$prog]=$SC_CKPT
done

cmd_of "$MULTI_PROG"
SC_REF=${REF[$MULTI_PROG]}
sc_multi "$MULTI_PROG" "$MULTI_PROG" "${CMD[@]}"

# Two GPUs: the first two of CUDA_VISIBLE_DEVICES if it is set, else 0 and 1.
ndev=$(sed -n 's/^devices=//p' "$SC_LOGDIR/gpu-probe.out")
if [ "${ndev:-0}" -lt 2 ]; then
	sc_skip_n "$SC_OTHER_GPU_TESTS" "restore on another GPU needs two, this machine shows ${ndev:-0}"
else
	IFS=, read -r -a visible <<<"${CUDA_VISIBLE_DEVICES:-0,1}"
	cmd_of "$OTHER_PROG"
	SC_REF=${REF[$OTHER_PROG]}
	sc_other_gpu "$OTHER_PROG" "$OTHER_PROG" "${visible[0]}" "${visible[1]}" "${CMD[@]}"
fi

cmd_of "$CORRUPT_PROG"
sc_corrupt "$CORRUPT_PROG" "$CORRUPT_PROG" "${CKPT[$CORRUPT_PROG]}" "${CMD[@]}"

if [ -z "${REF[$TABLES_PROG]:-}" ]; then
	# Its scenario failed above (and fails the suite): nothing to compare with.
	sc_skip_n $((SC_BACKGROUND_TESTS + SC_INCREMENT_TESTS)) \
		"$TABLES_PROG gave no reference checksum (its scenario failed)"
else
	cmd_of "$TABLES_PROG"
	SC_REF=${REF[$TABLES_PROG]}
	sc_background "$TABLES_PROG" "$TABLES_PROG" "${CMD[@]}"
	sc_increments "$TABLES_PROG" "$TABLES_PROG" "${CMD[@]}"
fi

# broken_case LABEL native|runtime DIR EXPECT... -- CMD...: run CMD
# (gpu-slack reading 4 MiB before its arrays, beyond the runtime's 2 MiB
# guards: its kernel faults and, with --keep-going, it runs on), SIGTERM
# after step 100; it must end by SIGTERM, print each EXPECT line (grep -E)
# exactly once on stderr, and leave nothing in DIR, its checkpoint folder.
broken_case() {
	local label=$1 mode=$2 dir=$3 missing= re n
	local -a expect=()
	shift 3
	while [ "$1" != "--" ]; do
		expect+=("$1")
		shift
	done
	shift
	rm -rf "$dir"
	mkdir -p "$dir"
	sc_start "$label" "$mode" -- "$@"
	if sc_wait_line "^gpu-slack: step $SC_SIGNAL_AT\$"; then
		kill -TERM "$SC_PID"
		sc_wait_exit
	fi
	sc_stop
	for re in "${expect[@]}"; do
		n=$(grep -cE -- "$re" "$SC_ERR")
		[ "$n" = 1 ] || missing+=" [$n x: $re]"
	done
	if [ "$SC_STATUS" = 143 ] && [ -z "$missing" ] && [ -z "$(ls -A "$dir" | grep -vx gpuckpt.events)" ] &&
		! grep -q "staging\|not a message of the protocol\|cuCheckpointProcessLock" "$SC_ERR"; then
		tap_ok "$label: a broken context (CUDA_ERROR_ILLEGAL_ADDRESS) at SIGTERM is named once, nothing is written, the run ends by SIGTERM"
	else
		tap_not_ok "$label: a broken context at SIGTERM is named once and the run ends by SIGTERM (exit status $SC_STATUS;$missing)"
		sc_diag
	fi
}

BROKEN=(--module "$GPU_DIR/slack_kernels.cubin" --steps 400 --report-every 20 --slack 4194304
	--keep-going --delay-ms "$SC_DELAY")
SHEPHERD=$top_builddir/runtime/gpuckpt-shepherd
dir=$SC_LOGDIR/gpu-slack.broken.ckpt
broken_case gpu-slack.broken runtime "$dir" \
	"checkpoint: .*: the program's CUDA context is broken \(CUDA_ERROR_ILLEGAL_ADDRESS\): no checkpoint possible" \
	-- env GPUCKPT_DIR="$dir" "$GPU_DIR/gpu-slack" "${BROKEN[@]}"
if [ "$(id -u)" != 0 ]; then
	sc_skip "the transparent case needs root (gpuckpt-shepherd runs as root)"
else
	# The shepherd itself without the runtime, the program with it, as
	# the plugin does. Outside Slurm the shepherd passes SIGTERM on to
	# the program. No CRIU is needed: the refusal comes first.
	dir=$SC_LOGDIR/gpu-slack.broken-transparent.ckpt
	broken_case gpu-slack.broken-transparent native "$dir" \
		"transparent: the program's CUDA context is broken \(CUDA_ERROR_ILLEGAL_ADDRESS\): no checkpoint possible" \
		"transparent: no checkpoint of pid [0-9]+: pid [0-9]+: the program's CUDA context is broken \(CUDA_ERROR_ILLEGAL_ADDRESS\)" \
		-- env GPUCKPT_LOG_LEVEL=info "$SHEPHERD" run --dir "$dir" --uid 0 --gid 0 -- \
		env "${SC_RUNTIME[@]}" GPUCKPT_MODE=transparent "$GPU_DIR/gpu-slack" "${BROKEN[@]}"
fi

# The peer programs say themselves (exit 77) when the machine has no two GPUs
# with a peer route; the first two of CUDA_VISIBLE_DEVICES, as above.
n_peer=$((SC_SCENARIO_TESTS + SC_OTHER_GPU_TESTS))
for prog in "${PEER_PROGS[@]}"; do
	read -r -a PEER <<<"${PEER_CMD[$prog]}"
	if [ ! -x "${PEER[0]}" ]; then
		sc_skip_n "$n_peer" "$prog is not built"
	elif [ "${ndev:-0}" -lt 2 ]; then
		sc_skip_n "$n_peer" "peer access needs two GPUs, this machine shows ${ndev:-0}"
	elif ! why=$(env "${SC_NATIVE[@]}" timeout 60 "${PEER[@]}" --steps 1 2>&1) &&
		grep -q "SKIP" <<<"$why"; then
		sc_skip_n "$n_peer" "$(sed -n "s/^$prog: SKIP: //p" <<<"$why")"
	else
		IFS=, read -r -a visible <<<"${CUDA_VISIBLE_DEVICES:-0,1}"
		sc_scenario "$prog" "$prog" "${PEER[@]}"
		sc_other_gpu "$prog" "$prog" "${visible[0]},${visible[1]}" \
			"${visible[1]},${visible[0]}" "${PEER[@]}"
	fi
done

for prog in "${ROUTE_PROGS[@]}"; do
	sc_route "$prog" "$prog" "$GPU_DIR/$prog"
done

sc_summary
