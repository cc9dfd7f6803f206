# lib.sh - shared by the attack tests (tests/security/*.sh). Sourced after
# tests/lib/helpers.sh.
#
# Two real users: gksec1 is the attacker (a job's own user, with a process
# on the node while the prolog or epilog runs: another job of theirs, or a
# login through pam_slurm_adopt), gksec2 the other user whose data must stay
# theirs. They are made when missing (useradd, under /tmp/gk-cluster.lock,
# which guards every change to this machine's users) and left in place.
#
# Each test also runs against the code before issue 11 (GK_OLD=1 with
# top_builddir/top_srcdir of that build; GK_STAGE the old script): there,
# every attack must succeed, which is what these tests demonstrate first.

SEC_TOOLS=${GK_SEC_TOOLS:-$top_builddir/tests/security}
OLD=${GK_OLD:-0}

# sec_setup PLAN: the plan, root and the two users, or skips for all.
sec_setup() {
	local plan=$1 missing=()
	tap_plan "$plan"
	if [ "$(id -u)" -ne 0 ]; then
		for i in $(seq "$plan"); do tap_skip "needs root: the attacks are on root-run code"; done
		exit 0
	fi
	getent passwd gksec1 >/dev/null || missing+=(gksec1)
	getent passwd gksec2 >/dev/null || missing+=(gksec2)
	if [ ${#missing[@]} -gt 0 ]; then
		flock -w 1800 /tmp/gk-cluster.lock sh -c '
			for u in "$@"; do
				getent passwd "$u" >/dev/null ||
					useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$u"
			done' sh "${missing[@]}"
	fi
	if ! getent passwd gksec1 >/dev/null || ! getent passwd gksec2 >/dev/null; then
		for i in $(seq "$plan"); do tap_skip "cannot make the test users gksec1 and gksec2"; done
		exit 0
	fi
	U1=$(id -u gksec1) G1=$(id -g gksec1) U2=$(id -u gksec2) G2=$(id -g gksec2)
	gk_scratch
	# The users must reach the tools and their own folders below it.
	chmod 0755 "$GK_SCRATCH"
	mkdir -p "$GK_SCRATCH/tools"
	cp "$SEC_TOOLS/racer" "$SEC_TOOLS/seal-tool" "$GK_SCRATCH/tools/"
	chmod 0755 "$GK_SCRATCH/tools" "$GK_SCRATCH/tools/"*
	RACER=$GK_SCRATCH/tools/racer
	SEALTOOL=$GK_SCRATCH/tools/seal-tool
	# Where test hooks wait: root's alone.
	HOOKS=$GK_SCRATCH/hooks
	mkdir -m 0700 "$HOOKS"
}

# as USER CMD...: run CMD as gksec1 or gksec2, no privileges left.
as() {
	local u=$1
	shift
	setpriv --reuid="$(id -u "$u")" --regid="$(id -g "$u")" --clear-groups -- "$@"
}

# racer_start USER ARGS...: the attacker's racer in the background, once it
# watches (RACER_PID, its output in RACER_OUT).
racer_start() {
	local u=$1
	shift
	RACER_OUT=$(mktemp "$GK_SCRATCH/racer.XXXXXX")
	chmod 0666 "$RACER_OUT"
	# setpriv execs the racer: $! is the racer itself (a function run with &
	# would put a subshell in between, and killing it would leave the racer).
	setpriv --reuid="$(id -u "$u")" --regid="$(id -g "$u")" --clear-groups -- \
		"$RACER" "$@" >"$RACER_OUT" 2>&1 &
	RACER_PID=$!
	for _ in $(seq 200); do grep -q ready "$RACER_OUT" && return 0; sleep 0.01; done
	return 1
}
racer_end() { wait "$RACER_PID" 2>/dev/null; }

# Test hooks exist only in the new code: the old had none of these pauses.
has_hooks() { [ "$OLD" != 1 ] && "$1" --help 2>&1 | grep -q -- --test-hook; }
# hook_wait POINT: until the program waits there. hook_go POINT: let it go.
hook_wait() { for _ in $(seq 1000); do [ -e "$HOOKS/$1.reached" ] && return 0; sleep 0.01; done; return 1; }
hook_go() { touch "$HOOKS/$1.go"; }

# A fake squeue (root's), for a controller answering what the test says:
# fake_squeue FILE STATES UIDSUBMIT RESTARTS writes a script that prints
# STATES for -o '%A %T', UIDSUBMIT for -o '%U %V', RESTARTS for RestartCnt.
fake_squeue() {
	cat >"$1" <<-EOF
	#!/bin/sh
	case "\$*" in
	*RestartCnt*) echo "$4" ;;
	*'%U %V'*) echo "$3" ;;
	*'%A %T'*) printf '%b' "$2" ;;
	*) exit 1 ;;
	esac
	EOF
	chmod 0755 "$1"
}
