#!/bin/bash
# No io_uring in a process a transparent checkpoint may dump
# (runtime/core/interpose/uring.c): CRIU cannot dump its rings, and libuv
# (PyTorch's TCPStore) made one on an H200 whatever UV_USE_IO_URING said. A
# process loaded under a shepherd in transparent or auto mode gets ENOSYS
# from io_uring_setup and sees UV_USE_IO_URING=0 and NCCL_RAS_ENABLE=0 from
# its first instruction, before any CUDA call (PyTorch makes its store
# before it touches CUDA); values the job set stay. Without a shepherd, or
# in application mode, nothing changes.
. "${top_srcdir:-.}/tests/lib/helpers.sh"
P=$top_builddir/tests/runtime/prog-uring
tap_plan 5
gk_need_built "$P"
gk_scratch
under() { env GPUCKPT_DIR="$GK_SCRATCH/ckpt" LD_PRELOAD="$(gk_preload)" "$@" "$P" 2>&1; }

plain=$("$P")
out=$(under GPUCKPT_SHEPHERD=gk-test-shepherd)
check "under a shepherd: io_uring_setup answers ENOSYS, and both variables are 0 at the start ($out)" \
	test "$out" = "uring: ENOSYS UV_USE_IO_URING=0 NCCL_RAS_ENABLE=0"
out=$(under GPUCKPT_SHEPHERD=gk-test-shepherd UV_USE_IO_URING=1 NCCL_RAS_ENABLE=1)
check "... values the job set stay, and the ring is still refused ($out)" \
	test "$out" = "uring: ENOSYS UV_USE_IO_URING=1 NCCL_RAS_ENABLE=1"
if [ "${plain%% *}" != "uring:" ] || [[ "$plain" != "uring: ring "* ]]; then
	for _ in 1 2 3; do tap_skip "this kernel makes no io_uring instance itself ($plain)"; done
	exit 0
fi
out=$(under)
check "no shepherd: the ring is made, nothing set ($out)" \
	test "$out" = "uring: ring UV_USE_IO_URING=- NCCL_RAS_ENABLE=-"
out=$(under GPUCKPT_SHEPHERD=gk-test-shepherd GPUCKPT_MODE=app)
check "application mode under a shepherd: the ring is made ($out)" \
	test "$out" = "uring: ring UV_USE_IO_URING=- NCCL_RAS_ENABLE=-"
out=$(under GPUCKPT_SHEPHERD=gk-test-shepherd GPUCKPT_ENABLE=0)
check "checkpointing off: the ring is made ($out)" \
	test "$out" = "uring: ring UV_USE_IO_URING=- NCCL_RAS_ENABLE=-"
tap_done
