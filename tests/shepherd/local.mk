# Transparent mode's shepherd, without CRIU or a GPU: its checks (socket
# peers and messages, the tree's owners, the stdio and GPU plans; the seal's
# own tests are tests/image/test-seal) in C, its command line and
# probe in a script. Root parts report a TAP skip when run as a user.
GK_SHEPHERD_LIBS = $(top_builddir)/runtime/libgkshepherd.la
TESTS += %reldir%/test-shepherd %reldir%/test-shepherd-cli.sh %reldir%/test-shepherd-flow.sh \
	%reldir%/agent.sh %reldir%/stdio-criu.sh %reldir%/test-links
check_PROGRAMS += %reldir%/test-shepherd %reldir%/shep-client %reldir%/test-links
# What ties a tree to processes outside it (links.c): real sockets, no CRIU.
%canon_reldir%_test_links_SOURCES = %reldir%/test-links.c
%canon_reldir%_test_links_LDADD = $(GK_SHEPHERD_LIBS)
# A stopped process with one thread let run (hold.c), as a restore holds
# the tree for the driver.
TESTS += %reldir%/test-hold
check_PROGRAMS += %reldir%/test-hold
%canon_reldir%_test_hold_SOURCES = %reldir%/test-hold.c
%canon_reldir%_test_hold_LDADD = $(GK_SHEPHERD_LIBS) -lpthread
# The deadline on the driver's calls of a restore (watchdog.c).
TESTS += %reldir%/test-watchdog
check_PROGRAMS += %reldir%/test-watchdog
%canon_reldir%_test_watchdog_SOURCES = %reldir%/test-watchdog.c
%canon_reldir%_test_watchdog_LDADD = $(GK_SHEPHERD_LIBS) -lpthread
%canon_reldir%_test_shepherd_SOURCES = %reldir%/test-shepherd.c
%canon_reldir%_test_shepherd_LDADD = $(GK_SHEPHERD_LIBS)
# The runtime's side of the socket, for test-shepherd-flow.sh.
%canon_reldir%_shep_client_SOURCES = %reldir%/shep-client.c
EXTRA_DIST += %reldir%/test-shepherd-cli.sh %reldir%/test-shepherd-flow.sh %reldir%/agent.sh \
	%reldir%/stdio-criu.sh

# A child forked without exec holds no driver device file or mapping in
# transparent mode (runtime/core/control/fork_maps.c).
TESTS += %reldir%/fork-devices.sh
EXTRA_DIST += %reldir%/fork-devices.sh
# Several CUDA processes of one task (torchrun's ranks): their folders become
# parts of the task's checkpoint, and go back when the dump fails
# (proc_parts.c); a shell around them holds an outside SIGTERM. Root; a fake
# CRIU.
TESTS += %reldir%/procs.sh
EXTRA_DIST += %reldir%/procs.sh
check_PROGRAMS += %reldir%/prog-fork-dev
%canon_reldir%_prog_fork_dev_SOURCES = %reldir%/prog-fork-dev.c
%canon_reldir%_prog_fork_dev_LDADD = $(GK_CUDA_STUB)

# A descriptor on a thread's /proc file at a transparent checkpoint: waited
# for, else refused by name (checkpoint.c, stop_without_thread_files); CRIU 4, root.
TESTS += %reldir%/thread-files.sh
EXTRA_DIST += %reldir%/thread-files.sh
check_PROGRAMS += %reldir%/prog-threadfile
%canon_reldir%_prog_threadfile_SOURCES = %reldir%/prog-threadfile.c
%canon_reldir%_prog_threadfile_LDADD = -lpthread

# A device-to-host copy on another thread while transparent mode has device
# memory released (agent.sh): it must wait at the gate, not read freed memory.
check_PROGRAMS += %reldir%/prog-dtoh
%canon_reldir%_prog_dtoh_SOURCES = %reldir%/prog-dtoh.c
%canon_reldir%_prog_dtoh_LDADD = $(GK_CUDA_STUB) -lpthread
