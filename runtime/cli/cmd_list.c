/*
 * cmd_list.c - `gpuckpt list`: the checkpoints of a checkpoint root, newest
 * first, and the incomplete ones a killed writer left behind.
 */
#include "config.h"
#include "cli/cli.h"
#include "image/image.h"
#include "common/jobdir.h"
#include "common/log.h"
#include "image/ckptname.h"
#include "common/settings_env.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char list_help[] =
    "NAME\n"
    "    gpuckpt list - list the checkpoints of a checkpoint root\n"
    "\n"
    "SYNOPSIS\n"
    "    gpuckpt list [--json] [--shared DIR] ROOT\n"
    "    gpuckpt list [--json] STEPDIR\n"
    "\n"
    "DESCRIPTION\n"
    "    ROOT is a checkpoint root (" GK_ENV(DIR) " of a job task): it holds\n"
    "    committed checkpoints ckpt.NNNNNN and, after a writer was killed,\n"
    "    incomplete ones .tmp.ckpt.NNNNNN.HOST.PID. The committed ones are\n"
    "    listed newest first with their sequence number, creation time, label,\n"
    "    size and status; then the incomplete ones.\n"
    "\n"
    "    Status of a committed checkpoint: \"signed\", \"unsigned\", \"unchecked\"\n"
    "    (signed, but munged was not reachable), or \"invalid\" with the reason.\n"
    "    list checks the manifest, who owns the files and the signature; it does\n"
    "    not read the data, so a checkpoint whose data was damaged still shows\n"
    "    \"signed\": gpuckpt verify DIR reads it and checks every checksum.\n"
    "\n"
    "    A checkpoint whose folder is root's but whose manifest names another\n"
    "    user is a copy root holds for that user (on the shared root, the staging\n"
    "    keeps every job's checkpoints root's own, so that no user can change\n"
    "    them): it is judged as that user's, signed by them, and shown as\n"
    "    \"USER's, held by root\".\n"
    "\n"
    "    ROOT is the folder that holds the ckpt.NNNNNN folders; under Slurm that\n"
    "    is BB_ROOT/JOBID/step.S/task.T on the node, SHARED_ROOT/JOBID/step.S/task.T\n"
    "    on the shared root. To look at one checkpoint, use gpuckpt inspect.\n"
    "    Status of an incomplete one: \"incomplete (writing)\" while its writer may\n"
    "    still be running, \"incomplete (writer gone)\" when gpuckpt prune would\n"
    "    remove it.\n"
    "\n"
    "    With --shared (or " GK_ENV(FLUSH_DIR) " set in a job and ROOT its\n"
    "    " GK_ENV(DIR) "), the checkpoints of the task's copy on shared storage are\n"
    "    listed with them, and a column WHERE says where each one lives:\n"
    "    \"local\" (only on the node: lost with the node), \"shared\", or \"both\".\n"
    "    STEPDIR is the folder of a step of several tasks (BB/JOB/step.S,\n"
    "    holding task.T roots and set.NNNNNN records): its checkpoint sets are\n"
    "    listed newest first, each with when its record was written, the\n"
    "    program's step, how many tasks hold it, how the tasks agreed, and\n"
    "    whether it is complete (recorded, and every task has it) or what it\n"
    "    lacks. Only a complete set is ever restored. --json: {\"step_dir\",\n"
    "    \"task_folders\", \"sets\": [{\"sequence\", \"status\", \"complete\",\n"
    "    \"tasks\", \"tasks_present\", \"record\", \"id\", \"step\", \"agreement\",\n"
    "    \"created\", \"why\"}, ...]}.\n"
    "\n"
    "OPTIONS\n"
    "    --json\n"
    "        Print one JSON object: {\"root\", \"checkpoints\": [{\"path\",\n"
    "        \"sequence\", \"complete\", \"status\", \"error\", \"created\",\n"
    "        \"created_unix\", \"label\", \"step\", \"bytes\", \"writer\", \"owner\",\n"
    "        \"held_by_root\"}, ...]}.\n"
    "    --shared DIR\n"
    "        The task's folder on shared storage (" GK_ENV(FLUSH_DIR) ": where the\n"
    "        runtime flushes each checkpoint while the job runs). JSON rows get\n"
    "        \"where\".\n"
    "    -h, --help\n"
    "        Show this text.\n"
    "\n"
    "EXIT STATUS\n"
    "    0   the root was listed (even if some checkpoints in it are invalid)\n"
    "    1   ROOT cannot be read\n"
    "    2   the command line is wrong\n"
    "\n"
    "EXAMPLES\n"
    "    gpuckpt list /bb/1234/task0\n"
    "    gpuckpt list --shared \"$" GK_ENV(FLUSH_DIR) "\" \"$" GK_ENV(DIR) "\"\n"
    "    gpuckpt list --json /bb/1234/task0 | jq -r '.checkpoints[0].path'\n";

