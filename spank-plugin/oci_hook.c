/*
 * gpuckpt-oci-hook - podman's precreate hook for tasks with
 * --gpu-checkpoint=on (etc/containers/oci/hooks.d/50-gpuckpt.json). Podman
 * runs it with the container's OCI configuration on stdin and creates the
 * container from what it writes to stdout. Podman gives a hook an empty
 * environment; the task's is that of podman itself, its parent.
 *
 * When podman's environment has GPUCKPT_CHECKPOINT=on and GPUCKPT_BIND (set by
 * the SPANK plugin, container_env.h), the configuration gets:
 *	- each path of GPUCKPT_BIND bind-mounted at the same path (the runtime's
 *	  bundle folder read-only);
 *	- the runtime appended to the container's LD_PRELOAD, and the variables of
 *	  gk_container_vars that podman's environment holds;
 *	- gpuckpt-container-start from the bundle folder in front of the
 *	  command, which says at the start when the image cannot load the runtime;
 *	  under a transparent-mode shepherd (GPUCKPT_SHEPHERD) it refuses instead:
 *	  CRIU has not been measured on containers (spank-plugin/README.md).
 * Podman's environment is its caller's to set: GPUCKPT_BIND is only a list of
 * names. Where the hook has root's powers on the host (rootful podman), its
 * own uid says nothing of whose container it is: it learns the job and its
 * user from the plugin's record of the task that podman descends from
 * (container_owner.h), and with no such record it changes nothing, saying
 * why. It then mounts only what that record lists, each checked on the host
 * through descriptors (bind_check below); as anyone else (rootless podman, in
 * the user's namespace) the mounts cannot reach past what its caller may see.
 * Any other container passes through unchanged. A configuration it cannot
 * read or write fails the hook, and with it `podman run`, rather than letting
 * the container start without checkpoints.
 *
 *	gpuckpt-oci-hook [--environ FILE]   FILE: NUL-separated environment
 *	                                    (default /proc/<parent>/environ)
 */
#include "config.h"
#include "common/settings_env.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "container_env.h"
#include "container_owner.h"
#include "common/fsafe.h"
#include "task_env.h"

#define ENV_MAX (1 << 20)

static char *penv;
static size_t penv_len;
/* As root on the host: the job the container is for (its task's record). */
static struct gk_owner owner;

static const char *pget(const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < penv_len; i += strlen(penv + i) + 1)
		if (strncmp(penv + i, name, n) == 0 && penv[i + n] == '=')
			return penv + i + n + 1;
	return NULL;
}

static int read_all(int fd, char **buf, size_t *len)
{
	size_t cap = 65536, used = 0;
	char *b = malloc(cap);

	if (!b)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (used + 1 >= cap) {
			char *nb = realloc(b, cap * 2);

			if (!nb) {
				free(b);
				return -ENOMEM;
			}
			b = nb;
			cap *= 2;
		}
		n = read(fd, b + used, cap - 1 - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			free(b);
			return -e;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	b[used] = '\0';
	*buf = b;
	*len = used;
	return 0;
}

static json_object *obj_get(json_object *o, const char *key, json_type type)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v)) {
		v = type == json_type_array ? json_object_new_array() : json_object_new_object();
		json_object_object_add(o, key, v);
	}
	return json_object_is_type(v, type) ? v : NULL;
}

/*
 * Root on the host: euid 0 in the first user namespace (its uid_map maps all
 * of 0..2^32-2 to itself). Rootless podman runs its hooks in the user's
 * namespace, where they are 0 too but hold nothing of root's.
 */
static int host_root(void)
{
	unsigned long a, b, n;
	char line[128];
	FILE *f;
	int ok;

	if (geteuid() != 0)
		return 0;
	f = fopen("/proc/self/uid_map", "re");
	if (!f)
		return 1; /* no user namespaces in this kernel: root is root */
	ok = fgets(line, sizeof(line), f) && sscanf(line, "%lu %lu %lu", &a, &b, &n) == 3 &&
	     a == 0 && b == 0 && n == 4294967295UL && !fgets(line, sizeof(line), f);
	fclose(f);
	return ok;
}

/* Each name of path is a real one: no "." or "..", which a walk and the
 * kernel could resolve differently after a link. */
static int plain_path(const char *path)
{
	if (path[0] != '/')
		return 0;
	for (const char *p = path; *p;) {
		size_t m;

		p += strspn(p, "/");
		m = strcspn(p, "/");
		if ((m == 1 && p[0] == '.') || (m == 2 && p[0] == '.' && p[1] == '.'))
			return 0;
		p += m;
	}
	return 1;
}

enum bind_kind { BIND_NO, BIND_RO, BIND_RW };

