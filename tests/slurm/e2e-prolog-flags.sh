#!/bin/bash
# e2e-prolog-flags.sh - a slurm.conf without PrologFlags=Alloc (a test cluster
# started with GK_PROLOG_FLAGS empty): slurmd's log says so as it starts,
# naming the setting (the plugin reads slurmd's own configuration; with it,
# e2e-prolog.sh checks that nothing is said). Why it matters: e2e-prolog.sh.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

e2e_require 2
GK_PROLOG_FLAGS="" e2e_start
tap_diag "slurm.conf: $(grep -E '^PrologFlags=' "$E2E_DIR/etc/slurm.conf" || echo 'no PrologFlags')"
for n in gk1 gk2; do
	wait_for 10 grep -q 'gpuckpt: slurm.conf has no PrologFlags=Alloc' "$E2E_DIR/log/slurmd.$n.log"
	check "$n: slurmd's log says slurm.conf lacks PrologFlags=Alloc, naming it" \
		grep -q 'gpuckpt: slurm.conf has no PrologFlags=Alloc: .*set PrologFlags=Alloc' "$E2E_DIR/log/slurmd.$n.log"
done
tap_done
