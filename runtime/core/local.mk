# libgpuckpt.so: interposition of the CUDA driver, placement of device memory,
# quiesce, dump, restore, triggers and the application interface, in folders
# by role (README.md; each folder's README says what it may call).
# The placement policy, its data structure, the copy order and the spread of
# a device's chunks over its files (spread.c) on their own, so
# that tests can exercise them.
noinst_LTLIBRARIES += libgkplace.la
libgkplace_la_SOURCES = %reldir%/placement/intervals.c %reldir%/placement/intervals.h %reldir%/placement/layout.c \
	%reldir%/placement/layout.h %reldir%/placement/order.c %reldir%/placement/order.h %reldir%/placement/spread.c \
	%reldir%/placement/spread.h
libgkplace_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden

# The record of a process's OpenCL objects and its text form, on its own, so
# that tests exercise it without OpenCL.
noinst_LTLIBRARIES += libgkclrec.la
libgkclrec_la_SOURCES = %reldir%/state/opencl_record.c %reldir%/state/opencl_record.h
libgkclrec_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden

# The runtime's modules as a convenience library: libgpuckpt.so is made of
# it whole, and unit tests (tests/runtime/test-pipeline) link it.
noinst_LTLIBRARIES += libgkcore.la
libgkcore_la_SOURCES = \
	%reldir%/driver/hooks.def \
	%reldir%/driver/driver.c %reldir%/driver/driver.h \
	%reldir%/interpose/handlers.h \
	%reldir%/interpose/interpose.c \
	%reldir%/interpose/gate.c %reldir%/interpose/gate.h \
	%reldir%/placement/arena.c %reldir%/placement/arena.h \
	%reldir%/interpose/memory.c \
	%reldir%/interpose/ipc.c %reldir%/interpose/ipc.h \
	%reldir%/state/track.c %reldir%/state/track.h %reldir%/interpose/track_hooks.c \
	%reldir%/interpose/vmm.c %reldir%/interpose/vmm.h \
	%reldir%/interpose/nccl.c %reldir%/interpose/nccl.h %reldir%/interpose/nccl_abi.h \
	%reldir%/interpose/managed.c %reldir%/interpose/managed.h \
	%reldir%/interpose/steer.c %reldir%/interpose/steer.h \
	%reldir%/interpose/uring.c %reldir%/interpose/uring.h \
	%reldir%/interpose/peer.c %reldir%/interpose/peer.h \
	%reldir%/placement/peer_access.c %reldir%/placement/peer_access.h \
	%reldir%/control/trigger.c %reldir%/control/trigger.h \
	%reldir%/capture/transfer.c %reldir%/capture/transfer.h \
	%reldir%/placement/numa.c %reldir%/placement/numa.h \
	%reldir%/control/dump.c %reldir%/control/dump.h \
	%reldir%/control/pipeline.c %reldir%/control/pipeline.h \
	%reldir%/state/phase.c %reldir%/state/phase.h \
	%reldir%/state/eventlog.c %reldir%/state/eventlog.h \
	%reldir%/capture/plan.c %reldir%/capture/plan.h \
	%reldir%/capture/writer.c %reldir%/capture/writer.h \
	%reldir%/capture/snapshot.c %reldir%/capture/snapshot.h \
	%reldir%/capture/staging.c %reldir%/capture/staging.h \
	%reldir%/capture/changes.c %reldir%/capture/changes.h %reldir%/capture/segment_hash.h \
	%reldir%/capture/baseline.c %reldir%/capture/baseline.h \
	%reldir%/control/agent.c %reldir%/control/agent.h \
	%reldir%/control/fork_maps.c %reldir%/control/fork_maps.h \
	%reldir%/capture/flush.c %reldir%/capture/flush.h \
	%reldir%/restore/restore.c %reldir%/restore/restore.h \
	%reldir%/control/coord.c %reldir%/control/coord.h \
	%reldir%/state/regions.c %reldir%/state/regions.h \
	%reldir%/control/api.c \
	%reldir%/interpose/exec_guard.c %reldir%/interpose/exec_guard.h \
	%reldir%/control/start.c %reldir%/control/start.h \
	%reldir%/state/runtime.c %reldir%/state/runtime.h \
	%reldir%/state/kstop.c %reldir%/state/kstop.h \
	%reldir%/interpose/launch.c %reldir%/interpose/streamcap.c \
	%reldir%/control/kernels.c
