/*
 * Unit tests: what the plugin puts into a task for containers
 * (spank-plugin/container_env.c): GPUCKPT_BIND for the enroot and podman hooks,
 * and Apptainer's route, APPTAINER_BIND and APPTAINERENV_* (Apptainer cannot
 * be built on the test machines: docs/containers.md); and what the loader's
 * trace says (container_check.c).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spank-plugin/container_check.h"
#include "spank-plugin/container_env.h"
#include "spank-plugin/task_env.h"
#include "tap.h"

#include "fake_env.h"

int main(void)
{
	static struct fake_env fe;
	struct gk_env env = {fget, fset, funset, &fe};
	struct gk_inject_result r;
	struct gk_site site;
	struct gk_opts o;
	struct gk_task_ids ids = {12, 0, 3, getuid(), getgid(), 0};
	char root[] = "/tmp/gk-test-container-env.XXXXXX", bundle[1024], rt[2048], want[8192],
	     out[8192], reason[GK_ERRLEN];
	gk_error_t err;
	struct stat st;
	int munge = stat(GK_MUNGE_DIR, &st) == 0 && S_ISDIR(st.st_mode);

	plan(41);
	if (!mkdtemp(root)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	snprintf(bundle, sizeof(bundle), "%s/bundle", root);
	mkdir(bundle, 0755);
	snprintf(rt, sizeof(rt), "%s/libgpuckpt.so.0", bundle);
	mkckpt(root, "unused", 0); /* (fake_env.h's helper; keeps -Wunused quiet) */
	gk_site_defaults(&site);
	snprintf(site.bb_root, sizeof(site.bb_root), "%s", root);
	snprintf(site.runtime, sizeof(site.runtime), "%s", rt);
	gk_opts_init(&o);

	/* A runtime outside a bundle: its folder is never mounted. */
	is_int(gk_container_binds(&site, &ids, NULL, out, sizeof(out)), 0, "binds: made");
	snprintf(want, sizeof(want), "%s/12%s", root, munge ? ":" GK_MUNGE_DIR : "");
	is_str(out, want, "binds: without the bundle mark, only the job's folder (and Munge's)");
	ok(!gk_is_bundle(bundle), "a folder without the mark is no bundle");
	snprintf(out, sizeof(out), "%s/%s", bundle, GK_BUNDLE_MARK);
	close(open(out, O_CREAT | O_WRONLY, 0644));
	ok(gk_is_bundle(bundle), "a folder with the mark is a bundle");
	/* Root mounts a bundle into containers: only one nobody else could have
	 * marked, through a mark that is a file, not a link to one. */
	chmod(bundle, 0777);
	ok(!gk_is_bundle(bundle), "a folder others can write is no bundle, mark or not");
	chmod(bundle, 0755);
	snprintf(out, sizeof(out), "%s/%s", bundle, GK_BUNDLE_MARK);
	unlink(out);
	snprintf(want, sizeof(want), "%s/mark-elsewhere", root);
	close(open(want, O_CREAT | O_WRONLY, 0644));
	if (symlink(want, out) < 0)
		printf("# symlink: %s\n", strerror(errno));
	ok(!gk_is_bundle(bundle), "a mark that is a link is no mark");
	unlink(out);
	close(open(out, O_CREAT | O_WRONLY, 0644));
	gk_container_binds(&site, &ids, "/etc/gpuckpt/site.conf", out, sizeof(out));
	snprintf(want, sizeof(want), "%s:%s/12%s:/etc/gpuckpt/site.conf", bundle, root,
		 munge ? ":" GK_MUNGE_DIR : "");
	is_str(out, want, "binds: the bundle, the job's folder, Munge's, the site file");
	gk_container_binds(&site, &ids, "/etc/a:b.conf", out, sizeof(out));
	ok(!strstr(out, "a:b"), "binds: a path with ':' is left out");
	is_int(gk_container_binds(&site, &ids, NULL, out, 8), -ENAMETOOLONG, "binds: too long reported");

	/* A task with checkpointing on, a user who binds and preloads for Apptainer already. */
	fset(&fe, "APPTAINER_BIND", "/scratch,/data:/data:ro", 1);
	fset(&fe, "APPTAINERENV_LD_PRELOAD", "/opt/mine.so", 1);
	is_int(gk_inject(&site, &o, &ids, &env, &r, &err), 0, "inject: succeeds");
	is_int(gk_container_inject(&site, &ids, &env, &err), 0, "container inject: succeeds");
	snprintf(want, sizeof(want), "%s:%s/12%s", bundle, root, munge ? ":" GK_MUNGE_DIR : "");
	is_str(val(&fe, GK_ENV(BIND)), want, "GPUCKPT_BIND: bundle and the job's folder");
	is_str(val(&fe, GK_ENV(RUNTIME)), rt, "GPUCKPT_RUNTIME: the runtime");
	snprintf(want, sizeof(want), "/scratch,/data:/data:ro,%s,%s/12%s", bundle, root,
		 munge ? "," GK_MUNGE_DIR : "");
	is_str(val(&fe, "APPTAINER_BIND"), want, "APPTAINER_BIND: the user's binds, then ours");
	snprintf(want, sizeof(want), "/opt/mine.so:%s", rt);
	is_str(val(&fe, "APPTAINERENV_LD_PRELOAD"), want,
	       "APPTAINERENV_LD_PRELOAD: the user's, then the runtime");
	is_str(val(&fe, "APPTAINERENV_GPUCKPT_DIR"), val(&fe, GK_ENV(DIR)),
	       "APPTAINERENV_GPUCKPT_DIR: the task's folder (also under --cleanenv)");
	is_str(val(&fe, "APPTAINERENV_GPUCKPT_CHECKPOINT"), "on", "APPTAINERENV_GPUCKPT_CHECKPOINT=on");
	ok(val(&fe, "APPTAINERENV_GPUCKPT_RESTORE") == NULL, "no APPTAINERENV_GPUCKPT_RESTORE on a fresh start");

	/* Again (a step inside the batch step): nothing doubled. */
	gk_container_inject(&site, &ids, &env, &err);
	snprintf(want, sizeof(want), "/scratch,/data:/data:ro,%s,%s/12%s", bundle, root,
		 munge ? "," GK_MUNGE_DIR : "");
	is_str(val(&fe, "APPTAINER_BIND"), want, "APPTAINER_BIND: not doubled");
	snprintf(want, sizeof(want), "/opt/mine.so:%s", rt);
	is_str(val(&fe, "APPTAINERENV_LD_PRELOAD"), want, "APPTAINERENV_LD_PRELOAD: not doubled");

	/* A step with checkpointing off inside the job: ours out, the user's kept. */
	is_int(gk_uninject(&site, &env, &err), 0, "uninject: succeeds");
	is_str(val(&fe, "APPTAINER_BIND"), "/scratch,/data:/data:ro", "uninject: the user's binds stay");
	is_str(val(&fe, "APPTAINERENV_LD_PRELOAD"), "/opt/mine.so", "uninject: the user's preload stays");
	ok(val(&fe, "APPTAINERENV_GPUCKPT_DIR") == NULL && val(&fe, GK_ENV(BIND)) == NULL,
	   "uninject: APPTAINERENV_GPUCKPT_DIR and GPUCKPT_BIND gone");
	is_str(val(&fe, "APPTAINERENV_GPUCKPT_CHECKPOINT"), "off", "uninject: APPTAINERENV_GPUCKPT_CHECKPOINT=off");

	/* The loader's trace, as a bullseye userland prints it. */
	ok(gk_loader_problem("\tlibjson-c.so.5 => /b/libjson-c.so.5 (0x1)\n"
			     "/b/libgpuckpt.so.0: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.32' not found (required by /b/libgpuckpt.so.0)\n"
			     "/b/libgpuckpt.so.0: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found (required by /b/libhwloc.so.15)\n"
			     "/b/libgpuckpt.so.0: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.4' not found (required by /b/x)\n",
			     reason, sizeof(reason)) == 1 &&
	       strstr(reason, "GLIBC_2.34 not found (glibc 2.34 or later is needed)"),
	   "loader: the highest missing glibc version is named (%s)", reason);
	ok(gk_loader_problem("\tlibudev.so.1 => not found\n", reason, sizeof(reason)) == 1 &&
	       strstr(reason, "libudev.so.1,"),
	   "loader: a missing library is named (%s)", reason);
	ok(gk_loader_problem("\tlibc.so.6 => /lib/libc.so.6 (0x1)\n", reason, sizeof(reason)) == 0,
	   "loader: a clean trace is no problem");
	{
		int loads = 1;

		ok(gk_container_check("/nonexistent/libgpuckpt.so.0", NULL, &loads, reason,
				      sizeof(reason)) == 0 &&
		       !loads && strstr(reason, "not visible"),
		   "check: a runtime that is not there is named (%s)", reason);
	}

	/* Which container the program will run in, seen before it starts. */
	{
		static struct fake_env ce;
		struct gk_env cenv = {fget, fset, funset, &ce};
		char c[16];

		ok(gk_container_of(&cenv, "/usr/bin/heat", c, sizeof(c)) == 0 && !c[0],
		   "container: a plain program is in none");
		ok(gk_container_of(&cenv, NULL, c, sizeof(c)) == 0 && !c[0],
		   "container: no argv, none");
		ok(gk_container_of(&cenv, "/usr/bin/podman", c, sizeof(c)) == 1 &&
		       strcmp(c, "podman") == 0,
		   "container: the program is podman");
		ok(gk_container_of(&cenv, "apptainer", c, sizeof(c)) == 1 &&
		       strcmp(c, "apptainer") == 0,
		   "container: the program is apptainer");
		ok(gk_container_of(&cenv, "/opt/podman-hpc/bin/podman-hpc", c, sizeof(c)) == 1 &&
		       strcmp(c, "podman-hpc") == 0,
		   "container: the program is podman-hpc");
		ok(gk_container_of(&cenv, "/usr/bin/podmanx", c, sizeof(c)) == 0,
		   "container: a name that only starts like one is none");
		fset(&ce, GK_ENV(CONTAINER), "pyxis", 1);
		ok(gk_container_of(&cenv, "/usr/bin/heat", c, sizeof(c)) == 1 &&
		       strcmp(c, "pyxis") == 0,
		   "container: GPUCKPT_CONTAINER=pyxis (srun saw pyxis's option)");
		fset(&ce, GK_ENV(CONTAINER), "other", 1);
		ok(gk_container_of(&cenv, "/usr/bin/heat", c, sizeof(c)) == 0,
		   "container: another GPUCKPT_CONTAINER value is none");
		fset(&ce, "PYXIS_CONTAINER_IMAGE", "nvcr.io#nvidia/pytorch:24.01-py3-with-a-long-tag", 1);
		ok(gk_container_of(&cenv, "/usr/bin/heat", c, sizeof(c)) == 1 &&
		       strcmp(c, "pyxis") == 0,
		   "container: pyxis's PYXIS_CONTAINER_IMAGE (longer than the buffer)");
		fset(&ce, "PYXIS_CONTAINER_IMAGE", "", 1);
		ok(gk_container_of(&cenv, "/usr/bin/heat", c, sizeof(c)) == 0,
		   "container: an empty PYXIS_CONTAINER_IMAGE is none");
	}

	/* The variables passed into containers are the table's GK_F_CONTAINER
	 * rows (settings.def), and the rest of the list is Slurm's. */
	{
		unsigned n = 0, bad = 0;

		for (const char *const *v = gk_container_vars; *v; v++) {
			int found = 0;

			for (unsigned i = 0; i < GK_ENV_COUNT; i++)
				if (strcmp(*v, gk_env_table[i].name) == 0) {
					found = 1;
					bad += !(gk_env_table[i].flags & GK_F_CONTAINER);
				}
			if (found)
				n++;
			else
				bad += strncmp(*v, "SLURM_", 6) != 0;
		}
		for (unsigned i = 0; i < GK_ENV_COUNT; i++)
			if (gk_env_table[i].flags & GK_F_CONTAINER)
				n--;
		ok(bad == 0, "gk_container_vars: only GK_F_CONTAINER variables and SLURM_ ones");
		ok(n == 0, "gk_container_vars: every GK_F_CONTAINER variable of settings.def");
	}

	snprintf(out, sizeof(out), "rm -rf '%s'", root);
	if (system(out) != 0)
		printf("# could not remove %s\n", root);
	return done_testing();
}
