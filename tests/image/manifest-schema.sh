#!/bin/bash
# manifest-schema.sh - runtime/image/manifest.schema.json (FORMAT.md) says what
# the reader accepts, and what the writer writes: the manifests of real
# checkpoints (the runtime on the CUDA driver stand-in: heat-drv's whole
# checkpoints and increments under Slurm's variables, gpu-peer's format 4,
# gpu-tables' format 5, prog-ipc's importer's format 6,
# halo's MPI set members; mkimage's formats 2 and 3; a format 1 one) and of the
# fuzz corpus (every format version 1 to 6) validate, with no key the schema
# does not name; `gpuckpt inspect --json` holds a valid manifest under
# "manifest"; manifests the reader refuses are refused by the schema too (a
# list of known ones, and each field of real manifests changed in many ways:
# the schema and the reader agree on all but what FORMAT.md lists under
# "Checks beyond the schema").
# Needs python3-jsonschema (draft 2020-12): without it, every point is a SKIP.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"
MKIMAGE=$top_builddir/tests/image/mkimage
HEAT=$top_builddir/examples/heat/heat-drv
HEAT_MODULE=$top_builddir/examples/heat/.libs/heat_kernels_host.so
PEER=$top_builddir/tests/gpu/gpu-peer
TABLES=$top_builddir/tests/gpu/gpu-tables
HASH=$top_builddir/tests/cuda-standin/modules/.libs/hash_kernel_host.so
HALO=$top_builddir/examples/halo/halo-drv
HALO_MODULE=$top_builddir/examples/halo/.libs/halo_kernels_host.so
IPC=$top_builddir/tests/runtime/prog-ipc
SCHEMA=$top_srcdir/runtime/image/manifest.schema.json
CHECKER=$top_srcdir/tests/image/manifest-schema.py
CORPUS=$top_srcdir/tests/fuzz/corpus/manifest
PLAN=52
tap_plan $PLAN
gk_scratch

PY=
for p in python3 /usr/bin/python3; do
	if "$p" "$CHECKER" probe >/dev/null 2>&1; then PY=$p; break; fi
done
if [ -z "$PY" ]; then
	for _ in $(seq $PLAN); do
		tap_skip "python3-jsonschema (draft 2020-12) is not installed (tests/install-deps.sh installs it)"
	done
	exit 0
fi
gk_need_built "$MKIMAGE" "$GK_TOOL" "$GK_RUNTIME" "$GK_STANDIN_DIR/libcuda.so.1" "$HEAT" \
	"$HEAT_MODULE" "$PEER" "$TABLES" "$HASH" "$IPC"
export GPUCKPT_LOG_LEVEL=info GPUCKPT_MUNGE_SOCKET=$GK_SCRATCH/no-munged

