#!/bin/bash
# run.sh - the libFuzzer targets, each for a bounded time (FUZZ_SECONDS,
# default 60), from the corpora kept beside them (tests/fuzz/corpus/).
# Built here with clang -fsanitize=fuzzer,address,undefined from the same
# sources as the library (the rest of the build uses gcc); a crash, a leak
# or a sanitizer report fails the test and leaves the input in the log.
# Without clang (Debian: clang-14 libclang-rt-14-dev, which
# tests/install-deps.sh installs) each target is a TAP skip saying so.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"

SECONDS_EACH=${FUZZ_SECONDS:-60}
TARGETS="manifest seal"
tap_plan 2
CC_FUZZ=
for c in clang-14 clang; do command -v $c >/dev/null && { CC_FUZZ=$c; break; }; done
if [ -z "$CC_FUZZ" ]; then
	for t in $TARGETS; do tap_skip "fuzz-$t: no clang (apt-get install clang-14 libclang-rt-14-dev)"; done
	exit 0
fi
gk_scratch
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return d && n > 1000000; }' \
	>"$GK_SCRATCH/probe.c"
if ! $CC_FUZZ -fsanitize=fuzzer "$GK_SCRATCH/probe.c" -o "$GK_SCRATCH/probe" 2>/dev/null; then
	for t in $TARGETS; do tap_skip "fuzz-$t: $CC_FUZZ cannot link libFuzzer (apt-get install libclang-rt-14-dev)"; done
	exit 0
fi

R=$top_srcdir/runtime
CFLAGS_FUZZ=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
	-I"$top_builddir" -I"$R"
	-I"${CUDA_PREFIX:-/usr/local/cuda}/include" $(pkg-config --cflags json-c))
LIBS=($(pkg-config --libs json-c) -lmunge -lxxhash -lcrypto -ldl -lpthread)
IMAGE=("$R"/image/checksum.c "$R"/image/manifest.c "$R"/image/manifest_read.c
	"$R"/image/manifest_write.c "$R"/image/smallfile.c)
SEAL=("$R"/image/seal.c "$R"/image/sign.c "$R"/common/log.c "$R"/common/settings.c "$R"/common/user.c
	"$R"/common/io.c)

fuzz() { # NAME SOURCES...
	local name=$1 out=$GK_SCRATCH/fuzz-$1
	shift
	if ! $CC_FUZZ "${CFLAGS_FUZZ[@]}" "$top_srcdir/tests/fuzz/fuzz-$name.c" "$@" "${LIBS[@]}" \
		-o "$out" >"$GK_SCRATCH/$name.build" 2>&1; then
		tap_not_ok "fuzz-$name: does not build: $(head -5 "$GK_SCRATCH/$name.build")"
		return
	fi
	mkdir -p "$GK_SCRATCH/$name.corpus"
	# New inputs go to the scratch copy; the tree's corpus is only read.
	"$out" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		"$GK_SCRATCH/$name.corpus" "$top_srcdir/tests/fuzz/corpus/$name" >"$GK_SCRATCH/$name.log" 2>&1
	local rc=$? runs
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$GK_SCRATCH/$name.log")
	if [ $rc -eq 0 ]; then
		tap_ok "fuzz-$name: ${runs:-?} inputs in $SECONDS_EACH s, no crash, leak or sanitizer report"
	else
		tap_not_ok "fuzz-$name: libFuzzer stopped with status $rc"
		tap_diag "$(grep -A20 -m1 'ERROR\|SUMMARY\|crash-' "$GK_SCRATCH/$name.log" | head -40)"
	fi
}
fuzz manifest "${IMAGE[@]}"
fuzz seal "${SEAL[@]}" "${IMAGE[@]}" "$R"/common/fsafe.c "$R"/common/testhook.c
tap_done
