#!/bin/bash
# documented.sh - the manual pages document what the programs accept: every
# option in the OPTIONS part of each --help (gpuckpt and each of its commands,
# gpuckpt-shepherd, gpuckpt-stage, gpuckpt-bundle), every sbatch/srun option
# the SPANK plugin registers and every plugstack.conf argument it parses, every gpuckpt.conf key
# the runtime parses. The names are taken from the built programs' --help, the
# plugin's option table and the settings table (runtime/common/settings.def,
# through tests/common/settings-dump; settings-table.sh checks the defaults), so
# a new option without a line in its page fails here. Each page renders without groff
# warnings, and `make install` puts all of them into man1, man5 and man8.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
MAN=$top_srcdir/man
SHEPHERD=$top_builddir/runtime/gpuckpt-shepherd
STAGE=$top_builddir/scheduler-hooks/gpuckpt-stage
BUNDLE=$top_builddir/spank-plugin/gpuckpt-bundle
PAGES="gpuckpt.1 gpuckpt.conf.5 spank-gpuckpt.8 gpuckpt-shepherd.8 gpuckpt-stage.8 gpuckpt-bundle.8"
DUMP=$top_builddir/tests/common/settings-dump
gk_need_built "$DUMP"
gk_scratch

# The long options of a --help text: in its option lines (indented, starting
# with '-'), the words up to the first that is neither an option nor a
# placeholder (upper case, or a|b).
help_options() {
	awk '/^ +-/ { for (i = 1; i <= NF; i++) { w = $i
		if (w ~ /^-/) { sub(/,$/, "", w); sub(/=.*/, "", w); if (w ~ /^--/) print w }
		else if (w !~ /^[A-Z]/ && w !~ /\|/) break } }' | sort -u
}

# The page's text with roff's \- as -, so "--opt" can be looked for.
page_text() { sed 's/\\-/-/g' "$MAN/$1"; }

# documents PAGE WORD...: each WORD appears in PAGE, as a whole word.
# documents_as PAGE REGEX WORD...: each WORD appears where REGEX, with @ for
# the word, matches a line of PAGE (for keys that are also common words).
documents() {
	local page=$1
	shift
	documents_as "$page" '(^|[^a-z0-9_-])@([^a-z0-9_-]|$)' "$@"
}
documents_as() {
	local page=$1 re=$2 text missing="" w
	shift 2
	text=$(page_text "$page")
	for w in "$@"; do
		grep -qE -- "${re//@/$w}" <<<"$text" || missing+=" $w"
	done
	[ -z "$missing" ] && return 0
	tap_diag "$page does not document:$missing"
	return 1
}

