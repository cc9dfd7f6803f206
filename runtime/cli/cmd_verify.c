/*
 * cmd_verify.c - `gpuckpt verify`: every check a restore makes, plus every
 * data checksum, with an exit status scripts (Prolog, Epilog, staging) can
 * act on.
 */
#include "config.h"

#include "cli/cli.h"
#include "image/image.h"
#include "common/log.h"
#include "image/seal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char verify_help[] =
    "NAME\n"
    "    gpuckpt verify - check checkpoints completely\n"
    "\n"
    "SYNOPSIS\n"
    "    gpuckpt verify [--owner USER|UID] [--require-signature] [--json] DIR...\n"
    "    gpuckpt verify [--owner USER|UID] [--require-signature] [--json] STEPDIR\n"
    "\n"
    "DESCRIPTION\n"
    "    Checks each checkpoint directory DIR the way a restore would, and reads\n"
    "    all of its data: the directory and its files belong to the owner and are\n"
    "    not writable by anyone else, no file is a symbolic link, the manifest is\n"
    "    well formed and of a supported format version, the Munge signature (if\n"
    "    any) was made by the owner over this very manifest, every data file has\n"
    "    the size the manifest gives, and every chunk of every allocation and\n"
    "    host region has the checksum the manifest records (XXH3-64 from format\n"
    "    3, XXH64 before). An increment's references are followed: each earlier\n"
    "    checkpoint whose files hold some of its data (the sibling ckpt.NNNNNN)\n"
    "    must be there, be the owner's, carry the id the increment names, and\n"
    "    every chunk read there must match the increment's checksums.\n"
    "\n"
    "    A DIR of root's that is to be another user's is a copy root holds for\n"
    "    them (on the shared root, the staging keeps every job's checkpoints\n"
    "    root's own, so that no user can change them): its files must be root's,\n"
    "    and its manifest must name that user and be signed by them.\n"
    "\n"
    "    For a good checkpoint it prints\n"
    "        DIR: OK (N allocations, SIZE, signed by USER[; held by root])\n"
    "    and for a bad one it names the first problem on standard error.\n"
    "    Nothing in DIR is modified.\n"
    "\n"
    "    A transparent checkpoint of a task that ran several processes with the\n"
    "    runtime (torchrun's ranks) holds each one's part in a folder of its\n"
    "    own, DIR/proc.PID; each part gets the checks above and a line of its own,\n"
    "    and DIR is good only when all of them are.\n"
    "\n"
    "    STEPDIR, the folder of a step of several tasks (BB/JOB/step.S), is\n"
    "    checked set by set, newest first: every member of a complete set gets\n"
    "    the checks above, and must say in its manifest that it was written for\n"
    "    this set as this task. The exit status is that of the newest complete\n"
    "    set, the one a restart restores unless it falls back; incomplete sets\n"
    "    are named, and never restored.\n"
    "\n"
    "OPTIONS\n"
    "    --owner USER|UID\n"
    "        Whose checkpoint it must be (default: the user running gpuckpt;\n"
    "        for root and a DIR of root's, the user its manifest names, whose\n"
    "        signature must then be on it). Only root may name another user.\n"
    "    --require-signature\n"
    "        Refuse a checkpoint without a valid Munge signature, and one whose\n"
    "        signature cannot be checked because munged is not reachable.\n"
    "        Without it an unsigned checkpoint passes and is reported as such.\n"
    "    --json\n"
    "        Print one JSON object: {\"ok\": true|false, \"owner\": {...},\n"
    "        \"checkpoints\": [{\"path\", \"ok\", \"error\", \"sequence\",\n"
    "        \"allocations\", \"host_regions\", \"bytes\", \"signature\",\n"
    "        \"signed_by\", \"owner\", \"held_by_root\"}, ...]}.\n"
    "    -h, --help\n"
    "        Show this text.\n"
    "\n"
    "EXIT STATUS\n"
    "    0   every DIR is a good checkpoint\n"
    "    1   at least one is bad (or could not be read)\n"
    "    2   the command line is wrong\n"
    "\n"
    "EXAMPLES\n"
    "    gpuckpt verify /bb/1234/ckpt.000007\n"
    "    gpuckpt verify --owner alice --require-signature /bb/1234/task0/ckpt.*\n"
    "    gpuckpt verify --json /bb/1234/ckpt.000007 | jq .ok\n";

enum { OPT_OWNER = 1, OPT_REQUIRE_SIGNATURE, OPT_JSON };

static const struct cli_opt verify_opts[] = {
    {"owner", 0, 1, OPT_OWNER},
    {"require-signature", 0, 0, OPT_REQUIRE_SIGNATURE},
    {"json", 0, 0, OPT_JSON},
    {NULL, 0, 0, 0},
};

static uint64_t data_bytes(const struct gk_manifest *m)
{
	uint64_t total = 0;

	for (size_t i = 0; i < m->nallocs; i++)
		total += m->allocs[i].size;
	for (size_t i = 0; i < m->nregions; i++)
		total += m->regions[i].size;
	return total;
}

