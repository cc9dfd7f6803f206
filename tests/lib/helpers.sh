# helpers.sh - shared by the shell tests: TAP output, locating the build, running
# programs against the CUDA driver stand-in with the runtime preloaded.
# Sourced; expects top_srcdir and top_builddir (make check exports them).

: "${top_srcdir:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"

TAP_N=0
TAP_FAILED=0

tap_plan() { echo "1..$1"; }
tap_ok() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - $*"; }
tap_not_ok() { TAP_N=$((TAP_N + 1)); TAP_FAILED=$((TAP_FAILED + 1)); echo "not ok $TAP_N - $*"; }
tap_skip() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N # SKIP $*"; }
tap_diag() { sed 's/^/# /' <<<"$*"; }
# check DESCRIPTION COMMAND...: one test point from a command's exit status.
check() {
	local desc=$1; shift
	if "$@"; then tap_ok "$desc"; else tap_not_ok "$desc"; fi
}
# tap_if COND DESCRIPTION: one test point from a condition already evaluated:
# COND 1 (as `$([ ... ] && echo 1)` gives) is a pass, anything else a failure.
tap_if() { if [ "$1" = 1 ]; then tap_ok "$2"; else tap_not_ok "$2"; fi; }
tap_done() { [ "$TAP_FAILED" -eq 0 ]; }

# gk_need_built FILE...: every FILE exists, else the test stops with "Bail
# out!" (an ERROR): what the build makes is never a reason to skip or to test
# something else instead.
gk_need_built() {
	local f
	for f in "$@"; do
		[ -e "$f" ] || { echo "Bail out! not built: $f"; exit 1; }
	done
}

# The built runtime, tool and stand-in driver.
GK_RUNTIME=$top_builddir/runtime/.libs/libgpuckpt.so
GK_TOOL=$top_builddir/runtime/gpuckpt
GK_STANDIN_DIR=$top_builddir/tests/cuda-standin/.libs

# gk_preload: the LD_PRELOAD value for the runtime (ASan's runtime first in a
# sanitizer build, since the programs under test are not built with ASan).
gk_preload() {
	if [ -n "${ASAN_RUNTIME:-}" ] && [ -f "$ASAN_RUNTIME" ]; then
		echo "$ASAN_RUNTIME:$GK_RUNTIME"
	else
		echo "$GK_RUNTIME"
	fi
}

# with_standin CMD...: run CMD against the stand-in libcuda.so.1.
with_standin() {
	LD_LIBRARY_PATH=$GK_STANDIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} "$@"
}

# with_runtime CMD...: run CMD on the stand-in with the runtime preloaded.
with_runtime() {
	LD_PRELOAD=$(gk_preload) with_standin "$@"
}

# The same as environment assignments for env(1), for programs started in the
# background: `env "${GK_RUNTIME_ENV[@]}" prog &` makes $! the program's own
# pid (a shell function run with & would put a subshell in between, and a
# signal sent to $! would never reach the program).
gk_envs() {
	GK_STANDIN_ENV=("LD_LIBRARY_PATH=$GK_STANDIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
		"ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}")
	GK_RUNTIME_ENV=("${GK_STANDIN_ENV[@]}" "LD_PRELOAD=$(gk_preload)")
}
gk_envs

# gk_munged: 0 when munged answers, after starting one of our own where none
# does (munged.sh; MUNGED is its pid, for the caller to stop); else
# MUNGE_WHY says why not. A transparent checkpoint's seal carries root's
# Munge credential.
. "$top_srcdir/tests/lib/munged.sh"
MUNGED=
gk_munged() {
	gk_munged_start "${GK_SCRATCH:-/tmp}/munged.out" && { MUNGED=$GK_MUNGED_PID; return 0; }
	MUNGE_WHY="needs munged: a seal carries root's Munge credential ($GK_MUNGED_WHY)"
	return 1
}

# gk_close_inherited: close every descriptor above 2 this script got from
# whoever ran it (255 is bash's own script). A program checkpointed by CRIU
# inherits them, and CRIU refuses one of another mount namespace ("Can't
# lookup mount=24 for fd=10": a /dev/null or lock file the caller of make
# held open).
gk_close_inherited() {
	local fd
	for fd in $(ls /proc/$BASHPID/fd); do
		[ "$fd" -gt 2 ] && [ "$fd" != 255 ] && eval "exec $fd>&-"
	done 2>/dev/null
}

# gk_daemon CMD...: run CMD in the background without the descriptors above 2
# this shell holds, so that a daemon that outlives the test does not keep a
# caller's lock (flock /tmp/gk-cluster.lock make ...) or pipe open; $! is CMD.
gk_daemon() {
	(
		gk_close_inherited
		exec "$@"
	) &
}

