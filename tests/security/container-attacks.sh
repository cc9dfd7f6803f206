#!/bin/bash
# container-attacks.sh - podman's precreate hook (spank-plugin/oci_hook.c)
# run by rootful podman: it is root on the host, and it reads GPUCKPT_BIND and
# GPUCKPT_RUNTIME from podman's environment, which is whatever the caller
# exported (the plugin's values are only a default the job's user can
# change). What it adds to the configuration, root's runc then mounts into a
# container that may run as root. The attacker gksec1 writes that
# environment (here the file --environ reads, as the hook reads
# /proc/<podman>/environ) and names what is not theirs: a root-only folder
# (standing in for /etc), a root-only file (for /etc/shadow), gksec2's job
# folder, a link of their own to root's folder, and a "bundle" of their own.
# None may be mounted; root's own job's folder and a bundle root made still
# are (the root jobs tests/containers/podman.sh runs).
#
# Which job a container is for, the hook learns from the record the plugin
# wrote as root when it started the task podman descends from (here the
# test's shell: tests/containers/task-record.sh), never from its own uid
# (root's under rootful podman) nor from the environment: gksec1's job 7 may
# have its own folder mounted, not a root job's 0700 folder, not a job's
# folder on the shared root (root's, 0700), not a file anyone may read that
# sits behind a folder only root may enter, and with no record nothing.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"
. "$top_srcdir/tests/security/lib.sh"
. "$top_srcdir/tests/containers/task-record.sh"

HOOK=$top_builddir/spank-plugin/gpuckpt-oci-hook
N=21
sec_setup $N
if [ ! -x "$HOOK" ] || ! command -v jq >/dev/null; then
	for _ in $(seq $N); do tap_skip "gpuckpt-oci-hook is not built, or jq is missing"; done
	exit 0
fi
S=$GK_SCRATCH
trap 'task_record_drop $$; rm -rf "$GK_SCRATCH"' EXIT
# The site: the burst buffer, the shared root and the bundle, root's (a
# trusted path), and its settings file.
mkdir -m 0755 "$S/bb" "$S/shared" "$S/bundle" "$S/etc"
mkdir -m 0700 "$S/bb/9"             # a root job's folder
mkdir -m 0700 "$S/bb/8"             # gksec2's job's folder
mkdir -m 0700 "$S/bb/7"             # gksec1's job's folder
chown "$U2:$G2" "$S/bb/8"
chown "$U1:$G1" "$S/bb/7"
echo "gksec2's checkpoint" >"$S/bb/8/data"
# The shared root's job folders are root's and 0700 (the plugin's records).
mkdir -m 0700 "$S/shared/8" "$S/shared/7"
echo "site settings" >"$S/etc/gpuckpt.conf"
chmod 0644 "$S/etc/gpuckpt.conf"
# A file anyone may read, behind a folder only root may enter.
mkdir -m 0700 "$S/private"
echo "root's notes" >"$S/private/notes"
chmod 0644 "$S/private/notes"
touch "$S/bundle/libgpuckpt.so.0" "$S/bundle/.gpuckpt-bundle"
printf '#!/bin/sh\n' >"$S/bundle/gpuckpt-container-start"
chmod 0755 "$S/bundle/gpuckpt-container-start"
echo "root:secret" >"$S/etc/shadow"  # root's folder, with a root-only file in it
chmod 0600 "$S/etc/shadow"
# gksec1's own folder: a link to root's folder, a bundle of their own.
mkdir -m 0755 "$S/u1"
chown "$U1:$G1" "$S/u1"
as gksec1 sh -c "ln -s '$S/etc' '$S/u1/7' && mkdir '$S/u1/bundle' &&
	touch '$S/u1/bundle/libgpuckpt.so.0' '$S/u1/bundle/.gpuckpt-bundle' &&
	printf '#!/bin/sh\n' >'$S/u1/bundle/gpuckpt-container-start' &&
	chmod 0755 '$S/u1/bundle/gpuckpt-container-start'"

# gksec1's job 7: what the plugin lists (bundle, BB_ROOT/7, Munge, the
# GPUCKPT_CONFIG of the user's environment, here a file behind a 0700 folder
# and the job's shared-root folder, both of which a user may name there).
job7() {
	task_record $$ 7 "$U1" "$S/bundle" "$S/bb/7" /run/munge "$S/etc/gpuckpt.conf" \
		"$S/private/notes" "$S/shared/7"
}
job7
config='{"ociVersion":"1.0.2","process":{"args":["bash"],"env":["PATH=/usr/bin"]},"root":{"path":"/x"},"mounts":[]}'
# hook VAR=VALUE...: the environment gksec1 gives podman; the hook as root on it.
hook() {
	rm -f "$S/u1/environ"
	as gksec1 sh -c 'f=$1; shift; printf "%s\0" "$@" >"$f"' sh "$S/u1/environ" \
		GPUCKPT_CHECKPOINT=on "$@"
	out=$("$HOOK" --environ "$S/u1/environ" <<<"$config" 2>"$S/err")
}
# mounted PATH [ro|rw]: the configuration mounts PATH (with that option).
mounted() {
	jq -e --arg p "$1" --arg o "${2:-}" \
		'[.mounts[] | select(.source == $p and ($o == "" or (.options | index($o))))] | length > 0' \
		<<<"$out" >/dev/null
}
jqe() { jq -e "$@" >/dev/null; }
not_mounted() { ! mounted "$1" && grep -qF "$1 is not mounted" "$S/err"; }

