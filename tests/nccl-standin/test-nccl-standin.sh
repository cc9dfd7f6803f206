#!/bin/bash
# test-nccl-standin.sh - the NCCL stand-in (libnccl.so.2) between real
# processes, on the CUDA driver stand-in: what the library exports, then
# test-nccl-standin's modes (one process; 3 and 2 ranks; ranks that go away).
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"

prog=$top_builddir/tests/nccl-standin/test-nccl-standin
nccl_dir=$top_builddir/tests/nccl-standin/.libs
lib=$nccl_dir/libnccl.so.2
gk_need_built "$prog" "$lib" "$GK_STANDIN_DIR/libcuda.so.1"

# The stand-ins' defaults: a caller's devices or trace must not leak in.
unset CUDA_VISIBLE_DEVICES GPUCKPT_STANDIN_GPUS GPUCKPT_STANDIN_MEMORY GPUCKPT_STANDIN_CC \
	GPUCKPT_STANDIN_TRACE GK_NCCL_STANDIN_TRACE
# Both stand-ins first in the search path (the later LD_LIBRARY_PATH wins in env).
nccl_env=("${GK_STANDIN_ENV[@]}"
	"LD_LIBRARY_PATH=$nccl_dir:$GK_STANDIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
run() { env "${nccl_env[@]}" "$prog" "$@"; }

# What the library is: NCCL's soname, on the driver stand-in's.
sonames() {
	local dyn
	dyn=$(objdump -p "$lib") &&
		grep -q 'SONAME *libnccl\.so\.2$' <<<"$dyn" &&
		grep -q 'NEEDED *libcuda\.so\.1$' <<<"$dyn"
}
wanted="ncclAllGather ncclAllReduce ncclBroadcast ncclCommAbort ncclCommCount ncclCommCuDevice
ncclCommDestroy ncclCommFinalize ncclCommGetAsyncError ncclCommInitRank ncclCommInitRankConfig
ncclCommUserRank ncclGetErrorString ncclGetLastError ncclGetUniqueId ncclGetVersion ncclGroupEnd
ncclGroupStart ncclReduceScatter"
exports_only_nccl() {
	[ "$(nm -D --defined-only "$lib" | awk '{print $3}' | sort)" = "$(tr ' ' '\n' <<<"$wanted" | sort)" ]
}
# Its driver calls are imports, so an LD_PRELOADed interposer sees them.
imports_driver() {
	local undef f
	undef=$(nm -D --undefined-only "$lib" | awk '{print $2}')
	for f in cuCtxGetDevice cuMemCreate cuMemMap cuMemExportToShareableHandle \
		cuMemImportFromShareableHandle cuStreamSynchronize; do
		grep -qx "$f" <<<"$undef" || return 1
	done
}
traced() {
	env GK_NCCL_STANDIN_TRACE=1 "${nccl_env[@]}" "$prog" errors 2>&1 >/dev/null |
		grep -q '^gk nccl stand-in\[[0-9]*\]: ncclGetVersion(-> 22809) = ncclSuccess$'
}

tap_plan 8
check "soname libnccl.so.2, needs libcuda.so.1" sonames
check "exports NCCL's entry points and nothing else" exports_only_nccl
check "calls the driver through libcuda.so.1's symbols" imports_driver
check "one process: ids, arguments, a communicator of one rank" run errors
check "3 ranks: all-reduces, broadcast, all-gather, a group, destroy and re-init" \
	run collectives 3
check "2 ranks: the same" run collectives 2
check "a rank that aborts or exits: ncclRemoteError, no hang" run peer-loss
check "GK_NCCL_STANDIN_TRACE=1: a line per call on stderr" traced
tap_done
