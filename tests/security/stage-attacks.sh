#!/bin/bash
# stage-attacks.sh - issue 11's attacks on staging, by a real user (gksec1)
# against gpuckpt-stage run as root the way the prolog and epilog run it:
#
#   1  a link swapped in while root copies into the user's folder: root
#      writes setuid files into a root-only folder
#   4  a link swapped in between root's mkdir and chown: a root-only file
#      handed to the user
#   5  the user's step folder swapped for a link to another user's during
#      stage-out: the other user's checkpoint copied to the attacker
#   the user stops the check root waits for (frozen epilog); a sweep that
#   removes the folder of a job that started after squeue answered; job ids
#   reused; roots others can write; squeue taken from the environment;
#   two stage-outs of one job at once; a task folder name with a space.
#
# Races are run the way the review ran them (inotify, SIGSTOP); in the new
# code, where test hooks exist, each is also run deterministically: root is
# paused at the point the old code was open, the attacker moves, root goes on.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"
. "$top_srcdir/tests/security/lib.sh"

STAGE=${GK_STAGE:-$top_builddir/scheduler-hooks/gpuckpt-stage}
GK_TOOL=${GK_TOOL:-$top_builddir/runtime/gpuckpt}
sec_setup 18

BB=$GK_SCRATCH/bb SH=$GK_SCRATCH/shared
mkdir -p "$BB" "$SH" && chmod 0755 "$BB" && chmod 0700 "$SH"
mkdir -m 0700 "$GK_SCRATCH/rootonly"
DOWN=$GK_SCRATCH/squeue-down
printf '#!/bin/sh\nexit 1\n' >"$DOWN" && chmod 0755 "$DOWN"

# stage VERB JOB USER SQUEUE [ARGS...]: as the prolog (in) or epilog (out) would.
stage() {
	local verb=$1 job=$2 u=$3 sq=$4
	shift 4
	if [ "$OLD" = 1 ]; then
		GPUCKPT_SQUEUE=$sq "$STAGE" "$verb" --job "$job" --uid "$(id -u "$u")" --gid "$(id -g "$u")" \
			--bb-root "$BB" --shared-root "$SH" --keep 2 --tool "$GK_TOOL"
	else
		"$STAGE" "$verb" --job "$job" --uid "$(id -u "$u")" --gid "$(id -g "$u")" \
			--bb-root "$BB" --shared-root "$SH" --keep 2 --squeue "$sq" "$@"
	fi
}

# ckpt USER DIR NAME TEXT [N]: a committed checkpoint of USER's, N files.
ckpt() {
	local u=$1 dir=$2 name=$3 text=$4 n=${5:-1}
	mkdir -p "$dir/$name"
	echo '{}' >"$dir/$name/manifest.json"
	for i in $(seq "$n"); do echo "$text" >"$dir/$name/data$i"; done
	chown -R "$u:$u" "$dir/$name"
	chmod 0700 "$dir/$name"
}
# userdirs USER PATH...: folders of the user's (the job's folders on the node).
userdirs() {
	local u=$1
	shift
	for d in "$@"; do mkdir -p "$d" && chown "$u:$u" "$d" && chmod 0700 "$d"; done
}
# shared JOB: SH/JOB/step.0/task.0, root's 0700 (what stage-out makes).
shared() { mkdir -p "$SH/$1/step.0/task.0" && chmod 0700 "$SH/$1" "$SH/$1/step.0" "$SH/$1/step.0/task.0"; }

# ---- 1. root writes into a folder the user linked to (setuid files) ----
shared 101
ckpt gksec1 "$SH/101/step.0/task.0" ckpt.000001 payload 200
chmod 4755 "$SH/101/step.0/task.0/ckpt.000001/data"*
userdirs gksec1 "$BB/101" "$BB/101/step.0" "$BB/101/step.0/task.0"
prefix=ckpt.
[ "$OLD" = 1 ] && prefix=.tmp.stage.
racer_start gksec1 swap "$BB/101/step.0/task.0" "$prefix" "$GK_SCRATCH/rootonly"
stage in 101 gksec1 "$DOWN" >"$GK_SCRATCH/out" 2>&1
kill "$RACER_PID" 2>/dev/null
racer_end
check "attack 1: nothing lands in a root-only folder the user links in while root copies" \
	[ -z "$(ls -A "$GK_SCRATCH/rootonly")" ]
