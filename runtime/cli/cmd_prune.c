/*
 * cmd_prune.c - `gpuckpt prune`: keep the newest N committed checkpoints of a
 * root and remove the rest, with the same code the runtime uses after each
 * commit (so a half-deleted checkpoint never looks committed).
 */
#include "config.h"
#include "cli/cli.h"
#include "image/image.h"
#include "common/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

static const char prune_help[] =
    "NAME\n"
    "    gpuckpt prune - remove old checkpoints of a checkpoint root\n"
    "\n"
    "SYNOPSIS\n"
    "    gpuckpt prune --keep N [--dry-run] [--json] ROOT\n"
    "\n"
    "DESCRIPTION\n"
    "    Keeps the newest N committed checkpoints of ROOT, and every older one\n"
    "    that one of them is an increment of (whose files hold some of its\n"
    "    data), and removes the other older ones; and removes incomplete\n"
    "    checkpoints whose writer is gone (its process no longer runs on this\n"
    "    host, or it is more than a day old).\n"
    "    An incomplete checkpoint that may still be being written is left alone.\n"
    "\n"
    "    A checkpoint is first renamed to .trash.ckpt.NNNNNN.PID and then\n"
    "    deleted, so that one interrupted half-way never looks committed.\n"
    "    Symbolic links are never followed.\n"
    "\n"
    "OPTIONS\n"
    "    --keep N\n"
    "        How many committed checkpoints to keep, at least 1 (required).\n"
    "    --dry-run\n"
    "        Say what would be removed; remove nothing.\n"
    "    --json\n"
    "        Print one JSON object: {\"root\", \"keep\", \"dry_run\",\n"
    "        \"removed\": [paths], \"kept\": [paths]}.\n"
    "    -h, --help\n"
    "        Show this text.\n"
    "\n"
    "EXIT STATUS\n"
    "    0   done (or, with --dry-run, the plan was printed)\n"
    "    1   ROOT cannot be read, or something could not be removed\n"
    "    2   the command line is wrong\n"
    "\n"
    "EXAMPLES\n"
    "    gpuckpt prune --keep 2 /bb/1234/task0\n"
    "    gpuckpt prune --keep 1 --dry-run /bb/1234/task0\n";

enum { OPT_KEEP = 1, OPT_DRY_RUN, OPT_JSON };

static const struct cli_opt prune_opts[] = {
    {"keep", 'k', 1, OPT_KEEP},
    {"dry-run", 'n', 0, OPT_DRY_RUN},
    {"json", 0, 0, OPT_JSON},
    {NULL, 0, 0, 0},
};

static int parse_keep(const char *text, unsigned *keep)
{
	char *end;
	unsigned long v;

	if (!(text[0] >= '0' && text[0] <= '9'))
		return -1;
	errno = 0;
	v = strtoul(text, &end, 10);
	if (errno || *end || v == 0 || v > 1000000)
		return -1;
	*keep = (unsigned)v;
	return 0;
}

static int prune_run(int argc, char **argv)
{
	struct gk_store_entry *entries = NULL;
	const char *arg, *root = NULL, *keep_text = NULL;
	json_object *removed = NULL, *kept_list = NULL;
	gk_error_t err;
	struct cli_args a;
	unsigned keep = 0, kept = 0, nremoved = 0;
	size_t n = 0;
	int json = 0, dry_run = 0, id, ret, rootfd, status = GK_EXIT_OK;

	cli_args_init(&a, &gk_cmd_prune, argc, argv);
	while ((id = cli_next(&a, prune_opts, &arg)) != CLI_END) {
		switch (id) {
		case CLI_HELP:
			return cli_print_help(&gk_cmd_prune);
		case CLI_ERROR:
			return GK_EXIT_USAGE;
		case CLI_POSITIONAL:
			if (root)
				return cli_usage_error(
				    &gk_cmd_prune, "one checkpoint root at a time ('%s' and '%s')",
				    root, arg);
			root = arg;
			break;
		case OPT_KEEP:
			keep_text = arg;
			/* 0 would delete every checkpoint, including the one
			 * a requeued job is about to restore from. */
			if (parse_keep(arg, &keep) < 0)
				return cli_usage_error(
				    &gk_cmd_prune,
				    "--keep '%s': expected a whole number from 1 "
				    "to 1000000",
				    arg);
			break;
		case OPT_DRY_RUN:
			dry_run = 1;
			break;
		case OPT_JSON:
			json = 1;
			break;
		}
	}
	if (!root)
		return cli_usage_error(&gk_cmd_prune, "missing the checkpoint root ROOT");
	if (!keep_text)
		return cli_usage_error(&gk_cmd_prune, "missing --keep N (how many to keep)");
	/* One descriptor for the listing, the plan and the removal: as root,
	 * reached without a link of a user's (cli_open_dir). */
	rootfd = cli_open_dir(root, 1, &err);
	ret = rootfd < 0 ? rootfd : gk_store_list_at(rootfd, root, &entries, &n, &err);
	if (ret < 0) {
		gk_error("prune: %s%s%s", rootfd < 0 ? root : "", rootfd < 0 ? ": " : "", err.text);
		free(entries);
		if (rootfd >= 0)
			close(rootfd);
		return GK_EXIT_BAD;
	}
	gk_store_prune_plan_at(rootfd, entries, n, keep);
	if (!dry_run) {
		ret = gk_store_prune_at(rootfd, root, keep, &err);
		if (ret < 0) {
			gk_error("prune: %s", err.text);
			status = GK_EXIT_BAD;
		}
	}
	close(rootfd);
	if (json) {
		removed = json_object_new_array();
		kept_list = json_object_new_array();
	}
	for (size_t i = 0; i < n; i++) {
		const struct gk_store_entry *e = &entries[i];
		struct stat st;
		int gone;

		if (!e->remove) {
			if (e->complete) {
				kept++;
				if (json)
					json_object_array_add(kept_list,
							      json_object_new_string(e->path));
				else if (e->referenced)
					printf("kept %s: a kept checkpoint's data lies in it\n",
					       e->path);
			}
			continue;
		}
		/* What was actually removed, not what was planned: another
		 * prune or the job itself may have been faster. */
		gone = dry_run || lstat(e->path, &st) < 0;
		if (!gone)
			continue;
		nremoved++;
		if (json)
			json_object_array_add(removed, json_object_new_string(e->path));
		else
			printf("%s %s\n", dry_run ? "would remove" : "removed", e->path);
	}
	if (json) {
		json_object *top = json_object_new_object();

		json_object_object_add(top, "root", json_object_new_string(root));
		json_object_object_add(top, "keep", json_object_new_int64(keep));
		json_object_object_add(top, "dry_run", json_object_new_boolean(dry_run));
		json_object_object_add(top, "ok", json_object_new_boolean(status == GK_EXIT_OK));
		json_object_object_add(top, "removed", removed);
		json_object_object_add(top, "kept", kept_list);
		cli_print_json(top);
	} else {
		printf("%s: %s %u, kept %u\n", root, dry_run ? "would remove" : "removed", nremoved,
		       kept);
	}
	free(entries);
	return status;
}

const struct gk_cmd gk_cmd_prune = {
    .name = "prune",
    .summary = "keep the newest N committed checkpoints of a root, remove the rest",
    .help = prune_help,
    .run = prune_run,
};
