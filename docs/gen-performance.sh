#!/bin/bash
# gen-performance.sh - the tables of docs/performance.md, generated from the
# newest files of benchmarks/results/ (newest by the date in the file's name,
# <kind>-<machine>-YYYYMMDD-HHMMSS): the workloads (benchmarks/run), the
# throughput benchmark, the per-call cost, transparent mode, the flush and
# compression. Nothing here is typed by hand: rerun it after a new result is
# committed, and tests/docs/performance.sh fails until the doc has its output.
#   docs/gen-performance.sh            print the generated block
#   docs/gen-performance.sh --update   replace it in docs/performance.md
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
R=$top/benchmarks/results

# newest FILES...: the one whose name ends in the latest YYYYMMDD-HHMMSS.
newest() {
	local f
	for f in "$@"; do
		[ -e "$f" ] || continue
		printf '%s\t%s\n' "$(grep -oE '[0-9]{8}-[0-9]{6}' <<<"${f##*/}" | tail -1)" "$f"
	done | LC_ALL=C sort | tail -1 | cut -f2
}
name() { echo "\`benchmarks/results/${1##*/}\`"; }

CSVFN='function csv(line, f,   n, c, i, q, cur) {
		n = 0; cur = ""; q = 0
		for (i = 1; i <= length(line); i++) {
			c = substr(line, i, 1)
			if (q) { if (c == "\"") { if (substr(line, i + 1, 1) == "\"") { cur = cur c; i++ } else q = 0 } else cur = cur c }
			else if (c == "\"") q = 1
			else if (c == ",") { f[++n] = cur; cur = "" }
			else cur = cur c
		}
		f[++n] = cur
		return n
	}
