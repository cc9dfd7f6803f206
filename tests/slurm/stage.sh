#!/bin/bash
# stage.sh - the staging script (scheduler-hooks/gpuckpt-stage) on its own,
# without Slurm: what is copied, what is refused, that nothing half-copied ever
# carries a checkpoint's name, and the sweep of finished jobs.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"

STAGE=$top_srcdir/scheduler-hooks/gpuckpt-stage
U=4242 # a uid that owns nothing on this machine

tap_plan 37
if [ "$(id -u)" -ne 0 ]; then
	for i in $(seq 37); do tap_skip "needs root (the script gives folders to the job's user)"; done
	exit 0
fi
gk_scratch
# The tool runs as the job's user, who must reach it and the checkpoints.
chmod 0755 "$GK_SCRATCH"
# Never ask a real controller from here.
export GPUCKPT_SQUEUE=false
BB=$GK_SCRATCH/bb SH=$GK_SCRATCH/shared
mkdir -p "$BB" "$SH"

# A fake gpuckpt tool: "verify DIR" fails when DIR holds a file named BAD;
# "plan" gives the restore plan of a job without steps of several tasks.
cat >"$GK_SCRATCH/tool" <<'T'
#!/bin/sh
[ "$1" = plan ] && { echo "gpuckpt-plan 1"; exit 0; }
[ "$1" = verify ] && [ ! -e "$2/BAD" ]
T
chmod 0755 "$GK_SCRATCH/tool"

mkckpt() { # DIR NAME [manifest]
	mkdir -p "$1/$2"
	head -c 5000 /dev/urandom >"$1/$2/data"
	[ "${3:-yes}" = yes ] && echo '{}' >"$1/$2/manifest.json"
	chown -R $U:$U "$1"
}
stage() { "$STAGE" "$1" --job "$2" --uid $U --gid $U --bb-root "$BB" --shared-root "$SH" --keep 2 --tool "$GK_SCRATCH/tool"; }

T0=$BB/50/step.0/task.0
mkckpt "$T0" ckpt.000001
mkckpt "$T0" ckpt.000002
mkckpt "$T0" ckpt.000003
mkckpt "$T0" ckpt.000004 no
mkckpt "$T0" .tmp.777
chmod -R go-rwx "$BB/50"
out=$(stage out 50 2>&1)
check "out: succeeds" [ $? -eq 0 ]
check "out: the newest two committed checkpoints reach the shared root" \
	[ -f "$SH/50/step.0/task.0/ckpt.000002/manifest.json" -a -f "$SH/50/step.0/task.0/ckpt.000003/data" ]
check "out: older ones are not copied" [ ! -e "$SH/50/step.0/task.0/ckpt.000001" ]
check "out: uncommitted and .tmp folders are not copied" \
	[ ! -e "$SH/50/step.0/task.0/ckpt.000004" -a ! -e "$SH/50/step.0/task.0/.tmp.777" ]

check "out: shared folders are root's, mode 0700" \
	[ "$(stat -c '%u %a' "$SH/50")" = "0 700" ]
check "out: the burst buffer's copy is removed once everything is safe" [ ! -e "$BB/50" ]
check "out: says what it staged" grep -q "staged out step.0/task.0/ckpt.000003: [0-9]* bytes" <<<"$out"
check "out: nothing left under a temporary name" [ -z "$(find "$SH" -name '.stage.*')" ]

# A half-finished copy in the shared root (an epilog killed mid-way) is never staged in.
mkdir -p "$SH/50/step.0/task.0/.stage.ckpt.000009.123"
echo '{}' >"$SH/50/step.0/task.0/.stage.ckpt.000009.123/manifest.json"
out=$(stage in 50 2>&1)
check "in: succeeds" [ $? -eq 0 ]
check "in: both checkpoints are back on the burst buffer" \
	[ -f "$T0/ckpt.000002/manifest.json" -a -f "$T0/ckpt.000003/manifest.json" ]
check "in: they belong to the job's user" [ "$(stat -c %u "$T0/ckpt.000003/data")" = $U ]
check "in: job, step and task folders are the user's, mode 0700" \
	[ "$(stat -c '%u %a' "$BB/50") $(stat -c '%u %a' "$BB/50/step.0") $(stat -c '%u %a' "$T0")" = "$U 700 $U 700 $U 700" ]
