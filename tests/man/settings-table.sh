#!/bin/bash
# settings-table.sh - runtime/common/settings.def is the one list of gpuckpt's
# settings, and everything else agrees with it:
#  - gpuckpt.conf(5) has every gpuckpt.conf key, and states its default;
#  - spank-gpuckpt(8) has every plugstack.conf argument, states its default,
#    and names every variable the plugin sets in a task;
#  - docs/users.md's settings table lists the rows flagged for it, with their
#    defaults, and nothing the table does not have;
#  - the product's sources spell no GPUCKPT_ variable as a string (they use
#    GK_ENV(ID)), read none with getenv("GPUCKPT_...") (they use gk_getenv(ID),
#    generated from the table), and name no variable the table lacks.
# The table is read through tests/common/settings-dump (settings.def compiled).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"

DUMP=$top_builddir/tests/common/settings-dump
gk_need_built "$DUMP"
MAN=$top_srcdir/man
README=$top_srcdir/docs/users.md
gk_scratch
TABLE=$GK_SCRATCH/table
"$DUMP" >"$TABLE"
check "settings-dump prints the table ($(wc -l <"$TABLE") rows)" [ "$(wc -l <"$TABLE")" -ge 40 ]

# Fields: 1 kind, 2 variable, 3 conf key, 4 plugstack key, 5 flags, 6 type,
# 7 range, 8 default, 9 help; "-" for none.
col() { awk -F'\t' -v c="$1" -v want="$2" '$c != "-" && (want == "" || $5 ~ want) { print $c }' "$TABLE"; }
vars=$(col 2) conf=$(col 3) plug=$(col 4)
dups=$( { echo "$vars"; echo "$conf" | sed 's/^/conf:/'; echo "$plug" | sed 's/^/plug:/'; } | sort | uniq -d)
check "no variable, gpuckpt.conf key or plugstack.conf argument is listed twice${dups:+ ($dups)}" [ -z "$dups" ]
bad=$(awk -F'\t' '$3 != "-" && tolower(substr($2, 9)) != $3 { print $2 "/" $3 }' "$TABLE")
check "each gpuckpt.conf key is its variable in lower case without GPUCKPT_${bad:+ ($bad)}" [ -z "$bad" ]

# The text of a man page's item: from the line that starts it (.B KEY, or
# .BR KEY =...) to the next .TP/.PP/.SH, roff's font requests taken out, on
# one line.
item() {
	awk -v re="$2" '
		/^\.(TP|PP|SH|SS)/ { if (on) exit; next }
		$0 ~ re { on = 1 }
		on { line = $0
			if (line ~ /^\.[A-Z]+ /) { sub(/^\.[A-Z]+ /, "", line); gsub(/"/, "", line) }
			gsub(/\\-/, "-", line); gsub(/\\f[BIRP]/, "", line); gsub(/\\\(dq/, "\"", line)
			printf "%s ", line }' "$MAN/$1"
}
# A default worth looking for in prose: a word, a number, a size, a list.
simple() { [[ $1 =~ ^[A-Za-z0-9.:,%]+$ ]]; }
# states_default TEXT VALUE: TEXT says VALUE is the default.
states_default() {
	local w=${2//./\\.}
	grep -qE "([Dd]efault:?|[Dd]efault is|runtime's,) $w([^A-Za-z0-9_]|$)|(^|[^A-Za-z0-9_])$w,? \(?the default" <<<"$1"
}

# gpuckpt.conf(5): every key an item or a name; the default of each item.
missing="" wrong=""
while IFS=$'\t' read -r kind var key _ flags _ _ dflt _; do
	[ "$key" = - ] && continue
	if ! grep -qE "^\.BR? $key( |,|$)" "$MAN/gpuckpt.conf.5"; then
		missing+=" $key"
		continue
	fi
	text=$(item gpuckpt.conf.5 "^\\.B $key\$")
	[ -n "$text" ] && [ "$dflt" != - ] && simple "$dflt" && ! states_default "$text" "$dflt" &&
		wrong+=" $key=$dflt"
done <"$TABLE"
check "gpuckpt.conf(5) documents every gpuckpt.conf key of the table${missing:+ (missing:$missing)}" [ -z "$missing" ]
check "gpuckpt.conf(5) states each key's default as the table has it${wrong:+ (not:$wrong)}" [ -z "$wrong" ]

# spank-gpuckpt(8): every plugstack.conf argument an item KEY=, with its
# default; every variable the plugin sets in a task in ENVIRONMENT.
missing="" wrong=""
while IFS=$'\t' read -r kind var _ key flags _ _ dflt _; do
	[ "$key" = - ] && continue
	text=$(item spank-gpuckpt.8 "^\\.BR $key =")
	if [ -z "$text" ]; then
		missing+=" $key"
		continue
	fi
	[ "$dflt" != - ] && simple "$dflt" && ! states_default "$text" "$dflt" && wrong+=" $key=$dflt"
done <"$TABLE"
check "spank-gpuckpt(8) documents every plugstack.conf argument of the table${missing:+ (missing:$missing)}" [ -z "$missing" ]
check "spank-gpuckpt(8) states each argument's default as the table has it${wrong:+ (not:$wrong)}" [ -z "$wrong" ]
envsec=$(sed -n '/^\.SH ENVIRONMENT/,/^\.SH /p' "$MAN/spank-gpuckpt.8" | sed 's/\\-/-/g')
missing=""
for v in $(col 2 t); do
	grep -qE "(^|[^A-Z_])$v([^A-Z_]|$)" <<<"$envsec" || missing+=" $v"
done
check "spank-gpuckpt(8) ENVIRONMENT names every variable the plugin sets in a task${missing:+ (missing:$missing)}" [ -z "$missing" ]

# docs/users.md's settings table: the lines of its table under "Settings"
# that start with | `GPUCKPT_.
norm() { # a size as bytes, anything else as it is
	local v=$1 n m
	if [[ $v =~ ^(0x[0-9a-fA-F]+|[0-9]+)([KMGT]?)$ ]]; then
		n=$((${BASH_REMATCH[1]}))
		case ${BASH_REMATCH[2]} in K) m=10 ;; M) m=20 ;; G) m=30 ;; T) m=40 ;; *) m=0 ;; esac
		echo $((n << m))
	else
		echo "$v"
	fi
}
rows=$(grep -E '^\| `GPUCKPT_[A-Z_]+`' "$README")
check "docs/users.md has a settings table ($(wc -l <<<"$rows") rows)" [ "$(wc -l <<<"$rows")" -ge 15 ]
missing="" wrong="" extra=""
while IFS=$'\t' read -r kind var _ _ flags _ _ dflt _; do
	[[ $flags == *r* ]] || continue
	line=$(grep -E "^\| [^|]*\`$var\`" <<<"$rows" | head -1)
	if [ -z "$line" ]; then
		missing+=" $var"
		continue
	fi
	# The variables of the row and their defaults, in the same order.
	names=($(cut -d'|' -f2 <<<"$line" | grep -o 'GPUCKPT_[A-Z_]*'))
	cell=$(cut -d'|' -f3 <<<"$line" | sed 's/^ *//')
	vals=($(grep -o '`[^`]*`' <<<"$cell" | tr -d '`'))
	[[ $cell == '`'* ]] || vals=()
	want=$([ "$dflt" = - ] && echo none || norm "$dflt")
	got=""
	for i in "${!names[@]}"; do
		[ "${names[$i]}" = "$var" ] || continue
		if [ "${#names[@]}" -gt 1 ]; then got=$(norm "${vals[$i]}")
		elif [ "${#vals[@]}" -gt 0 ]; then got=$(norm "${vals[0]}")
		else got=$(sed 's/^ *//; s/ .*//' <<<"$cell"); fi
	done
	[ "$got" = "$want" ] || wrong+=" $var=$got(table: $dflt)"
