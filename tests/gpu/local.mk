# gpu: the GPU scenarios against the real driver (make check-gpu; README.md
# here), and the parts of them that run on the driver stand-in (make check).

# Plain C against cuda.h, no nvcc: built by make check as well. They also run
# on the stand-in, which a sanitizer build instruments: they then carry the
# ASan runtime themselves.
check_PROGRAMS += %reldir%/gpu-probe %reldir%/route-drv %reldir%/gpu-tables %reldir%/gpu-peer
%canon_reldir%_gpu_probe_SOURCES = %reldir%/gpu-probe.c
%canon_reldir%_gpu_probe_CFLAGS = $(WARN_CFLAGS) $(SAN_CFLAGS)
%canon_reldir%_gpu_probe_LDFLAGS = $(SAN_LDFLAGS)
%canon_reldir%_route_drv_SOURCES = %reldir%/route-drv.c
%canon_reldir%_route_drv_CFLAGS = $(WARN_CFLAGS) $(SAN_CFLAGS)
%canon_reldir%_route_drv_LDFLAGS = $(SAN_LDFLAGS)
# The mostly static state of the increment and background scenarios: driver
# API copies only, linked against the toolkit's stub libcuda.
%canon_reldir%_gpu_tables_SOURCES = %reldir%/gpu-tables.c %reldir%/gpu_drv.h
%canon_reldir%_gpu_tables_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/examples/common
%canon_reldir%_gpu_tables_CFLAGS = $(WARN_CFLAGS) $(SAN_CFLAGS)
%canon_reldir%_gpu_tables_LDFLAGS = $(SAN_LDFLAGS)
%canon_reldir%_gpu_tables_LDADD = -L$(CUDA_PREFIX)/lib64/stubs -lcuda
# Peer access between two GPUs of one process (SKIP with fewer).
%canon_reldir%_gpu_peer_SOURCES = %reldir%/gpu-peer.c %reldir%/gpu_drv.h
%canon_reldir%_gpu_peer_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/examples/common
%canon_reldir%_gpu_peer_CFLAGS = $(WARN_CFLAGS) $(SAN_CFLAGS)
%canon_reldir%_gpu_peer_LDFLAGS = $(SAN_LDFLAGS)
%canon_reldir%_gpu_peer_LDADD = -L$(CUDA_PREFIX)/lib64/stubs -lcuda

# gpu-vmm: gpu-tables' state in memory the program maps itself (cuMemCreate,
# cuMemMap); vmm-gpu.sh round-trips it in both modes (check-gpu).
check_PROGRAMS += %reldir%/gpu-vmm
%canon_reldir%_gpu_vmm_SOURCES = %reldir%/gpu-vmm.c %reldir%/gpu_drv.h
%canon_reldir%_gpu_vmm_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/examples/common
%canon_reldir%_gpu_vmm_CFLAGS = $(WARN_CFLAGS) $(SAN_CFLAGS)
%canon_reldir%_gpu_vmm_LDFLAGS = $(SAN_LDFLAGS)
%canon_reldir%_gpu_vmm_LDADD = -L$(CUDA_PREFIX)/lib64/stubs -lcuda
EXTRA_DIST += %reldir%/vmm-gpu.sh %reldir%/zero-gpu.sh %reldir%/ipc-gpu.sh

# driver-swap: what the driver maps between two processes after its own
# restore put them on each other's GPUs (driver-swap.sh, check-gpu; the
# shepherd's --nccl refusal rests on it). The driver's API alone.
check_PROGRAMS += %reldir%/driver-swap
%canon_reldir%_driver_swap_SOURCES = %reldir%/driver-swap.c
%canon_reldir%_driver_swap_CFLAGS = $(WARN_CFLAGS)
%canon_reldir%_driver_swap_LDADD = -L$(CUDA_PREFIX)/lib64/stubs -lcuda
EXTRA_DIST += %reldir%/driver-swap.sh

