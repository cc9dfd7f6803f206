#!/bin/bash
# bad-input.sh - every kind of damaged or foreign checkpoint is refused by
# `gpuckpt verify` with a message naming the problem and exit status 1, and
# the checkpoint is left exactly as it was; bad command lines exit 2.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"

MKIMAGE=$top_builddir/tests/image/mkimage
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
gk_scratch

# munged as the library will reach it (GPUCKPT_MUNGE_SOCKET, or the default).
munge_args=()
[ -n "${GPUCKPT_MUNGE_SOCKET:-}" ] && munge_args=(-S "$GPUCKPT_MUNGE_SOCKET")
munge_ok=0
if munge "${munge_args[@]}" -n 2>/dev/null | unmunge "${munge_args[@]}" >/dev/null 2>&1; then
	munge_ok=1
fi

# Everything about a directory that verify must not change: names, modes,
# owners, sizes, link targets and contents.
snapshot() {
	(cd "$1" && find . -printf '%p %m %U %s %l\n' | sort &&
		find . -type f -exec sha256sum {} + | sort)
}

# A fresh good checkpoint to damage; its path in $CK.
fresh() {
	local root=$GK_SCRATCH/root.$TAP_N.$RANDOM
	CK=$("$MKIMAGE" "$root" --devices 1 --allocs 3 --regions 1 --seed 7 "$@") || {
		echo "mkimage failed" >&2; return 1; }
}

# refused DESCRIPTION EXPECTED-MESSAGE [verify options...]: verify $CK and
# expect exit 1, the message on stderr, and nothing changed.
refused() {
	local desc=$1 want=$2 before after out rc
	shift 2
	before=$(snapshot "$CK")
	out=$("$GK_TOOL" verify "$@" "$CK" 2>&1 >/dev/null)
	rc=$?
	after=$(snapshot "$CK")
	if [ $rc -eq 1 ] && [[ $out == *"$want"* ]] && [ "$before" = "$after" ]; then
		tap_ok "$desc"
	else
		tap_not_ok "$desc"
		tap_diag "exit $rc; stderr: $out"
		tap_diag "expected: $want"
		[ "$before" = "$after" ] || tap_diag "the checkpoint changed"
	fi
}

# usage_error DESCRIPTION EXPECTED-MESSAGE ARGS...: exit 2, one line naming it.
usage_error() {
	local desc=$1 want=$2 out rc
	shift 2
	out=$("$GK_TOOL" "$@" 2>&1 >/dev/null)
	rc=$?
	if [ $rc -eq 2 ] && [[ $out == *"$want"* ]] && [[ $out == *"see gpuckpt --help"* ]] &&
		[ "$(wc -l <<<"$out")" -eq 1 ]; then
		tap_ok "$desc"
	else
		tap_not_ok "$desc"
		tap_diag "exit $rc; stderr: $out"
		tap_diag "expected: $want"
	fi
}