ls -la "$GK_SCRATCH/rootonly" | sed 's/^/# /' | head -5
check "attack 1: no staged file is setuid, setgid or sticky" \
	[ -z "$(find "$BB/101" "$GK_SCRATCH/rootonly" -perm /7000 2>/dev/null)" ]
if has_hooks "$STAGE"; then
	shared 102
	ckpt gksec1 "$SH/102/step.0/task.0" ckpt.000001 payload 3
	chmod 4755 "$SH/102/step.0/task.0/ckpt.000001/data"*
	userdirs gksec1 "$BB/102" "$BB/102/step.0" "$BB/102/step.0/task.0"
	stage in 102 gksec1 "$DOWN" --test-hook "stage-copied:$HOOKS" >"$GK_SCRATCH/out" 2>&1 &
	spid=$!
	hook_wait stage-copied
	as gksec1 mv "$BB/102/step.0/task.0" "$BB/102/step.0/task.0.away"
	as gksec1 ln -s "$GK_SCRATCH/rootonly" "$BB/102/step.0/task.0"
	hook_go stage-copied
	wait $spid
	check "attack 1, paused before publishing: the copy goes into the folder root checked, not behind the link" \
		[ -z "$(ls -A "$GK_SCRATCH/rootonly")" -a -f "$BB/102/step.0/task.0.away/ckpt.000001/data1" ]
else
	tap_skip "no test hooks in this build (the code before issue 11)"
fi

# ---- 4. root's chown follows a link the user put in place of a new folder ----
mkdir -m 0700 "$GK_SCRATCH/rootonly2"
echo "root's secret" >"$GK_SCRATCH/rootonly2/shadow" && chmod 0600 "$GK_SCRATCH/rootonly2/shadow"
shared 104
ckpt gksec1 "$SH/104/step.0/task.0" ckpt.000001 data
taken=0
for try in $(seq 10); do
	rm -rf "$BB/104"
	userdirs gksec1 "$BB/104"
	racer_start gksec1 swap "$BB/104" step.0 "$GK_SCRATCH/rootonly2/shadow"
	stage in 104 gksec1 "$DOWN" >"$GK_SCRATCH/out" 2>&1
	kill "$RACER_PID" 2>/dev/null
	racer_end
	[ "$(stat -c %u "$GK_SCRATCH/rootonly2/shadow")" = 0 ] || { taken=$try; break; }
done
check "attack 4: a root-only file is never handed to the user (10 tries)" [ "$taken" = 0 ]
[ "$taken" = 0 ] || tap_diag "the file became uid $(stat -c %u "$GK_SCRATCH/rootonly2/shadow")'s on try $taken"

# ---- 5. another user's checkpoint copied out for the attacker ----
userdirs gksec2 "$BB/120" "$BB/120/step.0" "$BB/120/step.0/task.0"
ckpt gksec2 "$BB/120/step.0/task.0" ckpt.000001 VICTIM-SECRET
userdirs gksec1 "$BB/121" "$BB/121/step.0" "$BB/121/step.0/task.0"
ckpt gksec1 "$BB/121/step.0/task.0" ckpt.000001 attacker
swap_step="mv $BB/121/step.0 $BB/121/step.0.away && ln -s $BB/120/step.0 $BB/121/step.0"
if [ "$OLD" = 1 ]; then
	# The review's way: stop root's check (it runs as the user), swap, go on.
	racer_start gksec1 stop "verify" "$swap_step"
	stage out 121 gksec1 "$DOWN" >"$GK_SCRATCH/out" 2>&1
	kill "$RACER_PID" 2>/dev/null
	racer_end
