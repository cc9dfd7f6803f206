#!/bin/bash
# seal-attacks.sh - issue 11's attacks on the transparent seal, by a real
# user (gksec1) against gpuckpt-shepherd and gpuckpt-stage run as root:
#
#   2  a criu/ of the user's own, with a seal the user computed, made to
#      look root's by the round trip through staging: root restores the
#      user's image with CRIU (which restores the credentials it records)
#   3  criu/ exchanged with the user's own between the seal check and CRIU
#   and the forged seal itself, put in a root-owned criu/: refused.
#
# CRIU is a fake here (root's script): it records whether it was ever given
# the user's images. Races as the review ran them; in the new code, where
# test hooks exist, also deterministically.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"
. "$top_srcdir/tests/security/lib.sh"

SHEP=$top_builddir/runtime/gpuckpt-shepherd
STAGE=${GK_STAGE:-$top_builddir/scheduler-hooks/gpuckpt-stage}
GK_TOOL=${GK_TOOL:-$top_builddir/runtime/gpuckpt}
sec_setup 5
if [ "$OLD" != 1 ] && ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
	for i in $(seq 5); do tap_skip "needs munged: a seal carries root's Munge credential"; done
	exit 0
fi
export GPUCKPT_LOG_LEVEL=info

# The fake runs as the job's user (gksec1) where CRIU does (criu.c): what
# it records goes to a folder anyone may write.
mkdir -m 1777 "$GK_SCRATCH/fake"
HIT=$GK_SCRATCH/fake/criu-got-the-users-images RAN=$GK_SCRATCH/fake/criu-ran
FAKE=$GK_SCRATCH/criu
cat >"$FAKE" <<EOS
#!/bin/sh
[ "\$1" = --version ] && { echo "Version: 4.1"; exit 0; }
cmd=\$1; shift
while [ \$# -gt 0 ]; do
	case \$1 in -D) D=\$2; shift ;; -o) LOG=\$2; shift ;; esac
	shift
done
# Its log: \`-o -\` is its stdout (the shepherd's file in criu/).
log() { if [ "\$LOG" = - ]; then cat; else cat >"\$D/\$LOG"; fi; }
case \$cmd in
dump) echo "the genuine image" >"\$D/core-1.img"; echo "dump: fine" | log; exit 0 ;;
restore)
	echo ran >>$RAN
	if grep -q FORGED "\$D/core-1.img" 2>/dev/null || [ "\$(stat -L -c %u "\$D")" != 0 ]; then
		echo hit >>$HIT
	fi
	echo "Error (criu/cr-restore.c:1): the fake restores nothing" | log
	exit 1 ;;
esac
exit 1
EOS
chmod 0755 "$FAKE"

