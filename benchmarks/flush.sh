#!/bin/bash
# benchmarks/flush.sh - the flush of checkpoints to shared storage while a
# program runs (issue 15; runtime/core/capture/flush.c), on the GPU machine:
#
#  1. the shared storage's own write rate: the same bytes written with dd
#     and one fsync (what the flush does per file), as the reference;
#  2. commit-to-safe for 1 and 4 GiB: heat-drv with that much GPU state
#     takes one checkpoint (SIGUSR1) with GPUCKPT_FLUSH_DIR set; the flush's
#     line gives its bandwidth and the time from the commit until the copy
#     was renamed into place on the shared side; its share of (1);
#  3. slowdown: each Rodinia-style program runs with a 4 GiB (the last of
#     --sizes) committed
#     checkpoint planted in its GPUCKPT_DIR and takes a checkpoint of its
#     own (SIGUSR1 just after its main loop started), so the flush thread
#     copies 4 GiB while it runs; against the same run without
#     GPUCKPT_FLUSH_DIR (same checkpoint, no flush). Runs alternate; the
#     medians of the programs' own time= lines are compared.
#
# A report, never a pass or fail. Usage:
#   benchmarks/flush.sh [--build DIR] [--bb DIR] [--shared DIR]
#                       [--programs LIST] [--runs N] [--sizes LIST] [--out FILE]
# Defaults: --build build, --bb /dev/shm (the burst buffer), --shared /var/tmp
# (a disk standing for shared storage), --programs hotspot,srad,lud,
# --runs 5, --sizes 1,4, --out benchmarks/results/flush-<gpu>-<date>.md.
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
BUILD=$top/build BBBASE=/dev/shm SHBASE=/var/tmp PROGRAMS=hotspot,srad,lud RUNS=5 SIZES=1,4 OUT=""
while [ $# -gt 0 ]; do
	case $1 in
	--build) BUILD=$(cd "$2" && pwd); shift ;;
	--bb) BBBASE=$2; shift ;;
	--shared) SHBASE=$2; shift ;;
	--programs) PROGRAMS=$2; shift ;;
	--runs) RUNS=$2; shift ;;
	--sizes) SIZES=$2; shift ;;
	--out) OUT=$2; shift ;;
	-h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "flush.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done

RT=$BUILD/runtime/.libs/libgpuckpt.so
HEAT=$BUILD/examples/heat/heat-drv
# GK_BENCH_MODULE: the host kernels, for a smoke test on the CUDA stand-in.
MODULE=${GK_BENCH_MODULE:-$BUILD/examples/heat/heat_kernels.cubin}
for f in "$RT" "$HEAT" "$MODULE"; do
	[ -e "$f" ] || { echo "flush.sh: $f is not built (make in $BUILD)" >&2; exit 1; }
done
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 | tr ' ' '-' | tr 'A-Z' 'a-z')
[ -n "$OUT" ] || OUT=$here/results/flush-${gpu:-$(hostname)}-$(date -u +%Y%m%d-%H%M%S).md
W=$(mktemp -d "$BBBASE/gpuckpt-flush.XXXXXX")
S=$(mktemp -d "$SHBASE/gpuckpt-flush.XXXXXX")
trap 'rm -rf "$W" "$S"' EXIT
log() { echo "flush.sh: $*" >&2; }
drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; }
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR) print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }

# heat-drv's state is two N x N float grids: 8 N^2 bytes.
edge_for_gib() { awk -v g="$1" 'BEGIN { printf "%d", sqrt(g * 2^30 / 8) }'; }

# checkpoint_heat GIB: one checkpoint of that much state, flushed; prints
# "bytes write_s flush_bytes flush_s flush_MBps safe_s".
checkpoint_heat() {
	local gib=$1 n dir fl errf pid line
	n=$(edge_for_gib "$gib")
	dir=$W/heat$gib fl=$S/heat$gib errf=$W/heat$gib.err
	mkdir -p "$dir" "$fl"
	drop_caches
	GPUCKPT_DIR=$dir GPUCKPT_FLUSH_DIR=$fl GPUCKPT_LOG_LEVEL=notice LD_PRELOAD=$RT \
		"$HEAT" --module "$MODULE" --size "$n" --steps 1000000 --report-every 1 --delay-ms 20 \
		>"$W/heat$gib.out" 2>"$errf" &
	pid=$!
	for _ in $(seq 1200); do grep -q '^heat-drv: step 2$' "$W/heat$gib.out" 2>/dev/null && break; sleep 0.1; done
	kill -USR1 "$pid"
	for _ in $(seq 1200); do grep -q '^gpuckpt: flush: .*safe' "$errf" && break; sleep 0.1; done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	line=$(grep '^gpuckpt: checkpoint: .*wrote' "$errf" | head -n 1)
	local bytes wsec
	bytes=$(sed -n 's/.*wrote \([0-9]*\) bytes.*/\1/p' <<<"$line")
	wsec=$(sed -n 's/.* in \([0-9.]*\) s.*/\1/p' <<<"$line")
	line=$(grep '^gpuckpt: flush: .*safe' "$errf" | head -n 1)
	[ -n "$line" ] || { log "heat $gib GiB: no flush line: $(tail -n 5 "$errf")"; echo "- - - - - -"; return; }
	echo "$bytes $wsec $(sed -n 's/.*: \([0-9]*\) bytes in \([0-9.]*\) s (\([0-9]*\) MB\/s), safe \([0-9.]*\) s after.*/\1 \2 \3 \4/p' <<<"$line")"
}

