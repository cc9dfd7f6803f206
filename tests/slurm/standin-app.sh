#!/bin/bash
# standin-app.sh - a stand-in for examples/heat/heat-drv running under
# libgpuckpt, for the Slurm tests while (or where) the real ones are not built.
# It follows the runtime's contract as far as Slurm can see it: it reads
# GPUCKPT_DIR, GPUCKPT_RESTORE, GPUCKPT_ON_BAD_CHECKPOINT, GPUCKPT_KEEP,
# GPUCKPT_INTERVAL; checkpoints at its next step when sent SIGTERM (then dies
# by SIGTERM) or SIGUSR1 (then goes on); commits ckpt.NNNNNN/ with a
# manifest.json atomically (written as .tmp.*, renamed); refuses on restore a
# checkpoint whose checksum, owner or job does not match; appends the
# runtime's event lines to GPUCKPT_DIR/gpuckpt.events (runtime/common/
# events.h: started, checkpoint and restore taken); and prints the same
# lines heat-drv and the runtime print. It proves the Slurm side only: no GPU
# state is involved.
#
#   standin-app.sh --steps S [--delay-ms MS] [--size N] [--report-every K]
#
# --size N stands for an N x N grid of floats: its checkpoint holds N*N*4 bytes.
set -u

steps=100 delay_ms=50 size=128 every=10
while [ $# -gt 0 ]; do
	case $1 in
	--steps) steps=$2; shift ;;
	--delay-ms) delay_ms=$2; shift ;;
	--size) size=$2; shift ;;
	--report-every) every=$2; shift ;;
	--module) shift ;;
	*) echo "standin-app: unknown argument '$1'" >&2; exit 2 ;;
	esac
	shift
done

dir=${GPUCKPT_DIR:-}
keep=${GPUCKPT_KEEP:-2}
on_bad=${GPUCKPT_ON_BAD_CHECKPOINT:-fail}
interval=${GPUCKPT_INTERVAL:-0}
me=$(id -u)
job=${SLURM_JOB_ID:-0}
runtime_loaded=0
case ":${LD_PRELOAD:-}:" in *libgpuckpt*) runtime_loaded=1 ;; esac

# The application's state: the step reached and a running 64-bit checksum
# (seeded with the size, so runs of different sizes have different results).
step=0
sum=$((1469598103934665603 ^ size))

advance() {
	sum=$(((sum ^ step) * 1099511628211 + 12345))
	step=$((step + 1))
}

checksum_of() { sha256sum "$1" | cut -c1-16; }

# event KIND RESULT FIELDS...: one line of the runtime's event file, as it writes it.
pstart=$(sed 's/.*) //' "/proc/$$/stat" | cut -d' ' -f20)
event() {
	local kind=$1 result=$2
	shift 2
	[ -n "$dir" ] && [ "$runtime_loaded" = 1 ] || return 0
	printf 'gpuckpt-event 1 kind=%s result=%s time=%s pid=%s pstart=%s restart=%s%s\n' "$kind" \
		"$result" "$(date +%s.%3N)" $$ "$pstart" "${SLURM_RESTART_COUNT:-0}" "${*:+ $*}" \
		>>"$dir/gpuckpt.events"
}

# restore_one CKPT: load CKPT if it passes its checks; 0 on success.
restore_one() {
	local c=$1 m f_uid f_job f_sum f_step f_state
	m=$c/manifest.json
	if [ ! -r "$m" ]; then
		echo "gpuckpt: restore: $c: cannot read manifest.json" >&2
		return 1
	fi
	f_uid=$(sed -n 's/.*"uid": *\([0-9]*\).*/\1/p' "$m")
	f_job=$(sed -n 's/.*"job": *\([0-9]*\).*/\1/p' "$m")
	f_sum=$(sed -n 's/.*"data_checksum": *"\([0-9a-f]*\)".*/\1/p' "$m")
	if [ "$f_uid" != "$me" ]; then
		echo "gpuckpt: restore: $c: signed for uid $f_uid, not for this user (uid $me); refused" >&2
		return 1
	fi
	if [ "$f_job" != "$job" ]; then
		echo "gpuckpt: restore: $c: written by job $f_job, not by this job ($job); refused" >&2
		return 1
	fi
	if [ ! -r "$c/data" ] || [ "$(checksum_of "$c/data")" != "$f_sum" ]; then
		echo "gpuckpt: restore: $c: checksum mismatch in allocation 0; refused" >&2
		return 1
	fi
	read -r f_step f_state <"$c/data"
	step=$f_step
	sum=$f_state
	echo "gpuckpt: restore: $c: loaded $(stat -c %s "$c/data") bytes (GPU ${CUDA_VISIBLE_DEVICES:-none} on $(hostname))" >&2
	event restore ok "ckpt=$((10#${c##*.})) bytes=$(stat -c %s "$c/data") seconds=0.001"
	return 0
}