# gpu-slack: a driver-API program reading a little outside its allocations
# (srad's pattern), with its kernels as a host module for the stand-in and as
# a cubin for a GPU.
check_PROGRAMS += %reldir%/gpu-slack
%canon_reldir%_gpu_slack_SOURCES = %reldir%/gpu-slack.c
%canon_reldir%_gpu_slack_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/examples/common \
	-I$(top_srcdir)/examples/heat
%canon_reldir%_gpu_slack_LDFLAGS = $(AM_LDFLAGS) -L$(CUDA_PREFIX)/lib64/stubs
%canon_reldir%_gpu_slack_LDADD = -lcuda
check_LTLIBRARIES += %reldir%/slack_kernels_host.la
%canon_reldir%_slack_kernels_host_la_SOURCES = %reldir%/slack_kernels_host.c
%canon_reldir%_slack_kernels_host_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/cuda-standin
%canon_reldir%_slack_kernels_host_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version \
	-rpath /nowhere

# heat-drv on the stand-in through the checkpoint scenarios, and the heat
# examples' options and bad input.
TESTS += %reldir%/standin.sh %reldir%/heat-options.sh
EXTRA_DIST += %reldir%/containers.sh %reldir%/standin.sh %reldir%/heat-options.sh %reldir%/run.sh \
	%reldir%/scenario.sh %reldir%/README.md %reldir%/gpu_test.h \
	%reldir%/gpu-streams.cu %reldir%/gpu-linked.cu %reldir%/gpu-cublas.cu \
	%reldir%/route-rt.cu %reldir%/slack_kernels.cu %reldir%/first-checkpoint.sh \
	%reldir%/gpu-peer-rt.cu %reldir%/mpi-debs.sh %reldir%/mpi-slurm.sh \
	%reldir%/mig-caps.sh %reldir%/nvml-hold.c

# The CUDA runtime programs, built by nvcc for make check-gpu only.
GPU_NVCC_BINS = %reldir%/gpu-streams %reldir%/gpu-linked %reldir%/gpu-cublas \
	%reldir%/route-rt-static %reldir%/route-rt-shared %reldir%/gpu-peer-rt
if HAVE_NVCC
GPU_TESTS += $(GPU_NVCC_BINS) %reldir%/slack_kernels.cubin
endif
CLEANFILES += $(GPU_NVCC_BINS) %reldir%/slack_kernels.cubin

GPU_NVCCFLAGS = -arch=$(NVCC_ARCH) -O2 -Xcompiler -Wall,-Wextra \
	-I$(top_srcdir)/runtime/include -I$(top_srcdir)/examples/common -I$(srcdir)/%reldir%
GPU_NVCC_DEPS = $(srcdir)/%reldir%/gpu_test.h $(top_srcdir)/examples/common/gpuckpt_optional.h \
	$(top_srcdir)/runtime/include/gpuckpt.h
# Where libcublas.so and the shared libcudart.so are found at run time.
GPU_NVCC_RPATH = -Xlinker -rpath=$(CUDA_PREFIX)/lib64

%reldir%/gpu-streams: $(srcdir)/%reldir%/gpu-streams.cu $(GPU_NVCC_DEPS)
	@$(MKDIR_P) %reldir%
	$(AM_V_GEN)$(NVCC) $(GPU_NVCCFLAGS) -o $@ $(srcdir)/%reldir%/gpu-streams.cu

%reldir%/gpu-linked: $(srcdir)/%reldir%/gpu-linked.cu $(GPU_NVCC_DEPS)
	@$(MKDIR_P) %reldir%
	$(AM_V_GEN)$(NVCC) $(GPU_NVCCFLAGS) -o $@ $(srcdir)/%reldir%/gpu-linked.cu

%reldir%/gpu-peer-rt: $(srcdir)/%reldir%/gpu-peer-rt.cu $(GPU_NVCC_DEPS)
	@$(MKDIR_P) %reldir%
	$(AM_V_GEN)$(NVCC) $(GPU_NVCCFLAGS) -o $@ $(srcdir)/%reldir%/gpu-peer-rt.cu

