#!/bin/bash
# e2e-criu-user.sh - a transparent round trip of a non-root user's program
# under real Slurm, with a real CRIU (issue 24: CRIU runs as the job's user).
# A CPU-only program (it needs none of the driver's cuCheckpointProcess*,
# which the CUDA stand-in lacks) is submitted by gkuser1 with
# --gpu-checkpoint=on, started under gpuckpt-shepherd, checkpointed by CRIU
# when the job is requeued, restored by CRIU on the restart, and counts on to
# the end from where it was. The site's shepherd folder holds a wrapper whose
# probe says yes (the stand-in has no checkpoint API, and the probe asks for
# it) and which otherwise execs the real gpuckpt-shepherd.
#
# Needs root and CRIU 4 or later (GK_CRIU, else /usr/sbin/criu): the Debian
# trixie root has it (`tests/slurm/debian-root.sh check-slurm trixie`).
# Without it every test is a SKIP with the reason.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

N=7
why=
if [ "$(id -u)" -ne 0 ]; then
	why="needs root"
elif ! gk_find_criu; then
	why=$CRIU_WHY
fi
if [ -n "$why" ]; then
	tap_plan $N
	for _ in $(seq $N); do tap_skip "$why"; done
	exit 0
fi
e2e_require $N
SHEP_REAL=$top_builddir/runtime/gpuckpt-shepherd
[ -x "$SHEP_REAL" ] || e2e_bail "gpuckpt-shepherd is not built ($SHEP_REAL)"
SHEPDIR=${GK_E2E_CLUSTER_DIR:-/tmp/gpuckpt-e2e}-criu-user
rm -rf "$SHEPDIR" && mkdir -p "$SHEPDIR"
cat >"$SHEPDIR/gpuckpt-shepherd" <<EOS
#!/bin/sh
# Test wrapper: this node "can" do transparent mode (the stand-in has no
# checkpoint API, which a CPU program does not need); the rest is real.
[ "\$1" = probe ] && { echo ok; exit 0; }
exec "$(cd "$(dirname "$SHEP_REAL")" && pwd)/$(basename "$SHEP_REAL")" "\$@"
EOS
chmod 0755 "$SHEPDIR" "$SHEPDIR/gpuckpt-shepherd"
GK_E2E_PLUGIN_ARGS="criu=$CRIU shepherd=$SHEPDIR ${GK_E2E_PLUGIN_ARGS:-}"
e2e_start

# Counts to 150, a line each 0.1 s; ignores SIGTERM (a program without the
# runtime that Slurm signals directly would end before CRIU dumps it).
s=$(job_script criu-user "export GPUCKPT_LOG_LEVEL=info
srun bash -c 'trap \"\" TERM; i=0; while [ \$i -lt 150 ]; do i=\$((i+1)); echo \"count \$i\"; sleep 0.1; done; echo \"count: done\"'
rc=\$?
[ \$rc -eq 143 ] && sleep 600
exit \$rc")
j=$(submit --as gkuser1 --gpu-checkpoint=on "$s")
requeue_when "$j" '^count 40$' || tap_diag "job $j never counted to 40"
wait_out "$j" '^batch: node .* restart 1 ' 180
wait_over "$j" 240
check_out "$j" "gkuser1's program checkpointed by CRIU (as gkuser1) when requeued" '^gpuckpt: transparent: checkpoint ckpt\.[0-9]+ committed'
check_out "$j" "the plugin had the shepherd restore it" "^gpuckpt: job $j step.0 task 0: restart 1: restoring .*transparently"
check_out "$j" "restored by CRIU" '^gpuckpt: transparent: restored ckpt\.[0-9]+'
check_state "$j" COMPLETED "the job completed"
out=$(job_out "$j")
if [ "$(grep -c '^count 1$' "$out")" = 1 ] && grep -q '^count: done$' "$out" &&
	[ "$(grep -c '^count 150$' "$out")" = 1 ]; then
	tap_ok "it counted on from where it was to the end (count 1 once, count 150 once)"
else
	tap_not_ok "it counted on from where it was to the end"
	show_out "$j"
fi
# Its criu/ as staged out to the shared root (the burst buffer's copy goes
# with the job): root's 0700, the dump log (written by CRIU as the user
# into root's file) without an error.
crit=$(ls -d "$E2E_DIR"/bb/"$j"/step.0/task.0/ckpt.*/criu "$E2E_DIR"/shared/"$j"/step.0/task.0/ckpt.*/criu 2>/dev/null | tail -n 1)
if [ -n "$crit" ] && [ "$(stat -c '%U:%G %a' "$crit")" = "root:root 700" ] &&
	grep -q "Dumping finished successfully" "$crit/dump.log" && ! grep -q "Error" "$crit/dump.log"; then
	tap_ok "criu/ is root's 0700, with CRIU's dump log in it ($crit)"
else
	tap_not_ok "criu/ is root's 0700, with CRIU's dump log in it (${crit:-none}: $(stat -c '%U:%G %a' "$crit" 2>/dev/null))"
	tap_diag "$(ls -la "$E2E_DIR"/shared/"$j"/step.0/task.0/ 2>&1 | head; grep -h Error "$crit"/*.log 2>/dev/null | tail -n 5)"
fi
# The shepherd records the checkpoint and the restore in the task's
# gpuckpt.events (runtime/shepherd/events.c): no runtime can, and without
# them a transparent job's AdminComment said "0 checkpoints, 0 restores".
admin_comment() { scontrol show job "$1" | sed -n 's/^ *AdminComment=\(.*[^ ]\) *$/\1/p'; }
want="gpuckpt: 1 checkpoint, 1 restore, last ckpt.1 "
wait_until 20 "[ \"\$(admin_comment $j | cut -c1-${#want})\" = \"$want\" ]"
got=$(admin_comment "$j")
check "scontrol show job: AdminComment='$got' (expected '$want(SIZE)')" [ "${got:0:${#want}}" = "$want" ]
tap_done
