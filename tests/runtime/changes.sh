#!/bin/bash
# changes.sh - runs test-changes (the change keys, with the runtime linked
# in) on the CUDA driver stand-in twice: with the stand-in's hash kernel
# (keys "on the GPU") and without one (keys on the host); then the keys of
# both runs must be the same, since an increment compares keys found either
# way.
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"

prog=$top_builddir/tests/runtime/test-changes
HASH=$top_builddir/tests/cuda-standin/modules/.libs/hash_kernel_host.so
gk_need_built "$prog" "$HASH" "$GK_STANDIN_DIR/libcuda.so.1"
gk_scratch
unset CUDA_VISIBLE_DEVICES GPUCKPT_STANDIN_TRACE GPUCKPT_SHEPHERD GPUCKPT_HASH_MODULE
rc=0
# Each run's TAP, renumbered into one plan.
n=0
run() { # run WHERE [ENV...]
	local where=$1 line
	shift
	while IFS= read -r line; do
		case $line in
		"ok "* | "not ok "*)
			n=$((n + 1))
			[[ $line == not* ]] && rc=1
			echo "$line" | sed -E "s/^(not )?ok [0-9]+ - /\\1ok $n - $where: /"
			;;
		"Bail out!"*) echo "$line"; rc=1 ;;
		"1.."*) ;;
		*) echo "$line" ;;
		esac
	done < <(env "$@" GPUCKPT_DIR="$GK_SCRATCH/ckpt" GPUCKPT_LOG_LEVEL=info \
		GK_EXPECT_WHERE="$where" GK_KEYS_OUT="$GK_SCRATCH/keys.$where" \
		LD_LIBRARY_PATH="$GK_STANDIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}" "$prog" 2>>"$GK_SCRATCH/log")
}
run gpu GPUCKPT_HASH_MODULE="$HASH"
run host
n=$((n + 1))
if [ -s "$GK_SCRATCH/keys.gpu" ] && cmp -s "$GK_SCRATCH/keys.gpu" "$GK_SCRATCH/keys.host"; then
	echo "ok $n - the kernel's keys and the host's are the same"
else
	echo "not ok $n - the kernel's keys and the host's are the same"
	sed 's/^/# /' "$GK_SCRATCH/keys.gpu" "$GK_SCRATCH/keys.host"
	rc=1
fi
echo "1..$n"
if [ "$rc" -ne 0 ]; then
	tail -n 20 "$GK_SCRATCH/log" | sed 's/^/# /'
fi
exit "$rc"
