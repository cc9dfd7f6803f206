#!/bin/bash
# cli.sh - gpuckpt inspect, verify, list and prune on good checkpoints, in
# text and in JSON, and the help texts.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"

MKIMAGE=$top_builddir/tests/image/mkimage
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
gk_scratch
ROOT=$GK_SCRATCH/job/task0
ME=$(id -un)

# munged as the library will reach it (GPUCKPT_MUNGE_SOCKET, or the default).
munge_args=()
[ -n "${GPUCKPT_MUNGE_SOCKET:-}" ] && munge_args=(-S "$GPUCKPT_MUNGE_SOCKET")
munge_ok=0
if munge "${munge_args[@]}" -n 2>/dev/null | unmunge "${munge_args[@]}" >/dev/null 2>&1; then
	munge_ok=1
fi
have_jq=0
if command -v jq >/dev/null; then have_jq=1; fi

# expect DESCRIPTION PATTERN TEXT: the text contains the pattern (a glob).
expect() {
	if [[ $3 == $2 ]]; then tap_ok "$1"; else
		tap_not_ok "$1"
		tap_diag "got: $3"
		tap_diag "expected to match: $2"
	fi
}

# jq_is DESCRIPTION JSON FILTER EXPECTED
jq_is() {
	local got
	if [ $have_jq -eq 0 ]; then tap_skip "jq is not installed: $1"; return; fi
	got=$(jq -r "$3" <<<"$2" 2>&1)
	if [ "$got" = "$4" ]; then tap_ok "$1"; else
		tap_not_ok "$1"
		tap_diag "jq '$3' gave '$got', expected '$4'"
	fi
}

tap_plan 65

C1=$("$MKIMAGE" "$ROOT" --seed 1 --allocs 3 --regions 1)
C2=$("$MKIMAGE" "$ROOT" --seed 2 --allocs 2 --regions 0 --unsigned)
C3=$("$MKIMAGE" "$ROOT" --seed 3 --devices 2 --allocs 5 --regions 2 --slurm --label "step 300")
check "three checkpoints written" [ "$C3" = "$ROOT/ckpt.000003" ] 

# -- inspect --
out=$("$GK_TOOL" inspect "$C3")
check "inspect exits 0" [ $? -eq 0 ]
expect "inspect: sequence and label" "*sequence      3*label         step 300*step          300*" "$out"
expect "inspect: Slurm job, step, task, restart count" \
	"*slurm         job 1003, step 0, task 0, restart count 0*" "$out"
expect "inspect: GPUs with name, uuid and compute capability" \
	"*Synthetic GPU 1*GPU-00000003-0000-4000-8000-000000000001*9.0*80.0 GiB*" "$out"
expect "inspect: totals" "*totals        2 GPUs, 5 allocations (*), 2 host regions (*), 3 files (*)*" "$out"
expect "inspect: the allocations table" \
	"*Allocations*DEV*ADDRESS*SIZE*ORDER*KIND*0x200000000000*0x210000000000*" "$out"
expect "inspect: host regions" "*Host regions*region0*host.data*region1*" "$out"
if [ $munge_ok -eq 1 ]; then
	expect "inspect: who signed it" "*signed by     $ME (uid $(id -u))*" "$out"
else
	tap_skip "munged is not reachable: checkpoints are written unsigned"
fi
out=$("$GK_TOOL" inspect "$C2")
expect "inspect: an unsigned checkpoint says so" "*signed by     unsigned*" "$out"

json=$("$GK_TOOL" inspect --json "$C3")
check "inspect --json exits 0" [ $? -eq 0 ]
jq_is "inspect --json: the manifest's sequence" "$json" .manifest.sequence 3
jq_is "inspect --json: allocation count" "$json" '.totals.allocations' 5
jq_is "inspect --json: the second device's uuid" "$json" '.manifest.devices[1].uuid' \
	GPU-00000003-0000-4000-8000-000000000001
jq_is "inspect --json: addresses are hex strings" "$json" '.manifest.allocations[0].address' \
	0x200000000000
jq_is "inspect --json: the owner" "$json" '.owner.user' "$ME"

# -- verify --
out=$("$GK_TOOL" verify "$C1" "$C3")
check "verify of good checkpoints exits 0" [ $? -eq 0 ]
if [ $munge_ok -eq 1 ]; then
	expect "verify: OK line with allocations, size and signer" \
		"$C1: OK (3 allocations, * KiB, signed by $ME)*$C3: OK (5 allocations, *, signed by $ME)" "$out"
else
	expect "verify: OK line with allocations and size" "$C1: OK (3 allocations, * KiB, *)*" "$out"
fi
out=$("$GK_TOOL" verify "$C2")
expect "verify: an unsigned checkpoint passes, reported as unsigned" \
	"$C2: OK (2 allocations, *, unsigned)" "$out"
