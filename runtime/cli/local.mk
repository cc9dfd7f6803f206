# The gpuckpt command-line tool: a dispatcher and one file per subcommand.
# Its modules as a convenience library, so that the unit tests (tests/cli/)
# link them rather than compile the tool's sources again.
noinst_LTLIBRARIES += libgkcli.la
libgkcli_la_SOURCES = \
	%reldir%/cli.h \
	%reldir%/util.c \
	%reldir%/cmd_inspect.c \
	%reldir%/cmd_verify.c \
	%reldir%/cmd_list.c \
	%reldir%/cmd_prune.c \
	%reldir%/cmd_plan.c \
	%reldir%/stepdir.c \
	%reldir%/cmd_checkpoint.c \
	%reldir%/node_probe.c %reldir%/node_probe.h \
	%reldir%/slurm_cmd.c %reldir%/slurm_cmd.h \
	%reldir%/cmd_report.c
libgkcli_la_CFLAGS = $(AM_CFLAGS) $(JSON_C_CFLAGS)
# The plugin's default bb_root (spank-plugin/site_args.c), for root's checkpoint.
libgkcli_la_CPPFLAGS = $(AM_CPPFLAGS) -DGK_LOCALSTATEDIR='"$(localstatedir)"'

bin_PROGRAMS += gpuckpt
gpuckpt_SOURCES = %reldir%/gpuckpt.c
gpuckpt_CFLAGS = $(AM_CFLAGS) $(JSON_C_CFLAGS)
# libgkseal: the seal of a transparent checkpoint, checked by verify.
gpuckpt_LDADD = libgkcli.la libgkseal.la libgkimage.la libgkcommon.la $(JSON_C_LIBS)
