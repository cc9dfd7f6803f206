#!/bin/bash
# e2e-shepherd.sh - the plugin's way of starting a task under gpuckpt-shepherd,
# on a cluster without CRIU or a GPU: the site's shepherd folder holds a
# wrapper whose probe says yes and which otherwise execs the real
# gpuckpt-shepherd. So every srun task is started the transparent way (fork in
# task_init_privileged, the stdio handed over in task_init, the shepherd
# exec'd in the task's own process, `attach`), runs to completion with its
# output in the job's, and a checkpoint-aware program under it still
# checkpoints and restores in application mode when the job is requeued: its
# runtime tells the shepherd so (HELLO 1 app), and no transparent checkpoint
# is attempted. A restart whose newest checkpoint holds a root-owned criu/
# hands the task to `gpuckpt-shepherd restore` instead of running the program,
# with the task's output; one whose criu/ is the user's is refused. A program
# that ends at once still ends the task with its own status, even with a
# wrapper before the shepherd that reaps every child (issue 29). (The
# transparent dump and restore themselves need CRIU and a GPU:
# e2e-transparent.sh.)
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

e2e_require 16
SHEP_REAL=$top_builddir/runtime/gpuckpt-shepherd
# `make` always builds it: missing is a broken build, not a reason to skip.
[ -x "$SHEP_REAL" ] || e2e_bail "gpuckpt-shepherd is not built ($SHEP_REAL)"
SHEPDIR=${GK_E2E_CLUSTER_DIR:-/tmp/gpuckpt-e2e}-shepherd
rm -rf "$SHEPDIR" && mkdir -p "$SHEPDIR"
cat >"$SHEPDIR/gpuckpt-shepherd" <<EOF
#!/bin/sh
# Test wrapper: this node "can" do transparent mode; a restore only says how
# it was asked for (there is no CRIU image to restore); the rest is real.
[ "\$1" = probe ] && { echo ok; exit 0; }
[ "\$1" = restore ] && { echo "fake-restore: gpus=\${CUDA_VISIBLE_DEVICES-unset} \$*"; exit 0; }
# Half a second before the shepherd: dash waits for its sleep with
# waitpid(-1), which reaps any child of this process that ends meanwhile, the
# program too when it may already run (issue 29: a program that ended there
# was not the shepherd's child any more, and the task ended with 2).
[ "\$1" = attach ] && sleep 0.5
exec "$(cd "$(dirname "$SHEP_REAL")" && pwd)/$(basename "$SHEP_REAL")" "\$@"
EOF
chmod 0755 "$SHEPDIR" "$SHEPDIR/gpuckpt-shepherd"
GK_E2E_PLUGIN_ARGS="shepherd=$SHEPDIR ${GK_E2E_PLUGIN_ARGS:-}"
e2e_start
SIZE=64 STEPS=300 DELAY=50
ref=$(reference $SIZE $STEPS)
tap_diag "reference checksum (uninterrupted, outside Slurm): $ref"

# 1. A plain program: started under the shepherd, its output in the job's.
j=$(submit --as gkuser1 --gpu-checkpoint=on --wrap "srun bash -c 'echo \"plain: shepherd=\$GPUCKPT_SHEPHERD mode=\$GPUCKPT_MODE\"; exit 3'; echo \"srun-rc: \$?\"")
wait_over "$j" 60
check "the task ran under the shepherd (slurmd's log says so)" \
	grep -q "transparent mode, shepherd socket" "$E2E_DIR"/log/slurmd.*.log
check_out "$j" "its output reached the job's output, GPUCKPT_SHEPHERD set (128 random bits in its name)" "^plain: shepherd=gpuckpt\\.$j\\.0\\.0\\.[0-9a-f]{32} mode="
check_out "$j" "its exit status came back through the shepherd" "^srun-rc: 3$"