# The interposition of the OpenCL API needs its headers (configure:
# HAVE_OPENCL); the record of OpenCL objects is plain C (libgkclrec).
if HAVE_OPENCL
libgkcore_la_SOURCES += %reldir%/driver/opencl.def %reldir%/driver/opencl.h \
	%reldir%/driver/opencl_loader.c %reldir%/interpose/opencl.c \
	%reldir%/interpose/opencl_move.h
endif
libgkcore_la_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) $(OPENCL_CFLAGS) -fvisibility=hidden
libgkcore_la_LIBADD = libgkclrec.la $(HWLOC_LIBS) $(PTHREAD_LIBS) -ldl

lib_LTLIBRARIES += libgpuckpt.la
libgpuckpt_la_SOURCES =
libgpuckpt_la_LIBADD = libgkcore.la libgkplace.la libgkimage.la libgkcommon.la
# RPATH $ORIGIN (DT_RPATH, which the libraries it loads inherit, not RUNPATH):
# a copy of the runtime in a folder with its libraries beside it (what
# containers mount, containers/README.md) loads those, whatever the
# container's userland holds.
libgpuckpt_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0 -no-undefined -Wl,--no-undefined -Wl,-Bsymbolic-functions \
	-Wl,--version-script=$(srcdir)/%reldir%/libgpuckpt.map '-Wl,-rpath,$$ORIGIN' -Wl,--disable-new-dtags
EXTRA_DIST += %reldir%/libgpuckpt.map %reldir%/README.md %reldir%/driver/README.md \
	%reldir%/state/README.md %reldir%/placement/README.md %reldir%/capture/README.md \
	%reldir%/restore/README.md %reldir%/control/README.md %reldir%/interpose/README.md

# The change-key kernel (hash_kernel.cu), built by nvcc into a fatbinary -
# machine code for NVCC_ARCH and PTX for compute_75, which the driver compiles
# for any newer GPU - and embedded in the runtime as a byte array. Without
# nvcc the runtime has none, and finds changed chunks on the host.
EXTRA_DIST += %reldir%/capture/hash_kernel.cu %reldir%/capture/embed.sh
if HAVE_NVCC
nodist_libgkcore_la_SOURCES = %reldir%/capture/hash_kernel_image.c
CLEANFILES += %reldir%/capture/hash_kernel_image.c %reldir%/capture/hash_kernel.fatbin
%reldir%/capture/hash_kernel.fatbin: %reldir%/capture/hash_kernel.cu %reldir%/capture/segment_hash.h
	@$(MKDIR_P) $(@D)
	$(AM_V_GEN)$(NVCC) -fatbin -O3 -I$(top_srcdir)/runtime \
		-gencode arch=compute_75,code=compute_75 \
		-gencode arch=`echo $(NVCC_ARCH) | sed 's/^sm_/compute_/'`,code=$(NVCC_ARCH) \
		-o $@ $(srcdir)/%reldir%/capture/hash_kernel.cu
%reldir%/capture/hash_kernel_image.c: %reldir%/capture/hash_kernel.fatbin $(srcdir)/%reldir%/capture/embed.sh
	$(AM_V_GEN)$(SHELL) $(srcdir)/%reldir%/capture/embed.sh gk_hash_image %reldir%/capture/hash_kernel.fatbin \
		>$@.tmp && mv $@.tmp $@
else
libgkcore_la_SOURCES += %reldir%/capture/hash_kernel_none.c
endif
