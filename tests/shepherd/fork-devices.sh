#!/bin/bash
# A child forked after CUDA started, without exec (PyTorch's DataLoader
# workers), must not hold the driver's device files or their mappings in
# transparent mode: CRIU cannot dump either, and every dump of such a
# training loop failed on an H200 (runtime/core/control/fork_maps.c). On the
# stand-in there are no driver files, so the program opens and maps a file
# of its own named like one (/dev/nvidia-gktest-PID). Outside transparent
# mode nothing changes: the same program without the shepherd keeps both in
# the child, which also shows that the test can tell. The child has no
# runtime thread (fork copies one thread): in transparent mode it holds a
# SIGTERM from outside (Slurm's, to every process of the step; a DataLoader
# worker killed by it made PyTorch raise in the checkpointed parent), and
# lets one from itself or its parent take its course (point 6 fails without
# runtime/core/control/agent.c's forked_child, point 5 with the child's
# handlers simply reset).
. "${top_srcdir:-.}/tests/lib/helpers.sh"
SHEP=$top_builddir/runtime/gpuckpt-shepherd
PROG=$top_builddir/tests/shepherd/prog-fork-dev
PLAN=6
tap_plan $PLAN
gk_scratch
gk_need_built "$SHEP" "$PROG" "$GK_STANDIN_DIR/libcuda.so.1" "$GK_RUNTIME"
if [ "$(id -u)" -ne 0 ]; then
	for i in $(seq $PLAN); do tap_skip "needs root (the shepherd refuses to run without it; the file goes in /dev)"; done
	exit 0
fi
DEV=/dev/nvidia-gktest-$$
trap 'rm -f "$DEV"; rm -rf "$GK_SCRATCH"' EXIT
head -c 4096 /dev/zero >"$DEV"
FAKE=$GK_SCRATCH/criu
printf '#!/bin/sh\n[ "$1" = --version ] && { echo "Version: 4.1"; exit 0; }\nexit 1\n' >"$FAKE"
chmod 0755 "$FAKE"

# Without the shepherd (no transparent mode): the child keeps both.
env "${GK_RUNTIME_ENV[@]}" "$PROG" "$DEV" >"$GK_SCRATCH/plain" 2>"$GK_SCRATCH/plain.err"
if grep -qx "child fd $DEV map yes" "$GK_SCRATCH/plain"; then
	tap_ok "without transparent mode a forked child keeps the device file and its mapping (as before)"
else
	tap_not_ok "without transparent mode a forked child keeps the device file and its mapping (as before)"
	tap_diag "$(cat "$GK_SCRATCH/plain" "$GK_SCRATCH/plain.err")"
fi

env "${GK_STANDIN_ENV[@]}" "$SHEP" run --criu "$FAKE" --dir "$GK_SCRATCH/ckpt" --uid 0 --gid 0 -- \
	env "${GK_RUNTIME_ENV[@]}" "$PROG" "$DEV" >"$GK_SCRATCH/out" 2>"$GK_SCRATCH/err"
st=$?
if grep -qx "child fd /dev/null map no" "$GK_SCRATCH/out"; then
	tap_ok "in transparent mode the child holds /dev/null in the descriptor's place, and no mapping"
else
	tap_not_ok "in transparent mode the child holds /dev/null in the descriptor's place, and no mapping"
	tap_diag "$(cat "$GK_SCRATCH/out"; tail -n 5 "$GK_SCRATCH/err")"
fi
if grep -qx "parent fd $DEV map yes" "$GK_SCRATCH/out"; then
	tap_ok "the parent keeps its descriptor and its mapping"
else
	tap_not_ok "the parent keeps its descriptor and its mapping"
	tap_diag "$(cat "$GK_SCRATCH/out")"
fi
if [ "$st" = 0 ]; then
	tap_ok "the program ended 0 under the shepherd"
else
	tap_not_ok "the program ended 0 under the shepherd (status $st)"
	tap_diag "$(tail -n 5 "$GK_SCRATCH/err")"
fi
if grep -qx "child held an outside SIGTERM" "$GK_SCRATCH/out"; then
	tap_ok "in transparent mode the child holds a SIGTERM from outside (Slurm's to every process), for the shepherd to decide"
else
	tap_not_ok "in transparent mode the child holds a SIGTERM from outside (Slurm's to every process), for the shepherd to decide"
	tap_diag "$(cat "$GK_SCRATCH/out")"
fi
if grep -qx "child ended by signal 15" "$GK_SCRATCH/out"; then
	tap_ok "... and one it sends itself ends it, as it would without gpuckpt"
else
	tap_not_ok "... and one it sends itself ends it, as it would without gpuckpt"
	tap_diag "$(cat "$GK_SCRATCH/out")"
fi
