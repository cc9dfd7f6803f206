#!/bin/bash
# oci-hook.sh - podman's precreate hook (spank-plugin/oci_hook.c) on OCI
# configurations as podman writes them, with the environment the SPANK plugin
# gives a task (--environ stands for podman's own, which the hook reads from
# /proc/<podman>/environ): the mounts, variables and starter it adds, a
# container left alone when checkpointing is off, transparent mode refused,
# and a configuration it cannot read failing the hook. As root, the hook is
# root on the host: the job it serves is the one in the plugin's record of
# the task podman descends from (task-record.sh), here root's job 7.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"
. "$top_srcdir/tests/containers/task-record.sh"

hook=$top_builddir/spank-plugin/gpuckpt-oci-hook
tap_plan 11
if [ ! -x "$hook" ] || ! command -v jq >/dev/null; then
	for _ in $(seq 11); do tap_skip "gpuckpt-oci-hook is not built, or jq is missing"; done
	exit 0
fi
gk_scratch
B=$GK_SCRATCH/bundle
mkdir -p "$B" "$GK_SCRATCH/bb"
# As gpuckpt-bundle and the plugin make them: as root, the hook mounts only
# these (tests/security/container-attacks.sh).
mkdir -m 0700 "$GK_SCRATCH/bb/7"
touch "$B/libgpuckpt.so.0" "$B/.gpuckpt-bundle"
printf '#!/bin/sh\n' >"$B/gpuckpt-container-start"
chmod +x "$B/gpuckpt-container-start"
if [ "$(id -u)" -eq 0 ]; then
	trap 'task_record_drop $$; rm -rf "$GK_SCRATCH"' EXIT
	task_record $$ 7 0 "$B" "$GK_SCRATCH/bb/7" /nonexistent/x
fi
config='{"ociVersion":"1.0.2","process":{"args":["bash","-c","run"],"env":["PATH=/usr/bin","LD_PRELOAD=/usr/lib/mine.so"]},"root":{"path":"/x"},"mounts":[{"destination":"/proc","type":"proc","source":"proc"}]}'
envfile() { printf '%s\0' "$@" >"$GK_SCRATCH/environ"; }
# jq_ok DESC JQ-ARGS...: one test point, jq -e on the hook's last output.
jq_ok() {
	local d=$1
	shift
	if jq -e "$@" <<<"$out" >/dev/null 2>&1; then tap_ok "$d"; else tap_not_ok "$d"; tap_diag "$out"; fi
}

envfile GPUCKPT_CHECKPOINT=on "GPUCKPT_BIND=$B:$GK_SCRATCH/bb/7:/nonexistent/x" "GPUCKPT_RUNTIME=$B/libgpuckpt.so.0" \
	"GPUCKPT_DIR=$GK_SCRATCH/bb/7/step.0/task.0" GPUCKPT_RESTORE=auto SLURM_JOB_ID=7 SLURM_PROCID=0 HOME=/root
out=$("$hook" --environ "$GK_SCRATCH/environ" <<<"$config")
jq_ok "on: the hook succeeds and writes JSON" .
jq_ok "on: the bundle is mounted read-only at its own path" \
	--arg p "$B" '.mounts[] | select(.destination == $p and .source == $p and (.options | index("ro")))'
jq_ok "on: the job's folder is mounted read-write at its own path" \
	--arg p "$GK_SCRATCH/bb/7" '.mounts[] | select(.destination == $p and (.options | index("rw")))'
jq_ok "on: a path that does not exist is not mounted" \
	'[.mounts[] | select(.destination == "/nonexistent/x")] | length == 0'
jq_ok "on: the runtime goes after the image's own LD_PRELOAD" \
	--arg v "LD_PRELOAD=/usr/lib/mine.so:$B/libgpuckpt.so.0" '.process.env | index($v)'
jq_ok "on: GPUCKPT_DIR, GPUCKPT_RESTORE and SLURM_JOB_ID passed on, HOME not" \
	--arg d "GPUCKPT_DIR=$GK_SCRATCH/bb/7/step.0/task.0" \
	'(.process.env | index($d)) and (.process.env | index("GPUCKPT_RESTORE=auto")) and (.process.env | index("SLURM_JOB_ID=7")) and ((.process.env | index("HOME=/root")) | not)'
jq_ok "on: the starter goes in front of the command" \
	--arg s "$B/gpuckpt-container-start" --arg r "$B/libgpuckpt.so.0" \
	'.process.args == [$s, "--runtime", $r, "--", "bash", "-c", "run"]'

envfile GPUCKPT_CHECKPOINT=on "GPUCKPT_BIND=$B" "GPUCKPT_RUNTIME=$B/libgpuckpt.so.0" GPUCKPT_SHEPHERD=gpuckpt.7.0.0.1
out=$("$hook" --environ "$GK_SCRATCH/environ" <<<"$config")
jq_ok "under a transparent-mode shepherd: the starter refuses, naming the reason" \
	'.process.args[3] == "--refuse" and (.process.args[4] | test("transparent mode does not reach into podman containers"))'

envfile GPUCKPT_CHECKPOINT=off "GPUCKPT_BIND=$B"
out=$("$hook" --environ "$GK_SCRATCH/environ" <<<"$config")
check "off: the configuration passes through unchanged" [ "$out" = "$config" ]
envfile PATH=/usr/bin
out=$("$hook" --environ "$GK_SCRATCH/environ" <<<"$config")
check "no gpuckpt variables: unchanged" [ "$out" = "$config" ]

envfile GPUCKPT_CHECKPOINT=on "GPUCKPT_BIND=$B" "GPUCKPT_RUNTIME=$B/libgpuckpt.so.0"
if "$hook" --environ "$GK_SCRATCH/environ" <<<'{"process": [' >/dev/null 2>"$GK_SCRATCH/err"; then
	tap_not_ok "a configuration it cannot read fails the hook (and podman run)"
else
	check "a configuration it cannot read fails the hook (and podman run)" grep -q "not what OCI describes" "$GK_SCRATCH/err"
fi
tap_done
