#!/bin/bash
# list-messages.sh - every message that the runtime (runtime/core, image,
# common, mpi), the shepherd (runtime/shepherd) and the Slurm plugin
# (spank-plugin/) print at warning level or above, read from the sources:
# the format strings of gk_warn(), gk_error() and slurm_error() calls
# (adjacent string literals joined, escapes as written). One line each,
# "PART<TAB>FORMAT", sorted, no duplicates. docs/troubleshooting.md has an
# entry for each; tests/docs/messages.sh checks that it does.
# Usage: docs/list-messages.sh [SOURCE_ROOT]
top=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$top" || exit 1
part() {
	case $1 in
	runtime/shepherd/*) echo shepherd ;;
	spank-plugin/*) echo plugin ;;
	*) echo runtime ;;
	esac
}
for f in $(find runtime/core runtime/image runtime/common runtime/mpi runtime/shepherd spank-plugin \
	-name '*.[ch]' | sort); do
	p=$(part "$f")
	perl -0777 -ne '
		s{/\*.*?\*/}{}gs;          # comments out
		s{//[^\n]*}{}g;
		my $lit = qr/"(?:[^"\\]|\\.)*"/;
		my $mac = qr/[A-Z][A-Z0-9_]*(?:\([A-Z0-9_]*\))?/;
		while (/\b(?:gk_warn|gk_error|slurm_error)\s*\(\s*((?:$lit|$mac)(?:\s*(?:$lit|$mac))*)/g) {
			my $s = $1;
			next unless $s =~ /^"/;
			my $fmt = "";
			while ($s =~ /\G\s*(?:"((?:[^"\\]|\\.)*)"|($mac))/gc) {
				if (defined $1) { $fmt .= $1; next }
				my $m = $2;
				if ($m =~ /^GK_ENV\((\w+)\)$/) { $fmt .= "GPUCKPT_$1" }
				elsif ($m eq "GK_CKPT_FMT") { $fmt .= "ckpt.N" }
				else { $fmt .= "{$m}" }
			}
			print "'"$p"'\t$fmt\n";
		}' "$f"
done | LC_ALL=C sort -u
