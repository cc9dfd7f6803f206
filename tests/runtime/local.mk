# The runtime: placement data structure, interposition routes, signals, and
# the end-to-end scenarios on the CUDA driver stand-in.
check_PROGRAMS += %reldir%/test-intervals %reldir%/test-order %reldir%/test-layout \
	%reldir%/test-spread
%canon_reldir%_test_intervals_SOURCES = %reldir%/test-intervals.c
%canon_reldir%_test_intervals_LDADD = $(top_builddir)/runtime/libgkplace.la
%canon_reldir%_test_order_SOURCES = %reldir%/test-order.c
%canon_reldir%_test_order_LDADD = $(top_builddir)/runtime/libgkplace.la
%canon_reldir%_test_layout_SOURCES = %reldir%/test-layout.c
%canon_reldir%_test_layout_LDADD = $(top_builddir)/runtime/libgkplace.la
%canon_reldir%_test_spread_SOURCES = %reldir%/test-spread.c
%canon_reldir%_test_spread_LDADD = $(top_builddir)/runtime/libgkplace.la
TESTS += %reldir%/test-intervals %reldir%/test-order %reldir%/test-layout %reldir%/test-spread

# Two libraries defining the same symbol, for dlsym(RTLD_NEXT) semantics.
check_LTLIBRARIES += %reldir%/libgkdlnexta.la %reldir%/libgkdlnextb.la
%canon_reldir%_libgkdlnexta_la_SOURCES = %reldir%/dlnext-a.c
%canon_reldir%_libgkdlnexta_la_LDFLAGS = -rpath /nowhere -avoid-version
%canon_reldir%_libgkdlnexta_la_LIBADD = -ldl
%canon_reldir%_libgkdlnextb_la_SOURCES = %reldir%/dlnext-b.c
%canon_reldir%_libgkdlnextb_la_LDFLAGS = -rpath /nowhere -avoid-version

# A test-only preload that freezes a checkpoint writer where a test wants it.
check_LTLIBRARIES += %reldir%/slowio.la
%canon_reldir%_slowio_la_SOURCES = %reldir%/slowio.c
%canon_reldir%_slowio_la_LDFLAGS = -module -rpath /nowhere -avoid-version
%canon_reldir%_slowio_la_LIBADD = -ldl
%canon_reldir%_slowio_la_CFLAGS = $(AM_CFLAGS) -Wno-missing-prototypes

# Driver-API programs, linked against the toolkit's stub libcuda; at run time
# libcuda.so.1 is the stand-in (or a real driver).
GK_CUDA_STUB = -L$(CUDA_PREFIX)/lib64/stubs -lcuda
check_PROGRAMS += %reldir%/prog-exec %reldir%/prog-dlnext %reldir%/prog-routes %reldir%/prog-managed \
	%reldir%/prog-unaware %reldir%/prog-hostonly %reldir%/prog-uring
%canon_reldir%_prog_dlnext_SOURCES = %reldir%/prog-dlnext.c
%canon_reldir%_prog_dlnext_LDADD = %reldir%/libgkdlnexta.la %reldir%/libgkdlnextb.la
%canon_reldir%_prog_routes_SOURCES = %reldir%/prog-routes.c
%canon_reldir%_prog_routes_LDADD = $(GK_CUDA_STUB) -ldl
%canon_reldir%_prog_managed_SOURCES = %reldir%/prog-managed.c
%canon_reldir%_prog_managed_LDADD = $(top_builddir)/runtime/libgpuckpt.la $(GK_CUDA_STUB)
%canon_reldir%_prog_hostonly_SOURCES = %reldir%/prog-hostonly.c
%canon_reldir%_prog_hostonly_LDADD = $(top_builddir)/runtime/libgpuckpt.la $(GK_CUDA_STUB)
%canon_reldir%_prog_unaware_SOURCES = %reldir%/prog-unaware.c
%canon_reldir%_prog_unaware_LDADD = $(GK_CUDA_STUB)

%canon_reldir%_prog_exec_SOURCES = %reldir%/prog-exec.c
%canon_reldir%_prog_uring_SOURCES = %reldir%/prog-uring.c

TESTS += %reldir%/interpose.sh %reldir%/heat-e2e.sh %reldir%/background.sh \
	%reldir%/increments.sh %reldir%/copy-paths.sh %reldir%/peer.sh %reldir%/exec-guard.sh \
	%reldir%/mpi-sets.sh %reldir%/include-cycles.sh %reldir%/uring.sh
EXTRA_DIST += %reldir%/interpose.sh %reldir%/heat-e2e.sh %reldir%/background.sh \
	%reldir%/increments.sh %reldir%/copy-paths.sh %reldir%/peer.sh %reldir%/exec-guard.sh \
	%reldir%/mpi-sets.sh %reldir%/include-cycles.sh %reldir%/uring.sh