# Guard against an extraction that finds nothing (and so passes vacuously).
nonempty() { [ $# -gt 0 ] || { tap_diag "no names found"; return 1; }; }

# gpuckpt and each command.
opts=$(("$GK_TOOL" --help; for c in inspect verify list prune checkpoint report; do
	"$GK_TOOL" "$c" --help; done) | help_options)
check "gpuckpt: options found in the --help texts ($(wc -w <<<"$opts"))" nonempty $opts
check "gpuckpt(1) documents every option of every command's --help" documents gpuckpt.1 $opts --help --version
cmds=$("$GK_TOOL" --help | sed -n 's/^    gpuckpt \([a-z]*\).*/\1/p' | sort -u)
check "gpuckpt(1) names every command of gpuckpt --help ($(echo $cmds))" documents gpuckpt.1 $cmds

# gpuckpt-shepherd.
if [ -x "$SHEPHERD" ]; then
	opts=$("$SHEPHERD" --help | help_options)
	check "gpuckpt-shepherd: options found in --help ($(wc -w <<<"$opts"))" nonempty $opts
	check "gpuckpt-shepherd(8) documents every option of its --help" documents gpuckpt-shepherd.8 $opts
	check "gpuckpt-shepherd(8) documents its commands" documents gpuckpt-shepherd.8 probe run restore attach
else
	for _ in 1 2 3; do tap_skip "gpuckpt-shepherd is not built"; done
fi

# gpuckpt-stage.
opts=$("$STAGE" --help | help_options)
check "gpuckpt-stage --help exits 0 and lists options ($(wc -w <<<"$opts"))" nonempty $opts
check "gpuckpt-stage(8) documents every option of its --help" documents gpuckpt-stage.8 $opts
check "gpuckpt-stage(8) documents its commands" documents gpuckpt-stage.8 in out sweep

# gpuckpt-bundle (a script: its usage line names the options).
opts=$("$BUNDLE" --help | grep -o -- '--[a-z][a-z-]*' | sort -u)
check "gpuckpt-bundle --help exits 0 and names options ($(wc -w <<<"$opts"))" nonempty $opts
check "gpuckpt-bundle(8) documents every option of its --help" documents gpuckpt-bundle.8 $opts --help

# The SPANK plugin: the option table and the plugstack.conf parser.
opts=$(sed -n 's/^ *{"\(gpu-checkpoint[a-z-]*\)",.*/--\1/p' "$top_srcdir/spank-plugin/gpuckpt_spank.c")
check "spank plugin: options found in its option table ($(wc -w <<<"$opts"))" nonempty $opts
check "spank-gpuckpt(8) documents every sbatch/srun option" documents spank-gpuckpt.8 $opts
keys=$("$DUMP" | awk -F'\t' '$4 != "-" { print $4 }')
check "spank plugin: plugstack.conf arguments found ($(wc -w <<<"$keys"))" nonempty $keys
check "spank-gpuckpt(8) documents every plugstack.conf argument (an item KEY=)" \
	documents_as spank-gpuckpt.8 '^\.BR @ =' $keys
vars=$(sed -n 's/.*\[env: " GK_ENV(\([A-Z_]*\)) "\].*/GPUCKPT_\1/p' "$top_srcdir/spank-plugin/gpuckpt_spank.c")
check "spank plugin: the options' variables found ($(wc -w <<<"$vars"))" nonempty $vars
check "spank-gpuckpt(8) documents every option's variable" documents spank-gpuckpt.8 $vars

# gpuckpt.conf: the keys of the table, which settings.c parses.
keys=$("$DUMP" | awk -F'\t' '$3 != "-" { print $3 }')
check "runtime: gpuckpt.conf keys found ($(wc -w <<<"$keys"))" nonempty $keys
check "gpuckpt.conf(5) documents every key the runtime accepts (an item or a name)" \
	documents_as gpuckpt.conf.5 '^\.BR? @( |,|$)' $keys
keys=$(sed -n 's/^#\{0,1\}\([a-z_]*\) = .*/\1/p' "$top_srcdir/etc/gpuckpt.conf.in")
check "gpuckpt.conf(5) documents every key of the shipped file" \
	documents_as gpuckpt.conf.5 '^\.BR? @( |,|$)' $keys

# Rendering.
if command -v groff >/dev/null; then
	for p in $PAGES; do
		warnings=$(groff -man -Tutf8 -ww -z "$MAN/$p" 2>&1)
		check "$p renders without warnings" [ -z "$warnings" ]
		[ -z "$warnings" ] || tap_diag "$warnings"
	done
else
	for p in $PAGES; do tap_skip "groff is not installed: $p not rendered"; done
fi

# make install puts them into the man sections.
dest=$GK_SCRATCH/dest
out=$(make -C "$top_builddir/man" install DESTDIR="$dest" 2>&1)
check "make install in man/ succeeds" [ $? -eq 0 ]
[ -d "$dest" ] || tap_diag "$out"
missing=""
for p in $PAGES; do
	[ -f "$(find "$dest" -path "*/man${p##*.}/$p" -print -quit)" ] || missing+=" $p"
done
check "make install: all six pages in their sections${missing:+ (missing:$missing)}" [ -z "$missing" ]

tap_plan "$TAP_N"
tap_done