hook "GPUCKPT_BIND=$S/etc" "GPUCKPT_RUNTIME=$S/bundle/libgpuckpt.so.0"
check "a folder of root's (a stand-in for /etc) named in GPUCKPT_BIND is not mounted, and the hook says so" not_mounted "$S/etc"
hook "GPUCKPT_BIND=/etc" "GPUCKPT_RUNTIME=$S/bundle/libgpuckpt.so.0"
check "the real /etc, a folder right below /, is not mounted either" not_mounted /etc
hook "GPUCKPT_BIND=$S/etc/shadow" "GPUCKPT_RUNTIME=$S/bundle/libgpuckpt.so.0"
check "a root-only file is not mounted, not even read-only" not_mounted "$S/etc/shadow"
hook "GPUCKPT_BIND=$S/bb/8" "GPUCKPT_RUNTIME=$S/bundle/libgpuckpt.so.0"
check "gksec2's job folder is not mounted into gksec1's container" not_mounted "$S/bb/8"
hook "GPUCKPT_BIND=$S/u1/7" "GPUCKPT_RUNTIME=$S/bundle/libgpuckpt.so.0"
check "gksec1's link to root's folder is not mounted (runc would follow it)" not_mounted "$S/u1/7"
hook "GPUCKPT_BIND=$S/u1/bundle" "GPUCKPT_RUNTIME=$S/u1/bundle/libgpuckpt.so.0"
check "a bundle in gksec1's own folder is not mounted" not_mounted "$S/u1/bundle"
check "and its starter is not put in front of the command" \
	jqe '.process.args == ["bash"]' <<<"$out"
hook "GPUCKPT_BIND=$S/bb/9/../8" "GPUCKPT_RUNTIME=$S/bundle/libgpuckpt.so.0"
check "a path through '..' is not mounted" not_mounted "$S/bb/9/../8"

# gksec1's own job, as a user's rootful podman runs it.
hook "GPUCKPT_BIND=$S/bundle:$S/bb/7" "GPUCKPT_RUNTIME=$S/bundle/libgpuckpt.so.0"
check "gksec1's job 7: the bundle root made is mounted read-only" mounted "$S/bundle" ro
check "gksec1's job 7: its own job folder (gksec1's, 0700) is mounted read-write" mounted "$S/bb/7" rw
check "gksec1's job 7: the starter from the bundle goes in front of the command" \
	jqe --arg s "$S/bundle/gpuckpt-container-start" '.process.args[0] == $s' <<<"$out"
hook "GPUCKPT_BIND=$S/bb/9" "GPUCKPT_RUNTIME=$S/bundle/libgpuckpt.so.0"
check "gksec1's job: a root job's 0700 folder named by digits is not mounted (the hook's uid is root's, not the job's)" \
	not_mounted "$S/bb/9"
hook "GPUCKPT_BIND=$S/shared/8" "GPUCKPT_RUNTIME=$S/bundle/libgpuckpt.so.0"
check "gksec1's job: another job's SHARED_ROOT/JOB (root's, 0700) is not mounted" not_mounted "$S/shared/8"
hook "GPUCKPT_BIND=$S/shared/7" "GPUCKPT_RUNTIME=$S/bundle/libgpuckpt.so.0"
check "gksec1's job: its own job's SHARED_ROOT/7 (root's, listed through GPUCKPT_CONFIG) is not mounted" \
	not_mounted "$S/shared/7"
hook "GPUCKPT_BIND=$S/private/notes" "GPUCKPT_RUNTIME=$S/bundle/libgpuckpt.so.0"
check "a file anyone may read behind root's 0700 folder is not mounted, though listed (GPUCKPT_CONFIG)" \
	not_mounted "$S/private/notes"
hook "GPUCKPT_BIND=$S/etc/gpuckpt.conf" "GPUCKPT_RUNTIME=$S/bundle/libgpuckpt.so.0"
check "the site's settings file (root's whole path, readable by all) is mounted read-only" \
	mounted "$S/etc/gpuckpt.conf" ro
if [ -d /run/munge ]; then
	hook "GPUCKPT_BIND=/run/munge" "GPUCKPT_RUNTIME=$S/bundle/libgpuckpt.so.0"
	check "Munge's socket folder is mounted read-only (a container's root cannot replace the socket)" \
		mounted /run/munge ro
else
	tap_skip "no /run/munge on this machine"
fi

# A podman that no job's task started (or whose record is not its task's):
# nothing is mounted, and the hook says why.
nothing() {
	jq -e '.mounts == [] and .process.args == ["bash"]' <<<"$out" >/dev/null &&
		grep -q "nothing is mounted into the container" "$S/err"
}
task_record_drop $$
hook "GPUCKPT_BIND=$S/bundle:$S/bb/9:$S/bb/7" "GPUCKPT_RUNTIME=$S/bundle/libgpuckpt.so.0"
check "no task record among podman's ancestors: nothing is mounted, and the hook says why" nothing
GK_RECORD_START=1 job7
hook "GPUCKPT_BIND=$S/bundle:$S/bb/9:$S/bb/7" "GPUCKPT_RUNTIME=$S/bundle/libgpuckpt.so.0"
check "a record whose start time is not its process's (a pid used again) is not used" nothing

# What a root job gets, as tests/containers/podman.sh runs it.
task_record $$ 9 0 "$S/bundle" "$S/bb/9"
hook "GPUCKPT_BIND=$S/bundle:$S/bb/9" "GPUCKPT_RUNTIME=$S/bundle/libgpuckpt.so.0"
check "root's job 9: its job folder is mounted read-write" mounted "$S/bb/9" rw
check "the configuration the hook writes is still JSON podman reads" jqe .ociVersion <<<"$out"
tap_done
