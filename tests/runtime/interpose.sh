#!/bin/bash
# The runtime inside a process, on the CUDA driver stand-in: every route into
# the driver ends in the runtime's placement; dlsym(RTLD_NEXT) keeps its meaning;
# a program that is not checkpoint-aware ends on SIGTERM as before; managed
# memory is checkpointed with the rest.
. "${top_srcdir:-.}/tests/lib/helpers.sh"
B=$top_builddir/tests/runtime
tap_plan 12
gk_scratch

in_range() { # ADDRESS: inside the runtime's default range (16 slices of 1 TiB)
	local a=$(( $1 ))
	[ "$a" -ge $((0x200000000000)) ] && [ "$a" -lt $((0x200000000000 + (16 << 40))) ]
}

gk_need_built "$GK_STANDIN_DIR/libcuda.so.1" "$GK_RUNTIME"

out=$(with_standin "$B/prog-routes" 2>&1)
addr=$(sed -n 's/^linked //p' <<<"$out")
check "without the runtime, the stand-in places memory itself (${addr:-none})" \
	test -n "$addr" -a "$(in_range "${addr:-0}" && echo in)" != in

out=$(with_runtime "$B/prog-routes" 2>&1)
for route in linked dlsym procaddress; do
	addr=$(sed -n "s/^$route //p" <<<"$out")
	if [ -n "$addr" ] && in_range "$addr"; then
		tap_ok "the $route route ends in the runtime's placement ($addr)"
	else
		tap_not_ok "the $route route ends in the runtime's placement"
		tap_diag "$out"
	fi
done

out=$(LD_PRELOAD=$(gk_preload) "$B/prog-dlnext" 2>&1)
check "dlsym(RTLD_NEXT) from a library still finds the definition after that library" \
	grep -q "next after A: B" <<<"$out"

# Not checkpoint-aware: SIGTERM ends it as before, with one line, no checkpoint.
dir=$GK_SCRATCH/unaware
env "${GK_RUNTIME_ENV[@]}" GPUCKPT_DIR="$dir" "$B/prog-unaware" >"$GK_SCRATCH/u.out" 2>"$GK_SCRATCH/u.err" &
pid=$!
for i in $(seq 100); do grep -q ready "$GK_SCRATCH/u.out" 2>/dev/null && break; sleep 0.1; done
kill -TERM $pid
wait $pid
status=$?
check "a program that is not checkpoint-aware still dies by SIGTERM (status $status)" \
	test "$status" -eq 143
check "it says once that no checkpoint was taken and why" \
	test "$(grep -c 'no checkpoint taken on SIGTERM.*not checkpoint-aware' "$GK_SCRATCH/u.err")" -eq 1
check "and leaves no checkpoint behind" \
	test -z "$(ls -A "$dir" 2>/dev/null | grep -vx gpuckpt.events)"

# Managed memory: checkpointed with the rest (runtime/core/managed.c), as a
# host region named after its order and address; once freed, no longer in
# the next checkpoint. (Restores: managed.sh.)
dir=$GK_SCRATCH/managed
out=$(with_runtime env GPUCKPT_DIR="$dir" "$B/prog-managed" 2>&1)
if grep -q "point returned 1 " <<<"$out" &&
	grep -q '"gpuckpt\.managed\.0\.[0-9a-f.]*"' "$dir/ckpt.000001/manifest.json" 2>/dev/null; then
	tap_ok "a checkpoint of a process holding managed memory is written, the memory in it"
else
	tap_not_ok "a checkpoint of a process holding managed memory is written, the memory in it"
	tap_diag "$out"
fi
if grep -q "after freeing it, point returned 1" <<<"$out" && [ -d "$dir/ckpt.000002" ] &&
	! grep -q "gpuckpt.managed" "$dir/ckpt.000002/manifest.json"; then
	tap_ok "once the managed memory is freed, the next checkpoint is written without it"
else
	tap_not_ok "once the managed memory is freed, the next checkpoint is written without it"
	tap_diag "$out"
fi

# Another CUDA program of the same task (a preparation step, a tool) started
# with the task's restore settings: the checkpoint is not its to load.
out=$(with_runtime env GPUCKPT_DIR="$dir" GPUCKPT_RESTORE=auto GPUCKPT_LOG_LEVEL=info \
	"$B/prog-routes" 2>&1)
if [ $? -eq 0 ] && grep -q "taken by another program" <<<"$out"; then
	tap_ok "another program of the task runs normally and does not load the checkpoint"
else
	tap_not_ok "another program of the task runs normally and does not load the checkpoint"
	tap_diag "$out"
fi

# No device memory at the checkpoint, none allocated before the first point
# of the restart: the host state still comes back.
dir=$GK_SCRATCH/hostonly
with_runtime env GPUCKPT_DIR="$dir" "$B/prog-hostonly" save >/dev/null 2>&1
out=$(with_runtime env GPUCKPT_DIR="$dir" GPUCKPT_RESTORE=auto "$B/prog-hostonly" resume 2>&1)
if [ $? -eq 0 ] && grep -q "resumed: 2 step 7" <<<"$out"; then
	tap_ok "a checkpoint without device memory restores before the program allocates any"
else
	tap_not_ok "a checkpoint without device memory restores before the program allocates any"
	tap_diag "$out"
fi
tap_done
