#!/bin/bash
# install-paths.sh - `make install` into a scratch DESTDIR: every path the
# installed example plugstack.conf names (plugin, runtime, staging script,
# tool, shepherd folder) is a file or folder that was installed there, the
# runtime's site file is where the runtime looks for it, and nothing names
# the paths of another layout.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"
tap_plan 8
gk_scratch
D=$GK_SCRATCH/root

if ! make -s -C "$top_builddir" install DESTDIR="$D" >"$GK_SCRATCH/install.out" 2>&1; then
	echo "Bail out! make install DESTDIR=$D failed: $(tail -n 5 "$GK_SCRATCH/install.out")"
	exit 1
fi
# The configured folders, as make expands them.
dirs=$(make -s --no-print-directory -C "$top_builddir/etc" -f - print-dirs <<'MK'
include Makefile
print-dirs:
	@echo "sysconfdir=$(sysconfdir) libdir=$(libdir) pkglibexecdir=$(pkglibexecdir) bindir=$(bindir) slurmplugindir=$(slurmplugindir) docdir=$(docdir)"
MK
)
eval "$dirs"
check "make printed the configured folders ($dirs)" [ -n "$sysconfdir" -a -n "$docdir" ]

conf=$D$docdir/plugstack.conf
check "the example plugstack.conf is installed ($docdir/plugstack.conf)" [ -f "$conf" ]
line=$(grep '^required ' "$conf")
plugin=$(awk '{ print $2 }' <<<"$line")
arg() { tr ' ' '\n' <<<"$line" | sed -n "s/^$1=//p"; }
check "its plugin is the installed one ($plugin)" [ -f "$D$plugin" -a "$plugin" = "$slurmplugindir/spank_gpuckpt.so" ]
check "its runtime= is the installed runtime ($(arg runtime))" [ -e "$D$(arg runtime)" ]
check "its stage= is installed ($(arg stage))" [ -x "$D$(arg stage)" ]
check "its shepherd= folder holds the installed shepherd ($(arg shepherd))" \
	[ -x "$D$(arg shepherd)/gpuckpt-shepherd" ]
site_file_ok() { grep -q "^# $sysconfdir/gpuckpt/gpuckpt.conf - " "$D$sysconfdir/gpuckpt/gpuckpt.conf" 2>/dev/null; }
check "the runtime's site file is installed where the runtime reads it, and says so ($sysconfdir/gpuckpt/gpuckpt.conf)" \
	site_file_ok
check "no placeholder is left in either file" \
	[ -z "$(grep -h '@[a-z]*@' "$conf" "$D$sysconfdir/gpuckpt/gpuckpt.conf")" ]
tap_done
