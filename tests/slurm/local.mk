# The Slurm side: unit tests of the SPANK plugin's modules and of the staging
# script (make check), and end-to-end tests against a real Slurm cluster
# started on this machine by cluster.sh (make check-slurm: needs root).
SLURM_UNIT_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/spank-plugin -I$(top_srcdir)/runtime/image
SLURM_UNIT_LDADD = $(top_builddir)/spank-plugin/libgkspank.la

check_PROGRAMS += %reldir%/test_site_args %reldir%/test_job_options \
	%reldir%/test_task_env %reldir%/test_stage_run %reldir%/test_shepherd_launch \
	%reldir%/test_step_restore \
	%reldir%/test_job_record %reldir%/test_ckpt_dir_race %reldir%/test_find_committed %reldir%/test_task_program \
	%reldir%/test_container_env
TESTS += %reldir%/test_site_args %reldir%/test_job_options \
	%reldir%/test_task_env %reldir%/test_stage_run %reldir%/test_shepherd_launch \
	%reldir%/test_step_restore \
	%reldir%/test_job_record %reldir%/test_ckpt_dir_race %reldir%/test_find_committed %reldir%/test_task_program \
	%reldir%/test_container_env containers/oci-hook.sh \
	%reldir%/stage.sh
%canon_reldir%_test_site_args_SOURCES = %reldir%/test_site_args.c
%canon_reldir%_test_site_args_CPPFLAGS = $(SLURM_UNIT_CPPFLAGS)
%canon_reldir%_test_site_args_LDADD = $(SLURM_UNIT_LDADD)
%canon_reldir%_test_job_options_SOURCES = %reldir%/test_job_options.c
%canon_reldir%_test_job_options_CPPFLAGS = $(SLURM_UNIT_CPPFLAGS)
%canon_reldir%_test_job_options_LDADD = $(SLURM_UNIT_LDADD)
%canon_reldir%_test_task_env_SOURCES = %reldir%/test_task_env.c %reldir%/fake_env.h
%canon_reldir%_test_task_env_CPPFLAGS = $(SLURM_UNIT_CPPFLAGS)
%canon_reldir%_test_task_env_LDADD = $(SLURM_UNIT_LDADD)
%canon_reldir%_test_stage_run_SOURCES = %reldir%/test_stage_run.c
%canon_reldir%_test_stage_run_CPPFLAGS = $(SLURM_UNIT_CPPFLAGS)
%canon_reldir%_test_stage_run_LDADD = $(SLURM_UNIT_LDADD)
%canon_reldir%_test_container_env_SOURCES = %reldir%/test_container_env.c %reldir%/fake_env.h
%canon_reldir%_test_container_env_CPPFLAGS = $(SLURM_UNIT_CPPFLAGS)
%canon_reldir%_test_container_env_LDADD = $(SLURM_UNIT_LDADD)
%canon_reldir%_test_step_restore_SOURCES = %reldir%/test_step_restore.c %reldir%/fake_env.h
%canon_reldir%_test_step_restore_CPPFLAGS = $(SLURM_UNIT_CPPFLAGS)
%canon_reldir%_test_step_restore_LDADD = $(SLURM_UNIT_LDADD)
%canon_reldir%_test_shepherd_launch_SOURCES = %reldir%/test_shepherd_launch.c %reldir%/fake_env.h
%canon_reldir%_test_shepherd_launch_CPPFLAGS = $(SLURM_UNIT_CPPFLAGS)
%canon_reldir%_test_shepherd_launch_LDADD = $(SLURM_UNIT_LDADD)
%canon_reldir%_test_job_record_SOURCES = %reldir%/test_job_record.c
%canon_reldir%_test_job_record_CPPFLAGS = $(SLURM_UNIT_CPPFLAGS) -I$(top_srcdir)/runtime/common
%canon_reldir%_test_job_record_LDADD = $(SLURM_UNIT_LDADD)
%canon_reldir%_test_ckpt_dir_race_SOURCES = %reldir%/test_ckpt_dir_race.c
%canon_reldir%_test_ckpt_dir_race_CPPFLAGS = $(SLURM_UNIT_CPPFLAGS)
%canon_reldir%_test_ckpt_dir_race_LDADD = $(SLURM_UNIT_LDADD)
%canon_reldir%_test_find_committed_SOURCES = %reldir%/test_find_committed.c
%canon_reldir%_test_find_committed_CPPFLAGS = $(SLURM_UNIT_CPPFLAGS)
%canon_reldir%_test_find_committed_LDADD = $(SLURM_UNIT_LDADD)
%canon_reldir%_test_task_program_SOURCES = %reldir%/test_task_program.c
%canon_reldir%_test_task_program_CPPFLAGS = $(SLURM_UNIT_CPPFLAGS)
%canon_reldir%_test_task_program_LDADD = $(SLURM_UNIT_LDADD)

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

check-slurm: all
	$(MAKE) $(AM_MAKEFLAGS) -j1 check TESTS='$(SLURM_E2E)'
.PHONY: check-slurm