/*
 * 1 if anyone could read the file at path through that path: every folder on
 * the way root's, writable only by root (or sticky, where only an entry's
 * owner renames it) and open to others (o+x), no link, and the file root's,
 * regular, readable by others and writable only by root. Mounting it then
 * shows a container nothing its user could not read, and nobody but root can
 * change what the path names before runc mounts it. Else 0, why saying which
 * name failed.
 */
static int readable_by_all(const char *path, char *why, size_t len)
{
	char name[NAME_MAX + 1], shown[PATH_MAX];
	const char *p = path;
	struct stat st;
	int fd, nfd, ok = 0;

	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		snprintf(why, len, "/: %s", strerror(errno));
		goto out;
	}
	snprintf(shown, sizeof(shown), "/");
	for (;;) {
		size_t m;

		if (st.st_uid != 0 || (gk_mode_shared(st.st_mode) && !(st.st_mode & S_ISVTX))) {
			snprintf(why, len,
				 "%s is not a folder only root can change (uid %u, mode %04o)",
				 shown, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
			goto out;
		}
		if (!(st.st_mode & S_IXOTH)) {
			snprintf(why, len,
				 "%s is closed to others (mode %04o): what is behind it is not for "
				 "everyone",
				 shown, (unsigned)(st.st_mode & 07777));
			goto out;
		}
		p += strspn(p, "/");
		m = strcspn(p, "/");
		if (m > NAME_MAX) {
			snprintf(why, len, "a name too long");
			goto out;
		}
		memcpy(name, p, m);
		name[m] = '\0';
		p += m;
		snprintf(shown + strlen(shown), sizeof(shown) - strlen(shown), "%s%s",
			 strcmp(shown, "/") ? "/" : "", name);
		if (!p[strspn(p, "/")])
			break;
		nfd = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0 || fstat(nfd, &st) < 0) {
			snprintf(why, len, "%s: %s", shown,
				 errno == ELOOP ? "a symbolic link on the way" : strerror(errno));
			if (nfd >= 0)
				close(nfd);
			goto out;
		}
		close(fd);
		fd = nfd;
	}
	if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		snprintf(why, len, "%s: %s", shown, strerror(errno));
		goto out;
	}
	ok = S_ISREG(st.st_mode) && st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH)) &&
	     (st.st_mode & S_IROTH);
	if (!ok)
		snprintf(why, len,
			 "not a regular file of root's that anyone may read and only root may "
			 "write (uid %u, mode %04o)",
			 (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
out:
	if (fd >= 0)
		close(fd);
	return ok;
}

/*
 * Whether root may mount path into the caller's container, and how. The
 * caller chose the list (podman's environment is theirs), and the container
 * may run as root: a folder of root's mounted read-write there (/etc) is the
 * host, and a root-only file mounted read-only is read. So, as host root,
 * only what the plugin listed in the task's record (owner) passes, and of
 * that only:
 *	- the bundle (the runtime's folder): gpuckpt-bundle's folder on a
 *	  trusted path, marked by root (gk_is_bundle); read-only;
 *	- Munge's socket folder, GK_MUNGE_DIR; read-only (connecting to a
 *	  socket does not write to its file system);
 *	- the job's folder BB_ROOT/JOB: a folder (not a link) named by the
 *	  record's job id, 0700 and owned by the record's user, in a folder only
 *	  root can change; read-write. Not the hook's own uid: under rootful
 *	  podman that is root's, and root's 0700 folders (another job's
 *	  SHARED_ROOT/JOB) would pass;
 *	- a file anyone could read through its path (readable_by_all: the site's
 *	  settings file, GPUCKPT_CONFIG, which the user's environment may name);
 *	  read-only.
 * Every folder above the last name is a trusted path (fsafe.h), and the last
 * name is looked at without following a link: nobody but root can change
 * what the path names between this check and runc's mount. why says what
 * was refused.
 */
static enum bind_kind bind_check(const char *path, const char *bundle, char *why, size_t len)
{
	gk_error_t err;
	char parent[PATH_MAX], name[NAME_MAX + 1], job[16], *slash;
	struct stat st;
	int fd;

	if (!host_root())
		return strcmp(path, bundle) == 0 ? BIND_RO : BIND_RW;
	if (!plain_path(path) || strlen(path) >= sizeof(parent)) {
		snprintf(why, len, "not a plain absolute path");
		return BIND_NO;
	}
	if (!gk_owner_lists(&owner, path)) {
		snprintf(why, len, "not one of the paths the plugin listed for job %u (task %d)",
			 (unsigned)owner.job_id, (int)owner.pid);
		return BIND_NO;
	}
	if (strcmp(path, bundle) == 0) {
		if (gk_is_bundle(path))
			return BIND_RO;
		snprintf(why, len,
			 "not a folder made by gpuckpt-bundle on a path only root can change");
		return BIND_NO;
	}
	if (strcmp(path, GK_MUNGE_DIR) == 0)
		return BIND_RO;
	snprintf(parent, sizeof(parent), "%s", path);
	while (strlen(parent) > 1 && parent[strlen(parent) - 1] == '/')
		parent[strlen(parent) - 1] = '\0';
	slash = strrchr(parent, '/');
	if (strlen(slash + 1) > NAME_MAX) {
		snprintf(why, len, "a name too long");
		return BIND_NO;
	}
	snprintf(name, sizeof(name), "%s", slash + 1);
	if (!name[0]) {
		snprintf(why, len, "the root folder");
		return BIND_NO;
	}
	slash[slash == parent ? 1 : 0] = '\0';
	fd = gk_open_trusted_dir(parent, NULL, &err);
	if (fd < 0) {
		snprintf(why, len, "%s", err.text);
		return BIND_NO;
	}
	if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		snprintf(why, len, "%s", strerror(errno));
		close(fd);
		return BIND_NO;
	}
	close(fd);
	snprintf(job, sizeof(job), "%u", (unsigned)owner.job_id);
	if (S_ISDIR(st.st_mode)) {
		if (strcmp(name, job) == 0 && st.st_uid == owner.uid && (st.st_mode & 077) == 0)
			return BIND_RW;
		snprintf(
		    why, len,
		    "not job %s's folder: a folder named %s, 0700, of the job's user (uid %u); "
		    "this one is uid %u's, mode %04o",
		    job, job, (unsigned)owner.uid, (unsigned)st.st_uid,
		    (unsigned)(st.st_mode & 07777));
		return BIND_NO;
	}
	if (S_ISREG(st.st_mode))
		return readable_by_all(path, why, len) ? BIND_RO : BIND_NO;
	snprintf(why, len, "neither a job's folder nor a file anyone may read");
	return BIND_NO;
}

