# Unit tests (TAP) of the SPANK plugin's modules (spank-plugin/), linked
# against its library without Slurm; fake_env.h stands in for a task's
# environment. The Slurm cluster tests are in tests/slurm/.
PLUGIN_UNIT_CPPFLAGS = $(AM_CPPFLAGS)
PLUGIN_UNIT_LDADD = $(top_builddir)/spank-plugin/libgkspank.la $(GK_UNIT_LIBS)
PLUGIN_UNIT_TESTS = \
	%reldir%/test-site-args \
	%reldir%/test-job-options \
	%reldir%/test-task-env \
	%reldir%/test-stage-run \
	%reldir%/test-shepherd-launch \
	%reldir%/test-step-restore \
	%reldir%/test-job-record \
	%reldir%/test-ckpt-dir-race \
	%reldir%/test-find-committed \
	%reldir%/test-task-program \
	%reldir%/test-container-env
TESTS += $(PLUGIN_UNIT_TESTS)
check_PROGRAMS += $(PLUGIN_UNIT_TESTS)
%canon_reldir%_test_site_args_SOURCES = %reldir%/test-site-args.c
%canon_reldir%_test_site_args_CPPFLAGS = $(PLUGIN_UNIT_CPPFLAGS)
%canon_reldir%_test_site_args_LDADD = $(PLUGIN_UNIT_LDADD)
%canon_reldir%_test_job_options_SOURCES = %reldir%/test-job-options.c
%canon_reldir%_test_job_options_CPPFLAGS = $(PLUGIN_UNIT_CPPFLAGS)
%canon_reldir%_test_job_options_LDADD = $(PLUGIN_UNIT_LDADD)
%canon_reldir%_test_task_env_SOURCES = %reldir%/test-task-env.c %reldir%/fake_env.h
%canon_reldir%_test_task_env_CPPFLAGS = $(PLUGIN_UNIT_CPPFLAGS)
%canon_reldir%_test_task_env_LDADD = $(PLUGIN_UNIT_LDADD)
%canon_reldir%_test_stage_run_SOURCES = %reldir%/test-stage-run.c
%canon_reldir%_test_stage_run_CPPFLAGS = $(PLUGIN_UNIT_CPPFLAGS)
%canon_reldir%_test_stage_run_LDADD = $(PLUGIN_UNIT_LDADD)
%canon_reldir%_test_container_env_SOURCES = %reldir%/test-container-env.c %reldir%/fake_env.h
%canon_reldir%_test_container_env_CPPFLAGS = $(PLUGIN_UNIT_CPPFLAGS)
%canon_reldir%_test_container_env_LDADD = $(PLUGIN_UNIT_LDADD)
%canon_reldir%_test_step_restore_SOURCES = %reldir%/test-step-restore.c %reldir%/fake_env.h
%canon_reldir%_test_step_restore_CPPFLAGS = $(PLUGIN_UNIT_CPPFLAGS)
%canon_reldir%_test_step_restore_LDADD = $(PLUGIN_UNIT_LDADD)
%canon_reldir%_test_shepherd_launch_SOURCES = %reldir%/test-shepherd-launch.c %reldir%/fake_env.h
%canon_reldir%_test_shepherd_launch_CPPFLAGS = $(PLUGIN_UNIT_CPPFLAGS)
%canon_reldir%_test_shepherd_launch_LDADD = $(PLUGIN_UNIT_LDADD)
%canon_reldir%_test_job_record_SOURCES = %reldir%/test-job-record.c
%canon_reldir%_test_job_record_CPPFLAGS = $(PLUGIN_UNIT_CPPFLAGS)
%canon_reldir%_test_job_record_LDADD = $(PLUGIN_UNIT_LDADD)
%canon_reldir%_test_ckpt_dir_race_SOURCES = %reldir%/test-ckpt-dir-race.c
%canon_reldir%_test_ckpt_dir_race_CPPFLAGS = $(PLUGIN_UNIT_CPPFLAGS)
%canon_reldir%_test_ckpt_dir_race_LDADD = $(PLUGIN_UNIT_LDADD)
%canon_reldir%_test_find_committed_SOURCES = %reldir%/test-find-committed.c
%canon_reldir%_test_find_committed_CPPFLAGS = $(PLUGIN_UNIT_CPPFLAGS)
%canon_reldir%_test_find_committed_LDADD = $(PLUGIN_UNIT_LDADD)
%canon_reldir%_test_task_program_SOURCES = %reldir%/test-task-program.c
%canon_reldir%_test_task_program_CPPFLAGS = $(PLUGIN_UNIT_CPPFLAGS)
%canon_reldir%_test_task_program_LDADD = $(PLUGIN_UNIT_LDADD)
# The hand-over of a task's program to the real gpuckpt-shepherd (issue 29).
TESTS += %reldir%/test-shepherd-handoff
check_PROGRAMS += %reldir%/test-shepherd-handoff
%canon_reldir%_test_shepherd_handoff_SOURCES = %reldir%/test-shepherd-handoff.c
%canon_reldir%_test_shepherd_handoff_CPPFLAGS = $(PLUGIN_UNIT_CPPFLAGS)
%canon_reldir%_test_shepherd_handoff_LDADD = $(PLUGIN_UNIT_LDADD)
# The record that ties rootful podman's containers to their job (container_owner.c).
TESTS += %reldir%/test-container-owner
check_PROGRAMS += %reldir%/test-container-owner
%canon_reldir%_test_container_owner_SOURCES = %reldir%/test-container-owner.c %reldir%/fake_env.h
%canon_reldir%_test_container_owner_CPPFLAGS = $(PLUGIN_UNIT_CPPFLAGS)
%canon_reldir%_test_container_owner_LDADD = $(PLUGIN_UNIT_LDADD)