# The checkpoint pipeline, phase by phase, with the runtime's modules linked
# in (libgkcore, whole: its concerns register their phase hooks at load) and
# the stand-in as the driver at run time (pipeline.sh).
check_PROGRAMS += %reldir%/test-pipeline
%canon_reldir%_test_pipeline_SOURCES = %reldir%/test-pipeline.c
%canon_reldir%_test_pipeline_LDADD = $(top_builddir)/runtime/libgkplace.la $(top_builddir)/runtime/libgkimage.la \
	$(top_builddir)/runtime/libgkcommon.la $(HWLOC_LIBS) $(PTHREAD_LIBS) -ldl $(GK_CUDA_STUB)
%canon_reldir%_test_pipeline_DEPENDENCIES = $(top_builddir)/runtime/libgkcore.la
%canon_reldir%_test_pipeline_LDFLAGS = $(AM_LDFLAGS) -no-install \
	-Wl,--whole-archive,$(top_builddir)/runtime/.libs/libgkcore.a,--no-whole-archive
TESTS += %reldir%/pipeline.sh
EXTRA_DIST += %reldir%/pipeline.sh

# The placement policy at the unit: the arena behind the interposed
# allocations, on the stand-in with two GPUs (placement.sh), restore-time
# reservation included.
check_PROGRAMS += %reldir%/test-placement
%canon_reldir%_test_placement_SOURCES = %reldir%/test-placement.c
%canon_reldir%_test_placement_LDADD = $(%canon_reldir%_test_pipeline_LDADD)
%canon_reldir%_test_placement_DEPENDENCIES = $(top_builddir)/runtime/libgkcore.la
%canon_reldir%_test_placement_LDFLAGS = $(%canon_reldir%_test_pipeline_LDFLAGS)
TESTS += %reldir%/placement.sh
EXTRA_DIST += %reldir%/placement.sh

# What a checkpoint writes, at the unit: the plan, the change keys, the
# baseline and restore's plan of what is loaded where (plan.sh).
check_PROGRAMS += %reldir%/test-plan
%canon_reldir%_test_plan_SOURCES = %reldir%/test-plan.c
%canon_reldir%_test_plan_LDADD = $(%canon_reldir%_test_pipeline_LDADD)
%canon_reldir%_test_plan_DEPENDENCIES = $(top_builddir)/runtime/libgkcore.la
%canon_reldir%_test_plan_LDFLAGS = $(%canon_reldir%_test_pipeline_LDFLAGS)
TESTS += %reldir%/plan.sh
EXTRA_DIST += %reldir%/plan.sh

# The snapshot memory's bookkeeping: budget, pinning in steps, captures
# (snapshot.sh).
check_PROGRAMS += %reldir%/test-snapshot
%canon_reldir%_test_snapshot_SOURCES = %reldir%/test-snapshot.c
%canon_reldir%_test_snapshot_LDADD = $(%canon_reldir%_test_pipeline_LDADD)
%canon_reldir%_test_snapshot_DEPENDENCIES = $(top_builddir)/runtime/libgkcore.la
%canon_reldir%_test_snapshot_LDFLAGS = $(%canon_reldir%_test_pipeline_LDFLAGS)
TESTS += %reldir%/snapshot.sh
EXTRA_DIST += %reldir%/snapshot.sh

# The change keys at the unit, on the kernel and on the host (changes.sh).
check_PROGRAMS += %reldir%/test-changes
%canon_reldir%_test_changes_SOURCES = %reldir%/test-changes.c
%canon_reldir%_test_changes_LDADD = $(%canon_reldir%_test_pipeline_LDADD)
%canon_reldir%_test_changes_DEPENDENCIES = $(top_builddir)/runtime/libgkcore.la
%canon_reldir%_test_changes_LDFLAGS = $(%canon_reldir%_test_pipeline_LDFLAGS)
TESTS += %reldir%/changes.sh
EXTRA_DIST += %reldir%/changes.sh

# Memory the program maps itself (cuMemCreate/cuMemMap): saved and restored
# by the runtime, in both modes (vmm.sh; transparent half in tests/shepherd).
check_PROGRAMS += %reldir%/prog-vmm
%canon_reldir%_prog_vmm_SOURCES = %reldir%/prog-vmm.c
%canon_reldir%_prog_vmm_LDADD = $(top_builddir)/runtime/libgpuckpt.la $(GK_CUDA_STUB)
TESTS += %reldir%/vmm.sh
EXTRA_DIST += %reldir%/vmm.sh

# All-zero chunks recorded, not written (format 5): gpu-tables --pool on the
# stand-in, with the stand-in's hash kernel and without (zero-chunks.sh).
TESTS += %reldir%/zero-chunks.sh
EXTRA_DIST += %reldir%/zero-chunks.sh
# Issue 29: task 0 flushes its step's set records beside the flushed task folders.
TESTS += %reldir%/flush-sets.sh
EXTRA_DIST += %reldir%/flush-sets.sh

