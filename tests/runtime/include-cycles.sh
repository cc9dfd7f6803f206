#!/bin/bash
# include-cycles.sh - the product's files only depend downwards (issues 13,
# 26): in runtime/, spank-plugin/ and scheduler-hooks/ there is no circle
#  - of #include "..." between modules, where a module is a .c/.h pair
#    (arena.c and arena.h are one) and an include is followed only when it
#    names a file of the tree: beside the includer, from the top of runtime/
#    ("common/log.h", the one -I of the runtime), from the top of the tree
#    ("spank-plugin/ckpt_dir.h"), or a header name that is unique in the
#    tree; system and generated headers are left out;
#  - of calls between files, read from the built objects: a.c calls b.c when
#    a symbol a.o needs (nm: undefined) is one that b.o defines.
# A circle is printed, each step with what makes it (the include line, or
# the symbols called), so that the file that reaches back up is found from
# the message alone.
#
# Shell, awk and nm only: it runs wherever `make check` does. Also a tool:
#   tests/runtime/include-cycles.sh --list DIR...        include circles, exit 1 if any
#   tests/runtime/include-cycles.sh --calls BUILD DIR... call circles of BUILD's
#                                                        objects of DIR..., exit 1 if any
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"

# The circles of a graph. Input: "N node" lines (the order to start from),
# then "E from to why" lines (why: the rest of the line). Prints one line per
# circle ("a -> b -> a"), each step followed by its evidence; exit 1 if any.
# shellcheck disable=SC2016 # awk's $ fields
CYCLES_AWK='
	function edge(from, to, why) {
		if (from == to) return
		if ((from, to) in seen) {
			# One evidence line per step, the first few reasons in it.
			if (nwhy[from, to]++ < 4) because[from, to] = because[from, to] ", " why
			return
		}
		seen[from, to] = 1; nwhy[from, to] = 1
		out[from, ++nout[from]] = to
		because[from, to] = why
	}
	function dfs(v,   i, w, j, line) {
		color[v] = 1; path[++depth] = v
		for (i = 1; i <= nout[v]; i++) {
			w = out[v, i]
			if (color[w] == 1) {
				for (j = depth; j > 0 && path[j] != w; j--) ;
				line = ""
				for (; j <= depth; j++)
					line = line path[j] " -> "
				print line w
				for (j = depth; j > 0 && path[j] != w; j--) ;
				for (; j <= depth; j++)
					print "    " because[path[j], (j < depth ? path[j + 1] : w)]
				cycles++
			} else if (color[w] == 0) {
				dfs(w)
			}
		}
		depth--; color[v] = 2
	}
	$1 == "N" { if (!($2 in known)) { known[$2] = 1; order[++n] = $2 }; next }
	$1 == "E" { why = $0; sub(/^E [^ ]+ [^ ]+ /, "", why); edge($2, $3, why); next }
	END {
		for (k = 1; k <= n; k++)
			if (color[order[k]] == 0) dfs(order[k])
		exit cycles > 0
	}'