%reldir%/gpu-cublas: $(srcdir)/%reldir%/gpu-cublas.cu $(GPU_NVCC_DEPS)
	@$(MKDIR_P) %reldir%
	$(AM_V_GEN)$(NVCC) $(GPU_NVCCFLAGS) -o $@ $(srcdir)/%reldir%/gpu-cublas.cu -lcublas \
		$(GPU_NVCC_RPATH)

%reldir%/slack_kernels.cubin: $(srcdir)/%reldir%/slack_kernels.cu
	@$(MKDIR_P) %reldir%
	$(AM_V_GEN)$(NVCC) -cubin -arch=$(NVCC_ARCH) -O2 -o $@ $(srcdir)/%reldir%/slack_kernels.cu

%reldir%/route-rt-static: $(srcdir)/%reldir%/route-rt.cu $(GPU_NVCC_DEPS)
	@$(MKDIR_P) %reldir%
	$(AM_V_GEN)$(NVCC) $(GPU_NVCCFLAGS) -cudart static -DROUTE_NAME='"route-rt-static"' \
		-o $@ $(srcdir)/%reldir%/route-rt.cu

%reldir%/route-rt-shared: $(srcdir)/%reldir%/route-rt.cu $(GPU_NVCC_DEPS)
	@$(MKDIR_P) %reldir%
	$(AM_V_GEN)$(NVCC) $(GPU_NVCCFLAGS) -cudart shared -DROUTE_NAME='"route-rt-shared"' \
		-o $@ $(srcdir)/%reldir%/route-rt.cu $(GPU_NVCC_RPATH)

# The examples come from the top-level `all` that check-gpu depends on there.
# Managed memory written by kernels and the host (managed.sh).
GPU_NVCC_BINS += %reldir%/gpu-uvm %reldir%/gpu-uvm-var
EXTRA_DIST += %reldir%/gpu-uvm.cu %reldir%/gpu-uvm-var.cu %reldir%/managed.sh
EXTRA_DIST += %reldir%/procs-gpu.sh
%reldir%/gpu-uvm: $(srcdir)/%reldir%/gpu-uvm.cu $(GPU_NVCC_DEPS)
	@$(MKDIR_P) %reldir%
	$(AM_V_GEN)$(NVCC) $(GPU_NVCCFLAGS) -o $@ $(srcdir)/%reldir%/gpu-uvm.cu

%reldir%/gpu-uvm-var: $(srcdir)/%reldir%/gpu-uvm-var.cu $(GPU_NVCC_DEPS)
	@$(MKDIR_P) %reldir%
	$(AM_V_GEN)$(NVCC) $(GPU_NVCCFLAGS) -o $@ $(srcdir)/%reldir%/gpu-uvm-var.cu

check-gpu: $(GPU_TESTS) %reldir%/gpu-probe$(EXEEXT) %reldir%/route-drv$(EXEEXT) \
		%reldir%/gpu-tables$(EXEEXT) %reldir%/gpu-slack$(EXEEXT) %reldir%/gpu-peer$(EXEEXT) \
		%reldir%/gpu-vmm$(EXEEXT) runtime/prog-ipc$(EXEEXT) %reldir%/driver-swap$(EXEEXT)
	@$(AM_TESTS_ENVIRONMENT) rc=0; $(SHELL) $(srcdir)/%reldir%/run.sh || rc=1; \
	echo "# mig-caps.sh: capability devices open, no MIG: a transparent round trip"; \
	$(SHELL) $(srcdir)/%reldir%/mig-caps.sh || rc=1; \
	echo "# vmm-gpu.sh: memory the program maps itself, both modes, and onto the other GPU"; \
	$(SHELL) $(srcdir)/%reldir%/vmm-gpu.sh || rc=1; \
	echo "# zero-gpu.sh: all-zero chunks found by the built-in kernel, recorded, not written"; \
	$(SHELL) $(srcdir)/%reldir%/zero-gpu.sh || rc=1; \
	echo "# ipc-gpu.sh: legacy CUDA IPC between two processes, served by the runtime, app mode"; \
	$(SHELL) $(srcdir)/%reldir%/ipc-gpu.sh || rc=1; \
	echo "# managed.sh: managed memory in both modes, onto the other GPU"; \
	$(SHELL) $(srcdir)/%reldir%/managed.sh || rc=1; \
	echo "# driver-swap.sh: what the driver maps between processes restored onto each other's GPUs"; \
	$(SHELL) $(srcdir)/%reldir%/driver-swap.sh || rc=1; \
	echo "# procs-gpu.sh: several CUDA processes in one task (a shell, torchrun): one checkpoint, a part each"; \
	$(SHELL) $(srcdir)/%reldir%/procs-gpu.sh || rc=1; exit $$rc