# CRIU for the transparent-mode tests. gk_criu_major CRIU: its major version,
# empty when it does not answer. gk_find_criu: sets CRIU to CRIU 4 or later
# (GK_CRIU, else /usr/sbin/criu or /usr/local/sbin/criu, else the GPU
# machine's unpacked /opt/criu behind a wrapper in $GK_SCRATCH, which must
# exist) and returns 0; else sets CRIU_WHY to the reason and returns 1.
gk_criu_major() { "$1" --version 2>/dev/null | sed -n 's/^Version: *\([0-9]*\).*/\1/p' | head -n 1; }
gk_find_criu() {
	local c major
	CRIU=${GK_CRIU:-}
	CRIU_WHY=
	for c in /usr/sbin/criu /usr/local/sbin/criu; do
		[ -z "$CRIU" ] && [ -x "$c" ] && CRIU=$c
	done
	if [ -z "$CRIU" ] && [ -x /opt/criu/usr/sbin/criu ] && [ -d "${GK_SCRATCH:-}" ]; then
		# A root-owned wrapper in the test's own folder gives it its libraries.
		CRIU=$GK_SCRATCH/criu
		printf '#!/bin/sh\nLD_LIBRARY_PATH=/opt/criu/usr/lib/x86_64-linux-gnu:/opt/criu/lib/x86_64-linux-gnu exec /opt/criu/usr/sbin/criu "$@"\n' >"$CRIU"
		chmod 0755 "$CRIU"
	fi
	if [ -z "$CRIU" ]; then
		CRIU_WHY="no CRIU: set GK_CRIU to CRIU 4 or later (none at /usr/sbin, /usr/local/sbin or /opt/criu; the trixie root has it)"
		return 1
	fi
	major=$(gk_criu_major "$CRIU")
	if [ -z "$major" ]; then
		CRIU_WHY="$CRIU --version does not answer"
		return 1
	elif [ "$major" -lt 4 ]; then
		CRIU_WHY="$CRIU is CRIU $major; transparent mode needs 4 or later"
		return 1
	fi
	return 0
}

# A scratch folder removed when the test script exits (kept, and named on
# stderr, with GK_KEEP_SCRATCH=1: for looking at a failure's logs).
gk_scratch() {
	GK_SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/gpuckpt-test.XXXXXX")
	if [ -n "${GK_KEEP_SCRATCH:-}" ]; then
		echo "scratch folder kept: $GK_SCRATCH" >&2
	else
		trap 'rm -rf "$GK_SCRATCH"' EXIT
	fi
}

# --- A test program run by NAME: its stdout in $GK_SCRATCH/NAME.out, its
# stderr (the runtime's log) in $GK_SCRATCH/NAME.err. The tests of checkpoints
# taken on signals (runtime/increments.sh, background.sh, ...) start it in the
# background, wait for a line, signal it, and restore from what it wrote.

# gk_wait_for NAME PATTERN [SECONDS]: until NAME's output or log shows PATTERN
# (a grep pattern), SECONDS (30) at most; 1 if it never does.
gk_wait_for() {
	for _ in $(seq $((${3:-30} * 10))); do
		grep -q -- "$2" "$GK_SCRATCH/$1.out" "$GK_SCRATCH/$1.err" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# gk_wait_file PATH: until PATH exists, 30 s at most; 1 if it never does.
gk_wait_file() {
	for _ in $(seq 300); do [ -e "$1" ] && return 0; sleep 0.1; done
	return 1
}

# gk_show NAME: the last 20 lines of NAME's output and log, as TAP comments.
gk_show() { tap_diag "$(tail -n 20 "$GK_SCRATCH/$1.out" "$GK_SCRATCH/$1.err" 2>/dev/null)"; }

# gk_expect DESCRIPTION NAME COMMAND...: one test point from COMMAND's exit
# status; a failure shows NAME's output and log with it (gk_show).
gk_expect() {
	local desc=$1 name=$2
	shift 2
	if "$@"; then tap_ok "$desc"; else tap_not_ok "$desc"; gk_show "$name"; fi
}

# gk_restore NAME CHECKPOINT|auto DIR [VAR=VALUE...]: the test's $PROG with its
# ${ARGS[@]}, resumed under the runtime from CHECKPOINT of DIR (GPUCKPT_RESTORE)
# and run to the end as NAME, with the VAR=VALUE settings added.
gk_restore() {
	local name=$1 what=$2 dir=$3
	shift 3
	with_runtime env GPUCKPT_DIR="$dir" GPUCKPT_RESTORE="$what" "$@" "$PROG" "${ARGS[@]}" \
		>"$GK_SCRATCH/$name.out" 2>"$GK_SCRATCH/$name.err"
}

# gk_checksum_of FILE: the checksum in the last "done:" line of a run's output
# (gpu-tables and the programs like it print one at the end);
# gk_resumed_step FILE: the step its log says it resumed from. Empty if none.
gk_checksum_of() { sed -n 's/.*done: steps=[0-9]* checksum=\(0x[0-9a-f]*\).*/\1/p' "$1" | tail -1; }
gk_resumed_step() { sed -n 's/.*resumed from step \([0-9]*\).*/\1/p' "$1" | tail -1; }