enum { OPT_JSON = 1, OPT_SHARED };

static const struct cli_opt list_opts[] = {
    {"json", 0, 0, OPT_JSON},
    {"shared", 0, 1, OPT_SHARED},
    {NULL, 0, 0, 0},
};

struct row {
	const struct gk_store_entry *e;
	struct gk_manifest *m; /* NULL for incomplete or invalid */
	char status[32];
	gk_error_t error;
	char created[32];
	int64_t created_unix;
	uint64_t bytes;
	uid_t owner; /* whose checkpoint (m set) */
	int held;    /* a copy root holds for owner */
	const char *where; /* "local", "shared", "both"; NULL without --shared */
};

/* One entry of the root open as rootfd: its folder opened from there (no
 * link followed), and everything about it read through that descriptor. */
static void fill_row(struct row *r, int rootfd, const struct gk_store_entry *e)
{
	struct gk_load_opts lo = {0};
	const char *name = strrchr(e->path, '/');
	struct stat st;
	int is_signed = 0, fd;

	memset(r, 0, sizeof(*r));
	r->e = e;
	name = name ? name + 1 : e->path;
	fd = openat(rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		snprintf(r->status, sizeof(r->status), "invalid");
		gk_errprintf(&r->error, "%s", strerror(errno));
		return;
	}
	r->bytes = cli_dir_bytes_at(fd);
	if (fstat(fd, &st) == 0) {
		struct tm tm;

		r->created_unix = (int64_t)st.st_mtime;
		gmtime_r(&st.st_mtime, &tm);
		strftime(r->created, sizeof(r->created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	}
	cli_load_opts_at(fd, GK_UID_OF_MANIFEST, &lo);
	if (!e->complete) {
		snprintf(r->status, sizeof(r->status), "incomplete (%s)",
			 e->stale ? "writer gone" : "writing");
		close(fd);
		return;
	}
	if (gk_image_open_in(rootfd, fd, e->path, &lo, &r->m, &is_signed, &r->error) < 0) {
		snprintf(r->status, sizeof(r->status), "invalid");
		close(fd);
		return;
	}
	snprintf(r->status, sizeof(r->status), "%s", cli_signature_state_at(fd, is_signed));
	close(fd);
	snprintf(r->created, sizeof(r->created), "%s", r->m->created);
	r->created_unix = r->m->created_unix;
	r->held = lo.held_by_root && r->m->uid != 0;
	r->owner = lo.held_by_root ? r->m->uid : lo.uid;
}

/* Does the open folder dirfd hold step.S or task.T folders (a job's or a
 * step's folder)? */
static int holds_job_folders(int dirfd)
{
	struct dirent *e;
	int fd = dup(dirfd), found = 0;
	DIR *d = fd < 0 ? NULL : fdopendir(fd);

	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	rewinddir(d);
	while (!found && (e = readdir(d)))
		found = !strncmp(e->d_name, GK_STEP_PREFIX, GK_STEP_PREFIX_LEN) ||
			!strncmp(e->d_name, GK_TASK_PREFIX, GK_TASK_PREFIX_LEN);
	closedir(d);
	return found;
}

/* Why ROOT (open as rootfd) lists nothing, when it can be told: a checkpoint
 * itself, or a folder above the roots. */
static void print_empty(const char *root, int rootfd)
{
	struct stat st;
	const char *base = strrchr(root, '/');

	base = base && base[1] ? base + 1 : root;
	if (fstatat(rootfd, GK_MANIFEST_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 ||
	    strncmp(base, GK_CKPT_PREFIX, sizeof(GK_CKPT_PREFIX) - 1) == 0) {
		printf("%s: no checkpoints: this is a checkpoint, not a checkpoint root; list "
		       "takes the folder that holds the ckpt.N folders, inspect and verify take "
		       "a checkpoint\n",
		       cli_printable(root));
		return;
	}
	if (holds_job_folders(rootfd)) {
		printf("%s: no checkpoints here: a job's checkpoint roots are its task folders, "
		       "JOBID/step.S/task.T\n",
		       cli_printable(root));
		return;
	}
	printf("%s: no checkpoints\n", cli_printable(root));
}

static void print_table(const char *root, int rootfd, const struct row *rows, size_t n,
			int shared)
{
	if (n == 0) {
		print_empty(root, rootfd);
		return;
	}
	if (shared)
		printf("%-8s %-21s %-24s %-10s %-7s %s\n", "SEQ", "CREATED", "LABEL", "SIZE",
		       "WHERE", "STATUS");
	else
		printf("%-8s %-21s %-24s %-10s %s\n", "SEQ", "CREATED", "LABEL", "SIZE", "STATUS");
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		char seq[24], size[32];

		snprintf(seq, sizeof(seq), "%06" PRIu64, r->e->sequence);
		gk_size_format(size, sizeof(size), r->bytes, GK_SIZE_UNIT);
		/* Labels, host names and errors hold what the checkpoint's
		 * writer chose: shown through cli_printable. */
		printf("%-8s %-21s %-24s %-10s ", seq, r->created[0] ? cli_printable(r->created) : "-",
		       r->m && r->m->label[0] ? cli_printable(r->m->label) : "-", size);
		if (shared)
			printf("%-7s ", r->where);
		printf("%s", r->status);
		if (!r->e->complete)
			printf(" %s pid %d", cli_printable(r->e->writer_host), (int)r->e->writer_pid);
		if (r->held) {
			char who[64];

			gk_user_name(r->owner, who, sizeof(who));
			printf(" (%s's, held by root)", who);
		}
		if (r->error.text[0])
			printf(": %s", cli_printable(r->error.text));
		printf("\n");
	}
	printf("(status: manifest, owner and signature checked; the data is not read: "
	       "gpuckpt verify DIR checks every checksum)\n");
}

static void print_json(const char *root, const struct row *rows, size_t n)
{
	json_object *top = json_object_new_object(), *arr = json_object_new_array();

	json_object_object_add(top, "root", json_object_new_string(root));
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		json_object *o = json_object_new_object();

		json_object_object_add(o, "path", json_object_new_string(r->e->path));
		json_object_object_add(o, "sequence",
				       json_object_new_int64((int64_t)r->e->sequence));
		json_object_object_add(o, "complete", json_object_new_boolean(r->e->complete));
		json_object_object_add(o, "status",
				       json_object_new_string(r->e->complete ? r->status
							      : r->e->stale  ? "stale"
									     : "writing"));
		json_object_object_add(
		    o, "error", r->error.text[0] ? json_object_new_string(r->error.text) : NULL);
		json_object_object_add(o, "created",
				       r->created[0] ? json_object_new_string(r->created) : NULL);
		json_object_object_add(o, "created_unix", json_object_new_int64(r->created_unix));
		json_object_object_add(o, "label",
				       r->m ? json_object_new_string(r->m->label) : NULL);
		json_object_object_add(o, "step", r->m ? json_object_new_int64(r->m->step) : NULL);
		json_object_object_add(o, "bytes", json_object_new_int64((int64_t)r->bytes));
		json_object_object_add(o, "owner", r->m ? cli_user_json(r->owner) : NULL);
		json_object_object_add(o, "held_by_root", json_object_new_boolean(r->held));
		if (r->where)
			json_object_object_add(o, "where", json_object_new_string(r->where));
		if (!r->e->complete) {
			json_object *w = json_object_new_object();

			json_object_object_add(w, "host",
					       json_object_new_string(r->e->writer_host));
			json_object_object_add(w, "pid", json_object_new_int(r->e->writer_pid));
			json_object_object_add(o, "writer", w);
		} else {
			json_object_object_add(o, "writer", NULL);
		}
		json_object_array_add(arr, o);
	}
	json_object_object_add(top, "checkpoints", arr);
	cli_print_json(top);
}

/* Committed ones newest first, then the incomplete ones (gk_store_list's order). */
static int row_cmp(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;

	if (a->e->complete != b->e->complete)
		return a->e->complete ? -1 : 1;
	return a->e->sequence > b->e->sequence ? -1 : a->e->sequence < b->e->sequence;
}

/*
 * The rows of ROOT and, with `shared`, of its shared copy: a committed
 * checkpoint in both is one row ("both"), described from the node's copy.
 */
static int collect(const char *root, int rootfd, const char *shared, int sharedfd,
		   struct gk_store_entry **local, struct gk_store_entry **remote, struct row **rows,
		   size_t *nrows)
{
	size_t nl = 0, nr = 0, k = 0;
	gk_error_t err;
	int ret;

	*local = *remote = NULL;
	ret = gk_store_list_at(rootfd, root, local, &nl, &err);
	if (ret < 0) {
		gk_error("list: %s", err.text);
		return ret;
	}
	if (sharedfd >= 0 && gk_store_list_at(sharedfd, shared, remote, &nr, &err) < 0) {
		/* The node's list is still worth having: say what is wrong. */
		gk_warn("list: %s; only the node's checkpoints are listed", err.text);
		nr = 0;
	}
	*rows = calloc(nl + nr ? nl + nr : 1, sizeof(**rows));
	if (!*rows) {
		gk_error("list: out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < nl; i++) {
		fill_row(&(*rows)[k], rootfd, &(*local)[i]);
		(*rows)[k++].where = shared ? "local" : NULL;
	}
	for (size_t j = 0; j < nr; j++) {
		const struct gk_store_entry *e = &(*remote)[j];
		size_t i;

		for (i = 0; i < nl; i++)
			if (e->complete && (*local)[i].complete && (*local)[i].sequence == e->sequence)
				break;
		if (i < nl) {
			(*rows)[i].where = "both";
			continue;
		}
		fill_row(&(*rows)[k], sharedfd, e);
		(*rows)[k++].where = "shared";
	}
	qsort(*rows, k, sizeof(**rows), row_cmp);
	*nrows = k;
	return 0;
}

static int list_run(int argc, char **argv)
{
	struct gk_store_entry *entries = NULL, *remote = NULL;
	const char *arg, *root = NULL, *shared = NULL;
	struct row *rows;
	struct cli_args a;
	size_t n = 0;
	gk_error_t err;
	int json = 0, id, ret, rootfd, sharedfd = -1;

	cli_args_init(&a, &gk_cmd_list, argc, argv);
	while ((id = cli_next(&a, list_opts, &arg)) != CLI_END) {
		switch (id) {
		case CLI_HELP:
			return cli_print_help(&gk_cmd_list);
		case CLI_ERROR:
			return GK_EXIT_USAGE;
		case CLI_POSITIONAL:
			if (root)
				return cli_usage_error(
				    &gk_cmd_list, "one checkpoint root at a time ('%s' and '%s')",
				    root, arg);
			root = arg;
			break;
		case OPT_JSON:
			json = 1;
			break;
		case OPT_SHARED:
			shared = arg;
			break;
		}
	}
	if (!root)
		return cli_usage_error(&gk_cmd_list, "missing the checkpoint root ROOT");
	/* The root opened once (as root: no link a user made on the way, one
	 * owner from the first folder that is not root's), and everything
	 * listed read through it. */
	rootfd = cli_open_dir(root, 1, &err);
	if (rootfd < 0) {
		gk_error("list: %s: %s", root, err.text);
		return GK_EXIT_BAD;
	}
	if (cli_is_step_dir_at(rootfd)) {
		/* A step folder holds sets of several tasks; --shared names one
		 * task's copy, which is listed from that task's root. */
		if (shared) {
			close(rootfd);
			return cli_usage_error(&gk_cmd_list,
					       "--shared lists one task's checkpoint root, not the "
					       "step folder '%s': give its task.T root", root);
		}
		ret = cli_list_step(root, rootfd, json);
		close(rootfd);
		return ret;
	}
	/* Inside a job: the task's own folder has its shared copy named. */
	if (!shared && gk_getenv(FLUSH_DIR) && gk_getenv(DIR) &&
	    *gk_getenv(FLUSH_DIR) && !strcmp(gk_getenv(DIR), root))
		shared = gk_getenv(FLUSH_DIR);
	if (shared) {
		sharedfd = cli_open_dir(shared, 1, &err);
		if (sharedfd < 0)
			/* The node's list is still worth having: say what is wrong. */
			gk_warn("list: %s: %s; only the node's checkpoints are listed", shared,
				err.text);
	}
	ret = collect(root, rootfd, shared, sharedfd, &entries, &remote, &rows, &n);
	if (ret < 0) {
		free(entries);
		free(remote);
		close(rootfd);
		if (sharedfd >= 0)
			close(sharedfd);
		return GK_EXIT_BAD;
	}
	if (json)
		print_json(root, rows, n);
	else
		print_table(root, rootfd, rows, n, shared != NULL);
	for (size_t i = 0; i < n; i++)
		gk_manifest_free(rows[i].m);
	free(rows);
	free(entries);
	free(remote);
	close(rootfd);
	if (sharedfd >= 0)
		close(sharedfd);
	return GK_EXIT_OK;
}

const struct gk_cmd gk_cmd_list = {
    .name = "list",
    .summary = "list the checkpoints of a checkpoint root, newest first",
    .help = list_help,
    .run = list_run,
};