# gpu-kernel: one long kernel marked interruptible (gpuckpt_kernel.cuh);
# kernel-interrupt.sh sends SIGTERM in its middle and restores it, and so
# for gpu-hydro (make check-gpu-kernels, under 3 minutes: not part of
# check-gpu, which fills its 10 minutes), benchmarks/kernels/run.sh measures it.
GPU_KERNEL_DEPS = $(GPU_NVCC_DEPS) $(top_srcdir)/runtime/include/gpuckpt_kernel.h \
	$(top_srcdir)/runtime/include/gpuckpt_kernel.cuh
%reldir%/gpu-kernel: $(srcdir)/%reldir%/gpu-kernel.cu $(GPU_KERNEL_DEPS)
	@$(MKDIR_P) %reldir%
	$(AM_V_GEN)$(NVCC) $(GPU_NVCCFLAGS) -I$(top_srcdir)/runtime/include -o $@ \
		$(srcdir)/%reldir%/gpu-kernel.cu
CLEANFILES += %reldir%/gpu-kernel
EXTRA_DIST += %reldir%/gpu-kernel.cu %reldir%/kernel-interrupt.sh
# gpu-hydro: a hydrodynamics-like kernel (LULESH's per-zone updates) marked
# in loop mode, checked bit for bit on the host (no fused operations there).
%reldir%/gpu-hydro: $(srcdir)/%reldir%/gpu-hydro.cu $(GPU_KERNEL_DEPS)
	@$(MKDIR_P) %reldir%
	$(AM_V_GEN)$(NVCC) $(GPU_NVCCFLAGS) -Xcompiler -ffp-contract=off \
		-I$(top_srcdir)/runtime/include -o $@ $(srcdir)/%reldir%/gpu-hydro.cu
CLEANFILES += %reldir%/gpu-hydro
EXTRA_DIST += %reldir%/gpu-hydro.cu
check-gpu-kernels: %reldir%/gpu-kernel %reldir%/gpu-hydro
	@$(AM_TESTS_ENVIRONMENT) $(SHELL) $(srcdir)/%reldir%/kernel-interrupt.sh
.PHONY: check-gpu-kernels

# gpu-capture: kernels captured into CUDA graphs on a worker thread (XLA's
# command buffers) while checkpoints are asked for; capture.sh (make
# check-gpu-capture, about 15 s; tests/runtime/capture.sh on the stand-in).
%reldir%/gpu-capture: $(srcdir)/%reldir%/gpu-capture.cu $(GPU_NVCC_DEPS)
	@$(MKDIR_P) %reldir%
	$(AM_V_GEN)$(NVCC) $(GPU_NVCCFLAGS) -Xcompiler -pthread -o $@ \
		$(srcdir)/%reldir%/gpu-capture.cu
CLEANFILES += %reldir%/gpu-capture
EXTRA_DIST += %reldir%/gpu-capture.cu %reldir%/capture.sh
if HAVE_NVCC
GPU_CAPTURE_BINS = %reldir%/gpu-capture
endif
check-gpu-capture: $(GPU_CAPTURE_BINS)
	@$(AM_TESTS_ENVIRONMENT) $(SHELL) $(srcdir)/%reldir%/capture.sh