# Legacy CUDA IPC between two processes, with and without the runtime (ipc.sh).
check_PROGRAMS += %reldir%/prog-ipc
%canon_reldir%_prog_ipc_SOURCES = %reldir%/prog-ipc.c %reldir%/ipc_half.h
%canon_reldir%_prog_ipc_LDADD = $(GK_CUDA_STUB)
TESTS += %reldir%/ipc.sh
EXTRA_DIST += %reldir%/ipc.sh
TESTS += %reldir%/ipc-users.sh
EXTRA_DIST += %reldir%/ipc-users.sh
TESTS += %reldir%/ipc-transparent.sh
EXTRA_DIST += %reldir%/ipc-transparent.sh

# Interruptible long kernels (gpuckpt_kernel.h) on the stand-in: a program
# with one marked kernel and its host "kernels" (kernels.sh).
check_PROGRAMS += %reldir%/prog-kernels
%canon_reldir%_prog_kernels_SOURCES = %reldir%/prog-kernels.c
%canon_reldir%_prog_kernels_LDADD = $(top_builddir)/runtime/libgpuckpt.la $(GK_CUDA_STUB)
check_LTLIBRARIES += %reldir%/kern_kernels_host.la
%canon_reldir%_kern_kernels_host_la_SOURCES = %reldir%/kern_kernels_host.c
%canon_reldir%_kern_kernels_host_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/cuda-standin \
	-I$(top_srcdir)/runtime/include
%canon_reldir%_kern_kernels_host_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version \
	-rpath /nowhere
TESTS += %reldir%/kernels.sh
EXTRA_DIST += %reldir%/kernels.sh

# Stream capture on a worker thread while checkpoints are asked for (CUDA
# graphs, as XLA's command buffers): a program not linked against libgpuckpt
# and its host "kernel" (capture.sh; tests/gpu/capture.sh on a GPU).
check_PROGRAMS += %reldir%/prog-capture
%canon_reldir%_prog_capture_SOURCES = %reldir%/prog-capture.c
%canon_reldir%_prog_capture_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/examples/common \
	-I$(top_srcdir)/runtime/include
%canon_reldir%_prog_capture_LDADD = $(GK_CUDA_STUB) $(PTHREAD_LIBS)
check_LTLIBRARIES += %reldir%/kern_capture_host.la
%canon_reldir%_kern_capture_host_la_SOURCES = %reldir%/kern_capture_host.c
%canon_reldir%_kern_capture_host_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/cuda-standin
%canon_reldir%_kern_capture_host_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version \
	-rpath /nowhere
TESTS += %reldir%/capture.sh
EXTRA_DIST += %reldir%/capture.sh

# Managed memory checkpointed and restored (managed.sh).
check_PROGRAMS += %reldir%/prog-uvm
%canon_reldir%_prog_uvm_SOURCES = %reldir%/prog-uvm.c
%canon_reldir%_prog_uvm_LDADD = $(top_builddir)/runtime/libgpuckpt.la $(GK_CUDA_STUB)
TESTS += %reldir%/managed.sh
EXTRA_DIST += %reldir%/managed.sh

# The runtime's mmap, which places the driver's managed reservations (issue 30).
check_PROGRAMS += %reldir%/test-steer
%canon_reldir%_test_steer_SOURCES = %reldir%/test-steer.c
%canon_reldir%_test_steer_LDADD = $(PTHREAD_LIBS)
TESTS += %reldir%/test-steer

# A __managed__ variable: the checkpoint refused by name, the program going
# on (managed-var.sh; on a GPU, point 6 of tests/gpu/managed.sh).
check_PROGRAMS += %reldir%/prog-uvm-var
%canon_reldir%_prog_uvm_var_SOURCES = %reldir%/prog-uvm-var.c
%canon_reldir%_prog_uvm_var_LDADD = $(top_builddir)/runtime/libgpuckpt.la $(GK_CUDA_STUB)
check_LTLIBRARIES += %reldir%/kern_uvm_var_host.la
%canon_reldir%_kern_uvm_var_host_la_SOURCES = %reldir%/kern_uvm_var_host.c
%canon_reldir%_kern_uvm_var_host_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/cuda-standin
%canon_reldir%_kern_uvm_var_host_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -rpath /nowhere
TESTS += %reldir%/managed-var.sh
EXTRA_DIST += %reldir%/managed-var.sh

# Issue 27: NCCL communicators taken down at a common collective and made
# again (interpose/nccl.c), on the CUDA and NCCL stand-ins (nccl.sh); the
# same program runs on the GPU machine against PyTorch's NCCL
# (tests/gpu/nccl-gpu.sh).
check_PROGRAMS += %reldir%/prog-nccl
%canon_reldir%_prog_nccl_SOURCES = %reldir%/prog-nccl.c
%canon_reldir%_prog_nccl_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/runtime/core/interpose
%canon_reldir%_prog_nccl_LDADD = nccl-standin/libnccl.la $(GK_CUDA_STUB)
TESTS += %reldir%/nccl.sh
EXTRA_DIST += %reldir%/nccl.sh
