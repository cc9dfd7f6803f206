#!/bin/bash
# list-messages.sh - every message that the runtime (runtime/core, image,
# common, mpi), the shepherd (runtime/shepherd) and the Slurm plugin with its
# helpers (spank-plugin/) print at warning level or above, read from the
# sources. A message is the format string (adjacent literals joined, escapes
# as written; GK_ENV(X) as GPUCKPT_X, GK_CKPT_FMT as ckpt.N) of:
#   gk_warn(), gk_error(), slurm_error()
#   the plugin's tell(TELL_ERROR|TELL_FATAL, ...) and
#   tell_task(TELL_ERROR|TELL_FATAL|TELL_LOG_ERROR, ids, step, ...)
#   fprintf(stderr, ...) and dprintf(FD, ...) whose text starts "gpuckpt"
#   libgpuckpt-mpi's say() (runtime/mpi/: its errors)
#   the signal handler's raw_line()/raw_line5() that say no checkpoint was
#   taken (each argument that is not a literal as %s)
# One line each, "PART<TAB>FORMAT", sorted, no duplicates.
# docs/troubleshooting.md has an entry for each; tests/docs/messages.sh
# checks that it does.
# Usage: docs/list-messages.sh [SOURCE_ROOT]
top=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$top" || exit 1
find runtime/core runtime/image runtime/common runtime/mpi runtime/shepherd spank-plugin \
	-name '*.[ch]' | LC_ALL=C sort | xargs perl -0777 -ne '
	my $part = $ARGV =~ m{^runtime/shepherd/} ? "shepherd" : $ARGV =~ m{^spank-plugin/} ? "plugin" : "runtime";
	my $src = $_;
	$src =~ s{/\*.*?\*/}{}gs;
	$src =~ s{//[^\n]*}{}g;
	# The arguments of the call that starts at pos: top-level commas split.
	sub args {
		my ($s, $i) = @_;
		my ($depth, $cur, @a) = (1, "");
		while ($i < length $s) {
			my $c = substr($s, $i, 1);
			if ($c eq "\"") {
				my ($lit) = substr($s, $i) =~ /^("(?:[^"\\]|\\.)*")/;
				$cur .= $lit; $i += length $lit; next;
			}
			if ($c eq "\x27") {
				my ($lit) = substr($s, $i) =~ /^(\x27(?:[^\x27\\]|\\.)*\x27)/;
				$cur .= $lit; $i += length $lit; next;
			}
			$depth++ if $c eq "(";
			$depth-- if $c eq ")";
			last if $depth == 0;
			if ($c eq "," && $depth == 1) { push @a, $cur; $cur = ""; $i++; next }
			$cur .= $c; $i++;
		}
		push @a, $cur;
		s/^\s+|\s+$//g for @a;
		return @a;
	}
	# A format argument as text, or undef when it is not literals and macros.
	sub fmt {
		my ($a) = @_;
		my $mac = qr/[A-Z][A-Z0-9_]*(?:\([A-Z0-9_]*\))?/;
		return undef unless $a =~ /^(?:"(?:[^"\\]|\\.)*"|$mac)(?:\s*(?:"(?:[^"\\]|\\.)*"|$mac))*$/ && $a =~ /"/;
		my $f = "";
		while ($a =~ /\G\s*(?:"((?:[^"\\]|\\.)*)"|($mac))/gc) {
			if (defined $1) { $f .= $1; next }
			my $m = $2;
			if ($m =~ /^GK_ENV\((\w+)\)$/) { $f .= "GPUCKPT_$1" }
			elsif ($m eq "GK_CKPT_FMT") { $f .= "ckpt.N" }
			else { $f .= "{$m}" }
		}
		return $f;
	}
	while ($src =~ /\b(gk_warn|gk_error|slurm_error|tell|tell_task|fprintf|dprintf|raw_line5?|say)\s*\(/g) {
		my ($fn, $at) = ($1, pos $src);
		next if substr($src, $-[0] - 1, 1) =~ /[\w.>]/;   # a member or another name
		my @a = args($src, $at);
		my $f;
		if ($fn =~ /^(gk_warn|gk_error|slurm_error)$/) { $f = fmt($a[0]) }
		elsif ($fn eq "say") { $f = fmt($a[0]) if $ARGV =~ m{^runtime/mpi/} }
		elsif ($fn eq "tell") { $f = fmt($a[1]) if $a[0] =~ /^TELL_(ERROR|FATAL)$/ }
		elsif ($fn eq "tell_task") { $f = fmt($a[3]) if $a[0] =~ /^TELL_(ERROR|FATAL|LOG_ERROR)$/ }
		elsif ($fn eq "fprintf") { $f = fmt($a[1]) if $a[0] eq "stderr" }
		elsif ($fn eq "dprintf") { $f = fmt($a[1]) }
		elsif ($fn =~ /^raw_line/) {
			next unless @a && $a[0] =~ /^"no checkpoint taken/;
			$f = "checkpoint: " . join "", map { my $t = fmt($_); defined $t ? $t : "%s" } @a;
		}
		next unless defined $f;
		$f =~ s{\\n.*}{}s;             # a printed line ends at its first \n
		next if $fn =~ /printf$/ && $f !~ /^gpuckpt/;
		next if $f eq "%s" || $f eq "";
		print "$part\t$f\n";
	}' | LC_ALL=C sort -u
