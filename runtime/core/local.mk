# libgpuckpt.so: interposition of the CUDA driver, placement of device memory,
# quiesce, dump, restore, triggers and the application interface.
# The placement policy, its data structure, the copy order and the spread of
# a device's chunks over its files (spread.c) on their own, so
# that tests can exercise them.
noinst_LTLIBRARIES += libgkplace.la
libgkplace_la_SOURCES = %reldir%/intervals.c %reldir%/intervals.h %reldir%/layout.c \
	%reldir%/layout.h %reldir%/order.c %reldir%/order.h %reldir%/spread.c \
	%reldir%/spread.h
libgkplace_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden

# The runtime's modules as a convenience library: libgpuckpt.so is made of
# it whole, and unit tests (tests/runtime/test-pipeline) link it.
noinst_LTLIBRARIES += libgkcore.la
libgkcore_la_SOURCES = \
	%reldir%/hooks.def \
	%reldir%/driver.c %reldir%/driver.h \
	%reldir%/handlers.h \
	%reldir%/interpose.c \
	%reldir%/gate.c %reldir%/gate.h \
	%reldir%/arena.c %reldir%/arena.h \
	%reldir%/memory.c \
	%reldir%/track.c %reldir%/track.h %reldir%/track_hooks.c \
	%reldir%/vmm.c %reldir%/vmm.h \
	%reldir%/peer.c %reldir%/peer.h \
	%reldir%/peer_access.c %reldir%/peer_access.h \
	%reldir%/trigger.c %reldir%/trigger.h \
	%reldir%/transfer.c %reldir%/transfer.h \
	%reldir%/numa.c %reldir%/numa.h \
	%reldir%/dump.c %reldir%/dump.h \
	%reldir%/pipeline.c %reldir%/pipeline.h \
	%reldir%/phase.c %reldir%/phase.h \
	%reldir%/eventlog.c %reldir%/eventlog.h \
	%reldir%/plan.c %reldir%/plan.h \
	%reldir%/writer.c %reldir%/writer.h \
	%reldir%/snapshot.c %reldir%/snapshot.h \
	%reldir%/staging.c %reldir%/staging.h \
	%reldir%/changes.c %reldir%/changes.h %reldir%/segment_hash.h \
	%reldir%/baseline.c %reldir%/baseline.h \
	%reldir%/agent.c %reldir%/agent.h \
	%reldir%/fork_maps.c %reldir%/fork_maps.h \
	%reldir%/flush.c %reldir%/flush.h \
	%reldir%/restore.c %reldir%/restore.h \
	%reldir%/coord.c %reldir%/coord.h \
	%reldir%/regions.c %reldir%/regions.h \
	%reldir%/api.c \
	%reldir%/exec_guard.c %reldir%/exec_guard.h \
	%reldir%/start.c %reldir%/start.h \
	%reldir%/runtime.c %reldir%/runtime.h
libgkcore_la_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) -fvisibility=hidden
libgkcore_la_LIBADD = $(HWLOC_LIBS) $(PTHREAD_LIBS) -ldl

lib_LTLIBRARIES += libgpuckpt.la
libgpuckpt_la_SOURCES =
libgpuckpt_la_LIBADD = libgkcore.la libgkplace.la libgkimage.la libgkcommon.la
# RPATH $ORIGIN (DT_RPATH, which the libraries it loads inherit, not RUNPATH):
# a copy of the runtime in a folder with its libraries beside it (what
# containers mount, containers/README.md) loads those, whatever the
# container's userland holds.
libgpuckpt_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0 -no-undefined -Wl,--no-undefined -Wl,-Bsymbolic-functions \
	-Wl,--version-script=$(srcdir)/%reldir%/libgpuckpt.map '-Wl,-rpath,$$ORIGIN' -Wl,--disable-new-dtags
EXTRA_DIST += %reldir%/libgpuckpt.map

# The change-key kernel (hash_kernel.cu), built by nvcc into a fatbinary -
# machine code for NVCC_ARCH and PTX for compute_75, which the driver compiles
# for any newer GPU - and embedded in the runtime as a byte array. Without
# nvcc the runtime has none, and finds changed chunks on the host.
EXTRA_DIST += %reldir%/hash_kernel.cu %reldir%/embed.sh
if HAVE_NVCC
nodist_libgkcore_la_SOURCES = %reldir%/hash_kernel_image.c
CLEANFILES += %reldir%/hash_kernel_image.c %reldir%/hash_kernel.fatbin
%reldir%/hash_kernel.fatbin: %reldir%/hash_kernel.cu %reldir%/segment_hash.h
	@$(MKDIR_P) %reldir%
	$(AM_V_GEN)$(NVCC) -fatbin -O3 -I$(srcdir)/%reldir% \
		-gencode arch=compute_75,code=compute_75 \
		-gencode arch=`echo $(NVCC_ARCH) | sed 's/^sm_/compute_/'`,code=$(NVCC_ARCH) \
		-o $@ $(srcdir)/%reldir%/hash_kernel.cu
%reldir%/hash_kernel_image.c: %reldir%/hash_kernel.fatbin $(srcdir)/%reldir%/embed.sh
	$(AM_V_GEN)$(SHELL) $(srcdir)/%reldir%/embed.sh gk_hash_image %reldir%/hash_kernel.fatbin \
		>$@.tmp && mv $@.tmp $@
else
libgkcore_la_SOURCES += %reldir%/hash_kernel_none.c
endif