static void add_mount(json_object *mounts, const char *path, const char *bundle)
{
	struct stat st;
	json_object *m, *opts;
	enum bind_kind kind;
	char why[600];

	for (size_t i = 0; i < json_object_array_length(mounts); i++) {
		json_object *d;

		if (json_object_object_get_ex(json_object_array_get_idx(mounts, i), "destination",
					      &d) &&
		    strcmp(json_object_get_string(d), path) == 0)
			return; /* the user mounted it already */
	}
	if (stat(path, &st) < 0)
		return; /* gpuckpt-container-start will name what is missing */
	kind = bind_check(path, bundle, why, sizeof(why));
	if (kind == BIND_NO) {
		fprintf(stderr, "gpuckpt-oci-hook: %s is not mounted into the container: %s\n",
			path, why);
		return;
	}
	m = json_object_new_object();
	opts = json_object_new_array();
	json_object_object_add(m, "destination", json_object_new_string(path));
	json_object_object_add(m, "type", json_object_new_string("bind"));
	json_object_object_add(m, "source", json_object_new_string(path));
	json_object_array_add(opts, json_object_new_string("rbind"));
	json_object_array_add(opts, json_object_new_string(kind == BIND_RO ? "ro" : "rw"));
	json_object_array_add(opts, json_object_new_string("nosuid"));
	json_object_array_add(opts, json_object_new_string("nodev"));
	json_object_object_add(m, "options", opts);
	json_object_array_add(mounts, m);
}

/* Set NAME=value in the process's env array (replacing NAME's entry). */
static void env_put(json_object *env, const char *name, const char *value)
{
	size_t n = strlen(name);
	char *kv;

	if (asprintf(&kv, "%s=%s", name, value) < 0)
		return;
	for (size_t i = 0; i < json_object_array_length(env); i++) {
		const char *e = json_object_get_string(json_object_array_get_idx(env, i));

		if (e && strncmp(e, name, n) == 0 && e[n] == '=') {
			json_object_array_put_idx(env, i, json_object_new_string(kv));
			free(kv);
			return;
		}
	}
	json_object_array_add(env, json_object_new_string(kv));
	free(kv);
}

static const char *env_find(json_object *env, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < json_object_array_length(env); i++) {
		const char *e = json_object_get_string(json_object_array_get_idx(env, i));

		if (e && strncmp(e, name, n) == 0 && e[n] == '=')
			return e + n + 1;
	}
	return NULL;
}