flip_byte() { # FILE OFFSET
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "\\$(printf '%03o' $((b ^ 255)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# The Nth (from 1) value of a numeric or hex field in a manifest.
field() { # MANIFEST NAME N
	grep -o "\"$2\": \"\?[0-9a-fx]*" "$1" | sed -n "$3p" | sed 's/.*: "\?//'
}

tap_plan 33

# -- the manifest --
fresh && truncate -s 300 "$CK/manifest.json"
refused "truncated manifest" "manifest.json: truncated or malformed JSON at offset 300"

fresh && sed -i 's/"version": 3,/"version": 7,/' "$CK/manifest.json"
refused "wrong format version" "format version 7 is not supported (this gpuckpt reads versions 1 to 6)"

fresh && sed -i 's/"format": "gpuckpt-image"/"format": "something-else"/' "$CK/manifest.json"
refused "not a gpuckpt manifest" "not a gpuckpt manifest"

fresh
a0=$(field "$CK/manifest.json" address 1)
a1=$(field "$CK/manifest.json" address 2)
sed -i "s/\"address\": \"$a1\"/\"address\": \"$a0\"/" "$CK/manifest.json"
refused "an allocation overlapping another" "allocation 1 ($a0, "

fresh && sed -i '0,/"file": "host.data"/s//"file": "..\/..\/etc\/passwd"/' "$CK/manifest.json"
refused "a file name climbing out of the directory" \
	"file name '../../etc/passwd' is not allowed (host_regions[0].file)"

fresh && sed -i '0,/"name": "device0.data"/s//"name": "\/etc\/passwd"/' "$CK/manifest.json"
refused "an absolute data file name" "file name '/etc/passwd' is not allowed (files[0].name)"

fresh && rm "$CK/manifest.json"
refused "no manifest" "no manifest.json"

fresh && mv "$CK/manifest.json" "$GK_SCRATCH/m.$TAP_N" && ln -s "$GK_SCRATCH/m.$TAP_N" "$CK/manifest.json"
refused "a manifest that is a symbolic link" "manifest.json is a symbolic link"

# -- the data --
fresh
off=$(field "$CK/manifest.json" offset 2)
flip_byte "$CK/device0.data" $((off + 5))
refused "wrong checksum (a byte flipped in a data file)" \
	"device0.data: checksum mismatch in allocation 1 ($(field "$CK/manifest.json" address 2)), chunk 0"

fresh && truncate -s -100 "$CK/device0.data"
size=$(stat -c %s "$CK/device0.data")
refused "a data file shorter than the manifest says" \
	"device0.data is $size bytes, the manifest says $((size + 100))"

fresh && head -c 10 /dev/zero >>"$CK/host.data"
refused "a data file longer than the manifest says" "host.data is "

fresh && mv "$CK/device0.data" "$GK_SCRATCH/d.$TAP_N" && ln -s "$GK_SCRATCH/d.$TAP_N" "$CK/device0.data"
refused "a data file that is a symbolic link" "device0.data is a symbolic link"

fresh && rm "$CK/host.data"
refused "a missing data file" "host.data is missing"

# Several threads check a large image; the problem named is still the first
# one in manifest order, whichever thread finds which.
fresh --allocs 6 --min-size 6M --max-size 24M --chunk-size 1M
flip_byte "$CK/device0.data" $(($(field "$CK/manifest.json" offset 5) + 100))
flip_byte "$CK/device0.data" $(($(field "$CK/manifest.json" offset 3) + 3 * 1048576 + 17))
refused "two bad chunks in a large image: the first is named" \
	"checksum mismatch in allocation 2 ($(field "$CK/manifest.json" address 3)), chunk 3"

# -- ownership --
fresh && chmod g+w "$CK/device0.data"
refused "a data file writable by its group" "device0.data is writable by its group (mode 0620)"

fresh && chmod o+w "$CK"
refused "a checkpoint directory writable by others" "the directory is writable by others (mode 0702)"

if [ "$(id -u)" -eq 0 ]; then
	fresh && chown nobody "$CK/host.data"
	refused "a data file owned by another user" "host.data is owned by nobody (uid 65534), not by root (uid 0)"
	fresh
	refused "a checkpoint of another user (--owner nobody)" \
		"manifest.json names root (uid 0) as its writer, not nobody (uid 65534)" --owner nobody
else
	tap_skip "changing a file's owner needs root"
	tap_skip "--owner another user needs root"
fi

# -- the signature --
if [ $munge_ok -eq 1 ]; then
	fresh && sed -i 's/"label": "synthetic"/"label": "synthetix"/' "$CK/manifest.json"
	refused "a manifest edited after signing" \
		"manifest.sig: the manifest was changed after it was signed"
	fresh && echo "MUNGE:bm90IGEgY3JlZGVudGlhbA==:" >"$CK/manifest.sig"
	refused "a signature that is not a Munge credential" \
		"manifest.sig: the signature is not a valid Munge credential"
	fresh && munge "${munge_args[@]}" -n >"$CK/manifest.sig"
	refused "a Munge credential that is not a manifest signature" \
		"the signature is not a gpuckpt manifest signature"
else
	tap_skip "munged is not reachable (munge -n | unmunge failed): cannot sign"
	tap_skip "munged is not reachable: cannot check a credential"
	tap_skip "munged is not reachable: cannot make a credential"
fi

if [ $munge_ok -eq 1 ] && [ "$(id -u)" -eq 0 ]; then
	fresh
	payload="gpuckpt-manifest-sha256:$(sha256sum "$CK/manifest.json" | cut -c1-64)"
	if command -v runuser >/dev/null; then
		runuser -u nobody -- munge "${munge_args[@]}" -t -1 -s "$payload" >"$CK/manifest.sig"
	else
		setpriv --reuid=65534 --regid=65534 --clear-groups munge "${munge_args[@]}" -t -1 -s "$payload" >"$CK/manifest.sig"
	fi
	refused "a signature made by another user" \
		"manifest.sig: the manifest was signed by nobody (uid 65534), not by root (uid 0)"
else
	tap_skip "signing as user nobody needs root and a reachable munged"
fi

fresh --unsigned
refused "an unsigned checkpoint with --require-signature" \
	"manifest.json is not signed, and a signature is required" --require-signature

# -- the command line --
usage_error "an unknown command" "unknown command 'frobnicate'" frobnicate
usage_error "no command" "missing a command" 
usage_error "verify without a directory" "verify: missing the checkpoint directory DIR" verify
usage_error "inspect without a directory" "inspect: missing the checkpoint directory DIR" inspect
usage_error "prune without --keep" "prune: missing --keep N" prune "$GK_SCRATCH"
usage_error "prune --keep abc" "prune: --keep 'abc': expected a whole number" prune --keep abc "$GK_SCRATCH"
usage_error "prune --keep 0" "prune: --keep '0'" prune --keep 0 "$GK_SCRATCH"
usage_error "prune --keep with no value" "prune: option '--keep' needs a value" prune "$GK_SCRATCH" --keep
usage_error "an unknown option" "verify: unknown option '--frob'" verify --frob "$GK_SCRATCH"
usage_error "--owner of a user that does not exist" "verify: --owner: no such user 'no_such_user_gk'" \
	verify --owner no_such_user_gk "$GK_SCRATCH"

tap_done