/*
 * A transparent checkpoint's criu/ (root's alone): its seal and every image
 * against it, as a restore checks them, in the folder `fd` whose manifest
 * was checked. 1 checked, 0 not there, -1 failed (err says why), 2 there
 * but unreadable to a user.
 */
static int verify_seal(int fd, uid_t uid, uint64_t *bytes, gk_error_t *err)
{
	struct gk_seal seal;
	struct stat st;
	int ret;

	if (fstatat(fd, GK_CRIU_DIR, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	if (geteuid() != 0)
		return 2;
	memset(&seal, 0, sizeof(seal));
	ret = gk_seal_verify(fd, uid, &seal, NULL, err);
	*bytes = seal.image_bytes;
	return ret < 0 ? -1 : 1;
}

/* A checkpoint that failed, for --json (results NULL: plain output). */
static void record_failure(json_object *results, const char *dir, const char *err)
{
	json_object *o;

	if (!results)
		return;
	o = json_object_new_object();
	json_object_object_add(o, "path", json_object_new_string(dir));
	json_object_object_add(o, "ok", json_object_new_boolean(0));
	json_object_object_add(o, "error", json_object_new_string(err));
	json_object_array_add(results, o);
}

static int verify_one(const char *dir, int fd, int parentfd, uid_t want,
		      const struct gk_load_opts *base, json_object *results, int is_part);

/* Each part of a transparent checkpoint (DIR/proc.PID, ckptname.h), checked
 * as a checkpoint of its own: the worst status of them. */
static int verify_parts(const char *dir, int fd, uid_t want, const struct gk_load_opts *base,
			json_object *results)
{
	struct dirent *e;
	DIR *d;
	int dfd = dup(fd), status = GK_EXIT_OK;

	if (dfd < 0 || !(d = fdopendir(dfd))) {
		if (dfd >= 0)
			close(dfd);
		gk_error("verify: %s: %s", dir, strerror(errno));
		record_failure(results, dir, strerror(errno));
		return GK_EXIT_BAD;
	}
	rewinddir(d); /* the descriptor's offset is shared with fd's, which was read */
	while ((e = readdir(d))) {
		char sub[4200];
		int pid, partfd, r;

		if (gk_ckpt_parse_part(e->d_name, &pid) < 0)
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
		partfd = openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (partfd < 0) {
			gk_error("verify: %s: %s", sub, strerror(errno));
			record_failure(results, sub, strerror(errno));
			status = GK_EXIT_BAD;
			continue;
		}
		r = verify_one(sub, partfd, fd, want, base, results, 1);
		if (r != GK_EXIT_OK)
			status = r;
		close(partfd);
	}
	closedir(d);
	return status;
}

/* want: whose it must be (GK_UID_OF_MANIFEST: whoever a copy held by root
 * names). fd: the checkpoint folder, opened once (as root: no link of a
 * user's on the way); everything is checked through it, and an increment's
 * earlier checkpoints are looked up in parentfd, the folder it was opened
 * from, never by the path again. */
static int verify_one(const char *dir, int fd, int parentfd, uid_t want,
		      const struct gk_load_opts *base, json_object *results, int is_part)
{
	struct gk_load_opts lo = *base;
	struct gk_manifest *m = NULL;
	gk_error_t err;
	char size[32], who[64];
	const char *sig;
	uint64_t image_bytes = 0;
	uid_t owner;
	int is_signed = 0, ret, sealed, held;

	cli_load_opts_at(fd, want, &lo);
	ret = gk_image_open_in(parentfd, fd, dir, &lo, &m, &is_signed, &err);
	if (ret < 0) {
		gk_error("verify: %s: %s", dir, err.text);
		record_failure(results, dir, err.text);
		return GK_EXIT_BAD;
	}
	owner = lo.held_by_root ? m->uid : lo.uid;
	held = lo.held_by_root && owner != 0;
	sig = cli_signature_state_at(fd, is_signed);
	sealed = verify_seal(fd, owner, &image_bytes, &err);
	if (sealed < 0) {
		gk_error("verify: %s: transparent checkpoint: %s", dir, err.text);
		record_failure(results, dir, err.text);
		gk_manifest_free(m);
		return GK_EXIT_BAD;
	}
	if (results) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "path", json_object_new_string(dir));
		json_object_object_add(o, "ok", json_object_new_boolean(1));
		json_object_object_add(o, "sequence", json_object_new_int64((int64_t)m->sequence));
		json_object_object_add(o, "allocations",
				       json_object_new_int64((int64_t)m->nallocs));
		json_object_object_add(o, "host_regions",
				       json_object_new_int64((int64_t)m->nregions));
		json_object_object_add(o, "bytes", json_object_new_int64((int64_t)data_bytes(m)));
		json_object_object_add(o, "signature", json_object_new_string(sig));
		json_object_object_add(o, "signed_by", is_signed ? cli_user_json(owner) : NULL);
		json_object_object_add(o, "owner", cli_user_json(owner));
		json_object_object_add(o, "held_by_root", json_object_new_boolean(held));
		if (sealed) {
			json_object *t = json_object_new_object();

			json_object_object_add(t, "checked", json_object_new_boolean(sealed == 1));
			if (sealed == 1)
				json_object_object_add(t, "image_bytes",
						       json_object_new_int64((int64_t)image_bytes));
			json_object_object_add(o, "transparent", t);
		}
		json_object_array_add(results, o);
	} else {
		gk_size_format(size, sizeof(size), data_bytes(m), GK_SIZE_UNIT);
		gk_user_name(owner, who, sizeof(who));
		printf("%s: OK (%zu allocation%s, %s, ", dir, m->nallocs,
		       m->nallocs == 1 ? "" : "s", size);
		if (is_signed)
			printf("signed by %s", who);
		else if (strcmp(sig, "unchecked") == 0)
			printf("signature not checked: munged is not reachable");
		else
			printf("unsigned");
		if (sealed == 1) {
			gk_size_format(size, sizeof(size), image_bytes, GK_SIZE_UNIT);
			printf("; transparent: %s of CRIU images match their seal", size);
		} else if (sealed == 2) {
			printf("; transparent: criu/ not checked (only root can read it)");
		}
		if (held)
			printf("; held by root");
		printf(")\n");
	}
	gk_manifest_free(m);
	return is_part ? GK_EXIT_OK : verify_parts(dir, fd, want, base, results);
}