.PHONY: check-gpu-capture

clean-local: clean-local-gpu
clean-local-gpu:
	rm -rf %reldir%/logs

.PHONY: check-gpu clean-local-gpu

# PyTorch, JAX and CuPy programs (frameworks/*.py, run with the machine's
# python3) checkpointed transparently by gpuckpt-shepherd and CRIU, restored
# with the uninterrupted run's results: make check-gpu-frameworks, a part of
# its own (check-gpu with set-up and build fills one 10-minute run of the GPU
# machine). Each case skips, with the reason, where its framework is missing.
EXTRA_DIST += %reldir%/frameworks.sh %reldir%/frameworks/fw_torch.py \
	%reldir%/frameworks/fw_jax.py %reldir%/frameworks/fw_cupy.py
check-gpu-frameworks:
	@$(AM_TESTS_ENVIRONMENT) $(SHELL) $(srcdir)/%reldir%/frameworks.sh
.PHONY: check-gpu-frameworks

# A public program that uses managed memory (HeCBench's prefetch-cuda, its
# unmodified files carried in the ignored .gpudeps/public/prefetch-cuda or
# GK_PUBLIC_DIR, never in the repository), built by nvcc, checkpointed
# transparently and restored, also onto the other GPU: make
# check-gpu-managed-public, a part of its own (check-gpu fills its 10
# minutes); 46 s on one H200, the build not included (2026-11-29).
EXTRA_DIST += %reldir%/managed-public.sh
check-gpu-managed-public:
	@$(AM_TESTS_ENVIRONMENT) $(SHELL) $(srcdir)/%reldir%/managed-public.sh
.PHONY: check-gpu-managed-public

# NCCL jobs of two ranks under two shepherds, checkpointed transparently and
# restored on the same GPUs and onto them in the other order (issue 27), two
# parts of their own (check-gpu fills its 10 minutes; each of these fits one):
# make check-gpu-nccl, a plain all-reduce job in C (prog-nccl, built there
# against PyTorch's libnccl.so.2), and make check-gpu-ddp, PyTorch DDP
# (frameworks/fw_ddp.py).
EXTRA_DIST += %reldir%/nccl-gpu.sh %reldir%/frameworks/fw_ddp.py
check-gpu-nccl:
	@export GK_NCCL_CASES=c; $(AM_TESTS_ENVIRONMENT) $(SHELL) $(srcdir)/%reldir%/nccl-gpu.sh
check-gpu-ddp:
	@export GK_NCCL_CASES=ddp; $(AM_TESTS_ENVIRONMENT) $(SHELL) $(srcdir)/%reldir%/nccl-gpu.sh
.PHONY: check-gpu-nccl check-gpu-ddp
# The same DDP job under real Slurm (tests/slurm/e2e-nccl.sh, which sees the
# two GPUs and PyTorch): srun -N 1 -n 2 with GPUCKPT_TASKS=nccl through the
# plugin's shepherds, requeued (restored on the same GPUs) and preempted
# (restored onto them in the other order).
# Written on the stand-in (where that script runs in check-slurm) when the
# session's GPU time was spent: not yet run on a GPU.
check-gpu-ddp-slurm:
	$(MAKE) $(AM_MAKEFLAGS) check TESTS=slurm/e2e-nccl.sh
.PHONY: check-gpu-ddp-slurm
# torchrun under real Slurm (tests/slurm/e2e-procs.sh, which sees the two
# GPUs and PyTorch): one task, torchrun's two DDP workers in it, requeued and
# restored from one checkpoint of the task with a part for each process.
check-gpu-torchrun-slurm:
	$(MAKE) $(AM_MAKEFLAGS) check TESTS=slurm/e2e-procs.sh
.PHONY: check-gpu-torchrun-slurm
