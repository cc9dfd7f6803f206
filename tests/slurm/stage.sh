#!/bin/bash
# stage.sh - gpuckpt-stage on its own, without Slurm (a fake squeue stands in
# for the controller): what is copied, what is refused, that nothing
# half-copied ever carries a checkpoint's name, and the sweep of finished
# jobs. The attacks on it are tests/security/stage-attacks.sh.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"

STAGE=${GK_STAGE:-$top_builddir/scheduler-hooks/gpuckpt-stage}
SEAL_TOOL=$top_builddir/tests/security/seal-tool
U=4242 # a uid that owns nothing on this machine

PLAN=69
tap_plan $PLAN
if [ "$(id -u)" -ne 0 ]; then
	for i in $(seq $PLAN); do tap_skip "needs root (gpuckpt-stage runs as root)"; done
	exit 0
fi
gk_scratch
chmod 0755 "$GK_SCRATCH"
BB=$GK_SCRATCH/bb SH=$GK_SCRATCH/shared
mkdir -p "$BB" "$SH" && chmod 0755 "$BB" && chmod 0700 "$SH"

# The controller cannot be asked (in and out go on; a sweep removes nothing).
printf '#!/bin/sh\nexit 1\n' >"$GK_SCRATCH/squeue-down"
chmod 0755 "$GK_SCRATCH/squeue-down"

