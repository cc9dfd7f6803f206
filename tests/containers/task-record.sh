# task-record.sh - sourced by the tests of podman's hook (oci-hook.sh,
# tests/security/container-attacks.sh): what the SPANK plugin writes, as
# root, when it starts a task with checkpoints on (PID-START, spank-plugin/
# container_owner.h), here for the test's own shell, which every hook run of
# the test descends from, as podman descends from its task. The hook, when
# it is root on the host, mounts only what such a record of one of its
# ancestors allows.

GK_TASK_RECORDS=/run/gpuckpt/tasks

# task_record PID JOB UID PATH...: PID's record (its start time read now).
task_record() {
	local pid=$1 job=$2 uid=$3 start
	shift 3
	start=${GK_RECORD_START:-$(sed 's/.*) //' "/proc/$pid/stat" | cut -d' ' -f20)}
	mkdir -p -m 0755 /run/gpuckpt
	mkdir -p -m 0700 "$GK_TASK_RECORDS"
	task_record_drop "$pid"
	{
		echo "gpuckpt-task 1"
		echo "pid $pid"
		echo "start $start"
		echo "job $job"
		echo "uid $uid"
		for p; do echo "bind $p"; done
	} >"$GK_TASK_RECORDS/.$pid-$start" && mv "$GK_TASK_RECORDS/.$pid-$start" "$GK_TASK_RECORDS/$pid-$start"
}

# task_record_drop PID: its records gone.
task_record_drop() { rm -f "$GK_TASK_RECORDS/$1"-*; }
