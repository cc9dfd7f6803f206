#!/bin/bash
# heat-options.sh - the heat examples' command line: --help, and bad input
# refused with exit status 2 and a message that names the option. heat-rt
# parses its options before it touches CUDA, so it runs here without a GPU;
# heat-drv needs a libcuda.so.1 to start at all and gets the stand-in's.

. "$top_srcdir/tests/lib/helpers.sh"

HEAT_DIR=$top_builddir/examples/heat

# ARGS|STATUS|REGEX on stderr (stdout for --help)
CASES=(
	"--help|0|^Usage: PROG \[OPTION\]"
	"--size 2|2|--size: 2 is out of range"
	"--size 40000|2|--size: 40000 is out of range"
	"--size 12abc|2|--size: '12abc' is not a whole number"
	"--steps -1|2|--steps: -1 is out of range"
	"--steps 99999999999999999999|2|--steps: 99999999999999999999 is out of range"
	"--report-every x|2|--report-every: 'x' is not a whole number"
	"--delay-ms 3600001|2|--delay-ms: 3600001 is out of range"
	"--steps|2|--steps needs a value"
	"--bogus|2|unknown option '--bogus'"
	"extra|2|unexpected argument 'extra'"
)

tap_plan $((2 * ${#CASES[@]} + 2))

# run_case PROG CASE: one test point.
run_case() {
	local prog=$1 args want regex out err status
	IFS='|' read -r args want regex <<<"$2"
	regex=${regex//PROG/$prog}
	out=$(mktemp)
	err=$(mktemp)
	# shellcheck disable=SC2086 # the arguments are split on purpose
	"${RUN[@]}" "$HEAT_DIR/$prog" $args >"$out" 2>"$err"
	status=$?
	if [ "$status" = "$want" ] && grep -Eq -- "$regex" "$out" "$err"; then
		tap_ok "$prog $args: exit status $want, says '$regex'"
	else
		tap_not_ok "$prog $args: exit status $want (got $status), says '$regex'"
		tap_diag "$(cat "$out" "$err" | head -n 5)"
	fi
	rm -f "$out" "$err"
}

# heat-drv and the stand-in are always built; heat-rt whenever configure found nvcc.
gk_need_built "$HEAT_DIR/heat-drv" "$GK_STANDIN_DIR/libcuda.so.1"
[ -z "${NVCC:-}" ] || gk_need_built "$HEAT_DIR/heat-rt"

# heat-rt
RUN=()
for c in "${CASES[@]}"; do
	if [ -n "${NVCC:-}" ]; then
		run_case heat-rt "$c"
	else
		tap_skip "heat-rt is not built: configure found no nvcc"
	fi
done
if [ -n "${NVCC:-}" ]; then
	run_case heat-rt "--module x|2|unknown option '--module'"
else
	tap_skip "heat-rt is not built: configure found no nvcc"
fi

# heat-drv, on the stand-in's libcuda.so.1
RUN=(env LD_LIBRARY_PATH="$GK_STANDIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}")
for c in "${CASES[@]}"; do
	run_case heat-drv "$c"
done
# A missing kernels file is named, with the call that failed.
run_case heat-drv "--module /nonexistent/heat.cubin --steps 1|1|cuModuleLoad\(/nonexistent/heat.cubin\) failed"

tap_done
