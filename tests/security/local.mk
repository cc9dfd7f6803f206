# The attacks of issue 11 on root-run code, each as a test with real users
# (gksec1, gksec2: made when missing, under /tmp/gk-cluster.lock), and the
# tools they use: racer (what the attacking user runs: swap a name the
# moment it appears, exchange two names in a loop, stop a process of its own
# and swap meanwhile) and seal-tool (a real seal as root; a forged one as
# anyone). They need root; as a user they report skips.
check_PROGRAMS += %reldir%/seal-tool
%canon_reldir%_seal_tool_SOURCES = %reldir%/seal-tool.c
%canon_reldir%_seal_tool_LDADD = $(top_builddir)/runtime/libgkseal.la \
	$(top_builddir)/runtime/libgkimage.la $(top_builddir)/runtime/libgkcommon.la
check_PROGRAMS += %reldir%/racer
%canon_reldir%_racer_SOURCES = %reldir%/racer.c

TESTS += %reldir%/stage-attacks.sh %reldir%/seal-attacks.sh %reldir%/cli-labels.sh \
	%reldir%/container-attacks.sh
EXTRA_DIST += %reldir%/lib.sh %reldir%/stage-attacks.sh %reldir%/seal-attacks.sh \
	%reldir%/cli-labels.sh %reldir%/container-attacks.sh
# Root's gpuckpt tool on a path through a job's folder (issue 24's review).
TESTS += %reldir%/cli-root.sh
EXTRA_DIST += %reldir%/cli-root.sh
# Issue 24, holes 2 and 4: the metrics lock and the job record's size.
check_PROGRAMS += %reldir%/record-tool
%canon_reldir%_record_tool_SOURCES = %reldir%/record-tool.c
%canon_reldir%_record_tool_LDADD = $(top_builddir)/spank-plugin/libgkspank.la $(GK_UNIT_LIBS)
TESTS += %reldir%/metrics-attacks.sh %reldir%/record-attacks.sh
EXTRA_DIST += %reldir%/metrics-attacks.sh %reldir%/record-attacks.sh
# Issue 24, hole 5: root's `gpuckpt checkpoint` against a real Slurm cluster
# (cluster.sh): with the end-to-end scenarios in make check-slurm, on every
# Slurm release the suite runs (a sanitizer build would only report skips).
SLURM_E2E += %reldir%/checkpoint-attacks.sh
EXTRA_DIST += %reldir%/checkpoint-attacks.sh
# Issue 24, hole 5 on the node: the probe of `gpuckpt checkpoint` run as root.
TESTS += %reldir%/probe-attacks.sh
EXTRA_DIST += %reldir%/probe-attacks.sh
# Issue 24, hole 1: needs a real CRIU 4, so it runs (rather than skips) in the
# Debian trixie root, whose `make check-slurm` runs it too.
TESTS += %reldir%/criu-attacks.sh
SLURM_E2E += %reldir%/criu-attacks.sh