check "in: a half-copied checkpoint in the shared root is not staged in" \
	[ -z "$(ls -A "$T0" | grep -v -x -e ckpt.000002 -e ckpt.000003)" ]
cmp -s "$SH/50/step.0/task.0/ckpt.000003/data" "$T0/ckpt.000003/data"
check "in: the data arrived intact" [ $? -eq 0 ]

# Refusals: links in a checkpoint, a checkpoint that fails verify, a linked task folder.
T1=$BB/51/step.batch/task.0
mkckpt "$T1" ckpt.000001
ln -s /etc/shadow "$T1/ckpt.000001/secret"
mkckpt "$T1" ckpt.000002
touch "$T1/ckpt.000002/BAD"
out=$(stage out 51 2>&1)
check "out: fails when a checkpoint could not be staged" [ $? -ne 0 ]
check "out: a checkpoint holding a link is refused" grep -q "ckpt.000001: holds links or special files; not staged" <<<"$out"
check "out: a checkpoint failing verify is staged with a warning (the restore judges it)" \
	grep -q "warning: .*ckpt.000002 fails gpuckpt verify; staged anyway" <<<"$out"
check "out: ... and is on the shared root" [ -f "$SH/51/step.batch/task.0/ckpt.000002/BAD" ]
check "out: the burst buffer keeps what could not be staged" [ -d "$T1/ckpt.000001" ]
mkdir -p "$SH/52/step.0/task.0" && mkckpt "$SH/52/step.0/task.0" ckpt.000001
mkdir -p "$BB/52/step.0" && chown -R $U:$U "$BB/52" && ln -s /tmp "$BB/52/step.0/task.0"
out=$(stage in 52 2>&1)
check "in: a link in place of the task folder is refused" grep -q "task.0: not a folder; refused" <<<"$out"

# A transparent checkpoint: criu/ stays root:root 0700 both ways; one the
# user planted is not staged.
T2=$BB/55/step.0/task.0
mkckpt "$T2" ckpt.000001
mkdir -m 0700 "$T2/ckpt.000001/criu" && echo img >"$T2/ckpt.000001/criu/pages-1.img"
chmod 0600 "$T2/ckpt.000001/criu/pages-1.img"
chmod -R go-rwx "$BB/55"
stage out 55 >/dev/null 2>&1
check "out: a transparent checkpoint reaches the shared root with its criu/" \
	[ -f "$SH/55/step.0/task.0/ckpt.000001/criu/pages-1.img" ]
stage in 55 >/dev/null 2>&1
check "in: criu/ stays root:root 0700, its images root's" \
	[ "$(stat -c '%u %g %a' "$T2/ckpt.000001/criu") $(stat -c %u "$T2/ckpt.000001/criu/pages-1.img")" = "0 0 700 0" ]
check "in: the rest of that checkpoint is the user's" \
	[ "$(stat -c %u "$T2/ckpt.000001/manifest.json") $(stat -c %u "$T2/ckpt.000001")" = "$U $U" ]
T3=$BB/56/step.0/task.0
mkckpt "$T3" ckpt.000001
mkdir -p "$T3/ckpt.000001/criu" && echo forged >"$T3/ckpt.000001/criu/core-1.img"
chown -R $U:$U "$BB/56"
out=$(stage out 56 2>&1)
check "out: a criu/ that root did not write is not staged" \
	[ ! -e "$SH/56/step.0/task.0/ckpt.000001" -a -n "$(grep 'criu/ not written by root' <<<"$out")" ]

# Increments (format 3): ckpt.000004 is an increment of ckpt.000001, which
# is older than the newest --keep 2: it is staged, and kept, with it.
T4=$BB/57/step.0/task.0
mkckpt "$T4" ckpt.000001
mkckpt "$T4" ckpt.000002
mkckpt "$T4" ckpt.000003
mkckpt "$T4" ckpt.000004
cat >"$T4/ckpt.000004/manifest.json" <<'M'
{
  "format": "gpuckpt-image",
  "version": 3,
  "sequence": 4,
  "increment": 1,
  "references": [
    {
      "sequence": 1,
      "id": "0123456789abcdef0123456789abcdef",
      "files": [
        {
          "name": "device0.data",
          "size": 4096
        }
      ]
    }
  ],
  "allocations": [
    {
      "parts": [
        {
          "sequence": 2,
          "file": "device0.data"
        }
      ]
    }
  ]
}
M
chown -R $U:$U "$BB/57"
# An older one already on the shared root, that nothing needs.
S4=$SH/57/step.0/task.0
mkckpt "$S4" ckpt.000000
chown -R 0:0 "$SH/57"
stage out 57 >/dev/null 2>&1
check "out: an increment's base is staged with it, though older than the newest 2" \
	[ -d "$S4/ckpt.000004" -a -d "$S4/ckpt.000003" -a -d "$S4/ckpt.000001" ]
