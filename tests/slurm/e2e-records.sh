#!/bin/bash
# e2e-records.sh - what Slurm admins see, through real slurmctld and slurmd:
# a job that is checkpointed on requeue and restored gets an AdminComment
# ("gpuckpt: 1 checkpoint, 1 restore, last ckpt.1 (SIZE)") in `scontrol show
# job`, set by the plugin as root from the job's record in the shared root
# (when its batch script ends, and when a run is requeued: Slurm refuses to
# change a job that has ended); a job whose restore is refused gets
# ", 1 failed"; each node's
# Prometheus textfile counts what happened there (checkpoints, restores,
# staging in and out, bytes, seconds) and is well-formed; what a user forges
# in the runtime's event file is refused (counted as rejected lines, never
# in the record); `gpuckpt report` sums the records per job and in total,
# GPU time saved included, in text and JSON, for root only.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

e2e_require 26
e2e_start
TOOL=$GK_TOOL
SH=$E2E_DIR/shared
SIZE=64 STEPS=300 DELAY=50
ref=$(reference $SIZE $STEPS)
s=$(job_script records "srun $APP $(app_args $SIZE $STEPS $DELAY)")

admin_comment() { scontrol show job "$1" | sed -n 's/^ *AdminComment=\(.*[^ ]\) *$/\1/p'; }
# metric NAME: the sum of a series over both nodes' files.
metric() { cat "$E2E_DIR"/nodes/*/metrics/gpuckpt.prom 2>/dev/null | awk -v k="$1" '$1 == k { s += $2 } END { print s + 0 }'; }
# human BYTES: as gpuckpt prints sizes (1.5 GiB, 512 B).
human() { awk -v b="$1" 'BEGIN { if (b < 1024) { printf "%d B", b; exit } split("KiB MiB GiB TiB", u, " "); i = 0; while (b >= 1024 && i < 4) { b /= 1024; i++ } printf "%.1f %s", b, u[i] }'; }

# 1. Checkpointed when requeued, restored on the next run, completed.
j=$(submit --as gkuser1 --gres=gpu:1 --gpu-checkpoint=on "$s")
requeue_when "$j" '^heat-drv: step 30$'
wait_over "$j" 240
check "the job was requeued, restored and completed" \
	bash -c '[ "$1" = COMPLETED ] && grep -q "^heat-drv: resumed from step" "$2"' _ "$(job_state "$j")" "$(job_out "$j")"
bytes=$(sed -n 's/^gpuckpt: checkpoint: .*\/ckpt.000001: wrote \([0-9]*\) bytes.*/\1/p' "$(job_out "$j")" | head -n 1)
want="gpuckpt: 1 checkpoint, 1 restore, last ckpt.1 ($(human "${bytes:-0}"))"
wait_until 20 "[ \"\$(admin_comment $j)\" = \"$want\" ]"
got=$(admin_comment "$j")
check "scontrol show job: AdminComment='$got' (expected '$want')" [ "$got" = "$want" ]
rec=$SH/records/$j
check "its record is in the shared root, root's, 0600" [ "$(stat -c '%U %a' "$rec" 2>/dev/null)" = "root 600" ]
check "the records folder is root's, 0700" [ "$(stat -c '%U %a' "$SH/records")" = "root 700" ]
check "every line of the record is an event" bash -c '! grep -v "^gpuckpt-event 1 kind=[a-z-]* result=[a-z]* time=[0-9.]* node=gk[12] " "$1"' _ "$rec"
check "the record has the checkpoint and the restore, from the nodes that ran them" \
	bash -c 'grep -q "kind=checkpoint result=ok .*step=0 task=0 .*ckpt=1 bytes=$2" "$1" && grep -q "kind=restore result=ok .*step=0 task=0 .*ckpt=1 " "$1"' _ "$rec" "$bytes"
check "and the staging: out, then in on the node it restarted on" \
	bash -c 'grep -q "kind=stage-out result=ok .*ckpt=1 " "$1" && grep -q "kind=stage-in result=ok .*ckpt=1 " "$1"' _ "$rec"
check "the job ran to the uninterrupted result" [ "$(final_checksum "$j")" = "$ref" ]

# 2. The nodes' Prometheus files.
check "the nodes it ran on have their metrics file, root's, 0644" \
	bash -c 'n=0; for f in "$1"/nodes/*/metrics/gpuckpt.prom; do [ -e "$f" ] || continue; n=$((n + 1)); [ "$(stat -c "%U %a" "$f")" = "root 644" ] || exit 1; done; [ $n -ge 1 ]' _ "$E2E_DIR"
check "well-formed: every family has HELP and TYPE, every sample is NAME{labels} NUMBER" \
	bash -c 'for f in "$1"/nodes/*/metrics/gpuckpt.prom; do
		awk '\''/^# HELP / { h[$3] = 1; next } /^# TYPE / { if (!h[$3] || ($4 != "counter" && $4 != "gauge")) exit 1; t[$3] = 1; next }
			/^[a-z_]+(\{[a-z]+="[a-z]+"(,[a-z]+="[a-z]+")*\})? [0-9]+(\.[0-9]+)?$/ { n = $1; sub(/\{.*/, "", n); if (!t[n]) exit 1; next } { exit 1 }'\'' "$f" || exit 1; done' _ "$E2E_DIR"
check "no temporary file left beside them" [ -z "$(find "$E2E_DIR"/nodes/*/metrics -name '*.tmp')" ]
check "checkpoints ok: 1 over both nodes" [ "$(metric 'gpuckpt_checkpoints_total{result="ok"}')" = 1 ]
check "its bytes counted ($bytes)" [ "$(metric gpuckpt_checkpoint_bytes_total)" = "$bytes" ]
check "restores ok: 1" [ "$(metric 'gpuckpt_restores_total{result="ok"}')" = 1 ]
check "staged out and in: 1 each, with bytes" bash -c '[ "$1" = 1 ] && [ "$2" = 1 ] && [ "$3" -gt 0 ] && [ "$4" -gt 0 ]' _ \
	"$(metric 'gpuckpt_stage_checkpoints_total{direction="out",result="ok"}')" \
	"$(metric 'gpuckpt_stage_checkpoints_total{direction="in",result="ok"}')" \
	"$(metric 'gpuckpt_stage_bytes_total{direction="out"}')" "$(metric 'gpuckpt_stage_bytes_total{direction="in"}')"
check "two runs' epilogs counted (gpuckpt_jobs_total)" [ "$(metric gpuckpt_jobs_total)" = 2 ]

# 3. What a user writes into the event file is not taken as root's.
rejected0=$(metric gpuckpt_event_lines_rejected_total)
f=$(submit --as gkuser1 --gpu-checkpoint=on --wrap 'printf "%s\n" "rm -rf /" \
	"gpuckpt-event 1 kind=stage-out result=ok time=1 bytes=999999999" \
	"gpuckpt-event 1 kind=checkpoint result=ok time=1 ckpt=99 bytes=5 node=../x" >>"$GPUCKPT_DIR/gpuckpt.events"; echo planted')
wait_over "$f" 60
wait_until 20 "[ \"\$(metric gpuckpt_event_lines_rejected_total)\" -ge $((rejected0 + 3)) ]"
check "forged lines refused: 3 more rejected lines in the metrics" \
	[ "$(metric gpuckpt_event_lines_rejected_total)" = $((rejected0 + 3)) ]
check "and none in the job's record" bash -c '! grep -q "999999999\|ckpt=99" "$1" 2>/dev/null' _ "$SH/records/$f"

# 4. A restore refused (corrupted checkpoint, --gpu-checkpoint-on-bad=fresh): ", 1 failed".
b=$(submit --as gkuser1 --gres=gpu:1 --gpu-checkpoint=on --gpu-checkpoint-on-bad=fresh "$s")
wait_out "$b" '^heat-drv: step 30$' 90 && scontrol requeuehold "$b" &&
	wait_until 60 '[ -n "$(ls -d "$SH/$b"/step.0/task.0/ckpt.* 2>/dev/null)" ] && [ "$(job_state "$b")" = PENDING ]'
c=$(ls -d "$SH/$b"/step.0/task.0/ckpt.* | sort | tail -n 1)
df=$(find "$c" -type f ! -name manifest.json -printf '%s %p\n' | sort -n | tail -n 1 | cut -d' ' -f2-)
printf 'XXXXXXXX' | dd of="$df" bs=1 seek=$(($(stat -c %s "$df") / 2)) conv=notrunc status=none
scontrol release "$b"
wait_over "$b" 240
wait_until 20 "admin_comment $b | grep -q failed"
got=$(admin_comment "$b")
check "a refused restore: AdminComment='$got'" grep -Eq "^gpuckpt: 1 checkpoint, 0 restores, last ckpt.1 \([0-9.]+ [KMG]?i?B\), 1 failed$" <<<"$got"

# 5. gpuckpt report.
out=$("$TOOL" report "$SH"); rc=$?
tap_diag "$out"
check "report: exit 0" [ $rc -eq 0 ]
check "report: job $j: 1 checkpoint, 1 restore, 0 failed" grep -Eq "^$j +1 +1 +0 " <<<"$out"
check "report: job $b: 1 checkpoint, 0 restores, 1 failed" grep -Eq "^$b +1 +0 +1 " <<<"$out"
js=$("$TOOL" report --json "$SH")
check "report --json: the job's counts, bytes and last checkpoint" \
	jq -e --argjson j "$j" --argjson by "${bytes:-0}" '.jobs[] | select(.job == $j) | .checkpoints == 1 and .restores == 1 and .bytes_written == $by and .last_checkpoint.ckpt == 1 and .events.restore.ok == 1' <<<"$js"
check "report --json: GPU time saved by the restore > 0" \
	jq -e --argjson j "$j" '.jobs[] | select(.job == $j) | .gpu_seconds_saved > 0' <<<"$js"
check "report --json: totals over the jobs" \
	jq -e '.total.checkpoints == ([.jobs[].checkpoints] | add) and .total.failures >= 1' <<<"$js"
out=$(asuser gkuser1 "$TOOL" report "$SH" 2>&1); rc=$?
check "report as a user: exit 1, the records are root's" \
	bash -c '[ $1 -eq 1 ] && grep -q "run gpuckpt report as root" <<<"$2"' _ $rc "$out"
tap_done
