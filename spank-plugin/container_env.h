/*
 * container_env.h - what lets a task's program find the runtime and its
 * checkpoint folder when it runs in a container (spank-plugin/README.md,
 * "Containers"). Set by the plugin after task_env.h's variables, in every task
 * with checkpointing on; read by the container runtimes' own mechanisms:
 *
 *	GPUCKPT_BIND      host paths a container must show at the same path,
 *	                  ':'-separated: the runtime's bundle folder (only when the
 *	                  runtime lives in one: gpuckpt-bundle), the job's folder on
 *	                  the burst buffer (BB_ROOT/JOBID: every step and task of the
 *	                  job on this node, so one container serves all of them),
 *	                  Munge's socket folder, and the site file (GPUCKPT_CONFIG).
 *	                  Read by the enroot hook (etc/enroot/50-gpuckpt.sh) and by
 *	                  podman's OCI hook (gpuckpt-oci-hook).
 *	GPUCKPT_RUNTIME   the runtime's path, for the OCI hook to preload it in the
 *	                  container (podman does not pass the task's LD_PRELOAD on).
 *	APPTAINER_BIND    the same paths appended to the user's own (',' separated);
 *	APPTAINERENV_LD_PRELOAD, APPTAINERENV_<each variable of GK_CONTAINER_VARS>:
 *	                  Apptainer sets them in the container, --cleanenv or not.
 *
 * A path with ':' or ',' in it cannot be listed; it is left out and the
 * container check then names what is missing.
 */
#ifndef GK_CONTAINER_ENV_H
#define GK_CONTAINER_ENV_H

#include <stddef.h>

#include "ckpt_dir.h"
#include "site_args.h"
#include "env.h"

#include "common/settings_env.h"

/* oci_hook.c's names for GK_ENV(BIND) and GK_ENV(RUNTIME) (settings.def). */
#define GK_ENV_BIND GK_ENV(BIND)
#define GK_ENV_RUNTIME GK_ENV(RUNTIME)
/* A folder made by gpuckpt-bundle holds this file: only such a folder is
 * mounted into containers (a runtime in /usr/lib would take the whole folder). */
#define GK_BUNDLE_MARK ".gpuckpt-bundle"
/* Where Munge's client looks unless GPUCKPT_MUNGE_SOCKET says otherwise. */
#define GK_MUNGE_DIR "/run/munge"

/*
 * The variables the runtime reads that a container must pass on, one list for
 * the plugin (Apptainer) and the OCI hook (podman). NULL-terminated.
 */
extern const char *const gk_container_vars[];

/*
 * The ':'-separated list for GPUCKPT_BIND into out: the bundle folder of
 * s->runtime (if it is one), BB_ROOT/JOBID, GK_MUNGE_DIR if it exists, and
 * config if set. -ENAMETOOLONG if out is too small.
 */
int gk_container_binds(const struct gk_site *s, const struct gk_task_ids *ids, const char *config,
		       char *out, size_t len);

/*
 * 1 if dir is a folder made by gpuckpt-bundle: a trusted path (root's folders,
 * writable only by root, fsafe.h) holding root's regular file GK_BUNDLE_MARK,
 * checked without following a link. Else 0.
 */
int gk_is_bundle(const char *dir);

/*
 * After gk_inject: set GPUCKPT_BIND, GPUCKPT_RUNTIME, APPTAINER_BIND and the
 * APPTAINERENV_* copies in the task. 0 or a negative errno with err set.
 */
int gk_container_inject(const struct gk_site *s, const struct gk_task_ids *ids,
			const struct gk_env *env, gk_error_t *err);

/* For gk_uninject: take out what gk_container_inject put in (our entries of
 * APPTAINER_BIND and APPTAINERENV_LD_PRELOAD, the rest whole). */
int gk_container_uninject(const struct gk_site *s, const struct gk_env *env, gk_error_t *err);

/*
 * GPUCKPT_CONTAINER=pyxis: set by the plugin in srun when pyxis's
 * --container-image or --container-name was given for the step (also through
 * sbatch's or salloc's), so that slurmstepd, where Slurm shows no plugin
 * another's options, knows before pyxis moves the task into its container.
 */
/* GK_ENV(CONTAINER) (settings.def) */

/*
 * The container the task's program will run in, as far as task_init_privileged
 * can see before the program starts, into out: "pyxis" when GPUCKPT_CONTAINER
 * says so or pyxis's own PYXIS_CONTAINER_IMAGE or PYXIS_CONTAINER_NAME is set;
 * else the container runtime's name when the program (argv0, may be NULL) is
 * one (podman, podman-hpc, apptainer, singularity, enroot); else "". Returns 1
 * when one was seen, else 0.
 */
int gk_container_of(const struct gk_env *env, const char *argv0, char *out, size_t len);

/* list (split on sep) without the entries that are in drop (split on ':'). */
int gk_list_remove(const char *list, char sep, const char *drop, char *out, size_t len);

#endif
