#!/bin/bash
# OpenCL in application mode, on pocl (docs/opencl.md): prog-clsteps (two
# queues, events between them, sub-buffers, COPY_HOST_PTR and USE_HOST_PTR
# buffers, a kernel argument set only on even steps) is checkpointed at a
# gpuckpt_point() on pocl's pthread device with 2 compute units, killed, and
# restored onto pocl's basic device (another driver, 1 compute unit) and onto
# the pthread device with 1 compute unit, each ending with the uninterrupted
# run's result; the manifest lists the OpenCL state; a restoring run whose
# objects differ is refused; an image and a user event not yet set make a
# checkpoint be refused, by name; so does shared virtual memory where the
# device has it. The same with the kernels from a program made from a binary,
# and with a kernel cloned (clCloneKernel) after its arguments were set.
# Where an OpenCL GPU device is there too (not on this project's machines: the
# GPU machine has no NVIDIA OpenCL library), from the CPU to the GPU and back.
. "${top_srcdir:-.}/tests/lib/helpers.sh"
B=$top_builddir/tests/opencl
tap_plan 21
gk_scratch

skip_all() {
	for _ in $(seq 21); do tap_skip "$1"; done
	exit 0
}
grep -q '^#define HAVE_OPENCL 1' "$top_builddir/config.h" ||
	skip_all "built without OpenCL (configure --without-opencl, or no OpenCL headers: install ocl-icd-opencl-dev)"
gk_need_built "$GK_RUNTIME" "$B/prog-clsteps"
# pocl's kernel cache: its own, so that a HOME without one (CI) is no matter
# and no earlier run's binaries are used.
export POCL_CACHE_DIR=$GK_SCRATCH/pocl-cache
# pocl: the pthread device (a thread per compute unit) and the basic one.
# pocl 3.1 (bookworm) reads POCL_MAX_PTHREAD_COUNT, newer ones POCL_CPU_MAX_CU_COUNT.
# pocl 6 renamed the devices' names (not POCL_DEVICES' words): pthread-ARCH
# became cpu-ARCH and basic-ARCH cpu-minimal-ARCH (trixie, sid).
TH='^device (pthread-|cpu-([^m]|m[^i]))'
BA='^device (basic-|cpu-minimal-)'
A=(POCL_DEVICES=pthread POCL_MAX_PTHREAD_COUNT=2 POCL_CPU_MAX_CU_COUNT=2)
Bdev=(POCL_DEVICES=basic)
out=$(with_runtime env "${A[@]}" "$B/prog-clsteps" 0 2>&1)
grep -qE "$TH" <<<"$out" ||
	skip_all "no pocl pthread device (install pocl-opencl-icd): $(head -c 300 <<<"$out")"
out=$(with_runtime env "${Bdev[@]}" "$B/prog-clsteps" 0 2>&1)
grep -qE "$BA" <<<"$out" ||
	skip_all "pocl has no basic device here: $(head -c 300 <<<"$out")"

result() { sed -n 's/^result //p' <<<"$1"; }
STEPS=20
ref=$(with_runtime env "${A[@]}" "$B/prog-clsteps" $STEPS 2>&1)
want=$(result "$ref")
other=$(with_runtime env "${Bdev[@]}" "$B/prog-clsteps" $STEPS 2>&1)
check "uninterrupted: the same result on both devices (${want:-none})" \
	test -n "$want" -a "$want" = "$(result "$other")"

dir=$GK_SCRATCH/ck
out=$(with_runtime env "${A[@]}" GPUCKPT_DIR="$dir" "$B/prog-clsteps" $STEPS 5 2>&1)
rc=$?
if [ $rc -eq 137 ] && grep -q "saved at step 5" <<<"$out" && grep -qE "$TH.*2 compute" <<<"$out"; then
	tap_ok "checkpointed at step 5 on the pthread device (2 compute units), then killed"
else
	tap_not_ok "checkpointed at step 5 on the pthread device, then killed (exit $rc)"
	tap_diag "$out"
fi
m=$dir/ckpt.000001/manifest.json
regions=$(jq -r '[.host_regions[].name] | sort | join(" ")' "$m" 2>/dev/null)
check "the manifest lists the OpenCL state and the 3 buffers ($regions)" \
	test "$regions" = "opencl.mem.0 opencl.mem.1 opencl.mem.2 opencl.state step"