check "out: ... and only what it refers to (a part's sequence is not a reference)" [ ! -e "$S4/ckpt.000002" ]
check "out: pruning the shared root keeps the base, removes what nothing needs" \
	[ -d "$S4/ckpt.000001" -a ! -e "$S4/ckpt.000000" ]
rm -rf "$BB/57"
stage in 57 >/dev/null 2>&1
check "in: the base comes back with the increment" \
	[ -d "$T4/ckpt.000004" -a -d "$T4/ckpt.000001" -a ! -e "$T4/ckpt.000002" ]

# A step of several tasks: members of its checkpoint sets (manifests naming a
# set) are staged all, never pruned by count; the set records travel; the
# prolog writes the restore plan, root's, beside the job folders.
S0=$BB/58/step.0
for t in 0 1; do
	for n in 1 2 3; do
		mkckpt "$S0/task.$t" "ckpt.00000$n"
		echo '{"set": {"id": "0x1"}}' >"$S0/task.$t/ckpt.00000$n/manifest.json"
	done
done
echo "gpuckpt-set 1 sequence=3 id=0000000000000001 members=2 step=3 agreement=mpi created=1" >"$S0/set.000003"
chown -R $U:$U "$BB/58"
chmod -R go-rwx "$BB/58"
stage out 58 >/dev/null 2>&1
check "out: every committed part of a set member's folder is staged, none pruned by count" \
	[ -d "$SH/58/step.0/task.1/ckpt.000001" -a -d "$SH/58/step.0/task.1/ckpt.000003" ]
check "out: the set record reaches the shared root, root's" [ "$(stat -c %u "$SH/58/step.0/set.000003" 2>/dev/null)" = 0 ]
stage in 58 >/dev/null 2>&1
check "in: the restore plan is written, root's alone" \
	[ "$(head -n 1 "$BB/.plan.58" 2>/dev/null) $(stat -c '%u %a' "$BB/.plan.58" 2>/dev/null)" = "gpuckpt-plan 1 0 600" ]
check "in: the set record is staged back, the user's" [ "$(stat -c %u "$S0/set.000003" 2>/dev/null)" = "$U" ]
stage out 58 >/dev/null 2>&1
check "out: the plan goes with the run it was for" [ ! -e "$BB/.plan.58" ]

# Bad arguments.
out=$("$STAGE" out --job abc --uid 1 --gid 1 --bb-root "$BB" --shared-root "$SH" 2>&1)
rc=$?
check "bad --job refused, named" [ $rc -eq 2 -a -n "$(grep -- "--job 'abc'" <<<"$out")" ]
out=$("$STAGE" out --colour blue 2>&1)
check "unknown argument refused, named" grep -q "unknown argument '--colour'" <<<"$out"

# Sweep: finished or forgotten jobs go, running and pending ones stay.
printf '#!/bin/sh\necho "50 RUNNING"\necho "51 COMPLETED"\necho "53 PENDING"\n' >"$GK_SCRATCH/squeue"
chmod 0755 "$GK_SCRATCH/squeue"
mkdir -p "$SH/53" "$SH/54"
GPUCKPT_SQUEUE=$GK_SCRATCH/squeue "$STAGE" sweep --bb-root "$BB" --shared-root "$SH" >/dev/null
check "sweep: completed and unknown jobs removed, running and pending kept" \
	[ -d "$SH/50" -a -d "$SH/53" -a ! -e "$SH/54" -a ! -e "$BB/51" -a ! -e "$SH/52" ]
printf '#!/bin/sh\nexit 1\n' >"$GK_SCRATCH/squeue"
mkdir -p "$SH/60"
GPUCKPT_SQUEUE=$GK_SCRATCH/squeue "$STAGE" sweep --bb-root "$BB" --shared-root "$SH" >/dev/null
check "sweep: nothing removed when the controller cannot be asked" [ -d "$SH/60" ]
tap_done
