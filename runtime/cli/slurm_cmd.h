/*
 * slurm_cmd.h - what `gpuckpt checkpoint` asks of Slurm, through Slurm's own
 * commands run as the user (scontrol, srun, scancel, from PATH; no shell).
 * Going through the commands rather than libslurm keeps the tool free of
 * Slurm's ABI: one build works with every Slurm release, and Slurm itself
 * decides what the user may do.
 */
#ifndef GK_SLURM_CMD_H
#define GK_SLURM_CMD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct cmd_result {
	int status; /* exit status; 128+N when killed by signal N; -errno when not run */
	char *out;  /* stdout, NUL-terminated (malloc'ed; at most 4 MiB kept) */
	size_t outlen;
	char *err; /* stderr, the same */
	size_t errlen;
};

/* Run argv[0] (found in PATH) with argv; the environment is the tool's with
 * every SLURM_* variable but SLURM_CONF taken out (so that running it inside
 * another job changes nothing), then `extra_env` (NAME=VALUE, NULL-ended,
 * may be NULL) added. Run by root, PATH keeps only absolute folders of
 * root's that no one else can write. Killed after timeout seconds (0: none). */
int cmd_run(char *const argv[], char *const extra_env[], unsigned timeout, struct cmd_result *r);

/* The same, run with a user's credentials (uid, gid, the user's groups):
 * root's `gpuckpt checkpoint` looks at a job's nodes as the job's user,
 * whom Slurm named, so that Slurm lets the step in and nothing on the nodes
 * runs as root. A caller that is not root passes its own ids (nothing
 * changes). */
int cmd_run_as(char *const argv[], char *const extra_env[], unsigned timeout, uid_t uid,
	       gid_t gid, const char *user, struct cmd_result *r);
void cmd_result_free(struct cmd_result *r);

/* The last non-empty line of a command's stderr, without a trailing newline
 * (for messages), into buf. */
void cmd_last_line(const char *text, char *buf, size_t len);

/* What the tool needs to know of a job (scontrol show job -o). */
struct job_info {
	char id[32]; /* JobId, as Slurm names it */
	uid_t uid;
	gid_t gid; /* GroupId */
	char user[64];
	char state[32]; /* RUNNING, PENDING, ... */
	int requeue;	/* Requeue=1 */
	int batch;	/* BatchFlag=1 */
	unsigned nnodes;
	char nodes[1024]; /* NodeList */
};

/* The value of `key` in a one-line `scontrol show job -o` text, into buf:
 * 0, or -ENOENT when the key is not there. */
int job_field(const char *line, const char *key, char *buf, size_t len);

/* Parse `scontrol show job -o` output of one job. 0 or -EINVAL. */
int job_info_parse(const char *text, struct job_info *j);

/* The steps of a job as `squeue -h -s -j JOB -o %i` lists them
 * ("1234.0", "1234.batch", "1234_5.0"): the names after the last '.' ("0",
 * "batch"), each 1-15 of [A-Za-z0-9] (others skipped), joined by ',' into
 * buf ("" when none). 0, or -ENOSPC. */
int job_steps_parse(const char *text, char *buf, size_t len);

/* The value of `key` in `scontrol show config` output ("Key = value"):
 * 0, or -ENOENT. */
int config_field(const char *text, const char *key, char *buf, size_t len);

/* bb_root= of the line of a plugstack.conf text that loads gpuckpt's plugin
 * (a path ending in spank_gpuckpt.so): 0 with it in buf; 1 when that line
 * has none (the plugin's default applies); -ENOENT when no line loads it. */
int plugstack_bb_root(const char *text, char *buf, size_t len);

#endif