# 1b. A program that ends at once, while the wrapper before the shepherd runs
# (it waits until its parent is the wrapper's /bin/sh, or already the real
# shepherd): the task ends with the program's status, not the shepherd's 2.
j=$(submit --as gkuser1 --gpu-checkpoint=on --wrap "srun bash -c 'for i in \$(seq 500); do case \$(tr \"\\0\" \" \" </proc/\$PPID/cmdline) in \"/bin/sh \"*|*/runtime/gpuckpt-shepherd*) break;; esac; sleep 0.01; done; exit 4'; echo \"srun-rc: \$?\"")
wait_over "$j" 60
check_out "$j" "a program that ends at once: the task ends with its own status" "^srun-rc: 4$"
check "... and the shepherd took it as its child (no 'not a child process')" \
	out_lacks "$j" "not a child process"

# 2. A checkpoint-aware program under the shepherd, requeued.
s=$(job_script shepherd "srun $APP $(app_args $SIZE $STEPS $DELAY)
rc=\$?
[ \$rc -eq 143 ] && sleep 600
exit \$rc")
j=$(submit --as gkuser2 --gres=gpu:1 --gpu-checkpoint=on "$s")
requeue_when "$j" '^heat-drv: step 30$'
wait_for 120 out_has "$j" '^batch: node .* restart 1'
wait_over "$j" 180
check_out "$j" "requeued: checkpointed in application mode under the shepherd" \
	"^gpuckpt: checkpoint: $E2E_DIR/bb/$j/step.0/task.0/ckpt.[0-9]+: wrote [0-9]+ bytes"
# heat-drv's runtime tells the shepherd that it checkpoints itself.
check_out "$j" "the shepherd left it to the program and said why (no transparent checkpoint)" \
	"^gpuckpt: transparent: a process of the task checkpoints itself; no transparent checkpoint$"
check "no criu/ folder in any of its checkpoints" \
	[ -z "$(find "$E2E_DIR/shared/$j" "$E2E_DIR/bb/$j" -name criu 2>/dev/null)" ]
check_out "$j" "restarted: restored from its checkpoint, again under the shepherd" \
	'^heat-drv: resumed from step [1-9][0-9]*'
got=$(final_checksum "$j")
check "same checksum as an uninterrupted run ($got = $ref)" [ -n "$ref" -a "$got" = "$ref" ]
check_state "$j" COMPLETED "job completed"

# 3. A restart onto a transparent checkpoint: held after the requeue, a
# root-owned criu/ with root's seal is put into its staged-out checkpoint (as
# a shepherd would have written it; staging in checks the seal), then the
# restart goes to the shepherd's restore.
j=$(submit --as gkuser1 --gres=gpu:1 --gpu-checkpoint=on "$s")
wait_out "$j" '^heat-drv: step 30$' 90 && scontrol requeuehold "$j"
ck=$E2E_DIR/shared/$j/step.0/task.0/ckpt.000001
wait_for 60 test -f "$ck/manifest.json"
mkdir -m 0700 "$ck/criu" &&
	"$top_builddir/tests/security/seal-tool" seal "$ck" "$(id -u gkuser1)" "$(id -g gkuser1)"
scontrol release "$j"
wait_for 120 out_has "$j" '^batch: node .* restart 1'
wait_over "$j" 120
check_out "$j" "restart onto a root-owned criu/: the plugin says it restores transparently" \
	"restart 1: restoring $E2E_DIR/bb/$j/step.0/task.0/ckpt.000001 transparently"
check_out "$j" "... and the task's process became gpuckpt-shepherd restore, with the task's output" \
	"^fake-restore: gpus=[^ ]* restore --dir $E2E_DIR/bb/$j/step.0/task.0 .*--uid $(id -u gkuser1) "
# The shepherd sees the task's GPUs, not slurmstepd's environment's (a
# restore under Slurm paired the node's GPUs by position, not the job's).
gpu=$(sed -n 's/^batch: node .* restart 1 GPU \(.*\)$/\1/p' "$(job_out "$j")" | head -n 1)
got=$(sed -n 's/^fake-restore: gpus=\([^ ]*\) .*/\1/p' "$(job_out "$j")" | head -n 1)
check "... with the task's CUDA_VISIBLE_DEVICES in its environment ('$got', the job's GPU '$gpu')" \
	[ -n "$gpu" -a "$got" = "$gpu" ]
check "... instead of the program (one fresh start, no resume)" \
	[ "$(out_count "$j" '^heat-drv: (fresh start|resumed)')" = 1 ]
check_state "$j" COMPLETED "job completed"
rm -rf "$SHEPDIR"
tap_done
