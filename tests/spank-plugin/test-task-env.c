/* Unit tests: what the plugin puts into a task (spank-plugin/task_env.c, ckpt_dir.c). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spank-plugin/ckpt_dir.h"
#include "spank-plugin/task_env.h"
#include "tap.h"

#define RT "/opt/gk/lib/libgpuckpt.so.0"

#include "fake_env.h"

int main(void)
{
	static struct fake_env fe;
	struct gk_env env = {fget, fset, funset, &fe};
	struct gk_inject_result r;
	struct gk_site site;
	struct gk_opts o;
	struct gk_task_ids ids = {12, 0, 3, getuid(), getgid(), 0};
	gk_error_t err;
	char root[] = "/tmp/gk-test-task-env.XXXXXX", path[4096], out[256];
	struct stat st;

	plan(53);
	if (!mkdtemp(root)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	gk_site_defaults(&site);
	snprintf(site.bb_root, sizeof(site.bb_root), "%s", root);
	snprintf(site.runtime, sizeof(site.runtime), "%s", RT);
	gk_opts_init(&o);

	/* LD_PRELOAD handling. */
	gk_preload_add("", RT, out, sizeof(out));
	is_str(out, RT, "preload: added to nothing");
	gk_preload_add("/a.so /b.so", RT, out, sizeof(out));
	is_str(out, "/a.so /b.so:" RT, "preload: appended after the user's own");
	gk_preload_add("/a.so:" RT, RT, out, sizeof(out));
	is_str(out, "/a.so:" RT, "preload: not added twice");
	gk_preload_remove("/a.so:" RT ":/b.so", RT, out, sizeof(out));
	is_str(out, "/a.so:/b.so", "preload: removed, others kept");
	gk_preload_remove(RT, RT, out, sizeof(out));
	is_str(out, "", "preload: removed, nothing left");
	is_int(gk_preload_add("/a.so", RT, out, 8), -ENAMETOOLONG, "preload: too long reported");

	/* A first run of task 3 of step 0. */
	is_int(gk_inject(&site, &o, &ids, &env, &r, &err), 0, "inject: succeeds");
	snprintf(path, sizeof(path), "%s/12/step.0/task.3", root);
	is_str(val(&fe, "GPUCKPT_DIR"), path, "GPUCKPT_DIR is root/job/step/task");
	ok(stat(path, &st) == 0 && S_ISDIR(st.st_mode), "the task folder exists");
	is_int(st.st_mode & 07777, 0700, "task folder mode 0700");
	is_int(st.st_uid, getuid(), "task folder owned by the job's user");
	snprintf(path, sizeof(path), "%s/12", root);
	stat(path, &st);
	is_int(st.st_mode & 07777, 0700, "job folder mode 0700");
	is_str(val(&fe, "LD_PRELOAD"), RT, "LD_PRELOAD is the runtime");
	is_str(val(&fe, "GPUCKPT_CHECKPOINT"), "on", "GPUCKPT_CHECKPOINT=on for inner steps");
	is_str(val(&fe, "GPUCKPT_RESTART_COUNT"), "0", "restart count 0");
	ok(val(&fe, "GPUCKPT_RESTORE") == NULL, "no restore on a first run");
	is_str(val(&fe, "GPUCKPT_KEEP"), "2", "keep from the site");
	ok(val(&fe, "GPUCKPT_INTERVAL") == NULL, "interval left to the runtime");
	is_int(r.dir_rc, 0, "folder made");

	/* The user's own LD_PRELOAD, a restore they set, their keep. */
	fset(&fe, "LD_PRELOAD", "/usr/lib/libfoo.so", 1);
	fset(&fe, "GPUCKPT_RESTORE", "/elsewhere/ckpt.000001", 1);
	fset(&fe, "GPUCKPT_KEEP", "7", 1);
	fset(&fe, "GPUCKPT_INTERVAL", "60", 1);
	site.interval = 900;
	o.on_bad_fresh = 1;
	gk_inject(&site, &o, &ids, &env, &r, &err);
	is_str(val(&fe, "LD_PRELOAD"), "/usr/lib/libfoo.so:" RT, "runtime appended to the user's");
	ok(val(&fe, "GPUCKPT_RESTORE") == NULL, "a restore the task did not earn is removed");
	is_str(val(&fe, "GPUCKPT_KEEP"), "7", "the user's keep stays");
	is_str(val(&fe, "GPUCKPT_INTERVAL"), "60", "the user's interval beats the site's");
	is_str(val(&fe, "GPUCKPT_ON_BAD_CHECKPOINT"), "fresh", "the option's on-bad is set");
	o.interval = 5;
	gk_inject(&site, &o, &ids, &env, &r, &err);
	is_str(val(&fe, "GPUCKPT_INTERVAL"), "5", "an option beats the user's variable");

	/* A restart: restore only from committed checkpoints of this task. */
	fset(&fe, "SLURM_RESTART_COUNT", "1", 1);
	gk_inject(&site, &o, &ids, &env, &r, &err);
	ok(val(&fe, "GPUCKPT_RESTORE") == NULL, "restart with no checkpoint: fresh start");
	is_str(val(&fe, "GPUCKPT_RESTART_COUNT"), "1", "restart count passed on");
	snprintf(path, sizeof(path), "%s/12/step.0/task.3", root);
	mkckpt(path, "ckpt.000002", 1);
	mkckpt(path, "ckpt.000005", 0);
	mkckpt(path, ".tmp.1234", 1);
	{
		char link[4200];

		snprintf(link, sizeof(link), "%s/ckpt.000009", path);
		if (symlink("/tmp", link) < 0)
			printf("# symlink %s: %s\n", link, strerror(errno));
	}
	is_int(gk_inject(&site, &o, &ids, &env, &r, &err), 0, "inject on restart");
	is_str(val(&fe, "GPUCKPT_RESTORE"), "auto",
	       "restart with a checkpoint: GPUCKPT_RESTORE=auto");
	is_str(r.newest, "ckpt.000002",
	       "newest committed one found; uncommitted, .tmp and links skipped");
	fset(&fe, "SLURM_RESTART_COUNT", "garbage", 1);
	gk_inject(&site, &o, &ids, &env, &r, &err);
	ok(val(&fe, "GPUCKPT_RESTORE") == NULL, "unreadable restart count counts as a first run");
	fset(&fe, "SLURM_RESTART_COUNT", "2", 1);

	/* Another task of the same step never sees task 3's checkpoints. */
	ids.task_id = 4;
	gk_inject(&site, &o, &ids, &env, &r, &err);
	ok(val(&fe, "GPUCKPT_RESTORE") == NULL, "task 4 does not restore task 3's image");
	ok(strstr(val(&fe, "GPUCKPT_DIR"), "/task.4") != NULL, "task 4 has its own folder");
	ids.task_id = 3;

	/* The batch step has its own folder. */
	ids.step_id = GK_STEP_BATCH;
	gk_inject(&site, &o, &ids, &env, &r, &err);
	ok(strstr(val(&fe, "GPUCKPT_DIR"), "/12/step.batch/task.3") != NULL, "batch step folder");
	ids.step_id = 0;

	/* Tampering: a link where a folder should be. */
	snprintf(path, sizeof(path), "%s/12/step.7", root);
	if (symlink("/etc", path) < 0)
		printf("# symlink %s: %s\n", path, strerror(errno));
	ids.step_id = 7;
	err.text[0] = '\0';
	{
		int rc = gk_inject(&site, &o, &ids, &env, &r, &err);

		/* O_DIRECTORY|O_NOFOLLOW on a link: ENOTDIR on Linux, ELOOP elsewhere. */
		ok(rc == -ENOTDIR || rc == -ELOOP,
		   "a link in place of the step folder is refused (%d)", rc);
	}
	ok(strstr(err.text, "step.7") && strstr(err.text, "refused"), "error names it: %s",
	   err.text);
	ids.step_id = 0;

	/* Tampering: a folder of another user (needs root to make one). */
	if (geteuid() == 0) {
		snprintf(path, sizeof(path), "%s/13", root);
		mkdir(path, 0700);
		if (chown(path, 4242, 4242) < 0)
			printf("# chown %s: %s\n", path, strerror(errno));
		ids.job_id = 13;
		err.text[0] = '\0';
		is_int(gk_inject(&site, &o, &ids, &env, &r, &err), -EPERM,
		       "another user's job folder is refused");
		ok(strstr(err.text, "uid 4242") != NULL, "error names the owner: %s", err.text);
		ids.job_id = 12;
	} else {
		skip("needs root to make a folder owned by someone else");
		skip("needs root to make a folder owned by someone else");
	}

	/* No burst buffer: the job runs on with the runtime, and says why. */
	snprintf(site.bb_root, sizeof(site.bb_root), "%s/missing", root);
	is_int(gk_inject(&site, &o, &ids, &env, &r, &err), 0, "missing burst buffer is not fatal");
	is_int(r.dir_rc, -ENOENT, "reported as ENOENT");
	ok(strstr(r.dir_err.text, "missing") != NULL, "message names the root: %s", r.dir_err.text);
	ok(val(&fe, "GPUCKPT_RESTORE") == NULL, "nothing to restore from a missing folder");
	snprintf(site.bb_root, sizeof(site.bb_root), "%s", root);

	/* A burst-buffer root others can write: they could swap the job's folder
	 * for a link before root makes it. Refused, naming the setting. */
	snprintf(site.bb_root, sizeof(site.bb_root), "%s/open", root);
	mkdir(site.bb_root, 0777);
	chmod(site.bb_root, 0777);
	err.text[0] = '\0';
	is_int(gk_inject(&site, &o, &ids, &env, &r, &err), -EPERM,
	       "a bb_root anyone can write is refused");
	ok(strstr(err.text, "bb_root=") && strstr(err.text, "writable by group or others"),
	   "the message names the setting: %s", err.text);
	snprintf(path, sizeof(path), "%s/open/12", root);
	ok(access(path, F_OK) < 0, "and nothing was made in it");
	snprintf(site.bb_root, sizeof(site.bb_root), "%s", root);

	/* Off in a step inside a job that has it on: what was inherited goes. */
	fset(&fe, "LD_PRELOAD", "/usr/lib/libfoo.so:" RT, 1);
	fset(&fe, "GPUCKPT_RESTORE", "auto", 1);
	is_int(gk_uninject(&site, &env, &err), 0, "uninject");
	is_str(val(&fe, "LD_PRELOAD"), "/usr/lib/libfoo.so", "runtime taken out of LD_PRELOAD");
	ok(val(&fe, "GPUCKPT_DIR") == NULL && val(&fe, "GPUCKPT_RESTORE") == NULL,
	   "GPUCKPT_DIR and GPUCKPT_RESTORE removed");
	is_str(val(&fe, "GPUCKPT_CHECKPOINT"), "off", "GPUCKPT_CHECKPOINT=off for inner steps");

	/* Off with nothing inherited: untouched. */
	memset(&fe, 0, sizeof(fe));
	fset(&fe, "LD_PRELOAD", "/usr/lib/libfoo.so", 1);
	is_int(gk_uninject(&site, &env, &err), 0, "uninject with nothing inherited");
	is_int(fe.n, 1, "environment untouched");
	is_str(val(&fe, "LD_PRELOAD"), "/usr/lib/libfoo.so", "user's LD_PRELOAD untouched");

	/* The step names. */
	gk_step_dirname(GK_STEP_INTERACTIVE, out, sizeof(out));
	is_str(out, "step.interactive", "interactive step folder name");

	snprintf(path, sizeof(path), "rm -rf '%s'", root);
	if (system(path) != 0)
		printf("# could not remove %s\n", root);
	return done_testing();
}
