#!/bin/bash
# ipc-users.sh - who may take a process's memory through the legacy CUDA IPC
# that the runtime serves (runtime/core/interpose/ipc.c), on the stand-in.
# An exporter under gpuckpt (root) writes a handle of its memory to a file
# anyone can read:
#   - an importer of another user (nobody) that has the handle is refused:
#     the exporter checks the connecting process's uid and says so, and the
#     importer's cuIpcOpenMemHandle fails;
#   - the same handle opened by a process of the exporter's user works (the
#     refusal above is not a broken path);
#   - after the exporter ended, another user's process binds the socket name
#     the handle names (it can compute it from the handle): an importer of
#     the handle's user refuses it, naming who holds it, and maps nothing;
#   - a process of the exporter's user started with GPUCKPT_CUDA_IPC=0
#     (the others run with the default, 1) does not open the handle, saying
#     why, and never hands it to the driver.
. "${top_srcdir:-.}/tests/lib/helpers.sh"
PROG=$top_builddir/tests/runtime/prog-unaware
PLAN=5
unset GPUCKPT_CUDA_IPC
tap_plan $PLAN
gk_scratch
gk_need_built "$GK_STANDIN_DIR/libcuda.so.1" "$GK_RUNTIME" "$PROG"
if [ "$(id -u)" -ne 0 ] || ! setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null ||
	! PY=$(command -v /usr/bin/python3 || command -v python3) ||
	! setpriv --reuid=65534 --regid=65534 --clear-groups "$PY" -c '' 2>/dev/null; then
	for _ in $(seq $PLAN); do tap_skip "needs root, setpriv to uid 65534 and a python3 that uid can run"; done
	exit 0
fi
chmod 755 "$GK_SCRATCH"
H=$GK_SCRATCH/handle
env "${GK_RUNTIME_ENV[@]}" "$PROG" --ipc-export "$H" >"$GK_SCRATCH/exp.out" 2>&1 &
exp=$!
for _ in $(seq 100); do grep -q ready "$GK_SCRATCH/exp.out" && break; sleep 0.1; done
chmod 644 "$H" 2>/dev/null

env "${GK_RUNTIME_ENV[@]}" setpriv --reuid=65534 --regid=65534 --clear-groups "$PROG" \
	--ipc-open "$H" >"$GK_SCRATCH/nobody.out" 2>&1 &
imp=$!
for _ in $(seq 50); do grep -qs "ready\|cannot open" "$GK_SCRATCH/nobody.out" && break; sleep 0.1; done
kill $imp 2>/dev/null
wait $imp 2>/dev/null
check "an importer of another user is refused by the exporter, which names its uid" \
	eval 'grep -q "cannot open the IPC handle" "$GK_SCRATCH/nobody.out" &&
		grep -q "ipc: refused a connection from uid 65534" "$GK_SCRATCH/exp.out"'

env "${GK_RUNTIME_ENV[@]}" "$PROG" --ipc-open "$H" >"$GK_SCRATCH/same.out" 2>&1 &
imp=$!
for _ in $(seq 50); do grep -qs "ready\|cannot open" "$GK_SCRATCH/same.out" && break; sleep 0.1; done
kill $imp 2>/dev/null
wait $imp 2>/dev/null
check "an importer of the exporter's user opens the same handle" grep -q ready "$GK_SCRATCH/same.out"

env GPUCKPT_CUDA_IPC=0 "${GK_RUNTIME_ENV[@]}" GPUCKPT_STANDIN_TRACE=1 "$PROG" --ipc-open "$H" \
	>"$GK_SCRATCH/off.out" 2>&1 &
imp=$!
for _ in $(seq 50); do grep -qs "ready\|cannot open" "$GK_SCRATCH/off.out" && break; sleep 0.1; done
kill $imp 2>/dev/null
wait $imp 2>/dev/null
check "... one started with GPUCKPT_CUDA_IPC=0 does not, saying so, nor asks the driver" \
	eval 'grep -q "cannot open the IPC handle" "$GK_SCRATCH/off.out" &&
		grep -q "ipc: a handle of gpuckpt.s CUDA IPC is not opened: this process runs with GPUCKPT_CUDA_IPC=0" "$GK_SCRATCH/off.out" &&
		! grep -q "stand-in: cuIpcOpenMemHandle" "$GK_SCRATCH/off.out"'
kill $exp 2>/dev/null
wait $exp 2>/dev/null

touch "$GK_SCRATCH/squat.mark"
chmod 666 "$GK_SCRATCH/squat.mark"
# The name the handle names: "gpuckpt-ipc-PID-NONCE" (pid at byte 8, nonce at 16).
name=$("$PY" -c 'import struct,sys; b=open(sys.argv[1],"rb").read(); print("gpuckpt-ipc-%d-%016x" % (struct.unpack_from("<i",b,8)[0], struct.unpack_from("<Q",b,16)[0]))' "$H")
setpriv --reuid=65534 --regid=65534 --clear-groups "$PY" -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\0" + sys.argv[1]); s.listen(4)
open(sys.argv[2], "a").write("bound\n")
s.settimeout(20)
try:
    c, _ = s.accept(); time.sleep(2)
except Exception:
    pass
' "$name" "$GK_SCRATCH/squat.mark" >/dev/null 2>&1 &
sq=$!
for _ in $(seq 50); do [ -s "$GK_SCRATCH/squat.mark" ] && break; sleep 0.1; done
env "${GK_RUNTIME_ENV[@]}" "$PROG" --ipc-open "$H" >"$GK_SCRATCH/squat.out" 2>&1 &
imp=$!
for _ in $(seq 50); do grep -qs "ready\|cannot open" "$GK_SCRATCH/squat.out" && break; sleep 0.1; done
kill $imp $sq 2>/dev/null
wait $imp $sq 2>/dev/null
check "a socket another user bound under the handle's name is not trusted: nothing opened" \
	eval 'test -s "$GK_SCRATCH/squat.mark" && grep -q "cannot open the IPC handle" "$GK_SCRATCH/squat.out"'
check "... and the importer names who holds it" \
	grep -q "ipc: the IPC socket of process [0-9]* is held by process [0-9]* of uid 65534: not opened" \
	"$GK_SCRATCH/squat.out"
tap_done
