/*
 * test-slurm-cmd - what `gpuckpt checkpoint` reads from `scontrol show job -o`
 * (runtime/cli/slurm_cmd.c), on lines as Slurm 22.05 and 24.11 print them,
 * and cmd_run: a command's output, status, and the environment it gets.
 */
#include "config.h"
#include "cli/slurm_cmd.h"
#include "tap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

	plan(28);
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
	/* Issue 24, hole 5: what root's checkpoint takes from Slurm. */
	job_info_parse(line_2205, &j);
	ok(j.gid == 1001, "GroupId name(gid) parsed");
	{
		char steps[64], big[8];

		is_int(job_steps_parse("12.0\n12.batch\n12.extern\n12_3.15\n12.x y\n12.\n", steps,
				       sizeof(steps)),
		       0, "squeue -s steps parsed");
		is_str(steps, "0,batch,extern,15", "the names after the job's, odd ones skipped");
		is_int(job_steps_parse("12.0\n12.1\n12.2\n12.3\n12.4\n", big, sizeof(big)), -ENOSPC,
		       "too many for the buffer: -ENOSPC");
	}
	{
		char v[256];
		const char *conf = "Configuration data as of 2026-11-28T03:00:00\n"
				   "PlugStackConfig         = /etc/slurm/plugstack.conf\n"
				   "PluginDir               = /usr/lib/slurm\n";

		ok(config_field(conf, "PlugStackConfig", v, sizeof(v)) == 0 &&
		       !strcmp(v, "/etc/slurm/plugstack.conf"),
		   "scontrol show config: PlugStackConfig");
		is_int(config_field(conf, "PlugStack", v, sizeof(v)), -ENOENT,
		       "a key's prefix is not the key");
		ok(plugstack_bb_root("# required /x/spank_gpuckpt.so bb_root=/no\n"
				     "optional /usr/lib/spank_other.so bb_root=/other\n"
				     "required /usr/lib/slurm/spank_gpuckpt.so bb_root=/a keep=2 "
				     "bb_root=/local/bb # bb_root=/comment\n",
				     v, sizeof(v)) == 0 &&
		       !strcmp(v, "/local/bb"),
		   "plugstack.conf: gpuckpt's line, its last bb_root=, comments and other "
		   "plugins skipped");
		is_int(plugstack_bb_root("required\tspank_gpuckpt.so keep=2\n", v, sizeof(v)), 1,
		       "gpuckpt's line without bb_root=: 1 (the default)");
		is_int(plugstack_bb_root("required /x/not_spank_gpuckpt.so bb_root=/a\n", v,
					 sizeof(v)),
		       -ENOENT, "a plugin whose name only ends alike is not gpuckpt's");
		is_int(plugstack_bb_root("include /etc/slurm/plugstack.conf.d/*\n", v, sizeof(v)),
		       -ENOENT, "no line loads gpuckpt: -ENOENT");
	}
	/* Root's PATH: "", "." and folders others can write are dropped. */
	if (getuid() == 0) {
		char dir[] = "/tmp/gk-test-path.XXXXXX";
		char path[256], want[64];
		char *argv[] = {"sh", "-c", "printf %s \"$PATH\"", NULL};

		if (mkdtemp(dir) && chmod(dir, 0777) == 0) {
			snprintf(path, sizeof(path), ".::%s:relative:/usr/bin:/bin", dir);
			setenv("PATH", path, 1);
			snprintf(want, sizeof(want), "/usr/bin:/bin");
			ok(cmd_run(argv, NULL, 10, &r) == 0 && !strcmp(r.out, want),
			   "root's PATH for Slurm's commands keeps only root's own folders");
			cmd_result_free(&r);
			rmdir(dir);
		} else {
			ok(0, "a folder for the PATH test");
		}
	} else {
		skip("root's PATH: needs root");
	}
	return done_testing();
}