out=$("$GK_TOOL" verify --owner "$(id -u)" "$C1")
check "verify --owner UID of oneself" [ $? -eq 0 ]
out=$("$GK_TOOL" verify --owner "$ME" "$C1")
check "verify --owner USER of oneself" [ $? -eq 0 ]
json=$("$GK_TOOL" verify --json "$C1" "$C2")
check "verify --json exits 0" [ $? -eq 0 ]
jq_is "verify --json: overall ok" "$json" .ok true
jq_is "verify --json: per checkpoint" "$json" '[.checkpoints[] | .signature] | join(",")' \
	"$([ $munge_ok -eq 1 ] && echo signed || echo unsigned),unsigned"
json=$("$GK_TOOL" verify --json "$C1" "$GK_SCRATCH/nonexistent" 2>/dev/null)
check "verify --json with one bad checkpoint exits 1" [ $? -eq 1 ]
jq_is "verify --json: the bad one's error" "$json" '.checkpoints[1].error' \
	"No such file or directory"

# -- list --
hostname_=$(hostname | tr -c 'A-Za-z0-9._\n-' _)
( exit 0 ) & deadpid=$!; wait $deadpid
mkdir "$ROOT/.tmp.ckpt.000004.$hostname_.$deadpid"
mkdir "$ROOT/.tmp.ckpt.000005.$hostname_.$$"
out=$("$GK_TOOL" list "$ROOT")
check "list exits 0" [ $? -eq 0 ]
expect "list: committed newest first, then incomplete" \
	"SEQ*STATUS*000003*step 300*000002*synthetic*unsigned*000001*000005*incomplete (writing)*000004*incomplete (writer gone)*" \
	"$out"
check "list: one line per checkpoint, a header and a note" [ "$(wc -l <<<"$out")" -eq 7 ]
expect "list: says what it checked and that the data is not read" \
	"*status: manifest, owner and signature checked; the data is not read: gpuckpt verify DIR checks every checksum)" "$out"
json=$("$GK_TOOL" list --json "$ROOT")
jq_is "list --json: sequences in order" "$json" '[.checkpoints[].sequence] | map(tostring) | join(",")' \
	"3,2,1,5,4"
jq_is "list --json: completeness and status" "$json" \
	'[.checkpoints[] | "\(.complete):\(.status)"] | join(",")' \
	"true:$([ $munge_ok -eq 1 ] && echo signed || echo unsigned),true:unsigned,true:$([ $munge_ok -eq 1 ] && echo signed || echo unsigned),false:writing,false:stale"
out=$("$GK_TOOL" list "$GK_SCRATCH/empty-root" 2>&1)
check "list of a missing root exits 1" [ $? -eq 1 ]
mkdir "$GK_SCRATCH/empty"
out=$("$GK_TOOL" list "$GK_SCRATCH/empty")
expect "list of an empty root says so" "*: no checkpoints" "$out"
out=$("$GK_TOOL" list "$C3")
expect "list of a checkpoint says that list takes the root" \
	"$C3: no checkpoints: this is a checkpoint, not a checkpoint root; list takes the folder that holds the ckpt.N folders*" "$out"
mkdir -p "$GK_SCRATCH/1234/step.0/task.0"
out=$("$GK_TOOL" list "$GK_SCRATCH/1234")
expect "list of a job's folder points at its task folders" \
	"*no checkpoints here: a job's checkpoint roots are its task folders, JOBID/step.S/task.T" "$out"

# -- a copy held by root (the shared root): judged as its user's --
if [ "$(id -u)" -eq 0 ] && [ $munge_ok -eq 1 ] && id nobody >/dev/null 2>&1; then
	U=$GK_SCRATCH/user-bb
	mkdir -p "$U" && chown nobody "$U" && chmod 0711 "$GK_SCRATCH"
	UC=$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$MKIMAGE" "$U/task.0" --seed 7 --allocs 2 --regions 1)
	H=$GK_SCRATCH/shared/77/step.0/task.0
	mkdir -p "$H" && chmod -R 0700 "$GK_SCRATCH/shared"
	cp -r "$UC" "$H/" && chown -R root:root "$H" # as the staging copies it out
	HC=$H/$(basename "$UC")
	out=$("$GK_TOOL" list "$H")
	expect "list: a copy held by root is its user's, signed by them" \
		"*000001 *signed (nobody's, held by root)*" "$out"
	out=$("$GK_TOOL" inspect "$HC")
	expect "inspect: signed by its user, held by root" \
		"*signed by     nobody (uid 65534)*held by       root (a copy kept for nobody*" "$out"
	out=$("$GK_TOOL" verify "$HC" 2>&1)
	expect "verify (root, no --owner): OK, signed by its user, held by root" \
		"$HC: OK (2 allocations, *, signed by nobody; held by root)" "$out"
	"$GK_TOOL" verify --owner nobody "$HC" >/dev/null 2>&1
	check "verify --owner nobody: OK" [ $? -eq 0 ]
	out=$("$GK_TOOL" verify --owner daemon "$HC" 2>&1)
	expect "verify --owner another user: refused, naming whose it is" \
		"*manifest.json names nobody (uid 65534) as its writer, not daemon (uid 1)*" "$out"
	out=$("$GK_TOOL" verify --owner root "$HC" 2>&1)
	expect "verify --owner root: not root's own checkpoint" \
		"*signed by nobody (uid 65534), not by root (uid 0)*" "$out"
	chown nobody "$HC/host.data"
	out=$("$GK_TOOL" verify "$HC" 2>&1)
	expect "a held copy with a file its user could change is refused" \
		"*host.data is owned by nobody (uid 65534), not by root (uid 0)*" "$out"
	chown root "$HC/host.data"
	json=$("$GK_TOOL" list --json "$H")
	jq_is "list --json: owner and held_by_root" "$json" \
		'.checkpoints[0] | "\(.owner.user):\(.held_by_root)"' "nobody:true"