# include_cycles DIR...: run in the folder above the DIRs (the top of the
# tree); prints one line per circle found ("a -> b -> a"), each step followed
# by its evidence.
include_cycles() {
	local files
	files=$(find "$@" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.def' \) |
		LC_ALL=C sort)
	[ -n "$files" ] || return 0
	# Input: the file list, then "file:line" for every quoted include.
	{
		printf '%s\n' "$files" | sed 's/^/F /'
		# shellcheck disable=SC2086 # one word per file name: the tree's names have no spaces
		grep -H -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' $files | sed 's/^/I /'
	} | awk '
	function module(path) { sub(/\.(c|h|cu)$/, "", path); return path }
	function base(path) { sub(/.*\//, "", path); return path }
	function dirof(path) { if (path !~ /\//) return "."; sub(/\/[^\/]*$/, "", path); return path }
	# dir/inc with "." and ".." resolved, as a path of the tree would read.
	function normal(path,   n, i, k, part, out) {
		n = split(path, part, "/"); k = 0
		for (i = 1; i <= n; i++) {
			if (part[i] == "" || part[i] == ".") continue
			if (part[i] == ".." && k > 0 && stack_p[k] != "..") { k--; continue }
			stack_p[++k] = part[i]
		}
		out = ""
		for (i = 1; i <= k; i++) out = out (i > 1 ? "/" : "") stack_p[i]
		return out
	}
	$1 == "F" {
		f = $2; isfile[f] = 1; m = module(f)
		if (!(m in known)) { known[m] = 1; print "N " m }
		if (f ~ /\.h$/) { b = base(f); nhdr[b]++; hdr[b] = m }
		next
	}
	$1 == "I" {
		line = substr($0, 3); f = line; sub(/:.*/, "", f)
		inc = line; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
		if ((cand = normal(dirof(f) "/" inc)) in isfile) to = module(cand)
		else if ((cand = normal("runtime/" inc)) in isfile) to = module(cand)
		else if ((cand = normal(inc)) in isfile) to = module(cand)
		else if (inc !~ /\// && nhdr[inc] == 1) to = hdr[inc]
		else next
		print "E " module(f) " " to " " f ": #include \"" inc "\""
	}' | awk "$CYCLES_AWK"
}

# call_cycles BUILD DIR...: the circles of calls between the source files of
# the objects built under BUILD/DIR... (run in the top of the source tree, so
# that the files are named as in the tree). An object is named after its
# source, with automake's "target-" prefix: .../.libs/libgkcore_la-arena.o is
# DIR/arena.c; objects of sources that are no longer there are left out.
# Symbols defined by more than one file (main, or a source built
# into two libraries) are edges to each.
call_cycles() {
	local build=$1 o rel src name
	shift
	for d in "$@"; do
		[ -d "$build/$d" ] && find "$build/$d" -name '*.o' -type f
	done | LC_ALL=C sort | while read -r o; do
		rel=${o#"$build"/}
		name=${rel##*/}
		name=${name%.o}
		name=${name#*-}
		rel=${rel%/*}
		rel=${rel%/.libs}
		src=
		for ext in c cu; do
			[ -e "$rel/$name.$ext" ] && { src=$rel/$name.$ext; break; }
		done
		# A generated source (the embedded kernel): named as in the build.
		# An object whose source is gone (a file moved since) is left out.
		if [ -z "$src" ]; then
			[ -e "$build/$rel/$name.c" ] || continue
			src=$rel/$name.c
		fi
		nm -P "$o" 2>/dev/null | awk -v src="$src" '
			$2 == "U" || $2 == "w" { print "U " src " " $1; next }
			$2 ~ /^[TDBRVWGS]$/ { print "D " src " " $1 }'
	done | awk '
	$1 == "D" { if (!(($3, $2) in has)) { has[$3, $2] = 1; def[$3] = def[$3] " " $2 }
		if (!($2 in known)) { known[$2] = 1; print "N " $2 }; next }
	$1 == "U" { if (!($2 in known)) { known[$2] = 1; print "N " $2 }
		if (!(($2, $3) in need)) { need[$2, $3] = 1; nu++; uf[nu] = $2; us[nu] = $3 } }
	END {
		for (i = 1; i <= nu; i++) {
			n = split(def[us[i]], to, " ")
			for (k = 1; k <= n; k++)
				print "E " uf[i] " " to[k] " " uf[i] " calls " us[i] "() of " to[k]
		}
	}' | awk "$CYCLES_AWK"
}

# The product's folders.
PRODUCT="runtime spank-plugin scheduler-hooks"

if [ "${1:-}" = --list ]; then
	shift
	# shellcheck disable=SC2086 # the folders, one word each
	[ $# -gt 0 ] || set -- $PRODUCT
	include_cycles "$@"
	exit
fi
if [ "${1:-}" = --calls ]; then
	b=$2
	shift 2
	# shellcheck disable=SC2086 # the folders, one word each
	[ $# -gt 0 ] || set -- $PRODUCT
	call_cycles "$b" "$@"
	exit
fi

gk_scratch
tap_plan 6

# The check itself, on a tree made to hold one circle (a.c includes b.h, b.c
# includes "../x/a.h") and one module that only includes downwards: it must
# find the circle, name both steps, and leave the leaf out of it.
mkdir -p "$GK_SCRATCH/t/x" "$GK_SCRATCH/t/y"
printf '#include "b.h"\n#include "../y/leaf.h"\n' > "$GK_SCRATCH/t/x/a.c"
printf '#include "leaf.h"\n' > "$GK_SCRATCH/t/x/a.h"
printf '#include "../x/a.h"\n' > "$GK_SCRATCH/t/y/b.c"
: > "$GK_SCRATCH/t/y/b.h"
printf '#include <stdio.h>\n#include "config.h"\n' > "$GK_SCRATCH/t/y/leaf.h"
found=$(cd "$GK_SCRATCH" && include_cycles t)
rc=$?
if [ "$rc" -ne 0 ] && grep -qx 't/x/a -> t/y/b -> t/x/a' <<<"$found" &&
	grep -q 't/x/a.c: #include "b.h"' <<<"$found" &&
	grep -q 't/y/b.c: #include "../x/a.h"' <<<"$found" && ! grep -q 'leaf ->' <<<"$found"; then
	tap_ok "the check finds a circle made on purpose and names the includes that make it"
else
	tap_not_ok "the check finds a circle made on purpose and names the includes that make it"
	tap_diag "exit $rc, printed: $found"
fi

found=$(cd "$GK_SCRATCH" && rm -f t/y/b.c && include_cycles t)
rc=$?
check "and finds none once the include that ran back up is gone (exit $rc, ${found:-nothing printed})" \
	test "$rc" -eq 0 -a -z "$found"

# The same for calls, on objects made to hold one circle of three files
# (a.c calls b.c, b.c calls c.c, c.c calls a.c) and a leaf that a.c calls.
mkdir -p "$GK_SCRATCH/s/z" "$GK_SCRATCH/b/s/z/.libs"
printf 'int b1(void);\nint leaf(void);\nint a1(void) { return b1() + leaf(); }\n' > "$GK_SCRATCH/s/z/a.c"
printf 'int c1(void);\nint b1(void) { return c1(); }\n' > "$GK_SCRATCH/s/z/b.c"
printf 'int a1(void);\nint c1(void) { return a1(); }\n' > "$GK_SCRATCH/s/z/c.c"
printf 'int leaf(void) { return 1; }\n' > "$GK_SCRATCH/s/z/leaf.c"
for f in a b c leaf; do
	"${CC:-cc}" -c -o "$GK_SCRATCH/b/s/z/.libs/libx_la-$f.o" "$GK_SCRATCH/s/z/$f.c"
done
found=$(cd "$GK_SCRATCH" && call_cycles b s)
rc=$?
if [ "$rc" -ne 0 ] && grep -qx 's/z/a.c -> s/z/b.c -> s/z/c.c -> s/z/a.c' <<<"$found" &&
	grep -q 's/z/c.c calls a1() of s/z/a.c' <<<"$found" && ! grep -q 'leaf.c ->' <<<"$found"; then
	tap_ok "the check finds a circle of calls made on purpose and names the functions called"
else
	tap_not_ok "the check finds a circle of calls made on purpose and names the functions called"
	tap_diag "exit $rc, printed: $found"
fi
printf 'int c1(void) { return 3; }\n' > "$GK_SCRATCH/s/z/c.c"
"${CC:-cc}" -c -o "$GK_SCRATCH/b/s/z/.libs/libx_la-c.o" "$GK_SCRATCH/s/z/c.c"
found=$(cd "$GK_SCRATCH" && call_cycles b s)
rc=$?
check "and finds none once the call that ran back up is gone (exit $rc, ${found:-nothing printed})" \
	test "$rc" -eq 0 -a -z "$found"

# shellcheck disable=SC2086 # the folders, one word each
found=$(cd "$top_srcdir" && include_cycles $PRODUCT)
rc=$?
if [ "$rc" -eq 0 ] && [ -z "$found" ]; then
	tap_ok "$PRODUCT: no module includes one above it (no #include circle)"
else
	tap_not_ok "$PRODUCT: no module includes one above it (no #include circle)"
	tap_diag "$found"
fi

# The build's objects: make check builds them all before any test runs.
gk_need_built "$top_builddir/runtime/.libs/libgpuckpt.so" "$top_builddir/spank-plugin/.libs/spank_gpuckpt.so" \
	"$top_builddir/scheduler-hooks/gpuckpt-stage"
# shellcheck disable=SC2086 # the folders, one word each
found=$(cd "$top_srcdir" && call_cycles "$top_builddir" $PRODUCT)
rc=$?
if [ "$rc" -eq 0 ] && [ -z "$found" ]; then
	tap_ok "$PRODUCT: no file calls one that calls it back (no circle of calls)"
else
	tap_not_ok "$PRODUCT: no file calls one that calls it back (no circle of calls)"
	tap_diag "$found"
fi
tap_done