restore() {
	local want=${GPUCKPT_RESTORE:-} c
	[ -n "$want" ] || return 1
	if [ "$want" != auto ]; then
		restore_one "$want" && return 0
	else
		for c in $(ls -d "$dir"/ckpt.[0-9]* 2>/dev/null | sort -r); do
			restore_one "$c" && return 0
		done
	fi
	event restore refused "errno=22"
	if [ "$on_bad" = fresh ]; then
		echo "gpuckpt: restore: ${dir:-$want}: no checkpoint passed its checks; starting afresh (on_bad_checkpoint=fresh)" >&2
		return 1
	fi
	echo "gpuckpt: restore: ${dir:-$want}: no checkpoint passed its checks; failing (on_bad_checkpoint=fail)" >&2
	exit 1
}

checkpoint() {
	local t0 t1 last n name tmp bytes err
	if [ -z "$dir" ]; then
		echo "gpuckpt: checkpoint: GPUCKPT_DIR is not set; no checkpoint taken" >&2
		return 1
	fi
	t0=$(date +%s.%N)
	tmp=$dir/.tmp.$$
	if ! err=$( { mkdir -p "$tmp" && echo "$step $sum" >"$tmp/data" &&
		head -c $((size * size * 4)) /dev/zero >>"$tmp/data"; } 2>&1); then
		rm -rf "$tmp"
		echo "gpuckpt: checkpoint: $dir: cannot write: ${err##*: }; no checkpoint taken" >&2
		return 1
	fi
	last=$(ls -d "$dir"/ckpt.[0-9]* 2>/dev/null | sort | tail -n 1)
	if [ -n "$last" ]; then n=$((10#${last##*.} + 1)); else n=1; fi
	name=$(printf 'ckpt.%06d' "$n")
	cat >"$tmp/manifest.json" <<-EOF
	{ "format": 1, "job": $job, "step": "${SLURM_STEP_ID:-}", "task": ${SLURM_PROCID:-0},
	  "uid": $me, "restart_count": ${SLURM_RESTART_COUNT:-0}, "label": $step,
	  "gpu": "${CUDA_VISIBLE_DEVICES:-}", "data_checksum": "$(checksum_of "$tmp/data")" }
	EOF
	if ! sync "$tmp/data" "$tmp/manifest.json" 2>/dev/null || ! mv -T "$tmp" "$dir/$name"; then
		rm -rf "$tmp"
		echo "gpuckpt: checkpoint: $dir: cannot commit; no checkpoint taken" >&2
		return 1
	fi
	ls -d "$dir"/ckpt.[0-9]* | sort | head -n "-$keep" | xargs -r rm -rf
	bytes=$(du -sb "$dir/$name" | cut -f1)
	t1=$(date +%s.%N)
	echo "gpuckpt: checkpoint: $dir/$name: wrote $bytes bytes in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') s" >&2
	event checkpoint ok "ckpt=$n bytes=$bytes seconds=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') elapsed=$SECONDS.000 gpus=1"
}

want_ckpt=""
on_term() { want_ckpt=exit; }
on_usr1() { want_ckpt=continue; }
if [ "$runtime_loaded" = 1 ]; then
	trap on_term TERM
	trap on_usr1 USR1
fi

event start ok
if restore; then
	echo "heat-drv: resumed from step $step"
else
	echo "heat-drv: fresh start (steps=$steps, GPU ${CUDA_VISIBLE_DEVICES:-none} on $(hostname))"
fi

last_periodic=$SECONDS
while [ "$step" -lt "$steps" ]; do
	advance
	if [ $((step % every)) -eq 0 ]; then echo "heat-drv: step $step"; fi
	sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
	if [ -z "$want_ckpt" ] && [ "$interval" -gt 0 ] && [ $((SECONDS - last_periodic)) -ge "$interval" ]; then
		want_ckpt=periodic
	fi
	case $want_ckpt in
	exit)
		checkpoint
		trap - TERM
		kill -TERM $$
		;;
	continue | periodic)
		want_ckpt=""
		last_periodic=$SECONDS
		checkpoint
		;;
	esac
done
printf 'heat-drv: done: steps=%d checksum=0x%016x\n' "$step" "$sum"
