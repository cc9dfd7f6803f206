#!/bin/bash
# rpm.sh - the RPMs (gpuckpt.spec), built with make rpm and compared with what
# `make install` puts down (make check-packages; no root, no cluster).
#
# 1. make rpm: make dist, rpmbuild -ta --nodeps in rpmbuild/ of the build
#    folder, rpmlint with EL's rules (gpuckpt-rpmlint.toml);
# 2. the same packages as debian/control, under their RPM names (the table
#    in gpuckpt.spec.in);
# 3. rpmlint: no errors (its warnings are listed in the spec);
# 4. make install DESTDIR= of this build tree, with the folders that the
#    spec's %configure gives (rpm --eval), every part of the tree;
# 5. every file that install puts down is in exactly one package (the libtool
#    .la files aside, as debian/not-installed);
# 6. no package has a file that install does not put down (the plugin's
#    plugstack.conf.d drop-in aside, which the spec writes, as debian/ has it);
# 7. every folder a package owns is one that install makes (plugstack.conf.d
#    and /var/spool/gpuckpt aside, as debian/);
# 8. each package holds what its Debian counterpart's debian/*.install lists;
# 9. slurm-spank-gpuckpt requires the Slurm release it was built against;
# 10. the drop-in names the plugin, runtime, staging script and site file
#    where the packages put them.
#
# GK_RPMS=DIR: test the .rpm files in DIR instead of building them (DIR
# holds the binary RPMs and the source RPM).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"

N=10
why=""
if ! command -v rpm >/dev/null || ! command -v rpmbuild >/dev/null; then
	why="rpm and rpmbuild are not installed (Debian package rpm; tests/install-deps.sh)"
elif ! command -v rpmlint >/dev/null; then
	why="rpmlint is not installed (Debian package rpmlint; tests/install-deps.sh)"
fi
tap_plan $N
if [ -n "$why" ]; then
	for _ in $(seq $N); do tap_skip "$why"; done
	exit 0
fi

top=$(cd "$top_srcdir" && pwd)
build=$(cd "$top_builddir" && pwd)
gk_scratch
# This runs under make check: the sub-makes must not inherit its TESTS= and -j.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES

# Debian package -> RPM package (gpuckpt.spec.in says why).
rpm_name() {
	case $1 in
	libgpuckpt0) echo libgpuckpt ;;
	libgpuckpt-dev) echo libgpuckpt-devel ;;
	libgpuckpt-mpi0) echo libgpuckpt-mpi ;;
	libgpuckpt-mpi-dev) echo libgpuckpt-mpi-devel ;;
	*) echo "$1" ;;
	esac
}
DEBS=$(sed -n 's/^Package: *//p' "$top/debian/control" | tr '\n' ' ')
PKGS=$(for d in $DEBS; do rpm_name "$d"; done | tr '\n' ' ')

# 1. make rpm.
if [ -n "${GK_RPMS:-}" ]; then
	rpms=$(cd "$GK_RPMS" && pwd)
	tap_skip "GK_RPMS=$GK_RPMS: not built here"
else
	rpms=$build/rpmbuild
	log=$GK_SCRATCH/rpm.log
	SECONDS=0
	make -C "$build" rpm >"$log" 2>&1
	rc=$?
	check "make rpm succeeds: make dist, rpmbuild -ta --nodeps, rpmlint (${SECONDS} s)" [ $rc -eq 0 ]
	[ $rc -eq 0 ] || tap_diag "$(tail -n 40 "$log")"
fi
# The binary packages (no -debuginfo/-debugsource: those hold no installed files).
declare -A file
for p in $PKGS; do
	file[$p]=$(find "$rpms" -name "$p-[0-9]*.rpm" ! -name '*.src.rpm' | head -n 1)
done
missing=""
for p in $PKGS; do [ -n "${file[$p]}" ] || missing+=" $p"; done
check "the packages of debian/control, RPM-named: ${PKGS% }${missing:+ (missing:$missing)}" [ -z "$missing" ]