static int edit(json_object *spec)
{
	const char *binds = pget(GK_ENV_BIND), *runtime = pget(GK_ENV_RUNTIME);
	json_object *process, *env, *args, *mounts, *nargs;
	char bundle[PATH_MAX], starter[PATH_MAX + 32], preload[8192], *slash;
	const char *cur;
	int have_starter;

	process = obj_get(spec, "process", json_type_object);
	mounts = obj_get(spec, "mounts", json_type_array);
	if (!process || !mounts)
		return -EINVAL;
	env = obj_get(process, "env", json_type_array);
	args = obj_get(process, "args", json_type_array);
	if (!env || !args)
		return -EINVAL;

	snprintf(bundle, sizeof(bundle), "%s", runtime ? runtime : "");
	slash = strrchr(bundle, '/');
	if (slash)
		*slash = '\0';
	for (const char *p = binds; p && *p;) {
		size_t m = strcspn(p, ":");
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%.*s", (int)m, p);
		add_mount(mounts, path, bundle);
		p += m + (p[m] == ':');
	}
	for (const char *const *v = gk_container_vars; *v; v++) {
		const char *val = pget(*v);

		if (val)
			env_put(env, *v, val);
	}
	if (runtime) {
		cur = env_find(env, "LD_PRELOAD");
		if (gk_preload_add(cur ? cur : "", runtime, preload, sizeof(preload)) == 0)
			env_put(env, "LD_PRELOAD", preload);
	}

	snprintf(starter, sizeof(starter), "%s/gpuckpt-container-start", bundle);
	/* Only a bundle root may mount: another folder's starter would not be there. */
	have_starter = runtime && slash &&
		       (!host_root() || (gk_owner_lists(&owner, bundle) && gk_is_bundle(bundle))) &&
		       access(starter, X_OK) == 0;
	if (!have_starter)
		return 0;
	nargs = json_object_new_array();
	json_object_array_add(nargs, json_object_new_string(starter));
	json_object_array_add(nargs, json_object_new_string("--runtime"));
	json_object_array_add(nargs, json_object_new_string(runtime));
	if (pget(GK_ENV(SHEPHERD))) {
		json_object_array_add(nargs, json_object_new_string("--refuse"));
		json_object_array_add(
		    nargs, json_object_new_string(
			       "transparent mode does not reach into podman containers (CRIU on a "
			       "container is not measured yet): run this step with "
			       "--gpu-checkpoint-mode=app; programs that use the gpuckpt API are "
			       "checkpointed in containers"));
	}
	json_object_array_add(nargs, json_object_new_string("--"));
	for (size_t i = 0; i < json_object_array_length(args); i++)
		json_object_array_add(nargs, json_object_get(json_object_array_get_idx(args, i)));
	json_object_object_add(process, "args", nargs);
	return 0;
}

int main(int argc, char **argv)
{
	char path[64], *in = NULL;
	const char *envfile = NULL, *on, *outs;
	size_t in_len;
	json_object *spec;
	int fd, rc;

	if (argc == 3 && strcmp(argv[1], "--environ") == 0)
		envfile = argv[2];
	else if (argc != 1) {
		fputs("usage: gpuckpt-oci-hook [--environ FILE] < config.json > config.json\n",
		      stderr);
		return 2;
	}
	if (!envfile) {
		snprintf(path, sizeof(path), "/proc/%d/environ", (int)getppid());
		envfile = path;
	}
	fd = open(envfile, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read_all(fd, &penv, &penv_len) < 0) {
		fprintf(stderr, "gpuckpt-oci-hook: %s: %s\n", envfile, strerror(errno));
		return 1;
	}
	close(fd);
	rc = read_all(0, &in, &in_len);
	if (rc < 0) {
		fprintf(stderr, "gpuckpt-oci-hook: reading the configuration: %s\n", strerror(-rc));
		return 1;
	}
	on = pget(GK_ENV(CHECKPOINT));
	if (!on || strcmp(on, "on") != 0 || !pget(GK_ENV_BIND)) {
		/* Not a checkpointed task: the configuration as it came. */
		fwrite(in, 1, in_len, stdout);
		return fflush(stdout) == 0 ? 0 : 1;
	}
	if (host_root()) {
		gk_error_t err;

		if (gk_owner_find(GK_TASK_RECORDS, &owner, &err) < 0) {
			fprintf(stderr,
				"gpuckpt-oci-hook: nothing is mounted into the container: %s; it "
				"runs without checkpoints\n",
				err.text);
			fwrite(in, 1, in_len, stdout);
			return fflush(stdout) == 0 ? 0 : 1;
		}
	}
	spec = json_tokener_parse(in);
	if (!spec || !json_object_is_type(spec, json_type_object) || edit(spec) < 0) {
		fputs("gpuckpt-oci-hook: the container's configuration is not what OCI describes\n",
		      stderr);
		return 1;
	}
	outs = json_object_to_json_string_ext(spec, JSON_C_TO_STRING_PLAIN);
	fputs(outs, stdout);
	json_object_put(spec);
	free(in);
	free(penv);
	return fflush(stdout) == 0 ? 0 : 1;
}
