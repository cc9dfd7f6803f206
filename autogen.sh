#!/bin/sh
# Generate configure and the Makefile.in files (needs autoconf, automake, libtool, pkg-config).
set -e
cd "$(dirname "$0")"
autoreconf -fi
# automake ships the TAP driver but does not copy it in by itself.
for d in /usr/share/automake-*; do
	[ -f "$d/tap-driver.sh" ] && cp -f "$d/tap-driver.sh" build-aux/ && break
done
test -f build-aux/tap-driver.sh || { echo "autogen.sh: automake's tap-driver.sh not found" >&2; exit 1; }
