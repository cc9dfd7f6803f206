# The Slurm side: the staging script and the OCI hook (make check), and
# end-to-end tests against a real Slurm cluster started on this machine by
# cluster.sh (make check-slurm: needs root). The plugin's unit tests are in
# tests/spank-plugin/.
TESTS += containers/oci-hook.sh %reldir%/stage.sh

# End-to-end scenarios, each against a cluster of its own (one at a time: they
# share the namespace names and the test users).
SLURM_E2E = \
	%reldir%/e2e-options.sh \
	%reldir%/e2e-requeue.sh \
	%reldir%/e2e-preempt.sh \
	%reldir%/e2e-multi.sh \
	%reldir%/e2e-mpi.sh \
	%reldir%/e2e-faults.sh \
	%reldir%/e2e-modes.sh \
	%reldir%/e2e-shepherd.sh \
	%reldir%/e2e-checkpoint.sh \
	%reldir%/e2e-records.sh \
	%reldir%/e2e-cleanup.sh \
	%reldir%/e2e-flush.sh \
	%reldir%/e2e-containers.sh

# On the GPU machine only (GK_CRIU=... make check TESTS=slurm/e2e-transparent.sh):
# it skips, with the reason, where there is no GPU or no CRIU 4.
EXTRA_DIST += %reldir%/e2e-transparent.sh
# On the GPU machine only (tests/gpu/mpi-slurm.sh runs it): MPI ranks sharing the GPU.
EXTRA_DIST += %reldir%/e2e-mpi-gpu.sh
EXTRA_DIST += %reldir%/cluster.sh %reldir%/e2e-lib.sh \
	%reldir%/stage.sh %reldir%/demo.sh $(SLURM_E2E) \
	containers/images.sh containers/tools.sh \
	containers/podman.sh containers/oci-hook.sh
# What the plugin records of a task, for the tests of podman's hook.
EXTRA_DIST += containers/task-record.sh

check-slurm: all
	$(MAKE) $(AM_MAKEFLAGS) -j1 check TESTS='$(SLURM_E2E)'
.PHONY: check-slurm
# Issue 24: a non-root transparent round trip with a real CRIU (skips where
# there is none; runs in the trixie root's check-slurm).
SLURM_E2E += %reldir%/e2e-criu-user.sh
# The demo's summary lines (issue 28): demo.sh's code and demo-check.sh, which
# make check-packages runs on the real demo, on fixed outputs.
TESTS += %reldir%/demo-report.sh
EXTRA_DIST += %reldir%/demo-report.sh %reldir%/demo-check.sh
# On the GPU machine with two GPUs only (GK_CRIU=... make check
# TESTS=slurm/e2e-frameworks.sh): a PyTorch job requeued and restored onto the
# other GPU; it skips, with the reason, without PyTorch, two GPUs or CRIU 4.
EXTRA_DIST += %reldir%/e2e-frameworks.sh
# Issue 29: the staging benchmark (benchmarks/stage/run, make bench-stage) at
# its smallest, about 2 s: it stages everything out and back in.
TESTS += %reldir%/stage-bench-smoke.sh
EXTRA_DIST += %reldir%/stage-bench-smoke.sh
# Issue 29: the epilog's sweep stays linear in the jobs and folders it
# compares (5,000 folders, 200,000 jobs; about 2 s).
TESTS += %reldir%/stage-sweep-scale.sh
EXTRA_DIST += %reldir%/stage-sweep-scale.sh
# Transparent mode for OpenCL with a real CRIU (tests/opencl/opencl-criu.sh).
SLURM_E2E += opencl/opencl-criu.sh
# A public OpenCL program through transparent mode (tests/opencl/opencl-public.sh).
SLURM_E2E += opencl/opencl-public.sh
# Transparent mode onto another OpenCL device after CRIU's restore
# (tests/opencl/opencl-criu-move.sh).
SLURM_E2E += opencl/opencl-criu-move.sh
# The task's stdio through a real CRIU, and a session led outside the PID
# namespace (CI's); in the roots, which have CRIU.
SLURM_E2E += shepherd/stdio-criu.sh
# A descriptor on a thread's /proc file at the dump (hold, blink, flicker),
# with the roots' real CRIU; about 30 s.
SLURM_E2E += shepherd/thread-files.sh
# Issue 29: a step of several tasks restored from its newest flushed set after
# a node loss (the prolog reads the flush root's sets); skips without MPI/pmix.
SLURM_E2E += %reldir%/e2e-flush-sets.sh
# A requeued job restarting on the nodes where it just ran (within
# cred_expire): every node's prolog stages it in (PrologFlags=Alloc).
SLURM_E2E += %reldir%/e2e-prolog.sh %reldir%/e2e-prolog-flags.sh
# Issue 29: gpuckpt checkpoint of a job whose node's answer is longer than
# one 1024-byte piece of srun's labelled output (15 s in the trixie root).
SLURM_E2E += %reldir%/e2e-checkpoint-long.sh
# Issue 31: a marked long kernel interrupted by scontrol requeue, checkpointed
# within KillWait and resumed after the restore; an unmarked one beside it
# (no checkpoint, the drain's notice names it). About 30 s; on the GPU
# machine it runs gpu-kernel on the real GPU (tests/gpu/README.md).
SLURM_E2E += %reldir%/e2e-kernels.sh
# Issue 27: the two tasks of one step sharing device memory through legacy
# CUDA IPC (served by default, application mode), checkpointed as a set of
# the step, requeued and restored (e2e-ipc.sh; about 30 s).
check_PROGRAMS += %reldir%/prog-ipc-ranks
%canon_reldir%_prog_ipc_ranks_SOURCES = %reldir%/prog-ipc-ranks.c
%canon_reldir%_prog_ipc_ranks_LDADD = $(GK_CUDA_STUB)
SLURM_E2E += %reldir%/e2e-ipc.sh
# Issue 27: an NCCL job of two ranks (srun -N 1 -n 2, GPUCKPT_TASKS=nccl)
# checkpointed transparently as one set of its step, with a real CRIU and the
# stand-ins (the driver with its checkpoint API): requeued and restored on the
# other node, preempted and restored again (e2e-nccl.sh; about 60 s; skips
# without CRIU).
SLURM_E2E += %reldir%/e2e-nccl.sh
# Issue 27, torchrun's shape: two NCCL ranks in one task, one checkpoint of
# the task with each rank's part in it (proc.PID), requeued onto the other
# node and restored (e2e-procs.sh; skips without CRIU).
SLURM_E2E += %reldir%/e2e-procs.sh