# schema_is MODE DESCRIPTION [--key KEY] FILE...: one test point.
schema_is() {
	local mode=$1 desc=$2 out
	shift 2
	if out=$("$PY" "$CHECKER" "$SCHEMA" "$mode" "$@" 2>&1); then
		tap_ok "$desc"
	else
		tap_not_ok "$desc"
		tap_diag "$out"
	fi
}
# inspect_json CHECKPOINT...: gpuckpt inspect --json of each into $GK_SCRATCH,
# the files' names in INSPECTED; a point of its own when one fails.
inspect_json() {
	local ck out n=0
	INSPECTED=()
	for ck in "$@"; do
		n=$((n + 1))
		out=$GK_SCRATCH/inspect.$TAP_N.$n.json
		"$GK_TOOL" inspect --json "$ck" >"$out" 2>"$out.err" || {
			tap_diag "gpuckpt inspect --json $ck failed: $(cat "$out.err")"
			out=$out.err
		}
		INSPECTED+=("$out")
	done
}
quiet() { "$@" >/dev/null 2>&1; }
# differential DESCRIPTION CHECKPOINT COUNT: the schema and the reader agree on
# the checkpoint's manifest with each field changed (manifest-schema.py).
differential() {
	local out
	if out=$(ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} "$PY" "$CHECKER" "$SCHEMA" \
		differential "$2" "$GK_TOOL" 1 "$3" 2>&1); then
		tap_ok "$1"
	else
		tap_not_ok "$1"
		tap_diag "$(head -n 20 <<<"$out")"
	fi
}
version_of() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$1"; }
show() { tap_diag "$(tail -n 15 "$GK_SCRATCH/$1.out" "$GK_SCRATCH/$1.err" 2>/dev/null)"; }
wait_for() { # NAME PATTERN: until the run's output shows PATTERN (60 s at most)
	for _ in $(seq 600); do
		grep -q -- "$2" "$GK_SCRATCH/$1.out" "$GK_SCRATCH/$1.err" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# --- the fuzz corpus: every format version the reader accepts -----------------
versions=$(for f in "$CORPUS"/*.json; do version_of "$f"; done | sort -u | tr '\n' ' ')
check "the manifest corpus holds every format version 1 to 6 ($versions)" \
	test "$versions" = "1 2 3 4 5 6 "
schema_is strict "every manifest of the corpus is valid, with no key the schema does not name" \
	"$CORPUS"/*.json

# --- mkimage: formats 2 and 3, through the image library's writer --------------
C2=$("$MKIMAGE" "$GK_SCRATCH/mk2" --format 2 --slurm --unsigned --devices 2 --allocs 6 \
	--regions 2 --seed 3 2>/dev/null)
C3=$("$MKIMAGE" "$GK_SCRATCH/mk3" --slurm --unsigned --devices 2 --allocs 6 --regions 2 \
	--max-size 40000000 --seed 4 2>/dev/null)
check "mkimage wrote a format 2 and a format 3 checkpoint" \
	test -n "$C2" -a -n "$C3" -a "$(version_of "$C2/manifest.json" 2>/dev/null)" = 2 -a \
	"$(version_of "$C3/manifest.json" 2>/dev/null)" = 3
schema_is strict "their manifests are valid (strict)" "$C2/manifest.json" "$C3/manifest.json"
inspect_json "$C2" "$C3"
schema_is valid "gpuckpt inspect --json of them holds a valid manifest under \"manifest\"" \
	--key manifest "${INSPECTED[@]}"

differential "format 3, each field changed in every way the test knows: what the schema refuses the reader refuses, and the reverse for one field's own checks" \
	"$C3" 100000

# as_written N CK: what every format's own checkpoint must pass (4 points):
# its manifest is valid (strict); the schema and the reader agree on 200
# changed fields; gpuckpt inspect --json of it holds a valid manifest.
as_written() {
	schema_is strict "its manifest is valid (strict)" "$2/manifest.json"
	differential "format $1, 200 fields changed: the schema and the reader agree" "$2" 200
	inspect_json "$2"
	schema_is valid "gpuckpt inspect --json of it holds a valid manifest" --key manifest \
		"${INSPECTED[@]}"
}

# --- format 1: written by no gpuckpt now, still read --------------------------
# mkimage's format 2 with each allocation's one part as its own file and offset.
C1=$GK_SCRATCH/mk1/ckpt.000001
mkdir -p "$GK_SCRATCH/mk1" && cp -a "$C2" "$C1" && rm -f "$C1/manifest.sig"
"$PY" - "$C1/manifest.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["version"] = 1
for a in d["allocations"]:
    parts = a.pop("parts")
    assert len(parts) <= 1, "more than one part"
    a["file"] = parts[0]["file"] if parts else d["files"][0]["name"]
    a["offset"] = parts[0]["offset"] if parts else 0
json.dump(d, open(sys.argv[1], "w"), indent=2)
EOF
check "a format 1 checkpoint is read by gpuckpt inspect" quiet "$GK_TOOL" inspect "$C1"
as_written 1 "$C1"
check "inspect --json shows a format 1 manifest as format 2 (its form as written now)" \
	test "$("$PY" -c 'import json,sys; m=json.load(open(sys.argv[1]))["manifest"]; print(m["version"], all("parts" in a for a in m["allocations"]))' "${INSPECTED[0]}")" = "2 True"

# --- the runtime on the stand-in: heat-drv, whole and incremental ---------------
D=$GK_SCRATCH/heat
env "${GK_RUNTIME_ENV[@]}" GPUCKPT_DIR="$D" GPUCKPT_KEEP=5 SLURM_JOB_ID=4242 SLURM_STEP_ID=0 \
	SLURM_PROCID=0 SLURM_RESTART_COUNT=0 "$HEAT" --size 96 --steps 400 --report-every 10 \
	--module "$HEAT_MODULE" --delay-ms 10 >"$GK_SCRATCH/heat.out" 2>"$GK_SCRATCH/heat.err" &
PID=$!
wait_for heat "step 40"; kill -USR1 $PID
wait_for heat "ckpt.000001: wrote"; wait_for heat "step 80"; kill -USR1 $PID
wait_for heat "ckpt.000002: wrote"; wait_for heat "step 120"; kill -TERM $PID
wait $PID
HEATCK=("$D"/ckpt.*)
if [ ${#HEATCK[@]} -eq 3 ] && [ -e "${HEATCK[2]}/manifest.json" ]; then
	tap_ok "heat-drv on the stand-in wrote three checkpoints (SIGUSR1, SIGUSR1, SIGTERM)"
else
	tap_not_ok "heat-drv on the stand-in wrote three checkpoints (SIGUSR1, SIGUSR1, SIGTERM)"
	show heat
fi
HEATM=("${HEATCK[@]/%//manifest.json}")
check "the runtime wrote format 3 with its Slurm job, and an increment with references" \
	"$PY" - "${HEATM[@]}" <<'EOF'
import json, sys
ms = [json.load(open(p)) for p in sys.argv[1:]]
assert all(m["version"] == 3 and m["slurm"]["job_id"] == "4242" for m in ms)
assert any(m["increment"] > 0 and m["references"] for m in ms)
assert any("keys" in a for m in ms for a in m["allocations"])
EOF
schema_is strict "heat-drv's manifests are valid (strict)" "${HEATM[@]}"
inspect_json "${HEATCK[@]}"
schema_is valid "gpuckpt inspect --json of them holds a valid manifest" --key manifest \
	"${INSPECTED[@]}"
check "inspect --json's manifest is the stored one (heat-drv's last checkpoint)" \
	"$PY" -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2]))["manifest"]; sys.exit(a != b)' \
	"${HEATM[2]}" "${INSPECTED[2]}"

# --- format 4: peer access between two devices (gpu-peer) ---------------------
D=$GK_SCRATCH/peer
env "${GK_RUNTIME_ENV[@]}" GPUCKPT_DIR="$D" GPUCKPT_STANDIN_GPUS=4 "$PEER" --steps 120 \
	--delay-ms 10 >"$GK_SCRATCH/peer.out" 2>"$GK_SCRATCH/peer.err" &
PID=$!
wait_for peer "step 40"; kill -TERM $PID
wait $PID
PEERCK=$(ls -d "$D"/ckpt.* 2>/dev/null | tail -1)
check "gpu-peer wrote a format 4 checkpoint" \
	test -n "$PEERCK" -a "$(version_of "$PEERCK/manifest.json" 2>/dev/null)" = 4 || show peer
as_written 4 "$PEERCK"

# --- format 5: zero parts (gpu-tables with a mostly unused pool) ---------------
D=$GK_SCRATCH/zero
env "${GK_RUNTIME_ENV[@]}" GPUCKPT_DIR="$D" GPUCKPT_CHUNK_SIZE=1M GPUCKPT_HASH_MODULE="$HASH" \
	"$TABLES" --size 4 --pool 32 --steps 1000 --report-every 10 --delay-ms 10 >"$GK_SCRATCH/zero.out" \
	2>"$GK_SCRATCH/zero.err" &
PID=$!
wait_for zero "step 40"; kill -TERM $PID
wait $PID
C5=$(ls -d "$D"/ckpt.* 2>/dev/null | tail -1)
V5=$([ -n "$C5" ] && version_of "$C5/manifest.json" 2>/dev/null)
check "gpu-tables --pool wrote a format 5 checkpoint ($V5) with zero parts" \
	sh -c "test '$V5' = 5 && grep -q '\"zero\": true' '$C5/manifest.json'" || show zero
as_written 5 "$C5"

# --- format 6: the importer of prog-ipc's CUDA IPC lists its opens -------------
D=$GK_SCRATCH/ipc
GPUCKPT_CUDA_IPC=1 with_runtime env GPUCKPT_DIR="$D" "$IPC" --steps 8 --checkpoint-at 3 \
	--exit-after-checkpoint --other after >"$GK_SCRATCH/ipc.out" 2>"$GK_SCRATCH/ipc.err"
C6=$(ls -d "$D"/child/ckpt.* 2>/dev/null | tail -1)
V6=$([ -n "$C6" ] && version_of "$C6/manifest.json" 2>/dev/null)
check "prog-ipc's importer wrote a format 6 checkpoint ($V6) with its IPC imports" \
	sh -c "test '$V6' = 6 && grep -q '\"ipc_imports\"' '$C6/manifest.json'" || show ipc
as_written 6 "$C6"

# --- a step's checkpoint set: four MPI ranks of halo ----------------------------
if [ -x "$HALO" ] && [ -e "$HALO_MODULE" ] && command -v mpirun >/dev/null; then
	B=$GK_SCRATCH/bb/7/step.0
	mkdir -p "$B"
	cat >"$GK_SCRATCH/rank.sh" <<EOF
#!/bin/bash
r=\$OMPI_COMM_WORLD_RANK
export GPUCKPT_DIR=$B/task.\$r GPUCKPT_STEP_TASKS=4 GPUCKPT_TASK=\$r GPUCKPT_LOG_LEVEL=notice
export LD_LIBRARY_PATH=$GK_STANDIN_DIR\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export LD_PRELOAD=$(gk_preload) ASAN_OPTIONS=\${ASAN_OPTIONS:-detect_leaks=0}
echo \$\$ >$GK_SCRATCH/pid.\$r
exec "\$@"
EOF
	chmod +x "$GK_SCRATCH/rank.sh"
	MPIRUN=(mpirun --oversubscribe --bind-to none -n 4)
	[ "$(id -u)" -eq 0 ] && MPIRUN+=(--allow-run-as-root)
	"${MPIRUN[@]}" "$GK_SCRATCH/rank.sh" "$HALO" --size 32 --steps 300 --report-every 10 \
		--module "$HALO_MODULE" --delay-ms 20 >"$GK_SCRATCH/halo.out" 2>&1 &
	MPIRUN_PID=$!
	for _ in $(seq 600); do
		grep -q "step 40" "$GK_SCRATCH/halo.out" 2>/dev/null && [ -e "$GK_SCRATCH/pid.0" ] && break
		sleep 0.1
	done
	kill -TERM "$(cat "$GK_SCRATCH/pid.0" 2>/dev/null)" 2>/dev/null
	for _ in $(seq 600); do kill -0 $MPIRUN_PID 2>/dev/null || break; sleep 0.1; done
	kill $MPIRUN_PID 2>/dev/null
	wait $MPIRUN_PID 2>/dev/null
	SETM=("$B"/task.*/ckpt.*/manifest.json)
	SETREC=$(ls "$B"/set.* 2>/dev/null | head -1)
	if [ ${#SETM[@]} -eq 4 ] && [ -e "${SETM[0]}" ] && [ -n "$SETREC" ]; then
		tap_ok "halo's four ranks wrote a checkpoint set (a member each, and its record)"
	else
		tap_not_ok "halo's four ranks wrote a checkpoint set (a member each, and its record)"
		tap_diag "$(tail -n 20 "$GK_SCRATCH/halo.out")"
	fi
	schema_is strict "the members' manifests, each naming the set, are valid (strict)" "${SETM[@]}"
	differential "a set member, 200 fields changed: the schema and the reader agree" \
		"${SETM[1]%/manifest.json}" 200
	check "the set record is the line FORMAT.md describes, with the members' set id" \
		"$PY" - "$SETREC" "${SETM[@]}" <<'EOF'
import json, re, sys
line = open(sys.argv[1]).read()
m = re.fullmatch(r"gpuckpt-set 1 sequence=([0-9]+) id=([0-9a-f]{16}) members=([0-9]+) "
                 r"step=(-?[0-9]+) agreement=([a-z0-9_-]{1,15}) created=(-?[0-9]+)\n", line)
assert m, line
for p in sys.argv[2:]:
    s = json.load(open(p))["set"]
    assert int(s["id"], 16) == int(m.group(2), 16) and s["members"] == int(m.group(3)) == 4
EOF
else
	for _ in 1 2 3 4; do tap_skip "examples/halo (needs MPI), its host kernels or mpirun are missing"; done
fi

# --- what the reader refuses, the schema refuses --------------------------------
# refused DESCRIPTION MESSAGE PYTHON: PYTHON changes the manifest d of a copy
# of C3 (C2 with BASE=C2); gpuckpt inspect must refuse it saying MESSAGE, and
# the schema must refuse it too.
refused() {
	local desc=$1 want=$2 code=$3 base=${BASE:-$C3} ck out rc sch
	ck=$GK_SCRATCH/bad.$TAP_N/ckpt.000001
	mkdir -p "${ck%/*}" && cp -a "$base" "$ck"
	"$PY" -c "import json, sys
d = json.load(open(sys.argv[1]))
$code
json.dump(d, open(sys.argv[1], 'w'), indent=2)" "$ck/manifest.json"
	out=$("$GK_TOOL" inspect "$ck" 2>&1 >/dev/null)
	rc=$?
	sch=$("$PY" "$CHECKER" "$SCHEMA" invalid "$ck/manifest.json" 2>&1)
	if [ $rc -eq 1 ] && [[ $out == *"$want"* ]] && [ -z "$sch" ]; then
		tap_ok "$desc: refused by the reader and the schema"
	else
		tap_not_ok "$desc: refused by the reader and the schema"
		tap_diag "inspect: exit $rc: $out (expected: $want)"
		tap_diag "schema: ${sch:-refused}"
	fi
}
refused "a newer format version" "format version 7 is not supported" 'd["version"] = 7'
refused "a zero part in format 3" "needs format version 5" \
	'd["allocations"][0]["parts"][0] = {"zero": True, "size": d["allocations"][0]["parts"][0]["size"]}'
BASE=$C5 refused "a zero part that names a file" "held by no file" \
	'p = [p for a in d["allocations"] for p in a["parts"] if p.get("zero")][0]; p["file"] = d["files"][0]["name"]'
refused "IPC imports in format 3" "needs format version 6" \
	'd["ipc_imports"] = [{"ordinal": 0, "address": "0x180100000000", "size": 4096, "exporter_address": "0x200000000000"}]'
refused "an IPC import of no bytes" "are not a block of memory" \
	'd["version"] = 6; d["ipc_imports"] = [{"ordinal": 0, "address": "0x180100000000", "size": 0, "exporter_address": "0x200000000000"}]'
refused "another format" "not a gpuckpt manifest" 'd["format"] = "criu"'
refused "no chunk_size" "missing field 'chunk_size'" 'del d["chunk_size"]'
refused "a chunk_size not a multiple of 4096" "chunk_size 1000 is not allowed" \
	'd["chunk_size"] = 1000'
refused "an address without 0x" "must be a hex string" \
	'd["allocations"][0]["address"] = d["allocations"][0]["address"][2:]'
refused "an address with a NUL character in it" "must be a hex string" \
	'd["allocations"][0]["address"] += "\u0000zz"'
refused "a checksum of 15 hex digits" "must be 16 hex digits" \
	'd["allocations"][0]["xxh3"][0] = d["allocations"][0]["xxh3"][0][1:]'
refused "a data file named ../x" "file name '../x' is not allowed" \
	'd["files"][0]["name"] = "../x"'
refused "a data file named manifest.sig" "is not allowed" \
	'd["allocations"][0]["parts"][0]["file"] = "manifest.sig"'
refused "peer_access in format 3" "needs format version 4" \
	'd["devices"][0]["peer_access"] = [1]'
refused "a time that is not UTC" "must be a UTC time" 'd["created"] = "2026-11-22 10:00:00"'
refused "a negative uid" "must not be negative" 'd["uid"] = -1'
refused "references in a checkpoint that is no increment" "is not an increment" \
	'd["references"] = [{"sequence": 1, "id": "0" * 32, "files": [{"name": "device0.data", "size": 4096}]}]'
refused "format 3 checksums in format 2 (xxh3 for xxh64)" "missing field 'allocations[0].xxh64'" \
	'd["version"] = 2'
BASE=$C2 refused "a part in another checkpoint in format 2" "need format 3" \
	'd["allocations"][0]["parts"][0]["sequence"] = 1'
refused "an allocation of an empty kind" "field 'allocations[0].kind' is empty" \
	'd["allocations"][0]["kind"] = ""'