off=$(jq -r '.host_regions[] | select(.name == "opencl.state") | .offset' "$m" 2>/dev/null)
state=$(dd if="$dir/ckpt.000001/host.data" bs=4096 skip=$((${off:-0} / 4096)) count=64 2>/dev/null | tr -d '\0')
if grep -q '^gpuckpt-opencl 1$' <<<"$state" && grep -q '^queue 1 ctx 0' <<<"$state" &&
	grep -q '^mem 3 sub 1 parent 2 flags 0x1 origin 0 size 16384$' <<<"$state" &&
	grep -q '^mem 4 sub 1 parent 2 flags 0x1 origin 16384 size 16384$' <<<"$state" &&
	grep -q '^program 0 ctx 0 fp64 1 binary 0 exts - options -cl-std=CL1.2$' <<<"$state" &&
	grep -q '^kernel 1 program 0 name mixk$' <<<"$state" &&
	grep -q '^arg 0 4 value 4 ' <<<"$state" && grep -q '^arg 1 1 mem 8 4$' <<<"$state"; then
	tap_ok "the record: 2 queues, sub-buffers, the program's needs and options, kernels and arguments"
else
	tap_not_ok "the record of the OpenCL objects"
	tap_diag "$state"
fi

restore() { # ENV...: restore the checkpoint with these settings
	with_runtime env "$@" GPUCKPT_DIR="$dir" GPUCKPT_RESTORE=auto GPUCKPT_LOG_LEVEL=info \
		"$B/prog-clsteps" $STEPS 2>&1
}
out=$(restore "${Bdev[@]}")
if grep -qE "$BA" <<<"$out" && grep -q "restored at step 5" <<<"$out"; then
	tap_ok "restored at step 5 onto the basic device (1 compute unit)"
else
	tap_not_ok "restored at step 5 onto the basic device"
	tap_diag "$out"
fi
check "its result is the uninterrupted run's ($(result "$out"))" test "$(result "$out")" = "$want"
check "it loaded the 3 buffers and set 7 kernel arguments again" \
	grep -q "opencl: restored 3 buffers (65536 bytes) and 7 kernel arguments" <<<"$out"

out=$(restore POCL_DEVICES=pthread POCL_MAX_PTHREAD_COUNT=1 POCL_CPU_MAX_CU_COUNT=1)
if grep -qE "$TH.*1 compute" <<<"$out" && grep -q "restored at step 5" <<<"$out" &&
	[ "$(result "$out")" = "$want" ]; then
	tap_ok "restored onto the pthread device with 1 compute unit: the uninterrupted result"
else
	tap_not_ok "restored onto the pthread device with 1 compute unit"
	tap_diag "$out"
fi

# A run whose second sub-buffer lies elsewhere is not the checkpointed one:
# the restore is refused before anything is loaded, naming the buffer.
out=$(restore "${Bdev[@]}" CLSTEPS_SHIFT=1 GPUCKPT_ON_BAD_CHECKPOINT=fresh)
if grep -q "OpenCL buffer 4 is 16128 bytes at 16640" <<<"$out" && grep -q "^first point: 0" <<<"$out"; then
	tap_ok "a run with a sub-buffer elsewhere: the restore is refused, naming it"
else
	tap_not_ok "a run with a sub-buffer elsewhere: the restore is refused, naming it"
	tap_diag "$out"
fi

out=$(with_runtime env "${A[@]}" GPUCKPT_DIR="$GK_SCRATCH/img" "$B/prog-clsteps" $STEPS image 2>&1)
rc=$?
check "an image: no checkpoint, and the runtime names it" \
	test $rc -eq 3 -a -n "$(grep 'an image (clCreateImage)' <<<"$out")"
out=$(with_runtime env "${A[@]}" GPUCKPT_DIR="$GK_SCRATCH/ev" "$B/prog-clsteps" $STEPS event 2>&1)
rc=$?
check "a user event not yet set: no checkpoint, and the runtime says why" \
	test $rc -eq 3 -a -n "$(grep 'user event is not set' <<<"$out")"
check "neither left a checkpoint" test ! -e "$GK_SCRATCH/img/ckpt.000001" -a ! -e "$GK_SCRATCH/ev/ckpt.000001"
out=$(with_runtime env "${A[@]}" GPUCKPT_DIR="$GK_SCRATCH/svm" "$B/prog-clsteps" $STEPS svm 2>&1)
rc=$?
if [ $rc -eq 4 ]; then
	tap_skip "the pthread device has no shared virtual memory (clSVMAlloc gave NULL)"
else
	check "shared virtual memory: no checkpoint, and the runtime names it" \
		test $rc -eq 3 -a -n "$(grep 'shared virtual memory (clSVMAlloc)' <<<"$out")"
fi

# Kernels from a program made from a binary (that of the source program).
dir=$GK_SCRATCH/bin
out=$(with_runtime env "${A[@]}" CLSTEPS_BINARY=1 GPUCKPT_DIR="$dir" "$B/prog-clsteps" $STEPS 7 2>&1)
rc=$?
check "binary: checkpointed at step 7, then killed" \
	test $rc -eq 137 -a -n "$(grep 'saved at step 7' <<<"$out")" -a -n "$(grep 'kernels from a binary' <<<"$out")"
