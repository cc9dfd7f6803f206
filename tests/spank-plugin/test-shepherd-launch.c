/* Unit tests: transparent mode on the Slurm side (spank-plugin/shepherd_launch.c, the mode option). */
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
#include "spank-plugin/shepherd_launch.h"
#include "tap.h"

#define RT "/opt/gk/lib/libgpuckpt.so.0"

#include "fake_env.h"

/* A fake shepherd in dir: probe prints line and exits with status; its arguments go to dir/args. */
static void fake_shepherd(const char *dir, const char *line, int status)
{
	char p[4096];
	FILE *f;

	snprintf(p, sizeof(p), "%s/gpuckpt-shepherd", dir);
	f = fopen(p, "w");
	fprintf(f, "#!/bin/sh\necho \"$@\" >%s/args\n[ -n '%s' ] && echo '%s'\nexit %d\n", dir,
		line, line, status);
	fclose(f);
	chmod(p, 0755);
}

static void slurp(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	buf[0] = '\0';
	if (f) {
		if (!fgets(buf, (int)len, f))
			buf[0] = '\0';
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = '\0';
}

int main(void)
{
	static struct fake_env fe;
	static struct gk_tplan p;
	static struct gk_inject_result r;
	struct gk_env env = {fget, fset, funset, &fe};
	struct gk_site site;
	struct gk_opts o;
	struct gk_task_ids ids = {12, 0, 0, getuid(), getgid(), 0};
	gk_error_t err;
	char root[] = "/tmp/gk-test-transparent.XXXXXX", path[4096], reason[GK_ERRLEN], buf[8192];
	char *argv[GK_SHEPHERD_MAXARGS + 1];
	enum gk_mode m;
	int rc;

	plan(61);
	if (!mkdtemp(root)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}

	/* Values. */
	ok(gk_parse_mode("auto", &m) == 0 && m == GK_MODE_AUTO, "mode: auto");
	ok(gk_parse_mode("app", &m) == 0 && m == GK_MODE_APP, "mode: app");
	ok(gk_parse_mode("transparent", &m) == 0 && m == GK_MODE_TRANSPARENT, "mode: transparent");
	is_int(gk_parse_mode("Transparent", &m), -EINVAL, "mode: case matters");
	is_int(gk_parse_mode("", &m), -EINVAL, "mode: empty refused");
	gk_opts_init(&o);
	is_int(gk_opts_set(&o, GK_OPT_MODE, "criu", &err), -EINVAL, "option: bad value refused");
	is_str(err.text,
	       "--gpu-checkpoint-mode: invalid value 'criu' (expected auto, app or transparent)",
	       "option: the error names the option, the value and what is expected");
	is_int(gk_opts_check_env(GK_OPT_MODE, "yes", &err), -EINVAL, "variable: bad value refused");
	is_str(err.text, "GPUCKPT_MODE: invalid value 'yes' (expected auto, app or transparent)",
	       "variable: the error names GPUCKPT_MODE");

	/* Site arguments. */
	gk_site_defaults(&site);
	is_int(site.mode, GK_MODE_AUTO, "site: mode defaults to auto");
	ok(strlen(site.shepherd) > 8 && strcmp(site.shepherd + strlen(site.shepherd) - 8, "/gpuckpt") == 0,
	   "site: shepherd defaults to LIBEXECDIR/gpuckpt (%s)", site.shepherd);
	is_str(site.criu, "", "site: criu defaults to the shepherd's own");
	is_int(gk_site_set(&site, "mode", "sometimes", &err), -EINVAL, "site: bad mode refused");
	is_str(err.text, "mode: invalid value 'sometimes' (expected auto, app or transparent)",
	       "site: ... named");
	is_int(gk_site_set(&site, "criu", "criu", &err), -EINVAL, "site: relative criu refused");
	is_int(gk_site_set(&site, "shepherd", root, &err), 0, "site: shepherd=DIR");
	is_int(gk_site_set(&site, "criu", "/opt/criu/sbin/criu", &err), 0, "site: criu=PATH");

	/* Precedence: option, then variable, then site. */
	site.mode = GK_MODE_APP;
	gk_opts_init(&o);
	ok(gk_opts_mode(&o, NULL, &site, &m, &err) == 0 && m == GK_MODE_APP,
	   "precedence: the site's mode when nothing else is set");
	ok(gk_opts_mode(&o, "transparent", &site, &m, &err) == 0 && m == GK_MODE_TRANSPARENT,
	   "precedence: the variable over the site");
	gk_opts_set(&o, GK_OPT_MODE, "auto", &err);
	ok(gk_opts_mode(&o, "transparent", &site, &m, &err) == 0 && m == GK_MODE_AUTO,
	   "precedence: the option over the variable");
	gk_opts_init(&o);
	is_int(gk_opts_mode(&o, "maybe", &site, &m, &err), -EINVAL,
	       "precedence: a bad variable is refused, not ignored");
	site.mode = GK_MODE_AUTO;

	/* The probe. */
	rc = gk_shepherd_probe(&site, 1000, reason, sizeof(reason));
	snprintf(path, sizeof(path), "gpuckpt-shepherd not installed at %s/gpuckpt-shepherd", root);
	ok(rc == 0 && strcmp(reason, path) == 0, "probe: a missing shepherd says where it was looked for (%s)", reason);
	fake_shepherd(root, "criu 3.17 at /usr/sbin/criu is too old (4.0 or later needed)", 1);
	rc = gk_shepherd_probe(&site, 1000, reason, sizeof(reason));
	ok(rc == 0 && strcmp(reason, "criu 3.17 at /usr/sbin/criu is too old (4.0 or later needed)") == 0,
	   "probe: the shepherd's own reason is taken (%s)", reason);
	snprintf(path, sizeof(path), "%s/args", root);
	slurp(path, buf, sizeof(buf));
	is_str(buf, "probe --uid 1000 --criu /opt/criu/sbin/criu",
	       "probe: run for the job's uid with the site's criu");
	fake_shepherd(root, "criu: no CRIU at /usr/sbin/criu\ncaps: root lacks CAP_SYS_RESOURCE", 1);
	gk_shepherd_probe(&site, 1000, reason, sizeof(reason));
	is_str(reason, "criu: no CRIU at /usr/sbin/criu; caps: root lacks CAP_SYS_RESOURCE",
	       "probe: every line it printed is relayed, joined");
	fake_shepherd(root, "", 3);
	gk_shepherd_probe(&site, 1000, reason, sizeof(reason));
	ok(strstr(reason, "probe failed with status 3") != NULL, "probe: a silent failure still has a reason (%s)", reason);
	fake_shepherd(root, "ok", 0);
	is_int(gk_shepherd_probe(&site, 1000, reason, sizeof(reason)), 1, "probe: ok");

	/* Plans. */
	snprintf(r.dir, sizeof(r.dir), "%s", root);
	r.dirfd = open(root, O_RDONLY | O_DIRECTORY);
	gk_opts_init(&o);
	fset(&fe, "GPUCKPT_MODE", "app", 1);
	is_int(gk_shepherd_prepare(&site, &o, &ids, &env, &r, &p, &err), 0, "app: prepared");
	ok(p.kind == GK_TPLAN_NONE, "app: no shepherd");
	ok(val(&fe, "GPUCKPT_NO_TRANSPARENT") && strstr(val(&fe, "GPUCKPT_NO_TRANSPARENT"), "GPUCKPT_MODE=app"),
	   "app: GPUCKPT_NO_TRANSPARENT says why");
	ok(!val(&fe, "GPUCKPT_NOTED"), "app: no mark for a line at the job's start (there is none)");
	ids.task_id = 1;
	gk_shepherd_prepare(&site, &o, &ids, &env, &r, &p, &err);
	ok(p.kind == GK_TPLAN_NONE && val(&fe, "GPUCKPT_NO_TRANSPARENT"), "app: every task's runtime is told why");
	ids.task_id = 0;
	gk_shepherd_prepare(&site, &o, &ids, &env, &r, &p, &err);
	ok(p.kind == GK_TPLAN_NONE, "app: a later step of the same job: the same");

	funset(&fe, "GPUCKPT_MODE");
	is_int(gk_shepherd_prepare(&site, &o, &ids, &env, &r, &p, &err), 0,
	       "auto on a node that can: prepared");
	ok(p.kind == GK_TPLAN_ATTACH, "auto: the step runs under the shepherd");
	{
		const char *sock = val(&fe, "GPUCKPT_SHEPHERD");
		static char first[128];

		ok(sock && !strncmp(sock, "gpuckpt.12.0.0.", 15) && strlen(sock) == 15 + 32 &&
		       strspn(sock + 15, "0123456789abcdef") == 32,
		   "auto: GPUCKPT_SHEPHERD names the task's socket, with 128 random bits (%s)",
		   sock ? sock : "unset");
		snprintf(first, sizeof(first), "%s", sock ? sock : "");
		gk_shepherd_prepare(&site, &o, &ids, &env, &r, &p, &err);
		sock = val(&fe, "GPUCKPT_SHEPHERD");
		ok(sock && strcmp(sock, first) != 0, "and a name nobody can guess: another each time");
	}
	ok(!val(&fe, "GPUCKPT_NO_TRANSPARENT") && strcmp(val(&fe, "GPUCKPT_MODE"), "auto") == 0,
	   "auto: GPUCKPT_MODE=auto, no GPUCKPT_NO_TRANSPARENT");
	/* The task's GPUs go to the shepherd, which slurmstepd starts with its
	 * own environment (a restore paired the node's GPUs, not the job's). */
	fset(&fe, "CUDA_VISIBLE_DEVICES", "1", 1);
	fset(&fe, "CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
	gk_shepherd_prepare(&site, &o, &ids, &env, &r, &p, &err);
	ok(p.have_gpus && strcmp(p.gpus, "1") == 0 && p.have_gpu_order &&
	       strcmp(p.gpu_order, "PCI_BUS_ID") == 0,
	   "the plan carries the task's CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER for the shepherd");
	funset(&fe, "CUDA_VISIBLE_DEVICES");
	funset(&fe, "CUDA_DEVICE_ORDER");
	gk_shepherd_prepare(&site, &o, &ids, &env, &r, &p, &err);
	ok(!p.have_gpus && !p.have_gpu_order, "a task without them: the shepherd gets neither");
	gk_shepherd_argv(&p, 77, argv, buf, sizeof(buf));
	snprintf(path, sizeof(path), "%s/gpuckpt-shepherd", root);
	ok(strcmp(argv[0], path) == 0 && strcmp(argv[1], "attach") == 0 && strcmp(argv[2], "--child") == 0 &&
	   strcmp(argv[3], "77") == 0 && strcmp(argv[4], "--go-fd") == 0 && strcmp(argv[5], "3") == 0 &&
	   strcmp(argv[7], root) == 0 && strcmp(argv[15], "0") == 0 && strcmp(argv[19], "2") == 0 &&
	   strcmp(argv[21], "/opt/criu/sbin/criu") == 0 && !argv[22],
	   "argv: attach --child 77 --go-fd 3 --dir ... --step 0 --keep 2 --criu ...");

	/* A step of several tasks: not transparently, unless declared independent. */
	ids.ntasks = 2;
	gk_shepherd_prepare(&site, &o, &ids, &env, &r, &p, &err);
	ok(p.kind == GK_TPLAN_NONE && strstr(p.reason, "a step of several tasks") &&
	       strstr(p.reason, "GPUCKPT_TASKS=independent") && val(&fe, "GPUCKPT_NO_TRANSPARENT") &&
	       strcmp(val(&fe, "GPUCKPT_NO_TRANSPARENT"), p.reason) == 0,
	   "a step of two tasks: no shepherd, the runtime is told why and what to do");
	ok(strstr(p.reason, "GPUCKPT_TASKS=nccl") != NULL, "... and names GPUCKPT_TASKS=nccl for NCCL jobs");
	fset(&fe, "GPUCKPT_TASKS", "independent", 1);
	gk_shepherd_prepare(&site, &o, &ids, &env, &r, &p, &err);
	ok(p.kind == GK_TPLAN_ATTACH, "independent tasks: each under its shepherd");
	fset(&fe, "GPUCKPT_TASKS", "nccl", 1);
	fset(&fe, "SLURM_STEP_NUM_NODES", "1", 1);
	gk_shepherd_prepare(&site, &o, &ids, &env, &r, &p, &err);
	{
		int last = gk_shepherd_argv(&p, 77, argv, buf, sizeof(buf)) < 0 ? -1 : 0;

		while (last >= 0 && argv[last])
			last++;
		ok(p.kind == GK_TPLAN_ATTACH && p.nccl && last > 0 &&
		       !strcmp(argv[last - 1], "--nccl"),
		   "NCCL ranks on one node: each under its shepherd, which is told --nccl");
	}
	funset(&fe, "SLURM_STEP_NUM_NODES");
	fset(&fe, "GPUCKPT_TASKS", "independent", 1);
	/* The ranks of an NCCL job, cut together by the runtime: on one node. */
	fset(&fe, "GPUCKPT_TASKS", "nccl", 1);
	fset(&fe, "SLURM_STEP_NUM_NODES", "1", 1);
	gk_shepherd_prepare(&site, &o, &ids, &env, &r, &p, &err);
	ok(p.kind == GK_TPLAN_ATTACH, "NCCL ranks (GPUCKPT_TASKS=nccl) on one node: each task under its shepherd");
	fset(&fe, "SLURM_STEP_NUM_NODES", "2", 1);
	gk_shepherd_prepare(&site, &o, &ids, &env, &r, &p, &err);
	ok(p.kind == GK_TPLAN_NONE && strstr(p.reason, "run on several nodes") &&
	       val(&fe, "GPUCKPT_NO_TRANSPARENT"),
	   "NCCL ranks on two nodes: no shepherd, and the reason says why");
	funset(&fe, "SLURM_STEP_NUM_NODES");
	gk_shepherd_prepare(&site, &o, &ids, &env, &r, &p, &err);
	ok(p.kind == GK_TPLAN_NONE && strstr(p.reason, "unknown number of nodes"),
	   "NCCL ranks, the step's node count unknown: no shepherd");
	funset(&fe, "GPUCKPT_TASKS");
	ids.ntasks = 0;

	ids.step_id = GK_STEP_BATCH;
	gk_shepherd_prepare(&site, &o, &ids, &env, &r, &p, &err);
	ok(p.kind == GK_TPLAN_NONE && !val(&fe, "GPUCKPT_SHEPHERD"),
	   "batch step: never under a shepherd");
	ids.step_id = 0;

	/* In a container (container_env.h's gk_container_of): auto means the API's way. */
	snprintf(r.container, sizeof(r.container), "pyxis");
	is_int(gk_shepherd_prepare(&site, &o, &ids, &env, &r, &p, &err), 0,
	       "auto in a pyxis container on a node that can: prepared, not refused");
	ok(p.kind == GK_TPLAN_NONE && !val(&fe, "GPUCKPT_SHEPHERD") &&
	       strstr(p.reason, "runs in a pyxis container") &&
	       strstr(val(&fe, "GPUCKPT_NO_TRANSPARENT"), "pyxis container"),
	   "auto in a container: no shepherd, GPUCKPT_NO_TRANSPARENT says why (%s)",
	   p.reason);
	fset(&fe, "GPUCKPT_MODE", "transparent", 1);
	rc = gk_shepherd_prepare(&site, &o, &ids, &env, &r, &p, &err);
	ok(rc == -ENOTSUP && strstr(err.text, "runs in a pyxis container") &&
	       strstr(err.text, "--gpu-checkpoint-mode=app"),
	   "transparent forced in a container: refused at the start, naming the way out (%s)",
	   err.text);
	ids.step_id = GK_STEP_BATCH;
	rc = gk_shepherd_prepare(&site, &o, &ids, &env, &r, &p, &err);
	ok(rc == 0 && p.kind == GK_TPLAN_NONE,
	   "a batch script in a container is no shepherd's either way: not refused");
	ids.step_id = 0;
	funset(&fe, "GPUCKPT_MODE");
	r.container[0] = '\0';

	/* A node that cannot. */
	fake_shepherd(root, "no CRIU at /usr/sbin/criu", 1);
	gk_shepherd_prepare(&site, &o, &ids, &env, &r, &p, &err);
	ok(p.kind == GK_TPLAN_NONE && strcmp(p.reason, "no CRIU at /usr/sbin/criu") == 0 &&
	       strcmp(val(&fe, "GPUCKPT_NO_TRANSPARENT"), "no CRIU at /usr/sbin/criu") == 0,
	   "auto where the node cannot: the runtime gets the probe's reason");
	fset(&fe, "GPUCKPT_MODE", "transparent", 1);
	rc = gk_shepherd_prepare(&site, &o, &ids, &env, &r, &p, &err);
	ok(rc == -ENOTSUP && strstr(err.text, "GPUCKPT_MODE=transparent") &&
	       strstr(err.text, "no CRIU at"),
	   "transparent forced where the node cannot: refused, saying why (%s)", err.text);
	fset(&fe, "GPUCKPT_MODE", "sometimes", 1);
	rc = gk_shepherd_prepare(&site, &o, &ids, &env, &r, &p, &err);
	ok(rc == -EINVAL && strstr(err.text, "GPUCKPT_MODE: invalid value 'sometimes'"),
	   "a bad GPUCKPT_MODE in the task is refused");
	funset(&fe, "GPUCKPT_MODE");

	/* Restarts: the newest checkpoint decides. */
	mkckpt(root, "ckpt.000002", 1);
	snprintf(path, sizeof(path), "%s/ckpt.000002/criu", root);
	mkdir(path, 0700);
	r.restore = 1;
	snprintf(r.newest, sizeof(r.newest), "ckpt.000002");
	rc = gk_shepherd_prepare(&site, &o, &ids, &env, &r, &p, &err);
	ok(rc == -ENOTSUP &&
	       strstr(
		   err.text,
		   "ckpt.000002 was written in transparent mode and this node cannot restore it"),
	   "a transparent checkpoint on a node that cannot restore it: refused (%s)", err.text);
	fake_shepherd(root, "ok", 0);
	fset(&fe, "GPUCKPT_RESTORE", "auto", 1);
	rc = gk_shepherd_prepare(&site, &o, &ids, &env, &r, &p, &err);
	if (geteuid() == 0) {
		ok(rc == 0 && p.kind == GK_TPLAN_RESTORE && strcmp(p.newest, "ckpt.000002") == 0,
		   "a transparent checkpoint: the shepherd restores it");
		ok(!val(&fe, "GPUCKPT_RESTORE"), "... and the runtime is not told to restore");
		gk_shepherd_argv(&p, 0, argv, buf, sizeof(buf));
		ok(strcmp(argv[1], "restore") == 0 && strcmp(argv[2], "--dir") == 0, "argv: restore --dir ...");
		if (chown(path, 4242, 4242) < 0)
			printf("# chown: %s\n", strerror(errno));
		rc = gk_shepherd_prepare(&site, &o, &ids, &env, &r, &p, &err);
	} else {
		for (int k = 0; k < 3; k++)
			skip("needs root to make a root-owned criu/");
	}
	ok(rc == -EPERM && strstr(err.text, "not written by the shepherd"),
	   "a criu/ that root did not write is refused (%s)", err.text);

	snprintf(buf, sizeof(buf), "rm -rf '%s'", root);
	if (system(buf) != 0)
		printf("# could not remove %s\n", root);
	return done_testing();
}
