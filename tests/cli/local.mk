# Unit tests (TAP) of runtime/cli, the gpuckpt tool: its reading of
# `scontrol show job -o` (runtime/cli/slurm_cmd.c).
TESTS += %reldir%/test-slurm-cmd
check_PROGRAMS += %reldir%/test-slurm-cmd
%canon_reldir%_test_slurm_cmd_SOURCES = %reldir%/test-slurm-cmd.c
%canon_reldir%_test_slurm_cmd_LDADD = $(top_builddir)/runtime/libgkcli.la $(GK_UNIT_LIBS)

# The tool's shared helpers (runtime/cli/util.c): option parsing and its
# messages, users, printable text, sizes, JSON.
TESTS += %reldir%/test-cli-util
check_PROGRAMS += %reldir%/test-cli-util
%canon_reldir%_test_cli_util_SOURCES = %reldir%/test-cli-util.c
%canon_reldir%_test_cli_util_CFLAGS = $(AM_CFLAGS) $(JSON_C_CFLAGS)
%canon_reldir%_test_cli_util_LDADD = $(top_builddir)/runtime/libgkcli.la \
	$(top_builddir)/runtime/libgkimage.la \
	$(top_builddir)/runtime/libgkcommon.la $(JSON_C_LIBS)

# The tool's command line, driven as a user drives it: each subcommand's bad
# options refused (2) with a message naming the option; --help.
TESTS += %reldir%/args.sh
EXTRA_DIST += %reldir%/args.sh

# The output of `gpuckpt report` (table, sizes, GPU time, --json) from job
# records written by the test.
TESTS += %reldir%/report.sh
EXTRA_DIST += %reldir%/report.sh

# Issue 29: `gpuckpt checkpoint` puts each node's answer back together from
# srun's labelled 1024-byte pieces, and asks again for one that did not come
# whole (Slurm's commands stood in for; root only).
TESTS += %reldir%/checkpoint-pieces.sh
EXTRA_DIST += %reldir%/checkpoint-pieces.sh
