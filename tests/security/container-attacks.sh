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
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"
. "$top_srcdir/tests/security/lib.sh"

HOOK=$top_builddir/spank-plugin/gpuckpt-oci-hook
sec_setup 13
if [ ! -x "$HOOK" ] || ! command -v jq >/dev/null; then
	for _ in $(seq 13); do tap_skip "gpuckpt-oci-hook is not built, or jq is missing"; done
	exit 0
fi
S=$GK_SCRATCH
# The site: the burst buffer and the bundle, root's (a trusted path).
mkdir -m 0755 "$S/bb" "$S/bundle" "$S/etc"
mkdir -m 0700 "$S/bb/9"             # a root job's folder
mkdir -m 0700 "$S/bb/8"             # gksec2's job's folder
chown "$U2:$G2" "$S/bb/8"
echo "gksec2's checkpoint" >"$S/bb/8/data"
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

# What a root job gets, as tests/containers/podman.sh runs it.
hook "GPUCKPT_BIND=$S/bundle:$S/bb/9" "GPUCKPT_RUNTIME=$S/bundle/libgpuckpt.so.0"
check "root's job: the bundle root made is mounted read-only" mounted "$S/bundle" ro
check "root's job: its job folder is mounted read-write" mounted "$S/bb/9" rw
check "root's job: the starter from the bundle goes in front of the command" \
	jqe --arg s "$S/bundle/gpuckpt-container-start" '.process.args[0] == $s' <<<"$out"
if [ -d /run/munge ]; then
	hook "GPUCKPT_BIND=/run/munge" "GPUCKPT_RUNTIME=$S/bundle/libgpuckpt.so.0"
	check "Munge's socket folder is mounted read-only (a container's root cannot replace the socket)" \
		mounted /run/munge ro
else
	tap_skip "no /run/munge on this machine"
fi
hook "GPUCKPT_BIND=$S/bb/9" "GPUCKPT_RUNTIME=$S/bundle/libgpuckpt.so.0"
check "the configuration the hook writes is still JSON podman reads" jqe .ociVersion <<<"$out"
tap_done