off=$(jq -r '.host_regions[] | select(.name == "opencl.state") | .offset' "$dir/ckpt.000001/manifest.json" 2>/dev/null)
state=$(dd if="$dir/ckpt.000001/host.data" bs=4096 skip=$((${off:-0} / 4096)) count=64 2>/dev/null | tr -d '\0')
if grep -q '^program 1 ctx 0 fp64 0 binary 1 exts - options $' <<<"$state" && ! grep -q '^program 0' <<<"$state" &&
	grep -q '^kernel 0 program 1 name stepk$' <<<"$state"; then
	tap_ok "the record holds the binary program (its source program released), its kernels"
else
	tap_not_ok "the record holds the binary program, its kernels"
	tap_diag "$state"
fi
out=$(with_runtime env "${Bdev[@]}" CLSTEPS_BINARY=1 GPUCKPT_DIR="$dir" GPUCKPT_RESTORE=auto "$B/prog-clsteps" $STEPS 2>&1)
if grep -qE "$BA" <<<"$out" && grep -q "restored at step 7" <<<"$out" && [ "$(result "$out")" = "$want" ]; then
	tap_ok "binary: restored at step 7 onto the basic device, the uninterrupted result"
else
	tap_not_ok "binary: restored at step 7 onto the basic device, the uninterrupted result"
	tap_diag "$out"
fi
# A kernel cloned after its arguments were set: the clone has them.
dir=$GK_SCRATCH/clone
out=$(with_runtime env "${A[@]}" CLSTEPS_CLONE=1 GPUCKPT_DIR="$dir" "$B/prog-clsteps" $STEPS 3 2>&1)
off=$(jq -r '.host_regions[] | select(.name == "opencl.state") | .offset' "$dir/ckpt.000001/manifest.json" 2>/dev/null)
state=$(dd if="$dir/ckpt.000001/host.data" bs=4096 skip=$((${off:-0} / 4096)) count=64 2>/dev/null | tr -d '\0')
if grep -q 'a cloned kernel' <<<"$out" && grep -q '^kernel 2 program 0 name mixk$' <<<"$state" &&
	! grep -q '^kernel 1 ' <<<"$state" && grep -q '^arg 2 0 mem 8 3$' <<<"$state" && grep -q '^arg 2 1 mem 8 4$' <<<"$state"; then
	tap_ok "clone: the record holds the clone with its source's arguments"
else
	tap_not_ok "clone: the record holds the clone with its source's arguments"
	tap_diag "$out"$'\n'"$state"
fi
out=$(with_runtime env "${Bdev[@]}" CLSTEPS_CLONE=1 GPUCKPT_DIR="$dir" GPUCKPT_RESTORE=auto "$B/prog-clsteps" $STEPS 2>&1)
if grep -q "restored at step 3" <<<"$out" && [ "$(result "$out")" = "$want" ]; then
	tap_ok "clone: restored at step 3 onto the basic device, the uninterrupted result"
else
	tap_not_ok "clone: restored at step 3 onto the basic device, the uninterrupted result"
	tap_diag "$out"
fi
# From the CPU to a GPU and back, where the machine has an OpenCL GPU device.
out=$(with_runtime env CLSTEPS_DEVICE=gpu "$B/prog-clsteps" $STEPS 2>&1)
if [ $? -eq 5 ]; then
	why="no OpenCL GPU device here (the ICDs in /etc/OpenCL/vendors: $(ls /etc/OpenCL/vendors 2>/dev/null | tr '\n' ' '))"
	for _ in 1 2 3; do tap_skip "$why"; done
else
	check "uninterrupted on the GPU: the same result ($(sed -n 's/^device //p' <<<"$out"))" test "$(result "$out")" = "$want"
	for pair in "gpu cpu" "cpu gpu"; do
		set -- $pair
		dir=$GK_SCRATCH/x-$1-$2
		with_runtime env "${A[@]}" CLSTEPS_DEVICE=$1 GPUCKPT_DIR="$dir" "$B/prog-clsteps" $STEPS 5 >/dev/null 2>&1
		out=$(with_runtime env "${A[@]}" CLSTEPS_DEVICE=$2 GPUCKPT_DIR="$dir" GPUCKPT_RESTORE=auto "$B/prog-clsteps" $STEPS 2>&1)
		if grep -q "restored at step 5" <<<"$out" && [ "$(result "$out")" = "$want" ]; then
			tap_ok "checkpointed on the $1, restored on the $2: the uninterrupted result"
		else
			tap_not_ok "checkpointed on the $1, restored on the $2: the uninterrupted result"
			tap_diag "$out"
		fi
	done
fi
tap_done
