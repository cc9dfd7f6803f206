# libgpuckpt-mpi: the collective checkpoint point of gpuckpt_mpi.h, for MPI
# programs whose ranks must checkpoint together (built when configure found
# MPI). Also a convenience library, so that the MPI example links it in.
if HAVE_MPI
noinst_LTLIBRARIES += libgkmpi.la
libgkmpi_la_SOURCES = %reldir%/gpuckpt_mpi.c
libgkmpi_la_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS) -fvisibility=hidden

lib_LTLIBRARIES += libgpuckpt-mpi.la
libgpuckpt_mpi_la_SOURCES =
libgpuckpt_mpi_la_LIBADD = libgkmpi.la $(MPI_LIBS)
libgpuckpt_mpi_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0 \
	-Wl,--version-script=$(srcdir)/%reldir%/libgpuckpt-mpi.map
include_HEADERS += include/gpuckpt_mpi.h
endif
EXTRA_DIST += %reldir%/libgpuckpt-mpi.map include/gpuckpt_mpi.h