# 3. rpmlint, with EL's rules.
mapfile -t all < <(find "$rpms" -name '*.rpm')
lint=$(rpmlint -c "$top/gpuckpt-rpmlint.toml" "${all[@]}" 2>&1)
errors=$(grep -E ': E: ' <<<"$lint")
[ ${#all[@]} -gt 0 ] || errors="no RPMs to lint"
check "rpmlint over the ${#all[@]} RPMs: no errors ($(grep -cE ': W: ' <<<"$lint") warnings)" [ -z "$errors" ]
[ -z "$lint" ] || tap_diag "$lint"

# 4. make install, with the spec's folders.
libdir=$(rpm --eval '%{_libdir}')
dirs=(prefix=/usr exec_prefix=/usr bindir=/usr/bin sbindir=/usr/sbin sysconfdir=/etc
	datadir=/usr/share includedir=/usr/include "libdir=$libdir" libexecdir=/usr/libexec
	localstatedir=/var mandir=/usr/share/man "slurmplugindir=$libdir/slurm")
inst=$GK_SCRATCH/inst
make -C "$build" install DESTDIR="$inst" "${dirs[@]}" >"$GK_SCRATCH/install.log" 2>&1
rc=$?
check "make install DESTDIR= with the spec's folders succeeds" [ $rc -eq 0 ]
[ $rc -eq 0 ] || tap_diag "$(tail -n 20 "$GK_SCRATCH/install.log")"
(cd "$inst" && find . ! -type d | sed 's|^\.||' | sort) >"$GK_SCRATCH/installed"
(cd "$inst" && find . -mindepth 1 -type d | sed 's|^\.||' | sort) >"$GK_SCRATCH/installed-dirs"

# What each package holds: "PACKAGE TYPE PATH", TYPE d (folder) or f (the
# rest); rpmbuild's build-id links aside, man pages without the .gz that
# rpmbuild gives them.
: >"$GK_SCRATCH/packaged"
for p in $PKGS; do
	[ -n "${file[$p]}" ] || continue
	rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "${file[$p]}" 2>/dev/null |
		awk -v p="$p" '$2 !~ "^/usr/lib/\\.build-id(/|$)" {
			t = substr($1, 1, 1) == "d" ? "d" : "f"
			f = $2
			if (t == "f" && f ~ "^/usr/share/man/") sub(/\.gz$/, "", f)
			print p, t, f }' >>"$GK_SCRATCH/packaged"
done
awk '$2 == "f" { print $3 }' "$GK_SCRATCH/packaged" | sort >"$GK_SCRATCH/packaged-files"

# 5. Installed: in exactly one package.
NOT_PACKAGED="^($libdir/libgpuckpt\\.la|$libdir/libgpuckpt-mpi\\.la|$libdir/slurm/spank_gpuckpt\\.la)\$"
bad=""
while read -r f; do
	grep -qE "$NOT_PACKAGED" <<<"$f" && continue
	n=$(grep -cxF "$f" "$GK_SCRATCH/packaged-files")
	[ "$n" -eq 1 ] || bad+=" $f (in $n packages)"
done <"$GK_SCRATCH/installed"
check "each of the $(wc -l <"$GK_SCRATCH/installed") files make install puts down is in exactly one package (the .la files aside)" [ -z "$bad" ]
[ -z "$bad" ] || tap_diag "not in exactly one package:$bad"

# 6. Packaged: installed.
EXTRA_FILES="^/etc/slurm/plugstack\\.conf\\.d/gpuckpt\\.conf\$"
bad=$(grep -vE "$EXTRA_FILES" "$GK_SCRATCH/packaged-files" | sort -u | comm -23 - "$GK_SCRATCH/installed" | tr '\n' ' ')
check "no package has a file that make install does not put down (the plugstack.conf.d drop-in aside)" [ -z "$bad" ]
[ -z "$bad" ] || tap_diag "packaged, not installed: $bad"

# 7. Owned folders: installed.
EXTRA_DIRS="^(/etc/slurm/plugstack\\.conf\\.d|/var/spool/gpuckpt)\$"
bad=$(awk '$2 == "d" { print $3 }' "$GK_SCRATCH/packaged" | sort -u | grep -vE "$EXTRA_DIRS" |
	comm -23 - "$GK_SCRATCH/installed-dirs" | tr '\n' ' ')
check "every folder a package owns is one make install makes (plugstack.conf.d, /var/spool/gpuckpt aside)" [ -z "$bad" ]
[ -z "$bad" ] || tap_diag "owned, not installed: $bad"

# 8. The same split as debian/*.install: each source there (Debian's
# multiarch libdir and slurm-wlm plugin folder read as the spec's) names
# installed files, each in the RPM of that package.
bad=""
for d in $DEBS; do
	p=$(rpm_name "$d")
	[ -f "$top/debian/$d.install" ] || continue
	while read -r src _; do
		case $src in usr/* | etc/*) ;; *) continue ;; esac
		src=$(sed -e "s|^usr/lib/\\*/slurm-wlm/|${libdir#/}/slurm/|" -e "s|^usr/lib/\\*/|${libdir#/}/|" <<<"$src")
		# shellcheck disable=SC2086 # the glob is the point
		matched=$(cd "$inst" && for m in $src; do [ -e "$m" ] && find "$m" ! -type d; done)
		[ -n "$matched" ] || { bad+=" $d: $src (nothing installed)"; continue; }
		while read -r f; do
			grep -qxF "$p f /${f#./}" "$GK_SCRATCH/packaged" || bad+=" $p lacks /${f#./}"
		done <<<"$matched"
	done <"$top/debian/$d.install"
done
check "each package holds what its Debian counterpart's .install lists" [ -z "$bad" ]
[ -z "$bad" ] || tap_diag "$bad"

# 9. The plugin's Slurm release.
v=$(awk '$2 == "SLURM_VERSION_NUMBER" { print $3 }' /usr/include/slurm/slurm_version.h 2>/dev/null)
slurm=$([ -n "$v" ] && printf '%d.%02d' $((v >> 16)) $(((v >> 8) & 255)))
req=$(rpm -qp --requires "${file[slurm-spank-gpuckpt]:-/nonexistent}" 2>/dev/null)
check "slurm-spank-gpuckpt requires the Slurm release it was built for (${slurm:-unknown})" \
	grep -qx "slurm >= ${slurm:-none}" <<<"$req"
tap_diag "$(grep '^slurm' <<<"$req")"

# 10. The drop-in's paths.
conf=$(rpm2cpio "${file[slurm-spank-gpuckpt]:-/nonexistent}" 2>/dev/null |
	(cd "$GK_SCRATCH" && cpio -id --quiet ./etc/slurm/plugstack.conf.d/gpuckpt.conf 2>/dev/null) &&
	grep -E '^(optional|required) ' "$GK_SCRATCH/etc/slurm/plugstack.conf.d/gpuckpt.conf")
bad=""
[ -n "$conf" ] || bad=" (no optional/required line)"
for w in $conf; do
	f=${w#*=}
	case $w in optional | required | bb_root=* | shared_root=* | default=* | keep=*) continue ;; esac
	grep -qxF "$f" "$GK_SCRATCH/packaged-files" || bad+=" $f"
done
check "the drop-in names the plugin, runtime, staging script and site file where the packages have them" [ -z "$bad" ]
[ -z "$bad" ] || tap_diag "not in any package:$bad"
tap_diag "$conf"
tap_done