'
gen() {
	local w t c tr fl cp f
	# The workload runs: CSVs whose header is benchmarks/run's.
	local runs=()
	for f in "$R"/*.csv; do
		head -1 "$f" | grep -q '^machine,date,gpu,program,' && runs+=("$f")
	done
	w=$(newest "${runs[@]}")
	echo "### Workloads: overhead, checkpoint and restart"
	echo
	echo "From $(name "$w") (\`benchmarks/run\`: each program natively and under the runtime, alternating; then one checkpoint at a random point and one restart)."
	echo
	echo "| program | runs | native median s | runtime median s | overhead % (median) | overhead % (minima) | checkpoint MB | checkpoint s | restore s | restart's checksum |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	awk "$CSVFN"'NR > 1 { csv($0, f)
		printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			f[4], f[6], f[7], f[8], f[9], f[14], (f[23] ~ /^ok/ ? sprintf("%.0f", f[24] / 1e6) : "-"),
			(f[23] ~ /^ok/ ? f[25] : "not taken: " f[23]), (f[27] ~ /^ok/ ? f[29] : "-"),
			(f[23] !~ /^ok/ ? "-" : f[33] == "yes" ? "same" : "DIFFERS")
	}' "$w"
	echo
	echo "GPU: $(awk -F, 'NR == 2 { print $3 }' "$w" | tr -s ' ')."
	echo
	t=$(newest "$R"/throughput-*.csv)
	echo "### Checkpoint and restore throughput"
	echo
	echo "From $(name "$t") (\`benchmarks/throughput\`, medians of the passes; the defaults of the tree measured). Each cell: seconds, GB/s, and the share of the ceiling named where there is one."
	echo
	echo "| measurement | target | 4 GiB | 16 GiB | ceiling |"
	echo "| --- | --- | --- | --- | --- |"
	awk -F, '
	function cell(k) { return (k in s) ? s[k] : "-" }
	NR > 1 && $2 !~ /:/ {
		k = $2 "," $3 "," $1
		v = ($5 != "" ? $5 " s" : sprintf("%.2f GiB written", $4 / 1073741824))
		if ($6 != "") v = v ", " $6 " GB/s"
		if ($9 != "") v = v ", " $9 " %"
		s[k] = v
		if (!(($2 "," $3) in seen)) { seen[$2 "," $3] = 1; order[++n] = $2 "," $3 }
		if ($7 != "") ceil[$2 "," $3] = $7
	}
	END {
		keep["d2h_pinned"]; keep["cuda_start"]; keep["write_parallel"]; keep["write_parallel_wide"]
		keep["read_parallel"]; keep["gpuckpt_checkpoint"]; keep["gpuckpt_restore"]; keep["gpuckpt_restart"]
		keep["check_xxh3"]; keep["check_xxh64"]; keep["gpuckpt_async_pause"]; keep["gpuckpt_incr_pause"]
		keep["gpuckpt_incr_image"]; keep["gpuckpt_incr_restore"]; keep["gpuckpt_async_restart"]
		for (i = 1; i <= n; i++) {
			split(order[i], m, ",")
			if (!(m[1] in keep)) continue
			printf "| `%s` | %s | %s | %s | %s |\n", m[1], (m[2] == "" ? "-" : m[2]),
				cell(order[i] ",4"), cell(order[i] ",16"), ((order[i] in ceil) ? ceil[order[i]] : "-")
		}
	}' "$t"
	echo
	echo "| measurement | what it is |"
	echo "| --- | --- |"
	echo "| \`d2h_pinned\` | the device-to-host copy into pinned memory: the least a checkpoint can pause a program |"
	echo "| \`cuda_start\` | CUDA's own start and the same allocations, without the runtime |"
	echo "| \`write_parallel\`, \`read_parallel\` | the storage itself: 8 writers (readers) moving the state's size; \`_wide\`: 16 |"
	echo "| \`gpuckpt_checkpoint\` | the checkpoint after SIGTERM, written the blocking way, with the defaults |"
	echo "| \`gpuckpt_restore\` | loading a checkpoint, every chunk checked |"
	echo "| \`gpuckpt_restart\` | from the start of \`main\` to the program going on, counting the check of every checksum |"
	echo "| \`check_xxh3\`, \`check_xxh64\` | checking every checksum of a checkpoint: format 3 (XXH3), and the earlier XXH64 |"
	echo "| \`gpuckpt_async_pause\`, \`gpuckpt_async_restart\` | a background checkpoint: the program's pause; a restart from it |"
	echo "| \`gpuckpt_incr_pause\`, \`_image\`, \`_restore\` | an increment with 10 % of the chunks changed: the pause, what it wrote, a restore from it |"
	echo
	c=$(newest "$R"/calls-*.csv)
	echo "### Cost per driver call"
	echo
	echo "From $(name "$c") (\`benchmarks/calls/run\`, nanoseconds per call, back to back)."
	echo
	echo "| call | native ns | runtime ns | added ns |"
	echo "| --- | --- | --- | --- |"
	awk -F, 'NR > 1 { printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }' "$c"
	echo
	tr=$(newest "$R"/transparent-*.csv)
	echo "### Transparent mode: runtime-assisted against driver-only"
	echo
	echo "From $(name "$tr") (\`benchmarks/transparent/run\`; assist \`on\`: the runtime writes device memory, \`off\`: the driver copies it; every word checked after each restore)."
	echo
	echo "| state GiB | assist | run | checkpoint s | restore s | image bytes | words differing | checksum |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
	awk -F, 'NR > 1 { printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $4, $5, $6, $9, $21, $20, $29, ($30 == "yes" ? "same" : "DIFFERS") }' "$tr"
	echo
	for kind in flush compress; do
		f=$(newest "$R"/$kind-*.md)
		[ -n "$f" ] || continue
		echo "### $( [ $kind = flush ] && echo "Flush to shared storage" || echo "Compression of checkpoint data")"
		echo
		echo "From $(name "$f"); its tables as written there:"
		echo
		# The file's tables and the lines that head them, nothing else.
		awk '/^#/ { h = $0; sub(/^#+ */, "", h); next }
		     /^\|/ { if (h != "") { print "**" h "**"; print ""; h = "" } print; intable = 1; next }
		     intable { print ""; intable = 0 }' "$f"
		echo
	done
}

begin='<!-- BEGIN generated by docs/gen-performance.sh: do not edit -->'
end='<!-- END generated -->'
if [ "${1:-}" = --update ]; then
	doc=$top/docs/performance.md
	block=$(mktemp)
	trap 'rm -f "$block"' EXIT
	gen >"$block"
	awk -v b="$begin" -v e="$end" -v blockfile="$block" '
		$0 == b { print; while ((getline l < blockfile) > 0) print l; skip = 1; next }
		$0 == e { skip = 0 }
		!skip' "$doc" >"$doc.new"
	mv "$doc.new" "$doc"
else
	gen
fi
