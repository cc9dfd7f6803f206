#!/bin/bash
# links.sh - README.md and docs/*.md point only at what exists: every
# relative link's file (and its #anchor, a heading of that file), and every
# repository file or folder they name in backquotes (`runtime/image/FORMAT.md`,
# `tests/slurm/`, `benchmarks/results/flush-*.md`).
# Usage: links.sh [FILE.md...] (default: README.md and docs/*.md).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"
cd "$top_srcdir" || exit 1
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(README.md docs/*.md)

# GitHub's anchor of a heading: lower case, punctuation but - and _ dropped,
# spaces to -.
anchors() {
	sed -n 's/^#\{1,6\} \(.*\)$/\1/p' "$1" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9 _-]//g; s/ /-/g'
}
# A path relative to FILE's folder, made relative to the top.
resolve() {
	local dir=${1%/*}
	[ "$dir" = "$1" ] && dir=.
	realpath -m --relative-to=. "$dir/$2"
}

nlinks=0 nrefs=0
for f in "${files[@]}"; do
	[ -f "$f" ] || { tap_not_ok "$f exists"; continue; }
	# [text](target): the targets that are not URLs.
	bad="" badanchor=""
	while read -r t; do
		case $t in http://* | https://* | mailto:*) continue ;; esac
		nlinks=$((nlinks + 1))
		path=${t%%#*} anchor=
		[[ $t == *#* ]] && anchor=${t#*#}
		if [ -z "$path" ]; then target=$f; else target=$(resolve "$f" "$path"); fi
		if [ ! -e "$target" ]; then bad+=" $t"; continue; fi
		if [ -n "$anchor" ] && ! anchors "$target" | grep -qxF "$anchor"; then
			badanchor+=" $t"
		fi
	done < <(grep -oE '\]\([^) ]+\)' "$f" | sed 's/^](//; s/)$//')
	check "$f: every link's file exists${bad:+ (missing:$bad)}" [ -z "$bad" ]
	check "$f: every link's #anchor is a heading there${badanchor:+ (missing:$badanchor)}" [ -z "$badanchor" ]
	# `path` in backquotes under a top folder of the repository.
	bad=""
	while read -r p; do
		nrefs=$((nrefs + 1))
		p=${p%%:*}
		p=${p%,}
		# A glob (benchmarks/results/flush-*.md) must match something; a
		# name with a placeholder in capitals (tests/slurm/e2e-NAME.sh,
		# the file's .in, a built program's .c or .cu) counts.
		compgen -G "$p" >/dev/null || compgen -G "$p.in" >/dev/null || compgen -G "$p.c*" >/dev/null ||
			compgen -G "$(sed -E 's/[A-Z][A-Z_]{2,}/*/g' <<<"$p")" >/dev/null || bad+=" $p"
	done < <(grep -oE '`(runtime|spank-plugin|scheduler-hooks|tests|benchmarks|etc|examples|man|debian|docs|build-aux|m4|\.ci)/[^` <>]*`' "$f" |
		tr -d '`' | sort -u)
	check "$f: every repository file it names exists${bad:+ (missing:$bad)}" [ -z "$bad" ]
done
check "the links and names were read ($nlinks links, $nrefs names)" [ "$nlinks" -gt 0 ] && [ "$nrefs" -gt 0 ]
tap_plan "$TAP_N"
tap_done