else
	for i in $(seq 8); do tap_skip "a copy held by root needs root, a reachable munged and the user nobody"; done
fi

# -- settings --
out=$(GPUCKPT_LOG_LEVEL=bogus "$GK_TOOL" list "$ROOT" 2>&1)
check "GPUCKPT_LOG_LEVEL=bogus is refused (exit 2)" [ $? -eq 2 ]
expect "... naming the variable, the value and what is allowed" \
	"gpuckpt: GPUCKPT_LOG_LEVEL: invalid value 'bogus' (expected error, warn, notice, info or debug)*" "$out"
out=$(GPUCKPT_LOG_LEVEL=error "$GK_TOOL" list "$ROOT" 2>&1)
check "GPUCKPT_LOG_LEVEL=error is taken" [ $? -eq 0 ]

# -- prune --
out=$("$GK_TOOL" prune --keep 1 --dry-run "$ROOT")
check "prune --dry-run exits 0" [ $? -eq 0 ]
expect "prune --dry-run: what would go" \
	"would remove $C2*would remove $C1*would remove $ROOT/.tmp.ckpt.000004.*would remove 3, kept 1" "$out"
check "prune --dry-run removes nothing" [ -d "$C1" -a -d "$C2" ]
json=$("$GK_TOOL" prune --keep 1 --json "$ROOT")
check "prune exits 0" [ $? -eq 0 ]
jq_is "prune --json: what was removed" "$json" '.removed | length' 3
check "prune: the older ones are gone, the newest and a live writer's remain" \
	[ ! -e "$C1" -a ! -e "$C2" -a -d "$C3" -a -d "$ROOT/.tmp.ckpt.000005.$hostname_.$$" ]
out=$("$GK_TOOL" prune --keep 1 "$ROOT")
expect "prune again removes nothing" "*removed 0, kept 1" "$out"

# -- format 2 (XXH64 checksums), written before format 3: still verified --
OLD=$GK_SCRATCH/old
C4=$("$MKIMAGE" "$OLD" --seed 4 --allocs 3 --regions 1 --format 2)
check "a format 2 checkpoint is written" grep -q '"version": 2,' "$C4/manifest.json"
check "... with XXH64 checksums" grep -q '"xxh64": \[' "$C4/manifest.json"
out=$("$GK_TOOL" verify "$C4" 2>&1)
check "verify accepts a format 2 checkpoint (checked with XXH64)" [ $? -eq 0 ]
data=$C4/device0.data
printf '\x5a' | dd of="$data" bs=1 seek=$(($(stat -c %s "$data") / 2)) conv=notrunc status=none
out=$("$GK_TOOL" verify "$C4" 2>&1)
expect "... and finds a byte changed in it" "*device0.data: checksum mismatch in allocation*" "$out"
out=$("$GK_TOOL" inspect --json "$C4")
jq_is "inspect --json of it keeps its format" "$out" '.manifest.version' 2

# -- help --
out=$("$GK_TOOL" --help)
expect "--help: synopsis, commands, exit status, examples" \
	"*SYNOPSIS*gpuckpt verify*COMMANDS*EXIT STATUS*EXAMPLES*" "$out"
expect "--help: the log level's default is notice, as in docs/users.md" \
	"*GPUCKPT_LOG_LEVEL     error, warn, notice (default), info or debug*" "$out"
check "docs/users.md gives the same default" grep -q '^| `GPUCKPT_LOG_LEVEL` | `notice` |' "$top_srcdir/docs/users.md"
check "help verify is verify --help" [ "$("$GK_TOOL" help verify)" = "$("$GK_TOOL" verify --help)" ]
expect "--version" "gpuckpt * (checkpoint format gpuckpt-image version 6)" "$("$GK_TOOL" --version)"
if command -v groff >/dev/null; then
	warnings=$(groff -man -Tutf8 -ww -z "$top_srcdir/man/gpuckpt.1" 2>&1)
	check "the man page renders without warnings" [ -z "$warnings" ]
	[ -z "$warnings" ] || tap_diag "$warnings"
else
	tap_skip "groff is not installed: man page not rendered"
fi

tap_done
