#!/bin/bash
# args.sh - the gpuckpt tool's command line, driven as a user drives it:
# every subcommand refuses an unknown option and each bad option value with
# exit status 2 and a message on stderr that names the subcommand and the
# option (and points to --help), printing nothing on stdout; --help, -h and
# `gpuckpt help CMD` print the same help on stdout with exit status 0.
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"

gk_need_built "$GK_TOOL"
gk_scratch
out=$GK_SCRATCH/out
errf=$GK_SCRATCH/err

# refused WANT_IN_STDERR ARGS...: exit status 2, WANT on stderr with the
# pointer to --help, stdout empty.
refused() {
	local want=$1 rc
	shift
	"$GK_TOOL" "$@" >"$out" 2>"$errf"
	rc=$?
	if [ "$rc" = 2 ] && grep -qF -- "$want" "$errf" && grep -qF 'see gpuckpt --help' "$errf" &&
		[ ! -s "$out" ]; then
		tap_ok "gpuckpt $*: refused (2): $want"
	else
		tap_not_ok "gpuckpt $*: refused (2): $want (got $rc: $(head -c 300 "$errf"))"
	fi
}

CMDS="inspect verify list prune plan checkpoint report"
for c in $CMDS; do
	refused "$c: unknown option '--no-such-option'" "$c" --no-such-option /tmp
	refused "$c: unknown option '-Q'" "$c" -Q /tmp
	# --help: the help on stdout, exit status 0, the same as `help CMD`.
	"$GK_TOOL" "$c" --help >"$out" 2>"$errf"
	rc=$?
	"$GK_TOOL" help "$c" >"$out.2" 2>/dev/null
	rc2=$?
	"$GK_TOOL" "$c" -h >"$out.3" 2>/dev/null
	if [ "$rc" = 0 ] && [ "$rc2" = 0 ] && grep -q "gpuckpt $c" "$out" && [ ! -s "$errf" ] &&
		cmp -s "$out" "$out.2" && cmp -s "$out" "$out.3"; then
		tap_ok "gpuckpt $c --help, -h and gpuckpt help $c: the same help on stdout, 0"
	else
		tap_not_ok "gpuckpt $c --help, -h and gpuckpt help $c: the same help on stdout, 0 (got $rc/$rc2)"
	fi
done

# Options that want a value, without one; flags given one.
refused "prune: option '--keep' needs a value" prune /tmp --keep
refused "prune: option '-k' needs a value" prune /tmp -k
refused "inspect: option '--json' takes no value" inspect --json=1 /tmp
refused "list: option '--shared' needs a value" list /tmp --shared
refused "verify: option '--owner' needs a value" verify /tmp --owner
refused "plan: option '--root-copies' takes no value" plan --root-copies=yes /tmp
refused "report: option '-j' needs a value" report /tmp -j
refused "checkpoint: option '--timeout' needs a value" checkpoint 12 --timeout

# Bad values, each named with the option.
refused "prune: --keep '0': expected a whole number" prune /tmp --keep 0
refused "prune: --keep 'ten': expected a whole number" prune /tmp --keep ten
refused "verify: --owner: no such user 'no-such-user-gk'" verify /tmp --owner no-such-user-gk
refused "plan: --owner: no such user 'no-such-user-gk'" plan /tmp --owner no-such-user-gk
refused "report: --job: 'x1' is not a job id" report /tmp --job x1
refused "checkpoint: --timeout: '0' is not a number of seconds" checkpoint 12 --timeout 0
refused "checkpoint: --timeout: '-5' is not a number of seconds" checkpoint 12 --timeout -5
refused "checkpoint: --timeout: '604801' is not a number of seconds" checkpoint 12 --timeout 604801
refused "checkpoint: --signal: 'usr1;id' is not a signal name" checkpoint 12 --signal 'usr1;id'
refused "checkpoint: --bb-root: 'rel/dir' is not an absolute path" checkpoint 12 --bb-root rel/dir
refused "checkpoint: --exit and --requeue cannot be combined" checkpoint 12 --exit --requeue
refused "checkpoint: 'a;b' is not a job id" checkpoint 'a;b'

# Missing and extra operands.
refused "inspect: missing the checkpoint directory DIR" inspect
refused "verify: missing the checkpoint directory DIR" verify --json
refused "prune: missing --keep N" prune /tmp
refused "prune: one checkpoint root at a time" prune /tmp /var --keep 1
refused "checkpoint: missing the job id JOBID" checkpoint
refused "checkpoint: one job at a time" checkpoint 1 2
refused "report: missing the shared root SHARED_ROOT" report

# The dispatcher.
refused "unknown command 'frobnicate'" frobnicate
refused "unknown option '--frob' (a command comes first)" --frob
refused "help: unknown command 'frobnicate'" help frobnicate
"$GK_TOOL" --help >"$out" 2>"$errf"
rc=$?
all=1
for c in $CMDS; do grep -q "^ *$c " "$out" || all=0; done
tap_if "$([ "$rc" = 0 ] && [ "$all" = 1 ] && [ ! -s "$errf" ] && echo 1)" \
	"gpuckpt --help: every command in the overview, on stdout, 0"
"$GK_TOOL" --version >"$out" 2>&1
tap_if "$(grep -qE '^gpuckpt [0-9][^ ]* \(checkpoint format .* version [0-9]+\)$' "$out" && echo 1)" \
	"gpuckpt --version: the version and the format's ($(head -c 100 "$out"))"

tap_plan "$TAP_N"
tap_done