elif has_hooks "$STAGE"; then
	stage out 121 gksec1 "$DOWN" --test-hook "stage-out-opened:$HOOKS" >"$GK_SCRATCH/out" 2>&1 &
	spid=$!
	hook_wait stage-out-opened
	as gksec1 sh -c "$swap_step"
	hook_go stage-out-opened
	wait $spid
fi
check "attack 5: another user's checkpoint never reaches the attacker's shared folder" \
	[ -z "$(grep -rl VICTIM-SECRET "$SH/121" 2>/dev/null)" ]
rm -rf "$BB/121"
stage in 121 gksec1 "$DOWN" >"$GK_SCRATCH/out" 2>&1
check "attack 5: ... nor the attacker's burst buffer at the next stage-in" \
	[ -z "$(grep -rl VICTIM-SECRET "$BB/121" 2>/dev/null)" ]

# ---- 7. the user stops what root waits for ----
# The epilog's stage-out once ran `gpuckpt verify` as the job's user and
# waited for it: the user stopped that process of theirs (SIGSTOP) and the
# epilog never ended. Here the attacker stops the first process of their own
# that appears while stage-out runs, whatever its name (racer stop ''), and
# leaves it stopped. Where the stage has test hooks, it is paused where the
# old one started the user's check (stage-out-opened: the user's folders
# opened, nothing copied yet) and goes on only once the attacker watches, so
# a process it starts as the user afterwards cannot slip by unseen.
userdirs gksec1 "$BB/130" "$BB/130/step.0" "$BB/130/step.0/task.0"
ckpt gksec1 "$BB/130/step.0/task.0" ckpt.000001 data
stage_out_130="$(declare -f stage); OLD=$OLD STAGE=$STAGE GK_TOOL=$GK_TOOL BB=$BB SH=$SH stage out 130 gksec1 $DOWN"
if has_hooks "$STAGE"; then
	timeout 60 bash -c "$stage_out_130 --test-hook stage-out-opened:$HOOKS" >"$GK_SCRATCH/out" 2>&1 &
	tpid=$!
	hook_wait stage-out-opened
	racer_start gksec1 stop ''
	hook_go stage-out-opened
	wait $tpid
	rc=$?
else
	racer_start gksec1 stop ''
	timeout 60 bash -c "$stage_out_130" >"$GK_SCRATCH/out" 2>&1
	rc=$?
fi
stopped=$(sed -n 's/^stopped //p' "$RACER_OUT")
check "a user who stops their own processes cannot hold the epilog (done within 60 s, status $rc)" [ $rc -ne 124 ]
[ -n "$stopped" ] && tap_diag "the attacker stopped their process: $(ps -o pid=,stat=,args= -p "$stopped")"
[ -n "$stopped" ] && kill -KILL "$stopped" 2>/dev/null
kill "$RACER_PID" 2>/dev/null
racer_end

# ---- a sweep and a job that started after squeue answered ----
mark=$GK_SCRATCH/squeue-asked
cat >"$GK_SCRATCH/squeue-late" <<EOF
#!/bin/sh
# The first answer does not know job 131: it starts just after.
if [ ! -e $mark ]; then
	touch $mark
	mkdir -p $BB/131/step.0/task.0 && chown -R $U1:$G1 $BB/131
	echo "1 RUNNING"
	exit 0
fi
echo "131 RUNNING"
EOF
chmod 0755 "$GK_SCRATCH/squeue-late"
if [ "$OLD" = 1 ]; then
	GPUCKPT_SQUEUE=$GK_SCRATCH/squeue-late "$STAGE" sweep --bb-root "$BB" --shared-root "$SH" >"$GK_SCRATCH/out" 2>&1
else
	"$STAGE" sweep --bb-root "$BB" --shared-root "$SH" --squeue "$GK_SCRATCH/squeue-late" >"$GK_SCRATCH/out" 2>&1
fi
check "sweep: the folder of a job that started after squeue answered is kept" [ -d "$BB/131" ]