# checkpoint DIR: a genuine transparent checkpoint of gksec1's in DIR, as
# the shepherd writes it (criu/ root's, sealed).
checkpoint() {
	local dir=$1 spid prog
	"$SHEP" run --criu "$FAKE" --dir "$dir" --uid gksec1 --gid gksec1 --job 77 --step 0 --task 0 \
		-- /bin/sleep 60 >"$GK_SCRATCH/run.out" 2>"$GK_SCRATCH/run.err" &
	spid=$!
	for _ in $(seq 100); do
		prog=$(cat /proc/$spid/task/*/children 2>/dev/null | awk '{print $1}')
		[ -n "$prog" ] && break
		sleep 0.05
	done
	sleep 0.2
	kill -TERM $spid
	for _ in $(seq 600); do grep -q "committed\|no checkpoint\|failed" "$GK_SCRATCH/run.err" && break; sleep 0.1; done
	[ -n "$prog" ] && kill -TERM "$prog" 2>/dev/null
	wait $spid
	[ -f "$dir/ckpt.000001/criu/SEAL" ] || tap_diag "the shepherd said: $(cat "$GK_SCRATCH/run.err")"
}
# forged DIR [sig]: the user's own criu/ in DIR/criu (FORGED image, a seal
# the user computed as seals were before root's credential; with "sig", the
# user's own Munge credential over it too), made as gksec1 in a folder of
# theirs.
forged() {
	local dir=$1
	as gksec1 mkdir -p "$dir/criu"
	as gksec1 sh -c "echo 'FORGED: uid 0 please' >'$dir/criu/core-1.img'"
	as gksec1 "$SEALTOOL" forge "$dir" "$U1" "$G1"
	[ "${2:-}" = sig ] || rm -f "$dir/criu/SEAL.sig"
}
restore() { # DIR [ARGS...]
	local dir=$1
	shift
	"$SHEP" restore --criu "$FAKE" --dir "$dir" --uid gksec1 --gid gksec1 --job 77 --step 0 \
		--task 0 "$@" >"$GK_SCRATCH/restore.out" 2>"$GK_SCRATCH/restore.err"
}

mkdir -p "$GK_SCRATCH/u" && chown gksec1:gksec1 "$GK_SCRATCH/u"

# ---- the forged seal, in a root-owned criu/ ----
R=$GK_SCRATCH/u/forge
checkpoint "$R"
as gksec1 mkdir "$R/ckpt.000002"
as gksec1 cp "$R/ckpt.000001/manifest.json" "$R/ckpt.000002/"
forged "$R/ckpt.000002"
# What the old stage-in did to any criu/ it copied: root:root 0700.
chown -R root:root "$R/ckpt.000002/criu" && chmod 0700 "$R/ckpt.000002/criu"
rm -f "$HIT"
restore "$R"
check "a seal the user computed is refused though criu/ is root's (forged-seal test)" [ ! -e "$HIT" ]
grep -q "refused" "$GK_SCRATCH/restore.err" && tap_diag "$(grep -m1 "restore" "$GK_SCRATCH/restore.err")"
rm -rf "$R/ckpt.000002/criu"
forged "$R/ckpt.000002" sig
chown -R root:root "$R/ckpt.000002/criu" && chmod 0700 "$R/ckpt.000002/criu"
rm -f "$HIT"
restore "$R"
check "... and so is one carrying the user's own Munge credential over the seal's payload" [ ! -e "$HIT" ]
grep -q "refused" "$GK_SCRATCH/restore.err" && tap_diag "$(grep -m1 "restore" "$GK_SCRATCH/restore.err")"

# ---- 2. end to end: a criu/ planted during stage-out ----
BB=$GK_SCRATCH/bb SH=$GK_SCRATCH/shared
mkdir -p "$BB" "$SH" && chmod 0755 "$BB" && chmod 0700 "$SH"
mkdir -p "$BB/201/step.0" && chown -R gksec1:gksec1 "$BB/201" && chmod -R 0700 "$BB/201"
T=$BB/201/step.0/task.0
checkpoint "$T"
as gksec1 mkdir -p "$BB/201/forge"
as gksec1 cp "$T/ckpt.000001/manifest.json" "$BB/201/forge/"
forged "$BB/201/forge"
plant="mv $T/ckpt.000001/criu $T/ckpt.000001/criu.real && mv $BB/201/forge/criu $T/ckpt.000001/criu"
DOWN=$GK_SCRATCH/squeue-down
printf '#!/bin/sh\nexit 1\n' >"$DOWN" && chmod 0755 "$DOWN"
stage() {
	if [ "$OLD" = 1 ]; then
		GPUCKPT_SQUEUE=$DOWN "$STAGE" "$1" --job 201 --uid "$U1" --gid "$G1" --bb-root "$BB" \
			--shared-root "$SH" --keep 2 --tool "$GK_TOOL"
	else
		"$STAGE" "$1" --job 201 --uid "$U1" --gid "$G1" --bb-root "$BB" --shared-root "$SH" \
			--squeue "$DOWN" "${@:2}"
	fi
}
if [ "$OLD" = 1 ]; then
	racer_start gksec1 stop "verify" "$plant"
	stage out >"$GK_SCRATCH/out" 2>&1
	kill "$RACER_PID" 2>/dev/null
	racer_end
else
	stage out --test-hook "stage-out-opened:$HOOKS" >"$GK_SCRATCH/out" 2>&1 &
	spid=$!
	hook_wait stage-out-opened
	as gksec1 sh -c "$plant"
	hook_go stage-out-opened
	wait $spid
fi
stage in >>"$GK_SCRATCH/out" 2>&1
rm -f "$HIT"
restore "$T"
check "attack 2: a criu/ the user planted while staging out is never restored by root" [ ! -e "$HIT" ]
[ -e "$HIT" ] && tap_diag "$(cat "$GK_SCRATCH/out")"

# ---- 3. criu/ exchanged with the user's own between check and use ----
R3=$GK_SCRATCH/u/swap
checkpoint "$R3"
as gksec1 mkdir "$R3/forge"
as gksec1 cp "$R3/ckpt.000001/manifest.json" "$R3/forge/"
forged "$R3/forge"
as gksec1 mv "$R3/forge/criu" "$R3/ckpt.000001/criu.evil"
rm -f "$HIT" "$RAN"
racer_start gksec1 exchange "$R3/ckpt.000001" criu criu.evil 20
for i in $(seq 40); do restore "$R3"; done
kill "$RACER_PID" 2>/dev/null
racer_end
# Stopped half-way, it may have left the user's folder under the name criu.
[ "$(stat -c %u "$R3/ckpt.000001/criu")" = 0 ] ||
	as gksec1 "$RACER" exchange "$R3/ckpt.000001" criu criu.evil 0 >/dev/null
check "attack 3: 40 restores while the user exchanges criu/ with their own: CRIU never gets theirs" \
	[ ! -e "$HIT" ]
[ -e "$HIT" ] && tap_diag "CRIU got the user's images $(grep -c hit "$HIT") times of $(grep -c ran "$RAN" 2>/dev/null) runs"
if has_hooks "$SHEP"; then
	rm -f "$HIT" "$RAN"
	restore "$R3" --test-hook "restore-verified:$HOOKS" &
	spid=$!
	hook_wait restore-verified
	as gksec1 "$RACER" exchange "$R3/ckpt.000001" criu criu.evil 0 >/dev/null
	hook_go restore-verified
	wait $spid
	check "attack 3, paused between the check and CRIU and exchanged then: CRIU gets the folder that was checked" \
		[ -e "$RAN" -a ! -e "$HIT" ]
else
	tap_skip "no test hooks in this build (the code before issue 11)"
fi
tap_done
