#!/bin/bash
# include-cycles.sh - the runtime's modules only include downwards (issue 13):
# runtime/ has no circle of #include "..." between modules, where a module is
# a .c/.h pair (arena.c and arena.h are one) and an include is followed only
# when it names a file of the tree (beside the includer, or a header name
# that is unique in the tree; system and generated headers are left out).
# A circle is printed, each step with the line that makes it, so that the
# layer that reaches back up is found from the message alone.
#
# Shell and awk only: it runs wherever `make check` does. Also a tool:
#   tests/runtime/include-cycles.sh --list DIR    prints DIR's cycles, exit 1 if any
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"

# include_cycles DIR: run in the folder above DIR; prints one line per
# circle found ("a -> b -> a"), each step followed by its evidence.
include_cycles() {
	local dir=$1 files
	files=$(find "$dir" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) | LC_ALL=C sort)
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
	function edge(from, to, why) {
		if (from == to || ((from, to) in seen)) return
		seen[from, to] = 1
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
	$1 == "F" {
		f = $2; isfile[f] = 1; m = module(f)
		if (!(m in known)) { known[m] = 1; order[++nmod] = m }
		if (f ~ /\.h$/) { b = base(f); nhdr[b]++; hdr[b] = m }
		next
	}
	$1 == "I" {
		line = substr($0, 3); f = line; sub(/:.*/, "", f)
		inc = line; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
		cand = normal(dirof(f) "/" inc)
		if (cand in isfile) to = module(cand)
		else if (nhdr[base(inc)] == 1) to = hdr[base(inc)]
		else next
		edge(module(f), to, f ": #include \"" inc "\"")
	}
	END {
		for (k = 1; k <= nmod; k++)
			if (color[order[k]] == 0) dfs(order[k])
		exit cycles > 0
	}'
}

if [ "${1:-}" = --list ]; then
	include_cycles "${2:-runtime}"
	exit
fi

gk_scratch
tap_plan 3

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

found=$(cd "$top_srcdir" && include_cycles runtime)
rc=$?
if [ "$rc" -eq 0 ] && [ -z "$found" ]; then
	tap_ok "runtime/: no module includes one above it (no #include circle)"
else
	tap_not_ok "runtime/: no module includes one above it (no #include circle)"
	tap_diag "$found"
fi
tap_done