# ---- job ids that come back ----
T0=2026-01-01T00:00:00 T1=2026-11-23T10:00:00 T2=2026-11-23T11:00:00
record() { printf 'uid %s\nsubmit %s\nrestarts %s\n' "$2" "$3" "$4" >"$SH/$1/.gpuckpt-job"; }
shared 140
ckpt gksec2 "$SH/140/step.0/task.0" ckpt.000001 gksec2-data
record 140 "$U2" $T0 0
fake_squeue "$GK_SCRATCH/sq140" "" "$U1 $T1" 0
stage in 140 gksec1 "$GK_SCRATCH/sq140" >"$GK_SCRATCH/out" 2>&1
check "id reused: another user's earlier job's checkpoints are not handed to the new job's user" \
	[ -z "$(grep -rl gksec2-data "$BB/140" 2>/dev/null)" ]
shared 141
ckpt gksec1 "$SH/141/step.0/task.0" ckpt.000001 mine
record 141 "$U1" $T1 0
fake_squeue "$GK_SCRATCH/sq141" "" "$U1 $T2" 1
stage in 141 gksec1 "$GK_SCRATCH/sq141" >"$GK_SCRATCH/out" 2>&1
check "a requeued job (restart 1, submitted again) gets its own checkpoints back" \
	[ -f "$BB/141/step.0/task.0/ckpt.000001/data1" ]
# Slurm counts a requeue before the epilog of the requeued run: that epilog
# records restart 1 already, and the next prolog sees 1 as well.
shared 143
ckpt gksec1 "$SH/143/step.0/task.0" ckpt.000001 mine
record 143 "$U1" $T1 1
fake_squeue "$GK_SCRATCH/sq143" "" "$U1 $T2" 1
stage in 143 gksec1 "$GK_SCRATCH/sq143" >"$GK_SCRATCH/out" 2>&1
check "... also when the epilog before it already counted the requeue" \
	[ -f "$BB/143/step.0/task.0/ckpt.000001/data1" ]
shared 142
ckpt gksec1 "$SH/142/step.0/task.0" ckpt.000001 earlier
record 142 "$U1" $T0 0
fake_squeue "$GK_SCRATCH/sq142" "" "$U1 $T1" 0
stage in 142 gksec1 "$GK_SCRATCH/sq142" >"$GK_SCRATCH/out" 2>&1
check "id reused by the same user: an earlier job's checkpoints are not restored into a new one" \
	[ ! -e "$BB/142/step.0/task.0/ckpt.000001" -a ! -e "$SH/142/step.0/task.0/ckpt.000001" ]
grep -q "earlier job" "$GK_SCRATCH/out" && tap_diag "$(grep earlier "$GK_SCRATCH/out")"
userdirs gksec1 "$BB/142" "$BB/142/step.0" "$BB/142/step.0/task.0"
ckpt gksec1 "$BB/142/step.0/task.0" ckpt.000001 new
stage out 142 gksec1 "$GK_SCRATCH/sq142" >"$GK_SCRATCH/out" 2>&1
check "... and its stage-out replaces the earlier job's folder (recorded anew)" \
	[ -z "$(grep -rl earlier "$SH/142" 2>/dev/null)" -a -n "$(grep -s "submit $T1" "$SH/142/.gpuckpt-job")" ]

# ---- roots someone else can write ----
BBW=$GK_SCRATCH/bb-open
mkdir -p "$BBW" && chmod 0777 "$BBW"
shared 150
ckpt gksec1 "$SH/150/step.0/task.0" ckpt.000001 data
if [ "$OLD" = 1 ]; then
	GPUCKPT_SQUEUE=$DOWN "$STAGE" in --job 150 --uid "$U1" --gid "$G1" --bb-root "$BBW" --shared-root "$SH" \
		--keep 2 >"$GK_SCRATCH/out" 2>&1
else
	"$STAGE" in --job 150 --uid "$U1" --gid "$G1" --bb-root "$BBW" --shared-root "$SH" \
		--squeue "$DOWN" >"$GK_SCRATCH/out" 2>&1
fi
check "a burst-buffer root anyone can write is refused, naming the setting" \
	[ ! -e "$BBW/150" -a -n "$(grep -- "--bb-root=$BBW: .* writable by group or others" "$GK_SCRATCH/out")" ]