static int verify_run(int argc, char **argv)
{
	struct gk_load_opts lo = {.uid = getuid(), .check_data = 1};
	struct cli_args a;
	const char *arg, **dirs, *owner_text = NULL;
	json_object *top = NULL, *results = NULL;
	size_t ndirs = 0;
	int json = 0, status = GK_EXIT_OK, id;

	dirs = calloc((size_t)argc, sizeof(*dirs));
	if (!dirs) {
		gk_error("verify: out of memory");
		return GK_EXIT_BAD;
	}
	cli_args_init(&a, &gk_cmd_verify, argc, argv);
	while ((id = cli_next(&a, verify_opts, &arg)) != CLI_END) {
		switch (id) {
		case CLI_HELP:
			free(dirs);
			return cli_print_help(&gk_cmd_verify);
		case CLI_ERROR:
			free(dirs);
			return GK_EXIT_USAGE;
		case CLI_POSITIONAL:
			dirs[ndirs++] = arg;
			break;
		case OPT_OWNER:
			owner_text = arg;
			if (cli_parse_user(arg, &lo.uid) < 0) {
				free(dirs);
				return cli_usage_error(&gk_cmd_verify, "--owner: no such user '%s'",
						       arg);
			}
			break;
		case OPT_REQUIRE_SIGNATURE:
			lo.require_signature = 1;
			break;
		case OPT_JSON:
			json = 1;
			break;
		}
	}
	if (ndirs == 0) {
		free(dirs);
		return cli_usage_error(&gk_cmd_verify, "missing the checkpoint directory DIR");
	}
	/* Others' checkpoints are unreadable to a user anyway; saying so here
	 * is clearer than a permission error on the first file. */
	if (lo.uid != getuid() && geteuid() != 0) {
		free(dirs);
		return cli_usage_error(&gk_cmd_verify,
				       "--owner %s: only root may check another user's checkpoints",
				       owner_text);
	}
	if (json) {
		top = json_object_new_object();
		results = json_object_new_array();
		json_object_object_add(top, "owner", cli_user_json(lo.uid));
	}
	for (size_t i = 0; i < ndirs; i++) {
		/* Root, no --owner: a DIR of root's is judged as a copy root holds. */
		struct stat st;
		uid_t want = lo.uid;
		gk_error_t err;
		int r, fd, parentfd;

		/* Opened once (as root: no link of a user's on the way), with
		 * the folder above it; all that follows goes through them. */
		fd = cli_open_ckpt(dirs[i], &parentfd, &err);
		if (fd < 0) {
			gk_error("verify: %s: %s", dirs[i], err.text);
			record_failure(results, dirs[i], err.text);
			status = GK_EXIT_BAD;
			continue;
		}
		if (!owner_text && geteuid() == 0 && fstat(fd, &st) == 0 && st.st_uid == 0)
			want = GK_UID_OF_MANIFEST;
		r = cli_is_step_dir_at(fd)
			? cli_verify_step(dirs[i], fd, &lo, results)
			: verify_one(dirs[i], fd, parentfd, want, &lo, results, 0);
		close(fd);
		close(parentfd);
		if (r != GK_EXIT_OK)
			status = GK_EXIT_BAD;
	}
	if (json) {
		json_object_object_add(top, "ok", json_object_new_boolean(status == GK_EXIT_OK));
		json_object_object_add(top, "checkpoints", results);
		cli_print_json(top);
	}
	free(dirs);
	return status;
}

const struct gk_cmd gk_cmd_verify = {
    .name = "verify",
    .summary = "check checkpoints completely: owner, manifest, signature, every checksum",
    .help = verify_help,
    .run = verify_run,
};