# The shared storage's write rate for the files of a checkpoint, as the flush
# writes them (buffered, one fsync per file): MB/s.
storage_rate() {
	local src=$1 t0 t1 bytes=0 f
	drop_caches
	mkdir -p "$S/probe"
	# Read the source once so that the rate is the destination's.
	cat "$src"/* >/dev/null
	t0=$(date +%s.%N)
	for f in "$src"/*; do
		dd if="$f" of="$S/probe/$(basename "$f")" bs=4M conv=fsync status=none
		bytes=$((bytes + $(stat -c %s "$f")))
	done
	t1=$(date +%s.%N)
	rm -rf "$S/probe"
	awk -v b="$bytes" -v a="$t0" -v z="$t1" 'BEGIN { printf "%.0f", b / 1e6 / (z - a) }'
}

{
	echo "# Flush to shared storage while the program runs"
	echo
	echo "- GPU: ${gpu:-unknown}; burst buffer $BBBASE, shared storage $SHBASE ($(df -T "$SHBASE" | awk 'NR == 2 { print $2 }'))"
	echo "- $(date -u +%Y-%m-%dT%H:%M:%SZ), tree $(git -C "$top" rev-parse --short HEAD 2>/dev/null)"
	echo
	echo "## Commit to safe, and the flush's share of the storage's write rate"
	echo
	echo "| state | checkpoint written | flushed | flush rate | storage's own rate (dd, fsync) | share | commit to safe |"
	echo "| --- | --- | --- | --- | --- | --- | --- |"
} >"$OUT"

HEAT4=""
for gib in ${SIZES//,/ }; do
	log "heat-drv: $gib GiB"
	read -r bytes wsec fbytes fsec fmbps safe < <(checkpoint_heat "$gib")
	ck=$(ls -d "$W/heat$gib"/ckpt.* 2>/dev/null | head -n 1)
	rate=-
	[ -n "$ck" ] && rate=$(storage_rate "$ck")
	share=$(awk -v f="$fmbps" -v r="$rate" 'BEGIN { if (r + 0 > 0 && f + 0 > 0) printf "%.0f %%", 100 * f / r; else print "-" }')
	echo "| $gib GiB | $bytes B in $wsec s | $fbytes B in $fsec s | $fmbps MB/s | $rate MB/s | $share | $safe s |" >>"$OUT"
	HEAT4=$ck PLANTED=$gib
done

{
	echo
	echo "## Slowdown of a program while a ${PLANTED:-?} GiB checkpoint flushes"
	echo
	echo "Each run takes one checkpoint (SIGUSR1 0.5 s after its main loop started) with a ${PLANTED:-?} GiB"
	echo "committed checkpoint already in its GPUCKPT_DIR; with flush the thread copies both; without,"
	echo "GPUCKPT_FLUSH_DIR is unset. Medians of $RUNS runs each, alternating; time= is the program's own."
	echo
	echo "| program | without flush (s) | with flush (s) | slowdown | flush done within the run |"
	echo "| --- | --- | --- | --- | --- |"
} >>"$OUT"

# run_prog NAME FLUSH(0|1): the program's time= value; "done" or "not done" on fd 3.
run_prog() {
	local name=$1 flush=$2 dir=$W/p fl=$S/p errf=$W/p.err outf=$W/p.out pid t
	rm -rf "$dir" "$fl"
	mkdir -p "$dir" "$fl"
	cp -a "$HEAT4" "$dir/ckpt.000001"
	drop_caches
	if [ "$flush" = 1 ]; then
		GPUCKPT_DIR=$dir GPUCKPT_FLUSH_DIR=$fl GPUCKPT_LOG_LEVEL=notice LD_PRELOAD=$RT \
			"$BUILD/benchmarks/rodinia/$name" >"$outf" 2>"$errf" &
	else
		GPUCKPT_DIR=$dir GPUCKPT_LOG_LEVEL=notice LD_PRELOAD=$RT \
			"$BUILD/benchmarks/rodinia/$name" >"$outf" 2>"$errf" &
	fi
	pid=$!
	for _ in $(seq 3000); do grep -q 'main loop started' "$errf" && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
	sleep 0.5
	kill -USR1 "$pid" 2>/dev/null
	wait "$pid"
	t=$(sed -n 's/.*: time=\([0-9.]*\) s$/\1/p' "$outf" | tail -n 1)
	echo "${t:--}"
	if [ "$flush" = 1 ]; then
		grep -q "^gpuckpt: flush: $fl/ckpt.000001: " "$errf" && echo done >&3 || echo "not done" >&3
	fi
}

if [ -z "$HEAT4" ]; then
	echo "(no checkpoint was made to plant)" >>"$OUT"
else
	for p in ${PROGRAMS//,/ }; do
		[ -x "$BUILD/benchmarks/rodinia/$p" ] || { log "$p: not built"; continue; }
		log "$p: $RUNS runs each"
		: >"$W/without" && : >"$W/with" && : >"$W/done"
		for _ in $(seq "$RUNS"); do
			run_prog "$p" 0 >>"$W/without" 3>/dev/null
			run_prog "$p" 1 >>"$W/with" 3>>"$W/done"
		done
		a=$(median <"$W/without") b=$(median <"$W/with")
		slow=$(awk -v a="$a" -v b="$b" 'BEGIN { if (a + 0 > 0) printf "%+.2f %%", 100 * (b / a - 1); else print "-" }')
		echo "| $p | $a | $b | $slow | $(grep -c '^done' "$W/done")/$RUNS |" >>"$OUT"
	done
fi
cat "$OUT"
log "written: $OUT"
