# The Debian packages (debian/): built, checked with lintian, installed on a
# clean Debian root, the demo run from them. make check-packages (root, and
# the cluster lock: it starts a Slurm cluster); not part of make check.
GK_PACKAGE_TESTS = %reldir%/deb.sh
EXTRA_DIST += $(GK_PACKAGE_TESTS)
check-packages: all
	$(MAKE) $(AM_MAKEFLAGS) -j1 check TESTS='$(GK_PACKAGE_TESTS)'
.PHONY: check-packages
# The RPMs (gpuckpt.spec): make rpm (rpmbuild -ta, rpmlint), and each
# package's files against what make install puts down. No root, no cluster.
GK_PACKAGE_TESTS += %reldir%/rpm.sh
