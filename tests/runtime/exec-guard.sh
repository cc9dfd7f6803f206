#!/bin/bash
# The runtime's exec functions (runtime/core/interpose/exec_guard.c): when the task's
# own process (SLURM_TASK_PID) of a checkpointed task starts a program whose
# environment no longer preloads the runtime (env -i), the job's output gets
# one line naming both; the program still runs, with its arguments as given.
# Nothing is said when the runtime stays preloaded, when the exec happens in
# another process than the task's, or when checkpointing is off.
. "${top_srcdir:-.}/tests/lib/helpers.sh"
B=$top_builddir/tests/runtime
tap_plan 9
gk_scratch
LINE='gpuckpt: job 7 step.0 task 2: env starts /bin/echo without the gpuckpt runtime'

# as_task CMD...: CMD as task 2 of job 7 step 0 with checkpointing on, in a
# shell whose pid is the task's (the shell execs CMD, so CMD's pid is the task's).
as_task() {
	env GPUCKPT_CHECKPOINT=on GPUCKPT_DIR="$GK_SCRATCH/ckpt" SLURM_JOB_ID=7 SLURM_STEP_ID=0 \
		SLURM_PROCID=2 LD_PRELOAD="$(gk_preload)" \
		bash -c 'export SLURM_TASK_PID=$$; exec "$@"' as_task "$@"
}

out=$(as_task env -i /bin/echo one two 2>&1)
check "env -i in the task's process: the line names env and the program" grep -q "^$LINE" <<<"$out"
check "... once, and the program ran with its arguments" \
	test "$(grep -c 'without the gpuckpt runtime' <<<"$out")" -eq 1 -a "$(grep -c '^one two$' <<<"$out")" -eq 1
out=$(as_task env -u NOTHING /bin/echo kept 2>&1)
check "the runtime still preloaded: nothing said" test "$out" = kept
out=$(as_task bash -c 'env -i /bin/echo child; true' 2>&1)
check "env -i in a child of the task's process (a helper): nothing said" test "$out" = child
out=$(env GPUCKPT_CHECKPOINT=off LD_PRELOAD="$(gk_preload)" bash -c 'export SLURM_TASK_PID=$$; exec env -i /bin/echo off' 2>&1)
check "checkpointing off: nothing said" test "$out" = off
out=$(as_task "$B/prog-exec" execle /bin/echo a b c 2>&1)
check "execle with an empty environment: said, and the arguments arrive" \
	eval 'grep -q "prog-exec starts /bin/echo without the gpuckpt runtime" <<<"$out" && grep -q "^a b c$" <<<"$out"'
out=$(as_task "$B/prog-exec" execl /bin/echo x 2>&1)
check "execl keeps the environment: nothing said, the argument arrives" test "$out" = x
out=$(as_task "$B/prog-exec" execlp echo y z 2>&1)
check "execlp: nothing said, found on PATH, the arguments arrive" test "$out" = "y z"
out=$(as_task "$B/prog-exec" execle /nonexistent/prog 2>&1; echo "status $?")
check "an exec that fails still fails as it would (status 127, errno kept)" \
	eval 'grep -q "prog-exec: No such file or directory" <<<"$out" && grep -q "^status 127$" <<<"$out"'
