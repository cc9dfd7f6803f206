/*
 * test-slurm-cmd - what `gpuckpt checkpoint` reads from `scontrol show job -o`
 * (runtime/cli/slurm_cmd.c), on lines as Slurm 22.05 and 24.11 print them,
 * and cmd_run: a command's output, status, and the environment it gets.
 */
#include "config.h"
#include "slurm_cmd.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Abridged from real output (the test cluster, 22.05 and 24.11). */
static const char line_2205[] =
    "JobId=12 JobName=heat job UserId=gkuser1(1001) GroupId=gkuser1(1001) MCS_label=N/A "
    "Priority=4294901748 Nice=0 Account=(null) QOS=(null) JobState=RUNNING Reason=None "
    "Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 "
    "RunTime=00:00:05 NodeList=gk[1-2] BatchHost=gk1 NumNodes=2 NumCPUs=4 NumTasks=2 "
    "Comment=UserId=root(0) tricks AdminComment=gpuckpt: 1 checkpoint, 0 restores\n";
static const char line_2411[] =
    "JobId=7 ArrayJobId=6 ArrayTaskId=1 JobName=wrap UserId=alice(2000) GroupId=alice(2000) "
    "JobState=PENDING Reason=JobHeldUser Requeue=0 Restarts=1 BatchFlag=1 "
    "NodeList=(null) NumNodes=1-1 NumCPUs=1\n";

int main(void)
{
	struct job_info j;
	struct cmd_result r;
	char buf[64];

	plan(17);
	is_int(job_info_parse(line_2205, &j), 0, "22.05 line parsed");
	is_str(j.id, "12", "JobId");
	ok(j.uid == 1001 && !strcmp(j.user, "gkuser1"), "UserId name(uid), not the one in Comment");
	is_str(j.state, "RUNNING", "JobState");
	ok(j.requeue && j.batch && j.nnodes == 2, "Requeue, BatchFlag, NumNodes");
	is_str(j.nodes, "gk[1-2]", "NodeList");
	is_int(job_info_parse(line_2411, &j), 0, "24.11 line (array element, held) parsed");
	ok(j.uid == 2000 && !strcmp(j.state, "PENDING") && !j.requeue && j.nnodes == 1,
	   "its owner, state, Requeue=0 and NumNodes=1-1");
	is_int(job_field(line_2205, "Reason", buf, sizeof(buf)), 0, "a field by name");
	is_str(buf, "None", "its value ends at the blank");
	is_int(job_field(line_2205, "Nope", buf, sizeof(buf)), -2, "a missing field is -ENOENT");
	ok(job_info_parse("JobId=5 JobState=RUNNING\n", &j) < 0, "no UserId: refused");
	ok(job_info_parse("JobId=5 UserId=bob(x) JobState=RUNNING\n", &j) < 0,
	   "a UserId without a number: refused");
	ok(job_info_parse("slurm_load_jobs error: Invalid job id specified\n", &j) < 0,
	   "an error message is not a job");

	{
		char *argv[] = {"sh", "-c", "echo out; echo \"err $SLURM_JOB_ID$GK_X\" >&2; exit 3",
				NULL};
		char *env[] = {"GK_X=x", NULL};

		setenv("SLURM_JOB_ID", "99", 1);
		ok(cmd_run(argv, env, 10, &r) == 0 && r.status == 3, "cmd_run: the exit status");
		ok(!strcmp(r.out, "out\n"), "cmd_run: stdout captured");
		ok(!strcmp(r.err, "err x\n"),
		   "cmd_run: stderr apart; SLURM_JOB_ID taken out, the extra variable in");
		cmd_result_free(&r);
	}
	return done_testing();
}
