# Unit tests (TAP) of runtime/cli, the gpuckpt tool: its reading of
# `scontrol show job -o` (runtime/cli/slurm_cmd.c).
TESTS += %reldir%/test-slurm-cmd
check_PROGRAMS += %reldir%/test-slurm-cmd
%canon_reldir%_test_slurm_cmd_SOURCES = %reldir%/test-slurm-cmd.c $(top_srcdir)/runtime/cli/slurm_cmd.c
%canon_reldir%_test_slurm_cmd_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/runtime/cli