SHU=$GK_SCRATCH/shared-user
mkdir -p "$SHU" && chown gksec1 "$SHU" && chmod 0700 "$SHU"
mkdir -p "$SHU/151/step.0/task.0"
ckpt gksec1 "$SHU/151/step.0/task.0" ckpt.000001 data
if [ "$OLD" = 1 ]; then
	GPUCKPT_SQUEUE=$DOWN "$STAGE" in --job 151 --uid "$U1" --gid "$G1" --bb-root "$BB" --shared-root "$SHU" \
		--keep 2 >"$GK_SCRATCH/out" 2>&1
else
	"$STAGE" in --job 151 --uid "$U1" --gid "$G1" --bb-root "$BB" --shared-root "$SHU" \
		--squeue "$DOWN" >"$GK_SCRATCH/out" 2>&1
fi
check "a shared root that is a user's is refused, naming the setting" \
	[ ! -e "$BB/151" -a -n "$(grep -- "--shared-root=$SHU: .* is owned by uid $U1" "$GK_SCRATCH/out")" ]

# ---- a command from root's environment ----
cat >"$GK_SCRATCH/evil" <<EOF
#!/bin/sh
touch $GK_SCRATCH/evil-ran
exit 1
EOF
chmod 0755 "$GK_SCRATCH/evil"
GPUCKPT_SQUEUE=$GK_SCRATCH/evil "$STAGE" sweep --bb-root "$BB" --shared-root "$SH" >"$GK_SCRATCH/out" 2>&1
check "no command is taken from the environment (GPUCKPT_SQUEUE is not run)" [ ! -e "$GK_SCRATCH/evil-ran" ]

# ---- two stage-outs of one job at once ----
userdirs gksec1 "$BB/160" "$BB/160/step.0" "$BB/160/step.0/task.0"
mkdir -p "$BB/160/step.0/task.0/ckpt.000001"
echo '{}' >"$BB/160/step.0/task.0/ckpt.000001/manifest.json"
head -c $((96 << 20)) /dev/urandom >"$BB/160/step.0/task.0/ckpt.000001/big"
chown -R gksec1:gksec1 "$BB/160/step.0/task.0/ckpt.000001"
sum=$(md5sum <"$BB/160/step.0/task.0/ckpt.000001/big")
shared 160
if [ "$OLD" = 1 ]; then
	stage out 160 gksec1 "$DOWN" >"$GK_SCRATCH/out1" 2>&1 &
	p1=$!
	"$RACER" wait "$SH/160/step.0/task.0" .stage. >/dev/null
	stage out 160 gksec1 "$DOWN" >"$GK_SCRATCH/out2" 2>&1 &
	p2=$!
else
	stage out 160 gksec1 "$DOWN" --test-hook "stage-copied:$HOOKS" >"$GK_SCRATCH/out1" 2>&1 &
	p1=$!
	hook_wait stage-copied
	stage out 160 gksec1 "$DOWN" >"$GK_SCRATCH/out2" 2>&1 &
	p2=$!
	sleep 0.5
	hook_go stage-copied
fi
wait $p1; rc1=$?
wait $p2; rc2=$?
check "two stage-outs of one job at once: both succeed ($rc1, $rc2) and the checkpoint is whole on the shared root" \
	[ $rc1 -eq 0 -a $rc2 -eq 0 -a "$(md5sum <"$SH/160/step.0/task.0/ckpt.000001/big" 2>/dev/null)" = "$sum" ]

# ---- a folder name with a space ----
userdirs gksec1 "$BB/170" "$BB/170/step.0" "$BB/170/step.0/task.0 x"
ckpt gksec1 "$BB/170/step.0/task.0 x" ckpt.000001 only-copy
stage out 170 gksec1 "$DOWN" >"$GK_SCRATCH/out" 2>&1
check "a task folder named with a space: its checkpoint, the only copy, is kept" \
	[ -f "$BB/170/step.0/task.0 x/ckpt.000001/data1" ]
tap_done