done <"$TABLE"
for v in $(cut -d'|' -f2 <<<"$rows" | grep -o 'GPUCKPT_[A-Z_]*'); do
	awk -F'\t' -v v="$v" '$2 == v && $5 ~ /r/ { f = 1 } END { exit !f }' "$TABLE" || extra+=" $v"
done
check "docs/users.md's settings table lists each row flagged for it${missing:+ (missing:$missing)}" [ -z "$missing" ]
check "docs/users.md's settings table gives each default as the table has it${wrong:+ (not:$wrong)}" [ -z "$wrong" ]
check "docs/users.md's settings table lists nothing the table lacks or does not flag for it${extra:+ ($extra)}" [ -z "$extra" ]

# The sources.
cd "$top_srcdir" || exit 1
srcs=$(git ls-files runtime spank-plugin scheduler-hooks benchmarks 2>/dev/null | grep -E '\.(c|h)$' |
	grep -vE '^runtime/common/settings(\.def|_env\.h)$')
[ -n "$srcs" ] || srcs=$(find runtime spank-plugin scheduler-hooks benchmarks -name '*.[ch]' |
	grep -vE '^runtime/common/settings(\.def|_env\.h)$')
# The string literals of a C file, comments dropped (GCC's preprocessor,
# macros left alone), as FILE:LITERAL lines.
CPP_ONLY=$(command -v gcc || command -v cpp)
literals() {
	local f
	for f in "$@"; do
		"$CPP_ONLY" -fpreprocessed -dD -E -P -x c "$f" 2>/dev/null |
			grep -oE '"([^"\\]|\\.)*"' | sed "s|^|$f:|"
	done
}
probe=$(literals spank-plugin/container_env.c)
check "the scan reads a file's strings and not its comments (container_env.c)" \
	bash -c 'grep -q "\"SLURM_JOB_ID\"" <<<"$1" && ! grep -q "Not set for this task" <<<"$1"' _ "$probe"
lits=$(literals $srcs | grep -E '"[^"]*GPUCKPT_[A-Z]' || true)
spelled=""
for v in $vars; do
	hits=$(grep -E "[^A-Z_]$v([^A-Z_]|\$)" <<<"$lits" | cut -d: -f1 | sort -u)
	for f in $hits; do
		spelled+=" $f:$v"
	done
done
check "no product source spells a table variable as a string (GK_ENV(ID) instead)${spelled:+ (${spelled# })}" [ -z "$spelled" ]
reads=$(grep -nE '(secure_)?getenv\("GPUCKPT_' $srcs || true)
check "no getenv(\"GPUCKPT_...\") outside the code generated from the table${reads:+ ($reads)}" [ -z "$reads" ]
unknown=""
for id in $(grep -ohE '\b(GK_ENV|gk_getenv)\([A-Z_]+\)' $srcs | sed -E 's/.*\(([A-Z_]+)\)/\1/' | sort -u); do
	grep -qx "GPUCKPT_$id" <<<"$vars" || unknown+=" $id"
done
check "every GK_ENV(ID) and gk_getenv(ID) names a row of the table${unknown:+ (not:$unknown)}" [ -z "$unknown" ]

tap_plan "$TAP_N"
tap_done