# A manifest the parser accepts, for checkpoint N (staging and pruning read
# a kept checkpoint's references: one whose manifest cannot be read keeps
# every older one). Its data is not there: staging only warns about that.
manifest() {
	local n=$((10#${1##*.}))
	sed "s/\"sequence\":3,/\"sequence\":$n,/" <<'M'
{"format":"gpuckpt-image","version":3,"created":"2026-11-22T10:00:00Z","created_unix":1795341600,"write_seconds":0.0,"host":"node1","uid":4242,"pid":1,"label":"","step":0,"sequence":3,"chunk_size":4096,"va":{"base":"0x200000000000","size":1099511627776},"id":"0123456789abcdef0123456789abcde3","increment":0,"references":[],"devices":[{"ordinal":0,"name":"GPU","uuid":"GPU-12345678-89ab-cdef-0123-456789abcdef","compute_capability":"0.0","total_memory":1073741824,"va_base":"0x200000000000","va_size":1099511627776,"next_order":1,"mapped_bytes":4096}],"allocations":[{"device":0,"address":"0x200000000000","size":4096,"order":0,"kind":"alloc","parts":[{"file":"device0.data","offset":0,"size":4096}],"xxh3":["0000000000000000"]}],"host_regions":[],"files":[{"name":"device0.data","size":4096}]}
M
}
mkckpt() { # DIR NAME [manifest]
	mkdir -p "$1/$2"
	head -c 5000 /dev/urandom >"$1/$2/data"
	[ "${3:-yes}" = yes ] && manifest "$2" >"$1/$2/manifest.json"
	chown -R $U:$U "$1"
	chmod -R go-rwx "$1"
}
stage() {
	"$STAGE" "$1" --job "$2" --uid $U --gid $U --bb-root "$BB" --shared-root "$SH" --keep 2 \
		--squeue "$GK_SCRATCH/squeue-down"
}

T0=$BB/50/step.0/task.0
mkckpt "$T0" ckpt.000001
mkckpt "$T0" ckpt.000002
mkckpt "$T0" ckpt.000003
mkckpt "$T0" ckpt.000004 no
mkckpt "$T0" .tmp.ckpt.000005.h.777
chown $U:$U "$BB/50" "$BB/50/step.0"
out=$(stage out 50 2>&1)
check "out: succeeds" [ $? -eq 0 ]
tap_diag "$out"
check "out: the newest two committed checkpoints reach the shared root" \
	[ -f "$SH/50/step.0/task.0/ckpt.000002/manifest.json" -a -f "$SH/50/step.0/task.0/ckpt.000003/data" ]
check "out: older ones are not copied" [ ! -e "$SH/50/step.0/task.0/ckpt.000001" ]
check "out: uncommitted and .tmp folders are not copied" \
	[ ! -e "$SH/50/step.0/task.0/ckpt.000004" -a -z "$(ls -A "$SH/50/step.0/task.0" | grep -v '^ckpt.00000[23]$')" ]
check "out: shared folders are root's, mode 0700" \
	[ "$(stat -c '%u %a' "$SH/50") $(stat -c '%u %a' "$SH/50/step.0/task.0")" = "0 700 0 700" ]
check "out: a checkpoint keeps its owner there, its files 0600" \
	[ "$(stat -c '%u %a' "$SH/50/step.0/task.0/ckpt.000003/data")" = "$U 600" ]
check "out: the shared job folder records its owner" \
	grep -q "^uid $U$" "$SH/50/.gpuckpt-job"
check "out: the burst buffer's copy is removed once everything is safe" [ ! -e "$BB/50" ]
check "out: says what it staged" grep -q "staged out step.0/task.0/ckpt.000003: 5[0-9]* bytes in [0-9.]* s to $SH/50/step.0/task.0/ckpt.000003" <<<"$out"
check "out: content it cannot vouch for is staged with a warning (the restore judges it)" \
	grep -q "warning: $T0/ckpt.000003 fails its checks .*; staged anyway" <<<"$out"
check "out: nothing left in the staging area" [ -z "$(ls -A "$SH/.gpuckpt-stage" | grep -v '^lock$')" ]
check "out: the staging area is root's, 0700" [ "$(stat -c '%u %a' "$SH/.gpuckpt-stage")" = "0 700" ]

# A leftover of a killed gpuckpt-stage (its pid gone) is never staged in, and goes.
mkdir -p "$BB/.gpuckpt-stage/in.$(hostname | tr . _).999999.0"
out=$(stage in 50 2>&1)
check "in: succeeds" [ $? -eq 0 ]
check "in: both checkpoints are back on the burst buffer" \
	[ -f "$T0/ckpt.000002/manifest.json" -a -f "$T0/ckpt.000003/manifest.json" ]
check "in: they belong to the job's user, 0600" [ "$(stat -c '%u %a' "$T0/ckpt.000003/data")" = "$U 600" ]
check "in: job, step and task folders are the user's, mode 0700" \
	[ "$(stat -c '%u %a' "$BB/50") $(stat -c '%u %a' "$BB/50/step.0") $(stat -c '%u %a' "$T0")" = "$U 700 $U 700 $U 700" ]
check "in: a killed stage's leftover is removed" [ ! -e "$BB/.gpuckpt-stage/in.$(hostname | tr . _).999999.0" ]
cmp -s "$SH/50/step.0/task.0/ckpt.000003/data" "$T0/ckpt.000003/data"
check "in: the data arrived intact" [ $? -eq 0 ]
out=$(stage in 50 2>&1)
check "in: a checkpoint already there is not copied again" [ -z "$(grep "staged in" <<<"$out")" ]

# Refusals: a link in a checkpoint, a linked task folder.
T1=$BB/51/step.batch/task.0
mkckpt "$T1" ckpt.000001
ln -s /etc/shadow "$T1/ckpt.000001/secret"
mkckpt "$T1" ckpt.000002
chown $U:$U "$BB/51" "$BB/51/step.batch"
out=$(stage out 51 2>&1)
check "out: fails when a checkpoint could not be staged" [ $? -ne 0 ]
check "out: a checkpoint holding a link is refused, naming it" \
	grep -q "error: $T1/ckpt.000001/secret is a symbolic link; refused; not staged" <<<"$out"
check "out: ... the other one is staged" [ -f "$SH/51/step.batch/task.0/ckpt.000002/data" ]
check "out: the burst buffer keeps what could not be staged" [ -d "$T1/ckpt.000001" ]
mkdir -p "$SH/52/step.0/task.0" && mkckpt "$SH/52/step.0/task.0" ckpt.000001
chown root:root "$SH/52" "$SH/52/step.0" "$SH/52/step.0/task.0"
mkdir -p "$BB/52/step.0" && chown -R $U:$U "$BB/52" && ln -s /tmp "$BB/52/step.0/task.0"
out=$(stage in 52 2>&1)
check "in: a link in place of the task folder is refused" \
	grep -q "52/step.0/task.0: not a folder (a symbolic link or a file); refused" <<<"$out"

# A transparent checkpoint: criu/ stays root:root 0700 both ways and must
# carry root's seal; one the user made is not staged.
T2=$BB/55/step.0/task.0
mkckpt "$T2" ckpt.000001
chown $U:$U "$BB/55" "$BB/55/step.0"
mkdir -m 0700 "$T2/ckpt.000001/criu" && echo img >"$T2/ckpt.000001/criu/pages-1.img"
chmod 0600 "$T2/ckpt.000001/criu/pages-1.img"
if munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && [ -x "$SEAL_TOOL" ]; then
	"$SEAL_TOOL" seal "$T2/ckpt.000001" $U $U
	stage out 55 >"$GK_SCRATCH/out" 2>&1
	check "out: a sealed transparent checkpoint reaches the shared root with its criu/" \
		[ -f "$SH/55/step.0/task.0/ckpt.000001/criu/pages-1.img" ]
	stage in 55 >/dev/null 2>&1
	check "in: criu/ stays root:root 0700, its images root's" \
		[ "$(stat -c '%u %g %a' "$T2/ckpt.000001/criu") $(stat -c %u "$T2/ckpt.000001/criu/pages-1.img")" = "0 0 700 0" ]
	check "in: the rest of that checkpoint is the user's" \
		[ "$(stat -c %u "$T2/ckpt.000001/manifest.json") $(stat -c %u "$T2/ckpt.000001")" = "$U $U" ]
else
	for i in 1 2 3; do tap_skip "needs munged and seal-tool: a seal carries root's Munge credential"; done
fi
T3=$BB/56/step.0/task.0
mkckpt "$T3" ckpt.000001
chown $U:$U "$BB/56" "$BB/56/step.0"
mkdir -p "$T3/ckpt.000001/criu" && echo forged >"$T3/ckpt.000001/criu/core-1.img"
chown -R $U:$U "$T3/ckpt.000001/criu"
out=$(stage out 56 2>&1)
check "out: a criu/ that root did not write is not staged" \
	[ ! -e "$SH/56/step.0/task.0/ckpt.000001" -a -n "$(grep 'criu: not a folder root:root 0700 (not written by the shepherd); refused' <<<"$out")" ]

# Increments (format 3): ckpt.000004 is an increment of ckpt.000001, which
# is older than the newest --keep 2: it is staged, and kept, with it.
T4=$BB/57/step.0/task.0
mkckpt "$T4" ckpt.000001
mkckpt "$T4" ckpt.000002
mkckpt "$T4" ckpt.000003
mkckpt "$T4" ckpt.000004
# Manifests the parser accepts (staging reads the references with
# gk_chain_needs, which parses a manifest whole; one it cannot read keeps
# every older checkpoint): ckpt.000003 holds its data, ckpt.000004 is an
# increment whose one allocation lies in ckpt.000001.
cat >"$T4/ckpt.000003/manifest.json" <<'M'
{"format":"gpuckpt-image","version":3,"created":"2026-11-22T10:00:00Z","created_unix":1795341600,"write_seconds":0.0,"host":"node1","uid":4242,"pid":1,"label":"","step":0,"sequence":3,"chunk_size":4096,"va":{"base":"0x200000000000","size":1099511627776},"id":"0123456789abcdef0123456789abcde3","increment":0,"references":[],"devices":[{"ordinal":0,"name":"GPU","uuid":"GPU-12345678-89ab-cdef-0123-456789abcdef","compute_capability":"0.0","total_memory":1073741824,"va_base":"0x200000000000","va_size":1099511627776,"next_order":1,"mapped_bytes":4096}],"allocations":[{"device":0,"address":"0x200000000000","size":4096,"order":0,"kind":"alloc","parts":[{"file":"device0.data","offset":0,"size":4096}],"xxh3":["0000000000000000"]}],"host_regions":[],"files":[{"name":"device0.data","size":4096}]}
M
cat >"$T4/ckpt.000004/manifest.json" <<'M'
{"format":"gpuckpt-image","version":3,"created":"2026-11-22T10:00:00Z","created_unix":1795341600,"write_seconds":0.0,"host":"node1","uid":4242,"pid":1,"label":"","step":0,"sequence":4,"chunk_size":4096,"va":{"base":"0x200000000000","size":1099511627776},"id":"0123456789abcdef0123456789abcde4","increment":1,"references":[{"sequence":1,"id":"0123456789abcdef0123456789abcde1","files":[{"name":"device0.data","size":4096}]}],"devices":[{"ordinal":0,"name":"GPU","uuid":"GPU-12345678-89ab-cdef-0123-456789abcdef","compute_capability":"0.0","total_memory":1073741824,"va_base":"0x200000000000","va_size":1099511627776,"next_order":1,"mapped_bytes":4096}],"allocations":[{"device":0,"address":"0x200000000000","size":4096,"order":0,"kind":"alloc","parts":[{"sequence":1,"file":"device0.data","offset":0,"size":4096}],"xxh3":["0000000000000000"]}],"host_regions":[],"files":[]}
M
chown -R $U:$U "$BB/57"
# An older one already on the shared root, that nothing needs.
S4=$SH/57/step.0/task.0
mkckpt "$S4" ckpt.000000
chown -R 0:0 "$SH/57"
stage out 57 >/dev/null 2>&1
check "out: an increment's base is staged with it, though older than the newest 2" \
	[ -d "$S4/ckpt.000004" -a -d "$S4/ckpt.000003" -a -d "$S4/ckpt.000001" ]
check "out: ... and only what it refers to" [ ! -e "$S4/ckpt.000002" ]
check "out: pruning the shared root keeps the base, removes what nothing needs" \
	[ -d "$S4/ckpt.000001" -a ! -e "$S4/ckpt.000000" ]
rm -rf "$BB/57"
stage in 57 >/dev/null 2>&1
check "in: the base comes back with the increment" \
	[ -d "$T4/ckpt.000004" -a -d "$T4/ckpt.000001" -a ! -e "$T4/ckpt.000002" ]

# A step of several tasks: members of its checkpoint sets (manifests naming a
# set) are staged all, never pruned by count per task; the set records travel;
# the prolog writes the restore plan, root's, beside the job folders.
S0=$BB/58/step.0
for t in 0 1; do
	for n in 1 2 3; do
		mkckpt "$S0/task.$t" "ckpt.00000$n" no
		manifest "ckpt.00000$n" |
			sed "s/\"label\":\"\",/\"set\":{\"id\":\"0x0000000000000001\",\"members\":2,\"member\":$t,\"agreement\":\"mpi\"},\"label\":\"\",/" \
				>"$S0/task.$t/ckpt.00000$n/manifest.json"
	done
done
echo "gpuckpt-set 1 sequence=3 id=0000000000000001 members=2 step=3 agreement=mpi created=1" >"$S0/set.000003"
chown -R $U:$U "$BB/58" && chmod -R go-rwx "$BB/58"
out=$(stage out 58 2>&1)
tap_diag "$out"
check "out: every committed part of a set member's folder is staged, none pruned by count" \
	[ -d "$SH/58/step.0/task.1/ckpt.000001" -a -d "$SH/58/step.0/task.1/ckpt.000003" ]
check "out: the set record reaches the shared root, root's 0600, and says so" \
	[ "$(stat -c '%u %a' "$SH/58/step.0/set.000003" 2>/dev/null)" = "0 600" -a \
	-n "$(grep '^staged out step.0/set.000003$' <<<"$out")" ]
check "out: the node's copy goes once every part and record is staged" [ ! -e "$BB/58" ]
out=$(stage in 58 2>&1)
tap_diag "$out"
check "in: the restore plan is written, root's alone, with a line for the step" \
	[ "$(head -n 1 "$BB/.plan.58" 2>/dev/null) $(stat -c '%u %a' "$BB/.plan.58" 2>/dev/null) $(grep -c '^step.0 ' "$BB/.plan.58" 2>/dev/null)" = "gpuckpt-plan 1 0 600 1" ]
check "in: the set record is staged back, the user's" [ "$(stat -c %u "$S0/set.000003" 2>/dev/null)" = "$U" ]
stage out 58 >/dev/null 2>&1
check "out: the plan goes with the run it was for" [ ! -e "$BB/.plan.58" ]
stage in 59 >/dev/null 2>&1
check "in: a job with nothing in the shared root gets a plan too (every step fresh)" \
	[ "$(cat "$BB/.plan.59" 2>/dev/null)" = "gpuckpt-plan 1" ]

# Bad arguments.
out=$("$STAGE" out --job abc --uid 1 --gid 1 --bb-root "$BB" --shared-root "$SH" 2>&1)
rc=$?
check "bad --job refused, named" [ $rc -eq 2 -a -n "$(grep -- "--job 'abc'" <<<"$out")" ]
out=$("$STAGE" out --colour blue 2>&1)
check "unknown argument refused, named" grep -q "unknown argument '--colour'" <<<"$out"
out=$(setpriv --reuid=$U --regid=$U --clear-groups "$STAGE" sweep --bb-root "$BB" --shared-root "$SH" 2>&1)
check "refused unless root" grep -q "must run as root" <<<"$out"

# Sweep: finished jobs go; unknown ones once their folders are old; running,
# pending and recent ones stay.
printf '#!/bin/sh\necho "50 RUNNING"\necho "51 COMPLETED"\necho "53 PENDING"\n' >"$GK_SCRATCH/squeue"
chmod 0755 "$GK_SCRATCH/squeue"
mkdir -p "$SH/53" "$SH/54" "$SH/57"
touch -d '2 hours ago' "$SH/54"
"$STAGE" sweep --bb-root "$BB" --shared-root "$SH" --squeue "$GK_SCRATCH/squeue" >"$GK_SCRATCH/out"
check "sweep: completed and old unknown jobs removed, running and pending kept" \
	[ -d "$SH/50" -a -d "$SH/53" -a ! -e "$SH/54" -a ! -e "$BB/51" -a ! -e "$SH/51" ]
check "sweep: an unknown job whose folder is new is kept (it may have started after squeue answered)" \
	[ -d "$SH/57" ]
check "sweep: says what it removed" grep -q "sweep: job 51 is over (COMPLETED): removed $SH/51" "$GK_SCRATCH/out"
# A job that ended NODE_FAIL (not requeueable: its node died) or PREEMPTED
# (PreemptMode=CANCEL) is over as well; one being requeued shows PENDING,
# REQUEUED or COMPLETING, and stays. (The soak saw a job's folders left.)
printf '#!/bin/sh\necho "61 NODE_FAIL"\necho "62 PREEMPTED"\necho "63 REQUEUED"\necho "64 COMPLETING"\n' >"$GK_SCRATCH/squeue-ends"
chmod 0755 "$GK_SCRATCH/squeue-ends"
mkdir -p "$SH/61" "$SH/62" "$SH/63" "$SH/64"
"$STAGE" sweep --bb-root "$BB" --shared-root "$SH" --squeue "$GK_SCRATCH/squeue-ends" >"$GK_SCRATCH/out"
check "sweep: NODE_FAIL and PREEMPTED jobs are over: removed" [ ! -e "$SH/61" -a ! -e "$SH/62" ]
check "sweep: REQUEUED and COMPLETING jobs kept" [ -d "$SH/63" -a -d "$SH/64" ]
rm -rf "${SH:?}/63" "${SH:?}/64"
mkdir -p "$SH/60" && touch -d '2 hours ago' "$SH/60"
"$STAGE" sweep --bb-root "$BB" --shared-root "$SH" --squeue "$GK_SCRATCH/squeue-down" >/dev/null
check "sweep: nothing removed when the controller cannot be asked" [ -d "$SH/60" ]
# The flush root (flush_root=): what the runtime copied there while the job
# ran is the user's data, used on a restart only (squeue says so).
FL=$GK_SCRATCH/flush
mkdir -p "$FL" && chmod 0755 "$FL"
fake_squeue() { # RESTARTS: an squeue that knows job 70 as uid U's
	printf '#!/bin/sh\ncase "$*" in *RestartCnt*) echo %s ;; *"%%U %%V"*) echo "%s 2026-11-24T00:00:00" ;; *) echo "70 RUNNING" ;; esac\n' "$1" "$U" >"$GK_SCRATCH/squeue-70"
	chmod 0755 "$GK_SCRATCH/squeue-70"
}
fstage() {
	"$STAGE" "$1" --job "$2" --uid $U --gid $U --bb-root "$BB" --shared-root "$SH" --flush-root "$FL" \
		--keep 2 --squeue "$GK_SCRATCH/squeue-70"
}
fake_squeue 1
mkckpt "$FL/70/step.0/task.0" ckpt.000003
mkckpt "$FL/70/step.0/task.0" ckpt.000004
chown -R $U:$U "$FL/70" # the plugin makes every level the user's
mkdir -p "$SH/70/step.0/task.0" && mkckpt "$GK_SCRATCH/tmp70" ckpt.000002 &&
	mv "$GK_SCRATCH/tmp70/ckpt.000002" "$SH/70/step.0/task.0/" && chown -R 0:0 "$SH/70" &&
	chown -R $U:$U "$SH/70/step.0/task.0/ckpt.000002"
out=$(fstage in 70)
check "flush root: a restart stages in the newest of either root (ckpt 4 and 3 flushed, newer than the shared 2)" \
	[ -f "$BB/70/step.0/task.0/ckpt.000004/data" -a -f "$BB/70/step.0/task.0/ckpt.000003/data" ]
check "flush root: the line names where it came from" grep -q "staged in step.0/task.0/ckpt.000004: .* from $FL/70/step.0/task.0/ckpt.000004" <<<"$out"
check "flush root: the copies are the user's, 0700" [ "$(stat -c '%u %a' "$BB/70/step.0/task.0/ckpt.000004")" = "$U 700" ]
rm -rf "$BB/70"
mkckpt "$GK_SCRATCH/tmp70" ckpt.000004 && mv "$GK_SCRATCH/tmp70/ckpt.000004" "$SH/70/step.0/task.0/"
out=$(fstage in 70)
check "flush root: one in both roots comes from the shared root" grep -q "staged in step.0/task.0/ckpt.000004: .* from $SH/70/step.0/task.0/ckpt.000004" <<<"$out"
# Stage out copies only what was not flushed.
rm -rf "$BB/70" "$SH/70"
mkckpt "$BB/70/step.0/task.0" ckpt.000005
mkckpt "$BB/70/step.0/task.0" ckpt.000006
chown -R $U:$U "$BB/70"
rm -rf "$FL/70/step.0/task.0"/ckpt.*
mkckpt "$FL/70/step.0/task.0" ckpt.000006
chown -R $U:$U "$FL/70" "$BB/70"
out=$(fstage out 70)
check "stage out: the flushed checkpoint is not copied again" \
	[ ! -e "$SH/70/step.0/task.0/ckpt.000006" -a -f "$SH/70/step.0/task.0/ckpt.000005/data" ]
check "stage out: says so" grep -q "step.0/task.0/ckpt.000006: flushed while the job ran; not copied again" <<<"$out"
check "stage out: both safe, the node's copy removed" [ ! -e "$BB/70" ]
# A set member's part is copied though it was flushed: the restore plan is
# made from the shared root alone (sets.c), so every part must be there.
for d in "$BB" "$FL"; do
	mkckpt "$d/70/step.1/task.0" ckpt.000001 no
	manifest ckpt.000001 |
		sed "s/\"label\":\"\",/\"set\":{\"id\":\"0x0000000000000002\",\"members\":2,\"member\":0,\"agreement\":\"mpi\"},\"label\":\"\",/" \
			>"$d/70/step.1/task.0/ckpt.000001/manifest.json"
done
chown -R $U:$U "$BB/70" "$FL/70" && chmod -R go-rwx "$BB/70" "$FL/70"
out=$(fstage out 70)
tap_diag "$out"
check "stage out: a set member's part is copied to the shared root though flushed (the plan reads only there)" \
	[ -f "$SH/70/step.1/task.0/ckpt.000001/manifest.json" -a -z "$(grep 'step.1/task.0/ckpt.000001: flushed' <<<"$out")" ]
# A first run (restart count 0): the folder is an earlier job's, and goes.
fake_squeue 0
out=$(fstage in 70)
check "flush root: a first run removes an earlier job's folder, stages nothing from it" \
	[ ! -e "$FL/70" -a -z "$(ls "$BB/70/step.0/task.0" 2>/dev/null | grep -v ckpt.000005)" ]
# Another user's folder is never taken.
fake_squeue 1
mkckpt "$FL/71/step.0/task.0" ckpt.000001 && chown -R 4343:4343 "$FL/71"
out=$("$STAGE" in --job 71 --uid $U --gid $U --bb-root "$BB" --shared-root "$SH" --flush-root "$FL" --keep 2 --squeue "$GK_SCRATCH/squeue-70")
check "flush root: another user's folder is not staged in" [ ! -e "$BB/71/step.0/task.0/ckpt.000001" ]
# An untrusted flush root is not used, and staging goes on.
chmod 0777 "$FL"
out=$(fstage in 70)
check "flush root writable by others: refused with a warning naming it" grep -q -- "--flush-root=$FL.*writable by group or others" <<<"$out"
chmod 0755 "$FL"
# Sets flushed while the job ran (issue 29): on a restart, the newest `keep`
# sets whole in the flush root (task 0's record and every task's part, each
# manifest naming the set as that task) that are newer than every set complete
# in the shared root are copied into the shared root before the plan is made.
setpart() { # ROOT JOB SEQ TASK [SETID]: task TASK's part of set SEQ
	local d=$1/$2/step.0/task.$4 n
	n=$(printf %06d "$3")
	mkckpt "$d" "ckpt.$n" no
	manifest "ckpt.$n" |
		sed "s/\"label\":\"\",/\"set\":{\"id\":\"0x${5:-000000000000000$3}\",\"members\":2,\"member\":$4,\"agreement\":\"mpi\"},\"label\":\"\",/" \
			>"$d/ckpt.$n/manifest.json"
	chown -R $U:$U "$d/ckpt.$n"
}
setrec() { # DIR SEQ: the set's record
	mkdir -p "$1"
	echo "gpuckpt-set 1 sequence=$2 id=000000000000000$2 members=2 step=$2 agreement=mpi created=1" >"$1/set.$(printf %06d "$2")"
}
fsets() { # JOB: the job's folders in both roots as the plugin and stage make them
	chown -R $U:$U "$FL/$1" && chmod -R go-rwx "$FL/$1"
	if [ -d "$SH/$1" ]; then
		chown 0:0 "$SH/$1" "$SH/$1/step.0" "$SH/$1"/step.0/task.* "$SH/$1"/step.0/set.* && chmod 0700 "$SH/$1" "$SH/$1/step.0" "$SH/$1"/step.0/task.*
	fi
}
fake_squeue 1
# 72: the shared root has set 2 complete; the flush root sets 3 (whole), 4
# (task 1's part never flushed) and 5 (task 1's part is another set's).
for t in 0 1; do setpart "$SH" 72 2 $t; done
setrec "$SH/72/step.0" 2
for t in 0 1; do setpart "$FL" 72 3 $t; done
setpart "$FL" 72 4 0
for t in 0; do setpart "$FL" 72 5 $t; done
setpart "$FL" 72 5 1 00000000000000ff
for n in 3 4 5; do setrec "$FL/72/step.0" $n; done
fsets 72
out=$(fstage in 72 2>&1)
tap_diag "$out"
check "flushed sets: the newest whole set is copied to the shared root, its parts the user's, its record root's" \
	[ "$(stat -c '%u %a' "$SH/72/step.0/task.0/ckpt.000003" "$SH/72/step.0/task.1/ckpt.000003" "$SH/72/step.0/set.000003" 2>/dev/null | tr '\n' ' ')" = "$U 700 $U 700 0 600 " ]
check "flushed sets: the line says which set came from the flush root" \
	grep -q "plan: step.0: flushed set 3 copied from the flush root $FL/72/step.0 to the shared root (complete there; newest complete in the shared root: set 2)" <<<"$out"
check "flushed sets: an incomplete one is not copied, and the line names the missing part" \
	[ ! -e "$SH/72/step.0/set.000004" -a ! -e "$SH/72/step.0/task.0/ckpt.000004" -a \
	-n "$(grep "flushed set 4 incomplete in $FL/72/step.0: task.1/ckpt.000004 was not flushed; not used" <<<"$out")" ]
check "flushed sets: a set with another set's part is not copied, and the line says so" \
	[ ! -e "$SH/72/step.0/set.000005" -a ! -e "$SH/72/step.0/task.0/ckpt.000005" -a \
	-n "$(grep "flushed set 5 incomplete in .*task.1/ckpt.000005 is not this set's part of task 1 (its manifest names set 00000000000000ff" <<<"$out")" ]
# 73: the shared root's complete set is newer: nothing is copied.
for t in 0 1; do setpart "$SH" 73 5 $t; done
setrec "$SH/73/step.0" 5
for t in 0 1; do setpart "$FL" 73 3 $t; done
setrec "$FL/73/step.0" 3
fsets 73
out=$(fstage in 73 2>&1)
check "flushed sets: none copied when the shared root has a newer complete set" \
	[ ! -e "$SH/73/step.0/task.0/ckpt.000003" -a ! -e "$SH/73/step.0/set.000003" -a \
	-n "$(grep "flushed set 3 not copied: the shared root has set 5 complete" <<<"$out")" ]
# 74: a part of another user's, and a task folder that is a link: refused.
setpart "$FL" 74 3 0
mkdir -p "$GK_SCRATCH/elsewhere" && setpart "$GK_SCRATCH/elsewhere" 74 3 1
setrec "$FL/74/step.0" 3
fsets 74
chown -R $U:$U "$GK_SCRATCH/elsewhere"
ln -s "$GK_SCRATCH/elsewhere/74/step.0/task.1" "$FL/74/step.0/task.1"
chown -h $U:$U "$FL/74/step.0/task.1"
out=$(fstage in 74 2>&1)
check "flushed sets: a task folder that is a symbolic link is refused, named" \
	[ ! -e "$SH/74/step.0/task.0/ckpt.000003" -a \
	-n "$(grep "flushed set 3 incomplete in .*: task.1/ckpt.000003 a symbolic link; refused" <<<"$out")" ]
rm "$FL/74/step.0/task.1" && setpart "$FL" 74 3 1 && chown -R 4343:4343 "$FL/74/step.0/task.1/ckpt.000003"
out=$(fstage in 74 2>&1)
check "flushed sets: a part of another user's is refused, named" \
	[ ! -e "$SH/74/step.0/task.0/ckpt.000003" -a \
	-n "$(grep "flushed set 3 incomplete in .*: task.1/ckpt.000003 belongs to someone else" <<<"$out")" ]
# ... and a part whose manifest is a fifo: refused at once, never waited on.
rm -rf "$FL/74/step.0/task.1/ckpt.000003" && setpart "$FL" 74 3 1
rm "$FL/74/step.0/task.1/ckpt.000003/manifest.json" && mkfifo -m 0600 "$FL/74/step.0/task.1/ckpt.000003/manifest.json"
chown -h $U:$U "$FL/74/step.0/task.1/ckpt.000003/manifest.json"
out=$(timeout 30 "$STAGE" in --job 74 --uid $U --gid $U --bb-root "$BB" --shared-root "$SH" --flush-root "$FL" \
	--keep 2 --squeue "$GK_SCRATCH/squeue-70" 2>&1)
check "flushed sets: a part whose manifest is a fifo is refused without waiting, named (rc $?)" \
	[ ! -e "$SH/74/step.0/task.0/ckpt.000003" -a \
	-n "$(grep "flushed set 3 incomplete in .*: task.1/ckpt.000003 is not committed there (manifest.json: belongs to someone else, or not a plain file; refused)" <<<"$out")" ]
# 75: a first run never reads the flush root (an earlier job's folder).
fake_squeue 0
for t in 0 1; do setpart "$FL" 75 3 $t; done
setrec "$FL/75/step.0" 3
fsets 75
out=$(fstage in 75 2>&1)
check "flushed sets: a first run copies none (the folder is an earlier job's, removed)" \
	[ ! -e "$SH/75/step.0/set.000003" -a ! -e "$FL/75" ]
fake_squeue 1
# The sweep removes the flush folders of jobs that are over.
mkdir -p "$FL/51/step.0"
"$STAGE" sweep --bb-root "$BB" --shared-root "$SH" --flush-root "$FL" --squeue "$GK_SCRATCH/squeue" >"$GK_SCRATCH/out"
check "sweep: a finished job's flush folder removed" [ ! -e "$FL/51" ]
tap_done
