/*
 * cli.h - what the gpuckpt subcommands share: the command table entry, option
 * parsing with one-line usage errors, and output helpers.
 */
#ifndef GK_CLI_H
#define GK_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "common/error.h" /* gk_error_t: what went wrong, for the caller to say */
#include "common/user.h" /* gk_user_name: the user name of a uid, or "uid N" */
#include "common/sizefmt.h" /* gk_size_format: a size for people, GK_SIZE_UNIT here */

/* Exit status of every subcommand. */
enum {
	GK_EXIT_OK = 0,	   /* done; the checkpoint(s) are good */
	GK_EXIT_BAD = 1,   /* a checkpoint is bad, or the operation failed */
	GK_EXIT_USAGE = 2, /* the command line is wrong */
};

struct gk_cmd {
	const char *name;
	const char *summary; /* one line, for the overview */
	const char *help;    /* the full text of `gpuckpt help NAME` */
	int (*run)(int argc, char **argv);
};

extern const struct gk_cmd gk_cmd_inspect, gk_cmd_verify, gk_cmd_list, gk_cmd_prune, gk_cmd_plan,
    gk_cmd_checkpoint, gk_cmd_report;

/* ---- options ---- */

struct cli_opt {
	const char *name; /* long name without "--" */
	char short_name;  /* 0 for none */
	int has_arg;
	int id; /* > 0 */
};

struct cli_args {
	const struct gk_cmd *cmd;
	int argc;
	char **argv;
	int i;
	int no_more_options;
};

#define CLI_HELP (-3) /* --help or -h was given */
#define CLI_ERROR (-2)
#define CLI_END (-1)
#define CLI_POSITIONAL 0

void cli_args_init(struct cli_args *a, const struct gk_cmd *cmd, int argc, char **argv);

/* The next option (its id, *arg set when it takes one), a positional
 * argument (CLI_POSITIONAL, *arg), CLI_END, CLI_HELP, or CLI_ERROR after a
 * usage error has been printed. --help and -h are understood everywhere. */
int cli_next(struct cli_args *a, const struct cli_opt *opts, const char **arg);

/* Print "gpuckpt: CMD: <problem>; see gpuckpt --help" and return GK_EXIT_USAGE. */
int cli_usage_error(const struct gk_cmd *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Print the help of a command to stdout; returns GK_EXIT_OK. */
int cli_print_help(const struct gk_cmd *cmd);

/* ---- output ---- */

/* {"user": NAME, "uid": UID} */
json_object *cli_user_json(uid_t uid);

/* A user name or a numeric uid; -1 when there is no such user. */
int cli_parse_user(const char *text, uid_t *uid);

/* Text someone else wrote (a label, a host name, a GPU name), for a
 * terminal: control characters and broken UTF-8 as \xNN, in one of a few
 * rotating buffers (at most about 1000 bytes shown). */
const char *cli_printable(const char *s);

/* Print a JSON value to stdout, indented, and release it. */
void cli_print_json(json_object *obj);

/* How a checkpoint that gk_image_open accepted stands with its signature:
 * "signed", "unsigned" (no manifest.sig), or "unchecked" (a signature is
 * there but munged could not be reached to check it). */
const char *cli_signature_state(const char *dir, int is_signed);

/*
 * How to open checkpoint DIR as `want`'s (GK_UID_OF_MANIFEST: whoever it
 * belongs to; its folder's owner, unless that is root). A folder of root's
 * that is to be someone else's is a copy root holds for them (the shared
 * root): it is opened held_by_root, and judged as that user's checkpoint.
 * Fills uid and held_by_root of *lo.
 */
struct gk_load_opts;
void cli_load_opts_for(const char *dir, uid_t want, struct gk_load_opts *lo);

/*
 * Open the folder `path` that the command was given. Run by a user: as
 * given (a link as the last name followed only with follow_last). Run by root: no link a user
 * made on the way is followed and, from the first folder that is not
 * root's, every folder must have one owner (gk_open_owned_path), so that a
 * link in a job's folder never leads root's prune or verify into another
 * user's folders. A descriptor, or -errno with err set.
 */
int cli_open_dir(const char *path, int follow_last, gk_error_t *err);

/*
 * A checkpoint folder `path` opened as cli_open_dir opens it (no link as the
 * last name), and in *parentfd the folder that holds it: the one the walk
 * opened it from, never found again by the path. An increment's earlier
 * checkpoints are looked up there (gk_image_open_in). A descriptor, or
 * -errno with err set (*parentfd -1).
 */
int cli_open_ckpt(const char *path, int *parentfd, gk_error_t *err);

/* Sum of the sizes of the regular files in a directory (links not followed). */
uint64_t cli_dir_bytes(const char *path);
uint64_t cli_dir_bytes_at(int dirfd);

/* cli_load_opts_for and cli_signature_state on an open checkpoint folder:
 * what root-run commands use, so that the owner and the signature file
 * looked at are those of the folder opened. */
void cli_load_opts_at(int dirfd, uid_t want, struct gk_load_opts *lo);
const char *cli_signature_state_at(int dirfd, int is_signed);

/* ---- step folders (stepdir.c) ---- */

struct gk_load_opts;

/* 1 when the open folder dirfd is a step folder (holds task.N folders or
 * set.N records). */
int cli_is_step_dir_at(int dirfd);

/* `gpuckpt list STEPDIR`: the step's checkpoint sets, of the open folder
 * stepfd (dir names it). */
int cli_list_step(const char *dir, int stepfd, int json);

/* `gpuckpt verify STEPDIR`: every member of every complete set, reached
 * from stepfd; the exit status is the newest complete set's (results:
 * --json array, or NULL). */
int cli_verify_step(const char *dir, int stepfd, const struct gk_load_opts *lo,
		    json_object *results);

#endif
