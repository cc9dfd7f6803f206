# The gpuckpt command-line tool.
bin_PROGRAMS += gpuckpt
gpuckpt_SOURCES = %reldir%/gpuckpt.c
gpuckpt_LDADD = libgkimage.la libgkcommon.la
