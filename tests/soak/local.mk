# The soak (issue 29): many jobs under a seeded random schedule of faults on
# the test cluster. bounded.sh, in make check-slurm, runs it with a fixed
# seed on the newest Slurm release only (a SKIP elsewhere); `make soak`
# (SOAK_SECONDS, SOAK_SEED, SOAK_NODES, SOAK_JOBS, SOAK_FAULT_GAP) is the
# long run, which reproduces a failure from its seed. docs/soak.md.
SLURM_E2E += %reldir%/bounded.sh
EXTRA_DIST += %reldir%/soak.sh %reldir%/bounded.sh

soak: all
	$(MAKE) $(AM_MAKEFLAGS) -j1 check TESTS='%reldir%/soak.sh'
.PHONY: soak
